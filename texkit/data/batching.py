"""How a dataset batches its clean records: global sizes split per replica, length buckets with
their own batch sizes or a token budget, and batches taken a replica group at a time.

:class:`~texkit.data.data_base.DataBase` reads its batching hparams (``batch_size``,
``drop_remainder``, ``bucket_boundaries``, ``bucket_batch_sizes``, ``batch_tokens``) through
these functions; they hold no state of their own.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.hparams import HParamsError

__all__ = ["batch", "bucket_batch", "bucket_sizes", "check_batching_hparams", "per_replica"]


def check_batching_hparams(hp: Any) -> None:
    """Raises :class:`~texkit.hparams.HParamsError` for bucket boundaries that are not increasing
    positive lengths, a ``bucket_batch_sizes`` of the wrong length, a negative ``batch_tokens``,
    or both per-bucket sizes and a token budget."""
    boundaries = list(hp.bucket_boundaries)
    if boundaries != sorted(set(boundaries)) or any(b < 1 for b in boundaries):
        raise HParamsError(
            f"expected increasing positive lengths, got {boundaries}", "bucket_boundaries"
        )
    sizes = list(hp.bucket_batch_sizes)
    if sizes and len(sizes) != len(boundaries) + 1:
        raise HParamsError(
            f"expected len(bucket_boundaries) + 1 = {len(boundaries) + 1} sizes, got {len(sizes)}",
            "bucket_batch_sizes",
        )
    if sizes and hp.batch_tokens:
        raise HParamsError("give bucket_batch_sizes or batch_tokens, not both", "batch_tokens")
    if hp.batch_tokens < 0:
        raise HParamsError(
            f"expected 0 (off) or a positive int, got {hp.batch_tokens}", "batch_tokens"
        )


def per_replica(size: int, replicas: int, key: str) -> int:
    """``size // replicas``; an error naming hparams ``key`` when it does not divide evenly."""
    if size % replicas:
        raise HParamsError(
            f"the global size {size} does not divide evenly among {replicas} replicas in sync; "
            f"use a multiple of {replicas}",
            key,
        )
    return size // replicas


def bucket_sizes(
    hp: Any, batch_size: int, replicas: int, longest: int | None
) -> tuple[list[int], list[int]]:
    """The bucket boundaries and the per-replica batch size of each bucket.

    Args:
        hp: The dataset's hparams.
        batch_size: The per-replica batch size (of every bucket, unless ``bucket_batch_sizes``
            or ``batch_tokens`` says otherwise).
        replicas: Replicas in sync.
        longest: The longest possible length (None: unbounded; a token budget needs it).
    """
    boundaries = list(hp.bucket_boundaries)
    if hp.batch_tokens:
        if longest is None:
            raise HParamsError("token-budget batching needs max_seq_length", "batch_tokens")
        if not boundaries:
            bound = 8
            while bound < longest:
                boundaries.append(bound)
                bound = max(bound + 1, int(bound * 1.1))
        uppers = [b - 1 for b in boundaries] + [max(longest, boundaries[-1] if boundaries else 1)]
        budget = hp.batch_tokens // replicas
        return boundaries, [max(1, budget // upper) for upper in uppers]
    if hp.bucket_batch_sizes:
        sizes = [per_replica(s, replicas, "bucket_batch_sizes") for s in hp.bucket_batch_sizes]
        return boundaries, sizes
    return boundaries, [batch_size] * (len(boundaries) + 1)


def batch(dataset: tf.data.Dataset, size: Any, group: int, drop_remainder: bool) -> Any:
    """Batches of ``size``, taken ``group`` at a time: with ``drop_remainder`` the examples that
    do not fill a whole group are dropped."""
    dataset = dataset.batch(size * group, drop_remainder=drop_remainder)
    return dataset.rebatch(size, drop_remainder=True) if group > 1 else dataset


def bucket_batch(
    dataset: tf.data.Dataset, sizes: list[int], group: int, drop_remainder: bool
) -> tf.data.Dataset:
    """:func:`batch` within each bucket, for a dataset of ``(record, bucket)`` elements.

    The bucket of each record was computed with the checks, in chunks: grouping by a
    precomputed key is cheaper than tf.data's ``bucket_by_sequence_length`` (see
    benchmarks/RESULTS.md, data pipeline).
    """
    batch_sizes = tf.constant(sizes, tf.int64)
    return dataset.group_by_window(
        key_func=lambda cleans, bucket: bucket,
        reduce_func=lambda bucket, window: batch(
            window, batch_sizes[bucket], group, drop_remainder
        ),
        window_size_func=lambda bucket: batch_sizes[bucket] * group,
    )
