"""One loading mechanism for every pretrained family: checks before building, strict loading.

A family is data (:class:`~texkit.pretrained.family.Family`): the texkit class it builds, the
``model_type`` values of its configs, how a config translates to hparams, its folder formats
and its name tables. :mod:`~texkit.pretrained.folders` reads a folder and its config; this
module does the rest, the same way for all:

* **Configs.** A family keeps its config's key names as hparams, so the translation copies the
  keys texkit uses and checks them; a user's hparams may change dropout rates and names, and an
  architecture value that contradicts the checkpoint is an error.
* **Checks before building** (:mod:`~texkit.pretrained.checks`). The config's layer counts
  and sizes are compared with the weights' names and shapes (read from the safetensors header,
  the TF checkpoint index or the HDF5 metadata, no values), and the weights they imply with the
  size of the files: a config that contradicts its weights fails before anything is built.
* **Loading** is strict and all-or-nothing: every weight of the module (and of the heads being
  loaded) comes from exactly one entry, shapes agree, values are finite floats, and an entry under
  the module's own names that the table does not know is an error. Everything is read and
  checked before anything is assigned, one file and one entry at a time, then assigned in a
  second pass (:mod:`~texkit.pretrained.streamed_loading`; float16 and bfloat16 weights are cast
  to the variables' dtype), so loading holds the model and one shard, and after an error the
  model is exactly as it was. Entries outside the module (other heads, optimizer state) are
  reported, not loaded, as are those of an optional part the model was built without (the pooler
  of an encoder made with ``add_pooling_layer=False``, e.g. in a classifier that does not read
  it): ``LoadReport.unused`` lists them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from texkit import _compat, registry
from texkit.configurable import ModuleBase
from texkit.deprecation import deprecated_alias
from texkit.hparams import HParamsError
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import (
    CheckpointError,
    LoadReport,
    resolve_checkpoint,
)
from texkit.pretrained.checks import check_config_against_weights, reader_for
from texkit.pretrained.family import FAMILIES, Family, Format, family_of
from texkit.pretrained.folders import (
    config_source,
    get_path,
    hparams_from_config,
    inspect_folder,
    merge_user_hparams,
)
from texkit.pretrained.names import MODULE, holds_rows
from texkit.pretrained.streamed_loading import LoadPlan
from texkit.pretrained.tokenizers import tokenizer_from_pretrained

__all__ = [
    "encoder_from_pretrained",
    "from_pretrained",
    "load_checkpoint",
    "model_from_pretrained",
    "module_from_pretrained",
    "register_loaders",
    "tokenizer_from_pretrained",
]

logger = logging.getLogger(__name__)


def _kind(raw: Mapping) -> str:
    """What a raw config says the checkpoint is (a KerasHub preset: its backbone class)."""
    if "model_type" not in raw and "class_name" in raw:
        return f"KerasHub {short(raw['class_name'])}"
    return f"model_type {short(raw.get('model_type'))}"


# -- building from a folder ------------------------------------------------------------------


def _checked_config(cls: type, path: str) -> tuple[Family, Format, dict]:
    family, fmt, raw = inspect_folder(path)
    wanted = family_of(cls) if cls is not None else family
    source = config_source(path, fmt)
    if wanted.module is not family.module:
        raise CheckpointError(
            f"{source}: a {family.name} checkpoint ({_kind(raw)}), not "
            f"{wanted.name}: load it with {family.module.__name__}, or with "
            "texkit.pretrained.from_pretrained, which picks the class"
        )
    config = hparams_from_config(family, raw, source, fmt)
    check_config_against_weights(family, config, path, fmt)
    return family, fmt, config


def _merged(family: Family, fmt: Format, config: dict, hparams: Any, path: str) -> dict:
    """The checkpoint's hparams merged with the user's; the values the checkpoint does not
    determine (``fmt.assumed``) are the user's, or its release's rule, which is logged."""
    merged = merge_user_hparams(family, config, hparams, path, fmt.assumed)
    for key in fmt.assumed:
        if get_path(merged, key) == get_path(config, key):
            logger.warning(
                "%s: the checkpoint has no config; %s=%r follows its release's rule (give "
                "hparams={%r: ...} to from_pretrained if the model was trained otherwise)",
                path, key, get_path(config, key), key,
            )  # fmt: skip
    return merged


def module_from_pretrained(
    cls: type, path: Any, hparams: Any = None, *, allow_non_finite: bool = False, **kwargs: Any
) -> Any:
    """The one loader of every family: implements ``cls.from_pretrained`` for a family's module
    (``BERTEncoder``, ``GPT2Decoder``, ``T5EncoderDecoder``, ...) and for a model that holds one
    as its ``encoder`` (``BERTClassifier``, ``BERTPretrainer``: a family's ``models``).

    Checks the folder's config against its weights' shapes, builds ``cls`` from the config
    merged with ``hparams`` (which may change dropout rates and names; a value that
    contradicts the checkpoint's architecture is an error), then loads
    (:func:`load_checkpoint`; ``allow_non_finite``: see there). A model's encoder hparams are
    ``hparams["encoder"]`` merged in the same way, its ``encoder_type`` is the checkpoint's
    family class, and the heads the checkpoint has are loaded too. ``kwargs``: the class's own
    (Keras layer arguments).

    Raises:
        CheckpointError: a folder of another family than ``cls`` loads, or that cannot be
            loaded (see :func:`load_checkpoint`).
    """
    path = resolve_checkpoint(path)
    if _is_model(cls):
        module = _model(cls, path, hparams, **kwargs)
    else:
        family, fmt, config = _checked_config(cls, path)
        module = cls(_merged(family, fmt, config, hparams, path), **kwargs)
    module.load_report = _load(module, path, allow_non_finite, keep_previous=False)
    return module


def _is_model(cls: type) -> bool:
    """Whether ``cls`` holds a family module as its ``encoder`` (a family's ``models``)."""
    return issubclass(cls, tuple(m for f in FAMILIES.values() for m in f.models))


def _model(cls: type, path: str, hparams: Any, **kwargs: Any) -> Any:
    """A model whose ``encoder`` is the checkpoint's family module, built (not loaded)."""
    hparams = dict(hparams.todict() if hasattr(hparams, "todict") else hparams or {})
    family, fmt, config = _checked_config(None, path)
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
    hparams["encoder"] = _merged(family, fmt, config, hparams.get("encoder"), path)
    return cls(hparams, **kwargs)


encoder_from_pretrained = deprecated_alias(
    module_from_pretrained,
    "texkit.pretrained.loading.encoder_from_pretrained",
    "tx.pretrained.module_from_pretrained",
)
model_from_pretrained = deprecated_alias(
    module_from_pretrained,
    "texkit.pretrained.loading.model_from_pretrained",
    "tx.pretrained.module_from_pretrained",
)


def register_loaders() -> None:
    """Registers :func:`module_from_pretrained` as the checkpoint loader of every registered
    family's module and models (``texkit.pretrained`` calls it once its families are
    imported): for each, the class whose ``from_pretrained`` asks the registry (the BERT
    family's :class:`~texkit.modules.encoders.bert_family.BERTFamilyEncoder`), so that its
    subclasses find it."""
    for family in FAMILIES.values():
        for cls in (family.module, *family.models):
            asking = next((k for k in cls.__mro__ if "from_pretrained" in vars(k)), cls)
            registry.register_loader(asking, module_from_pretrained)


def from_pretrained(path: str | os.PathLike, hparams: Any = None, **kwargs: Any) -> Any:
    """The module a checkpoint folder holds, built from its config and loaded.

    The family comes from the folder (``config.json``'s ``model_type``; Google's BERT and ALBERT
    releases by their config files, its ELECTRA release by its checkpoint's entries); the result
    is that family's module (``BERTEncoder``, ``RoBERTaEncoder``, ``GPT2Decoder``, ...), as its
    own ``from_pretrained`` returns it. ``hparams`` and ``kwargs``: as there.

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


def _check_config_against_module(
    family: Family, fmt: Format, raw: Mapping, module: Any, path: str
) -> None:
    """Raises CheckpointError when the folder's config describes another architecture than the
    built ``module`` (another activation or epsilon loads without a shape mismatch, and would
    compute something else)."""
    source = config_source(path, fmt)
    config = hparams_from_config(family, raw, source, fmt)
    ours = module.hparams.todict()
    for key in family.architecture_keys:
        if key in fmt.assumed:
            continue
        try:
            mine, theirs = get_path(ours, key), get_path(config, key)
        except (KeyError, TypeError):
            continue
        if mine != theirs:
            raise CheckpointError(
                f"{source}: the checkpoint's {key}={short(theirs)}, but the model's is "
                f"{short(mine)}; "
                "nothing was loaded (build the model with from_pretrained to take the "
                "checkpoint's architecture)"
            )


def load_checkpoint(
    model: Any, path: str | os.PathLike, *, allow_non_finite: bool = False
) -> LoadReport:
    """Loads a checkpoint folder into ``model``, all or nothing.

    Args:
        model: a family module (:class:`~texkit.modules.BERTEncoder`,
            :class:`~texkit.modules.GPT2Decoder`, ...), or a model whose ``.encoder`` is one
            (e.g. :class:`~texkit.modules.BERTClassifier`); its heads (BERT's ``mlm_head`` and
            ``nsp_head``) load when the checkpoint has them.
        path: a checkpoint folder of the module's family, or the name of a packaged checkpoint
            (:func:`~texkit.pretrained.resolve_checkpoint`).
        allow_non_finite: load weights that hold NaN or infinite values; by default such a
            weight is an error (a corrupt or diverged checkpoint), and nothing is loaded.

    Returns:
        a :class:`~texkit.pretrained.LoadReport`.

    Raises:
        CheckpointError: a folder of another family, a config that describes another
            architecture than the model's (e.g. another ``hidden_act``), a missing or
            unreadable file, a missing or unknown variable, a shape mismatch, non-finite
            values, or a model with LoRA enabled or quantized layers (load first, then enable
            LoRA or quantize); the message names the key, the variables or the layer. The
            model is unchanged (see :mod:`~texkit.pretrained.streamed_loading`: the checks read
            every entry before anything is assigned, and a file that changes during loading is
            caught and the previous values restored).
    """
    return _load(model, path, allow_non_finite, keep_previous=True)


def _refuse_changed_layers(model: Any) -> None:
    """Raises CheckpointError naming the first layer of ``model`` with LoRA adapters or a
    quantized dtype policy: its ``kernel`` is then a computed tensor or an integer variable,
    which a checkpoint's float weights would not load into as they should."""
    for layer in _compat.sublayers(model, include_self=True):
        if getattr(layer, "lora_enabled", False):
            raise CheckpointError(
                f"{model.name}: {layer.path} has LoRA enabled; nothing was loaded (load the "
                "checkpoint first, then enable LoRA; or merge_lora before loading)"
            )
        policy = getattr(layer, "dtype_policy", None)
        mode = (
            getattr(layer, "quantization_mode", None)
            or getattr(policy, "quantization_mode", None)
            or getattr(layer, "_quantization_mode", None)  # a module texkit.tasks quantized
        )
        if mode is not None:
            raise CheckpointError(
                f"{model.name}: {layer.path} is quantized ({mode}); nothing was loaded (load "
                "the checkpoint into a float model first, then quantize)"
            )


def _load(model: Any, path: str | os.PathLike, allow_non_finite: bool, keep_previous: bool
          ) -> LoadReport:  # fmt: skip
    """:func:`load_checkpoint`; ``keep_previous``: save the model's values to restore them if
    assignment fails midway (not for a model that is thrown away then)."""
    path = resolve_checkpoint(path)
    family, module, owners = _parts(model)
    _refuse_changed_layers(model)
    found_family, fmt, raw = inspect_folder(path)
    if found_family.module is not family.module:
        raise CheckpointError(
            f"{path}: a {found_family.name} checkpoint ({_kind(raw)}), "
            f"but {type(module).__name__} loads {family.name} checkpoints"
        )
    family = found_family  # families that build one class (the Llama line) differ in tables
    _check_config_against_module(family, fmt, raw, module, path)
    plan = LoadPlan(family, fmt, reader_for(path, family, fmt), allow_non_finite)
    _ensure_built(model, module, owners)
    plan.take(module, family.name_table(module.hparams, MODULE))
    # Optional parts: absent from the checkpoint, they keep their initial weights (and are
    # reported); present, they load strictly like the rest. A part the model was built without
    # leaves its entries unused.
    heads, missing_heads = [], []
    for part, owner in owners.items():
        rows = family.name_table(module.hparams, part)
        if not holds_rows(owner, rows):
            plan.leave(rows)
        elif plan.has_any(rows):
            plan.take(owner, rows)
            heads.append(part)
        else:
            missing_heads.append(part)
    plan.refuse_unknown()
    file = plan.reader.file
    plan.load(model.name, keep_previous)
    unused = sorted(set(plan.reader.shapes) - plan.used)
    if missing_heads:
        logger.warning("%s: no %s in the checkpoint; left as initialized", file,
                       ", ".join(missing_heads))  # fmt: skip
    # The entries of a part the model was built without (a pooler nothing reads) are left by
    # choice: in the report, not in the log.
    unexpected = [name for name in unused if name not in plan.set_aside]
    if unexpected:
        logger.warning("%s: %d entries not loaded: %s", file, len(unexpected), unexpected[:10])
    return LoadReport(
        fmt.name, family.name, plan.loaded, heads, missing_heads, unused, path, dict(raw)
    )
