"""Connectors: map an encoder's final state (or any tensors) to a decoder's initial state.

Every connector takes ``output_size``, the size of its outputs without the batch dimension: an
int, a nested list of ints such as a Keras RNN cell's ``state_size`` (``LSTMCell(256)`` has
``[256, 256]``; ``StackedRNNCells`` a list with one entry per cell), or the cell itself. Its
outputs are ``[batch, size]`` tensors packed in that structure. Tuples in ``output_size`` are
stored as lists, the form a ``.keras`` file gives back, so the outputs have the same structure
before and after saving.

* :class:`ConstantConnector`: tensors filled with a value (e.g. a zero initial state).
* :class:`ForwardConnector`: the input tensors as they are, repacked into the structure.
* :class:`MLPTransformConnector`: one dense layer from all inputs, flattened and concatenated, to
  all outputs, then split.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.layers import get_activation
from texkit.hparams import HParams, HParamsError

__all__ = ["ConstantConnector", "ForwardConnector", "MLPTransformConnector"]


def _normalize_size(size: Any, full: Any) -> Any:
    if isinstance(size, Sequence) and not isinstance(size, str) and len(size) > 0:
        return [_normalize_size(item, full) for item in size]
    try:
        value = None if isinstance(size, bool) else operator.index(size)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise ValueError(
            f"output_size must be a positive int or nested lists of them, got {full!r}"
        )
    return value


def normalize_output_size(output_size: Any) -> int | list:
    """``output_size`` as an int or nested lists of ints; a Keras cell gives its ``state_size``."""
    if hasattr(output_size, "state_size") and isinstance(output_size, keras.layers.Layer):
        output_size = output_size.state_size
    return _normalize_size(output_size, output_size)


class _ConnectorBase(ModuleBase):
    """Stores ``output_size`` (see :mod:`texkit.modules.connectors`) and saves it in the config."""

    def __init__(self, output_size: Any, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        self._output_size = normalize_output_size(output_size)
        self._flat_sizes = tf.nest.flatten(self._output_size)

    @property
    def output_size(self) -> int | list:
        """The size of the outputs without the batch dimension, an int or nested lists of ints."""
        return self._output_size

    def _pack(self, flat: list) -> Any:
        return tf.nest.pack_sequence_as(self._output_size, flat)

    def _output_shapes(self, batch: Any) -> Any:
        return self._pack([(batch, size) for size in self._flat_sizes])

    def get_config(self) -> dict:
        return {**super().get_config(), "output_size": self._output_size}


class ConstantConnector(_ConnectorBase):
    """Tensors of ``output_size``'s structure filled with a constant, e.g. a zero initial state.

    Args:
        output_size: an int, nested lists of ints or a Keras RNN cell (its ``state_size``).
        hparams: see the table below.

    Call arguments:
        batch_size: the batch size, a Python int or an int scalar tensor (under XLA, a value
            known when compiling, such as ``tf.shape(inputs)[0]``).
        value: the value, a float or float scalar tensor; ``None`` uses ``hparams.value``.

    Returns:
        ``[batch_size, size]`` tensors in the layer's compute dtype, in ``output_size``'s
        structure.

    Example:
        >>> cell = keras.layers.LSTMCell(256)
        >>> h, c = ConstantConnector(cell)(batch_size=64)
        >>> h.shape, c.shape, float(tf.reduce_max(tf.abs(h)))
        (TensorShape([64, 256]), TensorShape([64, 256]), 0.0)
    """

    HPARAMS_DOC = {
        "value": "The value of every output element, unless `value` is given to the call.",
        "name": "Layer name.",
    }

    def __init__(self, output_size: Any, hparams: Any = None, **kwargs: Any):
        super().__init__(output_size, hparams, **kwargs)
        self.built = True

    @classmethod
    def default_hparams(cls) -> dict:
        return {"value": 0.0, "name": "constant_connector"}

    def __call__(self, batch_size: Any, value: Any = None, **kwargs: Any) -> Any:
        # Keras takes only tensors positionally; batch_size is often a Python int.
        return super().__call__(batch_size=batch_size, value=value, **kwargs)

    def call(self, batch_size: Any, value: Any = None) -> Any:
        if value is None:
            value = self.hparams.value
        dtype = self.compute_dtype
        value = ops.cast(value, dtype)
        return self._pack(
            [ops.full((batch_size, size), value, dtype=dtype) for size in self._flat_sizes]
        )


class ForwardConnector(_ConnectorBase):
    """The input tensors, unchanged, repacked into ``output_size``'s structure.

    The inputs may have any structure, as long as they flatten (in ``tf.nest`` order) to as many
    ``[batch, size]`` tensors as ``output_size`` has sizes, with the same sizes in the same order;
    anything else is an error naming both structures.

    Args:
        output_size: an int, nested lists of ints or a Keras RNN cell (its ``state_size``).
        hparams: see the table below.

    Call arguments:
        inputs: a tensor or a nested structure of tensors.

    Returns:
        The same tensors in ``output_size``'s structure (float inputs in the compute dtype).

    Example:
        >>> connector = ForwardConnector(keras.layers.LSTMCell(256))
        >>> h, c = tf.zeros([2, 256]), tf.ones([2, 256])
        >>> state = connector((h, c))  # repacked as the cell's [h, c]
        >>> [s.shape for s in state], float(state[0][0, 0]), float(state[1][0, 0])
        ([TensorShape([2, 256]), TensorShape([2, 256])], 0.0, 1.0)
    """

    HPARAMS_DOC = {"name": "Layer name."}

    def __init__(self, output_size: Any, hparams: Any = None, **kwargs: Any):
        super().__init__(output_size, hparams, **kwargs)
        self.built = True

    @classmethod
    def default_hparams(cls) -> dict:
        return {"name": "forward_connector"}

    def call(self, inputs: Any) -> Any:
        flat = tf.nest.flatten(inputs)
        sizes = self._flat_sizes
        matches = len(flat) == len(sizes) and all(
            len(x.shape) == 2 and x.shape[1] in (size, None)
            for x, size in zip(flat, sizes, strict=False)
        )
        if not matches:
            raise ValueError(
                f"{self.name}: the inputs must flatten to {len(sizes)} tensors [batch, size] with "
                f"the sizes of output_size {self._output_size}, got inputs of shapes "
                f"{tf.nest.map_structure(lambda x: tuple(x.shape), inputs)}"
            )
        return self._pack(flat)


def _is_shape(value: Any) -> bool:
    if isinstance(value, tf.TensorShape):
        return True
    return isinstance(value, (list, tuple)) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in value
    )


def _flat_shapes(shapes: Any) -> list[tuple]:
    """The shapes in a nested structure of shapes, in ``tf.nest`` order of the tensors."""
    if _is_shape(shapes):
        return [tuple(shapes)]
    if isinstance(shapes, dict):
        return [s for key in sorted(shapes) for s in _flat_shapes(shapes[key])]
    return [s for item in shapes for s in _flat_shapes(item)]


class MLPTransformConnector(_ConnectorBase):
    """One dense layer from all inputs to all outputs, packed in ``output_size``'s structure.

    Each input tensor ``[batch, d1, ..., dn]`` is flattened to ``[batch, d1 * ... * dn]`` (a
    ``[batch]`` tensor to ``[batch, 1]``); the flattened inputs are concatenated in ``tf.nest``
    order, mapped by one ``Dense`` layer to the sum of the output sizes, passed through
    ``activation_fn`` and split into the sizes of ``output_size``, in order.

    Args:
        output_size: an int, nested lists of ints or a Keras RNN cell (its ``state_size``).
        hparams: see the table below.

    Call arguments:
        inputs: a tensor or a nested structure of tensors, batch first, with known non-batch
            dimensions (e.g. an encoder's final state).

    Returns:
        ``[batch, size]`` tensors in the compute dtype, in ``output_size``'s structure.

    Example:
        >>> encoder_state = [tf.zeros([2, 64]), tf.zeros([2, 64])]  # e.g. an LSTM's [h, c]
        >>> connector = MLPTransformConnector(keras.layers.LSTMCell(256))
        >>> state = connector(encoder_state)
        >>> [s.shape for s in state]
        [TensorShape([2, 256]), TensorShape([2, 256])]
    """

    HPARAMS_DOC = {
        "activation_fn": (
            "Activation after the dense layer: None or 'identity' for none, a registered name "
            "('tanh') or {type, kwargs}."
        ),
        "name": "Layer name.",
    }

    def __init__(self, output_size: Any, hparams: Any = None, **kwargs: Any):
        super().__init__(output_size, hparams, **kwargs)
        activation = self.hparams.activation_fn
        if activation is None or activation == "identity":
            self._activation = None
        elif isinstance(activation, (str, Mapping, HParams)):
            self._activation = get_activation(activation, "activation_fn")
        else:
            raise HParamsError(
                f"expected None, an activation name or {{type, kwargs}}, got {activation!r}",
                "activation_fn",
            )
        self.dense = keras.layers.Dense(
            sum(self._flat_sizes), dtype=self.dtype_policy, name="dense"
        )

    @classmethod
    def default_hparams(cls) -> dict:
        return {"activation_fn": None, "name": "mlp_connector"}

    def build(self, inputs_shape: Any) -> None:
        width = 0
        for shape in _flat_shapes(inputs_shape):
            if any(d is None for d in shape[1:]):
                raise ValueError(
                    f"{self.name}: every input needs known non-batch dimensions, got input shapes "
                    f"{inputs_shape}"
                )
            width += math.prod(shape[1:])
        self.dense.build((None, width))
        self.built = True

    def call(self, inputs: Any) -> Any:
        flat = [
            ops.reshape(ops.cast(x, self.compute_dtype), (-1, math.prod(x.shape[1:])))
            for x in tf.nest.flatten(inputs)
        ]
        features = self.dense(ops.concatenate(flat, axis=-1) if len(flat) > 1 else flat[0])
        if self._activation is not None:
            features = self._activation(features)
        splits = list(itertools.accumulate(self._flat_sizes))[:-1]
        return self._pack(ops.split(features, splits, axis=-1) if splits else [features])

    def compute_output_shape(self, inputs_shape: Any) -> Any:
        batch = _flat_shapes(inputs_shape)[0][0]
        return self._output_shapes(batch)
