"""Accuracy and perplexity of tokens: of one batch, and accumulated over a dataset.

:func:`accuracy` and :func:`perplexity` score one batch;
:class:`Accuracy` and :class:`Perplexity` accumulate over a whole dataset. The accumulators are
Keras metrics (``update_state``, ``result``, ``reset_state``): they run eagerly and inside
``tf.function``; :class:`Perplexity`, which takes logits, also in ``model.compile(metrics=...)``
(``weighted_metrics=...`` to receive Keras' ``sample_weight``), while :class:`Accuracy` takes
predicted ids, as Texar's ``accuracy`` did. Per-token inputs follow :mod:`texkit.losses`:
``[batch, max_time]`` labels with ``sequence_length`` ``[batch]`` (steps at or past the length do
not count), or Keras' ``sample_weight`` (a weight per token, or per sequence), or both.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from texkit import losses

__all__ = ["Accuracy", "Perplexity", "accuracy", "perplexity"]


def _token_weights(labels: Any, sequence_length: Any, sample_weight: Any) -> Any:
    """float32 weights of the shape of ``labels``: 0 past the lengths, times ``sample_weight``."""
    weights = tf.ones_like(labels, dtype=tf.float32)
    if sequence_length is not None:
        if labels.shape.rank != 2:
            raise ValueError(
                "with sequence_length, labels must be [batch, max_time], got shape "
                f"{tuple(labels.shape)}"
            )
        sequence_length = tf.convert_to_tensor(sequence_length)
        if sequence_length.shape.rank != 1 or not sequence_length.dtype.is_integer:
            raise ValueError(
                "sequence_length must be [batch] int lengths, got shape "
                f"{tuple(sequence_length.shape)} and dtype {sequence_length.dtype.name}"
            )
        if not sequence_length.shape.is_compatible_with(labels.shape[:1]):
            raise ValueError(
                f"sequence_length must be [batch] with batch {labels.shape[0]} (labels shape "
                f"{tuple(labels.shape)}), got shape {tuple(sequence_length.shape)}"
            )
        mask = tf.sequence_mask(sequence_length, tf.shape(labels)[1], dtype=tf.float32)
        weights *= mask
    if sample_weight is not None:
        sample_weight = tf.cast(tf.convert_to_tensor(sample_weight), tf.float32)
        rank = sample_weight.shape.rank
        if rank is None or rank > labels.shape.rank:
            raise ValueError(
                f"sample_weight must be [batch] or the shape of labels {tuple(labels.shape)}, "
                f"got shape {tuple(sample_weight.shape)}"
            )
        expected = labels.shape[:rank]
        if not sample_weight.shape.is_compatible_with(expected):
            raise ValueError(
                f"sample_weight must be [batch] or the shape of labels {tuple(labels.shape)}, "
                f"got shape {tuple(sample_weight.shape)}"
            )
        weights *= sample_weight[(Ellipsis,) + (None,) * (labels.shape.rank - rank)]
    return weights


def _correct_and_weights(labels: Any, preds: Any, sequence_length: Any, sample_weight: Any):
    labels = tf.convert_to_tensor(labels)
    preds = tf.convert_to_tensor(preds)
    if labels.shape.rank is None or not labels.shape.is_compatible_with(preds.shape):
        raise ValueError(
            f"labels and preds must have the same shape, got labels shape {tuple(labels.shape)} "
            f"and preds shape {tuple(preds.shape)}"
        )
    weights = _token_weights(labels, sequence_length, sample_weight)
    correct = tf.cast(tf.equal(preds, tf.cast(labels, preds.dtype)), tf.float32)
    return tf.reduce_sum(correct * weights), tf.reduce_sum(weights)


def _nll_and_weights(labels: Any, logits: Any, sequence_length: Any, sample_weight: Any):
    labels = tf.convert_to_tensor(labels)
    logits = tf.convert_to_tensor(logits)
    if labels.shape.rank != 2 or logits.shape.rank != 3:
        raise ValueError(
            "labels must be [batch, max_time] ids and logits [batch, max_time, vocab_size], got "
            f"labels shape {tuple(labels.shape)} and logits shape {tuple(logits.shape)}"
        )
    weights = _token_weights(labels, sequence_length, sample_weight)
    nll = losses.sequence_sparse_softmax_cross_entropy(
        labels,
        logits,
        sequence_length,
        average_across_batch=False,
        sum_over_timesteps=False,
    )
    return tf.reduce_sum(nll * weights), tf.reduce_sum(weights)


def accuracy(
    labels: Any, preds: Any, sequence_length: Any = None, sample_weight: Any = None
) -> tf.Tensor:
    """The fraction of ``preds`` equal to ``labels`` in one batch, as a float32 scalar.

    Args:
        labels: the true ids (or values), any shape.
        preds: the predictions, of the shape of ``labels``; ``labels`` are cast to their dtype.
        sequence_length: for ``[batch, max_time]`` labels, the ``[batch]`` valid lengths; the
            steps past them do not count.
        sample_weight: a weight per element of ``labels``, or per row (``[batch]``).

    Returns:
        The (weighted) share of correct predictions; NaN when nothing counts.

    Example:
        >>> labels = tf.constant([[4, 5, 2], [6, 2, 0]])
        >>> preds = tf.constant([[4, 7, 2], [6, 2, 9]])
        >>> round(float(accuracy(labels, preds, sequence_length=[3, 2])), 4)  # 4 of 5 valid
        0.8
    """
    correct, count = _correct_and_weights(labels, preds, sequence_length, sample_weight)
    return correct / count


def perplexity(
    labels: Any, logits: Any, sequence_length: Any = None, sample_weight: Any = None
) -> tf.Tensor:
    """Per-token perplexity of one batch: ``exp`` of the mean cross entropy of the valid tokens.

    Args:
        labels: ``[batch, max_time]`` int target ids.
        logits: ``[batch, max_time, vocab_size]`` unnormalized log-probabilities, any float
            dtype (computed in float32).
        sequence_length: ``[batch]`` valid lengths, or ``None`` for every step.
        sample_weight: a weight per token (``[batch, max_time]``) or per sequence (``[batch]``).

    Returns:
        A float32 scalar; NaN when no token counts.

    Example:
        Uniform logits over 10 ids give a perplexity of 10, whatever the labels:

        >>> round(float(perplexity([[1, 2, 0]], tf.zeros([1, 3, 10]), sequence_length=[2])), 4)
        10.0
    """
    nll, count = _nll_and_weights(labels, logits, sequence_length, sample_weight)
    return tf.exp(nll / count)


class _TokenTotal(keras.metrics.Metric):
    """A Keras metric of two accumulators: a total over the counted tokens (the variable and
    attribute named by ``_total``) and their ``count``; ``update_state`` adds one batch's, and
    ``result()`` is ``_finish(total / count)``. ``_default_name`` is the default name."""

    _total = "total"
    _default_name = "token_total"
    _finish = staticmethod(tf.identity)

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(name=name or self._default_name, dtype=dtype)
        total = self.add_variable(shape=(), initializer="zeros", name=self._total)
        setattr(self, self._total, total)
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def _add(self, total: Any, count: Any) -> None:
        variable = getattr(self, self._total)
        variable.assign_add(tf.cast(total, variable.dtype))
        self.count.assign_add(tf.cast(count, self.count.dtype))

    def result(self) -> Any:
        return self._finish(getattr(self, self._total) / self.count)


@keras.saving.register_keras_serializable(package="texkit")
class Accuracy(_TokenTotal):
    """Accuracy accumulated over batches: correct predictions over all counted elements.

    Args:
        name: the metric's name (default ``"accuracy"``).
        dtype: the dtype of the accumulators (float32 by default).

    Call ``update_state(labels, preds, sequence_length=None, sample_weight=None)`` per batch
    (arguments as in :func:`accuracy`), then ``result()``; ``reset_state()`` starts over.
    ``result()`` is NaN before anything counted.

    Example:
        >>> metric = Accuracy()
        >>> metric.update_state([[4, 5, 2], [6, 2, 0]], [[4, 7, 2], [6, 2, 9]],
        ...                     sequence_length=[3, 2])
        >>> metric.update_state([[8, 2, 0]], [[3, 2, 5]], sequence_length=[2])
        >>> round(float(metric.result()), 4)  # (4 + 1) correct of (5 + 2) valid steps
        0.7143
    """

    _total, _default_name = "correct", "accuracy"

    def update_state(
        self, labels: Any, preds: Any, sequence_length: Any = None, sample_weight: Any = None
    ) -> None:
        self._add(*_correct_and_weights(labels, preds, sequence_length, sample_weight))


@keras.saving.register_keras_serializable(package="texkit")
class Perplexity(_TokenTotal):
    """Per-token perplexity over a dataset: ``exp(total cross entropy / number of tokens)``.

    Unlike the mean of per-batch perplexities, this weighs every token the same, however the
    tokens fall into batches.

    Args:
        name: the metric's name (default ``"perplexity"``).
        dtype: the dtype of the accumulators (float32 by default).

    Call ``update_state(labels, logits, sequence_length=None, sample_weight=None)`` per batch
    (arguments as in :func:`perplexity`), then ``result()``; ``reset_state()`` starts over.
    ``result()`` is NaN before any token counted.

    Example:
        A language model's perplexity over a dataset of dicts as :mod:`texkit.data` makes them,
        each step predicting the next token (here with uniform logits over 10 ids):

        >>> dataset = tf.data.Dataset.from_tensor_slices(
        ...     {"text_ids": [[1, 7, 8, 2], [1, 6, 2, 0], [1, 9, 9, 2]], "length": [4, 3, 4]}
        ... ).batch(2)
        >>> metric = Perplexity()
        >>> for batch in dataset:
        ...     labels = batch["text_ids"][:, 1:]
        ...     logits = tf.zeros(tf.concat([tf.shape(labels), [10]], 0))
        ...     metric.update_state(labels, logits, sequence_length=batch["length"] - 1)
        >>> round(float(metric.result()), 4)
        10.0
    """

    _total, _default_name, _finish = "total_nll", "perplexity", staticmethod(tf.exp)

    def update_state(
        self, labels: Any, logits: Any, sequence_length: Any = None, sample_weight: Any = None
    ) -> None:
        self._add(*_nll_and_weights(labels, logits, sequence_length, sample_weight))
