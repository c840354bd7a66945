"""Ids packed in a template of special tokens (``[CLS] A [SEP] B [SEP]``), padded to a static size.

:meth:`TemplateTokenizer.pack <texkit.data.tokenizers.templated.TemplateTokenizer.pack>` (and so
every tokenizer's ``encode``) calls :func:`_pack`. The result is built densely, position by
position (``tf.where`` on a ``[batch, max_seq_length]`` grid), rather than with
``tf_text.combine_segments`` followed by ``tf_text.pad_model_inputs``, which give the same tensors
more slowly (see ``benchmarks/RESULTS.md``, tokenization). Pairs are truncated by BERT's rule
(:func:`_longest_first`).
"""

from __future__ import annotations

import tensorflow as tf


def _pack(
    segments: list[tf.RaggedTensor],
    template: tuple[tuple[int, ...], ...],
    second_segment: int,
    length: int,
    pad_id: int,
    owner: str,
) -> dict[str, tf.Tensor]:
    """The body of :meth:`~texkit.data.tokenizers.templated.TemplateTokenizer.pack`: one or two
    ``[batch, (tokens)]`` int32 ``segments`` packed in ``template`` (first prefix, first suffix,
    second prefix, second suffix), the second part's segment id ``second_segment``, padded with
    ``pad_id`` to ``length``; ``owner`` is the class the errors name."""
    template = template[: 2 * len(segments)]
    budget = length - sum(len(part) for part in template)
    lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]
    if len(segments) == 1:
        keep = [tf.minimum(lengths[0], budget)]
    else:
        if budget < 0:
            raise ValueError(
                f"{owner}: max_seq_length={length} leaves no room for the "
                f"{length - budget} special tokens of a pair"
            )
        same_rows = tf.debugging.assert_equal(
            tf.size(lengths[0]),
            tf.size(lengths[1]),
            message=f"{owner}.pack: ids and second_ids differ in rows",
        )
        with tf.control_dependencies([same_rows]):
            keep = list(_longest_first(*lengths, budget))
    rows = tf.shape(lengths[0])[0]
    position = tf.range(length)[tf.newaxis, :]
    input_ids = tf.fill([rows, length], tf.constant(pad_id, tf.int32))
    segment_ids = tf.zeros([rows, length], tf.int32)
    start = tf.zeros([rows, 1], tf.int32)  # where the next part begins
    for index, (segment, kept) in enumerate(zip(segments, keep, strict=True)):
        prefix, suffix = template[2 * index : 2 * index + 2]
        begin = start
        for offset, token in enumerate(prefix):
            input_ids = tf.where(position == start + offset, token, input_ids)
        start += len(prefix)
        end = start + kept[:, tf.newaxis]
        # Row i's token k goes to position start[i] + k.
        shifted = tf.gather(
            segment.to_tensor(pad_id, shape=[None, length]),
            tf.clip_by_value(position - start, 0, length - 1),
            batch_dims=1,
        )
        input_ids = tf.where((position >= start) & (position < end), shifted, input_ids)
        for offset, token in enumerate(suffix):
            input_ids = tf.where(position == end + offset, token, input_ids)
        start = end + len(suffix)
        if index == 1 and second_segment:  # the second part: prefix, B, suffix
            second = (position >= begin) & (position < start)
            segment_ids = tf.where(second, second_segment, segment_ids)
    return {"input_ids": input_ids, "segment_ids": segment_ids, "sequence_length": start[:, 0]}


def _longest_first(first: tf.Tensor, second: tf.Tensor, budget: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Lengths kept by BERT's longest-first truncation of a pair to ``budget`` tokens.

    The loop drops the last token of the longer side (of the second on ties) until the pair fits:
    the shorter side stays whole while cutting the longer one down to it is enough; past that
    both are cut, and the first keeps ``ceil(budget / 2)``. Closed form on [batch] int32 lengths.
    """
    keep_first = tf.minimum(first, tf.maximum(budget - second, (budget + 1) // 2))
    keep_second = tf.minimum(second, budget - keep_first)
    return keep_first, keep_second
