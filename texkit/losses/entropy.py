"""Shannon entropy of the distributions given by logits, following Texar's ``entropy``.

The last dimension of the logits holds one distribution; its entropy ``-sum_v p[v] log p[v]``
(in nats) is computed in float32 from ``log_softmax`` (mixed-precision logits are cast first).
Classes with ``-inf`` logits (e.g. filtered out by top-k) have ``p = 0`` and add nothing, to the
value or to the gradients. The entropies are then reduced as Texar's flags say. Both functions
run eagerly, in ``tf.function`` and under ``jit_compile=True``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.losses.reduction import (
    _check_exclusive,
    _check_flag,
    _check_lengths,
    _check_lengths_batch,
    _float32,
    _mask_and_reduce,
    _reduce_leading,
    _resolve_rank,
    _to_batch_major,
)

__all__ = ["entropy_with_logits", "sequence_entropy_with_logits"]


def _entropy(logits: Any) -> Any:
    probs = tf.nn.softmax(logits, axis=-1)
    # Classes of probability 0 (-inf logits) add 0, in the value and in the gradients.
    log_probs = tf.where(probs > 0, tf.nn.log_softmax(logits, axis=-1), tf.zeros_like(probs))
    return -tf.reduce_sum(probs * log_probs, axis=-1)


def entropy_with_logits(
    logits: Any,
    rank: int | None = None,
    average_across_batch: bool = True,
    average_across_remaining: bool = False,
    sum_over_batch: bool = False,
    sum_over_remaining: bool = True,
) -> Any:
    """Entropy of each distribution in ``logits``, reduced over the batch and the rest.

    Args:
        logits: ``[batch, d_2, ..., d_{rank-1}, num_classes]`` unnormalized log-probabilities,
            any float dtype; computed in float32.
        rank: the rank of ``logits`` (at least 2); ``None`` takes it from the shape (given, it
            must agree).
        average_across_batch: mean over the batch (excludes ``sum_over_batch``).
        average_across_remaining: mean over ``d_2 ... d_{rank-1}`` (excludes
            ``sum_over_remaining``).
        sum_over_batch: sum over the batch.
        sum_over_remaining: sum over ``d_2 ... d_{rank-1}``.

    Returns:
        float32 entropies: ``[]`` when both the batch and the remaining dimensions are reduced,
        else the dimensions kept (``[batch]``, ``[d_2, ...]`` or ``[batch, d_2, ...]``).

    Example:
        >>> round(float(entropy_with_logits(tf.zeros([3, 4]))), 4)  # log(4): uniform over 4
        1.3863
    """
    _check_exclusive(average_across_batch, sum_over_batch, "batch")
    _check_exclusive(average_across_remaining, sum_over_remaining, "remaining")
    logits = _float32(logits, "logits")
    rank = _resolve_rank(logits, rank, "logits")
    if rank < 2:
        raise ValueError(
            f"logits must be [batch, ..., num_classes], got shape {tuple(logits.shape)}"
        )
    logits = tf.ensure_shape(logits, [None] * rank)
    return _reduce_leading(
        _entropy(logits),
        average_across_batch,
        sum_over_batch,
        average_across_remaining,
        sum_over_remaining,
    )


def sequence_entropy_with_logits(
    logits: Any,
    rank: int | None = None,
    sequence_length: Any = None,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    average_across_remaining: bool = False,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    sum_over_remaining: bool = True,
    time_major: bool = False,
) -> Any:
    """Entropy of each step's distribution, masked by the lengths and reduced.

    Args:
        logits: ``[batch, max_time, d_3, ..., d_{rank-1}, num_classes]`` unnormalized
            log-probabilities (``[max_time, batch, ...]`` if ``time_major``), any float dtype;
            computed in float32.
        rank: the rank of ``logits`` (at least 3); ``None`` takes it from the shape (given, it
            must agree).
        sequence_length: ``[batch]`` int valid lengths; the steps at or past them count 0.
            ``None``: every step counts.
        average_across_batch: mean over the batch (excludes ``sum_over_batch``).
        average_across_timesteps: per sequence, the sum over its valid steps divided by its
            length (excludes ``sum_over_timesteps``).
        average_across_remaining: mean over ``d_3 ... d_{rank-1}``.
        sum_over_batch: sum over the batch.
        sum_over_timesteps: sum over the valid steps.
        sum_over_remaining: sum over ``d_3 ... d_{rank-1}``.
        time_major: whether ``logits`` is time major.

    Returns:
        float32 entropies of the shape the flags leave (see :mod:`texkit.losses.reduction`):
        ``[]`` with the defaults (the summed entropy of a sequence, averaged over the batch).
    """
    _check_flag(time_major, "time_major")
    _check_exclusive(average_across_batch, sum_over_batch, "batch")
    _check_exclusive(average_across_timesteps, sum_over_timesteps, "timesteps")
    _check_exclusive(average_across_remaining, sum_over_remaining, "remaining")
    logits = _float32(logits, "logits")
    rank = _resolve_rank(logits, rank, "logits")
    if rank < 3:
        layout = "[max_time, batch" if time_major else "[batch, max_time"
        raise ValueError(
            f"logits must be {layout}, ..., num_classes], got shape {tuple(logits.shape)}"
        )
    logits = tf.ensure_shape(logits, [None] * rank)
    lengths = _check_lengths(sequence_length)
    _check_lengths_batch(lengths, logits.shape[1 if time_major else 0], "logits", logits.shape)
    return _mask_and_reduce(
        _to_batch_major(_entropy(logits), time_major),
        lengths,
        average_across_batch,
        average_across_timesteps,
        sum_over_batch,
        sum_over_timesteps,
        time_major,
        average_across_remaining=average_across_remaining,
        sum_over_remaining=sum_over_remaining,
    )
