"""The Trainer's data splits: what a split may be, and reading one under a strategy.

A split (see :class:`texkit.run.Data`) is a ``tf.data.Dataset`` of global batches, a function
``input_context -> tf.data.Dataset`` of per-replica batches, or texkit data, whose
``make_dataset(input_context)`` reads this worker's shard afresh on each call (an object with
only a ``.dataset`` gives that dataset).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

__all__ = [
    "check_files_unchanged",
    "count_batches",
    "features_spec",
    "read_split",
    "split_source",
    "zeros_like_spec",
]


def split_source(source: Any, split: str) -> Any:
    """A split as a ``tf.data.Dataset`` or a function ``input_context -> tf.data.Dataset``.

    Raises:
        TypeError: naming ``split``, when it is neither nor texkit data.
    """
    if not isinstance(source, tf.data.Dataset):
        # texkit data: make_dataset(input_context) reads this worker's shard, afresh each call.
        make = getattr(source, "make_dataset", None)
        source = make if callable(make) else getattr(source, "dataset", source)
    if isinstance(source, tf.data.Dataset) or callable(source):
        return source
    raise TypeError(
        f"data split {split!r}: expected a tf.data.Dataset, a function input_context -> Dataset "
        f"or texkit data (make_dataset or .dataset), got {type(source).__name__}"
    )


def _plain_dataset(source: Any, split: str) -> tf.data.Dataset:
    source = split_source(source, split)
    return source if isinstance(source, tf.data.Dataset) else source(tf.distribute.InputContext())


def features_spec(data: Mapping) -> Any:
    """The spec of the features of one batch of the train split (else the first split)."""
    split = "train" if "train" in data else next(iter(data), None)
    if split is None:
        raise ValueError("the data has no split to take the model's input shapes from")
    spec = _plain_dataset(data[split], split).element_spec
    return spec[0] if isinstance(spec, tuple) else spec


def zeros_like_spec(spec: Any) -> Any:
    """Zeros of the shapes of ``spec`` (a batch of one where the batch size is unknown)."""
    return tf.nest.map_structure(
        lambda s: tf.zeros([1 if d is None else d for d in s.shape], s.dtype), spec
    )


def read_split(
    data: Mapping, split: str, strategy: tf.distribute.Strategy, start_step: int | None = None
) -> Any:
    """``split`` of ``data`` as ``fit``, ``evaluate`` and ``predict`` take it under ``strategy``.

    With ``start_step`` the split is repeated and its first ``start_step`` batches skipped, so a
    resumed run reads what an uninterrupted one would have read from that step on.
    """
    if split not in data:
        raise KeyError(f"the data has no {split!r} split; it has {sorted(data)}")
    source = split_source(data[split], split)
    if isinstance(source, tf.data.Dataset):
        return source if start_step is None else source.repeat().skip(start_step)

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset = source(context)
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(
                f"data split {split!r}: the function returned {type(dataset).__name__}, "
                "not a tf.data.Dataset"
            )
        return dataset if start_step is None else dataset.repeat().skip(start_step)

    return strategy.distribute_datasets_from_function(dataset_fn)


def count_batches(data: Mapping, split: str, strategy: tf.distribute.Strategy) -> int | None:
    """The number of batches one pass over ``split`` gives, counted once by reading it when
    tf.data does not know it (after a ``filter``, from a generator).

    The Trainer gives ``evaluate`` and the validation these exact steps. Keras reads
    a dataset of unknown length to its end instead, warns that it "ran out of data" and, with
    static batch shapes (``drop_remainder``), counts one batch too many in the loss and metrics
    (an empty batch, counted at its static size; Keras 3.15, TensorFlow 2.21).

    Returns ``None`` (Keras reads to the end) for an infinite split, under
    ``MultiWorkerMirroredStrategy`` (each worker reads its own shard), and for a split made per
    input pipeline under several replicas.

    Raises:
        ValueError: naming ``split``, when it has no batch.
    """
    if split not in data:
        raise KeyError(f"the data has no {split!r} split; it has {sorted(data)}")
    source = split_source(data[split], split)
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return None
    if not isinstance(source, tf.data.Dataset):
        if strategy.num_replicas_in_sync != 1:
            return None
        source = _plain_dataset(source, split)
    count = int(source.cardinality())
    if count == tf.data.INFINITE_CARDINALITY:
        return None
    if count == tf.data.UNKNOWN_CARDINALITY:
        count = int(source.reduce(tf.constant(0, tf.int64), lambda total, *_: total + 1))
    if count == 0:
        raise ValueError(f"data split {split!r} has no batch: check its files and filters")
    return count


def check_files_unchanged(data: Mapping, error: Exception) -> None:
    """Raises ``ValueError`` naming the file when ``error`` came from an input file changed
    since its texkit data was made (the pipeline's own check stops with an op error)."""
    for source in data.values():
        check = getattr(source, "check_files_unchanged", None)
        if callable(check):
            try:
                check()
            except ValueError as changed:
                raise changed from error
