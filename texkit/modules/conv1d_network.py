"""Conv1DNetwork: Texar's convolutional network, convolutions and pooling then dense layers.

The layout is Texar's: ``num_conv_layers`` layers of parallel ``Conv1D`` branches (one per kernel
size), each branch pooled, the branches concatenated along the features; the result flattened
into ``num_dense_layers`` dense layers; dropout before the layers that ``dropout_conv`` and
``dropout_dense`` name. Texar's defaults are kept (``'valid'`` convolutions, max pooling over
the whole sequence, one dense layer without activation, ``dropout_rate: 0.75`` before the
first dense layer).

Padding never matters where it cannot change the shape: the steps past each sequence's length
are zeroed before every convolution, an output step counts as valid only when its window lies
within the valid steps, and pooling over the whole sequence (``pool_size: null``) uses the valid
steps only. (Texar zeroed the padded inputs but pooled over every step, so a padded sequence
could pool a padded step.)
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.core.layers import get_activation, get_initializer, masked_max_pool, masked_mean_pool
from texkit.hparams import HParamsError, check_positive_int, check_rate
from texkit.hparams.texar_names import texar_type_hint
from texkit.modules.encoders.conv_encoder import (
    build_conv_branches,
    check_conv_hparams,
    conv_branches,
)

__all__ = ["Conv1DNetwork"]

_POOLINGS = ("max", "mean")
_PADDINGS = ("valid", "same")


def _activation(value: Any, key: str) -> Any:
    """:func:`get_activation`, whose error says texkit's name for one of Texar's (``identity``)."""
    try:
        return get_activation(value, key)
    except HParamsError as error:
        hint = texar_type_hint(value)
        if hint is None:
            raise
        raise HParamsError(f"{error.message}; {hint}", key) from None


def _check_indices(hp: Any, key: str, count: int) -> None:
    for index, value in enumerate(hp[key]):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= count:
            raise HParamsError(f"expected an int in [0, {count}], got {value!r}", f"{key}.{index}")


def _check(hp: Any) -> None:
    check_conv_hparams(hp)
    if hp.pooling not in _POOLINGS:
        raise HParamsError(f"expected one of {_POOLINGS}, got {hp.pooling!r}", "pooling")
    if hp.padding not in _PADDINGS:
        raise HParamsError(f"expected one of {_PADDINGS}, got {hp.padding!r}", "padding")
    check_positive_int(hp, "pool_size", optional=True)
    check_positive_int(hp, "pool_strides")
    check_rate(hp, "dropout_rate")
    _check_indices(hp, "dropout_conv", hp.num_conv_layers)
    _check_indices(hp, "dropout_dense", hp.num_dense_layers)
    if hp.pool_size is None and hp.num_conv_layers > 1:
        raise HParamsError(
            "pool_size: null pools each convolution layer to a single step; with "
            f"num_conv_layers: {hp.num_conv_layers} give a pool size",
            "pool_size",
        )
    if hp.pool_size is not None and hp.padding == "valid" and len(hp.kernel_sizes) > 1:
        raise HParamsError(
            "branches of different kernel sizes give different lengths with 'valid' "
            "convolutions and windowed pooling; use padding: same or pool_size: null",
            "kernel_sizes",
        )


class Conv1DNetwork(ModuleBase):
    """Texar's ``Conv1DNetwork``: convolutions with pooling, then dense layers.

    In order, for each convolution layer ``i``: dropout if ``i`` is in ``dropout_conv``; the
    padded steps zeroed; ``len(kernel_sizes)`` parallel ``Conv1D`` branches of ``filters``
    filters (``padding``, ``conv_activation``), each pooled (``pooling``: max or mean, over the
    whole valid sequence when ``pool_size`` is null, else over windows of ``pool_size`` steps
    every ``pool_strides``); the branches concatenated along the features. Then dropout if
    ``num_conv_layers`` is in ``dropout_conv``; with dense layers, the features flattened and
    for each dense layer ``j`` dropout if ``j`` is in ``dropout_dense``, then the layer
    (``dense_activation``, the last one ``final_dense_activation``); dropout if
    ``num_dense_layers`` is in ``dropout_dense``.

    Call arguments:
        inputs: ``[batch, time, dim]`` float, e.g. word embeddings (Texar-TF's channels-last
            layout).
        sequence_length: ``[batch]`` int valid lengths; ``None``: nothing is padded.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        With dense layers ``[batch, dense_size]``; else with ``pool_size: null``
        ``[batch, filters * len(kernel_sizes)]``; else ``[batch, steps, filters *
        len(kernel_sizes)]``, zero at the steps whose windows reach past a sequence's length.
        With windowed pooling and dense layers, ``time`` must be known when the network is
        built (the dense input is the flattened ``steps x features``).

    Example:
        >>> network = Conv1DNetwork({"filters": 16, "dense_size": 8, "dropout_rate": 0.0})
        >>> network(tf.zeros([2, 7, 32]), sequence_length=tf.constant([7, 5])).shape
        TensorShape([2, 8])
    """

    HPARAMS_DOC = {
        "num_conv_layers": "Number of convolution layers.",
        "filters": "Number of filters of each branch of every convolution layer.",
        "kernel_sizes": (
            "Kernel size of each parallel branch of every convolution layer (Texar's kernel_size)."
        ),
        "conv_activation": "Activation of the convolutions (a registered name or {type, kwargs}).",
        "padding": "'valid' (Texar's default: no padding) or 'same' convolutions.",
        "pooling": "'max' or 'mean' (Texar's MaxPooling1D, AveragePooling1D).",
        "pool_size": "Pooling window in steps; null: over the whole valid sequence.",
        "pool_strides": "Steps between pooling windows (with a pool_size).",
        "num_dense_layers": "Number of dense layers after the convolutions.",
        "dense_size": "Output size of every dense layer.",
        "dense_activation": "Activation of the dense layers but the last; null: linear.",
        "final_dense_activation": "Activation of the last dense layer; null: linear.",
        "dropout_conv": (
            "Indices of the convolution layers whose inputs get dropout; num_conv_layers: the "
            "output of the last one."
        ),
        "dropout_dense": (
            "Indices of the dense layers whose inputs get dropout; num_dense_layers: the output "
            "of the last one."
        ),
        "dropout_rate": "Rate of every dropout.",
        "initializer": "Kernel initializer of the convolutions and dense layers ({type, kwargs}).",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        _check(hp)
        conv_activation = _activation(hp.conv_activation, "conv_activation")
        layer = {"dtype": self.dtype_policy}
        initializer = get_initializer(hp.initializer)
        if initializer is not None:
            layer["kernel_initializer"] = initializer
        self.convs = conv_branches(hp, hp.padding, conv_activation, layer)
        activations = [
            _activation(hp.dense_activation, "dense_activation"),
            _activation(hp.final_dense_activation, "final_dense_activation"),
        ]
        last = hp.num_dense_layers - 1
        self.dense_layers = [
            keras.layers.Dense(
                hp.dense_size,
                activation=activations[depth == last],
                name=f"dense_{depth}",
                **layer,
            )
            for depth in range(hp.num_dense_layers)
        ]
        needs_seed = hp.dropout_rate > 0 and (hp.dropout_conv or hp.dropout_dense)
        self.seed_generator = keras.random.SeedGenerator() if needs_seed else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_conv_layers": 1,
            "filters": 128,
            "kernel_sizes": [3, 4, 5],
            "conv_activation": {"type": "relu", "kwargs": {}},
            "padding": "valid",
            "pooling": "max",
            "pool_size": None,
            "pool_strides": 1,
            "num_dense_layers": 1,
            "dense_size": 128,
            "dense_activation": None,
            "final_dense_activation": None,
            "dropout_conv": [1],
            "dropout_dense": [],
            "dropout_rate": 0.75,
            "initializer": {"type": "GlorotUniform", "kwargs": {}},
            "name": "conv1d_network",
        }

    def _steps(self, time: Any, kernel_size: int, maximum: Any = ops.maximum) -> Any:
        """The number of output steps of one branch (convolution then pooling) on ``time``
        steps (a tensor; a Python int with ``maximum=max``)."""
        hp = self.hparams
        if hp.padding == "valid":
            time = maximum(time - kernel_size + 1, 0)
        if hp.pool_size is not None:
            time = maximum((time - hp.pool_size) // hp.pool_strides + 1, 0)
        return time

    def _conv_output_shape(self, inputs_shape: Any) -> tuple:
        hp = self.hparams
        if not self.convs:
            return tuple(inputs_shape)
        width = hp.filters * len(hp.kernel_sizes)
        if hp.pool_size is None:
            return (inputs_shape[0], width)
        time = inputs_shape[1]
        for _ in range(hp.num_conv_layers):
            time = None if time is None else self._steps(time, hp.kernel_sizes[0], max)
        return (inputs_shape[0], time, width)

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        hp = self.hparams
        width = inputs_shape[-1]
        if width is None:
            raise ValueError(
                f"{self.name}: the inputs' last axis must be known, got {inputs_shape}"
            )
        build_conv_branches(self.convs, hp, width)
        shape = self._conv_output_shape(inputs_shape)
        if self.dense_layers:
            if any(size is None for size in shape[1:]):
                raise ValueError(
                    f"{self.name}: windowed pooling before dense layers needs a known time "
                    f"axis, got inputs of shape {tuple(inputs_shape)}"
                )
            width = 1
            for size in shape[1:]:
                width *= size
            for dense in self.dense_layers:
                dense.build((None, width))
                width = dense.units
        self.built = True

    def _pool(self, outputs: Any, valid: Any) -> Any:
        hp = self.hparams
        if hp.pool_size is None:
            pool = masked_max_pool if hp.pooling == "max" else masked_mean_pool
            return pool(outputs, valid)
        pool = ops.max_pool if hp.pooling == "max" else ops.average_pool
        return pool(outputs, hp.pool_size, hp.pool_strides, padding="valid")

    def _convolve(self, x: Any, lengths: Any, training: Any) -> tuple[Any, Any]:
        """The convolution layers: features and their valid lengths (windowed pooling)."""
        hp = self.hparams
        branches = len(hp.kernel_sizes)
        for depth in range(hp.num_conv_layers):
            if depth in hp.dropout_conv:
                x = dropout(x, hp.dropout_rate, training, self.seed_generator)
            # Padded steps are zero, so that windows reaching past the end see zeros.
            x = x * ops.cast(sequence_mask(lengths, ops.shape(x)[1]), x.dtype)[:, :, None]
            outputs = []
            for branch, kernel_size in enumerate(hp.kernel_sizes):
                y = self.convs[depth * branches + branch](x)
                conv_lengths = lengths
                if hp.padding == "valid":
                    conv_lengths = ops.maximum(lengths - kernel_size + 1, 0)
                outputs.append(self._pool(y, sequence_mask(conv_lengths, ops.shape(y)[1])))
            x = ops.concatenate(outputs, axis=-1) if branches > 1 else outputs[0]
            lengths = self._steps(lengths, hp.kernel_sizes[0])
        if hp.pool_size is not None or not self.convs:
            x = x * ops.cast(sequence_mask(lengths, ops.shape(x)[1]), x.dtype)[:, :, None]
        if hp.num_conv_layers in hp.dropout_conv:
            x = dropout(x, hp.dropout_rate, training, self.seed_generator)
        return x, lengths

    def call(self, inputs: Any, sequence_length: Any = None, training: Any = None) -> Any:
        hp = self.hparams
        if sequence_length is None:
            sequence_length = ops.full((ops.shape(inputs)[0],), ops.shape(inputs)[1], "int32")
        x, _ = self._convolve(inputs, ops.cast(sequence_length, "int32"), training)
        if not self.dense_layers:
            return x
        if len(x.shape) > 2:
            x = ops.reshape(x, (ops.shape(x)[0], self.dense_layers[0].kernel.shape[0]))
        for depth, dense in enumerate(self.dense_layers):
            if depth in hp.dropout_dense:
                x = dropout(x, hp.dropout_rate, training, self.seed_generator)
            x = dense(x)
        if hp.num_dense_layers in hp.dropout_dense:
            x = dropout(x, hp.dropout_rate, training, self.seed_generator)
        return x

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        if self.dense_layers:
            return (inputs_shape[0], self.hparams.dense_size)
        return self._conv_output_shape(inputs_shape)
