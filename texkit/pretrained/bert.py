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
the returned :class:`LoadReport`, not loaded. Before anything is built, the config's sizes are
checked against the weights' shapes (:func:`check_config_against_weights`).

(About 480 lines: BERT's folder formats, config translation, checks and loading are one family's
reading; the name tables are data in ``bert_names.py``, what families share in
``checkpoints.py``.)
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
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
from texkit.pretrained.bert_names import (
    GOOGLE_ENCODER,
    GOOGLE_SKIPPED,
    HF_ENCODER,
    HF_SKIPPED,
    bert_name_table,
)
from texkit.pretrained.checkpoints import (
    GOOGLE,
    HUGGINGFACE,
    CheckpointError,
    CheckpointReader,
    LoadReport,
    assign_all_or_nothing,
    resolve_attribute,
    resolve_checkpoint,
    stored_shape,
    to_keras_layout,
)

__all__ = [
    "bert_hparams_from_config",
    "check_config_against_weights",
    "detect_format",
    "encoder_from_pretrained",
    "load_bert_checkpoint",
    "merge_user_hparams",
    "model_from_pretrained",
    "read_bert_config",
    "tokenizer_from_pretrained",
    "vocab_file",
]

logger = logging.getLogger(__name__)

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


def encoder_from_pretrained(
    cls: type, path: Any, hparams: Any = None, *, allow_non_finite: bool = False, **kwargs: Any
) -> Any:
    """Implements ``BERTEncoder.from_pretrained``: checks the config against the weights'
    shapes, builds from the config, then loads (``allow_non_finite``: see
    :func:`load_bert_checkpoint`)."""
    path = resolve_checkpoint(path)
    config = read_bert_config(path)
    check_config_against_weights(config, path)
    encoder = cls(merge_user_hparams(config, hparams, path), **kwargs)
    encoder.load_report = load_bert_checkpoint(encoder, path, allow_non_finite=allow_non_finite)
    return encoder


def model_from_pretrained(
    cls: type, path: Any, hparams: Any = None, *, allow_non_finite: bool = False, **kwargs: Any
) -> Any:
    """Implements ``from_pretrained`` of a model whose ``encoder`` is a BERT encoder
    (``BERTClassifier``, ``BERTPretrainer``): the encoder's hparams come from the checkpoint's
    config (``hparams["encoder"]`` may only agree with them, or set dropout rates and names);
    the encoder and the heads the checkpoint has are loaded."""
    path = resolve_checkpoint(path)
    hparams = dict(hparams.todict() if hasattr(hparams, "todict") else hparams or {})
    config = read_bert_config(path)
    check_config_against_weights(config, path)
    hparams["encoder"] = merge_user_hparams(config, hparams.get("encoder"), path)
    model = cls(hparams, **kwargs)
    model.load_report = load_bert_checkpoint(model, path, allow_non_finite=allow_non_finite)
    return model


# The sizes a config sets, and the weight (texkit path, as in the name table) that shows each in
# its shape (Keras layout): checked before anything is built, so a config that contradicts its
# weights fails at once instead of building, say, a million layers or a 10^12-row table.
_SIZED_WEIGHTS = (
    (("vocab_size", "hidden_size"), "word_embedder.embedding"),
    (("type_vocab_size", "hidden_size"), "segment_embedder.embedding"),
    (("max_position_embeddings", "hidden_size"), "position_embedder.embedding"),
    (("hidden_size", "intermediate_size"), "encoder.blocks.0.ffn_inner.kernel"),
)
_LAYER_INDEX = re.compile(r"(?:^|[./])layer[._](\d+)[./]")


def check_config_against_weights(config: Mapping[str, Any], path: str) -> None:
    """Raises :class:`CheckpointError` naming the config key when the checkpoint's config and
    its weights disagree on a size (the vocabulary, the hidden, position, segment and
    feed-forward sizes, the number of layers). Only the weights' shapes are read."""
    reader = _reader(path)
    rows = {row[0]: row for row in bert_name_table(1)}
    for keys, attribute in _SIZED_WEIGHTS:
        _, google_name, hf_name, layout = rows[attribute]
        names = [google_name] if reader.format == GOOGLE else _hf_candidates(hf_name)
        found = [name for name in names if name in reader.shapes]
        if not found:
            continue  # the loader names what is missing
        expected = stored_shape(tuple(config[key] for key in keys), layout, reader.format)
        stored = reader.shapes[found[0]]
        if tuple(stored) != expected:
            said = ", ".join(f"{key}={config[key]!r}" for key in keys)
            raise CheckpointError(
                f"{path}: the config says {said}, but {found[0]!r} has shape {list(stored)} "
                "(a config that contradicts its weights; nothing was built)"
            )
    layers = {int(m.group(1)) for name in reader.shapes for m in [_LAYER_INDEX.search(name)] if m}
    if layers and layers != set(range(config["num_hidden_layers"])):
        raise CheckpointError(
            f"{path}: the config says num_hidden_layers={config['num_hidden_layers']!r}, but the "
            f"checkpoint holds layers {min(layers)}..{max(layers)} ({len(layers)} of them; "
            "nothing was built)"
        )


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


def _reader(path: str) -> CheckpointReader:
    fmt = detect_format(path)
    if fmt == GOOGLE:
        return CheckpointReader(
            os.path.join(path, _GOOGLE_CKPT), fmt, lambda name: bool(GOOGLE_SKIPPED.search(name))
        )
    return CheckpointReader(
        os.path.join(path, _HF_WEIGHTS),
        fmt,
        lambda name: bool(HF_SKIPPED.search(_strip_hf_prefix(name))),
    )


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
            head.build((None, None, encoder.output_size))


def load_bert_checkpoint(
    model: Any, path: str | os.PathLike, *, allow_non_finite: bool = False
) -> LoadReport:
    """Loads a BERT checkpoint folder into ``model``, all or nothing.

    Args:
        model: a :class:`~texkit.modules.BERTEncoder`, or a model whose ``.encoder`` is one
            (e.g. :class:`~texkit.modules.BERTClassifier`, :class:`~texkit.modules.BERTPretrainer`);
            its ``mlm_head`` and ``nsp_head``, if any, load when the checkpoint has them.
        path: a Google TF or Hugging Face BERT folder (see the module docstring), or the name
            of a packaged checkpoint (:func:`resolve_checkpoint`).
        allow_non_finite: load weights that hold NaN or infinite values; by default such a
            weight is an error (a corrupt or diverged checkpoint), and nothing is loaded.

    Returns:
        a :class:`LoadReport`.

    Raises:
        CheckpointError: a missing or unreadable file, a missing or unknown encoder variable, a
            shape mismatch, or non-finite values; the message names the variables. The model
            is unchanged.
    """
    path = resolve_checkpoint(path)
    encoder, heads = _parts(model)
    reader = _reader(path)
    fmt = reader.format
    _ensure_built(model, encoder, heads)
    report = LoadReport(format=fmt)
    plan: list[tuple[Any, np.ndarray]] = []
    problems: list[str] = []
    used: set[str] = set()

    def take(root: Any, rows: Iterable[tuple[str, str, str, str]]) -> None:
        for attribute, google_name, hf_name, layout in rows:
            variable = resolve_attribute(root, attribute)
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
            expected = stored_shape(variable.shape, layout, fmt)
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
            if not allow_non_finite and not np.isfinite(value).all():
                problems.append(
                    f"{name!r} holds {int((~np.isfinite(value)).sum())} NaN or infinite values "
                    "(allow_non_finite=True loads them)"
                )
                continue
            value = to_keras_layout(value, layout, fmt).astype(variable.dtype)
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
    encoder_pattern = GOOGLE_ENCODER if fmt == GOOGLE else HF_ENCODER
    for name in sorted(set(reader.shapes) - used):
        plain = name if fmt == GOOGLE else _strip_hf_prefix(name)
        if encoder_pattern.search(plain):
            problems.append(
                f"unknown encoder variable {name!r} (shape {list(reader.shapes[name])})"
            )
    assign_all_or_nothing(plan, problems, reader.file, model.name)
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
