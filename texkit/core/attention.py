"""Attention: masks from lengths, multi-head attention, the attention mechanisms of RNN decoders.

:class:`MultiHeadAttention` computes, for ``h`` heads with ``d_k = num_units / h``::

    head_i = softmax(Q_i K_i^T / sqrt(d_k) + mask) V_i,   Q = x W_q, K = m W_k, V = m W_v
    output = concat(head_1, ..., head_h) W_o

where ``x`` are the queries and ``m`` the memory (``m = x`` for self-attention). Padded memory
steps (at or past ``memory_sequence_length``) and, with ``causal=True``, future steps get zero
weight. The scores, the mask and the softmax are computed in float32 whatever the layer's dtype
policy, so ``mixed_bfloat16`` changes only the matrix products.

The :class:`AttentionMechanism` subclasses score one query ``q`` (an RNN decoder's state,
``[batch, query_dim]``) against a memory ``m`` (``[batch, memory_time, memory_dim]``) and give the
alignments ``a = softmax(score(q, m))`` over the valid memory steps:

* :class:`LuongAttention`: ``q . m_i`` (dot), ``q^T W m_i`` (general) or ``q . m_i / sqrt(d)``
  (scaled_dot), optionally times a learned scalar;
* :class:`BahdanauAttention`: ``v^T tanh(W_m m_i + W_q q)``, optionally weight-normalized;
* :class:`CosineAttention`: ``beta * cos(W_q q, W_m m_i)``, content-based addressing;
* :class:`LocationAttention`: ``(W_a q + b)_i``, from the query alone.

A decoder builds a mechanism once with ``build(query_shape, memory_shape)``, computes
``keys = prepare_memory(memory)`` once per source sequence and calls
``mechanism(query, keys, memory_sequence_length)`` at each step. They are registered by class
name, so hparams select one with ``{"type": "LuongAttention", "kwargs": {...}}``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import keras
import tensorflow as tf
from keras import ops

from texkit import registry
from texkit.core.layers import get_initializer
from texkit.hparams import HParamsError, check_positive_int, check_rate
from texkit.modules.base import ModuleBase

__all__ = [
    "AttentionMechanism",
    "BahdanauAttention",
    "CosineAttention",
    "KVCache",
    "LocationAttention",
    "LuongAttention",
    "MultiHeadAttention",
    "attention_bias",
    "sequence_mask",
]

# Added to the scores of masked steps. Large enough that exp() underflows to exactly 0 in float32,
# small enough that adding it to a finite score stays finite.
_MASK_BIAS = -1e9


def sequence_mask(sequence_length: Any, max_time: Any) -> Any:
    """``[batch, max_time]`` booleans, true at the steps before each sequence's length."""
    steps = ops.arange(max_time, dtype="int32")
    return steps[None, :] < ops.cast(sequence_length, "int32")[:, None]


def attention_bias(
    query_time: Any,
    memory_time: Any,
    memory_sequence_length: Any = None,
    causal: bool = False,
) -> Any:
    """The float32 additive mask ``[batch or 1, 1, query_time, memory_time]`` of the scores.

    0 where a query may attend, ``-1e9`` where it may not: memory steps at or past
    ``memory_sequence_length`` and, if ``causal``, memory steps after the query's own step.
    ``None`` when nothing is masked.
    """
    allowed = None
    if memory_sequence_length is not None:
        allowed = sequence_mask(memory_sequence_length, memory_time)[:, None, None, :]
    if causal:
        rows = ops.arange(query_time, dtype="int32")[:, None]
        cols = ops.arange(memory_time, dtype="int32")[None, :]
        future = (cols <= rows)[None, None, :, :]
        allowed = future if allowed is None else ops.logical_and(allowed, future)
    if allowed is None:
        return None
    return ops.where(allowed, 0.0, _MASK_BIAS)


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
        "dropout_rate": "Dropout rate on the attention weights, in training only.",
        "use_bias": "Whether the four projections have biases.",
        "initializer": "Kernel initializer ({type, kwargs}); None uses Keras' default.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_positive_int(hp, "num_units", "output_dim")
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
        return KVCache(self._split_heads(self.key(memory)), self._split_heads(self.value(memory)))

    def attend(self, queries: Any, kv: KVCache, bias: Any = None, training: Any = None) -> Any:
        """Attention of ``queries [batch, query_time, input_dim]`` to projected keys and values.

        ``bias`` is added to the float32 scores (``[batch or 1, 1, query_time, memory_time]``,
        e.g. from :func:`attention_bias`); ``None`` masks nothing.
        """
        self._check_built("attend")
        hp = self.hparams
        q = self._split_heads(self.query(queries)) * ops.cast(self.depth**-0.5, self.compute_dtype)
        scores = ops.cast(ops.matmul(q, ops.transpose(kv.keys, (0, 1, 3, 2))), "float32")
        if bias is not None:
            scores = scores + bias
        # tf.nn.softmax: Keras' softmax warns about a single memory step, a decoder's first.
        weights = tf.nn.softmax(scores, axis=-1)
        if training and hp.dropout_rate > 0:
            weights = keras.random.dropout(weights, hp.dropout_rate, seed=self.seed_generator)
        context = ops.matmul(ops.cast(weights, self.compute_dtype), kv.values)
        batch, time = ops.shape(queries)[0], ops.shape(queries)[1]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (batch, time, hp.num_units))
        return self.output_dense(context)

    def call(
        self,
        queries: Any,
        memory: Any = None,
        memory_sequence_length: Any = None,
        causal: bool = False,
        training: Any = None,
    ) -> Any:
        memory = queries if memory is None else memory
        bias = attention_bias(
            ops.shape(queries)[1], ops.shape(memory)[1], memory_sequence_length, causal
        )
        return self.attend(queries, self.project_memory(memory), bias, training)

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
        new = self.project_memory(queries)
        time = ops.cast(time, "int32")
        start = [0, 0, time, 0]
        cache = KVCache(
            ops.slice_update(cache.keys, start, ops.cast(new.keys, cache.keys.dtype)),
            ops.slice_update(cache.values, start, ops.cast(new.values, cache.values.dtype)),
        )
        rows = time + ops.arange(ops.shape(queries)[1], dtype="int32")[:, None]
        cols = ops.arange(ops.shape(cache.keys)[2], dtype="int32")[None, :]
        bias = ops.where(cols <= rows, 0.0, _MASK_BIAS)[None, None, :, :]
        return self.attend(queries, cache, bias, training), cache

    def compute_output_shape(self, queries_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return (*queries_shape[:-1], self.hparams.output_dim)


# Floor of the squared norms in CosineAttention: a zero vector gets cosine 0 instead of NaN.
_NORM_EPSILON = 1e-12


def _serializable(cls: type) -> type:
    """Registers ``cls`` for ``keras.saving`` (as ``texkit>Name``) and for ``type:`` in hparams."""
    keras.saving.register_keras_serializable(package="texkit")(cls)
    return registry.register(cls)


def _check_bool(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise HParamsError(f"expected a bool, got {value!r}", name)


def _last_dim(shape: Any, what: str, layer: keras.layers.Layer) -> int:
    dim = None if shape is None or len(shape) == 0 else shape[-1]
    if dim is None:
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r}: the last dimension of the {what} must be "
            f"known to create the weights, got shape {tuple(shape) if shape else shape}"
        )
    return int(dim)


class AttentionMechanism(keras.layers.Layer):
    """Base class of the attention mechanisms of RNN decoders.

    A mechanism scores a query (the decoder state) against every step of a memory (the encoder
    outputs) and normalizes the scores over the valid steps. Its life:

    * ``build(query_shape, memory_shape)`` creates the weights (``query_shape`` may be ``None``
      for mechanisms whose weights do not depend on it).
    * ``keys = prepare_memory(memory)`` computes, once per source sequence, what does not depend
      on the query (e.g. the memory projection ``W_m m``): ``[batch, memory_time, key_dim]``.
    * ``score(query, keys)`` gives the raw float32 scores ``[batch, memory_time]``.
    * ``mechanism(query, keys, memory_sequence_length)`` gives the alignments.

    Matrix products run in the layer's compute dtype; the scores, the mask and the softmax in
    float32, so ``mixed_bfloat16`` changes only the products.

    Call arguments:
        query: ``[batch, query_dim]``.
        keys: ``[batch, memory_time, key_dim]``, from :meth:`prepare_memory`.
        memory_sequence_length: ``[batch]`` valid lengths of the memory; ``None`` when nothing
            is padded.

    Returns:
        float32 alignments ``[batch, memory_time]``: a softmax over each row's valid steps, which
        sum to 1, and exactly 0 at the padded steps (a row of length 0 is all zeros).

    Subclasses implement ``build``, ``_keys(memory)`` and ``_scores(query, keys)`` (both get
    tensors in the compute dtype; ``_scores`` returns float32), and set ``_needs_query_dim`` when
    ``build`` cannot do without the query size.
    """

    _needs_query_dim = True

    def __init__(self, *, name: str | None = None, dtype: Any = None, trainable: bool = True):
        # No autocast: the methods cast the weights themselves (matrices to the compute dtype,
        # scalars to float32), so prepare_memory and score, which run outside __call__, compute
        # exactly what a call does.
        super().__init__(name=name, dtype=dtype, trainable=trainable, autocast=False)

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        """Creates the weights for queries ``[batch, query_dim]`` and memory
        ``[batch, memory_time, memory_dim]`` (only the last dimensions must be known)."""
        raise NotImplementedError

    def _keys(self, memory: Any) -> Any:
        return memory

    def _scores(self, query: Any, keys: Any) -> Any:
        raise NotImplementedError

    def _not_built_error(self, method: str) -> ValueError:
        return ValueError(
            f"{type(self).__name__} {self.name!r} has no weights yet: call "
            f"build(query_shape, memory_shape) before {method}"
        )

    def prepare_memory(self, memory: Any) -> Any:
        """The keys ``[batch, memory_time, key_dim]`` of ``memory``, in the compute dtype.

        Builds the layer from ``memory``'s shape if it is not built yet and its weights do not
        depend on the query size; otherwise :meth:`build` must come first.
        """
        memory = ops.convert_to_tensor(memory)
        if len(memory.shape) != 3:
            raise ValueError(
                f"{type(self).__name__}: expected memory [batch, memory_time, memory_dim], got "
                f"shape {tuple(memory.shape)}"
            )
        if not self.built:
            if self._needs_query_dim:
                raise self._not_built_error("prepare_memory (the weights depend on the query size)")
            self.build(None, tuple(memory.shape))
        return self._keys(ops.cast(memory, self.compute_dtype))

    def score(self, query: Any, keys: Any) -> Any:
        """Raw float32 scores ``[batch, memory_time]`` of ``query`` against ``keys``, unmasked."""
        if not self.built:
            raise self._not_built_error("score")
        query, keys = ops.convert_to_tensor(query), ops.convert_to_tensor(keys)
        if len(query.shape) != 2 or len(keys.shape) != 3:
            raise ValueError(
                f"{type(self).__name__}: expected query [batch, query_dim] and keys "
                f"[batch, memory_time, key_dim], got shapes {tuple(query.shape)} and "
                f"{tuple(keys.shape)}"
            )
        return self._scores(ops.cast(query, self.compute_dtype), ops.cast(keys, self.compute_dtype))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Keras would build from the shapes of call's arguments, but the weights depend on the
        # memory, which call does not see.
        if not self.built:
            raise self._not_built_error("calling it")
        return super().__call__(*args, **kwargs)

    def call(self, query: Any, keys: Any, memory_sequence_length: Any = None) -> Any:
        scores = self.score(query, keys)
        if memory_sequence_length is None:
            return tf.nn.softmax(scores, axis=-1)
        valid = sequence_mask(memory_sequence_length, ops.shape(scores)[1])
        # Replacing the padded scores (rather than adding a bias to them) keeps whatever the
        # padded memory holds, even inf or NaN, out of the softmax.
        alignments = tf.nn.softmax(ops.where(valid, scores, _MASK_BIAS), axis=-1)
        # exp(-1e9 - max) is already 0 in float32; this also zeroes rows of length 0, whose
        # softmax would otherwise be uniform over padding.
        return ops.where(valid, alignments, 0.0)

    def compute_output_shape(
        self, query_shape: Any, keys_shape: Any, memory_sequence_length_shape: Any = None
    ) -> tuple:
        return (query_shape[0], keys_shape[1])

    def compute_output_spec(
        self, query: Any, keys: Any, memory_sequence_length: Any = None
    ) -> keras.KerasTensor:
        return keras.KerasTensor(self.compute_output_shape(query.shape, keys.shape), "float32")

    def get_config(self) -> dict:
        config = super().get_config()
        return {key: config[key] for key in ("name", "trainable", "dtype")}


@_serializable
class LuongAttention(AttentionMechanism):
    """Multiplicative attention (Luong, Pham & Manning, 2015, "Effective Approaches to
    Attention-based Neural Machine Translation", https://arxiv.org/abs/1508.04025).

    With query ``q`` (``d = query_dim``) and memory steps ``m_i``::

        dot:         score_i = q . m_i            (keys k = m; needs query_dim == memory_dim)
        general:     score_i = q^T W m_i = q . k_i,   k = m W   (W: [memory_dim, units], no bias)
        scaled_dot:  score_i = q . m_i / sqrt(d)  (Vaswani et al., 2017)

    With ``scale=True`` the score is multiplied by a learned scalar ``g`` (initialized to 1), as
    in TF-Addons' and Texar's ``LuongAttention(scale=True)``.

    Args:
        units: size of ``W m`` for ``score="general"``; it must equal the query size, and
            ``None`` means the query size. Must be ``None`` for the other scores.
        score: ``"dot"``, ``"general"`` or ``"scaled_dot"``.
        scale: whether to learn the scalar ``g``.
        **kwargs: Keras layer arguments (``name``, ``dtype``, ``trainable``).

    Weights: ``memory_kernel`` (``W``, general only) and ``scale`` (``g``, if ``scale``).

    Example:
        >>> attention = LuongAttention(score="general")
        >>> attention.build((batch, 256), (batch, None, 512))
        >>> keys = attention.prepare_memory(memory)
        >>> alignments = attention(state, keys, memory_sequence_length)
    """

    SCORES = ("dot", "general", "scaled_dot")

    def __init__(
        self, units: int | None = None, score: str = "general", scale: bool = False, **kwargs: Any
    ):
        super().__init__(**kwargs)
        if score not in self.SCORES:
            raise HParamsError(
                f"expected one of {', '.join(map(repr, self.SCORES))}, got {score!r}", "score"
            )
        check_positive_int({"units": units}, "units", optional=True)
        if units is not None and score != "general":
            raise HParamsError(
                f"units={units} is only used with score='general'; leave it None for "
                f"score={score!r}",
                "units",
            )
        _check_bool(scale, "scale")
        self.units = units
        self.score_type = score
        self.scale = scale

    @property
    def _needs_query_dim(self) -> bool:
        return self.score_type == "general" and self.units is None

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        memory_dim = _last_dim(memory_shape, "memory", self)
        query_dim = None
        if query_shape is not None or self._needs_query_dim:
            query_dim = _last_dim(query_shape, "query", self)
        self.memory_kernel = None
        if self.score_type == "general":
            units = self.units if self.units is not None else query_dim
            if query_dim is not None and units != query_dim:
                raise HParamsError(
                    f"units={self.units} must equal the query size {query_dim} "
                    "(the score is q . (W m))",
                    "units",
                )
            self.memory_kernel = self.add_weight(
                name="memory_kernel", shape=(memory_dim, units), initializer="glorot_uniform"
            )
        elif query_dim is not None and query_dim != memory_dim:
            raise HParamsError(
                f"score={self.score_type!r} needs queries and memory of the same size, got "
                f"query size {query_dim} and memory size {memory_dim}; score='general' "
                "projects the memory",
                "score",
            )
        self.scale_weight = (
            self.add_weight(name="scale", shape=(), initializer="ones") if self.scale else None
        )

    def _keys(self, memory: Any) -> Any:
        if self.memory_kernel is None:
            return memory
        return ops.matmul(memory, ops.cast(self.memory_kernel, self.compute_dtype))

    def _scores(self, query: Any, keys: Any) -> Any:
        if query.shape[-1] is not None and keys.shape[-1] is not None:
            if query.shape[-1] != keys.shape[-1]:
                raise ValueError(
                    f"LuongAttention(score={self.score_type!r}): query size {query.shape[-1]} "
                    f"differs from key size {keys.shape[-1]}"
                )
        scores = ops.cast(ops.einsum("btd,bd->bt", keys, query), "float32")
        if self.score_type == "scaled_dot":
            scores = scores * ops.rsqrt(ops.cast(ops.shape(query)[-1], "float32"))
        if self.scale_weight is not None:
            scores = scores * ops.cast(self.scale_weight, "float32")
        return scores

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "score": self.score_type,
            "scale": self.scale,
        }


@_serializable
class BahdanauAttention(AttentionMechanism):
    """Additive attention (Bahdanau, Cho & Bengio, 2015, "Neural Machine Translation by Jointly
    Learning to Align and Translate", https://arxiv.org/abs/1409.0473).

    With query ``q`` and memory steps ``m_i``::

        k_i     = W_m m_i                               (W_m: [memory_dim, units], no bias)
        score_i = v^T tanh(k_i + W_q q)                 (W_q: [query_dim, units], no bias)

    With ``normalize=True``, the weight-normalized form (Salimans & Kingma, 2016, "Weight
    Normalization", https://arxiv.org/abs/1602.07868), as in TF-Addons::

        score_i = (g v / ||v||)^T tanh(k_i + W_q q + b)

    with a learned scalar ``g`` (initialized to ``sqrt(1 / units)``) and bias ``b`` (zeros).

    Args:
        units: size of the projections and of ``v``.
        normalize: whether to use the weight-normalized form.
        **kwargs: Keras layer arguments (``name``, ``dtype``, ``trainable``).

    Weights: ``query_kernel`` (``W_q``), ``memory_kernel`` (``W_m``), ``attention_v`` (``v``)
    and, if ``normalize``, ``attention_g`` (``g``) and ``attention_b`` (``b``).
    """

    def __init__(self, units: int, normalize: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        check_positive_int({"units": units}, "units")
        _check_bool(normalize, "normalize")
        self.units = units
        self.normalize = normalize

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        query_dim = _last_dim(query_shape, "query", self)
        memory_dim = _last_dim(memory_shape, "memory", self)
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_dim, self.units), initializer="glorot_uniform"
        )
        self.memory_kernel = self.add_weight(
            name="memory_kernel", shape=(memory_dim, self.units), initializer="glorot_uniform"
        )
        self.attention_v = self.add_weight(
            name="attention_v", shape=(self.units,), initializer="glorot_uniform"
        )
        self.attention_g = self.attention_b = None
        if self.normalize:
            self.attention_g = self.add_weight(
                name="attention_g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
            )
            self.attention_b = self.add_weight(
                name="attention_b", shape=(self.units,), initializer="zeros"
            )

    def _keys(self, memory: Any) -> Any:
        return ops.matmul(memory, ops.cast(self.memory_kernel, self.compute_dtype))

    def _scores(self, query: Any, keys: Any) -> Any:
        dtype = self.compute_dtype
        hidden = keys + ops.matmul(query, ops.cast(self.query_kernel, dtype))[:, None, :]
        v = self.attention_v
        if self.normalize:
            hidden = hidden + ops.cast(self.attention_b, dtype)
            v = ops.cast(v, "float32")
            v = ops.cast(self.attention_g, "float32") * v * ops.rsqrt(ops.sum(v * v))
        return ops.cast(ops.matmul(ops.tanh(hidden), ops.cast(v, dtype)), "float32")

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units, "normalize": self.normalize}


@_serializable
class CosineAttention(AttentionMechanism):
    """Content-based addressing by cosine similarity (Graves, Wayne & Danihelka, 2014, "Neural
    Turing Machines", https://arxiv.org/abs/1410.5401, section 3.3.1).

    With query ``q`` and memory steps ``m_i``::

        q' = W_q q,  k_i = W_m m_i           (W: [dim, units], no bias; identity if units is None)
        score_i = beta * (q' . k_i) / (||q'|| ||k_i||)

    The norms are floored at ``1e-6`` so a zero vector scores 0 instead of NaN. ``beta`` is the
    key strength: with ``learn_strength``, ``beta = softplus(s)`` for a learned scalar ``s``
    initialized so that ``beta == strength``; otherwise ``beta = strength``.

    Args:
        units: size of the projections; ``None`` compares query and memory directly (their sizes
            must match).
        strength: the (initial) key strength ``beta > 0``.
        learn_strength: whether ``beta`` is learned.
        **kwargs: Keras layer arguments (``name``, ``dtype``, ``trainable``).

    Weights: ``query_kernel`` and ``memory_kernel`` (if ``units``), ``strength``
    (``s = softplus^-1(beta)``, if ``learn_strength``).
    """

    def __init__(
        self,
        units: int | None = None,
        strength: float = 1.0,
        learn_strength: bool = True,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        check_positive_int({"units": units}, "units", optional=True)
        if (
            isinstance(strength, bool)
            or not isinstance(strength, (int, float))
            or not 0 < strength < math.inf
        ):
            raise HParamsError(f"expected a positive finite number, got {strength!r}", "strength")
        _check_bool(learn_strength, "learn_strength")
        self.units = units
        self.strength = float(strength)
        self.learn_strength = learn_strength

    @property
    def _needs_query_dim(self) -> bool:
        return self.units is not None

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        memory_dim = _last_dim(memory_shape, "memory", self)
        query_dim = None
        if query_shape is not None or self._needs_query_dim:
            query_dim = _last_dim(query_shape, "query", self)
        self.query_kernel = self.memory_kernel = self.strength_weight = None
        if self.units is not None:
            self.query_kernel = self.add_weight(
                name="query_kernel", shape=(query_dim, self.units), initializer="glorot_uniform"
            )
            self.memory_kernel = self.add_weight(
                name="memory_kernel", shape=(memory_dim, self.units), initializer="glorot_uniform"
            )
        elif query_dim is not None and query_dim != memory_dim:
            raise HParamsError(
                f"without units, queries and memory must have the same size, got query size "
                f"{query_dim} and memory size {memory_dim}; set units to project both",
                "units",
            )
        if self.learn_strength:
            # softplus^-1(beta) = log(exp(beta) - 1), written to stay finite for large beta.
            raw = self.strength + math.log(-math.expm1(-self.strength))
            self.strength_weight = self.add_weight(
                name="strength", shape=(), initializer=keras.initializers.Constant(raw)
            )

    def _keys(self, memory: Any) -> Any:
        if self.memory_kernel is None:
            return memory
        return ops.matmul(memory, ops.cast(self.memory_kernel, self.compute_dtype))

    def _scores(self, query: Any, keys: Any) -> Any:
        if self.query_kernel is not None:
            query = ops.matmul(query, ops.cast(self.query_kernel, self.compute_dtype))
        elif query.shape[-1] is not None and keys.shape[-1] is not None:
            if query.shape[-1] != keys.shape[-1]:
                raise ValueError(
                    f"CosineAttention without units: query size {query.shape[-1]} differs from "
                    f"key size {keys.shape[-1]}"
                )
        dots = ops.cast(ops.einsum("btd,bd->bt", keys, query), "float32")
        query, keys = ops.cast(query, "float32"), ops.cast(keys, "float32")
        query_norm = ops.sqrt(ops.maximum(ops.sum(query * query, axis=-1), _NORM_EPSILON))
        key_norms = ops.sqrt(ops.maximum(ops.sum(keys * keys, axis=-1), _NORM_EPSILON))
        cosine = dots / (query_norm[:, None] * key_norms)
        if self.strength_weight is None:
            return cosine * self.strength
        return cosine * ops.softplus(ops.cast(self.strength_weight, "float32"))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "strength": self.strength,
            "learn_strength": self.learn_strength,
        }


@_serializable
class LocationAttention(AttentionMechanism):
    """Location-based attention (Luong, Pham & Manning, 2015, "Effective Approaches to
    Attention-based Neural Machine Translation", https://arxiv.org/abs/1508.04025, section 3.1).

    The alignments are computed from the query alone::

        a = softmax(W_a q + b)[:memory_time]      (W_a: [query_dim, max_memory_length])

    i.e. the scores are the first ``memory_time`` entries; the memory's content is not looked at
    (the keys are the memory itself, used only for its length). A memory longer than
    ``max_memory_length`` is an error: at once when its length is static, else through a
    ``tf.debugging`` assertion, which XLA (``jit_compile=True``) does not check.

    Args:
        max_memory_length: the longest memory the layer can attend over.
        use_bias: whether to add the bias ``b``.
        **kwargs: Keras layer arguments (``name``, ``dtype``, ``trainable``).

    Weights: ``kernel`` (``W_a``) and ``bias`` (``b``, if ``use_bias``).
    """

    def __init__(self, max_memory_length: int, use_bias: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        check_positive_int({"max_memory_length": max_memory_length}, "max_memory_length")
        _check_bool(use_bias, "use_bias")
        self.max_memory_length = max_memory_length
        self.use_bias = use_bias

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        query_dim = _last_dim(query_shape, "query", self)
        if memory_shape is not None and len(memory_shape) > 1:
            self._check_length(memory_shape[1])
        self.kernel = self.add_weight(
            name="kernel", shape=(query_dim, self.max_memory_length), initializer="glorot_uniform"
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias", shape=(self.max_memory_length,), initializer="zeros"
            )

    def _check_length(self, memory_time: Any) -> None:
        if memory_time is not None and memory_time > self.max_memory_length:
            raise HParamsError(
                f"the memory has {memory_time} steps, more than "
                f"max_memory_length={self.max_memory_length}",
                "max_memory_length",
            )

    def _checked(self, keys: Any) -> Any:
        if keys.shape[1] is not None:
            self._check_length(keys.shape[1])
            return keys
        check = tf.debugging.assert_less_equal(
            tf.shape(keys)[1],
            self.max_memory_length,
            message=f"LocationAttention: the memory is longer than max_memory_length="
            f"{self.max_memory_length}",
        )
        with tf.control_dependencies([check]):
            return tf.identity(keys)

    def _keys(self, memory: Any) -> Any:
        return self._checked(memory)

    def _scores(self, query: Any, keys: Any) -> Any:
        keys = self._checked(keys)
        logits = ops.cast(ops.matmul(query, ops.cast(self.kernel, self.compute_dtype)), "float32")
        if self.bias is not None:
            logits = logits + ops.cast(self.bias, "float32")
        return logits[:, : ops.shape(keys)[1]]

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "max_memory_length": self.max_memory_length,
            "use_bias": self.use_bias,
        }
