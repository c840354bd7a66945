"""The shortcut most texts take: ``tf_text.FastBertTokenizer``, where it gives the table's ids.

:class:`~texkit.data.tokenizers.BERTTokenizer` keeps the ids ``tf_text.FastBertTokenizer`` (one
C++ op) gives a text only when every character of it was measured, once per process and mode, to
come out as the reference tokenizer makes it (one regular expression checks that), and the op
made no ``[UNK]`` in it (so the two word-length limits agree); other texts take the exact
per-character table (:mod:`texkit.data.tokenizers.normalization` explains why the two differ).

Which characters those are is measured when the first tokenizer of a mode is made: every code
point below U+3000 whose treatment does not depend on its neighbours is run between two letters
through ``FastBertTokenizer`` and through the table, with a vocabulary that spells out every
output character, and kept only if the words agree. That keeps ASCII but its control characters,
the accented Latin letters, Greek (but the capital sigma) and Cyrillic, the general punctuation
(curly quotes, dashes), and leaves out what the normalization module lists (``ß``, ligatures,
compatibility and control characters...). A regular expression checks each row's characters;
the rows that pass go through ``FastBertTokenizer``, and its ids are kept where it made no
``[UNK]``: the two count the word limit differently (bytes against characters), and a word
within the byte limit is within the character limit, so only a row with an ``[UNK]`` can differ
there. The other rows are redone by the table and put back in order. The tests compare the two
ways on every kept character, in words and in random strings, in both modes, and at the word
limits. The shortcut is faster than the table on every row: see ``benchmarks/RESULTS.md``
(tokenization).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from texkit.data.tokenizers.normalization import (
    _FAST_CANDIDATES,
    _char_class,
    _fast_path_candidates,
    _probe_words,
    _ranges,
)
from texkit.data.tokenizers.vocab_file import UNK_TOKEN

# The probe vocabulary's unknown token: any string that is not one of its characters.
_PROBE_UNKNOWN = "[UNK]"


def _without_whitespace(vocab: tuple[str, ...]) -> list[str]:
    """``vocab`` with each token that holds whitespace replaced by one of non-ASCII characters.

    The replacements (``"\\x80"`` repeated, then the token's index) are new tokens, told apart
    from each other and from the vocabulary's.
    """
    taken = set(vocab)
    tokens = list(vocab)
    for i, token in enumerate(vocab):
        if any(c.isspace() for c in token):
            stand_in = f"\x80{i}"
            while stand_in in taken:
                stand_in = "\x80" + stand_in
            taken.add(stand_in)
            tokens[i] = stand_in
    return tokens


def _fast_bert_tokenizer(
    vocab: tuple[str, ...], lowercase: bool, max_chars_per_word: int
) -> tf_text.FastBertTokenizer | None:
    """``tf_text.FastBertTokenizer`` for ``vocab``, or None if it cannot be made of it.

    It leaves out the tokens that hold punctuation, which no word matches; a vocabulary of such
    tokens only (a toy one) has none left, and its texts all take the table. A token that holds
    whitespace, which no word matches either, would make it give [UNK] for a word that starts the
    same (with "a b" in the vocabulary, "a c" would be [UNK] [UNK]): it gets such tokens as
    strings no text it sees holds, in their place (:func:`_without_whitespace`), so the ids stay.
    """
    try:
        return tf_text.FastBertTokenizer(
            vocab=_without_whitespace(vocab),
            suffix_indicator="##",
            max_bytes_per_word=max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=UNK_TOKEN,
            lower_case_nfd_strip_accents=lowercase,
        )
    except RuntimeError:
        return None


@functools.lru_cache(maxsize=2)
def _fast_safe_ranges(lowercase: bool) -> tuple[tuple[int, int], ...]:
    """The code points on which ``FastBertTokenizer`` gives the table path's words, as ranges.

    Each candidate (:func:`_fast_path_candidates`: the code points below U+3000 whose treatment
    does not depend on their neighbours) is probed between two letters, ``"a" + c + "b"``: its
    ids from ``FastBertTokenizer`` must equal those of the words the table makes of the probe
    (:func:`_probe_words`), with a vocabulary that holds every character either side outputs,
    alone and as a ``##`` continuation, so that the ids spell the words and where they split.
    That rules out whatever the two treat differently (see
    :mod:`texkit.data.tokenizers.normalization`): control and
    private-use characters, compatibility characters, ``ß``... The result depends only on the
    mode; it is computed once per process.
    """
    candidates = _fast_path_candidates(lowercase)
    probes = ["a" + chr(cp) + "b" for cp in candidates]
    want = [_probe_words(cp, lowercase) for cp in candidates]
    normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=lowercase)
    normalized = normalizer.normalize(tf.constant(probes)).numpy().tolist()
    chars = {c for words in want for word in words for c in word}
    chars |= {c for text in normalized for c in text.decode("utf-8", "replace")}
    chars = sorted(c for c in chars if not c.isspace())
    vocab = [_PROBE_UNKNOWN, *chars, *("##" + c for c in chars)]
    index = {token: i for i, token in enumerate(vocab)}
    fast = tf_text.FastBertTokenizer(
        vocab=vocab,
        token_out_type=tf.int32,
        unknown_token=_PROBE_UNKNOWN,
        lower_case_nfd_strip_accents=lowercase,
    )
    got = fast.tokenize(tf.constant(probes)).to_list()
    safe = np.zeros(_FAST_CANDIDATES, bool)
    for cp, words, ids in zip(candidates, want, got, strict=True):
        spelled = [
            index.get(piece) for word in words for piece in [word[0], *("##" + c for c in word[1:])]
        ]
        safe[cp] = None not in spelled and spelled == ids
    return tuple(_ranges(safe))


def _fast_path_pattern(lowercase: bool) -> str:
    """An RE2 pattern for the texts of characters ``FastBertTokenizer`` treats as the table does.

    Every character must be one of :func:`_fast_safe_ranges`. The word limit is not checked here:
    see :func:`_rows_without_unknown`.
    """
    safe = np.zeros(_FAST_CANDIDATES, bool)
    for first, last in _fast_safe_ranges(lowercase):
        safe[first : last + 1] = True
    if not safe[[ord(c) for c in " \t\n\ra"]].all():
        raise RuntimeError("BERTTokenizer: FastBertTokenizer does not treat ASCII as expected")
    return f"{_char_class(_ranges(safe))}*"


def _rows_without_unknown(ids: tf.RaggedTensor, unk_id: int) -> tf.Tensor:
    """``[batch]`` bools: the rows of ``ids`` that hold no ``unk_id``.

    On text of safe characters ``FastBertTokenizer`` and the table make the same words, and
    differ only in the word limit: ``FastBertTokenizer`` counts UTF-8 bytes, the table characters
    (a 60-letter Cyrillic word is 120 bytes). A word within the byte limit is within the
    character limit, since no character is shorter than a byte; so a row in which
    ``FastBertTokenizer`` made no ``[UNK]`` has no word over either limit, and its ids are the
    table's. A row with an ``[UNK]`` (a long word, or one the vocabulary cannot spell) is redone
    by the table.
    """
    return tf.logical_not(tf.reduce_any(tf.equal(ids, unk_id), axis=1))


def _by_rows(
    take: tf.Tensor,
    others: Callable[[tf.Tensor], tf.RaggedTensor],
    taken: Callable[[tf.Tensor], tf.RaggedTensor],
) -> tf.RaggedTensor:
    """The rows of ``taken(index)`` where ``take`` (``[batch]`` bools) holds, those of
    ``others(index)`` elsewhere, in the batch's order; each gets the indices of its rows."""
    part = tf.cast(take, tf.int32)
    other_index, taken_index = tf.dynamic_partition(tf.range(tf.size(take)), part, 2)
    ids = tf.concat([others(other_index), taken(taken_index)], 0)
    order = tf.math.invert_permutation(tf.concat([other_index, taken_index], 0))
    return tf.gather(ids, order)
