"""Causal self-attention of the Llama line: grouped queries, rotary positions, a key/value cache.

:class:`CausalSelfAttention` computes, for ``h`` query heads sharing ``g`` key/value heads (head
``i`` reads key/value head ``i // (h / g)``; ``g = h`` is multi-head, ``g = 1`` multi-query)::

    q, k, v = x W_q (+ b_q), x W_k (+ b_k), x W_v (+ b_v)     split into heads of head_dim
    q, k = rms_norm(q), rms_norm(k)                           (Qwen3, Gemma 3)
    q, k = rotary(q, positions), rotary(k, positions)
    scores = scale * q k^T                                    (scale: head_dim ** -0.5 by default)
    scores = softcap * tanh(scores / softcap)                 (softcap: Gemma 2)
    head_i = softmax(scores + mask) v,   output = concat(heads) W_o (+ b_o)

A query at step ``t`` sees the keys at steps ``s <= t``, and with ``sliding_window = w`` only
those with ``s > t - w`` (Mistral, Gemma 2/3's local layers). The key/value heads are not
copied to the query heads: the queries are grouped by the key/value head they read, so one
matrix product per key/value head serves its whole group. The scores, the mask and the softmax
are in float32 whatever the layer's dtype policy.

Cached decoding keeps a :class:`~texkit.core.attention.KVCache` of ``[batch, num_kv_heads,
max_length, head_dim]`` (:meth:`CausalSelfAttention.empty_cache`): a call with ``cache`` and
``time`` writes its steps' keys and values at ``time ..`` and attends over the cache, with
static shapes, so it compiles with XLA.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.core.attention import MASK_BIAS, KVCache, dense_2d, sequence_mask, write_steps
from texkit.core.dropout import dropout
from texkit.core.normalization import RMSNorm

__all__ = ["CausalSelfAttention", "causal_window_mask"]

_PROJECTIONS = ("query", "key", "value", "output")
_NORMS = ("query_norm", "key_norm")


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _positive_float(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be None or a positive number, got {value!r}")
    return float(value)


def causal_window_mask(query_steps: Any, key_steps: Any, sliding_window: int | None) -> Any:
    """``[query, key]`` booleans: query step ``t`` may see key step ``s`` when ``s <= t`` and,
    with a window ``w``, ``s > t - w``. The arguments are int32 step indices (``[query]`` and
    ``[key]``).

    >>> causal_window_mask(ops.arange(3), ops.arange(3), 2).numpy().astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [0, 1, 1]])
    """
    rows, cols = query_steps[:, None], key_steps[None, :]
    allowed = cols <= rows
    if sliding_window is not None:
        allowed = ops.logical_and(allowed, cols > rows - sliding_window)
    return allowed


def _follow_ancestry(cache: KVCache, ancestry: Any, beam_width: int) -> KVCache:
    """Each beam-search hypothesis' keys and values, gathered from the cache slots its steps
    were written in.

    The rows of ``cache`` are ``beam_width`` slots per example, next to each other, which never
    move; ``ancestry [rows, cache_time]`` int32 names, for each hypothesis and step, the slot of
    its example that holds it (the step written now: its own slot). Returns a
    :class:`~texkit.core.attention.KVCache` of the same shape whose row ``i`` is hypothesis
    ``i``'s history.
    """
    rows = ops.shape(ancestry)[0]
    first = (ops.arange(rows, dtype="int32") // beam_width) * beam_width
    source = ops.transpose(first[:, None] + ops.cast(ancestry, "int32"))  # [time, rows]

    def gather(tensor: Any) -> Any:
        by_time = tf.transpose(tensor, (2, 0, 1, 3))  # [time, rows, heads, depth]
        return tf.transpose(tf.gather(by_time, source, batch_dims=1), (1, 2, 0, 3))

    return KVCache(gather(cache.keys), gather(cache.values))


@keras.saving.register_keras_serializable(package="texkit")
class CausalSelfAttention(keras.layers.Layer):
    """Causal self-attention with grouped key/value heads (module docstring).

    Args:
        num_heads: the number of query heads.
        num_kv_heads: the number of key/value heads; must divide ``num_heads`` (``None``: equal).
        head_dim: the size of one head, independent of the model's width (Gemma: 256).
        output_dim: the size of the outputs (the model's width).
        use_qkv_bias: whether the query, key and value projections have biases (Qwen2).
        use_output_bias: whether the output projection has a bias.
        query_key_norm_epsilon: ``None``, or the epsilon of an RMS norm over ``head_dim`` applied
            to the queries and keys before the rotary embedding (Qwen3, Gemma 3).
        query_key_norm_unit_offset: the norms store ``weight - 1`` (Gemma 3's convention).
        scale: the factor of the scores (default ``head_dim ** -0.5``; Gemma 2:
            ``query_pre_attn_scalar ** -0.5``).
        softcap: ``None``, or the cap ``c`` of ``c * tanh(scores / c)`` (Gemma 2).
        sliding_window: ``None``, or the number of steps ``w`` a query sees (itself included).
        rotary: a :class:`~texkit.core.rotary.RotaryEmbedding`, or ``None`` for none.
        dropout_rate: dropout on the attention weights, in training only.
        names: the layer names of the query, key, value and output projections.
        norm_names: the layer names of the query and key norms.
        kernel_initializer: the initializer of the four kernels.
        **kwargs: Keras layer arguments (``name``, ``dtype``).

    Call arguments:
        x: ``[batch, steps, input_dim]``.
        positions: int ``[steps]`` or ``[batch, steps]``, the rotary positions of the steps.
        sequence_length: ``None``; int ``[batch]`` lengths (keys at or past a length are
            masked); or booleans ``[batch, key_steps]``, true at the keys that may be seen
            (``key_steps``: ``steps``, or the cache's length with a cache).
        cache: ``None``, or a :class:`~texkit.core.attention.KVCache` from :meth:`empty_cache`.
        time: with a cache, the scalar int step of ``x``'s first step in the cache.
        training: Keras' training flag.
        ancestry, beam_width: beam search over a cache whose slots never move: the rows are
            ``beam_width`` hypotheses per example, and ``ancestry [rows, cache_time]`` names the
            slot that holds each step of each hypothesis' history (the steps written now: its
            own); the cache returned is the one written, not the gathered histories.

    Returns:
        ``(outputs [batch, steps, output_dim], cache)``; the cache with the steps written, or
        ``None`` without one.
    """

    def __init__(self, num_heads: int, num_kv_heads: int | None = None, head_dim: int = 64,
                 output_dim: int = 512, use_qkv_bias: bool = False, use_output_bias: bool = False,
                 query_key_norm_epsilon: float | None = None,
                 query_key_norm_unit_offset: bool = False, scale: float | None = None,
                 softcap: float | None = None, sliding_window: int | None = None,
                 rotary: Any = None, dropout_rate: float = 0.0,
                 names: Sequence[str] = _PROJECTIONS, norm_names: Sequence[str] = _NORMS,
                 kernel_initializer: Any = "glorot_uniform", **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.num_heads = _positive_int("num_heads", num_heads)
        kv = self.num_heads if num_kv_heads is None else num_kv_heads
        self.num_kv_heads = _positive_int("num_kv_heads", kv)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}"
            )
        self.head_dim = _positive_int("head_dim", head_dim)
        self.output_dim = _positive_int("output_dim", output_dim)
        self.scale = _positive_float("scale", scale) or self.head_dim**-0.5
        self.softcap = _positive_float("softcap", softcap)
        self.sliding_window = None
        if sliding_window is not None:
            self.sliding_window = _positive_int("sliding_window", sliding_window)
        self.query_key_norm_epsilon = _positive_float(
            "query_key_norm_epsilon", query_key_norm_epsilon
        )
        if not 0.0 <= float(dropout_rate) < 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate!r}")
        self.dropout_rate = float(dropout_rate)
        self.rotary = rotary
        self.names, self.norm_names = tuple(names), tuple(norm_names)
        if len(self.names) != 4 or len(self.norm_names) != 2:
            raise ValueError(
                f"names must be 4 projection names and norm_names 2, got {self.names!r} and "
                f"{self.norm_names!r}"
            )
        self.use_qkv_bias, self.use_output_bias = bool(use_qkv_bias), bool(use_output_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        q_units, kv_units = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        sizes = (q_units, kv_units, kv_units, self.output_dim)
        biases = (self.use_qkv_bias,) * 3 + (self.use_output_bias,)
        self.query, self.key, self.value, self.output_dense = [
            keras.layers.Dense(size, use_bias=bias, kernel_initializer=self.kernel_initializer,
                               name=name, dtype=self.dtype_policy)
            for size, bias, name in zip(sizes, biases, self.names, strict=True)
        ]  # fmt: skip
        self.query_norm = self.key_norm = None
        if self.query_key_norm_epsilon is not None:
            self.query_norm, self.key_norm = [
                RMSNorm(epsilon=self.query_key_norm_epsilon, name=name, dtype=self.dtype_policy,
                        unit_offset=query_key_norm_unit_offset)
                for name in self.norm_names
            ]  # fmt: skip
        self.query_key_norm_unit_offset = bool(query_key_norm_unit_offset)
        self.seed_generator = keras.random.SeedGenerator() if self.dropout_rate > 0 else None

    def build(self, x_shape: Any, *args: Any, **kwargs: Any) -> None:
        for dense in (self.query, self.key, self.value):
            dense.build(x_shape)
        self.output_dense.build((*x_shape[:-1], self.num_heads * self.head_dim))
        for norm in (self.query_norm, self.key_norm):
            if norm is not None:
                norm.build((None, None, None, self.head_dim))
        self.built = True

    def empty_cache(self, batch_size: Any, max_length: int, dtype: Any = None) -> KVCache:
        """A zero :class:`~texkit.core.attention.KVCache` of ``[batch_size, num_kv_heads,
        max_length, head_dim]`` keys and values (``dtype``: the compute dtype by default)."""
        _positive_int("max_length", max_length)
        shape = (batch_size, self.num_kv_heads, max_length, self.head_dim)
        zeros = ops.zeros(shape, dtype or self.compute_dtype)
        return KVCache(zeros, zeros)

    def _heads(self, dense: Any, norm: Any, x: Any, heads: int, positions: Any) -> Any:
        """``x`` projected, split to ``[batch, heads, steps, head_dim]``, normed and rotated
        (not rotated when ``positions`` is ``None``)."""
        batch, steps = ops.shape(x)[0], ops.shape(x)[1]
        y = ops.reshape(dense_2d(dense, x), (batch, steps, heads, self.head_dim))
        if norm is not None:
            y = norm(y)
        y = ops.transpose(y, (0, 2, 1, 3))
        return y if self.rotary is None or positions is None else self.rotary(y, positions)

    def _key_mask(self, sequence_length: Any, key_time: Any) -> Any:
        """``[batch, 1, 1, 1, key_time]`` booleans from lengths or a padding mask, or ``None``."""
        if sequence_length is None:
            return None
        given = tf.convert_to_tensor(sequence_length)
        if given.dtype == tf.bool:
            mask = given
        else:
            mask = sequence_mask(given, key_time)
        return mask[:, None, None, None, :]

    def call(self, x: Any, positions: Any, sequence_length: Any = None, cache: Any = None,
             time: Any = None, training: Any = None, ancestry: Any = None,
             beam_width: int | None = None) -> tuple[Any, Any]:  # fmt: skip
        if (cache is None) != (time is None):
            raise ValueError("cache and time must be given together")
        if (ancestry is None) != (beam_width is None) or (ancestry is not None and cache is None):
            raise ValueError("ancestry and beam_width go together, with a cache")
        batch, steps = ops.shape(x)[0], ops.shape(x)[1]
        group, depth = self.num_heads // self.num_kv_heads, self.head_dim
        q = self._heads(self.query, self.query_norm, x, self.num_heads, positions)
        keys = self._heads(self.key, self.key_norm, x, self.num_kv_heads, positions)
        values = self._heads(self.value, None, x, self.num_kv_heads, positions=None)
        query_steps = ops.arange(steps, dtype="int32")
        if cache is not None:
            time = ops.cast(time, "int32")
            cache = KVCache(
                write_steps(cache.keys, keys, time), write_steps(cache.values, values, time)
            )
            keys, values = cache
            if ancestry is not None:
                keys, values = _follow_ancestry(cache, ancestry, beam_width)
            query_steps = query_steps + time
        key_time = ops.shape(keys)[2]
        # Queries grouped by the key/value head they read: [batch, kv_heads, group * steps, d].
        q = ops.reshape(q, (batch, self.num_kv_heads, group * steps, depth))
        scores = tf.linalg.matmul(q, ops.cast(keys, q.dtype), transpose_b=True)
        scores = ops.cast(scores, "float32") * self.scale
        if self.softcap is not None:
            scores = self.softcap * ops.tanh(scores / self.softcap)
        scores = ops.reshape(scores, (batch, self.num_kv_heads, group, steps, key_time))
        allowed = causal_window_mask(
            query_steps, ops.arange(key_time, dtype="int32"), self.sliding_window
        )[None, None, None]
        padding = self._key_mask(sequence_length, key_time)
        if padding is not None:
            allowed = ops.logical_and(allowed, padding)
        # tf.nn.softmax: Keras' softmax warns about a single key, a decoder's first step.
        weights = tf.nn.softmax(ops.where(allowed, scores, MASK_BIAS), axis=-1)
        weights = dropout(weights, self.dropout_rate, training, self.seed_generator)
        weights = ops.reshape(weights, (batch, self.num_kv_heads, group * steps, key_time))
        context = ops.matmul(ops.cast(weights, self.compute_dtype), ops.cast(values, q.dtype))
        context = ops.reshape(context, (batch, self.num_heads, steps, depth))
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (batch, steps, -1))
        return dense_2d(self.output_dense, context), cache

    def compute_output_shape(self, x_shape: Any, *args: Any, **kwargs: Any) -> tuple:
        return (*x_shape[:-1], self.output_dim)

    def get_config(self) -> dict:
        """The layer's arguments; ``rotary`` is not serialized (set it again after loading)."""
        keys = ("num_heads", "num_kv_heads", "head_dim", "output_dim", "use_qkv_bias",
                "use_output_bias", "query_key_norm_epsilon", "query_key_norm_unit_offset",
                "scale", "softcap", "sliding_window", "dropout_rate")  # fmt: skip
        config = {key: getattr(self, key) for key in keys}
        config.update(names=list(self.names), norm_names=list(self.norm_names))
        config["kernel_initializer"] = keras.initializers.serialize(self.kernel_initializer)
        return {**super().get_config(), **config}
