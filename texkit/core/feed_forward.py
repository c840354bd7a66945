"""Position-wise feed-forward networks: plain and gated.

:class:`FeedForward` computes, for each position's vector ``x``::

    plain:  down(act(x W_in))                       (the Transformer, BERT; T5 1.0: relu)
    gated:  down(act(x W_gate) * (x W_up))          (GLU variants: SwiGLU with silu in Llama,
                                                     Mistral and Qwen; GeGLU with gelu in T5 1.1
                                                     and Gemma)

with or without biases, and dropout on the inner activations in training.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras

from texkit.core.attention import dense_2d
from texkit.core.dropout import dropout
from texkit.core.layers import get_activation

__all__ = ["FeedForward"]


@keras.saving.register_keras_serializable(package="texkit")
class FeedForward(keras.layers.Layer):
    """``down(act(x W_gate) * (x W_up))`` (``gated``) or ``down(act(x W_in))``.

    Args:
        hidden_dim: the inner size (``d_ff``, ``intermediate_size``).
        output_dim: the size of the outputs (usually the model's width).
        activation: a name or ``{type, kwargs}`` (:func:`texkit.core.layers.get_activation`:
            ``"relu"``, ``"silu"``, ``{"type": "gelu", "kwargs": {"approximate": True}}``),
            applied to the first inner projection.
        gated: whether a second inner projection (``up``) multiplies the activation.
        use_bias: whether the projections have biases.
        dropout_rate: dropout on the inner activations (after gating), in training only.
        names: the layer names of the inner projections, then of the output projection (two
            names, three when ``gated``); the default is ``("inner", "output")`` or ``("gate",
            "up", "down")``. Checkpoint name tables refer to the attributes instead:
            ``inner.0`` (``W_in`` or ``W_gate``), ``inner.1`` (``W_up``) and ``output_dense``.
        kernel_initializer: initializer of the inner kernels.
        output_initializer: initializer of the output kernel (``None``: ``kernel_initializer``).
        **kwargs: Keras layer arguments (``name``, ``dtype``).

    Call arguments:
        x: ``[..., input_dim]``.
        training: Keras' training flag.

    Returns:
        ``[..., output_dim]`` in the layer's compute dtype.
    """

    def __init__(
        self,
        hidden_dim: int,
        output_dim: int,
        activation: Any = "relu",
        gated: bool = False,
        use_bias: bool = False,
        dropout_rate: float = 0.0,
        names: Sequence[str] | None = None,
        kernel_initializer: Any = "glorot_uniform",
        output_initializer: Any = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.hidden_dim, self.output_dim = int(hidden_dim), int(output_dim)
        self.gated, self.use_bias = bool(gated), bool(use_bias)
        self.dropout_rate = float(dropout_rate)
        self.activation_spec = activation
        self.activation = get_activation(activation)
        default = ("gate", "up", "down") if self.gated else ("inner", "output")
        self.names = tuple(names or default)
        if len(self.names) != len(default):
            raise ValueError(f"{self.name}: expected {len(default)} names, got {self.names!r}")
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.output_initializer = keras.initializers.get(output_initializer or kernel_initializer)
        self.inner = [self._dense(hidden_dim, self.kernel_initializer, n) for n in self.names[:-1]]
        self.output_dense = self._dense(output_dim, self.output_initializer, self.names[-1])
        self.seed_generator = keras.random.SeedGenerator() if self.dropout_rate > 0 else None

    def _dense(self, units: int, initializer: Any, name: str) -> keras.layers.Dense:
        return keras.layers.Dense(
            units, use_bias=self.use_bias, kernel_initializer=initializer, name=name,
            dtype=self.dtype_policy,
        )  # fmt: skip

    def build(self, input_shape: Any) -> None:
        for layer in self.inner:
            layer.build(input_shape)
        self.output_dense.build((*input_shape[:-1], self.hidden_dim))
        self.built = True

    def call(self, x: Any, training: Any = None) -> Any:
        hidden = dense_2d(self.inner[0], x, self.activation)
        if self.gated:
            hidden = hidden * dense_2d(self.inner[1], x)
        hidden = dropout(hidden, self.dropout_rate, training, self.seed_generator)
        return dense_2d(self.output_dense, hidden)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (*input_shape[:-1], self.output_dim)

    def get_config(self) -> dict:
        sizes = ("hidden_dim", "output_dim", "gated", "use_bias", "dropout_rate")
        config = {key: getattr(self, key) for key in sizes}
        for key in ("kernel_initializer", "output_initializer"):
            config[key] = keras.initializers.serialize(getattr(self, key))
        config.update(activation=self.activation_spec, names=list(self.names))
        return {**super().get_config(), **config}
