"""Small builders that turn hparams into Keras objects; modules call these instead of parsing.

Each takes the ``{"type": ..., "kwargs": {...}}`` form (a dict or :class:`~texkit.HParams`) whose
``type`` resolves through :mod:`texkit.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import keras

from texkit import registry
from texkit.core import rnn_cells
from texkit.core.rnn_cells import default_rnn_cell_hparams, rnn_cell_hparams_doc
from texkit.hparams import HParams, HParamsError
from texkit.hparams import core as limits
from texkit.hparams.rules import short

__all__ = [
    "BoundActivation",
    "MaskedMeanPooling",
    "default_rnn_cell_hparams",
    "get_instance",
    "get_initializer",
    "get_activation",
    "get_layer",
    "get_rnn_cell",
    "rnn_cell_hparams_doc",
    "masked_max_pool",
    "masked_mean_pool",
]


def _as_dict(hparams: Mapping | HParams) -> dict:
    return hparams.todict() if isinstance(hparams, HParams) else dict(hparams)


def _type_kwargs(value: Any, path: str) -> dict:
    """``value`` as a ``{"type", "kwargs"}`` dict, or an :class:`HParamsError` naming ``path``
    (a value under a free-form default reaches here unchecked)."""
    if not isinstance(value, Mapping):
        raise HParamsError(
            f"expected a name or {{type, kwargs}}, got {type(value).__name__} {value!r:.60}", path
        )
    spec = _as_dict(value)
    unknown = sorted(set(spec) - {"type", "kwargs"}, key=str)
    if unknown or "type" not in spec:
        problem = f"unknown keys {unknown}" if unknown else "no 'type'"
        raise HParamsError(f"expected {{type, kwargs}}: {problem}", path)
    kwargs = spec.get("kwargs")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise HParamsError(
            f"expected a dict of keyword arguments, got {type(kwargs).__name__}",
            f"{path}.kwargs" if path else "kwargs",
        )
    return spec


def get_instance(
    hparams: Mapping | HParams, path: str = "", expected: type | None = None, **extra_kwargs: Any
) -> Any:
    """Calls the class or function named by ``hparams.type`` with ``hparams.kwargs``.

    Args:
        hparams: ``{"type": name, "kwargs": {...}}``.
        path: where these hparams sit in the caller's config, for error messages.
        expected: when given, ``type`` must name a subclass of it; checked before anything is
            called.
        **extra_kwargs: arguments the caller adds (they win over ``kwargs``).
    """
    spec = _type_kwargs(hparams, path)
    target = _resolve(spec["type"], f"{path}.type" if path else "type")
    if expected is not None and not (isinstance(target, type) and issubclass(target, expected)):
        raise HParamsError(
            f"{spec['type']!r} is not a {expected.__module__.split('.')[0]}.{expected.__name__}",
            path,
        )
    kwargs = {**dict(spec.get("kwargs") or {}), **extra_kwargs}
    try:
        return target(**kwargs)
    except (TypeError, ValueError) as error:
        where = f"{path}.kwargs" if path else "kwargs"
        raise HParamsError(f"{spec['type']}({kwargs!r}) failed: {error}", where) from error


def _resolve(type_value: Any, path: str) -> Any:
    if not isinstance(type_value, str):
        return type_value
    try:
        return registry.resolve(type_value)
    except HParamsError as error:
        raise HParamsError(error.message, path) from None


def get_initializer(hparams: Mapping | HParams | None, path: str = "initializer") -> Any:
    """A Keras initializer from ``{"type", "kwargs"}``; ``None`` gives ``None`` (the default)."""
    if hparams is None:
        return None
    return get_instance(hparams, path, expected=keras.initializers.Initializer)


@keras.saving.register_keras_serializable(package="texkit")
class BoundActivation:
    """An activation function with fixed keyword arguments; serializable, unlike a lambda.

    ``BoundActivation("leaky_relu", {"negative_slope": 0.1})(x)`` is
    ``keras.activations.leaky_relu(x, negative_slope=0.1)``.
    """

    def __init__(self, name: str, kwargs: Mapping[str, Any]):
        self.name = name
        self.kwargs = dict(kwargs)
        self.function = _activation_function(name, "activation")

    def __call__(self, x: Any) -> Any:
        return self.function(x, **self.kwargs)

    def get_config(self) -> dict:
        return {"name": self.name, "kwargs": self.kwargs}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BoundActivation:
        return cls(**config)


def _activation_function(name: Any, path: str) -> Callable:
    function = _resolve(name, path)
    if isinstance(function, type) or not callable(function):
        raise HParamsError(f"{name!r} is not an activation function", path)
    return function


def get_activation(
    activation: str | Mapping | HParams | None, path: str = "activation"
) -> Callable | None:
    """An activation function from a registered name (``"gelu"``) or ``{"type", "kwargs"}``.

    ``None`` gives ``None`` (no activation). With kwargs the result is a :class:`BoundActivation`,
    which Keras can save and load.
    """
    if activation is None:
        return None
    if isinstance(activation, str):
        return _activation_function(activation, path)
    spec = _type_kwargs(activation, path)
    function = _activation_function(spec["type"], f"{path}.type")
    kwargs = dict(spec.get("kwargs") or {})
    if not kwargs:
        return function
    return BoundActivation(spec["type"], kwargs)


def get_layer(hparams: Mapping | HParams, path: str = "layer") -> keras.layers.Layer:
    """A Keras (or texkit) layer from ``{"type", "kwargs"}``."""
    return get_instance(hparams, path, expected=keras.layers.Layer)


_KEEP_PROBS = ("input_keep_prob", "output_keep_prob", "state_keep_prob")


def _check_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise HParamsError(f"expected a bool, got {value!r}", path)
    return value


def _rnn_cell_options(spec: dict, path: str) -> tuple[int, dict, bool, bool]:
    """Pops and validates ``num_layers``, ``dropout``, ``residual``, ``highway`` (or defaults)."""
    num_layers = spec.pop("num_layers", 1)
    if not isinstance(num_layers, int) or isinstance(num_layers, bool):
        raise HParamsError(f"expected a positive int, got {num_layers!r}", f"{path}.num_layers")
    if not 1 <= num_layers <= limits.MAX_LAYERS:
        raise HParamsError(
            f"expected a positive int, at most {limits.MAX_LAYERS}, got {num_layers!r}",
            f"{path}.num_layers",
        )
    dropout = default_rnn_cell_hparams()["dropout"]
    for key, value in _as_dict(spec.pop("dropout", None) or {}).items():
        if key not in dropout:
            raise HParamsError(
                f"unknown key; known keys: {sorted(dropout)}", f"{path}.dropout.{key}"
            )
        dropout[key] = value
    for key in _KEEP_PROBS:
        value = dropout[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise HParamsError(
                f"expected a number in (0, 1], got {value!r}", f"{path}.dropout.{key}"
            )
    _check_bool(dropout["variational_recurrent"], f"{path}.dropout.variational_recurrent")
    residual = _check_bool(spec.pop("residual", False), f"{path}.residual")
    highway = _check_bool(spec.pop("highway", False), f"{path}.highway")
    if residual and highway:
        raise HParamsError(
            f"{path}.residual and {path}.highway cannot both be true; choose one", f"{path}.highway"
        )
    return num_layers, dropout, residual, highway


def get_rnn_cell(
    hparams: Mapping | HParams, path: str = "rnn_cell", **layer_kwargs: Any
) -> keras.layers.Layer:
    """One Keras RNN cell from an ``rnn_cell`` entry, for ``keras.layers.RNN`` or stepping.

    Keys (defaults in :func:`default_rnn_cell_hparams`; documented by :func:`rnn_cell_hparams_doc`):

    * ``type``: the cell class, a registry name (``LSTMCell``, ``GRUCell``, ``SimpleRNNCell``) or
      an allowed dotted path; it must build a Keras layer with a ``state_size``.
    * ``kwargs``: the cell's constructor arguments (``units``, ``dropout``, ...), the same for
      every layer.
    * ``num_layers``: how many cells to stack; more than one gives a
      ``keras.layers.StackedRNNCells`` whose output is the top cell's.
    * ``dropout``: ``input_keep_prob``, ``output_keep_prob``, ``state_keep_prob`` in (0, 1] and
      ``variational_recurrent``: when a keep probability is below 1, every layer is wrapped in a
      :class:`~texkit.core.rnn_cells.DropoutWrapper` (active in training only).
    * ``residual`` / ``highway``: every layer but the first (whose input is the RNN's input, of
      another size) is wrapped in a :class:`~texkit.core.rnn_cells.ResidualWrapper` /
      :class:`~texkit.core.rnn_cells.HighwayWrapper`, outside the dropout; not both.

    So one layer is ``Highway(Dropout(cell))`` at most, as in Texar.

    Args:
        hparams: the entry, a dict or :class:`~texkit.HParams`; missing keys take the defaults
            above (``num_layers: 1``, no dropout, no residual or highway connections).
        path: where the entry sits in the caller's config, for error messages.
        **layer_kwargs: Keras layer arguments for every cell, wrapper and the stack, e.g. ``dtype``.
    """
    spec = _as_dict(hparams)
    num_layers, dropout, residual, highway = _rnn_cell_options(spec, path)
    units = (
        (spec.get("kwargs") or {}).get("units") if isinstance(spec.get("kwargs"), Mapping) else None
    )
    if isinstance(units, int) and not isinstance(units, bool):
        # Keras accepts any positive int here and fails only when allocating.
        if not 1 <= units <= limits.MAX_DIM:
            raise HParamsError(
                f"expected a positive int, at most {limits.MAX_DIM}, got {short(units)}",
                f"{path}.kwargs.units",
            )
        limits.check_table_size(units, units, f"{path}.kwargs.units", "a recurrent kernel")
    keep_probs = {key: dropout[key] for key in _KEEP_PROBS}
    cells = []
    for layer_index in range(num_layers):
        cell = get_instance(spec, path, expected=keras.layers.Layer, **layer_kwargs)
        if not hasattr(cell, "state_size"):
            raise HParamsError(f"{spec['type']!r} is not an RNN cell (it has no state_size)", path)
        if min(keep_probs.values()) < 1:
            cell = rnn_cells.DropoutWrapper(
                cell,
                **keep_probs,
                variational_recurrent=dropout["variational_recurrent"],
                **layer_kwargs,
            )
        if residual and layer_index > 0:
            cell = rnn_cells.ResidualWrapper(cell, **layer_kwargs)
        if highway and layer_index > 0:
            cell = rnn_cells.HighwayWrapper(cell, **layer_kwargs)
        cells.append(cell)
    if num_layers == 1:
        return cells[0]
    return keras.layers.StackedRNNCells(cells, **layer_kwargs)


def _broadcast_mask(mask: Any, inputs: Any) -> Any:
    mask = keras.ops.cast(mask, inputs.dtype)
    return keras.ops.reshape(mask, (*keras.ops.shape(mask), *([1] * (len(inputs.shape) - 2))))


def masked_max_pool(inputs: Any, mask: Any) -> Any:
    """Max over time of ``[batch, time, ...]`` inputs at the steps where ``mask`` is true.

    ``mask`` is ``[batch, time]`` (bool or 0/1); a row without any true step gives zeros.
    Returns ``[batch, ...]``.
    """
    keep = keras.ops.cast(_broadcast_mask(mask, inputs), "bool")
    lowest = keras.ops.full_like(inputs, float("-inf"))
    pooled = keras.ops.max(keras.ops.where(keep, inputs, lowest), axis=1)
    return keras.ops.where(keras.ops.any(keep, axis=1), pooled, keras.ops.zeros_like(pooled))


def masked_mean_pool(inputs: Any, mask: Any) -> Any:
    """Mean over time of ``[batch, time, ...]`` inputs at the steps where ``mask`` is true.

    ``mask`` is ``[batch, time]`` (bool or 0/1); a row without any true step gives zeros.
    Returns ``[batch, ...]``.
    """
    weights = _broadcast_mask(mask, inputs)
    summed = keras.ops.sum(inputs * weights, axis=1)
    count = keras.ops.maximum(keras.ops.sum(weights, axis=1), keras.ops.cast(1, inputs.dtype))
    return summed / count


@keras.saving.register_keras_serializable(package="texkit")
class MaskedMeanPooling(keras.layers.Layer):
    """Mean of ``[batch, time, ...]`` inputs over each sequence's first ``sequence_length`` steps.

    Call arguments:
        inputs: ``[batch, time, ...]``.
        sequence_length: ``[batch]`` int lengths; padded steps do not count. A sequence of
            length 0 pools to zeros.

    Returns:
        ``[batch, ...]``.
    """

    def call(self, inputs: Any, sequence_length: Any) -> Any:
        steps = keras.ops.arange(keras.ops.shape(inputs)[1])
        valid = steps[None, :] < keras.ops.cast(sequence_length, "int32")[:, None]
        return masked_mean_pool(inputs, valid)

    def compute_output_shape(self, inputs_shape: Any, sequence_length_shape: Any = None) -> Any:
        return (inputs_shape[0], *inputs_shape[2:])
