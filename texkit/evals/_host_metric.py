"""HostMetric: a Keras metric whose statistics of a batch of texts are counted in Python.

Scores such as ROUGE, chrF, TER and SQuAD's are counted by Python code (``rouge-score``,
sacrebleu, string normalization), so a subclass's :meth:`HostMetric.batch_statistics` runs on
the host: called directly when the metric is used eagerly, and through ``tf.numpy_function``
inside a ``tf.function``, where string tensors arrive as NumPy arrays of UTF-8 ``bytes`` (the
second argument may be a 2-D ``tf.RaggedTensor``, e.g. a varying number of references). It
returns the batch's sums of the metric's sufficient statistics, which the metric adds to float64
variables (``totals`` and the number of pairs, ``count``); the score over a dataset is a function
of those sums, so it does not depend on how the data was batched.

``tf.numpy_function`` cannot be compiled by XLA and does not run on TPUs: use these metrics
eagerly or in a plain ``tf.function`` (a Keras model compiled with ``jit_compile=False``). In a
``tf.function``, an error raised by the host code reaches the caller as a
``tf.errors.InvalidArgumentError`` (or ``UnknownError``) whose message holds the original one.
A refused batch changes nothing: the statistics are all counted before any variable changes.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

__all__ = ["HostMetric"]


def _is_graph_tensor(value: Any) -> bool:
    tensor_types = (tf.Tensor, tf.Variable, tf.RaggedTensor)
    return isinstance(value, tensor_types) and not tf.executing_eagerly()


class HostMetric(keras.metrics.Metric):
    """The base of metrics counted on the host; subclasses implement :meth:`batch_statistics`.

    Args:
        num_statistics: the length of the statistics vector.
        name: the metric's name.
        dtype: the dtype of :meth:`result` (float32 by default); the sums are float64.
    """

    def __init__(self, num_statistics: int, name: str, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.num_statistics = int(num_statistics)
        self.totals = self.add_variable(
            shape=(self.num_statistics,), initializer="zeros", dtype="float64", name="totals"
        )
        self.count = self.add_variable(shape=(), initializer="zeros", dtype="float64", name="count")

    def batch_statistics(self, first: Any, second: Any) -> np.ndarray:
        """The sums of the statistics over one batch, float64 ``[num_statistics]``.

        ``first`` and ``second`` are the arguments of :meth:`update_state`, as given (eagerly)
        or as NumPy arrays (in a ``tf.function``); the batch's size is the length of ``first``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement batch_statistics")

    def _host(self, first: Any, second: Any) -> np.ndarray:
        sums = np.asarray(self.batch_statistics(first, second), dtype=np.float64)
        if sums.shape != (self.num_statistics,):
            raise ValueError(
                f"{type(self).__name__}.batch_statistics returned shape {sums.shape}, expected "
                f"({self.num_statistics},)"
            )
        return np.concatenate([sums, [float(len(first))]])

    def _host_ragged(self, first: Any, values: np.ndarray, row_splits: np.ndarray) -> np.ndarray:
        """:meth:`_host` of a ragged ``second``: its rows rebuilt from values and splits."""
        rows = [
            values[start:end] for start, end in zip(row_splits[:-1], row_splits[1:], strict=True)
        ]
        return self._host(first, rows)

    def update_state(self, first: Any, second: Any, sample_weight: Any = None) -> None:
        if sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__} takes no sample_weight: every pair counts once"
            )
        if _is_graph_tensor(first) or _is_graph_tensor(second):
            first = tf.convert_to_tensor(first, dtype=tf.string)
            if isinstance(second, tf.RaggedTensor):
                inputs, host = [first, second.flat_values, second.row_splits], self._host_ragged
            else:
                inputs, host = [first, tf.convert_to_tensor(second, dtype=tf.string)], self._host
            sums = tf.numpy_function(host, inputs, tf.float64, stateful=False)
            sums.set_shape([self.num_statistics + 1])
        else:
            sums = tf.constant(self._host(first, second))
        self.totals.assign_add(sums[: self.num_statistics])
        self.count.assign_add(sums[self.num_statistics])

    def host_result(self, function: Any, num_values: int) -> tf.Tensor:
        """``function(totals, count)`` (NumPy float64 in, ``[num_values]`` out) on the host, as a
        tensor of the metric's dtype; NaN while nothing has been counted."""

        def host(totals: np.ndarray, count: np.ndarray) -> np.ndarray:
            if count == 0:
                return np.full([num_values], np.nan)
            return np.asarray(function(totals, count), dtype=np.float64).reshape([num_values])

        if tf.executing_eagerly():
            values = tf.constant(host(self.totals.numpy(), self.count.numpy()))
        else:
            values = tf.numpy_function(host, [self.totals, self.count], tf.float64, stateful=False)
            values.set_shape([num_values])
        return tf.cast(values, self.dtype)
