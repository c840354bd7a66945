"""A pretrained family as data: its module, configs, folder formats and name table.

:class:`Family` and :class:`Format` describe a family (the BERT family's are in
:mod:`texkit.pretrained.bert`, GPT-2's and T5's in their modules); :func:`register_family` adds
one to :data:`FAMILIES`, where folders (:mod:`texkit.pretrained.folders`) and loading
(:mod:`texkit.pretrained.loading`) find it, and ``texkit.pretrained`` registers the one loader
for the family's classes. A new family is one file: see ``docs/guide/adding_a_family.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from texkit.deprecation import warn_deprecated
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import HUGGINGFACE, CheckpointError, Row
from texkit.pretrained.names import MODULE

__all__ = [
    "FAMILIES",
    "Family",
    "Format",
    "HFExport",
    "family_for_type",
    "family_of",
    "huggingface_format",
    "register_family",
]


@dataclass(frozen=True)
class Format:
    """One folder format of a family.

    Attributes:
        name: ``GOOGLE``, ``HUGGINGFACE``, ``OPENAI`` or ``KERAS_HUB`` (the reader to use).
        config_file: the config's file name; ``None``: the release has no config (see
            ``config_from_shapes``).
        weights: the weights' files, every one needed (a TF checkpoint: its prefix); a string
            is one file.
        skipped: entries that are not weights, or copies of loaded ones (never reported).
        own: entries that belong to the module (after the model prefix is removed): one the
            tables do not know is an error, not an unused entry.
        config_translate: what the format's configs mean in the family's terms, applied to a
            raw config first (Google's ``"gelu"`` is the tanh approximation); ``None``: as
            written.
        class_names: ``KERAS_HUB``: the backbone classes (``config.json``'s ``class_name``,
            e.g. ``"BertBackbone"``) whose presets the format loads.
        signature: a release without a config: an entry name that only its checkpoints have
            (``"electra/embeddings/word_embeddings"``), which picks the format in a folder that
            has no config file.
        config_from_shapes: a release without a config: ``(shapes, source) -> config``, the
            family's raw config from the checkpoint's ``{name: shape}`` (read from its index,
            no values).
        assumed: the keys of such a config that the shapes do not determine (the number of
            attention heads) and that follow the release's own rule; a user's hparams may set
            them (every other architecture key must agree with the checkpoint).
        layer_pattern: finds a layer index in an entry's name in this format (group 1; a match
            without it is layer 0, as KerasHub names its first block); ``None``: the family's.

    A TF checkpoint's ``weights`` may be ``"*"``: the one checkpoint in the folder, whatever
    its prefix (ALBERT's releases name theirs ``model.ckpt-best``).
    """

    name: str
    config_file: str | None
    weights: tuple[str, ...] | str
    skipped: re.Pattern
    own: re.Pattern
    config_translate: Callable[[dict], dict] | None = None
    class_names: tuple[str, ...] = ()
    signature: str | None = None
    config_from_shapes: Callable[[Mapping[str, list[int]], str], dict] | None = None
    assumed: tuple[str, ...] = ()
    layer_pattern: re.Pattern | None = None

    def __post_init__(self) -> None:
        if isinstance(self.weights, str):
            object.__setattr__(self, "weights", (self.weights,))


def huggingface_format(skipped: re.Pattern, own: re.Pattern, **kwargs: Any) -> Format:
    """A Hugging Face folder: ``config.json`` and ``model.safetensors`` (``kwargs``: the other
    fields of :class:`Format`)."""
    return Format(HUGGINGFACE, "config.json", ("model.safetensors",), skipped, own, **kwargs)


@dataclass(frozen=True)
class HFExport:
    """How a family's module is written as a Hugging Face folder
    (:func:`~texkit.pretrained.save_pretrained`).

    Attributes:
        classes: ``{model_type: transformers class}`` of the folders written (``{"bert":
            "BertModel"}``); a module loaded from a folder of one of these ``model_type`` values
            keeps it, any other gets the first.
        config: ``config(hparams, source) -> dict``: the family's ``config.json`` keys from the
            module's validated hparams; ``source`` is the config the module was loaded from
            (``{}``: none), whose keys texkit does not model carry over.
        prefix: written before every name of the module's table (``"model."``); the rows that
            are not ``prefixed`` (an LM head) have none.
        generates: the model generates text (a ``generation_config.json`` is written).
        reads_back: ``reads_back(hparams) -> hparams``: the module's hparams as the written
            config reads back, where the config spells a value that computes the same another
            way (Gemma 2's scale); ``None``: as they are.
    """

    classes: Mapping[str, str]
    config: Callable[[Mapping[str, Any], Mapping[str, Any]], dict]
    prefix: str = ""
    generates: bool = False
    reads_back: Callable[[dict], dict] | None = None


@dataclass(frozen=True, kw_only=True)
class Family:
    """A pretrained family as data.

    Attributes:
        name: the family's name (``"bert"``).
        model_types: the ``model_type`` values of its Hugging Face configs (by default its
            ``name``).
        module: the texkit class it builds (e.g. :class:`~texkit.modules.RoBERTaEncoder`).
        formats: its folder formats, the first one found in a folder is used.
        config_keys: the hparams read from the config; ``None``: the module's hparams less
            ``name`` (a family that keeps its config's key names).
        architecture_keys: the hparams that define the architecture: required in a config, and
            a user's value must agree with the checkpoint's.
        config_defaults: values of keys a config may leave out (Google's BERT configs have no
            ``layer_norm_eps``).
        name_table: ``name_table(hparams, part)``: the rows (:class:`~texkit.pretrained.names.
            Row`, written with a :class:`~texkit.pretrained.names.NameTable`) of ``part``
            (:data:`~texkit.pretrained.names.MODULE`, or an optional part) for the module's
            validated hparams.
        optional_parts: parts loaded when the checkpoint has them, else left as initialized and
            reported (``"pooler"``; heads: ``"mlm"``, ``"nsp"``), with the attribute that holds
            each (``""``: the module itself).
        models: more classes that the family's checkpoints load, each holding the family's
            module as its ``encoder`` (:class:`~texkit.modules.BERTClassifier`).
        prefixes: Hugging Face model prefixes that may precede names (``"bert."``).
        sized: ``(hparams paths, attribute)``: a weight whose Keras shape is those hparams'
            values, checked before building (paths are dotted in nested hparams; a tuple of
            paths is one dimension, their product, as T5's ``num_heads * d_kv``). An attribute
            of a block (``blocks.0.``) stands for the same weight of every block. Together they
            should cover the module's large weights: what they add up to is compared with the
            size of the weights' files before anything is built.
        num_layers_key: the hparams path of the number of layers, checked against the layer
            indices in the names (``None``: not checked, e.g. a shared block).
        layer_pattern: finds a layer index in an entry's name (group 1).
        more_layer_counts: more ``(hparams path, pattern)`` pairs checked the same way (a
            decoder's layers); a path whose value is ``None`` counts as many layers as
            ``num_layers_key`` says (T5's ``num_decoder_layers``).
        epsilon_keys: hparams paths of epsilons (layer norms), which must lie in (0, 1).
        check_config: more checks of a raw config (``(config, source)``), or ``None``.
        translate: ``(config, source) -> hparams`` for a module whose hparams are not its
            config's keys (GPT-2's); ``None``: the ``config_keys`` are copied.
        tokenizer: the family's in-graph tokenizer class, made from a checkpoint folder by its
            ``from_pretrained(path, **kwargs)`` (``None``: texkit has none for it).
        tokenizer_options: arguments given to the tokenizer's ``from_pretrained`` before the
            user's (``{"style": "roberta"}``).
        export: how the module is written as a Hugging Face folder (``None``: it is not).
    """

    name: str
    model_types: tuple[str, ...] = ()
    module: type
    formats: tuple[Format, ...]
    architecture_keys: tuple[str, ...]
    name_table: Callable[[Any, str], list[Row]]
    config_keys: tuple[str, ...] | None = None
    optional_parts: dict[str, str] = field(default_factory=dict)
    models: tuple[type, ...] = ()
    prefixes: tuple[str, ...] = ()
    config_defaults: dict[str, Any] = field(default_factory=dict)
    sized: tuple[tuple[tuple[str | tuple[str, ...], ...], str], ...] = ()
    num_layers_key: str | None = None
    layer_pattern: re.Pattern = re.compile(r"(?:^|[./])layer[._](\d+)[./]")
    more_layer_counts: tuple[tuple[str, re.Pattern], ...] = ()
    epsilon_keys: tuple[str, ...] = ()
    check_config: Callable[[Mapping, str], None] | None = None
    translate: Callable[[Mapping, str], dict] | None = None
    tokenizer: type | None = None
    tokenizer_options: dict[str, Any] = field(default_factory=dict)
    export: HFExport | None = None

    def __post_init__(self) -> None:
        if not self.model_types:
            object.__setattr__(self, "model_types", (self.name,))

    def rows(self, hparams: Any, part: str) -> list[Row]:
        """Deprecated: use :attr:`name_table` (whose module part is ``"module"``, not
        ``"encoder"``)."""
        warn_deprecated("Family.rows", "Family.name_table")
        return self.name_table(hparams, MODULE if part == "encoder" else part)

    @property
    def keys(self) -> tuple[str, ...]:
        """The hparams read from a config (:attr:`config_keys`, or the module's less ``name``)."""
        if self.config_keys is not None:
            return self.config_keys
        return tuple(k for k in self.module.default_hparams() if k != "name")


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


def family_for_type(model_type: Any, source: str) -> Family:
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    raise CheckpointError(
        f"{source}: model_type {short(model_type)} is not a family texkit loads (supported: "
        f"{_supported()})"
    )
