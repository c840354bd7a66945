"""One loading mechanism for every pretrained family: folders, configs, checks, strict loading.

A family is data (:class:`Family`): the texkit class it builds, the ``model_type`` values of its
configs, how a config translates to hparams, its folder formats and its name tables. This module
does the rest, the same way for all:

* **Folders.** A Hugging Face folder (``config.json`` + ``model.safetensors``) names its family
  in ``config.json``'s ``model_type``; Google's TF release of BERT (``bert_config.json`` +
  ``bert_model.ckpt.*``) is recognised by its files. A folder with only ``pytorch_model.bin``
  (or any other pickle) is refused: unpickling can run arbitrary code.
* **Configs.** A family keeps its config's key names as hparams, so the translation copies the
  keys texkit uses and checks them; a user's hparams may change dropout rates and names, and an
  architecture value that contradicts the checkpoint is an error.
* **Checks before building.** The config's sizes are compared with the weights' shapes (read
  from the safetensors header or the TF checkpoint index, no values): a config that contradicts
  its weights fails before anything is built.
* **Loading** is strict and all-or-nothing: every weight of the module (and of the heads being
  loaded) comes from exactly one entry, shapes agree, values are finite floats, and an entry under
  the module's own names that the table does not know is an error. Everything is read and
  checked before anything is assigned, so after an error the model is exactly as it was.
  Entries outside the module (other heads, optimizer state) are reported, not loaded.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.configurable import ModuleBase
from texkit.hparams import HParams, HParamsError
from texkit.pretrained.checkpoints import (
    HUGGINGFACE,
    CheckpointError,
    CheckpointReader,
    LoadReport,
    Row,
    assign_all_or_nothing,
    resolve_attribute,
    resolve_checkpoint,
    stored_shape,
    to_keras_layout,
)

__all__ = [
    "FAMILIES",
    "Family",
    "Format",
    "check_config_against_weights",
    "family_of",
    "from_pretrained",
    "hparams_from_config",
    "inspect_folder",
    "load_checkpoint",
    "merge_user_hparams",
    "read_config",
    "register_family",
]

logger = logging.getLogger(__name__)

_HF_CONFIG, _HF_WEIGHTS = "config.json", "model.safetensors"
_PICKLES = ("pytorch_model.bin", "model.pt", "model.ckpt.pt", "checkpoint.pt", "model.pkl")


@dataclass(frozen=True)
class Format:
    """One folder format of a family.

    Attributes:
        name: ``GOOGLE`` or ``HUGGINGFACE`` (the reader to use).
        config_file: the config's file name.
        weights: the weights' file name (a TF checkpoint: its prefix).
        skipped: entries that are not weights, or copies of loaded ones (never reported).
        own: entries that belong to the module (after the model prefix is removed): one the
            tables do not know is an error, not an unused entry.
        config_translate: what the format's configs mean in the family's terms, applied to a
            raw config first (Google's ``"gelu"`` is the tanh approximation); ``None``: as
            written.

    A TF checkpoint's ``weights`` may be ``"*"``: the one checkpoint in the folder, whatever
    its prefix (ALBERT's releases name theirs ``model.ckpt-best``).
    """

    name: str
    config_file: str
    weights: str
    skipped: re.Pattern
    own: re.Pattern
    config_translate: Callable[[dict], dict] | None = None


@dataclass(frozen=True)
class Family:
    """A pretrained family as data.

    Attributes:
        name: the family's name (``"bert"``).
        model_types: the ``model_type`` values of its Hugging Face configs.
        module: the texkit class it builds (e.g. :class:`~texkit.modules.RoBERTaEncoder`).
        formats: its folder formats, the first one found in a folder is used.
        config_keys: the hparams read from the config (the module's hparams less ``name``).
        architecture_keys: the hparams that define the architecture: required in a config, and
            a user's value must agree with the checkpoint's.
        config_defaults: values of keys a config may leave out (Google's BERT configs have no
            ``layer_norm_eps``).
        rows: ``rows(hparams, part)``: the name table of ``part`` (``"encoder"`` or an optional
            part) for the module's validated hparams.
        optional_parts: parts loaded when the checkpoint has them, else left as initialized and
            reported (``"pooler"``; heads: ``"mlm"``, ``"nsp"``), with the attribute that holds
            each (``""``: the module itself).
        prefixes: Hugging Face model prefixes that may precede names (``"bert."``).
        sized: ``(hparams paths, attribute)``: a weight whose Keras shape is those hparams'
            values, checked before building (paths are dotted in nested hparams).
        num_layers_key: the hparams path of the number of layers, checked against the layer
            indices in the names (``None``: not checked, e.g. a shared block).
        layer_pattern: finds a layer index in an entry's name (group 1).
        more_layer_counts: more ``(hparams path, pattern)`` pairs checked the same way (a
            decoder's layers).
        check_config: more checks of a raw config (``(config, source)``), or ``None``.
        translate: ``(config, source) -> hparams`` for a module whose hparams are not its
            config's keys (GPT-2's); ``None``: the ``config_keys`` are copied.
    """

    name: str
    model_types: tuple[str, ...]
    module: type
    formats: tuple[Format, ...]
    config_keys: tuple[str, ...]
    architecture_keys: tuple[str, ...]
    rows: Callable[[Any, str], list[Row]]
    optional_parts: dict[str, str] = field(default_factory=dict)
    prefixes: tuple[str, ...] = ()
    config_defaults: dict[str, Any] = field(default_factory=dict)
    sized: tuple[tuple[tuple[str, ...], str], ...] = ()
    num_layers_key: str | None = None
    layer_pattern: re.Pattern = re.compile(r"(?:^|[./])layer[._](\d+)[./]")
    more_layer_counts: tuple[tuple[str, re.Pattern], ...] = ()
    check_config: Callable[[Mapping, str], None] | None = None
    translate: Callable[[Mapping, str], dict] | None = None


FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Adds ``family`` to :data:`FAMILIES` (by name); its ``model_types`` must be new."""
    for other in FAMILIES.values():
        if other.name != family.name and set(other.model_types) & set(family.model_types):
            raise ValueError(f"{family.name} and {other.name} both claim {other.model_types}")
    FAMILIES[family.name] = family
    return family


def family_of(module_class: type) -> Family:
    """The family whose module is ``module_class`` or its nearest base class."""
    for klass in module_class.__mro__:
        for family in FAMILIES.values():
            if family.module is klass:
                return family
    raise TypeError(f"no pretrained family builds {module_class.__name__}")


def _supported() -> str:
    return ", ".join(sorted(t for f in FAMILIES.values() for t in f.model_types))


def _family_for_type(model_type: Any, source: str) -> Family:
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    raise CheckpointError(
        f"{source}: model_type {model_type!r} is not a family texkit loads (supported: "
        f"{_supported()})"
    )


# -- folders and configs ---------------------------------------------------------------------


def _read_json(file: str) -> Any:
    try:
        with tf.io.gfile.GFile(file) as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{file}: not valid JSON ({error})") from None


def _has_weights(files: set[str], fmt: Format) -> bool:
    if fmt.name != HUGGINGFACE:  # a TF checkpoint: its prefix names the files
        if fmt.weights == "*":
            return any(f.endswith(".index") for f in files)
        return any(f.startswith(fmt.weights + ".") for f in files)
    return fmt.weights in files


def _weights_file(path: str, fmt: Format) -> str:
    """The weights of a folder in format ``fmt`` (a TF checkpoint: its prefix)."""
    if fmt.weights != "*":
        return os.path.join(path, fmt.weights)
    prefixes = sorted(
        f[: -len(".index")] for f in tf.io.gfile.listdir(path) if f.endswith(".index")
    )
    if len(prefixes) != 1:
        raise CheckpointError(
            f"{path}: expected one TF checkpoint (a *.index file), found {prefixes or 'none'}"
        )
    return os.path.join(path, prefixes[0])


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
                    weights = "TF checkpoint" if fmt.weights == "*" else fmt.weights
                    raise CheckpointError(
                        f"{path}: {fmt.config_file} found but no {weights}.index/data"
                    )
                config = _read_json(os.path.join(path, fmt.config_file))
                return family, fmt, _as_object(config, os.path.join(path, fmt.config_file))
    if _HF_CONFIG in files:
        file = os.path.join(path, _HF_CONFIG)
        config = _as_object(_read_json(file), file)
        family = _family_for_type(config.get("model_type"), file)
        for fmt in family.formats:
            if fmt.config_file == _HF_CONFIG and _has_weights(files, fmt):
                return family, fmt, config
        _refuse_pickles(path, files)
        raise CheckpointError(f"{path}: {_HF_CONFIG} found but no {_HF_WEIGHTS}")
    _refuse_pickles(path, files)
    raise CheckpointError(
        f"{path}: not a checkpoint folder (expected {_HF_CONFIG} + {_HF_WEIGHTS}, or Google's "
        f"bert_config.json + bert_model.ckpt.*; found {sorted(files) or 'nothing'})"
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
    naming ``source``.
    """
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{source}: expected a JSON object")
    if fmt is not None and fmt.config_translate is not None:
        config = fmt.config_translate(dict(config))
    if family.check_config is not None:
        family.check_config(config, source)
    if family.translate is not None:
        hparams = family.translate(config, source)
    else:
        hparams = _copy_keys(family, config, source)
    try:
        return HParams(hparams, family.module.default_hparams()).todict()
    except HParamsError as error:
        raise CheckpointError(f"{source}: {error}") from None


def _copy_keys(family: Family, config: Mapping[str, Any], source: str) -> dict:
    hparams = {}
    for key in family.config_keys:
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
    return family, hparams_from_config(family, config, os.path.join(path, fmt.config_file), fmt)


def merge_user_hparams(family: Family, config: dict, hparams: Any, source: str) -> dict:
    """A checkpoint's module hparams updated by a user's; contradictions are errors."""
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
        try:
            value = _get(user, key)
        except (KeyError, TypeError):
            continue
        if value != _get(config, key):
            raise HParamsError(
                f"{value!r} contradicts the checkpoint's {key}={_get(config, key)!r} ({source})",
                key,
            )
    return _deep_merge(config, user)


def _deep_merge(base: Mapping, changes: Mapping) -> dict:
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            value = _deep_merge(merged[key], value)
        merged[key] = value
    return merged


# -- readers ---------------------------------------------------------------------------------


def _reader(path: str, family: Family, fmt: Format) -> CheckpointReader:
    return CheckpointReader(
        _weights_file(path, fmt),
        fmt.name,
        lambda name: bool(fmt.skipped.search(_strip_prefix(family, name))),
    )


def _strip_prefix(family: Family, name: str) -> str:
    for prefix in family.prefixes:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _candidates(family: Family, row: Row, fmt: str) -> list[str]:
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


def _get(config: Mapping, path: str) -> Any:
    """The value at a dotted ``path`` of nested dicts."""
    node = config
    for part in path.split("."):
        node = node[part]
    return node


def _set(config: Mapping, path: str, value: Any) -> dict:
    """A copy of ``config`` with ``value`` at the dotted ``path``."""
    head, _, rest = path.partition(".")
    copy = dict(config)
    copy[head] = _set(config[head], rest, value) if rest else value
    return copy


def check_config_against_weights(
    family: Family, config: Mapping[str, Any], path: str, fmt: Format | None = None
) -> None:
    """Raises :class:`CheckpointError` naming the config key when the checkpoint's config and
    its weights disagree on a size (the family's ``sized`` weights, the number of layers).
    Only the weights' shapes are read."""
    if fmt is None:
        _, fmt, _ = inspect_folder(path)
    reader = _reader(path, family, fmt)
    one_layer = config
    for key in (family.num_layers_key, *(k for k, _ in family.more_layer_counts)):
        if key is not None:  # the sized weights are in the first block
            one_layer = _set(one_layer, key, 1)
    rows = {row.attribute: row for row in family.rows(one_layer, "encoder")}
    for keys, attribute in family.sized:
        row = rows[attribute]
        found = [n for n in _candidates(family, row, fmt.name) if n in reader.shapes]
        if not found:
            continue  # the loader names what is missing
        sizes = tuple(_get(config, key) for key in keys)
        expected = stored_shape(sizes, row.layout, fmt.name, row.split)
        stored = reader.shapes[found[0]]
        if tuple(stored) != expected:
            said = ", ".join(f"{key}={_get(config, key)!r}" for key in keys)
            raise CheckpointError(
                f"{path}: the config says {said}, but {found[0]!r} has shape {list(stored)} "
                "(a config that contradicts its weights; nothing was built)"
            )
    counts = list(family.more_layer_counts)
    if family.num_layers_key is not None:
        counts.insert(0, (family.num_layers_key, family.layer_pattern))
    for key, pattern in counts:
        if _get(config, key) is None:
            continue  # a default the module derives from another key
        layers = {int(m.group(1)) for name in reader.shapes for m in [pattern.search(name)] if m}
        if layers and layers != set(range(_get(config, key))):
            raise CheckpointError(
                f"{path}: the config says {key}={_get(config, key)!r}, but the checkpoint holds "
                f"layers {min(layers)}..{max(layers)} ({len(layers)} of them; nothing was built)"
            )


# -- building from a folder ------------------------------------------------------------------


def _checked_config(cls: type, path: str) -> tuple[Family, Format, dict]:
    family, fmt, raw = inspect_folder(path)
    wanted = family_of(cls) if cls is not None else family
    source = os.path.join(path, fmt.config_file)
    if wanted is not family:
        raise CheckpointError(
            f"{source}: a {family.name} checkpoint (model_type {raw.get('model_type')!r}), not "
            f"{wanted.name}: load it with {family.module.__name__}, or with "
            "texkit.pretrained.from_pretrained, which picks the class"
        )
    config = hparams_from_config(family, raw, source, fmt)
    check_config_against_weights(family, config, path, fmt)
    return family, fmt, config


def encoder_from_pretrained(
    cls: type, path: Any, hparams: Any = None, *, allow_non_finite: bool = False, **kwargs: Any
) -> Any:
    """Implements a family module's ``from_pretrained``: checks the config against the weights'
    shapes, builds from the config, then loads (``allow_non_finite``: see
    :func:`load_checkpoint`)."""
    path = resolve_checkpoint(path)
    family, _, config = _checked_config(cls, path)
    module = cls(merge_user_hparams(family, config, hparams, path), **kwargs)
    module.load_report = load_checkpoint(module, path, allow_non_finite=allow_non_finite)
    return module


def model_from_pretrained(
    cls: type, path: Any, hparams: Any = None, *, allow_non_finite: bool = False, **kwargs: Any
) -> Any:
    """Implements ``from_pretrained`` of a model whose ``encoder`` is a family module
    (``BERTClassifier``, ``BERTPretrainer``): ``encoder_type`` is the checkpoint's family
    class, the encoder's hparams come from its config (``hparams["encoder"]`` may only agree
    with them, or set dropout rates and names); the encoder and the heads the checkpoint has
    are loaded."""
    path = resolve_checkpoint(path)
    hparams = dict(hparams.todict() if hasattr(hparams, "todict") else hparams or {})
    family, _, config = _checked_config(None, path)
    encoder_type = family.module.__name__
    accepted = getattr(cls, "ENCODER_TYPES", None)
    if accepted is not None and encoder_type not in accepted:
        raise CheckpointError(
            f"{path}: a {family.name} checkpoint; {cls.__name__} takes only "
            f"{', '.join(accepted)} checkpoints"
        )
    given = hparams.get("encoder_type", encoder_type)
    if given != encoder_type:
        raise HParamsError(
            f"{given!r} contradicts the checkpoint's family ({encoder_type}, {path})",
            "encoder_type",
        )
    if "encoder_type" in cls.default_hparams():
        hparams["encoder_type"] = encoder_type
    hparams["encoder"] = merge_user_hparams(family, config, hparams.get("encoder"), path)
    model = cls(hparams, **kwargs)
    model.load_report = load_checkpoint(model, path, allow_non_finite=allow_non_finite)
    return model


def from_pretrained(path: str | os.PathLike, hparams: Any = None, **kwargs: Any) -> Any:
    """The module a checkpoint folder holds, built from its config and loaded.

    The family comes from the folder (``config.json``'s ``model_type``; Google's BERT release by
    its files); the result is that family's module (``BERTEncoder``, ``RoBERTaEncoder``, ...),
    as its own ``from_pretrained`` returns it. ``hparams`` and ``kwargs``: as there.

    Raises:
        CheckpointError: the folder is not a checkpoint texkit loads; an unknown ``model_type``
            names the supported ones.
    """
    path = resolve_checkpoint(path)
    family, _, _ = inspect_folder(path)
    return family.module.from_pretrained(path, hparams, **kwargs)


# -- loading ---------------------------------------------------------------------------------


def _parts(model: Any) -> tuple[Family, Any, dict[str, Any]]:
    """The family, the family module inside ``model`` and the optional parts' owners."""
    modules = tuple(f.module for f in FAMILIES.values())
    module = model if isinstance(model, modules) else getattr(model, "encoder", None)
    if not isinstance(module, modules):
        raise TypeError(
            f"expected a pretrained family's module ({', '.join(m.__name__ for m in modules)}) "
            f"or a model with one as .encoder, got {type(model).__name__}"
        )
    family = family_of(type(module))
    owners = {}
    for part, attribute in family.optional_parts.items():
        owner = module if not attribute else getattr(model, attribute, None)
        if owner is not None and (owner is module or model is not module):
            owners[part] = owner
    return family, module, owners


def _ensure_built(model: Any, module: Any, owners: Mapping[str, Any]) -> None:
    """Creates the weights to load into.

    A texkit model (``BERTClassifier``, ``BERTPretrainer``) is built whole, on ``input_ids``
    shapes, so that none of its weights appears later (e.g. after an optimizer was built for its
    variables). Another model only gets the family module and heads built: Keras builds the rest
    from data, as usual.
    """
    if isinstance(model, ModuleBase) and not model.built:
        model.build((None, None))
    if not module.built:
        module.build((None, None))
    for owner in owners.values():
        if not owner.built:
            owner.build((None, None, module.output_size))


def load_checkpoint(
    model: Any, path: str | os.PathLike, *, allow_non_finite: bool = False
) -> LoadReport:
    """Loads a checkpoint folder into ``model``, all or nothing.

    Args:
        model: a family module (:class:`~texkit.modules.BERTEncoder`,
            :class:`~texkit.modules.RoBERTaEncoder`, ...), or a model whose ``.encoder`` is one
            (e.g. :class:`~texkit.modules.BERTClassifier`); its heads (BERT's ``mlm_head`` and
            ``nsp_head``) load when the checkpoint has them.
        path: a checkpoint folder of the module's family, or the name of a packaged checkpoint
            (:func:`~texkit.pretrained.resolve_checkpoint`).
        allow_non_finite: load weights that hold NaN or infinite values; by default such a
            weight is an error (a corrupt or diverged checkpoint), and nothing is loaded.

    Returns:
        a :class:`~texkit.pretrained.LoadReport`.

    Raises:
        CheckpointError: a folder of another family, a missing or unreadable file, a missing or
            unknown variable, a shape mismatch, or non-finite values; the message names the
            variables. The model is unchanged.
    """
    path = resolve_checkpoint(path)
    family, module, owners = _parts(model)
    found_family, fmt, raw = inspect_folder(path)
    if found_family is not family:
        raise CheckpointError(
            f"{path}: a {found_family.name} checkpoint (model_type {raw.get('model_type')!r}), "
            f"but {type(module).__name__} loads {family.name} checkpoints"
        )
    reader = _reader(path, family, fmt)
    _ensure_built(model, module, owners)
    report = LoadReport(format=fmt.name, family=family.name)
    plan: list[tuple[Any, np.ndarray]] = []
    problems: list[str] = []
    used: set[str] = set()

    def take(root: Any, rows: Iterable[Row]) -> None:
        for row in rows:
            variable = resolve_attribute(root, row.attribute)
            candidates = _candidates(family, row, fmt.name)
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
            expected = stored_shape(variable.shape, row.layout, fmt.name, row.split)
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
            value = to_keras_layout(value, row.layout, fmt.name, row.split)
            value = value.astype(variable.dtype)
            plan.append((variable, value))
            if name not in report.loaded:  # a split entry fills several variables
                report.loaded.append(name)

    hparams = module.hparams
    take(module, family.rows(hparams, "encoder"))
    # Optional parts: absent from the checkpoint, they keep their initial weights (and are
    # reported); present, they load strictly like the rest.
    for part, owner in owners.items():
        rows = family.rows(hparams, part)
        if any(c in reader.shapes for row in rows for c in _candidates(family, row, fmt.name)):
            take(owner, rows)
            report.heads.append(part)
        else:
            report.missing_heads.append(part)
    for name in sorted(set(reader.shapes) - used):
        if fmt.own.search(_strip_prefix(family, name)):
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
