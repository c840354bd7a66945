"""BERT's input packing: ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``, padded to a static length.

:meth:`BERTTokenizer.pack <texkit.data.tokenizers.BERTTokenizer.pack>` and
:meth:`~texkit.data.tokenizers.BERTTokenizer.encode` call :func:`_pack`. The result is built
densely, position by position, rather than with ``tf_text.combine_segments`` followed by
``tf_text.pad_model_inputs``, which give the same tensors more slowly (see
``benchmarks/RESULTS.md``, tokenization).
"""

from __future__ import annotations

import tensorflow as tf


def _pack(
    ids: tf.RaggedTensor,
    second_ids: tf.RaggedTensor | None,
    max_seq_length: int,
    cls_id: int,
    sep_id: int,
    pad_id: int,
) -> dict[str, tf.Tensor]:
    """The body of :meth:`BERTTokenizer.pack <texkit.data.tokenizers.BERTTokenizer.pack>`, given
    the tokenizer's ``max_seq_length`` and the ids of ``[CLS]``, ``[SEP]`` and ``[PAD]``."""
    segments = []
    for arg, value in (("ids", ids), ("second_ids", second_ids)):
        if value is None:
            continue
        if not isinstance(value, tf.RaggedTensor) or value.shape.rank != 2:
            raise TypeError(
                f"BERTTokenizer.pack: {arg} must be a [batch, (tokens)] tf.RaggedTensor "
                f"(what tokenize gives for a batch), got {value!r}"
            )
        segments.append(tf.cast(value, tf.int32))
    length = max_seq_length
    lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]
    if len(segments) == 1:
        keep = [tf.minimum(lengths[0], length - 2)]
    else:
        if length < 3:
            raise ValueError(
                f"BERTTokenizer: max_seq_length={length} leaves no room for a pair "
                "([CLS] A [SEP] B [SEP] needs at least 3)"
            )
        same_rows = tf.debugging.assert_equal(
            tf.size(lengths[0]),
            tf.size(lengths[1]),
            message="BERTTokenizer.pack: ids and second_ids differ in rows",
        )
        with tf.control_dependencies([same_rows]):
            keep = list(_longest_first(*lengths, length - 3))
    position = tf.range(length)[tf.newaxis, :]
    dense = segments[0].to_tensor(pad_id, shape=[None, length - 1])
    input_ids = tf.concat([tf.fill([tf.shape(dense)[0], 1], cls_id), dense], 1)
    first_sep = keep[0][:, tf.newaxis] + 1
    input_ids = tf.where(
        position < first_sep,
        input_ids,
        tf.where(position == first_sep, sep_id, pad_id),
    )
    segment_ids = tf.zeros_like(input_ids)
    total = keep[0] + 2
    if len(segments) == 2:
        start = first_sep + 1
        # Row i's token k goes to position start[i] + k.
        shifted = tf.gather(
            segments[1].to_tensor(pad_id, shape=[None, length]),
            tf.maximum(position - start, 0),
            batch_dims=1,
        )
        second_sep = start + keep[1][:, tf.newaxis]
        input_ids = tf.where(
            (position >= start) & (position < second_sep),
            shifted,
            tf.where(position == second_sep, sep_id, input_ids),
        )
        segment_ids = tf.cast((position >= start) & (position <= second_sep), tf.int32)
        total += keep[1] + 1
    return {"input_ids": input_ids, "segment_ids": segment_ids, "sequence_length": total}


def _longest_first(first: tf.Tensor, second: tf.Tensor, budget: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Lengths kept by BERT's longest-first truncation of a pair to ``budget`` tokens.

    The loop drops the last token of the longer side (of the second on ties) until the pair fits:
    the shorter side stays whole while cutting the longer one down to it is enough; past that
    both are cut, and the first keeps ``ceil(budget / 2)``. Closed form on [batch] int32 lengths.
    """
    keep_first = tf.minimum(first, tf.maximum(budget - second, (budget + 1) // 2))
    keep_second = tf.minimum(second, budget - keep_first)
    return keep_first, keep_second
