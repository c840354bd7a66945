"""One block of the Llama line of decoder-only models (Llama, Mistral, Qwen, Gemma, Phi-3).

:class:`LlamaBlock` is pre-norm causal self-attention and a feed-forward network, each added to
the residual stream::

    y = attention(norm_1(x))          (grouped-query, rotary; CausalSelfAttention)
    y = norm_2(y)                     (Gemma 2/3 only: "sandwich" norms)
    x = x + y
    y = feed_forward(norm_3(x))       (SwiGLU or GeGLU; FeedForward)
    y = norm_4(y)                     (Gemma 2/3 only)
    x = x + y

Every norm is an RMS norm (:class:`~texkit.core.normalization.RMSNorm`; Gemma stores ``weight -
1``). The attention's options (key/value heads, ``head_dim``, biases, query/key norms, scale,
soft-capping, sliding window, rotary settings) are the block's, so one class serves the whole
line; :class:`~texkit.modules.LlamaDecoder` makes a stack of them from its hparams.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from texkit.core.causal_attention import CausalSelfAttention
from texkit.core.dropout import dropout
from texkit.core.feed_forward import FeedForward
from texkit.core.normalization import RMSNorm

__all__ = ["LlamaBlock"]


class LlamaBlock(keras.layers.Layer):
    """A pre-norm block of causal self-attention and a gated feed-forward network.

    Args:
        attention: a :class:`~texkit.core.causal_attention.CausalSelfAttention` (built with the
            block's width as ``output_dim``).
        feed_forward: a :class:`~texkit.core.feed_forward.FeedForward`.
        epsilon: the RMS norms' epsilon.
        unit_offset: the norms store ``weight - 1`` (Gemma).
        sandwich: norms after the attention and after the feed-forward network too (Gemma 2/3).
        residual_dropout: dropout on each sub-layer's output, in training only.
        **kwargs: Keras layer arguments (``name``, ``dtype``).

    Call arguments:
        x: ``[batch, steps, dim]``.
        positions: int ``[steps]`` or ``[batch, steps]``, the steps' positions (rotary).
        cache, time: a :class:`~texkit.core.attention.KVCache` and the step of ``x``'s first
            step in it (decoding), or ``None``.
        training: Keras' training flag.
        ancestry, beam_width: beam search's hypotheses over caches that never move
            (:class:`~texkit.core.causal_attention.CausalSelfAttention`).

    Returns:
        ``(outputs [batch, steps, dim], cache)``: the cache with the steps written (``None``
        without one).
    """

    def __init__(self, attention: CausalSelfAttention, feed_forward: FeedForward,
                 epsilon: float = 1e-6, unit_offset: bool = False, sandwich: bool = False,
                 residual_dropout: float = 0.0, **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.self_attention = attention
        self.ffn = feed_forward
        self.residual_dropout = float(residual_dropout)

        def norm(name: str) -> RMSNorm:
            return RMSNorm(epsilon=epsilon, unit_offset=unit_offset, name=name,
                           dtype=self.dtype_policy)  # fmt: skip

        self.attention_norm, self.ffn_norm = norm("attention_norm"), norm("ffn_norm")
        self.post_attention_norm = norm("post_attention_norm") if sandwich else None
        self.post_ffn_norm = norm("post_ffn_norm") if sandwich else None
        self.seed_generator = keras.random.SeedGenerator() if self.residual_dropout else None

    def build(self, x_shape: Any, *args: Any, **kwargs: Any) -> None:
        norms = (self.attention_norm, self.ffn_norm, self.post_attention_norm, self.post_ffn_norm)
        for layer in (self.self_attention, self.ffn, *norms):
            if layer is not None and not layer.built:
                layer.build(x_shape)
        self.built = True

    def _residual(self, x: Any, y: Any, norm: Any, training: Any) -> Any:
        if norm is not None:
            y = norm(y)
        return x + dropout(y, self.residual_dropout, training, self.seed_generator)

    def call(self, x: Any, positions: Any, cache: Any = None, time: Any = None,
             training: Any = None, ancestry: Any = None,
             beam_width: int | None = None) -> tuple[Any, Any]:  # fmt: skip
        y, cache = self.self_attention(
            self.attention_norm(x), positions, cache=cache, time=time, training=training,
            ancestry=ancestry, beam_width=beam_width,
        )  # fmt: skip
        x = self._residual(x, y, self.post_attention_norm, training)
        y = self.ffn(self.ffn_norm(x), training=training)
        return self._residual(x, y, self.post_ffn_norm, training), cache

    # --- what the Transformer decoders' cached inference reads ---------------------------------

    def init_cache(self, batch_size: Any, max_length: int) -> Any:
        """An empty key/value cache of ``max_length`` steps (sized by the key/value heads)."""
        return self.self_attention.empty_cache(batch_size, max_length)

    def step(self, x: Any, cache: Any, time: Any, memory_kv: Any, memory_mask: Any,
             training: Any, beam_width: int | None = None,
             ancestry: Any = None) -> tuple[Any, Any]:  # fmt: skip
        """Steps ``time ..`` of ``x`` against the cache (no memory: a decoder-only block), in
        :class:`~texkit.core.transformer.DecoderBlock.step`'s signature."""
        positions = ops.cast(time, "int32") + ops.arange(ops.shape(x)[1], dtype="int32")
        return self.call(x, positions, cache=cache, time=time, training=training,
                         ancestry=ancestry, beam_width=beam_width)  # fmt: skip
