"""Attention: masks from lengths, multi-head attention, the attention mechanisms of RNN decoders.

:class:`MultiHeadAttention` computes, for ``h`` heads with ``d_k = num_units / h``::

    head_i = softmax(Q_i K_i^T / sqrt(d_k) + mask) V_i,   Q = x W_q, K = m W_k, V = m W_v
    output = concat(head_1, ..., head_h) W_o

where ``x`` are the queries and ``m`` the memory (``m = x`` for self-attention). Padded memory
steps (at or past ``memory_sequence_length``) and, with ``causal=True``, future steps get zero
weight. The scores, the mask and the softmax are computed in float32 whatever the layer's dtype
policy, so ``mixed_bfloat16`` changes only the matrix products.

The attention mechanisms of RNN decoders are in :mod:`texkit.core.attention_mechanisms`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import keras
import tensorflow as tf
from keras import ops

from texkit._compat import compiled_by_xla
from texkit.configurable import ModuleBase
from texkit.core.dropout import dropout
from texkit.core.layers import get_initializer
from texkit.hparams import HParamsError, check_rate, check_width

__all__ = [
    "KVCache",
    "MultiHeadAttention",
    "attention_mask",
    "dense_2d",
    "sequence_mask",
]

# The score of a masked step: exp() of it underflows to exactly 0 in float32, so the step gets
# zero weight, and a row with every step masked stays finite (uniform weights).
MASK_BIAS = -1e9


def dense_2d(dense: keras.layers.Dense, x: Any, activation: Any = None) -> Any:
    """``activation(dense(x))`` for ``x [..., input_dim]``, computed on ``x`` folded to
    ``[-1, input_dim]`` (``activation=None``: ``dense(x)``).

    The same values, but the graph holds the matrix product, the bias add and the activation
    next to each other, with no reshape between them, so TensorFlow's CPU graph optimizer fuses
    them into one oneDNN kernel (``_MklFusedMatMul``); on a 3-D input Keras reshapes between the
    product and the bias add, and the three run as separate ops. Symbolic (Keras functional)
    inputs are passed through as they are.
    """
    act = activation or (lambda y: y)
    if isinstance(x, keras.KerasTensor) or len(x.shape) == 2:
        return act(dense(x))
    leading = ops.shape(x)[:-1]
    y = act(dense(ops.reshape(x, (-1, x.shape[-1]))))
    return ops.reshape(y, (*leading, dense.units))


def sequence_mask(sequence_length: Any, max_time: Any) -> Any:
    """``[batch, max_time]`` booleans, true at the steps before each sequence's length."""
    steps = ops.arange(max_time, dtype="int32")
    return steps[None, :] < ops.cast(sequence_length, "int32")[:, None]


def attention_mask(
    query_time: Any,
    memory_time: Any,
    memory_sequence_length: Any = None,
    causal: bool = False,
) -> Any:
    """Where queries may attend: booleans ``[batch or 1, 1, query_time, memory_time]``.

    False at memory steps at or past ``memory_sequence_length`` and, if ``causal``, at memory
    steps after the query's own step. ``None`` when nothing is masked.
    """
    allowed = None
    if memory_sequence_length is not None:
        allowed = sequence_mask(memory_sequence_length, memory_time)[:, None, None, :]
    if causal:
        rows = ops.arange(query_time, dtype="int32")[:, None]
        cols = ops.arange(memory_time, dtype="int32")[None, :]
        future = (cols <= rows)[None, None, :, :]
        allowed = future if allowed is None else ops.logical_and(allowed, future)
    return allowed


def _causal_from(time: Any, steps: Any, length: Any) -> Any:
    """``[steps, length]`` booleans: query ``j`` (at step ``time + j``) may see steps ``<= time +
    j``."""
    rows = time + ops.arange(steps, dtype="int32")[:, None]
    return ops.arange(length, dtype="int32")[None, :] <= rows


def write_steps(buffer: Any, steps: Any, time: Any) -> Any:
    """``buffer [batch, heads, max_time, depth]`` with ``steps [batch, heads, n, depth]`` written
    at steps ``time .. time + n`` (cast to the buffer's dtype): a key/value cache written.

    Under XLA this is a ``dynamic_update_slice``, done in place. Outside XLA (a ``tf.function``
    without ``jit_compile``, eager) TensorFlow runs that op by compiling and launching an XLA
    computation of its own at every call (24 launches a step for a 12-block decoder), so there
    the same values are written with ``tf.tensor_scatter_nd_update``.
    """
    steps = ops.cast(steps, buffer.dtype)
    time = ops.cast(time, "int32")
    if compiled_by_xla():
        return ops.slice_update(buffer, [0, 0, time, 0], steps)
    shape = tf.shape(steps)
    rows, heads, positions = tf.meshgrid(
        tf.range(shape[0]), tf.range(shape[1]), time + tf.range(shape[2]), indexing="ij"
    )
    indices = tf.stack([rows, heads, positions], axis=-1)
    return tf.tensor_scatter_nd_update(buffer, indices, steps)


class KVCache(NamedTuple):
    """The projected keys and values of :class:`MultiHeadAttention`, ``[batch, heads, time,
    depth]`` each, in the layer's compute dtype.

    A decoder's self-attention cache is preallocated to the most steps decoded
    (:meth:`MultiHeadAttention.init_cache`) and written in place, one step at a time, by
    :meth:`MultiHeadAttention.call_cached`; a cross-attention memory is projected once per source
    by :meth:`MultiHeadAttention.project_memory`.
    """

    keys: Any
    values: Any


class MultiHeadAttention(ModuleBase):
    """Multi-head scaled dot-product attention (Vaswani et al., 2017).

    Call arguments:
        queries: ``[batch, query_time, input_dim]``.
        memory: ``[batch, memory_time, memory_dim]`` to attend to; ``None`` for self-attention.
        memory_sequence_length: ``[batch]`` valid lengths of the memory (of the queries, for
            self-attention); ``None`` when nothing is padded.
        causal: if true, step ``t`` attends only to memory steps ``<= t`` (decoder
            self-attention).
        training: Keras' training flag (attention dropout applies only in training).

    Returns:
        ``[batch, query_time, output_dim]`` in the layer's compute dtype.

    Incremental decoding uses three more methods, so that a step costs one query's projections
    and one pass over a fixed-size cache instead of recomputing the whole prefix:

    * :meth:`init_cache` preallocates a zero :class:`KVCache` of ``max_length`` steps;
    * :meth:`call_cached` (causal self-attention) writes the keys and values of queries at steps
      ``time, time + 1, ...`` into the cache in place and attends to the cached steps up to each
      query's own, giving the outputs :meth:`call` with ``causal=True`` gives at those steps;
    * :meth:`project_memory` and :meth:`attend` split cross-attention: the memory's keys and
      values are projected once, then every step attends to them.

    The four projections are Dense layers named ``query``, ``key``, ``value`` and ``output``
    (kernels ``[in, out]``), the layout checkpoint name tables refer to.
    """

    HPARAMS_DOC = {
        "num_units": "Total size of the query/key/value projections (all heads together).",
        "num_heads": "Number of heads; must divide num_units.",
        "output_dim": "Size of the output projection.",
        "dropout_rate": "Dropout rate on the attention weights, in training only "
        "(texkit.core.dropout).",
        "use_bias": "Whether the four projections have biases.",
        "initializer": "Kernel initializer ({type, kwargs}); None uses Keras' default.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_width(hp, "num_units", "output_dim")
        if hp.num_heads < 1 or hp.num_units % hp.num_heads:
            raise HParamsError(
                f"num_heads={hp.num_heads} must be positive and divide num_units={hp.num_units}",
                "num_heads",
            )
        check_rate(hp, "dropout_rate")
        dense = {
            "use_bias": hp.use_bias,
            "dtype": self.dtype_policy,
        }
        initializer = get_initializer(hp.initializer)
        if initializer is not None:
            dense["kernel_initializer"] = initializer
        self.query = keras.layers.Dense(hp.num_units, name="query", **dense)
        self.key = keras.layers.Dense(hp.num_units, name="key", **dense)
        self.value = keras.layers.Dense(hp.num_units, name="value", **dense)
        self.output_dense = keras.layers.Dense(hp.output_dim, name="output", **dense)
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout_rate > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_units": 512,
            "num_heads": 8,
            "output_dim": 512,
            "dropout_rate": 0.1,
            "use_bias": True,
            "initializer": None,
            "name": "multihead_attention",
        }

    @property
    def depth(self) -> int:
        """The size of one head."""
        return self.hparams.num_units // self.hparams.num_heads

    def build(self, queries_shape: Any, memory_shape: Any = None, *args: Any, **kw: Any) -> None:
        memory_shape = queries_shape if memory_shape is None else memory_shape
        self.query.build(queries_shape)
        self.key.build(memory_shape)
        self.value.build(memory_shape)
        self.output_dense.build((*queries_shape[:-1], self.hparams.num_units))
        self.built = True

    def _check_built(self, method: str) -> None:
        if not self.built:
            raise ValueError(
                f"{self.name}: build the layer (or call it once) before {method}(); its weights "
                "do not exist yet"
            )

    def _split_heads(self, x: Any) -> Any:
        batch, time = ops.shape(x)[0], ops.shape(x)[1]
        heads = self.hparams.num_heads
        x = ops.reshape(x, (batch, time, heads, self.depth))
        return ops.transpose(x, (0, 2, 1, 3))

    def project_memory(self, memory: Any) -> KVCache:
        """The keys and values of ``memory [batch, time, memory_dim]``, ``[batch, heads, time,
        depth]`` each; :meth:`attend` attends to them."""
        self._check_built("project_memory")
        return KVCache(
            self._split_heads(dense_2d(self.key, memory)),
            self._split_heads(dense_2d(self.value, memory)),
        )

    def attend(self, queries: Any, kv: KVCache, mask: Any = None, training: Any = None) -> Any:
        """Attention of ``queries [batch, query_time, input_dim]`` to projected keys and values.

        ``mask``: booleans ``[batch or 1, 1, query_time, memory_time]`` (e.g. from
        :func:`attention_mask`), true where a query may attend; ``None`` masks nothing.
        """
        self._check_built("attend")
        hp = self.hparams
        q = self._split_heads(dense_2d(self.query, queries))
        scale = ops.cast(self.depth**-0.5, self.compute_dtype)
        keys = ops.transpose(kv.keys, (0, 1, 3, 2))
        if mask is not None and mask.shape[-2] == 1:
            # A padding mask, the same for every query: an additive bias [batch, 1, 1, memory]
            # after the scaled product, which TensorFlow's CPU build fuses with the matmul into
            # one oneDNN kernel (_MklFusedBatchMatMulV2: product, scale and bias in one pass).
            bias = ops.where(mask, 0.0, MASK_BIAS)  # float32
            scores = ops.cast(ops.matmul(q, keys) * scale, "float32") + bias
        else:
            scores = ops.cast(ops.matmul(q * scale, keys), "float32")
        if mask is not None and mask.shape[-2] != 1:
            # A mask per query (causal) replaces masked scores instead: the same fusion with a
            # [1, 1, t, t] bias selects oneDNN's slow reference kernel (benchmarks/RESULTS.md,
            # "Causal masks"); a select is never fused.
            scores = ops.where(mask, scores, MASK_BIAS)
        # tf.nn.softmax: Keras' softmax warns about a single memory step, a decoder's first.
        weights = tf.nn.softmax(scores, axis=-1)
        weights = dropout(weights, hp.dropout_rate, training, self.seed_generator)
        context = ops.matmul(ops.cast(weights, self.compute_dtype), kv.values)
        batch, time = ops.shape(queries)[0], ops.shape(queries)[1]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, hp.num_units))
        return ops.reshape(self.output_dense(context), (batch, time, self.output_dense.units))

    def call(
        self,
        queries: Any,
        memory: Any = None,
        memory_sequence_length: Any = None,
        causal: bool = False,
        training: Any = None,
    ) -> Any:
        memory = queries if memory is None else memory
        mask = attention_mask(
            ops.shape(queries)[1], ops.shape(memory)[1], memory_sequence_length, causal
        )
        return self.attend(queries, self.project_memory(memory), mask, training)

    def init_cache(self, batch_size: Any, max_length: int) -> KVCache:
        """A zero :class:`KVCache` of ``max_length`` steps for :meth:`call_cached`."""
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"{self.name}: max_length must be a positive int, got {max_length!r}")
        shape = (batch_size, self.hparams.num_heads, max_length, self.depth)
        zeros = ops.zeros(shape, self.compute_dtype)
        return KVCache(zeros, zeros)

    def call_cached(
        self, queries: Any, cache: KVCache, time: Any, training: Any = None
    ) -> tuple[Any, KVCache]:
        """Causal self-attention of ``queries [batch, query_time, input_dim]`` at steps ``time ..
        time + query_time - 1``, with the earlier steps' keys and values read from ``cache``.

        Writes the queries' keys and values into the cache at those steps (a
        ``dynamic_update_slice``, in place under XLA) and returns ``(outputs, new_cache)``; steps
        past each query's own (zeros, or stale values of another hypothesis) get zero weight.
        ``time`` is a scalar int (tensor); the steps must stay below the cache's length.
        """
        self._check_built("call_cached")
        time = ops.cast(time, "int32")
        cache = self._write_cache(queries, cache, time)
        causal = _causal_from(time, ops.shape(queries)[1], ops.shape(cache.keys)[2])
        return self.attend(queries, cache, causal[None, None, :, :], training), cache

    def call_cached_beams(
        self, queries: Any, cache: KVCache, time: Any, ancestry: Any, beam_width: int
    ) -> tuple[Any, KVCache]:
        """:meth:`call_cached` for ``beam_width`` hypotheses per example whose caches never move.

        The rows of ``queries [batch * beam_width, query_time, input_dim]`` and of ``cache`` are
        the hypotheses, the ``beam_width`` of an example next to each other. Row ``i`` of an
        example writes its keys and values into its own slot of the cache at steps ``time ..``,
        as in :meth:`call_cached`; earlier steps of its history may sit in another slot of the
        example: ``ancestry [batch * beam_width, cache_time]`` int32 names, for each hypothesis
        and step, the slot (``0 .. beam_width - 1``) that holds it (the steps written now are
        always read from the hypothesis' own slot). When beam search keeps a
        hypothesis that extends another, only its ``ancestry`` row is copied, not the cache:
        each slot writes every step once, so what it wrote stays valid for its descendants.

        The scores of each example's queries are computed against all its slots' cached steps
        (``beam_width`` times the products of one hypothesis, which at a decoding step is small
        beside reading the cache, which happens once), and a step gets weight only in the slot
        ``ancestry`` names. Inference only (no dropout). Returns ``(outputs, new_cache)`` like
        :meth:`call_cached`.
        """
        self._check_built("call_cached_beams")
        hp, depth, width = self.hparams, self.depth, int(beam_width)
        time = ops.cast(time, "int32")
        cache = self._write_cache(queries, cache, time)
        rows, steps = ops.shape(queries)[0], ops.shape(queries)[1]
        batch = rows // width
        heads, length = hp.num_heads, ops.shape(cache.keys)[2]
        # Every slot (row of the cache) gets the queries of all its example's hypotheses:
        # [rows, heads, width * steps, depth], a plain attention product against the cache as it
        # lies.
        q = self._split_heads(dense_2d(self.query, queries))  # [rows, heads, steps, depth]
        q = q * ops.cast(depth**-0.5, self.compute_dtype)
        q = ops.transpose(ops.reshape(q, (batch, width, heads, steps, depth)), (0, 2, 1, 3, 4))
        q = ops.reshape(q, (batch, 1, heads, width * steps, depth))
        q = ops.reshape(ops.repeat(q, width, axis=1), (rows, heads, width * steps, depth))
        scores = ops.cast(tf.linalg.matmul(q, cache.keys, transpose_b=True), "float32")
        # [batch, slot, heads, query, time] -> [batch, heads, query, slot * time]: a softmax over
        # each query's (slot, time) pairs along one axis.
        scores = ops.reshape(scores, (batch, width, heads, width * steps, length))
        scores = ops.reshape(
            ops.transpose(scores, (0, 2, 3, 1, 4)), (batch, heads, width * steps, width * length)
        )
        # Query (hypothesis i, step j) may read (slot s, time t) when t <= time + j and the
        # hypothesis' step t sits in slot s.
        # The steps written now are read from the hypothesis' own slot, whatever ancestry says.
        cols = ops.arange(length, dtype="int32")[None, :]
        now = ops.logical_and(cols >= time, cols < time + steps)
        own = (ops.arange(rows, dtype="int32") % width)[:, None]
        ancestry = ops.where(now, own, ops.cast(ancestry, "int32"))
        slots = ops.arange(width, dtype="int32")[None, None, None, :, None]
        ancestry = ops.reshape(ancestry, (batch, width, 1, 1, length))
        causal = _causal_from(time, steps, length)[None, None, :, None, :]
        allowed = ops.logical_and(ops.equal(ancestry, slots), causal)  # [b, i, j, s, t]
        allowed = ops.reshape(allowed, (batch, 1, width * steps, width * length))
        weights = tf.nn.softmax(ops.where(allowed, scores, MASK_BIAS), axis=-1)
        weights = ops.reshape(weights, (batch, heads, width * steps, width, length))
        weights = ops.reshape(
            ops.transpose(weights, (0, 3, 1, 2, 4)), (rows, heads, width * steps, length)
        )
        context = ops.matmul(ops.cast(weights, self.compute_dtype), cache.values)
        context = ops.sum(ops.reshape(context, (batch, width, heads, width, steps, depth)), 1)
        context = ops.reshape(ops.transpose(context, (0, 2, 3, 1, 4)), (-1, hp.num_units))
        return ops.reshape(self.output_dense(context), (rows, steps, hp.output_dim)), cache

    def _write_cache(self, queries: Any, cache: KVCache, time: Any) -> KVCache:
        """``cache`` with the keys and values of ``queries`` written at steps ``time ..``."""
        new = self.project_memory(queries)
        return KVCache(
            write_steps(cache.keys, new.keys, time), write_steps(cache.values, new.values, time)
        )

    def compute_output_shape(self, queries_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return (*queries_shape[:-1], self.hparams.output_dim)
