"""Masking and reduction of per-step values over batch, time and the remaining dimensions.

Every loss of :mod:`texkit.losses` computes a value per step (per entry for the losses with more
dimensions), zeroes the steps at or past ``sequence_length`` (``None``: nothing is masked) and
reduces as Texar's flags say:

* remaining dimensions (those after batch and time), first: ``sum_over_remaining`` sums them,
  ``average_across_remaining`` takes their mean; neither keeps them.
* time: ``sum_over_timesteps`` sums the valid steps of each sequence; ``average_across_timesteps``
  divides that sum by the sequence's length (by ``max_time`` when ``sequence_length`` is ``None``).
  A sequence of length 0 averages to 0 (Texar divides 0 by 0).
* batch, after time: ``sum_over_batch`` sums over the batch; ``average_across_batch`` takes the
  mean over the batch, every sequence counting once, whatever its length.

``average_across_X`` and ``sum_over_X`` exclude each other (an error names both). A dimension
that neither flag reduces is kept, so the rank of the result depends on the flags, as in Texar.
Without remaining dimensions, or with them reduced:

=========================  ===========================  ======================================
time reduced (avg or sum)  batch reduced (avg or sum)   result shape
=========================  ===========================  ======================================
yes                        yes                          ``[]`` (the defaults: sum over time,
                                                        mean over the batch)
yes                        no                           ``[batch]``
no                         yes                          ``[max_time]``
no                         no                           ``[batch, max_time]`` (``[max_time,
                                                        batch]`` when ``time_major``)
=========================  ===========================  ======================================

Kept remaining dimensions follow, in their order. Masking selects the padded steps away (it does
not multiply them by 0), so any finite value there leaves the result and the gradients unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["mask_and_reduce"]


def _check_flag(value: Any, name: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def _check_exclusive(average: Any, total: Any, what: str) -> None:
    """Both flags of one dimension are booleans, and at most one is set."""
    _check_flag(average, f"average_across_{what}")
    _check_flag(total, f"sum_over_{what}")
    if average and total:
        raise ValueError(
            f"only one of average_across_{what} and sum_over_{what} can be set, got both True"
        )


def _check_rank(value: Any, name: str, ranks: tuple[int, ...], layout: str) -> None:
    rank = value.shape.rank
    if rank is None or rank not in ranks:
        raise ValueError(f"{name} must be {layout}, got shape {tuple(value.shape)}")


def _check_lengths(sequence_length: Any) -> Any:
    """``None``, or ``[batch]`` int lengths as int32."""
    if sequence_length is None:
        return None
    sequence_length = tf.convert_to_tensor(sequence_length)
    if sequence_length.shape.rank != 1:
        raise ValueError(
            f"sequence_length must be [batch], got shape {tuple(sequence_length.shape)}"
        )
    if not sequence_length.dtype.is_integer:
        raise TypeError(
            f"sequence_length must be int lengths, got dtype {sequence_length.dtype.name}"
        )
    return tf.cast(sequence_length, tf.int32)


def _check_lengths_batch(sequence_length: Any, batch: Any, name: str, shape: Any) -> None:
    """The lengths' batch agrees with ``batch`` (the batch size of ``name``), where known."""
    if sequence_length is None:
        return
    if not tf.TensorShape([batch]).is_compatible_with(sequence_length.shape):
        raise ValueError(
            f"sequence_length must be [batch] with batch {batch} ({name} shape "
            f"{tuple(shape)}), got shape {tuple(sequence_length.shape)}"
        )


def _float32(value: Any, name: str, integers: bool = False) -> Any:
    """``value`` as a float32 tensor; any float dtype (or int, if allowed) is accepted."""
    value = tf.convert_to_tensor(value)
    if not (value.dtype.is_floating or (integers and value.dtype.is_integer)):
        kind = "a float or int" if integers else "a float"
        raise TypeError(f"{name} must have {kind} dtype, got {value.dtype.name}")
    return tf.cast(value, tf.float32)


def _resolve_rank(value: Any, rank: Any, name: str) -> int:
    """The rank of ``value``, checked against ``rank`` when it is given (Texar's argument)."""
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
        raise TypeError(f"rank must be an int or None, got {rank!r}")
    actual = value.shape.rank
    if actual is None:
        if rank is None:
            raise ValueError(f"the rank of {name} is unknown; pass rank")
        return rank
    if rank is not None and rank != actual:
        raise ValueError(f"rank is {rank} but {name} has shape {tuple(value.shape)}")
    return actual


def _to_batch_major(value: Any, time_major: bool) -> Any:
    """Swaps the first two dimensions if ``time_major`` (the swap is its own inverse)."""
    if not time_major:
        return value
    perm = [1, 0] + list(range(2, value.shape.rank))
    return tf.transpose(value, perm)


def _reduce(values: Any, axes: list[int], average: bool, total: bool) -> Any:
    if not axes:
        return values
    if average:
        return tf.reduce_mean(values, axis=axes)
    if total:
        return tf.reduce_sum(values, axis=axes)
    return values


def _mask_and_reduce(
    losses: Any,
    sequence_length: Any,
    average_across_batch: bool,
    average_across_timesteps: bool,
    sum_over_batch: bool,
    sum_over_timesteps: bool,
    time_major: bool,
    average_across_remaining: bool = False,
    sum_over_remaining: bool = False,
) -> Any:
    """Masks batch-major ``[batch, max_time, ...]`` float losses, reduces them (flags checked)."""
    if sequence_length is not None:
        valid = tf.sequence_mask(sequence_length, tf.shape(losses)[1])
        valid = valid[(Ellipsis,) + (None,) * (losses.shape.rank - 2)]
        losses = tf.where(valid, losses, tf.zeros_like(losses))
    remaining = list(range(2, losses.shape.rank))
    losses = _reduce(losses, remaining, average_across_remaining, sum_over_remaining)
    extra = [1] * (losses.shape.rank - 2)
    if sum_over_timesteps:
        losses = tf.reduce_sum(losses, axis=1)
    elif average_across_timesteps:
        if sequence_length is None:
            losses = tf.reduce_mean(losses, axis=1)
        else:
            counts = tf.cast(tf.maximum(sequence_length, 1), losses.dtype)
            losses = tf.reduce_sum(losses, axis=1) / tf.reshape(counts, [-1] + extra)
    if sum_over_batch:
        losses = tf.reduce_sum(losses, axis=0)
    elif average_across_batch:
        losses = tf.reduce_mean(losses, axis=0)
    reduce_time = average_across_timesteps or sum_over_timesteps
    reduce_batch = average_across_batch or sum_over_batch
    if time_major and not reduce_time and not reduce_batch:
        losses = _to_batch_major(losses, True)
    return losses


def _reduce_leading(
    values: Any, average_first: bool, sum_first: bool, average_rest: bool, sum_rest: bool
) -> Any:
    """Reduces dimensions ``1..`` (the remaining ones), then dimension 0 (flags checked)."""
    values = _reduce(values, list(range(1, values.shape.rank)), average_rest, sum_rest)
    return _reduce(values, [0], average_first, sum_first)


def mask_and_reduce(
    sequence: Any,
    sequence_length: Any,
    rank: int = 2,
    average_across_batch: bool = True,
    average_across_timesteps: bool = False,
    average_across_remaining: bool = False,
    sum_over_batch: bool = False,
    sum_over_timesteps: bool = True,
    sum_over_remaining: bool = True,
    dtype: Any = None,
    time_major: bool = False,
) -> Any:
    """Masks the steps of ``sequence`` past each length and reduces it, as Texar's function did.

    Args:
        sequence: ``[batch, max_time, d_3, ..., d_rank]`` values (``[max_time, batch, ...]`` if
            ``time_major``), any float or int dtype.
        sequence_length: ``[batch]`` int valid lengths, or ``None`` for no masking.
        rank: the rank of ``sequence``, at least 2; checked against its shape.
        average_across_batch: mean over the batch (excludes ``sum_over_batch``).
        average_across_timesteps: per sequence, the sum over its valid steps divided by its
            length (excludes ``sum_over_timesteps``).
        average_across_remaining: mean over the dimensions after batch and time.
        sum_over_batch: sum over the batch.
        sum_over_timesteps: sum over the valid steps.
        sum_over_remaining: sum over the dimensions after batch and time.
        dtype: the float dtype of the result; ``None`` for float32.
        time_major: whether ``sequence`` is time major.

    Returns:
        The masked and reduced values, of the shape the table in
        :mod:`texkit.losses.reduction` gives.
    """
    dtype = tf.float32 if dtype is None else tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"dtype must be a float dtype, got {dtype.name}")
    sequence = tf.convert_to_tensor(sequence)
    if not (sequence.dtype.is_floating or sequence.dtype.is_integer):
        raise TypeError(f"sequence must have a float or int dtype, got {sequence.dtype.name}")
    rank = _resolve_rank(sequence, rank, "sequence")
    if rank < 2:
        raise ValueError(f"rank must be at least 2 (batch and time), got {rank}")
    sequence = tf.ensure_shape(sequence, [None] * rank)
    _check_flag(time_major, "time_major")
    _check_exclusive(average_across_batch, sum_over_batch, "batch")
    _check_exclusive(average_across_timesteps, sum_over_timesteps, "timesteps")
    _check_exclusive(average_across_remaining, sum_over_remaining, "remaining")
    sequence_length = _check_lengths(sequence_length)
    _check_lengths_batch(
        sequence_length, sequence.shape[1 if time_major else 0], "sequence", sequence.shape
    )
    sequence = _to_batch_major(tf.cast(sequence, dtype), time_major)
    return _mask_and_reduce(
        sequence,
        sequence_length,
        average_across_batch,
        average_across_timesteps,
        sum_over_batch,
        sum_over_timesteps,
        time_major,
        average_across_remaining=average_across_remaining,
        sum_over_remaining=sum_over_remaining,
    )
