"""Checks shared by the corpus-level metrics: a corpus argument as a 1-D NumPy array, and the
batch arguments of their Keras metrics as flat tensors of one length."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf


def corpus_array(values: Any, name: str, kind: str) -> np.ndarray:
    """``values`` (a list, NumPy array or eager tensor) as a non-empty 1-D array.

    ``kind`` is ``"int"`` (class ids: integers or bools, returned as int64) or ``"float"``
    (finite numbers, returned as float64). The errors name the argument ``name``.
    """
    try:
        array = np.asarray(values)
    except ValueError as error:  # ragged nested lists
        raise ValueError(f"{name} must be a 1-D sequence of numbers: {error}") from None
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D (one value per example), got shape {tuple(array.shape)}"
        )
    if array.size == 0:
        raise ValueError(f"{name} is empty: a corpus metric needs at least one example")
    if kind == "int":
        if array.dtype.kind not in "iub":
            raise ValueError(f"{name} must be integer class ids, got dtype {array.dtype.name}")
        return array.astype(np.int64)
    if array.dtype.kind not in "iubf":
        raise ValueError(f"{name} must be numbers, got dtype {array.dtype.name}")
    array = array.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(
            f"{name} holds NaN or infinite values (at positions {bad[:5].tolist()}"
            f"{', ...' if bad.size > 5 else ''})"
        )
    return array


def corpus_pair(
    first: Any, second: Any, names: tuple[str, str], kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`corpus_array` of both arguments, which must have one value per example each."""
    first = corpus_array(first, names[0], kind)
    second = corpus_array(second, names[1], kind)
    if first.shape != second.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same length, got {first.size} and "
            f"{second.size}"
        )
    return first, second


def flat_batch(labels: Any, predictions: Any) -> tuple[tf.Tensor, tf.Tensor, list[Any]]:
    """Both batch arguments flattened to 1-D (``[batch]`` or ``[batch, 1]`` in), and the checks
    (ops, empty when the shapes are static) that their lengths agree."""
    labels = tf.reshape(labels, [-1])
    predictions = tf.reshape(predictions, [-1])
    if labels.shape[0] is not None and predictions.shape[0] is not None:
        if labels.shape[0] != predictions.shape[0]:
            raise ValueError(
                "labels and predictions must have one value per example each, got "
                f"{labels.shape[0]} labels and {predictions.shape[0]} predictions"
            )
        return labels, predictions, []
    check = tf.debugging.assert_equal(
        tf.size(labels),
        tf.size(predictions),
        message="labels and predictions must have one value per example each",
    )
    return labels, predictions, [check]


def no_sample_weight(metric: Any, sample_weight: Any) -> None:
    """Refuses a ``sample_weight`` (the correlation metrics weigh every pair the same)."""
    if sample_weight is not None:
        raise ValueError(
            f"{type(metric).__name__} does not take sample_weight: every pair counts once; "
            "pass it in metrics=..., not weighted_metrics=..."
        )
