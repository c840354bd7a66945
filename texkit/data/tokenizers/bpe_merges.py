"""Byte-level BPE in the TensorFlow graph: the merges as a table of ids, and the merge loop.

BPE works on vocabulary ids, not strings: a piece's bytes become the ids of their symbols, and
the merges are a ``tf.lookup.StaticHashTable`` from a pair of ids to the merge's rank and the
merged token's id (:func:`merge_table`; so every part and result of a merge must be in the
vocabulary, as the ``tokenizers`` library also requires). The distinct pieces of a batch
(``tf.unique``: the batch's cache of seen words) are merged together in a ``tf.while_loop``
(:func:`bpe_merge`): each round finds, in every piece, the pair of lowest rank (a segment min
over the flat pairs), merges each of its occurrences (of two overlapping ones, as in ``aaa``,
the left), and moves the pieces with no merge left out of the loop, so a round costs what the
unfinished pieces hold.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["bpe_merge", "bpe_pieces", "merge_table"]

_NO_MERGE = tf.int64.max


def merge_table(
    vocab: dict[str, int], merges: list[tuple[str, str]], bound: int
) -> tf.lookup.StaticHashTable:
    """The merges as a table from a pair of ids ``left * bound + right`` to ``rank * bound +``
    the merged token's id (``bound``: one more than the largest id)."""
    keys = [vocab[left] * bound + vocab[right] for left, right in merges]
    values = [rank * bound + vocab[left + right] for rank, (left, right) in enumerate(merges)]
    if not merges:  # a table cannot be empty; no pair of ids is -1
        keys, values = [-1], [_NO_MERGE]
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.int64), tf.constant(values, tf.int64)
        ),
        default_value=_NO_MERGE,
    )


def bpe_merge(
    words: tf.Tensor, byte_ids: tf.Tensor, table: tf.lookup.StaticHashTable, bound: int
) -> tf.RaggedTensor:
    """``[words]`` distinct pieces to ``[words, (tokens)]`` int32 ids: GPT-2's BPE.

    Args:
        words: The pieces.
        byte_ids: ``[256]`` int32: the id of each byte's symbol.
        table: :func:`merge_table`'s table.
        bound: One more than the largest id.
    """
    lengths = tf.strings.length(words)
    data = tf.io.decode_raw(tf.strings.reduce_join(words), tf.uint8)
    symbols = tf.gather(byte_ids, tf.cast(data, tf.int32))
    word_of = tf.repeat(tf.range(tf.size(words)), lengths)
    bound = tf.constant(bound, tf.int64)
    done_symbols = tf.TensorArray(tf.int32, size=1, dynamic_size=True, infer_shape=False)
    done_words = tf.TensorArray(tf.int32, size=1, dynamic_size=True, infer_shape=False)
    empty = tf.zeros([0], tf.int32)
    done_symbols = done_symbols.write(0, empty)
    done_words = done_words.write(0, empty)

    def merge_round(step, symbols, word_of, done_symbols, done_words):
        # Pairs of adjacent symbols of one word, as their merge: rank * bound + merged id.
        same_word = word_of[1:] == word_of[:-1]
        pairs = tf.cast(symbols[:-1], tf.int64) * bound + tf.cast(symbols[1:], tf.int64)
        merges = tf.where(same_word, table.lookup(pairs), _NO_MERGE)
        starts = tf.concat([[True], tf.logical_not(same_word)], 0)
        local = tf.cumsum(tf.cast(starts, tf.int32)) - 1  # each symbol's word, from 0
        best = tf.math.unsorted_segment_min(merges, local[:-1], local[-1] + 1)
        merging = best != _NO_MERGE  # [words]: the words with a merge left
        chosen = (merges == tf.gather(best, local[:-1])) & tf.gather(merging, local[:-1])
        # Of overlapping occurrences (x x x for the merge x+x), every other from the left.
        follows = tf.concat([[False], chosen[:-1]], 0)
        chosen = tf.cond(
            tf.reduce_any(chosen & follows),
            lambda: chosen & _even_in_run(chosen, follows),
            lambda: chosen,
        )
        merged = tf.cast(tf.gather(best, local[:-1]) % bound, tf.int32)
        symbols = tf.where(tf.concat([chosen, [False]], 0), tf.concat([merged, [0]], 0), symbols)
        unfinished = tf.gather(merging, local)
        finished = tf.logical_not(unfinished)
        done_symbols = done_symbols.write(step, tf.boolean_mask(symbols, finished))
        done_words = done_words.write(step, tf.boolean_mask(word_of, finished))
        kept = unfinished & tf.logical_not(tf.concat([[False], chosen], 0))
        return (
            step + 1,
            tf.boolean_mask(symbols, kept),
            tf.boolean_mask(word_of, kept),
            done_symbols,
            done_words,
        )

    _, _, _, done_symbols, done_words = tf.while_loop(
        lambda step, symbols, *_: tf.size(symbols) > 0,
        merge_round,
        (tf.constant(1), symbols, word_of, done_symbols, done_words),
        shape_invariants=(
            tf.TensorShape([]),
            tf.TensorShape([None]),
            tf.TensorShape([None]),
            tf.TensorShape(None),
            tf.TensorShape(None),
        ),
    )
    symbols = tf.reshape(done_symbols.concat(), [-1])
    word_of = tf.reshape(done_words.concat(), [-1])
    order = tf.argsort(word_of, stable=True)
    return tf.RaggedTensor.from_value_rowids(
        tf.gather(symbols, order),
        tf.cast(tf.gather(word_of, order), tf.int64),
        nrows=tf.size(words, out_type=tf.int64),
    )


def bpe_pieces(
    pieces: tf.RaggedTensor,
    byte_ids: tf.Tensor,
    table: tf.lookup.StaticHashTable,
    bound: int,
    whole_words: tf.lookup.StaticHashTable | None = None,
) -> tf.RaggedTensor:
    """``[batch, (pieces)]`` pre-tokenized pieces to ``[batch, (tokens)]`` int32 ids: each
    distinct piece of the batch merged once (:func:`bpe_merge`).

    Args:
        pieces: The pieces (UTF-8 bytes) of each text.
        byte_ids: ``[256]`` int32: the id of each byte's symbol.
        table: :func:`merge_table`'s table.
        bound: One more than the largest id.
        whole_words: ``None``, or a table from a piece's bytes to its id (int64, -1 when none):
            a piece it holds is that one token, not merged piece by piece (the ``tokenizers``
            library's ``ignore_merges``).
    """
    unique, index = tf.unique(pieces.flat_values)
    if whole_words is None:
        ids = bpe_merge(unique, byte_ids, table, bound)
    else:
        whole = whole_words.lookup(unique)
        found = whole >= 0
        merged = bpe_merge(tf.where(found, "", unique), byte_ids, table, bound)
        single = tf.RaggedTensor.from_row_lengths(
            tf.cast(tf.boolean_mask(whole, found), tf.int32), tf.cast(found, tf.int64)
        )
        ids = tf.concat([merged, single], axis=1)
    return pieces.with_flat_values(tf.gather(ids, index)).merge_dims(1, 2)


def _even_in_run(chosen: tf.Tensor, follows: tf.Tensor) -> tf.Tensor:
    """Whether each position is at an even offset in its run of consecutive ``chosen``."""
    starts = chosen & tf.logical_not(follows)
    position = tf.range(tf.size(chosen))
    run = tf.maximum(tf.cumsum(tf.cast(starts, tf.int32)) - 1, 0)
    offset = position - tf.gather(tf.boolean_mask(position, starts), run)
    return offset % 2 == 0
