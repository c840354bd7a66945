"""Texar's ``get_instance``: an object of a class given by itself or by its registry name."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from texkit import registry
from texkit.errors import HParamsError

__all__ = ["get_instance"]


def get_instance(
    class_or_name: type | str, kwargs: Mapping[str, Any] | None, module_paths: Any = None
) -> Any:
    """Creates an instance of a class given by itself or by name, as Texar's ``get_instance``.

    A name resolves through :mod:`texkit.registry` only: a registered name (``"LSTMCell"``) or a
    dotted path under one of its allowed namespaces (``"keras.layers.Dense"``). With
    ``module_paths``, a name that does not resolve on its own is tried under each path in turn
    (``"Dense"`` under ``"keras.layers"``); each path must itself lie in an allowed namespace.
    Nothing else is imported, unlike Texar, which located any dotted path.

    Args:
        class_or_name: a class, or its registry name or dotted path.
        kwargs: the constructor's keyword arguments (a mapping, an :class:`~texkit.HParams` or
            ``None``); each must be a parameter of the constructor unless it takes ``**kwargs``.
        module_paths: dotted module paths to try the name under, first match wins.

    Returns:
        ``cls(**kwargs)``.

    Raises:
        ValueError: the name resolves nowhere (the message says why for each try), or a kwarg
            the class does not take (naming the ones it does).
        TypeError: the name resolves to something other than a class, or ``kwargs`` is not a
            mapping.

    Example:
        >>> layer = get_instance("Dense", {"units": 3}, module_paths=["keras.layers"])
        >>> type(layer).__name__, layer.units
        ('Dense', 3)
    """
    cls = _get_class(class_or_name, module_paths)
    if kwargs is None:
        kwargs = {}
    elif hasattr(kwargs, "todict"):
        kwargs = kwargs.todict()
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping or None, got {type(kwargs).__name__}")
    kwargs = dict(kwargs)
    parameters = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    accepted = [
        name
        for name, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    unknown = [key for key in kwargs if key not in accepted]
    if unknown and not takes_any:
        raise ValueError(
            f"{cls.__module__}.{cls.__qualname__} takes no argument {', '.join(map(repr, unknown))}"
            f"; it takes {', '.join(accepted) or 'none'}"
        )
    return cls(**kwargs)


def _get_class(class_or_name: Any, module_paths: Any) -> type:
    if inspect.isclass(class_or_name):
        return class_or_name
    if not isinstance(class_or_name, str) or not class_or_name:
        raise TypeError(f"class_or_name must be a class or a name, got {class_or_name!r}")
    if module_paths is None:
        module_paths = []
    elif isinstance(module_paths, str) or not isinstance(module_paths, Sequence):
        raise TypeError(f"module_paths must be a list of dotted paths, got {module_paths!r}")
    for path in module_paths:
        if not isinstance(path, str) or not path:
            raise TypeError(f"module_paths must hold dotted paths, got {path!r}")
    failures = []
    for candidate in [class_or_name] + [f"{path}.{class_or_name}" for path in module_paths]:
        try:
            found = registry.resolve(candidate)
        except HParamsError as error:
            failures.append(f"{candidate!r}: {error.message}")
            continue
        if not inspect.isclass(found):
            raise TypeError(f"{candidate!r} is a function, not a class; get_instance makes objects")
        return found
    raise ValueError(f"cannot find class {class_or_name!r}: " + "; ".join(failures))
