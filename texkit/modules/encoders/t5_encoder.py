"""T5's encoder, and the stack of blocks its encoder and decoder share.

A T5 stack (:class:`T5Stack`) is its blocks (self-attention, cross-attention in the decoder,
feed-forward, each after an RMS norm and added back), one relative position table that every
block uses, and a final norm, all made of :mod:`texkit.core` blocks
(:class:`~texkit.core.relative_attention.RelativeAttention`,
:class:`~texkit.core.feed_forward.FeedForward`, :class:`~texkit.core.normalization.RMSNorm`,
:class:`~texkit.core.relative_position.RelativePositionBias`) with T5's layer names and
initializers. The model, its hparams and the differences from :mod:`texkit.core.transformer` are
described in :mod:`texkit.modules.t5`.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from texkit.core.attention import attention_mask
from texkit.core.dropout import dropout
from texkit.core.feed_forward import FeedForward
from texkit.core.normalization import RMSNorm
from texkit.core.relative_attention import RelativeAttention
from texkit.core.relative_position import RelativePositionBias
from texkit.modules.embedders import WordEmbedder

__all__ = ["FEED_FORWARD", "T5Encoder", "T5Stack", "normal_initializer"]

# feed_forward_proj: (activation, gated).
FEED_FORWARD = {"relu": ("relu", False), "gated-gelu": ("gelu_new", True),
                "gated-relu": ("relu", True), "gelu": ("gelu_new", False)}  # fmt: skip
_ACTIVATIONS = {"relu": "relu", "gelu_new": {"type": "gelu", "kwargs": {"approximate": True}}}


def normal_initializer(stddev: float) -> keras.initializers.Initializer:
    """T5's initializer: normal, mean 0, ``stddev`` (already times ``initializer_factor``)."""
    return keras.initializers.RandomNormal(stddev=stddev)


def _attention(hp: Any, name: str, dtype: Any) -> RelativeAttention:
    """No biases, no scaling of the scores, projections named as in T5 (``q k v o``)."""
    factor, units = hp.initializer_factor, hp.num_heads * hp.d_kv
    stddevs = ((hp.d_model * hp.d_kv) ** -0.5, hp.d_model**-0.5, hp.d_model**-0.5, units**-0.5)
    return RelativeAttention(
        hp.num_heads, hp.d_kv, hp.d_model, scale=None, use_bias=False,
        dropout_rate=hp.dropout_rate, names=("q", "k", "v", "o"),
        kernel_initializer=[normal_initializer(factor * s) for s in stddevs], name=name,
        dtype=dtype,
    )  # fmt: skip


def _feed_forward(hp: Any, dtype: Any) -> FeedForward:
    """``wo(act(x wi_0) [* (x wi_1)])``: no biases, T5's layer names."""
    activation, gated = FEED_FORWARD[hp.feed_forward_proj]
    factor = hp.initializer_factor
    return FeedForward(
        hp.d_ff, hp.d_model, activation=_ACTIVATIONS[activation], gated=gated, use_bias=False,
        dropout_rate=hp.dropout_rate, names=("wi_0", "wi_1", "wo") if gated else ("wi_0", "wo"),
        kernel_initializer=normal_initializer(factor * hp.d_model**-0.5),
        output_initializer=normal_initializer(factor * hp.d_ff**-0.5), name="ffn", dtype=dtype,
    )  # fmt: skip


def _rms_norm(epsilon: float, name: str, dtype: Any) -> RMSNorm:
    return RMSNorm(epsilon=epsilon, name=name, dtype=dtype)


class _Block(keras.layers.Layer):
    """Self-attention, cross-attention (decoder), feed-forward; each pre-normed and residual.

    The class keeps its name: ``.keras`` files address the items of a list (``T5Stack.blocks``)
    by their class's name (``__block``, ``__block_1``, ...).
    """

    def __init__(self, hp: Any, cross: bool, **kwargs: Any):
        super().__init__(**kwargs)
        policy, eps = self.dtype_policy, hp.layer_norm_epsilon
        self.rate = hp.dropout_rate
        self.self_attention = _attention(hp, "self_attention", policy)
        self.self_attention_norm = _rms_norm(eps, "self_attention_norm", policy)
        self.cross_attention = self.cross_attention_norm = None
        if cross:
            self.cross_attention = _attention(hp, "cross_attention", policy)
            self.cross_attention_norm = _rms_norm(eps, "cross_attention_norm", policy)
        self.ffn = _feed_forward(hp, policy)
        self.ffn_norm = _rms_norm(eps, "ffn_norm", policy)
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        for layer in (self.self_attention, self.self_attention_norm, self.ffn, self.ffn_norm,
                      self.cross_attention, self.cross_attention_norm):  # fmt: skip
            if layer is not None:
                layer.build(shape)
        self.built = True

    def residual(self, x: Any, y: Any, training: Any) -> Any:
        return x + dropout(y, self.rate, training, self.seed_generator)

    def call(self, x: Any, self_kv: Any, bias: Any, mask: Any, memory_kv: Any = None,
             memory_mask: Any = None, training: Any = None) -> Any:  # fmt: skip
        """``self_kv``: the keys and values to attend to (``None``: ``x``'s own)."""
        y = self.self_attention_norm(x)
        kv = self.self_attention.project(y) if self_kv is None else self_kv
        x = self.residual(x, self.self_attention.attend(y, kv, bias, mask, training), training)
        if self.cross_attention is not None:
            y = self.cross_attention_norm(x)
            attended = self.cross_attention.attend(y, memory_kv, None, memory_mask, training)
            x = self.residual(x, attended, training)
        return self.residual(x, self.ffn(self.ffn_norm(x), training=training), training)


class T5Stack(keras.layers.Layer):
    """The blocks of one side (``decoder``: with cross-attention and causal buckets), the
    relative position table (``relative_bias``) and the final norm, from T5's hparams.

    The encoder and the decoder drive the blocks themselves (the decoder with its caches):
    :meth:`position_bias` gives the bias every block adds to its self-attention scores, and
    :meth:`finish` the final norm and dropout.
    """

    def __init__(self, hp: Any, num_blocks: int, decoder: bool, **kwargs: Any):
        super().__init__(**kwargs)
        policy = self.dtype_policy
        self.decoder = decoder
        self.rate = hp.dropout_rate
        self.relative_bias = RelativePositionBias(
            hp.relative_attention_num_buckets, hp.num_heads, hp.relative_attention_max_distance,
            bidirectional=not decoder,
            embeddings_initializer=normal_initializer(hp.initializer_factor * hp.d_model**-0.5),
            name="relative_attention_bias", dtype=policy,
        )  # fmt: skip
        self.blocks = [_Block(hp, decoder, name=f"block_{i}", dtype=policy)
                       for i in range(num_blocks)]  # fmt: skip
        self.final_norm = _rms_norm(hp.layer_norm_epsilon, "final_norm", policy)
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        self.relative_bias.build(None)
        for block in self.blocks:
            block.build(shape)
        self.final_norm.build(shape)
        self.built = True

    def position_bias(self, query_positions: Any, key_positions: Any) -> Any:
        """float32 ``[1, heads, queries, keys]`` for int ``[queries]`` and ``[keys]`` positions."""
        return self.relative_bias(query_positions, key_positions)

    def finish(self, x: Any, training: Any) -> Any:
        return dropout(self.final_norm(x), self.rate, training, self.seed_generator)


class T5Encoder(keras.layers.Layer):
    """T5's encoder stack on the shared embeddings (built by
    :class:`~texkit.modules.t5.T5EncoderDecoder`).

    Call arguments:
        input_ids: ``[batch, time]`` int ids.
        sequence_length: ``[batch]`` valid lengths (``None``: nothing is padded).
        training: Keras' training flag.

    Returns:
        ``[batch, time, d_model]``: the stack's outputs after its final norm.
    """

    def __init__(self, hparams: Any, embedder: WordEmbedder, **kwargs: Any):
        super().__init__(**kwargs)
        self.embedder = embedder
        self.rate = hparams.dropout_rate
        self.stack = T5Stack(
            hparams, hparams.num_layers, False, name="stack", dtype=self.dtype_policy
        )
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> None:
        self.stack.build((None, None, self.embedder.dim))
        self.built = True

    def call(self, input_ids: Any, sequence_length: Any = None, training: Any = None) -> Any:
        x = dropout(self.embedder(input_ids), self.rate, training, self.seed_generator)
        time = ops.shape(input_ids)[1]
        positions = ops.arange(time, dtype="int32")
        bias = self.stack.position_bias(positions, positions)
        mask = attention_mask(time, time, sequence_length)
        for block in self.stack.blocks:
            x = block(x, None, bias, mask, training=training)
        return self.stack.finish(x, training)
