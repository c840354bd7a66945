"""The contract of every hparams-configured texkit class: ``Configurable`` and ``ModuleBase``.

A configurable class declares

* ``default_hparams()``: a classmethod returning a plain nested dict that always has ``"name"``;
* ``HPARAMS_DOC``: one line of documentation per hyperparameter, keyed by dotted path, next to
  the defaults it documents.

From these two, :class:`Configurable` appends a table of the hyperparameters (path, default,
meaning) to the class docstring when the class is defined, so the documentation cannot drift from
the defaults; :func:`undocumented_hparams` lets a test check that every key has its line.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import keras

from texkit import _compat, registry
from texkit.errors import MAX_DEPTH, HParamsError, check_depth
from texkit.hparams import HParams

__all__ = [
    "Configurable",
    "ModuleBase",
    "hparams_paths",
    "hparams_table",
    "register_quantizer",
    "undocumented_hparams",
]


def _is_leaf(value: Any) -> bool:
    # Free-form dicts ({} or a {type, kwargs} pair) are documented as one entry.
    return not isinstance(value, Mapping) or not value or ("type" in value and "kwargs" in value)


def hparams_paths(defaults: Mapping, prefix: str = "") -> list[str]:
    """The dotted paths that need a line of documentation, in declaration order."""
    paths = []
    for key, value in defaults.items():
        path = f"{prefix}.{key}" if prefix else key
        if _is_leaf(value):
            paths.append(path)
            if isinstance(value, Mapping) and value:
                extra = {k: v for k, v in value.items() if k not in ("type", "kwargs")}
                paths.extend(hparams_paths(extra, path))
        else:
            paths.extend(hparams_paths(value, path))
    return paths


def _lookup(defaults: Mapping, path: str) -> Any:
    node: Any = defaults
    for key in path.split("."):
        node = node[key]
    return node


def _format_default(value: Any) -> str:
    if isinstance(value, Mapping) and "type" in value and "kwargs" in value:
        kwargs = ", ".join(f"{k}: {v!r}" for k, v in value["kwargs"].items())
        return f"{{type: {value['type']}, kwargs: {{{kwargs}}}}}"
    return repr(value)


def hparams_table(defaults: Mapping, docs: Mapping[str, str]) -> str:
    """The hyperparameters' table: one entry per hyperparameter, its default and its meaning.

    A reStructuredText definition list, which reads as plain text too (``help(cls)``)::

        Hyperparameters (``default_hparams()``; documented line by line):

        ``dim = 100``
            Size of each embedding vector.
    """
    lines = ["Hyperparameters (``default_hparams()``; documented line by line):", ""]
    for path in hparams_paths(defaults):
        default = _format_default(_lookup(defaults, path))
        lines.append(f"``{path} = {default}``")
        lines.append(f"    {docs.get(path, '(undocumented)')}")
    return "\n".join(lines)


def undocumented_hparams(cls: type) -> tuple[list[str], list[str]]:
    """(paths without a line in ``cls.HPARAMS_DOC``, lines for paths that do not exist)."""
    paths = hparams_paths(cls.default_hparams())
    docs = cls.HPARAMS_DOC
    return [p for p in paths if p not in docs], [p for p in docs if p not in paths]


def _named_arguments(cls: type, args: tuple, kwargs: dict) -> Iterator[tuple[str, Any]]:
    """``(name, value)`` of the arguments of ``cls(*args, **kwargs)`` (by position when they do
    not fit the constructor's signature, which the constructor then reports)."""
    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except (TypeError, ValueError):
        yield from ((f"#{index}", value) for index, value in enumerate(args))
        yield from kwargs.items()
        return
    for name, value in list(bound.arguments.items())[1:]:
        if (
            isinstance(value, dict)
            and bound.signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD
        ):
            yield from value.items()
        elif bound.signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            yield from ((f"{name}[{index}]", item) for index, item in enumerate(value))
        else:
            yield name, value


class Configurable:
    """Mixin for hparams-configured classes: defaults, documentation, ``self.hparams``."""

    HPARAMS_DOC: ClassVar[dict[str, str]] = {"name": "Name of the object."}

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if "default_hparams" in cls.__dict__ and cls.__doc__ is not None:
            table = hparams_table(cls.default_hparams(), cls.HPARAMS_DOC)
            cls.__doc__ = inspect.cleandoc(cls.__doc__) + "\n\n" + table + "\n"

    @classmethod
    def default_hparams(cls) -> dict:
        """The default hyperparameters, a plain nested dict with ``"name"``."""
        return {"name": "configurable"}

    @classmethod
    def make_hparams(cls, hparams: Mapping | None) -> HParams:
        """Merges and validates user ``hparams`` against :meth:`default_hparams`."""
        return HParams(hparams, cls.default_hparams())

    @property
    def hparams(self) -> HParams:
        """The object's validated, read-only :class:`~texkit.HParams`."""
        return self._hparams


class _ShallowArguments:
    """Checks the depth of a layer's constructor arguments before Keras' ``Layer.__new__`` walks
    them recursively (for its automatic config): hparams nested a thousand levels deep would end
    there in a RecursionError. (A mixin after :class:`ModuleBase` in the MRO, so that
    ``inspect.signature`` of a module class still shows its ``__init__``.)"""

    def __new__(cls, *args: Any, **kwargs: Any):
        for name, value in _named_arguments(cls, args, kwargs):
            try:
                check_depth(value)
            except HParamsError as error:
                if name == "hparams":
                    raise
                raise ValueError(
                    f"{cls.__name__}: the argument {name} nests deeper than {MAX_DEPTH} levels "
                    f"(at {error.path})"
                ) from None
        return super().__new__(cls, *args, **kwargs)


class ModuleBase(Configurable, _ShallowArguments, keras.layers.Layer):
    """Base class of texkit modules: a Keras layer configured by hparams.

    * ``__init__(hparams=None, **kwargs)`` merges ``hparams`` into :meth:`default_hparams`
      (strictly, see :class:`~texkit.HParams`) and passes ``hparams.name`` to Keras as the layer
      name. When the name is left at its default, Keras numbers repeated names
      (``word_embedder``, ``word_embedder_1``) so several modules fit in one model.
    * ``get_config()`` returns the hparams (plus the Keras base config and the constructor's
      other arguments), so ``keras.saving`` round-trips every module and every model made of them.
    * ``call(..., training=None)`` follows Keras' ``training`` flag; there is no global mode.

    Subclasses define ``default_hparams()`` and ``HPARAMS_DOC``, create weights in ``build`` and
    compute in ``call``; classes defined inside ``texkit`` register themselves under their class
    name, for ``type:`` in configs and for ``keras.saving``; an abstract base, or a part
    its owner builds, says ``REGISTERED = False`` and is not registered.
    """

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        ours = cls.__module__.split(".")[0] == "texkit"
        # texkit's classes save as "texkit>Name"; a user's as "<its module>>Name", so two user
        # classes of the same name in different modules never overwrite each other.
        package = "texkit" if ours else cls.__module__
        previous = keras.saving.get_registered_object(f"{package}>{cls.__name__}")
        if previous is not None and previous.__qualname__ != cls.__qualname__:
            raise TypeError(
                f"{cls.__module__}.{cls.__qualname__}: Keras already has {package}>{cls.__name__} "
                f"for {previous.__module__}.{previous.__qualname__}; rename one of them"
            )
        keras.saving.register_keras_serializable(package=package)(cls)
        # A class whose own body says REGISTERED = False (an abstract base, or a part its owner
        # builds) is no type a config can name.
        if ours and not cls.__name__.startswith("_") and cls.__dict__.get("REGISTERED", True):
            registry.register(cls)

    def __init__(self, hparams: Mapping | HParams | None = None, **kwargs: Any):
        hp = self.make_hparams(hparams)
        name = kwargs.pop("name", None)
        if name is None:
            default_name = self.default_hparams().get("name")
            name = _compat.unique_layer_name(hp.name) if hp.name == default_name else hp.name
        if not isinstance(name, str) or not name or "/" in name:
            # Keras uses '/' to separate the parts of weight paths.
            raise HParamsError(f"expected a non-empty string without '/', got {name!r}", "name")
        if name != hp.name:
            hp = hp.replace(name=name)
        super().__init__(name=name, **kwargs)
        self._hparams = hp

    @classmethod
    def default_hparams(cls) -> dict:
        return {"name": "module"}

    # Set by texkit.tasks.quantize on the module it quantized (``"int8"``, ``"int4"``).
    _quantization_mode: str | None = None
    _quantization_weight_only: bool = True
    _pending_quantization: str | None = None  # from a config, applied once built
    _pending_weight_only: bool = True

    def get_config(self) -> dict:
        config = super().get_config()
        config["hparams"] = self.hparams.todict()
        if self._quantization_mode is not None:
            config["quantization"] = {
                "mode": self._quantization_mode,
                "weight_only": self._quantization_weight_only,
            }
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModuleBase:
        """The module of ``config``; a quantized module's is quantized again once built (its
        sublayers are rebuilt from the hparams as float layers), before its weights load."""
        config = dict(config)
        quantization = config.pop("quantization", None)
        module = super().from_config(config)
        if quantization is not None:
            if not isinstance(quantization, Mapping) or set(quantization) != {
                "mode",
                "weight_only",
            }:
                raise ValueError(
                    f"{cls.__name__}: config key 'quantization' must be {{mode, weight_only}}, "
                    f"got {quantization!r}"
                )
            module._pending_quantization = quantization["mode"]
            module._pending_weight_only = quantization["weight_only"]
        return module

    def _post_build(self) -> None:
        super()._post_build()
        mode = self._pending_quantization
        if mode is not None:
            self._pending_quantization = None
            if not _QUANTIZER:
                raise RuntimeError(
                    f"{self.name}: was saved quantized; import texkit (texkit.tasks) to load it"
                )
            _QUANTIZER[0](self, mode, weight_only=self._pending_weight_only)


# The function that quantizes a module, ``quantize(module, mode, weight_only=...)``: registered
# by texkit.tasks when texkit is imported (the layers below it never import it), called on a
# module that was saved quantized once it is built again.
_QUANTIZER: list[Any] = []


def register_quantizer(quantize: Any) -> None:
    """Makes modules saved quantized call ``quantize(module, mode, weight_only=...)`` once
    built."""
    if not callable(quantize):
        raise TypeError(f"register_quantizer takes a callable, got {quantize!r}")
    _QUANTIZER[:] = [quantize]
