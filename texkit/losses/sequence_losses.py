"""Sequence losses with masking and label smoothing, following Texar's ``mle_losses``.

Each function computes a loss per time step, zeroes the steps at or past ``sequence_length``
(``None``: nothing is masked) and reduces the time and batch dimensions as the flags say (the
rules and the table of result shapes are in :mod:`texkit.losses.reduction`).

The result is float32 whatever the dtype of the logits: bfloat16 or float16 logits (mixed
precision) are cast before the softmax. Every function runs eagerly, in ``tf.function`` and under
``jit_compile=True``. The per-step losses of padded steps are selected away (not multiplied by 0),
so any finite logits there leave the value and the gradients unchanged; labels there need not be
valid ids.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.losses.reduction import (
    _check_exclusive,
    _check_lengths,
    _check_rank,
    _mask_and_reduce,
    _to_batch_major,
)

__all__ = [
    "sequence_sigmoid_cross_entropy",
    "sequence_softmax_cross_entropy",
    "sequence_sparse_softmax_cross_entropy",
]


def _check_label_smoothing(label_smoothing: float) -> float:
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)):
        raise TypeError(f"label_smoothing must be a float in [0, 1), got {label_smoothing!r}")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
    return float(label_smoothing)


def _check_batch_time(labels: Any, logits: Any, time_major: bool, sequence_length: Any) -> None:
    """Labels and logits must agree on [batch, time], and the lengths on batch, where known."""
    if not labels.shape[:2].is_compatible_with(logits.shape[:2]):
        raise ValueError(
            f"labels and logits disagree on {'[time, batch]' if time_major else '[batch, time]'}:"
            f" labels shape {tuple(labels.shape)}, logits shape {tuple(logits.shape)}"
        )
    if sequence_length is not None:
        batch = logits.shape[1 if time_major else 0]
        if not tf.TensorShape([batch]).is_compatible_with(sequence_length.shape):
            raise ValueError(
                f"sequence_length must be [batch] with batch {batch} (logits shape "
                f"{tuple(logits.shape)}), got shape {tuple(sequence_length.shape)}"
            )


def _float_batch_major(
    labels: Any, logits: Any, sequence_length: Any, time_major: bool, stop_gradient: bool
) -> tuple[Any, Any, Any]:
    """Soft labels and logits checked against the lengths, in float32 and batch-major."""
    sequence_length = _check_lengths(sequence_length)
    _check_batch_time(labels, logits, time_major, sequence_length)
    labels = _to_batch_major(tf.cast(labels, tf.float32), time_major)
    logits = _to_batch_major(tf.cast(logits, tf.float32), time_major)
    if stop_gradient:
        labels = tf.stop_gradient(labels)
    return labels, logits, sequence_length


def _smoothed(losses: Any, logits: Any, eps: float) -> Any:
    """Cross-entropies against targets smoothed by ``eps`` (see :func:`_smoothing_term`)."""
    if not eps:
        return losses
    return (1.0 - eps) * losses + eps * _smoothing_term(logits)


def _smoothing_term(logits: Any) -> Any:
    """The mean over classes of ``-log softmax(logits)``: ``logsumexp(z) - mean(z)``."""
    return tf.reduce_logsumexp(logits, axis=-1) - tf.reduce_mean(logits, axis=-1)


def sequence_sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    sequence_length: Any,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    time_major: bool = False,
    label_smoothing: float = 0.0,
) -> Any:
    """Softmax cross entropy of each step against a label id, masked and reduced.

    Label smoothing (Szegedy et al., 2016) replaces the one-hot target by
    ``(1 - label_smoothing) * one_hot(label) + label_smoothing / vocab_size`` on every class, the
    true one included: the convention of ``keras.losses.CategoricalCrossentropy(label_smoothing=)``.
    The loss of a step is then ``(1 - eps) * -log p[label] + eps * mean_v(-log p[v])``.

    Args:
        labels: ``[batch, max_time]`` int ids (``[max_time, batch]`` if ``time_major``). Ids at
            padded steps are ignored and may be anything.
        logits: ``[batch, max_time, vocab_size]`` unnormalized log-probabilities (``[max_time,
            batch, vocab_size]`` if ``time_major``), any float dtype; computed in float32.
        sequence_length: ``[batch]`` int valid lengths, or ``None`` for no masking.
        average_across_batch: mean over the batch (excludes ``sum_over_batch``).
        average_across_timesteps: per sequence, the sum over its valid steps divided by its
            length (excludes ``sum_over_timesteps``).
        sum_over_batch: sum over the batch.
        sum_over_timesteps: sum over the valid steps.
        time_major: whether the inputs are time major.
        label_smoothing: ``eps`` in ``[0, 1)``; 0 gives the plain cross entropy.

    Returns:
        float32 loss of shape ``[]``, ``[batch]``, ``[max_time]`` or ``[batch, max_time]``
        depending on the flags (see the table in :mod:`texkit.losses.reduction`).

    Example:
        A language model's loss: each step predicts the next token. With uniform logits over 10
        ids every valid step costs ``log(10)``, and padded steps nothing:

        >>> batch = {"text_ids": tf.constant([[1, 7, 8, 9, 2], [1, 6, 2, 0, 0]]),
        ...          "length": tf.constant([5, 3])}
        >>> logits = tf.zeros([2, 4, 10])  # [batch, max_time - 1, vocab_size]
        >>> loss = sequence_sparse_softmax_cross_entropy(
        ...     labels=batch["text_ids"][:, 1:], logits=logits,
        ...     sequence_length=batch["length"] - 1)
        >>> round(float(loss), 4)  # (4 + 2) steps * log(10) / 2 sequences
        6.9078
    """
    _check_exclusive(average_across_batch, sum_over_batch, "batch")
    _check_exclusive(average_across_timesteps, sum_over_timesteps, "timesteps")
    eps = _check_label_smoothing(label_smoothing)
    layout = "[max_time, batch]" if time_major else "[batch, max_time]"
    labels = tf.convert_to_tensor(labels)
    logits = tf.convert_to_tensor(logits)
    _check_rank(labels, "labels", (2,), f"{layout} ids")
    _check_rank(logits, "logits", (3,), f"{layout[:-1]}, vocab_size]")
    if not labels.dtype.is_integer:
        raise TypeError(f"labels must be int ids, got dtype {labels.dtype.name}")
    sequence_length = _check_lengths(sequence_length)
    _check_batch_time(labels, logits, time_major, sequence_length)
    labels = _to_batch_major(tf.cast(labels, tf.int32), time_major)
    logits = _to_batch_major(tf.cast(logits, tf.float32), time_major)
    if sequence_length is not None:
        # Padded labels may be out of range, which the kernel refuses on CPU: use id 0 there.
        valid = tf.sequence_mask(sequence_length, tf.shape(labels)[1])
        labels = tf.where(valid, labels, tf.zeros_like(labels))
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return _mask_and_reduce(
        _smoothed(losses, logits, eps),
        sequence_length,
        average_across_batch,
        average_across_timesteps,
        sum_over_batch,
        sum_over_timesteps,
        time_major,
    )


def sequence_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    sequence_length: Any,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    time_major: bool = False,
    label_smoothing: float = 0.0,
    stop_gradient_to_label: bool = False,
) -> Any:
    """Softmax cross entropy of each step against a target distribution, masked and reduced.

    With label smoothing the target becomes ``(1 - eps) * labels + eps / vocab_size`` on every
    class, as in ``keras.losses.CategoricalCrossentropy(label_smoothing=eps)``.

    Args:
        labels: ``[batch, max_time, vocab_size]`` target distributions (each row sums to 1;
            ``[max_time, batch, vocab_size]`` if ``time_major``); computed in float32.
        logits: unnormalized log-probabilities of the same shape, any float dtype.
        sequence_length, average_across_batch, average_across_timesteps, sum_over_batch:
            as in :func:`sequence_sparse_softmax_cross_entropy`.
        sum_over_timesteps, time_major, label_smoothing: as in
            :func:`sequence_sparse_softmax_cross_entropy`.
        stop_gradient_to_label: if set, no gradient flows to ``labels``.

    Returns:
        float32 loss of shape ``[]``, ``[batch]``, ``[max_time]`` or ``[batch, max_time]``
        depending on the flags (see the table in :mod:`texkit.losses.reduction`).
    """
    _check_exclusive(average_across_batch, sum_over_batch, "batch")
    _check_exclusive(average_across_timesteps, sum_over_timesteps, "timesteps")
    eps = _check_label_smoothing(label_smoothing)
    layout = "[max_time, batch, vocab_size]" if time_major else "[batch, max_time, vocab_size]"
    labels = tf.convert_to_tensor(labels)
    logits = tf.convert_to_tensor(logits)
    _check_rank(labels, "labels", (3,), f"{layout} probabilities")
    _check_rank(logits, "logits", (3,), layout)
    if not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(
            f"labels and logits must have the same shape {layout}: labels shape "
            f"{tuple(labels.shape)}, logits shape {tuple(logits.shape)}"
        )
    labels, logits, sequence_length = _float_batch_major(
        labels, logits, sequence_length, time_major, stop_gradient_to_label
    )
    losses = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return _mask_and_reduce(
        _smoothed(losses, logits, eps),
        sequence_length,
        average_across_batch,
        average_across_timesteps,
        sum_over_batch,
        sum_over_timesteps,
        time_major,
    )


def sequence_sigmoid_cross_entropy(
    labels: Any,
    logits: Any,
    sequence_length: Any,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    average_across_classes: bool = True,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    sum_over_classes: bool = False,
    time_major: bool = False,
    stop_gradient_to_label: bool = False,
) -> Any:
    """Sigmoid cross entropy of each step (and class), masked and reduced.

    The class dimension, if any, is reduced first (``average_across_classes`` or
    ``sum_over_classes``, exclusive; neither keeps it as the last axis of the result), then time
    and batch as in :func:`sequence_sparse_softmax_cross_entropy`.

    Args:
        labels: ``[batch, max_time]`` or ``[batch, max_time, num_classes]`` targets in ``[0, 1]``
            (time first if ``time_major``); computed in float32.
        logits: unnormalized logits of the same shape, any float dtype.
        sequence_length: ``[batch]`` int valid lengths, or ``None`` for no masking.
        average_across_classes: mean over the class dimension (ignored without one).
        sum_over_classes: sum over the class dimension (ignored without one).
        stop_gradient_to_label: if set, no gradient flows to ``labels``.
        average_across_batch, average_across_timesteps, sum_over_batch, sum_over_timesteps:
            as in :func:`sequence_sparse_softmax_cross_entropy`.
        time_major: as in :func:`sequence_sparse_softmax_cross_entropy`.

    Returns:
        float32 loss: the shape of the table in :mod:`texkit.losses.reduction`, followed by
        ``[num_classes]`` when the inputs have a class dimension that is not reduced.
    """
    _check_exclusive(average_across_batch, sum_over_batch, "batch")
    _check_exclusive(average_across_timesteps, sum_over_timesteps, "timesteps")
    _check_exclusive(average_across_classes, sum_over_classes, "classes")
    layout = "[max_time, batch" if time_major else "[batch, max_time"
    labels = tf.convert_to_tensor(labels)
    logits = tf.convert_to_tensor(logits)
    _check_rank(logits, "logits", (2, 3), f"{layout}] or {layout}, num_classes]")
    if not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(
            f"labels must have the shape of logits: labels shape {tuple(labels.shape)}, "
            f"logits shape {tuple(logits.shape)}"
        )
    labels, logits, sequence_length = _float_batch_major(
        labels, logits, sequence_length, time_major, stop_gradient_to_label
    )
    losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    if losses.shape.rank == 3:
        if average_across_classes:
            losses = tf.reduce_mean(losses, axis=-1)
        elif sum_over_classes:
            losses = tf.reduce_sum(losses, axis=-1)
    return _mask_and_reduce(
        losses,
        sequence_length,
        average_across_batch,
        average_across_timesteps,
        sum_over_batch,
        sum_over_timesteps,
        time_major,
    )
