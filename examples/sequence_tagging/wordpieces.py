"""Tokens to a BERT's WordPiece inputs, with the position of each token's first piece.

Each token of a sentence is tokenized on its own by the checkpoint's tokenizer (so a piece never
spans two tokens), the pieces are joined as ``[CLS] pieces [SEP]``, and ``first_piece[i]`` is the
position of token ``i``'s first piece: the tagger reads the encoder there (first-subword pooling,
as Devlin et al. tag CoNLL-2003 with BERT). A token the tokenizer turns into no piece (only
characters it drops) becomes one ``[UNK]``. A sentence whose pieces do not fit in
``max_pieces`` keeps only the first piece of each of its tokens.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def wordpiece_inputs(tokenizer, sentences: list[list[str]], max_pieces: int) -> list[dict]:
    """For each sentence (a list of tokens), ``{"input_ids", "first_piece"}`` int32 arrays.

    Args:
        tokenizer: a ``tx.data.BERTTokenizer`` (its ``tokenize``, ``cls_id``, ``sep_id`` and
            ``unk_id``).
        sentences: the tokens of each sentence.
        max_pieces: the most pieces of a sentence, ``[CLS]`` and ``[SEP]`` included (at most the
            encoder's positions).

    Raises:
        ValueError: a sentence has more than ``max_pieces - 2`` tokens (one piece each would not
            fit), or has no token.
    """
    words = [word for sentence in sentences for word in sentence]
    pieces = tokenizer.tokenize(tf.constant(words)) if words else None
    lengths = pieces.row_lengths().numpy() if words else np.zeros(0, np.int64)
    flat = pieces.flat_values.numpy() if words else np.zeros(0, np.int32)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    result, word = [], 0
    for number, sentence in enumerate(sentences):
        if not sentence or len(sentence) > max_pieces - 2:
            raise ValueError(
                f"sentences[{number}] has {len(sentence)} tokens: a sentence needs 1 to "
                f"{max_pieces - 2} (max_pieces={max_pieces}, [CLS] and [SEP] included)"
            )
        rows = []
        for index in range(word, word + len(sentence)):
            row = flat[starts[index] : starts[index + 1]]
            rows.append(row if len(row) else np.array([tokenizer.unk_id], np.int32))
        word += len(sentence)
        if sum(len(row) for row in rows) > max_pieces - 2:
            rows = [row[:1] for row in rows]
        sizes = np.array([len(row) for row in rows])
        input_ids = np.concatenate([[tokenizer.cls_id], *rows, [tokenizer.sep_id]])
        first_piece = 1 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        result.append(
            {"input_ids": input_ids.astype(np.int32), "first_piece": first_piece.astype(np.int32)}
        )
    return result
