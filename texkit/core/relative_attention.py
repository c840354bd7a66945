"""Multi-head attention with an additive score bias: T5's attention.

:class:`RelativeAttention` computes, for ``h`` heads of size ``d``::

    head_i = softmax(scale * Q_i K_i^T + bias_i + mask) V_i,   Q = x W_q, K = m W_k, V = m W_v
    output = concat(head_1, ..., head_h) W_o

where ``bias`` is a float32 ``[batch or 1, heads or 1, queries, keys]`` tensor added to the
scores, usually a relative position bias
(:class:`texkit.core.relative_position.RelativePositionBias`), which a stack computes once and
passes to every block. T5 does not scale the scores (``scale=None``) and has no biases in its
projections; ``num_heads * head_dim`` need not equal the model's width. The scores, the bias, the
mask and the softmax are in float32 whatever the layer's dtype policy.

The keys and values are projected apart from the queries (:meth:`RelativeAttention.project`), so
a decoder projects its memory once and a cached self-attention writes one step's keys and values
at a time (:meth:`RelativeAttention.write_cache`) into a preallocated
:class:`~texkit.core.attention.KVCache`. :class:`texkit.core.attention.MultiHeadAttention` is the
scaled attention of the Transformer and BERT, configured by hparams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.core.attention import MASK_BIAS, KVCache, dense_2d, write_steps
from texkit.core.dropout import dropout

__all__ = ["RelativeAttention"]

_PROJECTIONS = ("query", "key", "value", "output")


@keras.saving.register_keras_serializable(package="texkit")
class RelativeAttention(keras.layers.Layer):
    """Multi-head attention whose scores get an additive bias (module docstring).

    Args:
        num_heads: the number of heads.
        head_dim: the size of one head (T5's ``d_kv``).
        output_dim: the size of the outputs (the model's width).
        scale: the factor of the scores; ``None`` leaves them unscaled (T5).
        use_bias: whether the four projections have biases.
        dropout_rate: dropout on the attention weights, in training only.
        names: the layer names of the query, key, value and output projections (default
            ``("query", "key", "value", "output")``; T5: ``("q", "k", "v", "o")``). Checkpoint
            name tables refer to the attributes ``query``, ``key``, ``value`` and
            ``output_dense``.
        kernel_initializer: one initializer for the four kernels, or a sequence of four (query,
            key, value, output).
        **kwargs: Keras layer arguments (``name``, ``dtype``).

    Call arguments:
        queries: ``[batch, query_time, input_dim]``.
        memory: ``[batch, memory_time, memory_dim]``; ``None`` for self-attention.
        bias: float ``[batch or 1, heads or 1, query_time, memory_time]`` added to the scores,
            or ``None``.
        attention_mask: booleans broadcasting to the scores' shape, true where a query may
            attend (:func:`texkit.core.attention.attention_mask`), or ``None`` (not ``mask``:
            Keras reserves that name for its own masks).
        training: Keras' training flag.

    Returns:
        ``[batch, query_time, output_dim]`` in the layer's compute dtype.
    """

    def __init__(self, num_heads: int, head_dim: int, output_dim: int, scale: float | None = None,
                 use_bias: bool = False, dropout_rate: float = 0.0,
                 names: Sequence[str] = _PROJECTIONS, kernel_initializer: Any = "glorot_uniform",
                 **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.num_heads, self.head_dim, self.output_dim = int(num_heads), int(head_dim), output_dim
        self.scale = None if scale is None else float(scale)
        self.use_bias, self.dropout_rate = bool(use_bias), float(dropout_rate)
        self.names = tuple(names)
        if len(self.names) != 4:
            raise ValueError(f"{self.name}: expected 4 projection names, got {self.names!r}")
        if isinstance(kernel_initializer, (list, tuple)):
            initializers = [keras.initializers.get(i) for i in kernel_initializer]
        else:
            initializers = [keras.initializers.get(kernel_initializer)] * 4
        self.kernel_initializers = initializers
        units = self.num_heads * self.head_dim
        sizes = (units, units, units, output_dim)
        dense = [
            keras.layers.Dense(size, use_bias=self.use_bias, kernel_initializer=init, name=name,
                               dtype=self.dtype_policy)
            for size, init, name in zip(sizes, initializers, self.names, strict=True)
        ]  # fmt: skip
        self.query, self.key, self.value, self.output_dense = dense
        self.seed_generator = keras.random.SeedGenerator() if self.dropout_rate > 0 else None

    def build(self, queries_shape: Any, memory_shape: Any = None, *args: Any, **kw: Any) -> None:
        memory_shape = queries_shape if memory_shape is None else memory_shape
        self.query.build(queries_shape)
        self.key.build(memory_shape)
        self.value.build(memory_shape)
        self.output_dense.build((*queries_shape[:-1], self.num_heads * self.head_dim))
        self.built = True

    def _split_heads(self, x: Any) -> Any:
        """``[batch, time, heads * depth]`` -> ``[batch, heads, time, depth]``."""
        x = ops.reshape(x, (ops.shape(x)[0], ops.shape(x)[1], self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def project(self, memory: Any) -> KVCache:
        """The keys and values of ``memory [batch, time, memory_dim]``, ``[batch, heads, time,
        head_dim]`` each."""
        return KVCache(
            self._split_heads(dense_2d(self.key, memory)),
            self._split_heads(dense_2d(self.value, memory)),
        )

    def write_cache(self, queries: Any, cache: KVCache, time: Any) -> KVCache:
        """``cache`` (``[batch, heads, max_time, head_dim]`` each) with the keys and values of
        ``queries [batch, steps, input_dim]`` written at steps ``time ..`` (in place under XLA)."""
        keys, values = cache
        new_keys, new_values = self.project(queries)
        return KVCache(write_steps(keys, new_keys, time), write_steps(values, new_values, time))

    def attend(
        self, queries: Any, kv: Any, bias: Any = None, mask: Any = None, training: Any = None
    ) -> Any:
        """Attention of ``queries [batch, query_time, input_dim]`` to projected keys and values
        ``kv`` (a :class:`~texkit.core.attention.KVCache` or a ``(keys, values)`` pair); ``bias``
        and ``mask`` as ``bias`` and ``attention_mask`` in a call."""
        keys, values = kv
        q = self._split_heads(dense_2d(self.query, queries))
        if self.scale is not None:
            q = q * ops.cast(self.scale, q.dtype)
        scores = ops.cast(tf.linalg.matmul(q, keys, transpose_b=True), "float32")
        if bias is not None:
            scores = scores + ops.cast(bias, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, MASK_BIAS)
        # tf.nn.softmax: Keras' softmax warns about a single key, a decoder's first step.
        weights = tf.nn.softmax(scores, axis=-1)
        weights = dropout(weights, self.dropout_rate, training, self.seed_generator)
        context = ops.matmul(ops.cast(weights, self.compute_dtype), values)
        context = ops.transpose(context, (0, 2, 1, 3))
        batch, time = ops.shape(queries)[0], ops.shape(queries)[1]
        context = ops.reshape(context, (batch, time, self.num_heads * self.head_dim))
        return dense_2d(self.output_dense, context)

    def call(self, queries: Any, memory: Any = None, bias: Any = None,
             attention_mask: Any = None, training: Any = None) -> Any:  # fmt: skip
        kv = self.project(queries if memory is None else memory)
        return self.attend(queries, kv, bias, attention_mask, training)

    def compute_output_shape(self, queries_shape: Any, *args: Any, **kwargs: Any) -> tuple:
        return (*queries_shape[:-1], self.output_dim)

    def get_config(self) -> dict:
        sizes = ("num_heads", "head_dim", "output_dim", "scale", "use_bias", "dropout_rate")
        config = {key: getattr(self, key) for key in sizes}
        initializers = [keras.initializers.serialize(i) for i in self.kernel_initializers]
        config.update(names=list(self.names), kernel_initializer=initializers)
        return {**super().get_config(), **config}
