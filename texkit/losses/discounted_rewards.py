"""Discounted rewards-to-go, following Texar's ``discount_reward``.

A step's discounted reward is the sum of the rewards from that step to the end of its sequence,
each weighted by ``discount`` to the power of its distance: ``R[t] = sum_{s >= t} discount**(s - t)
* r[s]``. A reward per sequence (rank 1) counts as earned at the sequence's last step, so step ``t``
of a sequence of length ``n`` gets ``discount**(n - 1 - t) * r``; a reward per step (rank 2) is
discounted backwards as it is. Steps at or past ``sequence_length`` are zero before normalizing.

The result is a tensor in every case (Texar-TF returned a NumPy array for Python inputs), and the
computation runs eagerly, in ``tf.function`` and under ``jit_compile=True``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.losses.reduction import _check_flag, _check_lengths

__all__ = ["discount_reward"]


def _check_discount(discount: Any) -> float:
    if isinstance(discount, bool) or not isinstance(discount, (int, float)):
        raise TypeError(f"discount must be a float in [0, 1], got {discount!r}")
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"discount must be in [0, 1], got {discount!r}")
    return float(discount)


def _result_dtype(reward: Any, dtype: Any) -> tf.DType:
    if dtype is None:
        return reward.dtype if reward.dtype in (tf.float32, tf.float64) else tf.float32
    dtype = tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"dtype must be a float dtype, got {dtype.name}")
    return dtype


def _reward_rank(reward: Any, tensor_rank: Any) -> int:
    """The reward's rank: its shape's if known (``tensor_rank`` 2 must then agree), else
    ``tensor_rank``."""
    if tensor_rank not in (1, 2) or isinstance(tensor_rank, bool):
        raise ValueError(f"tensor_rank must be 1 or 2, got {tensor_rank!r}")
    rank = reward.shape.rank
    if rank is None:
        return tensor_rank
    if rank not in (1, 2):
        raise ValueError(
            f"reward must be [batch] or [batch, max_time], got shape {tuple(reward.shape)}"
        )
    if tensor_rank == 2 and rank == 1:
        raise ValueError(f"tensor_rank is 2 but reward has shape {tuple(reward.shape)}")
    return rank


def _discounted_sums(reward: Any, discount: float) -> Any:
    """``R[b, t] = sum_{s >= t} discount**(s - t) * reward[b, s]`` of ``[batch, max_time]``."""
    if discount == 1.0:
        return tf.cumsum(reward, axis=1, reverse=True)
    steps = tf.range(tf.shape(reward)[1])
    distance = steps[:, None] - steps[None, :]  # [s, t]: s - t
    later = distance >= 0
    powers = tf.pow(
        tf.constant(discount, reward.dtype), tf.cast(tf.maximum(distance, 0), reward.dtype)
    )
    weights = tf.where(later, powers, tf.zeros_like(powers))
    return tf.linalg.matmul(reward, weights)


def _check_max_time(max_time: Any) -> None:
    if max_time is None:
        return
    if isinstance(max_time, bool) or not isinstance(max_time, int) or max_time < 1:
        raise ValueError(f"max_time must be a positive int or None, got {max_time!r}")


def discount_reward(
    reward: Any,
    sequence_length: Any = None,
    discount: float = 1.0,
    normalize: bool = False,
    dtype: Any = None,
    tensor_rank: int = 1,
    *,
    max_time: int | None = None,
) -> Any:
    """Discounted rewards-to-go of each step, optionally normalized.

    Args:
        reward: ``[batch]`` one reward per sequence, earned at its last step, or ``[batch,
            max_time]`` one reward per step; float or int values.
        sequence_length: ``[batch]`` int valid lengths. Required for a reward per sequence;
            optional for a reward per step (``None``: every step is valid).
        discount: the discount factor in ``[0, 1]``.
        normalize: if set, ``(R - mean) / (std + 1e-8)`` where the mean and the (population)
            standard deviation are over every ``batch x max_time`` entry, the zeros of padded
            steps included, as Texar-TF computes them. The padded entries then hold ``-mean /
            (std + 1e-8)``, not 0: mask them in the loss (the policy-gradient losses do).
        dtype: the float dtype of the result; ``None``: the reward's if it is float32 or float64,
            else float32.
        tensor_rank: the reward's rank (1 or 2) when its shape does not say it; a known shape
            decides (``tensor_rank=2`` must then agree).
        max_time: texkit's addition, for a reward per sequence: the number of steps of the
            result, e.g. the padded length of the samples whose loss it weighs (lengths may not
            exceed it). ``None``: the largest length, as in Texar.

    Returns:
        ``[batch, max_time]`` discounted rewards of dtype ``dtype``.

    Example:
        >>> r = discount_reward([2.0, 1.0], sequence_length=[3, 2], discount=0.1)
        >>> [[round(float(v), 4) for v in row] for row in r]
        [[0.02, 0.2, 2.0], [0.1, 1.0, 0.0]]
    """
    _check_flag(normalize, "normalize")
    discount = _check_discount(discount)
    _check_max_time(max_time)
    reward = tf.convert_to_tensor(reward)
    if not (reward.dtype.is_floating or reward.dtype.is_integer):
        raise TypeError(f"reward must have a float or int dtype, got {reward.dtype.name}")
    dtype = _result_dtype(reward, dtype)
    rank = _reward_rank(reward, tensor_rank)
    reward = tf.cast(tf.ensure_shape(reward, [None] * rank), dtype)
    lengths = _check_lengths(sequence_length)
    if lengths is not None and not tf.TensorShape(reward.shape[:1]).is_compatible_with(
        lengths.shape
    ):
        raise ValueError(
            f"sequence_length must be [batch] with batch {reward.shape[0]} (reward shape "
            f"{tuple(reward.shape)}), got shape {tuple(lengths.shape)}"
        )
    if rank == 1:
        if lengths is None:
            raise ValueError("sequence_length is required for a reward per sequence ([batch])")
        steps = tf.reduce_max(lengths) if max_time is None else max_time
        if max_time is not None:
            tf.debugging.assert_less_equal(
                lengths, max_time, message="sequence_length must not exceed max_time"
            )
        # The reward at each sequence's last step; a sequence of length 0 has none.
        last = tf.one_hot(lengths - 1, steps, dtype=dtype)
        reward = last * reward[:, None]
    elif max_time is not None:
        raise ValueError("max_time applies to a reward per sequence ([batch]) only")
    if lengths is not None:
        valid = tf.sequence_mask(lengths, tf.shape(reward)[1])
        reward = tf.where(valid, reward, tf.zeros_like(reward))
    discounted = _discounted_sums(reward, discount)
    if normalize:
        mean, variance = tf.nn.moments(discounted, axes=[0, 1], keepdims=True)
        discounted = (discounted - mean) / (tf.sqrt(variance) + 1e-8)
    return discounted
