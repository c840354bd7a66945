"""Pearson and Spearman correlation of scores: over a corpus, and accumulated over a dataset.

:func:`pearson_correlation` and :func:`spearman_correlation` score a whole corpus of paired
numbers and return Python floats, as SciPy's ``pearsonr`` and ``spearmanr`` do (the GLUE scores
of STS-B). The Keras metrics accumulate over batches and equal the functions over the whole
dataset however it is batched; they run eagerly, in ``tf.function``, with ``jit_compile=True``
and under ``tf.distribute`` strategies:

- :class:`CorpusPearsonCorrelation` keeps six running sums (count, sums, sums of squares and of
  products) in float64. Sums add up across batches and replicas, so each replica keeps its own
  and they are summed when read. The variances are differences of sums, accurate while the
  scores' mean is not many orders of magnitude larger than their spread (the relative error
  grows with (mean / standard deviation)**2 times 1e-16); a variance within rounding of zero
  counts as zero, so constant scores give NaN as in SciPy.
- :class:`CorpusSpearmanCorrelation` needs every pair, for ranks: it stores them in two
  preallocated buffers of ``capacity`` pairs (16384 by default; GLUE's STS-B dev set has 1,500),
  fixed-shape variables so that it compiles with XLA. Under a strategy each replica gathers the
  batch of every replica, so every replica holds the whole corpus. A batch that would overflow
  the buffers raises ``InvalidArgumentError``, nothing stored; under ``jit_compile=True``, where
  XLA cannot raise, the overflowing pairs are dropped and ``result()`` is NaN.

Both are named ``Corpus...`` because ``keras.metrics.PearsonCorrelation`` correlates along the
last axis of each batch and averages those values, which differs from the correlation of the
whole dataset. Neither takes
``sample_weight``. Ties get the average of their ranks, as in SciPy's ``rankdata``. A constant
side gives NaN, as in SciPy; fewer than two pairs give NaN from the metrics and a ``ValueError``
from the functions (as SciPy's ``pearsonr``; its ``spearmanr`` returns NaN).
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from texkit.evals._corpus import corpus_pair, flat_batch, no_sample_weight

__all__ = [
    "CorpusPearsonCorrelation",
    "CorpusSpearmanCorrelation",
    "pearson_correlation",
    "spearman_correlation",
]


def _average_ranks(values: tf.Tensor) -> tf.Tensor:
    """1-based ranks of a 1-D tensor, ties sharing the mean of their ranks: a value with
    ``below`` smaller values and ``up_to`` values not larger takes ranks below+1 .. up_to."""
    ordered = tf.sort(values)
    below = tf.searchsorted(ordered, values, side="left")
    up_to = tf.searchsorted(ordered, values, side="right")
    return tf.cast(below + up_to + 1, values.dtype) / 2.0


def _corpus_scores(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = corpus_pair(x, y, ("x", "y"), "float")
    if x.size < 2:
        raise ValueError(f"x and y need at least 2 pairs for a correlation, got {x.size}")
    return x, y


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    x_centered, y_centered = x - x.mean(), y - y.mean()
    norms = np.linalg.norm(x_centered) * np.linalg.norm(y_centered)
    return float(np.clip(np.dot(x_centered, y_centered) / norms, -1.0, 1.0))


def pearson_correlation(x: Any, y: Any) -> float:
    """The Pearson correlation coefficient of two paired corpora of scores, as SciPy's
    ``pearsonr`` statistic (computed in float64 from the centered values).

    Args:
        x: one number per example (a list, NumPy array or tensor), finite.
        y: as many numbers, paired with ``x``.

    Returns:
        A Python float from -1 to 1; NaN when ``x`` or ``y`` is constant.

    Raises:
        ValueError: naming the argument, for non-1-D, non-numeric or non-finite values, lengths
            that differ, or fewer than 2 pairs.

    Example:
        >>> round(pearson_correlation([1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 2.0, 4.0]), 4)
        0.8367
    """
    return _pearson(*_corpus_scores(x, y))


def spearman_correlation(x: Any, y: Any) -> float:
    """The Spearman rank correlation of two paired corpora of scores, as SciPy's ``spearmanr``
    statistic: the Pearson correlation of their ranks, ties ranked by the mean of their ranks.

    Args:
        x: one number per example (a list, NumPy array or tensor), finite.
        y: as many numbers, paired with ``x``.

    Returns:
        A Python float from -1 to 1; NaN when ``x`` or ``y`` is constant.

    Raises:
        ValueError: as :func:`pearson_correlation`.

    Example:
        >>> round(spearman_correlation([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 400.0]), 4)
        1.0
    """
    x, y = _corpus_scores(x, y)
    ranks = [_average_ranks(tf.constant(values)).numpy() for values in (x, y)]
    return _pearson(*ranks)


def _checked_scores(labels: Any, predictions: Any, dtype: Any) -> tuple[Any, Any, list[Any]]:
    """A batch's scores as flat tensors of ``dtype``, and the checks (ops) that they pair up and
    are finite."""
    labels, predictions, checks = flat_batch(tf.cast(labels, dtype), tf.cast(predictions, dtype))
    for name, values in (("labels", labels), ("predictions", predictions)):
        checks.append(
            tf.debugging.Assert(
                tf.reduce_all(tf.math.is_finite(values)),
                [f"{name} must be finite scores (no NaN or infinity)"],
            )
        )
    return labels, predictions, checks


@keras.saving.register_keras_serializable(package="texkit")
class CorpusPearsonCorrelation(keras.metrics.Metric):
    """The Pearson correlation over a dataset, from running sums (see the module docs).

    Equal to :func:`pearson_correlation` over all the batches together; NaN before two pairs are
    counted or when either side is constant.

    Args:
        name: the metric's name (default ``"pearson_correlation"``).
        dtype: of the sums and the result: float64 by default (float32 loses digits when the
            scores' mean is large; TPUs need it).

    Call ``update_state(labels, predictions)`` per batch (``[batch]`` or ``[batch, 1]`` finite
    scores each; non-finite ones raise ``InvalidArgumentError``, nothing counted), then
    ``result()``; ``reset_state()`` starts over.

    Example:
        >>> metric = CorpusPearsonCorrelation()
        >>> metric.update_state([1.0, 2.0], [1.5, 2.5])
        >>> metric.update_state([3.0, 4.0], [2.0, 4.0])
        >>> round(float(metric.result()), 4)
        0.8367
    """

    def __init__(self, name: str | None = None, dtype: Any = "float64"):
        super().__init__(name=name or "pearson_correlation", dtype=dtype)
        # count, sum x, sum y, sum x*x, sum y*y, sum x*y
        self.sums = self.add_variable(
            shape=(6,), initializer="zeros", dtype=self.dtype, name="sums"
        )

    def update_state(self, labels: Any, predictions: Any, sample_weight: Any = None) -> None:
        no_sample_weight(self, sample_weight)
        x, y, checks = _checked_scores(labels, predictions, self.dtype)
        with tf.control_dependencies(checks):
            terms = tf.stack([tf.ones_like(x), x, y, x * x, y * y, x * y])
            self.sums.assign_add(tf.reduce_sum(terms, axis=1))

    def result(self) -> tf.Tensor:
        count, sum_x, sum_y, sum_xx, sum_yy, sum_xy = tf.unstack(tf.convert_to_tensor(self.sums))
        safe_count = tf.maximum(count, 1.0)
        tolerance = 4.0 * count * np.finfo(self.dtype).eps
        # Differences of sums: a variance within their rounding error is a constant's.
        x_variance = sum_xx - sum_x * sum_x / safe_count
        y_variance = sum_yy - sum_y * sum_y / safe_count
        x_variance = tf.where(x_variance > tolerance * sum_xx, x_variance, tf.zeros_like(count))
        y_variance = tf.where(y_variance > tolerance * sum_yy, y_variance, tf.zeros_like(count))
        covariance = sum_xy - sum_x * sum_y / safe_count
        correlation = covariance / tf.sqrt(x_variance * y_variance)
        defined = tf.logical_and(count >= 2, x_variance * y_variance > 0)
        return tf.where(
            defined,
            tf.clip_by_value(correlation, -1.0, 1.0),
            tf.constant(np.nan, self.dtype),
        )


@keras.saving.register_keras_serializable(package="texkit")
class CorpusSpearmanCorrelation(keras.metrics.Metric):
    """The Spearman rank correlation over a dataset, from every pair kept in fixed-size buffers
    (see the module docs).

    Equal to :func:`spearman_correlation` over all the batches together; NaN before two pairs
    are counted, when either side is constant, or when more than ``capacity`` pairs came under
    XLA.

    Args:
        capacity: the most pairs it holds (its two buffers take ``2 * capacity`` values).
        name: the metric's name (default ``"spearman_correlation"``).
        dtype: of the buffers and the result: float64 by default.

    Call ``update_state(labels, predictions)`` per batch (``[batch]`` or ``[batch, 1]`` finite
    scores each; non-finite ones, or more pairs than ``capacity`` in all, raise
    ``InvalidArgumentError``, nothing stored), then ``result()``; ``reset_state()`` starts over.

    Example:
        >>> metric = CorpusSpearmanCorrelation(capacity=1500)
        >>> metric.update_state([1.0, 2.0], [10.0, 20.0])
        >>> metric.update_state([3.0, 4.0], [30.0, 400.0])
        >>> round(float(metric.result()), 4)
        1.0
    """

    def __init__(self, capacity: int = 16384, name: str | None = None, dtype: Any = "float64"):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 2:
            raise ValueError(f"capacity must be an int >= 2, got {capacity!r}")
        super().__init__(name=name or "spearman_correlation", dtype=dtype)
        self.capacity = capacity
        # Every replica holds every pair (update_state gathers them): read the first's copy.
        variable = {
            "initializer": "zeros",
            "dtype": self.dtype,
            "aggregation": "only_first_replica",
        }
        self.labels = self.add_variable(shape=(capacity,), name="labels", **variable)
        self.predictions = self.add_variable(shape=(capacity,), name="predictions", **variable)
        self.count = self.add_variable(shape=(), name="count", **variable)

    def update_state(self, labels: Any, predictions: Any, sample_weight: Any = None) -> None:
        no_sample_weight(self, sample_weight)
        labels, predictions, checks = _checked_scores(labels, predictions, self.dtype)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            labels = context.all_gather(labels, axis=0)
            predictions = context.all_gather(predictions, axis=0)
        start = tf.cast(self.count, tf.int32)
        positions = start + tf.range(tf.size(labels))
        message = f"{self.name} holds at most capacity={self.capacity} pairs"
        checks.append(tf.debugging.Assert(tf.size(labels) + start <= self.capacity, [message]))
        # Positions past the end go to one extra slot, cut off after the scatter.
        positions = tf.minimum(positions, self.capacity)[:, None]
        with tf.control_dependencies(checks):
            for buffer, values in ((self.labels, labels), (self.predictions, predictions)):
                extended = tf.concat([buffer, tf.zeros([1], self.dtype)], axis=0)
                updated = tf.tensor_scatter_nd_update(extended, positions, values)
                buffer.assign(updated[: self.capacity])
            self.count.assign_add(tf.cast(tf.size(labels), self.dtype))

    def result(self) -> tf.Tensor:
        count = tf.convert_to_tensor(self.count)
        size = tf.minimum(count, float(self.capacity))
        kept = tf.range(self.capacity, dtype=self.dtype) < size
        infinity = tf.constant(np.inf, self.dtype)
        # Empty slots rank after every (finite) score and are then left out.
        ranks = [
            _average_ranks(tf.where(kept, tf.convert_to_tensor(buffer), infinity))
            for buffer in (self.labels, self.predictions)
        ]
        middle = (size + 1.0) / 2.0  # the mean of the ranks 1 .. size
        x, y = [tf.where(kept, rank - middle, tf.zeros_like(rank)) for rank in ranks]
        x_variance, y_variance = tf.reduce_sum(x * x), tf.reduce_sum(y * y)
        defined = tf.logical_and(count <= self.capacity, x_variance * y_variance > 0)
        correlation = tf.reduce_sum(x * y) / tf.sqrt(x_variance * y_variance)
        return tf.where(
            defined, tf.clip_by_value(correlation, -1.0, 1.0), tf.constant(np.nan, self.dtype)
        )

    def get_config(self) -> dict:
        return {**super().get_config(), "capacity": self.capacity}
