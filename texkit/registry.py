"""Names for the classes and functions that hyperparameters refer to.

A ``type`` in hparams is resolved here, and only here:

* a registered name: the Keras layers, RNN cells, initializers, activations, optimizers and
  learning-rate schedules texkit uses (``"LSTMCell"``, ``"TruncatedNormal"``, ``"gelu"``,
  ``"Adam"``, ``"PolynomialDecay"``), texkit's own classes (``"WordEmbedder"``), and whatever a
  user registered with :func:`register`;
* a dotted path into a namespace that holds model parts: ``keras.layers``,
  ``keras.initializers``, ``keras.activations``, ``keras.optimizers`` (with ``.schedules``),
  ``keras.losses``, ``keras.metrics``, ``keras.regularizers``, ``keras.constraints`` (also under
  ``tensorflow.keras.``), ``tensorflow.nn``, ``tensorflow.math``, ``texkit.modules``,
  ``texkit.core``, or a package the user registered (``register(my_package)``).

Nothing else is imported. A config names constructors, never arbitrary functions:

* a path must reach a class, except in the pure-math namespaces (activations, ``tensorflow.nn``,
  ``tensorflow.math``) and registered packages, where functions are allowed too;
* below its namespace a path walks only through genuine submodules, never through a module that
  was merely imported (``tf`` inside a package, ``os`` inside Keras), and the object reached must
  be defined by the namespace's own library (Keras, TensorFlow, texkit, or the registered
  package itself);
* ``get``/``deserialize``/``serialize`` (which build arbitrary objects from configs), ``Lambda``
  and ``TFSMLayer`` (which wrap code or saved graphs) and private parts (``_x``) are refused.

So ``"os.system"``, ``"builtins.eval"``, ``"tensorflow.io.gfile.rmtree"``,
``"keras.config.enable_unsafe_deserialization"``, ``"texkit.core.layers.keras.callbacks.CSVLogger"``
and ``"my_registered_package.tf.io.gfile.rmtree"`` are all refused with an
:class:`~texkit.hparams.HParamsError`.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
import types
from typing import Any

from texkit.errors import HParamsError

__all__ = [
    "loader_for",
    "name_of",
    "register",
    "register_loader",
    "registered_names",
    "resolve",
]

# Where a dotted path may point: the namespaces that hold model parts, not the whole packages,
# since e.g. tensorflow.io.gfile.rmtree or keras.config.enable_unsafe_deserialization are
# functions a config must never call.
_KERAS_NAMESPACES = (
    "layers", "initializers", "activations", "optimizers", "losses", "metrics", "regularizers",
    "constraints",
)  # fmt: skip
_NAMESPACES: set[str] = {
    *(f"keras.{n}" for n in _KERAS_NAMESPACES),
    *(f"tensorflow.keras.{n}" for n in _KERAS_NAMESPACES),
    "tensorflow.nn",
    "tensorflow.math",
    "texkit.modules",
    "texkit.core",
}
# Functions (rather than classes) resolve only from these pure-math namespaces.
_FUNCTION_NAMESPACES: set[str] = {
    "keras.activations",
    "tensorflow.keras.activations",
    "tensorflow.nn",
    "tensorflow.math",
}
# Names that turn a config into arbitrary objects, or wrap arbitrary code or saved graphs.
_DENIED = frozenset({"get", "deserialize", "serialize", "Lambda", "TFSMLayer"})
_NAMES: dict[str, Any] = {}
_BUILTINS_LOADED = False


def _builtin_table() -> dict[str, Any]:
    import keras

    table: dict[str, Any] = {}
    layers = [
        "Dense", "Dropout", "Embedding", "LayerNormalization", "BatchNormalization", "Conv1D",
        "MaxPooling1D", "AveragePooling1D", "GlobalMaxPooling1D", "GlobalAveragePooling1D",
        "Flatten", "Activation", "Identity", "RNN", "LSTM", "GRU", "SimpleRNN", "Bidirectional",
        "LSTMCell", "GRUCell", "SimpleRNNCell", "StackedRNNCells",
    ]  # fmt: skip
    for name in layers:
        table[name] = getattr(keras.layers, name)
    initializers = [
        "Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "LecunNormal",
        "LecunUniform", "Ones", "Orthogonal", "RandomNormal", "RandomUniform", "TruncatedNormal",
        "VarianceScaling", "Zeros",
    ]  # fmt: skip
    for name in initializers:
        table[name] = getattr(keras.initializers, name)
    # `Identity` is a layer; the identity-matrix initializer goes by its long name.
    table["IdentityInitializer"] = keras.initializers.IdentityInitializer
    activations = [
        "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "mish", "tanh",
        "sigmoid", "hard_sigmoid", "softmax", "log_softmax", "softplus", "softsign", "linear",
        "exponential",
    ]  # fmt: skip
    for name in activations:
        table[name] = getattr(keras.activations, name)
    optimizers = [
        "Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Adafactor",
        "Ftrl", "Lion", "Lamb", "LossScaleOptimizer",
    ]  # fmt: skip
    for name in optimizers:
        table[name] = getattr(keras.optimizers, name)
    schedules = [
        "ExponentialDecay", "PiecewiseConstantDecay", "PolynomialDecay", "InverseTimeDecay",
        "CosineDecay", "CosineDecayRestarts",
    ]  # fmt: skip
    for name in schedules:
        table[name] = getattr(keras.optimizers.schedules, name)
    losses = [
        "SparseCategoricalCrossentropy", "CategoricalCrossentropy", "BinaryCrossentropy",
        "MeanSquaredError", "MeanAbsoluteError", "Huber", "KLDivergence",
    ]  # fmt: skip
    for name in losses:
        table[name] = getattr(keras.losses, name)
    return table


def _ensure_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        for name, obj in _builtin_table().items():
            _NAMES.setdefault(name, obj)


def register(obj: Any, name: str | None = None) -> Any:
    """Makes ``obj`` resolvable from hparams; returns ``obj`` so it works as a decorator.

    Args:
        obj: a class or function, registered under ``name`` (default: its ``__name__``); or a
            module (or package), whose dotted paths then resolve like ``keras.`` ones do.
        name: the registry name. Re-registering a name for a different object is an error.

    Example:
        >>> import keras
        >>> @register
        ... class Squared(keras.layers.Layer):
        ...     def call(self, inputs):
        ...         return inputs * inputs
        >>> resolve("Squared") is Squared
        True
        >>> layer = tx.core.get_layer({"type": "Squared", "kwargs": {}})
        >>> layer(tf.constant([2.0, -3.0])).numpy()
        array([4., 9.], dtype=float32)
    """
    if isinstance(obj, types.ModuleType):
        _NAMESPACES.add(obj.__name__)
        _FUNCTION_NAMESPACES.add(obj.__name__)
        return obj
    if not callable(obj):
        raise HParamsError(f"only classes, functions and modules can be registered, got {obj!r}")
    _ensure_builtins()
    name = name or getattr(obj, "__name__", None)
    if not name or not isinstance(name, str):
        raise HParamsError(f"cannot find a name for {obj!r}; pass name=...")
    existing = _NAMES.get(name)
    if existing is not None and existing is not obj and not _same_definition(existing, obj):
        raise HParamsError(
            f"the name {name!r} is already registered for {existing!r}; choose another name"
        )
    _NAMES[name] = obj
    return obj


def _same_definition(a: Any, b: Any) -> bool:
    # A module reloaded (or a class re-run in a notebook), or one file imported under two module
    # names (``import toy`` and ``texkit train --include toy.py``), defines a new object with the
    # same qualified name: that replaces the old one instead of clashing with it.
    if getattr(a, "__qualname__", None) != getattr(b, "__qualname__", None):
        return False
    if getattr(a, "__module__", None) == getattr(b, "__module__", None):
        return True
    files = {_defining_file(a), _defining_file(b)}
    return len(files) == 1 and None not in files


def _defining_file(obj: Any) -> str | None:
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if path else None


# The longest type name resolved: real dotted paths have under 100 characters, and an error
# message repeats the name.
MAX_NAME_LENGTH = 256


def registered_names() -> list[str]:
    """All registered names, sorted."""
    _ensure_builtins()
    return sorted(_NAMES)


def _refuse(name: str, why: str) -> HParamsError:
    namespaces = ", ".join(sorted(n + "." for n in _NAMESPACES))
    return HParamsError(
        f"refusing type {name!r}: {why}. A type is a registered name or a dotted path under "
        f"{namespaces} (register other code with texkit.registry.register)"
    )


def resolve(name: str) -> Any:
    """The class or function that ``name`` refers to.

    Raises:
        HParamsError: ``name`` is neither registered nor an allowed dotted path, or it is
            refused (see the module docstring).
    """
    if not isinstance(name, str) or not name:
        raise HParamsError(f"a type name must be a non-empty string, got {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise HParamsError(
            f"a type name of {len(name):,} characters ({name[:40]!r}...); names have at most "
            f"{MAX_NAME_LENGTH}"
        )
    _ensure_builtins()
    if name in _NAMES:
        return _NAMES[name]
    if "." not in name:
        close = difflib.get_close_matches(name, list(_NAMES), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise HParamsError(f"unknown type {name!r}{hint}")
    return _resolve_path(name)


def _under(name: str | None, prefixes: set[str]) -> bool:
    if not name:
        return False
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _namespace_of(name: str) -> str | None:
    matches = [ns for ns in _NAMESPACES if name.startswith(ns + ".")]
    return max(matches, key=len) if matches else None


def _owners(namespace: str) -> set[str]:
    """The packages whose code may be reached from ``namespace``."""
    root = namespace.split(".")[0]
    if root == "tensorflow":
        return {"tensorflow", "keras"}  # tf.keras is Keras
    if root in ("keras", "texkit"):
        return {root}
    return {namespace}  # a registered package: its own code only


def _resolve_path(name: str) -> Any:
    parts = name.split(".")
    if any(not part.isidentifier() or part.startswith("_") for part in parts):
        raise _refuse(name, "private or malformed path parts are not allowed")
    namespace = _namespace_of(name)
    if namespace is None:
        raise _refuse(name, "it is not under an allowed namespace")
    if parts[-1] in _DENIED:
        raise _refuse(name, f"{parts[-1]!r} builds objects from arbitrary configs or code")
    try:
        obj: Any = importlib.import_module(namespace)
    except ImportError:
        raise _refuse(name, f"the namespace {namespace!r} cannot be imported") from None
    rest = parts[len(namespace.split(".")) :]
    # Walk only through genuine submodules: a module merely imported into another (``tf`` inside a
    # package, ``os`` inside Keras) would open every function of its library.
    for depth, part in enumerate(rest):
        parent = obj
        try:
            obj = getattr(parent, part)
        except AttributeError:
            raise HParamsError(
                f"unknown type {name!r}: {'.'.join([namespace, *rest[:depth]])!r} has no "
                f"attribute {part!r}"
            ) from None
        if isinstance(obj, types.ModuleType):
            if depth == len(rest) - 1:
                raise _refuse(name, "it names a module, not a class or function")
            if sys.modules.get(f"{parent.__name__}.{part}") is not obj:
                raise _refuse(name, f"it passes through {part!r}, which is not a submodule")
    if not inspect.isclass(obj):
        if not callable(obj):
            raise _refuse(name, "it names neither a class nor a function")
        if namespace not in _FUNCTION_NAMESPACES:
            raise _refuse(
                name,
                "functions resolve only from "
                + ", ".join(sorted(_FUNCTION_NAMESPACES))
                + " (elsewhere a type must be a class)",
            )
    defined_in = getattr(obj, "__module__", None)
    if not _under(defined_in, _owners(namespace)):
        raise _refuse(name, f"it is defined in {defined_in!r}, outside {namespace!r}")
    return obj


def name_of(obj: Any) -> str | None:
    """The name under which ``obj`` resolves: its registered name, else a dotted path."""
    _ensure_builtins()
    for name, registered in _NAMES.items():
        if registered is obj:
            return name
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    # Its defining module first (texkit's and registered packages'), then the public namespaces
    # (Keras classes are defined in keras.src but named by keras.layers etc.).
    candidates = [f"{module}.{qualname}"] + [f"{ns}.{qualname}" for ns in sorted(_NAMESPACES)]
    for path in candidates:
        try:
            if _resolve_path(path) is obj:
                return path
        except HParamsError:
            continue
    return None


# -- checkpoint loaders ----------------------------------------------------------------------
# Modules and tokenizers reach checkpoint loading through this table, which texkit.pretrained
# fills for each class it can load (when texkit is imported): the layers below pretrained/ never
# import it.
_LOADERS: dict[type, Any] = {}


def register_loader(cls: type, loader: Any) -> None:
    """Makes ``cls.from_pretrained(...)`` (and its subclasses') call ``loader(cls, ...)``."""
    if not inspect.isclass(cls) or not callable(loader):
        raise TypeError(f"register_loader takes a class and a callable, got {cls!r}, {loader!r}")
    _LOADERS[cls] = loader


def loader_for(cls: type) -> Any:
    """The checkpoint loader registered for ``cls`` or its nearest base class.

    Raises:
        NotImplementedError: no loader is registered for ``cls`` or any of its bases.
    """
    for klass in inspect.getmro(cls):
        if klass in _LOADERS:
            return _LOADERS[klass]
    raise NotImplementedError(
        f"{cls.__name__}.from_pretrained: no checkpoint loader is registered for {cls.__name__} "
        "(texkit.pretrained registers them when texkit is imported; a class of your own "
        "registers one with texkit.registry.register_loader)"
    )
