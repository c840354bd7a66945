"""Sharded safetensors folders: ``model.safetensors.index.json`` and the shards it names.

Hugging Face saves a large model as several ``.safetensors`` shards and an index whose
``weight_map`` names, for every entry, the shard that holds it. The index is input like a config:
it is read strictly (:func:`texkit.files.read_json`), its shard names are plain file names inside
the folder, every shard it names is a regular file, and once the shards' headers are open
(:func:`check_index`) the map and the shards agree exactly: every entry of the map is in the shard
it names, and every entry of a shard is in the map. A folder that holds ``model.safetensors``
too is read from that single file, as transformers does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import tensorflow as tf

import texkit.files
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import CheckpointError
from texkit.pretrained.readers import WeightsReader

__all__ = [
    "INDEX",
    "SINGLE",
    "ShardIndex",
    "check_index",
    "is_sharded",
    "is_sharded_folder",
    "read_index",
]

INDEX, SINGLE = "model.safetensors.index.json", "model.safetensors"


@dataclass(frozen=True)
class ShardIndex:
    """A sharded folder's index.

    Attributes:
        file: the index file.
        weight_map: ``{entry: shard file name}``.
        shards: the shards' paths, each once, in the order the map first names them.
    """

    file: str
    weight_map: dict[str, str]
    shards: list[str]


def is_sharded(files: set[str] | list[str]) -> bool:
    """Whether a folder holding ``files`` (names) is a sharded one: an index and no single
    ``model.safetensors`` (which, when present, is read instead)."""
    return INDEX in files and SINGLE not in files


def is_sharded_folder(path: str, weights: tuple[str, ...] = (SINGLE,)) -> bool:
    """Whether the folder ``path`` of a format whose weights are ``weights`` is a sharded one
    (see :func:`is_sharded`; a format that names other files never is)."""
    return (
        tuple(weights) == (SINGLE,)
        and tf.io.gfile.exists(os.path.join(path, INDEX))
        and not tf.io.gfile.exists(os.path.join(path, SINGLE))
    )


def read_index(path: str) -> ShardIndex:
    """The index of the sharded folder ``path``, checked (see the module docstring).

    Raises:
        CheckpointError: naming the index file and the key or shard: not a JSON object, no
            ``weight_map`` object, a shard name that is not a plain file name in the folder
            (``/``, ``..``, an absolute path), or a shard that is not a regular file.
    """
    file = os.path.join(path, INDEX)
    index = texkit.files.read_json(
        file, limit=texkit.files.MAX_CONFIG_BYTES, error=CheckpointError, what="shard index"
    )
    if not isinstance(index, Mapping):
        raise CheckpointError(f"{file}: expected a JSON object")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, Mapping) or not weight_map:
        raise CheckpointError(
            f"{file}: expected 'weight_map', an object of entry -> shard file name, got "
            f"{short(weight_map)}"
        )
    shards: dict[str, None] = {}
    for entry, shard in weight_map.items():
        if (
            not isinstance(shard, str)
            or shard in ("", ".", "..")
            or "/" in shard
            or "\\" in shard
            or os.path.isabs(shard)
        ):
            raise CheckpointError(
                f"{file}: the entry {short(entry)} names the shard {short(shard)}, but a shard is "
                "a file name inside the folder (no '/', no '..')"
            )
        shards.setdefault(shard, None)
    for shard in shards:
        shard_path = os.path.join(path, shard)
        if not tf.io.gfile.exists(shard_path):
            raise CheckpointError(f"{file}: names the shard {short(shard)}, which is not there")
        texkit.files.check_regular_file(shard_path, error=CheckpointError)
    return ShardIndex(file, dict(weight_map), [os.path.join(path, s) for s in shards])


def check_index(index: ShardIndex, reader: WeightsReader) -> None:
    """Raises :class:`CheckpointError` unless the index's map and the shards ``reader`` opened
    agree exactly: every entry of the map in the shard it names, every entry of a shard (skipped
    ones too) in the map, under that shard."""
    for shard in reader.readers:
        name = os.path.basename(shard.file)
        for entry in shard.keys:
            said = index.weight_map.get(entry)
            if said != name:
                where = "is not in the map" if said is None else f"is mapped to {said}"
                raise CheckpointError(
                    f"{index.file}: the entry {short(entry)} of the shard {name} {where} (the "
                    "index and its shards disagree; nothing was loaded)"
                )
    held = {(os.path.basename(s.file), entry) for s in reader.readers for entry in s.keys}
    for entry, shard in index.weight_map.items():
        if (shard, entry) not in held:
            raise CheckpointError(
                f"{index.file}: the entry {short(entry)} is mapped to the shard {shard}, which "
                "does not hold it (the index and its shards disagree; nothing was loaded)"
            )
