"""Conv1DEncoder: convolutions over time and pooling to one feature vector (Kim, 2014).

Each convolution layer is a set of parallel ``Conv1D`` branches, one per kernel size, with
``'same'`` padding; their outputs are concatenated along the feature axis. The features are then
pooled over time (max or mean), dropped out, and passed through optional dense layers.

Padding never matters: the inputs and every layer's outputs are zeroed at steps past each
sequence's length before each convolution, so a window that reaches past the end sees zeros, as
it would on the unpadded sequence; pooling uses the valid steps only.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.core.layers import (
    get_activation,
    get_initializer,
    masked_max_pool,
    masked_mean_pool,
)
from texkit.hparams import HParamsError, check_rate, check_width
from texkit.hparams import core as limits

__all__ = [
    "DENSE_STACK_DOC",
    "Conv1DEncoder",
    "build_conv_branches",
    "check_conv_hparams",
    "conv_branches",
    "dense_stack",
]

_POOLINGS = ("max", "mean")


# The hparams of a stack of dense layers (see dense_stack), beside its num_dense_layers.
DENSE_STACK_DOC = {
    "dense_size": "Output size of every dense layer.",
    "dense_activation": "Activation of the dense layers (a registered name or {type, kwargs}).",
}


def check_conv_hparams(hp: Any) -> None:
    """Checks the hparams a stack of convolutions and dense layers shares (``filters``,
    ``kernel_sizes``, ``dense_size``, ``num_conv_layers``, ``num_dense_layers``), naming the key."""
    check_width(hp, "filters", "dense_size")
    for key in ("num_conv_layers", "num_dense_layers"):
        if not 0 <= hp[key] <= limits.MAX_LAYERS:
            raise HParamsError(f"expected an int in [0, {limits.MAX_LAYERS}], got {hp[key]!r}", key)
    if not hp.kernel_sizes:
        raise HParamsError("expected at least one kernel size, got []", "kernel_sizes")
    for index, kernel_size in enumerate(hp.kernel_sizes):
        if kernel_size < 1:
            raise HParamsError(
                f"expected a positive int, got {kernel_size!r}", f"kernel_sizes.{index}"
            )


def conv_branches(hp: Any, padding: str, activation: Any, layer: dict) -> list[keras.layers.Conv1D]:
    """``hp.num_conv_layers`` layers of ``len(hp.kernel_sizes)`` parallel ``Conv1D`` branches of
    ``hp.filters`` filters, named ``conv_<layer>_<branch>``, flat, layer by layer: layer d's
    branches are ``convs[d * branches : (d + 1) * branches]``. ``layer``: the Keras arguments
    (dtype policy, kernel initializer)."""
    return [
        keras.layers.Conv1D(
            hp.filters,
            kernel_size,
            padding=padding,
            activation=activation,
            name=f"conv_{depth}_{branch}",
            **layer,
        )
        for depth in range(hp.num_conv_layers)
        for branch, kernel_size in enumerate(hp.kernel_sizes)
    ]


def build_conv_branches(convs: list, hp: Any, width: int) -> int:
    """Builds the layers of :func:`conv_branches` on inputs of ``width`` features; returns the
    width of their concatenated outputs (``width`` when there is no convolution)."""
    branches = len(hp.kernel_sizes)
    for index, conv in enumerate(convs):
        if index and index % branches == 0:
            width = hp.filters * branches
        conv.build((None, None, width))
    return hp.filters * branches if convs else width


def dense_stack(hp: Any, layer: dict) -> list[keras.layers.Dense]:
    """``hp.num_dense_layers`` dense layers ``dense_0, dense_1, ...`` of ``hp.dense_size`` units
    and ``hp.dense_activation``, each made with the Keras arguments ``layer`` (dtype policy,
    kernel initializer)."""
    activation = get_activation(hp.dense_activation, "dense_activation")
    return [
        keras.layers.Dense(hp.dense_size, activation=activation, name=f"dense_{depth}", **layer)
        for depth in range(hp.num_dense_layers)
    ]


class Conv1DEncoder(ModuleBase):
    """A convolutional sentence encoder (Kim, 2014): convolutions, pooling over time, dense layers.

    The computation, in order:

    1. ``token_dropout`` (training only): whole time steps are dropped, i.e. their input vectors
       zeroed, each with this probability (word dropout of the deep averaging network, Iyyer et
       al., 2015). Without convolutions the dropped steps also leave the pooling, so mean pooling
       averages the kept words only; with convolutions a dropped word is a zero vector that its
       neighbours' windows still see.
    2. ``num_conv_layers`` convolution layers, each ``len(kernel_sizes)`` parallel ``Conv1D``
       branches of ``filters`` filters (``'same'`` padding, ``conv_activation``), concatenated.
    3. Pooling over the valid steps: ``max`` (a sequence of length 0 gives zeros) or ``mean``.
    4. Dropout (``dropout_rate``), then ``num_dense_layers`` dense layers of ``dense_size`` with
       ``dense_activation``, each followed by dropout with the same rate.

    ``num_conv_layers: 0`` with ``pooling: mean`` is the bag-of-embeddings model, and with dense
    layers and ``token_dropout`` the deep averaging network (DAN).

    Call arguments:
        inputs: ``[batch, time, dim]`` float, e.g. word embeddings.
        sequence_length: ``[batch]`` int valid lengths; ``None``: nothing is padded.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``[batch, width]`` features in the layer's compute dtype: ``width`` is ``dense_size`` with
        dense layers, else ``filters * len(kernel_sizes)`` with convolutions, else ``dim``.

    Example:
        >>> encoder = Conv1DEncoder({"kernel_sizes": [2, 3], "filters": 16})
        >>> encoder(tf.zeros([2, 7, 32]), sequence_length=tf.constant([7, 3])).shape
        TensorShape([2, 32])
    """

    HPARAMS_DOC = {
        "num_conv_layers": "Number of convolution layers; 0: pool the inputs themselves.",
        "kernel_sizes": "Kernel size (window width) of each parallel branch of every layer.",
        "filters": "Number of filters of each branch.",
        "conv_activation": "Activation of the convolutions (a registered name or {type, kwargs}).",
        "pooling": "'max' or 'mean' over the valid time steps.",
        "token_dropout": "Rate at which whole time steps (words) are dropped in training.",
        "dropout_rate": "Dropout on the pooled features and after every dense layer.",
        "num_dense_layers": "Number of dense layers after pooling.",
        **DENSE_STACK_DOC,
        "initializer": "Kernel initializer of the convolutions and dense layers ({type, kwargs}).",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_conv_hparams(hp)
        if hp.pooling not in _POOLINGS:
            raise HParamsError(f"expected one of {_POOLINGS}, got {hp.pooling!r}", "pooling")
        check_rate(hp, "token_dropout", "dropout_rate")
        conv_activation = get_activation(hp.conv_activation, "conv_activation")
        layer = {"dtype": self.dtype_policy}
        initializer = get_initializer(hp.initializer)
        if initializer is not None:
            layer["kernel_initializer"] = initializer
        self.convs = conv_branches(hp, "same", conv_activation, layer)
        self.dense_layers = dense_stack(hp, layer)
        needs_seed = hp.token_dropout > 0 or hp.dropout_rate > 0
        self.seed_generator = keras.random.SeedGenerator() if needs_seed else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_conv_layers": 1,
            "kernel_sizes": [3, 4, 5],
            "filters": 100,
            "conv_activation": {"type": "relu", "kwargs": {}},
            "pooling": "max",
            "token_dropout": 0.0,
            "dropout_rate": 0.5,
            "num_dense_layers": 0,
            "dense_size": 128,
            "dense_activation": {"type": "relu", "kwargs": {}},
            "initializer": {"type": "GlorotUniform", "kwargs": {}},
            "name": "conv1d_encoder",
        }

    @property
    def _conv_width(self) -> int:
        return self.hparams.filters * len(self.hparams.kernel_sizes)

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        width = inputs_shape[-1]
        if width is None:
            raise ValueError(
                f"{self.name}: the inputs' last axis must be known, got {inputs_shape}"
            )
        width = build_conv_branches(self.convs, self.hparams, width)
        for dense in self.dense_layers:
            dense.build((None, width))
            width = dense.units
        self.built = True

    def call(self, inputs: Any, sequence_length: Any = None, training: Any = None) -> Any:
        hp = self.hparams
        time = ops.shape(inputs)[1]
        if sequence_length is None:
            sequence_length = ops.full((ops.shape(inputs)[0],), time, dtype="int32")
        valid = sequence_mask(sequence_length, time)
        x = inputs
        pooled_steps = valid
        if training and hp.token_dropout > 0:
            shape = (ops.shape(inputs)[0], time)
            kept = keras.random.uniform(shape, seed=self.seed_generator) >= hp.token_dropout
            x = x * ops.cast(kept, x.dtype)[:, :, None]
            if not self.convs:
                pooled_steps = ops.logical_and(valid, kept)
        branches = len(hp.kernel_sizes)
        for start in range(0, len(self.convs), branches):
            # Zero the padded steps so that 'same' windows reaching past the end see zeros.
            x = x * ops.cast(valid, x.dtype)[:, :, None]
            outputs = [conv(x) for conv in self.convs[start : start + branches]]
            x = ops.concatenate(outputs, axis=-1) if branches > 1 else outputs[0]
        if hp.pooling == "max":
            features = masked_max_pool(x, pooled_steps)
        else:
            features = masked_mean_pool(x, pooled_steps)
        features = dropout(features, hp.dropout_rate, training, self.seed_generator)
        for dense in self.dense_layers:
            features = dropout(dense(features), hp.dropout_rate, training, self.seed_generator)
        return features

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        width = inputs_shape[-1]
        if self.dense_layers:
            width = self.hparams.dense_size
        elif self.convs:
            width = self._conv_width
        return (inputs_shape[0], width)
