"""The ``tf.data.Dataset`` of BERT pretraining features: pairs packed, then masked.

The features are listed in :mod:`texkit.data.bert_pretraining`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.data.bert_pretraining._checks import _check_int
from texkit.data.bert_pretraining.masking import MaskedLMMasker
from texkit.data.bert_pretraining.sentence_pairs import pack_pair

__all__ = ["pretraining_dataset"]


def _pack_instances(
    instances: Sequence[Mapping[str, Any]],
    vocab_size: int,
    cls_id: int,
    sep_id: int,
    max_seq_length: int,
    pad_id: int,
) -> dict[str, np.ndarray]:
    """Every instance checked and packed with :func:`pack_pair`: ``[n, ...]`` int32 arrays of
    ``input_ids``, ``segment_ids``, ``sequence_length`` and ``next_sentence_label``."""
    packed: dict[str, list] = {
        "input_ids": [],
        "segment_ids": [],
        "sequence_length": [],
        "next_sentence_label": [],
    }
    for index, instance in enumerate(instances):
        try:
            tokens_a, tokens_b = list(instance["tokens_a"]), list(instance["tokens_b"])
            label = instance["next_sentence_label"]
            if label not in (0, 1) or isinstance(label, bool):
                raise ValueError(f"next_sentence_label must be 0 or 1, got {label!r}")
            ids = np.asarray(tokens_a + tokens_b)
            if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0):
                raise ValueError("token ids must be non-negative ints")
            if ids.size and ids.max() >= vocab_size:
                raise ValueError(f"id {ids.max()} is outside the vocabulary [0, {vocab_size})")
            features = pack_pair(tokens_a, tokens_b, cls_id, sep_id, max_seq_length, pad_id)
        except KeyError as error:
            raise ValueError(f"instances[{index}] has no key {error}") from None
        except (TypeError, ValueError) as error:
            raise ValueError(f"instances[{index}]: {error}") from None
        for key, value in features.items():
            packed[key].append(value)
        packed["next_sentence_label"].append(label)
    return {key: np.asarray(values, np.int32) for key, values in packed.items()}


def pretraining_dataset(
    instances: Sequence[Mapping[str, Any]],
    *,
    masker: MaskedLMMasker,
    max_seq_length: int,
    cls_id: int,
    sep_id: int,
    seed: int,
    batch_size: int | None = None,
    drop_remainder: bool = True,
    shuffle: bool = False,
    pad_id: int = 0,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of BERT pretraining features (listed in the package docstring).

    Instances (e.g. from :func:`make_nsp_pairs`) are packed with :func:`pack_pair` and checked
    on the host; the masking runs in the pipeline, keyed by ``(seed, instance index)``, so the
    same instance gets the same mask wherever ``shuffle`` puts it.

    Args:
        instances: Dicts with ``tokens_a``, ``tokens_b`` and ``next_sentence_label`` (0 or 1).
        masker: The :class:`MaskedLMMasker`; ids must lie in ``[0, masker.vocab_size)``.
        max_seq_length: Length of every sequence.
        cls_id, sep_id, pad_id: Ids of ``[CLS]``, ``[SEP]`` and padding.
        seed: Seed of the masking and of the shuffling.
        batch_size: Batch the features if given.
        drop_remainder: Drop a last smaller batch (keeps the batch dimension static).
        shuffle: Shuffle the instances (the whole set, reshuffled every epoch).

    Raises:
        ValueError: for no instances, or an instance that is malformed, does not fit, holds an
            id outside the vocabulary or a label other than 0/1 (naming its index).
    """
    if not isinstance(masker, MaskedLMMasker):
        raise ValueError(f"masker must be a MaskedLMMasker, got {type(masker).__name__}")
    max_seq_length = _check_int("max_seq_length", max_seq_length, 5)
    seed = _check_int("seed", seed, 0)
    if batch_size is not None:
        batch_size = _check_int("batch_size", batch_size, 1)
    if len(instances) == 0:
        raise ValueError("instances is empty")
    arrays = _pack_instances(instances, masker.vocab_size, cls_id, sep_id, max_seq_length, pad_id)

    def mask(index: tf.Tensor, features: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        example_seed = tf.stack([tf.constant(seed, tf.int64), index])
        masked = masker(features["input_ids"], features["sequence_length"], example_seed)
        return {**features, **masked}

    dataset = tf.data.Dataset.from_tensor_slices(arrays).enumerate()
    if shuffle:
        dataset = dataset.shuffle(len(instances), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if batch_size is not None:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset
