"""Checkpoint folders and their configs: which family and format a folder holds, and its config
as the family module's hparams (a user's hparams merged in, contradictions refused).

A Hugging Face folder (``config.json`` + ``model.safetensors``, or the shards that
``model.safetensors.index.json`` names) names its family in
``config.json``'s ``model_type``; a Google or OpenAI release is recognised by its config file's
name. A KerasHub preset (``backbone.save_to_preset``: ``config.json`` + ``model.weights.h5`` +
``metadata.json``) names its backbone class in ``config.json``'s ``class_name``
(``"BertBackbone"``), which picks the family. A release without a config (Google's ELECTRA: a TF
checkpoint and ``vocab.txt``) is recognised by an entry only its checkpoints have, and its
config is read off the checkpoint's shapes (:attr:`Format.config_from_shapes`). A folder with
only ``pytorch_model.bin`` (or another pickle) is refused: unpickling can run arbitrary code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

import texkit.files
from texkit.deprecation import warn_deprecated
from texkit.hparams import HParams, HParamsError
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import (
    GOOGLE,
    HUGGINGFACE,
    KERAS_HUB,
    CheckpointError,
    resolve_checkpoint,
)
from texkit.pretrained.family import FAMILIES, Family, Format, family_for_type
from texkit.pretrained.readers import CheckpointReader
from texkit.pretrained.safetensors_files import INDEX, is_sharded, is_sharded_folder, read_index

__all__ = [
    "checkpoint_format",
    "config_source",
    "get_path",
    "hparams_from_config",
    "inspect_folder",
    "merge_user_hparams",
    "read_config",
    "set_path",
    "weight_files",
    "weights_file",
]

_HF_CONFIG, _HF_WEIGHTS = "config.json", "model.safetensors"
_KERAS_HUB_FILES = ("model.weights.h5", "metadata.json")
_PICKLES = ("pytorch_model.bin", "model.pt", "model.ckpt.pt", "checkpoint.pt", "model.pkl")


def _read_json(file: str) -> Any:
    """A config file's JSON, read strictly by :func:`texkit.files.read_json`: a regular file of
    at most :data:`texkit.files.MAX_CONFIG_BYTES` (read when called, so a program may raise
    it), no key given twice, no nesting deeper than
    :data:`~texkit.errors.MAX_DEPTH`, no integer longer than :data:`~texkit.errors.MAX_DIGITS`
    digits; every failure a :class:`CheckpointError` naming the file."""
    return texkit.files.read_json(
        file, limit=texkit.files.MAX_CONFIG_BYTES, error=CheckpointError, what="config file"
    )


def _has_weights(files: set[str], fmt: Format) -> bool:
    """Whether the folder's ``files`` hold every weights file of ``fmt``."""
    if fmt.name == HUGGINGFACE and fmt.weights == (_HF_WEIGHTS,) and is_sharded(files):
        return True
    if fmt.name in (HUGGINGFACE, KERAS_HUB):
        return all(weights in files for weights in fmt.weights)
    # A TF checkpoint: its prefix names files ("*": any one checkpoint).
    return all(
        any(f.endswith(".index") if prefix == "*" else f.startswith(prefix + ".") for f in files)
        for prefix in fmt.weights
    )


def weight_files(path: str, fmt: Format) -> list[str]:
    """The weights' files of a folder in format ``fmt`` (a TF checkpoint: its prefix; a sharded
    Hugging Face folder: the shards its index names, see
    :mod:`~texkit.pretrained.safetensors_files`)."""
    if fmt.name == HUGGINGFACE and is_sharded_folder(path, fmt.weights):
        return read_index(path).shards
    return [_weights_path(path, weights) for weights in fmt.weights]


def _weights_path(path: str, weights: str) -> str:
    if weights != "*":
        return os.path.join(path, weights)
    prefixes = sorted(
        f[: -len(".index")] for f in tf.io.gfile.listdir(path) if f.endswith(".index")
    )
    if len(prefixes) != 1:
        raise CheckpointError(
            f"{path}: expected one TF checkpoint (a *.index file), found {prefixes or 'none'}"
        )
    return os.path.join(path, prefixes[0])


def weights_file(path: str, fmt: Format) -> str:
    """Deprecated: use :func:`weight_files` (a format may name several files). The one
    weights file of ``fmt``'s folder ``path``."""
    warn_deprecated(
        "texkit.pretrained.folders.weights_file", "texkit.pretrained.folders.weight_files"
    )
    (file,) = weight_files(path, fmt)
    return file


def checkpoint_format(path: str | os.PathLike) -> str:
    """The format of a checkpoint folder (or a packaged checkpoint's name): ``"google"``,
    ``"huggingface"``, ``"openai"`` or ``"keras_hub"``, from the files in it."""
    _, fmt, _ = inspect_folder(resolve_checkpoint(path))
    return fmt.name


def config_source(path: str, fmt: Format) -> str:
    """The file a folder's config comes from, for messages: the config file, or the checkpoint
    index of a release without one."""
    if fmt.config_file is None:
        return weight_files(path, fmt)[0] + ".index"
    return os.path.join(path, fmt.config_file)


def _config_less(path: str, files: set[str]) -> tuple[Family, Format, dict] | None:
    """The family, format and config of a release without a config file, recognised by its
    checkpoint's entries (``None``: no such release)."""
    formats = [
        (family, fmt)
        for family in FAMILIES.values()
        for fmt in family.formats
        if fmt.config_file is None and fmt.signature is not None
    ]
    indexes = sorted(f for f in files if f.endswith(".index"))
    if not formats or len(indexes) != 1:
        return None
    index = os.path.join(path, indexes[0])
    shapes = CheckpointReader(index[: -len(".index")], GOOGLE, lambda name: False).shapes
    for family, fmt in formats:
        if fmt.signature in shapes:
            return family, fmt, fmt.config_from_shapes(shapes, index)
    return None


def inspect_folder(path: str | os.PathLike) -> tuple[Family, Format, dict]:
    """The family, format and raw config of the checkpoint folder ``path``.

    Raises:
        CheckpointError: not a folder, no config or no weights, a pickle-only folder, or a
            ``model_type`` texkit does not load (the message names the supported ones).
    """
    path = os.fspath(path)
    if not tf.io.gfile.isdir(path):
        if tf.io.gfile.exists(path):
            raise CheckpointError(f"{path}: expected a checkpoint folder, got a file")
        raise CheckpointError(f"{path}: no such checkpoint folder")
    files = set(tf.io.gfile.listdir(path))
    # A folder in a format named by its files (Google's BERT release).
    for family in FAMILIES.values():
        for fmt in family.formats:
            if fmt.config_file != _HF_CONFIG and fmt.config_file in files:
                if not _has_weights(files, fmt):
                    weights = " + ".join("TF checkpoint" if w == "*" else w for w in fmt.weights)
                    raise CheckpointError(
                        f"{path}: {fmt.config_file} found but no {weights}.index/data"
                    )
                config = _read_json(os.path.join(path, fmt.config_file))
                return family, fmt, _as_object(config, os.path.join(path, fmt.config_file))
    if _HF_CONFIG in files:
        file = os.path.join(path, _HF_CONFIG)
        config = _as_object(_read_json(file), file)
        if "class_name" in config and "model_type" not in config:  # a KerasHub preset
            family, fmt = _keras_hub_format(config, file)
            lacking = [f for f in _KERAS_HUB_FILES if f not in files]
            if lacking:
                raise CheckpointError(
                    f"{path}: a KerasHub preset's {_HF_CONFIG} found but no {', '.join(lacking)}"
                )
            return family, fmt, config
        family = family_for_type(config.get("model_type"), file)
        for fmt in family.formats:
            if fmt.config_file == _HF_CONFIG and _has_weights(files, fmt):
                return family, fmt, config
        _refuse_pickles(path, files)
        raise CheckpointError(f"{path}: {_HF_CONFIG} found but no {_HF_WEIGHTS} or {INDEX}")
    found = _config_less(path, files)
    if found is not None:
        return found
    _refuse_pickles(path, files)
    raise CheckpointError(
        f"{path}: not a checkpoint folder (expected {_HF_CONFIG} + {_HF_WEIGHTS}, Google's "
        "bert_config.json + bert_model.ckpt.*, Google's ELECTRA checkpoint, or a KerasHub "
        f"preset's config.json + model.weights.h5 + metadata.json; found "
        f"{sorted(files) or 'nothing'})"
    )


def _keras_hub_format(config: dict, source: str) -> tuple[Family, Format]:
    """The family and format of a KerasHub preset, by its backbone's class name."""
    class_name = config.get("class_name")
    known = []
    for family in FAMILIES.values():
        for fmt in family.formats:
            if fmt.name == KERAS_HUB:
                if class_name in fmt.class_names:
                    return family, fmt
                known += fmt.class_names
    raise CheckpointError(
        f"{source}: a KerasHub preset of {short(class_name)}, which texkit does not load (it loads "
        f"presets of {', '.join(sorted(known))})"
    )


def _as_object(config: Any, source: str) -> dict:
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{source}: expected a JSON object")
    return dict(config)


def _refuse_pickles(path: str, files: set[str]) -> None:
    found = sorted(files.intersection(_PICKLES))
    if found:
        raise CheckpointError(
            f"{path}: only {', '.join(found)} found. texkit does not load pickle files "
            "(unpickling can run arbitrary code). Convert it to model.safetensors first, e.g. "
            "with the `safetensors` package in a trusted environment: load the state dict with "
            "torch and write it with safetensors.torch.save_file."
        )


def hparams_from_config(
    family: Family, config: Mapping[str, Any], source: str = "config", fmt: Format | None = None
) -> dict:
    """Translates a family's config dict into its module's validated hparams (a plain dict).

    Keys texkit does not use (``architectures``, ``bos_token_id``, ...) are ignored; a missing
    architecture key, a value of the wrong type or a variant texkit does not build is an error
    naming ``source``. So are epsilons outside (0, 1) (``family.epsilon_keys``) and token ids
    (``pad_token_id``, ``bos_token_id``, ``eos_token_id``, ``decoder_start_token_id``, whether
    texkit uses them or not) outside ``[0, vocab_size)``.
    """
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{source}: expected a JSON object")
    if fmt is not None and fmt.config_translate is not None:
        try:
            config = fmt.config_translate(dict(config))
        except CheckpointError as error:
            raise CheckpointError(f"{source}: {error}") from None
    if family.check_config is not None:
        family.check_config(config, source)
    if family.translate is not None:
        hparams = family.translate(config, source)
    else:
        hparams = _copy_keys(family, config, source)
    try:
        hparams = HParams(hparams, family.module.default_hparams()).todict()
    except HParamsError as error:
        raise CheckpointError(f"{source}: {error}") from None
    _check_ranges(family, config, hparams, source)
    return hparams


# Token ids a config may give; each must be a row of the word table.
_TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")


def _check_ranges(family: Family, config: Mapping, hparams: Mapping, source: str) -> None:
    for key in family.epsilon_keys:
        value = get_path(hparams, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise CheckpointError(
                f"{source}: {key}={short(value)}, but an epsilon lies between 0 and 1"
            )
    vocab_size = hparams.get("vocab_size")
    for key in _TOKEN_IDS:
        value = config.get(key)
        ids = value if isinstance(value, list) else [value]  # a list: several end tokens
        for token in ids:
            if token is None and value is None:
                continue
            if (
                isinstance(token, bool)
                or not isinstance(token, int)
                or not (isinstance(vocab_size, int) and 0 <= token < vocab_size)
            ):
                raise CheckpointError(
                    f"{source}: {key}={short(value)}, but a token id is an int in "
                    f"[0, vocab_size={short(vocab_size)})"
                )


def _copy_keys(family: Family, config: Mapping[str, Any], source: str) -> dict:
    hparams = {}
    for key in family.keys:
        if key in config:
            hparams[key] = config[key]
        elif key in family.config_defaults:
            hparams[key] = family.config_defaults[key]
        elif key in family.architecture_keys:
            raise CheckpointError(f"{source}: missing {key!r}")
    return hparams


def read_config(path: str | os.PathLike) -> tuple[Family, dict]:
    """The family of a checkpoint folder (or packaged checkpoint name) and its config as the
    family module's hparams."""
    path = resolve_checkpoint(path)
    family, fmt, config = inspect_folder(path)
    return family, hparams_from_config(family, config, config_source(path, fmt), fmt)


def merge_user_hparams(
    family: Family, config: dict, hparams: Any, source: str, assumed: tuple[str, ...] = ()
) -> dict:
    """A checkpoint's module hparams updated by a user's; contradictions are errors, except
    for the ``assumed`` keys (values the checkpoint does not determine), which a user sets."""
    if hparams is None:
        return config
    if isinstance(hparams, HParams):
        # Validated hparams hold every default, which would contradict any other architecture.
        raise TypeError(
            "give from_pretrained the hparams to change as a plain dict (e.g. "
            "{'hidden_dropout_prob': 0.2}), not validated HParams"
        )
    user = dict(hparams)
    for key in family.architecture_keys:
        if key in assumed:
            continue
        try:
            value = get_path(user, key)
        except (KeyError, TypeError):
            continue
        theirs = get_path(config, key)
        if value != theirs:
            raise HParamsError(
                f"{short(value)} contradicts the checkpoint's {key}={short(theirs)} ({source})", key
            )
    return _deep_merge(config, user)


def _deep_merge(base: Mapping, changes: Mapping) -> dict:
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            value = _deep_merge(merged[key], value)
        merged[key] = value
    return merged


def get_path(config: Mapping, path: str) -> Any:
    """The value at a dotted ``path`` of nested dicts."""
    node = config
    for part in path.split("."):
        node = node[part]
    return node


def set_path(config: Mapping, path: str, value: Any) -> dict:
    """A copy of ``config`` with ``value`` at the dotted ``path``."""
    head, _, rest = path.partition(".")
    copy = dict(config)
    copy[head] = set_path(config[head], rest, value) if rest else value
    return copy
