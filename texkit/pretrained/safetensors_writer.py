"""Writing safetensors files: one ``model.safetensors``, or shards and their index.

A safetensors file is an 8-byte little-endian header length, a JSON header (each entry's dtype,
shape and byte range in the data, and ``__metadata__``), padded with spaces to a multiple of 8
bytes, then the entries' bytes one after another. The header is known from the shapes alone, so
:func:`write_safetensors` writes it first and then each entry as it is made: writing holds one
entry's values at a time, not the model's.

Entries are grouped into shards in order, as transformers does: a shard is closed when the next
entry would take it past ``max_shard_size`` (an entry larger than that is a shard of its own).
One shard is ``model.safetensors``; several are ``model-00001-of-0000N.safetensors`` with
``model.safetensors.index.json``, whose ``weight_map`` names each entry's shard and whose
``metadata.total_size`` is the bytes of all entries. ``__metadata__`` is ``{"format": "pt"}``,
which transformers requires of the files it loads.
"""

from __future__ import annotations

import json
import re
import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import tensorflow as tf

from texkit.pretrained.safetensors_files import INDEX, SINGLE

__all__ = ["DTYPES", "Entry", "parse_size", "plan_shards", "write_safetensors"]

# The dtypes written, by name: (numpy type, safetensors' name).
DTYPES = {
    "float32": (np.dtype(np.float32), "F32"),
    "float16": (np.dtype(np.float16), "F16"),
    "bfloat16": (np.dtype(ml_dtypes.bfloat16), "BF16"),
}

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]I?B|B|)\s*$", re.IGNORECASE)


def parse_size(size: int | str, argument: str = "max_shard_size") -> int:
    """Bytes from an int or a string such as ``"2GB"`` (10^9 bytes, as transformers reads it),
    ``"500MiB"`` (2^20 bytes each) or ``"4096"``; at least 1."""
    if isinstance(size, bool):
        raise ValueError(f"{argument}: expected bytes (an int) or a size such as '2GB', got {size}")
    if isinstance(size, int):
        value = size
    else:
        match = _SIZE.match(size) if isinstance(size, str) else None
        if match is None:
            raise ValueError(
                f"{argument}: expected bytes (an int) or a size such as '2GB' or '500MiB', got "
                f"{size!r}"
            )
        value = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if value < 1:
        raise ValueError(f"{argument}: expected a positive size, got {size!r}")
    return value


@dataclass(frozen=True)
class Entry:
    """One tensor to write.

    Attributes:
        name: its name in the file.
        shape: its shape.
        value: makes its values (any float array of ``shape``; cast to the file's dtype), called
            once, when the entry is written.
    """

    name: str
    shape: tuple[int, ...]
    value: Callable[[], np.ndarray]


def _bytes(entry: Entry, dtype: np.dtype) -> int:
    return int(np.prod(entry.shape, dtype=np.int64)) * dtype.itemsize


def plan_shards(entries: list[Entry], dtype: np.dtype, max_shard_size: int) -> list[list[Entry]]:
    """The entries grouped into shards of at most ``max_shard_size`` bytes each (an entry
    larger than that alone), in order."""
    shards: list[list[Entry]] = [[]]
    size = 0
    for entry in entries:
        nbytes = _bytes(entry, dtype)
        if shards[-1] and size + nbytes > max_shard_size:
            shards.append([])
            size = 0
        shards[-1].append(entry)
        size += nbytes
    return shards


def _header(entries: Iterable[Entry], dtype: np.dtype, name: str) -> bytes:
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for entry in entries:
        end = offset + _bytes(entry, dtype)
        header[entry.name] = {
            "dtype": name,
            "shape": list(entry.shape),
            "data_offsets": [offset, end],
        }
        offset = end
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    return struct.pack("<Q", len(encoded)) + encoded


def _write_file(path: str, entries: list[Entry], dtype_name: str) -> None:
    dtype, name = DTYPES[dtype_name]
    with tf.io.gfile.GFile(path, "wb") as stream:
        stream.write(_header(entries, dtype, name))
        for entry in entries:
            value = np.asarray(entry.value())
            if tuple(value.shape) != tuple(entry.shape):
                raise ValueError(
                    f"{entry.name}: made a value of shape {list(value.shape)}, expected "
                    f"{list(entry.shape)}"
                )
            data = np.ascontiguousarray(value, dtype=dtype)
            value = None
            if sys.byteorder != "little":  # the format is little-endian
                data = data.byteswap()
            stream.write(data.tobytes())
            data = None


def write_safetensors(
    folder: str, entries: list[Entry], dtype: str = "float32", max_shard_size: int | str = "2GB"
) -> list[str]:
    """Writes ``entries`` into ``folder`` as ``model.safetensors``, or as shards and
    ``model.safetensors.index.json`` when they take more than ``max_shard_size``; returns the
    names of the files written.

    Args:
        folder: an existing folder (local or a ``tf.io.gfile`` URL).
        entries: the tensors, each name once.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        max_shard_size: bytes, or a size such as ``"2GB"`` (:func:`parse_size`).
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype: expected one of {sorted(DTYPES)}, got {dtype!r}")
    names = [entry.name for entry in entries]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"entries named more than once: {repeated[:5]}")
    shards = plan_shards(entries, DTYPES[dtype][0], parse_size(max_shard_size))
    if len(shards) == 1:
        _write_file(f"{folder}/{SINGLE}", shards[0], dtype)
        return [SINGLE]
    files = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for file, shard in zip(files, shards, strict=True):
        _write_file(f"{folder}/{file}", shard, dtype)
    index = {
        "metadata": {"total_size": sum(_bytes(e, DTYPES[dtype][0]) for e in entries)},
        "weight_map": {
            entry.name: file
            for file, shard in zip(files, shards, strict=True)
            for entry in sorted(shard, key=lambda e: e.name)
        },
    }
    with tf.io.gfile.GFile(f"{folder}/{INDEX}", "w") as stream:
        stream.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return [*files, INDEX]
