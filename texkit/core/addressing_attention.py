"""Content- and location-based attention mechanisms (the addressing of Neural Turing Machines).

* :class:`CosineAttention`: ``beta * cos(W_q q, W_m m_i)``, content-based addressing;
* :class:`LocationAttention`: ``(W_a q + b)_i``, from the query alone.

Both follow the :class:`~texkit.core.attention_mechanisms.AttentionMechanism` contract and are
registered by class name for ``{"type": ..., "kwargs": ...}`` in hparams.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.core.attention_mechanisms import AttentionMechanism, check_bool, last_dim, serializable
from texkit.hparams import HParamsError, check_positive_int

__all__ = ["CosineAttention", "LocationAttention"]

# Floor of the squared norms in CosineAttention: a zero vector gets cosine 0 instead of NaN.
_NORM_EPSILON = 1e-12


@serializable
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
        check_bool(learn_strength, "learn_strength")
        self.units = units
        self.strength = float(strength)
        self.learn_strength = learn_strength

    @property
    def _needs_query_dim(self) -> bool:
        return self.units is not None

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        memory_dim = last_dim(memory_shape, "memory", self)
        query_dim = None
        if query_shape is not None or self._needs_query_dim:
            query_dim = last_dim(query_shape, "query", self)
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


@serializable
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
        check_bool(use_bias, "use_bias")
        self.max_memory_length = max_memory_length
        self.use_bias = use_bias

    def build(self, query_shape: Any, memory_shape: Any) -> None:
        query_dim = last_dim(query_shape, "query", self)
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
