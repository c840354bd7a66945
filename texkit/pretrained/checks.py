"""Checks of a checkpoint folder's config against its weights, before anything is built.

A config is input: it may say 10^12 layers, a 2e8-row vocabulary over a file of one tensor, or
sizes that a TF index claims and its data files do not hold. :func:`check_config_against_weights`
compares it with the weights' names and shapes (the safetensors header, the TF checkpoint index,
the HDF5 metadata; no values), so that a folder that cannot be loaded fails in a moment, naming
the config file and key, and the model that is then built has the sizes of the weights in the
file. The helpers that name a family's entries (:func:`reader_for`, :func:`entry_names`,
:func:`strip_prefix`) serve the loader too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from texkit.hparams import core as hparams_core
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import (
    HUGGINGFACE,
    CheckpointError,
    Row,
    stored_shape,
)
from texkit.pretrained.family import Family, Format
from texkit.pretrained.folders import config_source, get_path, inspect_folder, weight_files
from texkit.pretrained.names import MODULE
from texkit.pretrained.readers import WeightsReader
from texkit.pretrained.safetensors_files import check_index, is_sharded_folder, read_index

__all__ = [
    "MIN_BYTES_PER_WEIGHT",
    "check_config_against_weights",
    "entry_names",
    "reader_for",
    "strip_prefix",
]


def reader_for(path: str, family: Family, fmt: Format) -> WeightsReader:
    """The reader of a folder's weights in format ``fmt``, without the entries the format
    skips (optimizer slots, buffers, tied copies). A sharded folder's index and shards must
    agree (:func:`~texkit.pretrained.safetensors_files.check_index`)."""
    index = None
    if fmt.name == HUGGINGFACE and is_sharded_folder(path, fmt.weights):
        index = read_index(path)
    reader = WeightsReader(
        index.shards if index is not None else weight_files(path, fmt),
        fmt.name,
        lambda name: bool(fmt.skipped.search(strip_prefix(family, name))),
    )
    if index is not None:
        check_index(index, reader)
    return reader


def strip_prefix(family: Family, name: str) -> str:
    """``name`` without the family's Hugging Face model prefix (``bert.``), if it has one."""
    for prefix in family.prefixes:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def entry_names(family: Family, row: Row, fmt: str) -> list[str]:
    """The names an entry may have: Hugging Face's with or without the model prefix, and old
    ``LayerNorm.gamma``/``beta`` names."""
    name = row.names[fmt]
    if fmt != HUGGINGFACE:
        return [name]
    names = [name]
    if name.endswith("LayerNorm.weight"):
        names.append(name[: -len("weight")] + "gamma")
    elif name.endswith("LayerNorm.bias"):
        names.append(name[: -len("bias")] + "beta")
    if row.prefixed:
        names += [prefix + n for prefix in family.prefixes for n in names]
    return names


# The narrowest floating-point type a checkpoint's weights come in (float16, bfloat16): its
# files hold at least this many bytes per weight of the model.
MIN_BYTES_PER_WEIGHT = 2
# Digits of a layer index in an entry's name past which it cannot be a layer of a model texkit
# builds (at most MAX_LAYERS layers).
_INDEX_DIGITS = 6
# A block's attribute prefix, which a family's ``sized`` entries write for block 0.
_BLOCK = re.compile(r"(^|\.)blocks\.\d+\.")


def check_config_against_weights(
    family: Family, config: Mapping[str, Any], path: str, fmt: Format | None = None
) -> None:
    """Raises :class:`CheckpointError` naming the config file and key when a checkpoint's
    config and its weights disagree, before anything is built. Only the weights' names and
    shapes are read (the safetensors header, the TF checkpoint index, the HDF5 metadata):

    * **Layers**: each layer count (``family.num_layers_key``, ``more_layer_counts``) is an
      int, the layer indices in the names of the module's entries are exactly ``0..n-1``, and
      ``n`` is at most :data:`~texkit.hparams.core.MAX_LAYERS`. The comparison never grows with
      the number the config says.
    * **Sizes**: every weight of ``family.sized``, in every block, is an entry of the file with
      the shape the config's sizes give.
    * **Bytes**: those weights, at :data:`MIN_BYTES_PER_WEIGHT` bytes each, fit in the
      weights' files (a TF index or HDF5 metadata may claim shapes its files do not hold).
    """
    if fmt is None:
        _, fmt, _ = inspect_folder(path)
    source = config_source(path, fmt)
    reader = reader_for(path, family, fmt)
    _check_layers(family, fmt, config, reader, source)
    weights = _check_sizes(family, fmt, config, reader, source)
    if weights * MIN_BYTES_PER_WEIGHT > reader.file_bytes:
        raise CheckpointError(
            f"{source}: the config's sizes make {weights:,} weights in the largest tables "
            f"alone, at least {weights * MIN_BYTES_PER_WEIGHT:,} bytes, but {reader.file} holds "
            f"{reader.file_bytes:,} bytes (its entries claim more than the files hold; nothing "
            "was built)"
        )


def _layer_counts(family: Family, fmt: Format) -> list[tuple[str, re.Pattern]]:
    counts = list(family.more_layer_counts)
    if family.num_layers_key is not None:
        counts.insert(0, (family.num_layers_key, fmt.layer_pattern or family.layer_pattern))
    return counts


def _layer_indices(family: Family, fmt: Format, reader: WeightsReader, pattern: re.Pattern
                   ) -> set[int]:  # fmt: skip
    """The layer indices in the names of the module's own entries."""
    found = set()
    for name in reader.shapes:
        if not fmt.own.search(strip_prefix(family, name)):
            continue  # another model's layers (ELECTRA's generator) or a head's
        match = pattern.search(name)
        if match is None:
            continue
        digits = match.group(1) or "0"  # KerasHub's first block has no number
        if len(digits) > _INDEX_DIGITS:
            raise CheckpointError(
                f"{reader.file}: the entry {short(name)} names layer {digits[:12]}..., more "
                f"layers than texkit builds (at most {hparams_core.MAX_LAYERS})"
            )
        found.add(int(digits))
    return found


def _check_layers(family: Family, fmt: Format, config: Mapping, reader: WeightsReader,
                  source: str) -> None:  # fmt: skip
    first = None
    for key, pattern in _layer_counts(family, fmt):
        said = get_path(config, key)
        if said is None and first is not None:
            said = first  # a count that defaults to the first one (T5's decoder)
        if isinstance(said, bool) or not isinstance(said, int):
            raise CheckpointError(
                f"{source}: {key}={short(said)}, but a number of layers is an int"
            )
        first = said if first is None else first
        layers = _layer_indices(family, fmt, reader, pattern)
        if len(layers) != said or (layers and (min(layers), max(layers)) != (0, said - 1)):
            holds = (
                f"layers {min(layers)}..{max(layers)} ({len(layers)} of them"
                if layers
                else "no layers (0 of them"
            )
            raise CheckpointError(
                f"{source}: the config says {key}={said!r}, but the checkpoint holds "
                f"{holds}; nothing was built)"
            )
        if not 1 <= said <= hparams_core.MAX_LAYERS:
            raise CheckpointError(
                f"{source}: {key}={said!r}: texkit builds 1 to {hparams_core.MAX_LAYERS} layers "
                "(nothing was built)"
            )


def _dimension(config: Mapping, key: str | tuple[str, ...], source: str) -> int:
    keys = (key,) if isinstance(key, str) else key
    size = 1
    for part in keys:
        value = get_path(config, part)
        if isinstance(value, bool) or not isinstance(value, int):
            raise CheckpointError(f"{source}: {part}={short(value)}, but a size is an int")
        size *= value
    return size


def _said(config: Mapping, keys: Iterable[str | tuple[str, ...]]) -> str:
    paths = [part for key in keys for part in ((key,) if isinstance(key, str) else key)]
    return ", ".join(f"{path}={get_path(config, path)!r}" for path in dict.fromkeys(paths))


def _check_sizes(family: Family, fmt: Format, config: Mapping, reader: WeightsReader,
                 source: str) -> int:  # fmt: skip
    """Checks the sized weights of every block against the file's entries; returns the number
    of weights they hold (the bulk of the module's, as the model will allocate them)."""
    sized = {attribute: keys for keys, attribute in family.sized}
    weights = 0
    for row in family.name_table(config, MODULE):
        keys = sized.get(_BLOCK.sub(r"\1blocks.0.", row.attribute))
        if keys is None:
            continue
        shape = tuple(_dimension(config, key, source) for key in keys)
        expected = stored_shape(shape, row.layout, fmt.name, row.split, row.heads)
        candidates = entry_names(family, row, fmt.name)
        found = [name for name in candidates if name in reader.shapes]
        if not found:
            raise CheckpointError(
                f"{source}: the config says {_said(config, keys)}, which needs "
                f"{candidates[0]!r} of shape {list(expected)}, but {reader.file} has no such "
                "entry (nothing was built)"
            )
        stored = reader.shapes[found[0]]
        if tuple(stored) != expected:
            raise CheckpointError(
                f"{source}: the config says {_said(config, keys)}, but {found[0]!r} has shape "
                f"{short(list(stored), 200)} (a config that contradicts its weights; nothing "
                "was built)"
            )
        weights += math.prod(shape)
    return weights
