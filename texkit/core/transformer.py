"""The Transformer's blocks, shared by the encoder and the decoder stacks.

A block is multi-head self-attention followed by a position-wise feed-forward network
``dense_2(activation(dense_1(x)))``, each sub-layer with dropout and a residual connection, in one
of two orders:

* ``norm: post`` (Vaswani et al., 2017; BERT): ``x = LayerNorm(x + Dropout(sublayer(x)))``;
* ``norm: pre`` (the order most recent models train with): ``x = x + Dropout(sublayer(
  LayerNorm(x)))``.

The decoder's block adds cross-attention to a memory between the two sub-layers, and a step that
reads and writes a key/value cache. :class:`TiedOutput` computes logits from a word embedder's
table. Layer norm and the attention softmax run in float32. In training, dropout and a GELU
feed-forward activation run through :mod:`texkit.core.fused`; inference computes the activation
with the feed-forward matrix product.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from texkit.core import fused
from texkit.core.attention import MultiHeadAttention, dense_2d
from texkit.core.dropout import dropout
from texkit.core.layers import get_activation
from texkit.core.quantized_table import table_logits
from texkit.errors import HParamsError, hparams_scope
from texkit.hparams import check_layer_count, check_positive, check_rate, check_width

__all__ = [
    "DecoderBlock",
    "STACK_HPARAMS_DOC",
    "TiedOutput",
    "TransformerBlock",
    "attention_hparams",
    "check_stack_hparams",
    "default_stack_hparams",
    "layer_norm",
]

_NORMS = ("pre", "post")


def layer_norm(epsilon: float, name: str, dtype: Any) -> keras.layers.LayerNormalization:
    return keras.layers.LayerNormalization(epsilon=epsilon, name=name, dtype=dtype)


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
    check_width(hp, "dim", "poswise_feedforward.dim")
    check_layer_count(hp, "num_blocks")
    check_positive(hp, "layer_norm_epsilon")
    # multihead_attention.* is checked once, by MultiHeadAttention itself (see _attention).
    check_rate(hp, "embedding_dropout", "residual_dropout")


def _attention(hparams: Any, name: str, dtype: Any) -> MultiHeadAttention:
    """A block's MultiHeadAttention; its errors name ``multihead_attention.<key>``."""
    with hparams_scope("multihead_attention"):
        return MultiHeadAttention(attention_hparams(hparams, name), dtype=dtype)


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
        self.self_attention = _attention(hp, "self_attention", self.dtype_policy)
        self.attention_norm = layer_norm(hp.layer_norm_epsilon, "attention_norm", self.dtype_policy)
        # The activation is applied by _feedforward: in training a fused one where there is one
        # (GELU: one XLA loop forward and one back instead of a dozen ops), else the same
        # function, which TensorFlow's CPU build fuses with the matmul and bias add.
        self.ffn_activation = get_activation(ffn.activation, "poswise_feedforward.activation")
        self.ffn_training_activation = (
            fused.training_activation(self.ffn_activation) or self.ffn_activation
        )
        self.ffn_inner = keras.layers.Dense(ffn.dim, name="ffn_inner", **dense)
        self.ffn_output = keras.layers.Dense(hp.dim, name="ffn_output", **dense)
        self.ffn_norm = layer_norm(hp.layer_norm_epsilon, "ffn_norm", self.dtype_policy)
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
            return norm(x + dropout(sublayer(x), rate, training, seed))
        return x + dropout(sublayer(norm(x)), rate, training, seed)

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


class DecoderBlock(TransformerBlock):
    """Causal self-attention, optional cross-attention to the memory, feed-forward."""

    def __init__(self, hparams: Any, initializer: Any, norm: str, cross: bool, **kwargs: Any):
        super().__init__(hparams, initializer, norm, **kwargs)
        self.cross_attention = None
        if cross:
            self.cross_attention = _attention(hparams, "cross_attention", self.dtype_policy)
            self.cross_attention_norm = layer_norm(
                hparams.layer_norm_epsilon, "cross_attention_norm", self.dtype_policy
            )

    def build(self, inputs_shape: Any, memory_shape: Any = None, *args: Any, **kw: Any) -> None:
        super().build(inputs_shape)
        if self.cross_attention is not None:
            self.cross_attention.build(inputs_shape, memory_shape)
            self.cross_attention_norm.build(inputs_shape)
        self.built = True

    def init_cache(self, batch_size: Any, max_length: int) -> Any:
        """The self-attention's empty :class:`~texkit.core.attention.KVCache` for :meth:`step`."""
        return self.self_attention.init_cache(batch_size, max_length)

    def _attend_memory(self, x: Any, attend: Any, training: Any) -> Any:
        if self.cross_attention is None:
            return x
        return self._residual(x, self.cross_attention_norm, attend, training)

    def call(
        self,
        x: Any,
        memory: Any = None,
        memory_sequence_length: Any = None,
        training: Any = None,
    ) -> Any:
        """The whole sequence at once (teacher forcing)."""
        x = self._residual(
            x,
            self.attention_norm,
            lambda y: self.self_attention(y, causal=True, training=training),
            training,
        )
        x = self._attend_memory(
            x,
            lambda y: self.cross_attention(y, memory, memory_sequence_length, training=training),
            training,
        )
        return self._feedforward(x, training)

    def step(
        self,
        x: Any,
        cache: Any,
        time: Any,
        memory_kv: Any,
        memory_mask: Any,
        training: Any,
        beam_width: int | None = None,
        ancestry: Any = None,
    ) -> tuple[Any, Any]:
        """Queries at steps ``time ..`` against the cache and the projected memory.

        ``beam_width`` and ``ancestry`` (``[rows, max_length]`` int32): the rows are beam search's
        hypotheses, ``beam_width`` per example, over caches that never move (see
        :meth:`MultiHeadAttention.call_cached_beams`); the memory then has one row per example,
        not per hypothesis. ``None``: one row per sequence.
        """
        new_cache = []

        def self_attend(y: Any) -> Any:
            if beam_width is None:
                outputs, written = self.self_attention.call_cached(
                    y, cache, time, training=training
                )
            else:
                outputs, written = self.self_attention.call_cached_beams(
                    y, cache, time, ancestry, beam_width
                )
            new_cache.append(written)
            return outputs

        def cross_attend(y: Any) -> Any:
            if beam_width is None:
                return self.cross_attention.attend(y, memory_kv, memory_mask, training=training)
            # Every hypothesis of an example attends to the example's one memory: its queries
            # go in as that example's queries.
            shape = tf.shape(y)
            grouped = tf.reshape(y, [-1, beam_width * shape[1], y.shape[-1]])
            outputs = self.cross_attention.attend(grouped, memory_kv, memory_mask)
            return tf.reshape(outputs, [shape[0], shape[1], outputs.shape[-1]])

        x = self._residual(x, self.attention_norm, self_attend, training)
        x = self._attend_memory(x, cross_attend, training)
        return self._feedforward(x, training), new_cache[0]


class TiedOutput(keras.layers.Layer):
    """Logits from the word embeddings: ``x E^T (+ b)``, sharing ``E`` with the embedder."""

    def __init__(self, embedder: keras.layers.Layer, use_bias: bool, **kwargs: Any):
        super().__init__(**kwargs)
        self.embedder = embedder
        self.use_bias = use_bias

    def build(self, inputs_shape: Any) -> None:
        if not self.embedder.built:
            self.embedder.build()
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias", shape=(self.embedder.vocab_size,), initializer="zeros"
            )
        self.built = True

    def call(self, x: Any) -> Any:
        logits = table_logits(keras.ops.cast(x, self.compute_dtype), self.embedder)
        if self.use_bias:
            logits = logits + keras.ops.cast(self.bias, self.compute_dtype)
        return logits


STACK_HPARAMS_DOC = {
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
}


def default_stack_hparams() -> dict:
    """The hparams every Transformer stack has (the encoder's defaults; ``name`` is the stack's)."""
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
    }
