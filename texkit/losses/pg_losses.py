"""Policy-gradient losses, following Texar's ``pg_losses``: ``reduce(-log p(action) * advantage)``.

Minimizing the loss raises the log-probability of actions with a positive advantage and lowers it
for a negative one (REINFORCE). The advantages are held constant (``tf.stop_gradient``): the
gradient reaches the policy only.

The inputs are batched (``batched=True``: ``[batch, max_time, ...]``, or ``[max_time, batch, ...]``
if ``time_major``), masked by ``sequence_length`` and reduced as in :mod:`texkit.losses.reduction`;
or a single sequence (``batched=False``, Texar's default: ``[max_time, ...]``), whose remaining
dimensions and then time are reduced, the batch flags being ignored. The result is float32 whatever
the input dtype (mixed-precision logits are cast before the softmax). Both functions run eagerly, in
``tf.function`` and under ``jit_compile=True``.
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

__all__ = ["pg_loss_with_log_probs", "pg_loss_with_logits"]


def _check_flags(
    batched: Any,
    time_major: Any,
    sequence_length: Any,
    flags: dict[str, Any],
) -> None:
    _check_flag(batched, "batched")
    _check_flag(time_major, "time_major")
    for what in ("batch", "timesteps", "remaining"):
        _check_exclusive(flags[f"average_across_{what}"], flags[f"sum_over_{what}"], what)
    if sequence_length is not None and not batched:
        raise ValueError(
            "sequence_length masks batched inputs only: pass batched=True (got batched=False)"
        )


def _layout(batched: bool, time_major: bool) -> str:
    if not batched:
        return "[max_time, ...]"
    return "[max_time, batch, ...]" if time_major else "[batch, max_time, ...]"


def _check_min_rank(value: Any, rank: int, batched: bool, time_major: bool, name: str) -> None:
    if rank < (2 if batched else 1):
        raise ValueError(
            f"{name} must be {_layout(batched, time_major)} (batched={batched}), got shape "
            f"{tuple(value.shape)}"
        )


def _checked_advantages(advantages: Any, log_probs: Any, batched: bool, time_major: bool) -> Any:
    """float32 advantages of the shape of ``log_probs`` (checked when run if not known here),
    under ``stop_gradient``."""
    advantages = tf.stop_gradient(_float32(advantages, "advantages", integers=True))
    if advantages.shape.rank is None:
        advantages = tf.ensure_shape(advantages, [None] * log_probs.shape.rank)
    if not advantages.shape.is_compatible_with(log_probs.shape):
        raise ValueError(
            f"advantages must have the shape of log_probs {_layout(batched, time_major)}: "
            f"advantages shape {tuple(advantages.shape)}, log_probs shape "
            f"{tuple(log_probs.shape)}"
        )
    if not log_probs.shape.is_fully_defined() or not advantages.shape.is_fully_defined():
        same = tf.debugging.assert_equal(
            tf.shape(advantages),
            tf.shape(log_probs),
            message="advantages must have the shape of log_probs",
        )
        with tf.control_dependencies([same]):
            advantages = tf.identity(advantages)
    return advantages


def pg_loss_with_logits(
    actions: Any,
    logits: Any,
    advantages: Any,
    rank: int | None = None,
    batched: bool = False,
    sequence_length: Any = None,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    average_across_remaining: bool = False,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    sum_over_remaining: bool = True,
    time_major: bool = False,
) -> Any:
    """Policy-gradient loss of discrete actions drawn from ``softmax(logits)``.

    The loss of each entry is ``-log softmax(logits)[action] * advantage``, then masked and
    reduced as :func:`pg_loss_with_log_probs` does.

    Args:
        actions: ``[batch, max_time, d_3, ..., d_rank]`` int ids when ``batched`` (time first if
            ``time_major``), ``[max_time, d_2, ..., d_rank]`` otherwise. Ids at masked steps are
            ignored and may be anything.
        logits: the actions' shape followed by ``[num_actions]``: unnormalized log-probabilities,
            any float dtype; computed in float32.
        advantages: float (or int) values of the actions' shape; no gradient flows to them.
        rank: the rank of ``actions``; ``None`` takes it from the shape (given, it must agree).
        batched: whether the first two dimensions are batch and time (else time only).
        sequence_length: ``[batch]`` int valid lengths (``batched`` only), or ``None``.
        average_across_batch: mean over the batch (excludes ``sum_over_batch``; batched only).
        average_across_timesteps: per sequence, the sum over its valid steps divided by its
            length (excludes ``sum_over_timesteps``).
        average_across_remaining: mean over the dimensions after batch and time.
        sum_over_batch: sum over the batch (batched only).
        sum_over_timesteps: sum over the valid steps.
        sum_over_remaining: sum over the dimensions after batch and time.
        time_major: whether batched inputs are ``[max_time, batch, ...]``.

    Returns:
        The float32 loss to minimize; its shape is what the flags leave (see
        :mod:`texkit.losses.reduction`): ``[]`` with the defaults.

    Example:
        REINFORCE on sampled sequences, one advantage per sequence spread over its steps:

        >>> logits = tf.zeros([2, 3, 5])  # [batch, max_time, vocab_size]
        >>> actions = tf.constant([[1, 2, 3], [4, 0, 0]])
        >>> advantages = tf.constant([[1.0] * 3, [-1.0] * 3])
        >>> loss = pg_loss_with_logits(actions, logits, advantages, batched=True,
        ...                            sequence_length=tf.constant([3, 1]))
        >>> round(float(loss), 4)  # (3 - 1) steps * log(5) / 2 sequences
        1.6094
    """
    flags = {k: v for k, v in locals().items() if k.startswith(("average_across", "sum_over"))}
    _check_flags(batched, time_major, sequence_length, flags)
    actions = tf.convert_to_tensor(actions)
    if not actions.dtype.is_integer:
        raise TypeError(f"actions must be int ids, got dtype {actions.dtype.name}")
    rank = _resolve_rank(actions, rank, "actions")
    _check_min_rank(actions, rank, batched, time_major, "actions")
    actions = tf.ensure_shape(actions, [None] * rank)
    logits = _float32(logits, "logits")
    if logits.shape.rank != rank + 1 or not logits.shape[:-1].is_compatible_with(actions.shape):
        raise ValueError(
            f"logits must have the shape of actions followed by [num_actions]: actions shape "
            f"{tuple(actions.shape)}, logits shape {tuple(logits.shape)}"
        )
    actions = tf.cast(actions, tf.int32)
    lengths = _check_lengths(sequence_length)
    _check_lengths_batch(lengths, actions.shape[1 if time_major else 0], "actions", actions.shape)
    if lengths is not None:
        # Masked ids may be out of range, which the kernel refuses on CPU: use id 0 there.
        valid = tf.sequence_mask(lengths, tf.shape(actions)[0 if time_major else 1])
        valid = _to_batch_major(valid, time_major)[(Ellipsis,) + (None,) * (rank - 2)]
        actions = tf.where(valid, actions, tf.zeros_like(actions))
    log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=logits)
    return pg_loss_with_log_probs(
        log_probs, advantages, rank, batched, lengths, time_major=time_major, **flags
    )


def pg_loss_with_log_probs(
    log_probs: Any,
    advantages: Any,
    rank: int | None = None,
    batched: bool = False,
    sequence_length: Any = None,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    average_across_remaining: bool = False,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    sum_over_remaining: bool = True,
    time_major: bool = False,
) -> Any:
    """Policy-gradient loss from the log-probabilities of the actions taken.

    The loss of each entry is ``-log_prob * advantage``; batched losses are masked and reduced as
    :mod:`texkit.losses.reduction` says, a single sequence's remaining dimensions and then its
    time dimension are reduced (the batch flags do not apply).

    Args:
        log_probs: ``[batch, max_time, d_3, ..., d_rank]`` log-probabilities when ``batched``
            (time first if ``time_major``), ``[max_time, d_2, ..., d_rank]`` otherwise; any float
            dtype, computed in float32.
        advantages: float (or int) values of the same shape; no gradient flows to them. One
            advantage per sequence is spread over its steps first, e.g.
            ``tf.broadcast_to(advantages[:, None], tf.shape(log_probs))``.
        rank: the rank of ``log_probs``; ``None`` takes it from the shape (given, it must agree).
        batched, sequence_length, average_across_batch, average_across_timesteps:
            as in :func:`pg_loss_with_logits`.
        average_across_remaining, sum_over_batch, sum_over_timesteps: as in
            :func:`pg_loss_with_logits`.
        sum_over_remaining, time_major: as in :func:`pg_loss_with_logits`.

    Returns:
        The float32 loss to minimize, of the shape the flags leave: ``[]`` with the defaults.
    """
    flags = {k: v for k, v in locals().items() if k.startswith(("average_across", "sum_over"))}
    _check_flags(batched, time_major, sequence_length, flags)
    log_probs = _float32(log_probs, "log_probs")
    rank = _resolve_rank(log_probs, rank, "log_probs")
    _check_min_rank(log_probs, rank, batched, time_major, "log_probs")
    log_probs = tf.ensure_shape(log_probs, [None] * rank)
    advantages = _checked_advantages(advantages, log_probs, batched, time_major)
    losses = -log_probs * advantages
    if not batched:
        return _reduce_leading(
            losses,
            average_across_timesteps,
            sum_over_timesteps,
            average_across_remaining,
            sum_over_remaining,
        )
    lengths = _check_lengths(sequence_length)
    _check_lengths_batch(
        lengths, log_probs.shape[1 if time_major else 0], "log_probs", log_probs.shape
    )
    return _mask_and_reduce(
        _to_batch_major(losses, time_major),
        lengths,
        average_across_batch,
        average_across_timesteps,
        sum_over_batch,
        sum_over_timesteps,
        time_major,
        average_across_remaining=average_across_remaining,
        sum_over_remaining=sum_over_remaining,
    )
