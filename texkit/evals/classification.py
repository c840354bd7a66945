"""Matthews correlation and F1 of class predictions: over a corpus, and accumulated over a dataset.

:func:`matthews_corrcoef` and :func:`f1_score` score a whole corpus of class ids and return
Python floats, as scikit-learn's functions of the same names do (the GLUE scores of CoLA, MRPC
and QQP). :class:`MatthewsCorrelation` and :class:`CorpusF1Score` are Keras metrics that add
each batch to a confusion matrix (a ``[num_classes, num_classes]`` variable: rows are labels,
columns predictions) and compute the same score from it, so the result over a dataset equals the
function over the whole dataset however it is batched. They run eagerly, in ``tf.function``, with
``jit_compile=True``, under ``tf.distribute`` strategies (each replica counts its examples, and
the counts are summed when read), and in ``model.compile(metrics=...)``.

The F1 metric is named ``CorpusF1Score`` because ``keras.metrics.F1Score`` takes one-hot labels
and thresholded probabilities; this one takes class ids.

Undefined scores are 0.0, as scikit-learn's with ``zero_division=0``: the Matthews correlation
when all labels or all predictions are one class, and the F1 of a class that is never labelled
or predicted. ``average="macro"`` averages the classes that occur among the labels or the
predictions (scikit-learn's default, ``labels=None``); a class that never occurs counts in no
average.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from texkit.evals._corpus import corpus_pair, flat_batch

__all__ = ["CorpusF1Score", "MatthewsCorrelation", "f1_score", "matthews_corrcoef"]

_AVERAGES = ("binary", "macro", "micro", "weighted")


def _mcc_of(confusion: tf.Tensor) -> tf.Tensor:
    """The multiclass Matthews correlation of a confusion matrix (Gorodkin's R_K), 0 when
    undefined; computed on fractions of the total, so float32 counts do not overflow."""
    total = tf.reduce_sum(confusion)
    safe_total = tf.where(total > 0, total, tf.ones_like(total))
    true_share = tf.reduce_sum(confusion, axis=1) / safe_total
    pred_share = tf.reduce_sum(confusion, axis=0) / safe_total
    accuracy = tf.linalg.trace(confusion) / safe_total
    covariance = accuracy - tf.reduce_sum(true_share * pred_share)
    pred_variance = 1.0 - tf.reduce_sum(pred_share * pred_share)
    true_variance = 1.0 - tf.reduce_sum(true_share * true_share)
    denominator = pred_variance * true_variance
    defined = tf.logical_and(total > 0, denominator > 0)
    safe = tf.where(defined, denominator, tf.ones_like(denominator))
    return tf.where(defined, covariance / tf.sqrt(safe), tf.zeros_like(covariance))


def _f1_of(confusion: tf.Tensor, average: str, pos_label: int) -> tf.Tensor:
    """The F1 score of a confusion matrix: of class ``pos_label`` (``"binary"``), the mean over
    the classes that occur (``"macro"``), weighted by their label counts (``"weighted"``), or of
    the pooled counts (``"micro"``, which is the accuracy for single-label classes)."""
    zero = tf.zeros((), confusion.dtype)
    total = tf.reduce_sum(confusion)
    true_positives = tf.linalg.diag_part(confusion)
    label_counts = tf.reduce_sum(confusion, axis=1)
    # 2 tp + fp + fn: the labelled plus the predicted examples of each class.
    denominators = label_counts + tf.reduce_sum(confusion, axis=0)
    occurs = denominators > 0
    per_class = tf.where(
        occurs,
        2.0 * true_positives / tf.where(occurs, denominators, tf.ones_like(denominators)),
        tf.zeros_like(denominators),
    )
    if average == "binary":
        return per_class[pos_label]
    if average == "micro":
        return tf.where(total > 0, tf.linalg.trace(confusion) / tf.maximum(total, 1.0), zero)
    if average == "weighted":
        weighted = tf.reduce_sum(per_class * label_counts)
        return tf.where(total > 0, weighted / tf.maximum(total, 1.0), zero)
    count = tf.reduce_sum(tf.cast(occurs, confusion.dtype))
    return tf.where(count > 0, tf.reduce_sum(per_class) / tf.maximum(count, 1.0), zero)


def _check_num_classes(num_classes: Any) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes}")
    return int(num_classes)


def _check_average(average: Any, pos_label: Any, num_classes: int | None) -> None:
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {', '.join(_AVERAGES)}; got {average!r}")
    if isinstance(pos_label, bool) or not isinstance(pos_label, (int, np.integer)):
        raise ValueError(f"pos_label must be an int class id, got {pos_label!r}")
    if average == "binary" and num_classes is not None:
        if num_classes != 2:
            raise ValueError(
                f"average='binary' scores two classes, got num_classes={num_classes}; use "
                "average='macro', 'micro' or 'weighted' for more"
            )
        if pos_label not in (0, 1):
            raise ValueError(f"pos_label must be 0 or 1 with two classes, got {pos_label}")


def _corpus_confusion(
    labels: Any, predictions: Any, num_classes: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The float64 confusion matrix of a corpus and its classes: ``range(num_classes)``, or the
    sorted ids that occur in either argument when ``num_classes`` is None."""
    labels, predictions = corpus_pair(labels, predictions, ("labels", "predictions"), "int")
    if num_classes is None:
        classes = np.union1d(labels, predictions)
    else:
        classes = np.arange(num_classes)
        for name, values in (("labels", labels), ("predictions", predictions)):
            outside = values[(values < 0) | (values >= num_classes)]
            if outside.size:
                raise ValueError(
                    f"{name} must be class ids in [0, num_classes={num_classes}), got "
                    f"{outside[:5].tolist()}"
                )
    rows = np.searchsorted(classes, labels)
    columns = np.searchsorted(classes, predictions)
    confusion = np.zeros((classes.size, classes.size), np.float64)
    np.add.at(confusion, (rows, columns), 1.0)
    return confusion, classes


def matthews_corrcoef(labels: Any, predictions: Any) -> float:
    """The Matthews correlation coefficient of class predictions over a corpus (multiclass).

    As scikit-learn's ``matthews_corrcoef``: from -1 to 1, 1 when every prediction is right;
    0.0 when undefined (all labels, or all predictions, one class).

    Args:
        labels: the true class ids, one int per example (a list, NumPy array or tensor).
        predictions: the predicted class ids, as many as ``labels``.

    Returns:
        A Python float.

    Raises:
        ValueError: naming the argument, when it is empty, not 1-D, not integer, or when the
            two lengths differ.

    Example:
        >>> round(matthews_corrcoef([1, 1, 0, 0, 1], [1, 0, 0, 0, 1]), 4)
        0.6667
    """
    confusion, _ = _corpus_confusion(labels, predictions, None)
    return float(_mcc_of(tf.constant(confusion)))


def f1_score(
    labels: Any,
    predictions: Any,
    average: str = "binary",
    pos_label: int = 1,
    num_classes: int | None = None,
) -> float:
    """The F1 score of class predictions over a corpus, as scikit-learn's ``f1_score``.

    A class's F1 is ``2 tp / (2 tp + fp + fn)``; when that is 0 / 0 (the class is never
    labelled nor predicted) it is 0.0, scikit-learn's ``zero_division=0``.

    Args:
        labels: the true class ids, one int per example (a list, NumPy array or tensor).
        predictions: the predicted class ids, as many as ``labels``.
        average: ``"binary"``: the F1 of class ``pos_label``, for at most two classes;
            ``"macro"``: the mean F1 of the classes that occur among the labels or the
            predictions; ``"weighted"``: that mean weighted by each class's number of labels;
            ``"micro"``: the F1 of the pooled counts, which is the accuracy.
        pos_label: the positive class of ``average="binary"``.
        num_classes: if given, the ids must be in ``[0, num_classes)`` (and be 2 for
            ``"binary"``); the scores do not depend on it.

    Returns:
        A Python float from 0 to 1.

    Raises:
        ValueError: naming the argument, for empty, non-integer or out-of-range ids, lengths
            that differ, an unknown ``average``, or more than two classes with ``"binary"``.

    Example:
        >>> labels, predictions = [0, 1, 1, 2, 2, 2], [0, 1, 2, 2, 2, 1]
        >>> round(f1_score(labels, predictions, average="macro"), 4)  # (1 + 1/2 + 2/3) / 3
        0.7222
        >>> round(f1_score(labels, predictions, average="micro"), 4)  # the accuracy, 4 / 6
        0.6667
    """
    if num_classes is not None:
        num_classes = _check_num_classes(num_classes)
    _check_average(average, pos_label, num_classes)
    confusion, classes = _corpus_confusion(labels, predictions, num_classes)
    position = 0
    if average == "binary":
        if classes.size > 2:
            raise ValueError(
                f"average='binary' needs at most two classes, but labels and predictions hold "
                f"{classes.size} ({classes[:5].tolist()}...); use average='macro', 'micro' or "
                "'weighted'"
            )
        if pos_label not in classes:
            if classes.size == 2:
                raise ValueError(
                    f"pos_label={pos_label} is not one of the classes {classes.tolist()}"
                )
            return 0.0  # one class, not the positive one: no tp, fp or fn
        position = int(np.flatnonzero(classes == pos_label)[0])
    return float(_f1_of(tf.constant(confusion), average, position))


class _ConfusionMetric(keras.metrics.Metric):
    """A Keras metric over a ``[num_classes, num_classes]`` confusion matrix variable."""

    def __init__(self, num_classes: int, name: str, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = _check_num_classes(num_classes)
        self.confusion_matrix = self.add_variable(
            shape=(self.num_classes, self.num_classes),
            initializer="zeros",
            dtype=self.dtype,
            name="confusion_matrix",
        )

    def update_state(self, labels: Any, predictions: Any, sample_weight: Any = None) -> None:
        """Adds a batch: ``labels`` ``[batch]`` (or ``[batch, 1]``) int class ids;
        ``predictions`` the predicted ids, or float scores ``[batch, num_classes]`` whose argmax
        is taken; ``sample_weight`` an optional weight per example (1 each by default).

        Ids outside ``[0, num_classes)`` raise ``InvalidArgumentError`` before anything is
        counted; under ``jit_compile=True``, where XLA cannot raise, they are not counted.
        """
        labels = tf.convert_to_tensor(labels)
        predictions = tf.convert_to_tensor(predictions)
        if predictions.dtype.is_floating:
            rank = predictions.shape.rank
            if rank is None or rank < 2 or predictions.shape[-1] != self.num_classes:
                raise ValueError(
                    "float predictions must be scores [batch, num_classes="
                    f"{self.num_classes}], got shape {tuple(predictions.shape)}; pass class ids "
                    "as ints"
                )
            predictions = tf.argmax(predictions, axis=-1)
        for name, values in (("labels", labels), ("predictions", predictions)):
            if not (values.dtype.is_integer or values.dtype == tf.bool):
                raise ValueError(f"{name} must be int class ids, got dtype {values.dtype.name}")
        labels, predictions, checks = flat_batch(
            tf.cast(labels, tf.int64), tf.cast(predictions, tf.int64)
        )
        weights = tf.ones_like(labels, dtype=self.dtype)
        if sample_weight is not None:
            sample_weight = tf.reshape(tf.cast(sample_weight, self.dtype), [-1])
            checks.append(
                tf.debugging.assert_equal(
                    tf.size(sample_weight),
                    tf.size(labels),
                    message="sample_weight must have one weight per example",
                )
            )
            weights = sample_weight
        valid = tf.ones_like(labels, dtype=tf.bool)
        for name, values in (("labels", labels), ("predictions", predictions)):
            inside = tf.logical_and(values >= 0, values < self.num_classes)
            message = f"{name} must be class ids in [0, num_classes={self.num_classes})"
            checks.append(tf.debugging.Assert(tf.reduce_all(inside), [message, values]))
            valid = tf.logical_and(valid, inside)
        with tf.control_dependencies(checks):
            cells = labels * self.num_classes + predictions
            cells = tf.where(valid, cells, tf.zeros_like(cells))
            counts = tf.math.unsorted_segment_sum(
                tf.where(valid, weights, tf.zeros_like(weights)), cells, self.num_classes**2
            )
            self.confusion_matrix.assign_add(
                tf.reshape(counts, (self.num_classes, self.num_classes))
            )

    def get_config(self) -> dict:
        return {**super().get_config(), "num_classes": self.num_classes}


@keras.saving.register_keras_serializable(package="texkit")
class MatthewsCorrelation(_ConfusionMetric):
    """The Matthews correlation coefficient over a dataset, from an accumulated confusion matrix.

    Equal to :func:`matthews_corrcoef` over all the batches together; 0.0 before anything is
    counted and whenever undefined.

    Args:
        num_classes: the number of classes (ids in ``[0, num_classes)``), 2 or more.
        name: the metric's name (default ``"matthews_correlation"``).
        dtype: of the confusion matrix and the result (float32 by default, which counts exactly
            up to 2**24 examples per cell).

    Call ``update_state(labels, predictions, sample_weight=None)`` per batch (see
    ``update_state``), then ``result()``; ``reset_state()`` starts over.

    Example:
        >>> metric = MatthewsCorrelation(num_classes=2)
        >>> metric.update_state([1, 1, 0], [1, 0, 0])
        >>> metric.update_state([0, 1], [0, 1])
        >>> round(float(metric.result()), 4)  # matthews_corrcoef([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
        0.6667
    """

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None):
        super().__init__(num_classes, name or "matthews_correlation", dtype)

    def result(self) -> tf.Tensor:
        return _mcc_of(tf.convert_to_tensor(self.confusion_matrix))


@keras.saving.register_keras_serializable(package="texkit")
class CorpusF1Score(_ConfusionMetric):
    """The F1 score over a dataset, from an accumulated confusion matrix of class ids.

    Equal to :func:`f1_score` over all the batches together (with the same ``average`` and
    ``pos_label``); 0.0 before anything is counted.

    Args:
        num_classes: the number of classes (ids in ``[0, num_classes)``): 2 for
            ``average="binary"``.
        average: ``"binary"`` (the F1 of ``pos_label``), ``"macro"``, ``"weighted"`` or
            ``"micro"``, as in :func:`f1_score`.
        pos_label: the positive class of ``"binary"``, 0 or 1.
        name: the metric's name (default ``"f1_score"``).
        dtype: of the confusion matrix and the result (float32 by default).

    Call ``update_state(labels, predictions, sample_weight=None)`` per batch (see
    ``update_state``), then ``result()``; ``reset_state()`` starts over.

    Example:
        >>> metric = CorpusF1Score(num_classes=3, average="macro")
        >>> metric.update_state([0, 1, 1], [0, 1, 2])
        >>> metric.update_state([2, 2, 2], [2, 2, 1])
        >>> round(float(metric.result()), 4)  # f1_score over the six examples
        0.7222
    """

    def __init__(
        self,
        num_classes: int,
        average: str = "binary",
        pos_label: int = 1,
        name: str | None = None,
        dtype: Any = None,
    ):
        _check_average(average, pos_label, _check_num_classes(num_classes))
        super().__init__(num_classes, name or "f1_score", dtype)
        self.average = average
        self.pos_label = int(pos_label)

    def result(self) -> tf.Tensor:
        confusion = tf.convert_to_tensor(self.confusion_matrix)
        return _f1_of(confusion, self.average, self.pos_label)

    def get_config(self) -> dict:
        return {**super().get_config(), "average": self.average, "pos_label": self.pos_label}
