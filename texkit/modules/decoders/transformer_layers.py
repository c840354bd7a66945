"""The parts of :class:`~texkit.modules.decoders.TransformerDecoder`: its block (with a cached
step), the output layer tied to a word embedder, and the forcing of prompt tokens."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from texkit.core.attention import MultiHeadAttention
from texkit.modules.decoders.decoding import forced_logits, where_batch
from texkit.modules.encoders.transformer_encoder import (
    TransformerBlock,
    _layer_norm,
    attention_hparams,
)

__all__ = ["DecoderBlock", "TiedOutput", "force_context"]


class DecoderBlock(TransformerBlock):
    """Causal self-attention, optional cross-attention to the memory, feed-forward."""

    def __init__(self, hparams: Any, initializer: Any, norm: str, cross: bool, **kwargs: Any):
        super().__init__(hparams, initializer, norm, **kwargs)
        self.cross_attention = None
        if cross:
            self.cross_attention = MultiHeadAttention(
                attention_hparams(hparams, "cross_attention"), dtype=self.dtype_policy
            )
            self.cross_attention_norm = _layer_norm(
                hparams.layer_norm_epsilon, "cross_attention_norm", self.dtype_policy
            )

    def build(self, inputs_shape: Any, memory_shape: Any = None, *args: Any, **kw: Any) -> None:
        super().build(inputs_shape)
        if self.cross_attention is not None:
            self.cross_attention.build(inputs_shape, memory_shape)
            self.cross_attention_norm.build(inputs_shape)
        self.built = True

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
        beams: tuple[int, Any] | None = None,
    ) -> tuple[Any, Any]:
        """Queries at steps ``time ..`` against the cache and the projected memory.

        ``beams``: ``(beam_width, ancestry)`` when the rows are beam search's hypotheses over
        caches that never move (see :meth:`MultiHeadAttention.call_cached_beams`); the memory
        then has one row per example, not per hypothesis.
        """
        new_cache = []

        def self_attend(y: Any) -> Any:
            if beams is None:
                outputs, written = self.self_attention.call_cached(
                    y, cache, time, training=training
                )
            else:
                width, ancestry = beams
                outputs, written = self.self_attention.call_cached_beams(
                    y, cache, time, ancestry, width
                )
            new_cache.append(written)
            return outputs

        def cross_attend(y: Any) -> Any:
            if beams is None:
                return self.cross_attention.attend(y, memory_kv, memory_mask, training=training)
            # Every hypothesis of an example attends to the example's one memory: its queries
            # go in as that example's queries.
            shape = tf.shape(y)
            grouped = tf.reshape(y, [-1, beams[0] * shape[1], y.shape[-1]])
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
        table = keras.ops.cast(self.embedder.embedding, self.compute_dtype)
        logits = keras.ops.matmul(x, keras.ops.transpose(table))
        if self.use_bias:
            logits = logits + keras.ops.cast(self.bias, self.compute_dtype)
        return logits


def force_context(logits: Any, time: Any, context: Any, context_length: Any) -> Any:
    """At step ``time``, rows whose context goes on past ``time`` get the
    :func:`~texkit.modules.decoders.forced_logits` of its next token (0 for it, ``-1e9`` for every
    other), so every algorithm picks it with probability 1 and it adds nothing to a hypothesis'
    log-probability."""
    position = time + 1
    forced = position < context_length
    index = tf.minimum(position, tf.shape(context)[1] - 1)
    token = tf.gather(context, index, axis=1)
    return where_batch(forced, forced_logits(token, tf.shape(logits)[-1]), logits)
