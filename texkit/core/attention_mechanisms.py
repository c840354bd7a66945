"""Attention mechanisms of RNN decoders: the base class, Luong and Bahdanau.

The :class:`AttentionMechanism` subclasses score one query ``q`` (an RNN decoder's state,
``[batch, query_dim]``) against a memory ``m`` (``[batch, memory_time, memory_dim]``) and give the
alignments ``a = softmax(score(q, m))`` over the valid memory steps:

* :class:`LuongAttention`: ``q . m_i`` (dot), ``q^T W m_i`` (general) or ``q . m_i / sqrt(d)``
  (scaled_dot), optionally times a learned scalar;
* :class:`BahdanauAttention`: ``v^T tanh(W_m m_i + W_q q)``, optionally weight-normalized;
* :class:`~texkit.core.addressing_attention.CosineAttention`: ``beta * cos(W_q q, W_m m_i)``,
  content-based addressing, and :class:`~texkit.core.addressing_attention.LocationAttention`:
  ``(W_a q + b)_i``, from the query alone (in :mod:`texkit.core.addressing_attention`).

A decoder builds a mechanism once with ``build(query_shape, memory_shape)``, computes
``keys = prepare_memory(memory)`` once per source sequence and calls
``mechanism(query, keys, memory_sequence_length)`` at each step. They are registered by class
name, so hparams select one with ``{"type": "LuongAttention", "kwargs": {...}}``.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit import registry
from texkit.core.attention import MASK_BIAS, sequence_mask
from texkit.hparams import HParamsError, check_positive_int

__all__ = [
    "AttentionMechanism",
    "BahdanauAttention",
    "LuongAttention",
]


def serializable(cls: type) -> type:
    """Registers ``cls`` for ``keras.saving`` (as ``texkit>Name``) and for ``type:`` in hparams."""
    keras.saving.register_keras_serializable(package="texkit")(cls)
    return registry.register(cls)


def check_bool(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise HParamsError(f"expected a bool, got {value!r}", name)


def last_dim(shape: Any, what: str, layer: keras.layers.Layer) -> int:
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
        alignments = tf.nn.softmax(ops.where(valid, scores, MASK_BIAS), axis=-1)
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


@serializable
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
        >>> attention.build((2, 256), (2, None, 512))  # query and memory shapes
        >>> memory = tf.random.normal([2, 5, 512])
        >>> keys = attention.prepare_memory(memory)  # once per source sequence
        >>> state = tf.random.normal([2, 256])
        >>> alignments = attention(state, keys, memory_sequence_length=tf.constant([5, 3]))
        >>> alignments.shape
        TensorShape([2, 5])
        >>> # Each row sums to 1; the steps past a sequence's length get no weight.
        >>> sums, padded = tf.reduce_sum(alignments, axis=1), alignments[1, 3:]
        >>> np.allclose(sums, 1.0), float(tf.reduce_max(padded))
        (True, 0.0)
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
        check_bool(scale, "scale")
        self.units = units
        self.score_type = score
        self.scale = scale

    @property
    def _needs_query_dim(self) -> bool:
        return self.score_type == "general" and self.units is None

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        memory_dim = last_dim(memory_shape, "memory", self)
        query_dim = None
        if query_shape is not None or self._needs_query_dim:
            query_dim = last_dim(query_shape, "query", self)
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


@serializable
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
        check_bool(normalize, "normalize")
        self.units = units
        self.normalize = normalize

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        query_dim = last_dim(query_shape, "query", self)
        memory_dim = last_dim(memory_shape, "memory", self)
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
