"""Small builders that turn hparams into Keras objects; modules call these instead of parsing.

Each takes the ``{"type": ..., "kwargs": {...}}`` form (a dict or :class:`~texkit.HParams`) whose
``type`` resolves through :mod:`texkit.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import keras

from texkit import registry
from texkit.hparams import HParams, HParamsError

__all__ = ["get_instance", "get_initializer", "get_activation", "get_layer"]


def _as_dict(hparams: Mapping | HParams) -> dict:
    return hparams.todict() if isinstance(hparams, HParams) else dict(hparams)


def get_instance(hparams: Mapping | HParams, path: str = "", **extra_kwargs: Any) -> Any:
    """Calls the class or function named by ``hparams.type`` with ``hparams.kwargs``.

    Args:
        hparams: ``{"type": name, "kwargs": {...}}``.
        path: where these hparams sit in the caller's config, for error messages.
        **extra_kwargs: arguments the caller adds (they win over ``kwargs``).
    """
    spec = _as_dict(hparams)
    if "type" not in spec:
        raise HParamsError("expected a dict with 'type' and 'kwargs'", path)
    target = registry.resolve(spec["type"]) if isinstance(spec["type"], str) else spec["type"]
    kwargs = {**dict(spec.get("kwargs") or {}), **extra_kwargs}
    try:
        return target(**kwargs)
    except (TypeError, ValueError) as error:
        where = f"{path}.kwargs" if path else "kwargs"
        raise HParamsError(f"{spec['type']}({kwargs!r}) failed: {error}", where) from error


def get_initializer(hparams: Mapping | HParams | None, path: str = "initializer") -> Any:
    """A Keras initializer from ``{"type", "kwargs"}``; ``None`` gives ``None`` (the default)."""
    if hparams is None:
        return None
    initializer = get_instance(hparams, path)
    if not isinstance(initializer, keras.initializers.Initializer):
        raise HParamsError(f"{_as_dict(hparams)['type']!r} is not a Keras initializer", path)
    return initializer


def get_activation(
    activation: str | Mapping | HParams | None, path: str = "activation"
) -> Callable | None:
    """An activation function from a registered name (``"gelu"``) or ``{"type", "kwargs"}``.

    ``None`` and ``"linear"`` mean no activation (``None`` is returned for ``None``).
    """
    if activation is None:
        return None
    if isinstance(activation, str):
        try:
            function = registry.resolve(activation)
        except HParamsError as error:
            raise HParamsError(error.message, path) from None
        if not callable(function):
            raise HParamsError(f"{activation!r} is not callable", path)
        return function
    spec = _as_dict(activation)
    function = registry.resolve(spec["type"]) if isinstance(spec["type"], str) else spec["type"]
    kwargs = dict(spec.get("kwargs") or {})
    if not kwargs:
        return function
    return lambda x: function(x, **kwargs)


def get_layer(hparams: Mapping | HParams, path: str = "layer") -> keras.layers.Layer:
    """A Keras (or texkit) layer from ``{"type", "kwargs"}``."""
    layer = get_instance(hparams, path)
    if not isinstance(layer, keras.layers.Layer):
        raise HParamsError(f"{_as_dict(hparams)['type']!r} is not a Keras layer", path)
    return layer
