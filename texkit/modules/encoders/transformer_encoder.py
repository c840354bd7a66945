"""TransformerEncoder: a stack of self-attention and feed-forward blocks.

Each block is multi-head self-attention followed by a position-wise feed-forward network
``dense_2(activation(dense_1(x)))``, each sub-layer with dropout and a residual connection, in one
of two orders:

* ``norm: post`` (Vaswani et al., 2017; BERT): ``x = LayerNorm(x + Dropout(sublayer(x)))``. The
  inputs are layer-normalized once before the first block, as BERT normalizes its embeddings.
* ``norm: pre`` (the order most recent models train with): ``x = x + Dropout(sublayer(
  LayerNorm(x)))``, with one more layer norm after the last block.

Dropout on the inputs (``embedding_dropout``) comes first in both orders, after the input layer
norm of the post-norm order. Layer norm and the attention softmax run in float32.

In training, dropout and a GELU feed-forward activation run through :mod:`texkit.core.fused`
(each one XLA-compiled loop forward and one back; dropout draws its random bits from a hash of
each element's position and the seed, inside that loop); inference computes the activation with
the feed-forward matrix product.
"""

from __future__ import annotations

from typing import Any

import keras

from texkit.core import fused
from texkit.core.attention import MultiHeadAttention, dense_2d
from texkit.core.layers import get_activation, get_initializer
from texkit.hparams import HParamsError, check_positive, check_positive_int, check_rate
from texkit.modules.base import ModuleBase

__all__ = ["TransformerEncoder"]

_NORMS = ("pre", "post")


def _layer_norm(epsilon: float, name: str, dtype: Any) -> keras.layers.LayerNormalization:
    return keras.layers.LayerNormalization(epsilon=epsilon, name=name, dtype=dtype)


def _dropout(x: Any, rate: float, training: Any, seed: Any) -> Any:
    if training and rate > 0:
        return fused.dropout(x, rate, seed)
    return x


def attention_hparams(hparams: Any, name: str) -> dict:
    """A block's MultiHeadAttention hparams from a Transformer stack's ``multihead_attention``."""
    attention = hparams.multihead_attention
    return {
        **attention.todict(),
        "num_units": attention.num_units or hparams.dim,
        "output_dim": hparams.dim,
        "initializer": attention.initializer or hparams.initializer,
        "name": name,
    }


def check_stack_hparams(hp: Any) -> None:
    """Checks the hparams a Transformer encoder and decoder share, naming the bad key."""
    if hp.norm not in _NORMS:
        raise HParamsError(f"expected one of {_NORMS}, got {hp.norm!r}", "norm")
    check_positive_int(hp, "dim", "num_blocks", "poswise_feedforward.dim")
    check_positive(hp, "layer_norm_epsilon")
    attention = hp.multihead_attention
    if attention.num_heads < 1 or (attention.num_units or hp.dim) % attention.num_heads:
        raise HParamsError(
            f"num_heads={attention.num_heads} must be positive and divide num_units="
            f"{attention.num_units or hp.dim}",
            "multihead_attention.num_heads",
        )
    check_rate(hp, "multihead_attention.dropout_rate", "embedding_dropout", "residual_dropout")


class TransformerBlock(keras.layers.Layer):
    """One self-attention + feed-forward block, built and configured by a Transformer stack.

    ``_residual`` wraps a sub-layer in dropout, the residual sum and layer norm in the stack's
    order; the decoder's block adds cross-attention between the two sub-layers.
    """

    def __init__(self, hparams: Any, initializer: Any, norm: str, **kwargs: Any):
        super().__init__(**kwargs)
        hp = hparams
        dense = {"dtype": self.dtype_policy}
        if initializer is not None:
            dense["kernel_initializer"] = initializer
        ffn = hp.poswise_feedforward
        self.norm = norm
        self.residual_dropout = hp.residual_dropout
        self.self_attention = MultiHeadAttention(
            attention_hparams(hp, "self_attention"), dtype=self.dtype_policy
        )
        self.attention_norm = _layer_norm(
            hp.layer_norm_epsilon, "attention_norm", self.dtype_policy
        )
        # The activation is applied by _feedforward: in training a fused one where there is one
        # (GELU: one XLA loop forward and one back instead of a dozen ops), else the same
        # function, which TensorFlow's CPU build fuses with the matmul and bias add.
        self.ffn_activation = get_activation(ffn.activation, "poswise_feedforward.activation")
        self.ffn_training_activation = (
            fused.training_activation(self.ffn_activation) or self.ffn_activation
        )
        self.ffn_inner = keras.layers.Dense(ffn.dim, name="ffn_inner", **dense)
        self.ffn_output = keras.layers.Dense(hp.dim, name="ffn_output", **dense)
        self.ffn_norm = _layer_norm(hp.layer_norm_epsilon, "ffn_norm", self.dtype_policy)
        self.seed_generator = keras.random.SeedGenerator() if self.residual_dropout > 0 else None

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        self.self_attention.build(inputs_shape)
        self.attention_norm.build(inputs_shape)
        self.ffn_inner.build(inputs_shape)
        self.ffn_output.build((*inputs_shape[:-1], self.ffn_inner.units))
        self.ffn_norm.build(inputs_shape)
        self.built = True

    def _residual(self, x: Any, norm: Any, sublayer: Any, training: Any) -> Any:
        rate, seed = self.residual_dropout, self.seed_generator
        if self.norm == "post":
            return norm(x + _dropout(sublayer(x), rate, training, seed))
        return x + _dropout(sublayer(norm(x)), rate, training, seed)

    def _feedforward(self, x: Any, training: Any) -> Any:
        activation = self.ffn_training_activation if training else self.ffn_activation
        return self._residual(
            x,
            self.ffn_norm,
            lambda y: dense_2d(self.ffn_output, dense_2d(self.ffn_inner, y, activation)),
            training,
        )

    def call(self, x: Any, sequence_length: Any = None, training: Any = None) -> Any:
        x = self._residual(
            x,
            self.attention_norm,
            lambda y: self.self_attention(
                y, memory_sequence_length=sequence_length, training=training
            ),
            training,
        )
        return self._feedforward(x, training)


class TransformerEncoder(ModuleBase):
    """The Transformer encoder (Vaswani et al., 2017), in pre-norm or post-norm (BERT) order.

    Call arguments:
        inputs: ``[batch, time, dim]`` embedded inputs (word plus position embeddings).
        sequence_length: ``[batch]`` valid lengths; padded steps are masked out of attention and
            never change the outputs at valid steps. ``None``: nothing is padded.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``[batch, time, dim]`` in the layer's compute dtype. Outputs at padded steps are
        computed but meaningless.

    Example:
        >>> encoder = TransformerEncoder({"dim": 64, "num_blocks": 2,
        ...     "multihead_attention": {"num_heads": 4}, "poswise_feedforward": {"dim": 128}})
        >>> encoder(tf.zeros([2, 7, 64]), sequence_length=tf.constant([7, 3])).shape
        TensorShape([2, 7, 64])
    """

    HPARAMS_DOC = {
        "dim": "Model size: of the inputs, of every block and of the outputs.",
        "num_blocks": "Number of blocks.",
        "multihead_attention.num_heads": "Number of attention heads.",
        "multihead_attention.num_units": "Attention projection size; None means dim.",
        "multihead_attention.dropout_rate": "Dropout on the attention weights.",
        "multihead_attention.use_bias": "Whether the attention projections have biases.",
        "multihead_attention.initializer": "Attention kernel initializer; None: `initializer`.",
        "poswise_feedforward.dim": "Inner size of the feed-forward network.",
        "poswise_feedforward.activation": (
            "Activation of the feed-forward network ({type, kwargs}, or a registered name alone: "
            "'relu', 'gelu' is the exact erf form, {type: gelu, kwargs: {approximate: true}} "
            "the tanh approximation)."
        ),
        "embedding_dropout": "Dropout on the inputs.",
        "residual_dropout": "Dropout on each sub-layer's output, before the residual sum.",
        "norm": "'post' (BERT: add, then layer norm) or 'pre' (layer norm, then sub-layer).",
        "layer_norm_epsilon": "Epsilon of every layer norm.",
        "initializer": "Kernel initializer of every dense layer ({type, kwargs}).",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_stack_hparams(hp)
        initializer = get_initializer(hp.initializer)
        self.input_norm = None
        if hp.norm == "post":
            self.input_norm = _layer_norm(hp.layer_norm_epsilon, "input_norm", self.dtype_policy)
        self.blocks = [
            TransformerBlock(hp, initializer, hp.norm, name=f"block_{i}", dtype=self.dtype_policy)
            for i in range(hp.num_blocks)
        ]
        self.output_norm = None
        if hp.norm == "pre":
            self.output_norm = _layer_norm(hp.layer_norm_epsilon, "output_norm", self.dtype_policy)
        self.seed_generator = keras.random.SeedGenerator() if hp.embedding_dropout > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "dim": 512,
            "num_blocks": 6,
            "multihead_attention": {
                "num_heads": 8,
                "num_units": None,
                "dropout_rate": 0.1,
                "use_bias": True,
                "initializer": None,
            },
            "poswise_feedforward": {"dim": 2048, "activation": {"type": "relu", "kwargs": {}}},
            "embedding_dropout": 0.1,
            "residual_dropout": 0.1,
            "norm": "pre",
            "layer_norm_epsilon": 1e-6,
            "initializer": {
                "type": "VarianceScaling",
                "kwargs": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform"},
            },
            "name": "transformer_encoder",
        }

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        if inputs_shape[-1] != self.hparams.dim:
            raise ValueError(
                f"{self.name}: inputs have size {inputs_shape[-1]}, expected dim={self.hparams.dim}"
            )
        for layer in [self.input_norm, *self.blocks, self.output_norm]:
            if layer is not None:
                layer.build(inputs_shape)
        self.built = True

    def call(self, inputs: Any, sequence_length: Any = None, training: Any = None) -> Any:
        x = inputs
        if self.input_norm is not None:
            x = self.input_norm(x)
        x = _dropout(x, self.hparams.embedding_dropout, training, self.seed_generator)
        for block in self.blocks:
            x = block(x, sequence_length=sequence_length, training=training)
        if self.output_norm is not None:
            x = self.output_norm(x)
        return x

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return inputs_shape
