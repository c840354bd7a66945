"""What the subword tokenizers share: raw texts to ids, and ids packed in a template.

:class:`TemplateTokenizer` is the base of :class:`~texkit.data.tokenizers.GPT2BPETokenizer` and
:class:`~texkit.data.tokenizers.SentencePieceTokenizer`. A subclass sets, in its constructor:

* ``_tokenize_fn``: ``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (a ``tf.function``);
* ``_template``: ``(first prefix, first suffix, second prefix, second suffix)``, tuples of ids
  (RoBERTa: ``((<s>,), (</s>,), (</s>,), (</s>,))``);
* ``_second_segment``: the segment id of the second text's part (1, or 0 for models with a
  single token type);
* ``_max_seq_length`` and ``_pad_id``.

Packing is dense, position by position (``tf.where`` on a ``[batch, max_seq_length]`` grid),
and pairs are truncated by BERT's rule (:func:`~texkit.data.tokenizers.packing._longest_first`).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.packing import _longest_first

__all__ = ["TemplateTokenizer", "as_batch"]


def as_batch(texts: Any, name: str, owner: str) -> tuple[tf.Tensor, bool]:
    """``texts`` as a [batch] string tensor, and whether it was a single (scalar) string."""
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    rank = texts.shape.rank
    if rank == 0:
        return texts[tf.newaxis], True
    if rank != 1:
        raise ValueError(
            f"{owner}: {name} must be a string or a [batch] of strings, got shape {texts.shape}"
        )
    return texts, False


class TemplateTokenizer(tf.Module):
    """Base class: :meth:`tokenize`, and :meth:`encode` / :meth:`pack` in a template."""

    _tokenize_fn: Any
    _template: tuple[tuple[int, ...], ...]
    _second_segment: int
    _max_seq_length: int
    _pad_id: int

    @property
    def _owner(self) -> str:
        return type(self).__name__

    def tokenize(self, texts: Any) -> tf.Tensor | tf.RaggedTensor:
        """Ids (int32) of raw texts, without special tokens.

        Args:
            texts: A string or a [batch] of strings (Python or string tensor).

        Returns:
            ``[batch, (tokens)]`` int32 ``tf.RaggedTensor``; for a single string a ``[tokens]``
            ``tf.Tensor``.
        """
        batch, single = as_batch(texts, "texts", self._owner)
        ids = self._tokenize_fn(batch)
        return ids[0] if single else ids

    def encode(self, texts: Any, second_texts: Any = None) -> dict[str, tf.Tensor]:
        """The model's inputs for single texts or text pairs, padded to ``max_seq_length``.

        Texts are packed in the style's template (see the class). What does not fit is cut
        from the end; a pair longest first: a token is dropped from the longer of ``A`` and ``B``
        (from ``B`` when they are as long) until the pair fits, as BERT's
        ``_truncate_seq_pair`` (:func:`~texkit.data.tokenizers.packing._longest_first`).
        Hugging Face's ``longest_first`` differs in one case: when both texts are cut and the
        room left for them is odd, it gives the odd token to the longer text (to ``B`` when
        they are as long), BERT's rule to ``A``.

        Args:
            texts: The first texts: a string or a [batch] of strings.
            second_texts: ``None``, or the second texts, of the same shape as ``texts``.

        Returns:
            A dict of int32 tensors, ``[batch, max_seq_length]`` (``[max_seq_length]`` for a
            single string, e.g. in ``dataset.map``): ``input_ids`` (padded with ``pad_id``),
            ``segment_ids`` (see the class) and ``sequence_length`` (``[batch]``, ``[]`` for a
            single string: the packed length, special tokens included).
        """
        first, single = as_batch(texts, "texts", self._owner)
        if second_texts is None:
            features = self.pack(self._tokenize_fn(first))
        else:
            second, second_single = as_batch(second_texts, "second_texts", self._owner)
            if second_single != single or not first.shape.is_compatible_with(second.shape):
                raise ValueError(
                    f"{self._owner}: texts and second_texts must have the same shape, got "
                    f"{tf.convert_to_tensor(texts, tf.string).shape} and "
                    f"{tf.convert_to_tensor(second_texts, tf.string).shape}"
                )
            same_size = tf.debugging.assert_equal(
                tf.shape(first),
                tf.shape(second),
                message=f"{self._owner}: texts and second_texts differ in batch size",
            )
            with tf.control_dependencies([same_size]):
                second = tf.identity(second)
            features = self.pack(self._tokenize_fn(first), self._tokenize_fn(second))
        if single:
            features = {key: value[0] for key, value in features.items()}
        return features

    def pack(
        self, ids: tf.RaggedTensor, second_ids: tf.RaggedTensor | None = None
    ) -> dict[str, tf.Tensor]:
        """:meth:`encode` for ids: the model's inputs from :meth:`tokenize`'s output.

        Args:
            ids: ``[batch, (tokens)]`` ids (a ``tf.RaggedTensor``), without special tokens.
            second_ids: ``None``, or the second segments' ids, as many rows.

        Returns:
            :meth:`encode`'s dict of ``[batch, max_seq_length]`` int32 tensors.
        """
        segments = []
        for arg, value in (("ids", ids), ("second_ids", second_ids)):
            if value is None:
                continue
            if not isinstance(value, tf.RaggedTensor) or value.shape.rank != 2:
                raise TypeError(
                    f"{self._owner}.pack: {arg} must be a [batch, (tokens)] tf.RaggedTensor "
                    f"(what tokenize gives for a batch), got {value!r}"
                )
            segments.append(tf.cast(value, tf.int32))
        template = self._template[: 2 * len(segments)]
        length = self._max_seq_length
        budget = length - sum(len(part) for part in template)
        lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]
        if len(segments) == 1:
            keep = [tf.minimum(lengths[0], budget)]
        else:
            if budget < 0:
                raise ValueError(
                    f"{self._owner}: max_seq_length={length} leaves no room for the "
                    f"{length - budget} special tokens of a pair"
                )
            same_rows = tf.debugging.assert_equal(
                tf.size(lengths[0]),
                tf.size(lengths[1]),
                message=f"{self._owner}.pack: ids and second_ids differ in rows",
            )
            with tf.control_dependencies([same_rows]):
                keep = list(_longest_first(*lengths, budget))
        rows = tf.shape(lengths[0])[0]
        position = tf.range(length)[tf.newaxis, :]
        input_ids = tf.fill([rows, length], tf.constant(self._pad_id, tf.int32))
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
                segment.to_tensor(self._pad_id, shape=[None, length]),
                tf.clip_by_value(position - start, 0, length - 1),
                batch_dims=1,
            )
            input_ids = tf.where((position >= start) & (position < end), shifted, input_ids)
            for offset, token in enumerate(suffix):
                input_ids = tf.where(position == end + offset, token, input_ids)
            start = end + len(suffix)
            if index == 1 and self._second_segment:  # the second part: prefix, B, suffix
                second = (position >= begin) & (position < start)
                segment_ids = tf.where(second, self._second_segment, segment_ids)
        return {
            "input_ids": input_ids,
            "segment_ids": segment_ids,
            "sequence_length": start[:, 0],
        }
