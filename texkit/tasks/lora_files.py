"""Adapter files: a module's LoRA adapters (and its newly trained heads) alone, in one file.

One safetensors file (``safetensors``' NumPy API: no pickle, nothing executed on loading) holds,
for every adapted layer at attribute path ``p``, the tensors ``p.lora_kernel_a`` and
``p.lora_kernel_b`` in float32; for every layer :func:`~texkit.tasks.enable_lora` kept trainable
(``train``: a new head), its variables as ``p.<variable>``. The file's metadata records what is
needed to check it against a base model before anything is assigned:

* ``format``: ``texkit-lora``, and its ``version`` (``1``);
* ``rank``, ``alpha``, ``targets`` and ``train`` as :func:`~texkit.tasks.enable_lora` got them;
* ``base``: the base's fingerprint, every adapted layer's path with its kernel's shape
  (JSON ``{path: shape}``).

:func:`load_adapters` takes a module with no adapters (a freshly loaded base: it enables LoRA
itself with the file's settings) or one with adapters of the same settings (their values are
replaced). Either way the module then computes exactly what the saved one computed. A file for
another base (another layer, kernel shape, rank or alpha) is refused naming the first adapter
that differs, and the module is left unchanged.
"""

from __future__ import annotations

import json
import os
from typing import Any

import keras
import numpy as np

import texkit.files
from texkit import _compat
from texkit.tasks.lora import (
    LoRAState,
    _check_module,
    _resolve,
    adapted_layers,
    enable_lora,
    lora_state,
)

__all__ = ["ADAPTER_FORMAT", "MAX_ADAPTER_BYTES", "load_adapters", "save_adapters"]

ADAPTER_FORMAT, _VERSION = "texkit-lora", "1"
# Rank-64 adapters on every projection of an 8B model are about 700 MB in float32.
MAX_ADAPTER_BYTES = 4 << 30


def _settings(module: keras.layers.Layer) -> LoRAState:
    """The module's adapters' settings (from :func:`enable_lora`'s record, else the layers)."""
    layers = adapted_layers(module)
    if not layers:
        raise ValueError(f"module: {module.name} has no LoRA adapters")
    state = lora_state(module)
    if state is not None and tuple(p for p, _ in layers) == state.paths:
        return state
    _, first = layers[0]
    paths = tuple(p for p, _ in layers)
    return LoRAState(first.lora_rank, float(first.lora_alpha), paths, paths, (), ())


def _relative(layer: keras.layers.Layer, variable: Any) -> str:
    return variable.path[len(layer.path) + 1 :].replace("/", ".")


def _trained_variables(module: Any, train: tuple[str, ...]) -> dict[str, Any]:
    """``{tensor name: variable}`` of the layers ``train`` names."""
    found = {}
    for path, layer in _resolve(module, train, "train", dense_only=False):
        for variable in layer.weights:
            found[f"{path}.{_relative(layer, variable)}"] = variable
    return found


def save_adapters(module: keras.layers.Layer, path: str | os.PathLike) -> str:
    """Writes ``module``'s adapters (and its ``train`` layers) to the safetensors file ``path``.

    Returns:
        the path written.

    Raises:
        ValueError: ``module`` has no adapters, or ``path`` is a folder.
    """
    import safetensors.numpy

    _check_module(module)
    state = _settings(module)
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"path: {path} is a folder; give the adapter file's name")
    tensors, base = {}, {}
    for layer_path, layer in adapted_layers(module):
        base[layer_path] = list(_compat.dense_kernel(layer).shape)
        for name in ("lora_kernel_a", "lora_kernel_b"):
            value = keras.ops.convert_to_numpy(getattr(layer, name))
            tensors[f"{layer_path}.{name}"] = np.ascontiguousarray(value, np.float32)
    for name, variable in _trained_variables(module, state.train).items():
        tensors[name] = np.ascontiguousarray(keras.ops.convert_to_numpy(variable))
    metadata = {
        "format": ADAPTER_FORMAT,
        "version": _VERSION,
        "rank": str(state.rank),
        "alpha": repr(float(state.alpha)),
        "targets": json.dumps(list(state.targets)),
        "train": json.dumps(list(state.train)),
        "base": json.dumps(base),
    }
    data = safetensors.numpy.save(tensors, metadata=metadata)
    partial = f"{path}.partial-{os.getpid()}"
    with open(partial, "wb") as stream:
        stream.write(data)
    os.replace(partial, path)
    return path


def _read(path: str) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """The file's metadata and tensors, its format checked."""
    import safetensors.numpy

    data = texkit.files.read_bytes(path, MAX_ADAPTER_BYTES, what="LoRA adapter file")
    try:
        size = int.from_bytes(data[:8], "little")
        if len(data) < 8 or size > len(data) - 8:
            raise ValueError("truncated header")
        metadata = json.loads(data[8 : 8 + size]).get("__metadata__") or {}
        tensors = safetensors.numpy.load(data)
    except Exception as error:  # noqa: BLE001 - any unreadable file is refused the same way
        raise ValueError(f"{path}: not a safetensors file ({error})") from None
    if metadata.get("format") != ADAPTER_FORMAT or metadata.get("version") != _VERSION:
        raise ValueError(
            f"{path}: not a texkit LoRA adapter file (format {metadata.get('format')!r}, "
            f"version {metadata.get('version')!r}; expected {ADAPTER_FORMAT!r} {_VERSION})"
        )
    return metadata, tensors


def _file_settings(path: str, metadata: dict[str, str]) -> tuple[int, float, list, list, dict]:
    try:
        rank, alpha = int(metadata["rank"]), float(metadata["alpha"])
        targets, train = json.loads(metadata["targets"]), json.loads(metadata["train"])
        base = json.loads(metadata["base"])
    except (KeyError, ValueError) as error:
        raise ValueError(
            f"{path}: a broken adapter file ({type(error).__name__}: {error})"
        ) from None
    return rank, alpha, targets, train, base


def _check_against(module: Any, path: str, metadata: dict, tensors: dict) -> list[tuple]:
    """``(variable or None, value, layer, name)`` to assign, each checked; ``None`` for an
    adapter that does not exist yet (enabled first). Raises ValueError naming the first
    difference."""
    rank, alpha, targets, train, base = _file_settings(path, metadata)
    current = adapted_layers(module)
    if current:
        layers = current
        state = _settings(module)
        if (state.rank, state.alpha) != (rank, alpha):
            raise ValueError(
                f"{path}: adapter {current[0][0]!r} has rank {state.rank} and alpha "
                f"{state.alpha:g} in the module, rank {rank} and alpha {alpha:g} in the file"
            )
    else:
        layers = _resolve(module, targets, "targets (of the file)", dense_only=True)
    mine = {p: layer for p, layer in layers}
    for layer_path in list(base) + [p for p in mine if p not in base]:
        if layer_path not in mine:
            raise ValueError(f"{path}: adapter {layer_path!r} is in the file, not in the module")
        if layer_path not in base:
            raise ValueError(f"{path}: adapter {layer_path!r} is in the module, not in the file")
        shape = list(_compat.dense_kernel(mine[layer_path]).shape)
        if shape != list(base[layer_path]):
            raise ValueError(
                f"{path}: adapter {layer_path!r} was trained on a kernel of shape "
                f"{base[layer_path]}, the module's is {shape} (another base model)"
            )
    assignments = []
    for layer_path, layer in mine.items():
        kernel = tuple(_compat.dense_kernel(layer).shape)
        shapes = {"lora_kernel_a": (*kernel[:-1], rank), "lora_kernel_b": (rank, kernel[-1])}
        for name, shape in shapes.items():
            value = tensors.get(f"{layer_path}.{name}")
            if value is None or tuple(value.shape) != tuple(shape):
                raise ValueError(
                    f"{path}: adapter {layer_path!r}: {name} should be {list(shape)}, the file "
                    f"has {None if value is None else list(value.shape)}"
                )
            assignments.append((getattr(layer, name, None), value, layer, name))
    for name, variable in _trained_variables(module, tuple(train)).items():
        value = tensors.get(name)
        if value is None or tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{path}: trained layer variable {name!r} should be {list(variable.shape)}, the "
                f"file has {None if value is None else list(value.shape)}"
            )
        assignments.append((variable, value, None, name))
    return assignments


def load_adapters(module: keras.layers.Layer, path: str | os.PathLike) -> list[str]:
    """Loads an adapter file written by :func:`save_adapters` into ``module``.

    A module without adapters gets them first (:func:`enable_lora` with the file's rank,
    alpha, targets and ``train``); a module with adapters must have the file's settings.

    Returns:
        the adapted layers' attribute paths.

    Raises:
        ValueError: the file is not an adapter file, or is for another base model (another
            layer, kernel shape, rank or alpha: the first adapter that differs is named);
            nothing is changed then.
    """
    _check_module(module)
    path = os.fspath(path)
    metadata, tensors = _read(path)
    assignments = _check_against(module, path, metadata, tensors)
    if not adapted_layers(module):
        rank, alpha, targets, train, _ = _file_settings(path, metadata)
        enable_lora(module, rank, alpha, targets, train)
    for variable, value, layer, name in assignments:
        if variable is None:
            variable = getattr(layer, name)
        variable.assign(value.astype(keras.backend.standardize_dtype(variable.dtype)))
    return [p for p, _ in adapted_layers(module)]
