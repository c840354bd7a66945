"""Training-time element-wise kernels: dropout and GELU, each one fused pass forward and back.

A training step of a Transformer spends much of its time between the matrix products, in
element-wise work that TensorFlow runs one op at a time, each op a full pass over memory:
dropout draws a float per element, compares, scales and selects, and its gradient selects again;
the exact GELU is five ops forward and, through automatic differentiation, eight more back (on
bfloat16 tensors TensorFlow's CPU kernels for ``erfc`` and ``exp`` also convert every element).
The functions here compute the same values with their element-wise work compiled by XLA (one
fused loop forward, one back, through :func:`tf.custom_gradient`), while the matrix products
around them keep running on TensorFlow's own kernels (oneDNN on the CPU). Inside a function that
is itself compiled with ``jit_compile=True`` they are ordinary XLA code.

* :func:`gelu`: the exact (erf) or tanh GELU, computed in float32 for 16-bit inputs.
* :func:`dropout`: inverted dropout whose random bits are a hash of each element's position and
  the seed, computed inside the fused loop (a counter-based generator, as TensorFlow's Philox
  is, with a cheaper function: a few integer multiplies and shifts per element, no random
  numbers written to memory and read back). The drop probability is ``rate`` rounded to a
  multiple of 2**-32 and the kept values are scaled by the inverse of the exact keep
  probability, so the expectation is unchanged. The mask is kept as booleans for the gradient.

What this does to a BERT fine-tuning step is measured by ``benchmarks/bert.py`` (fine-tuning
part) and recorded in ``benchmarks/RESULTS.md``. Inference does not use these functions: there
TensorFlow's CPU build fuses the GELU with its matrix product and bias add into one oneDNN
kernel, which a custom gradient would prevent.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf

__all__ = ["dropout", "gelu", "training_activation"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715
_LEVELS = 1 << 32  # the dropout mask's random levels per element


def _compute_dtype(dtype: tf.DType) -> tf.DType:
    return tf.float32 if dtype in (tf.bfloat16, tf.float16) else dtype


def _gelu_parts(x: Any, approximate: bool) -> tuple[Any, Any]:
    """``(gelu(x), gelu'(x))`` in ``x``'s compute dtype."""
    h = tf.cast(x, _compute_dtype(x.dtype))
    if approximate:
        inner = _SQRT_2_OVER_PI * (h + _TANH_CUBIC * h * h * h)
        t = tf.tanh(inner)
        d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * h * h)
        cdf = 0.5 * (1.0 + t)
        return h * cdf, cdf + 0.5 * h * (1.0 - t * t) * d_inner
    cdf = 0.5 * tf.math.erfc(-_SQRT_HALF * h)
    return h * cdf, cdf + h * (_INV_SQRT_2PI * tf.exp(-0.5 * h * h))


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_forward(x: Any, approximate: bool) -> Any:
    return tf.cast(_gelu_parts(x, approximate)[0], x.dtype)


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_backward(x: Any, dy: Any, approximate: bool) -> Any:
    slope = _gelu_parts(x, approximate)[1]
    return tf.cast(tf.cast(dy, slope.dtype) * slope, x.dtype)


def gelu(x: Any, approximate: bool = False) -> Any:
    """GELU, ``x * Phi(x)`` (``approximate``: the tanh form), for training.

    The same values as ``keras.activations.gelu`` (float32: to a few ulps); the forward pass and
    the gradient are each one XLA-fused loop, and the gradient recomputes ``Phi`` from ``x``
    instead of keeping it. 16-bit inputs are computed in float32 and rounded once.
    """
    x = tf.convert_to_tensor(x)
    approximate = bool(approximate)

    @tf.custom_gradient
    def apply(x: Any) -> Any:
        return _gelu_forward(x, approximate), lambda dy: _gelu_backward(x, dy, approximate)

    return apply(x)


def training_activation(activation: Any) -> Any:
    """The fused equivalent of an activation function for training, or ``None`` if there is
    none: :func:`gelu` for ``keras.activations.gelu`` with or without ``approximate``.

    ``activation``: what :func:`texkit.core.layers.get_activation` returns.
    """
    function = getattr(activation, "function", activation)
    kwargs = dict(getattr(activation, "kwargs", None) or {})
    if function is not keras.activations.gelu or set(kwargs) - {"approximate"}:
        return None
    approximate = bool(kwargs.get("approximate", False))
    return lambda x: gelu(x, approximate=approximate)


def _mix(h: Any) -> Any:
    """A bijective mixing of uint32 values in which every input bit moves every output bit
    (two multiply-xorshift rounds; the constants of Wellons' ``lowbias32``)."""
    h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))
    h = h * tf.constant(0x7FEB352D, tf.uint32)
    h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 15))
    h = h * tf.constant(0x846CA68B, tf.uint32)
    return tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))


@tf.function(jit_compile=True, reduce_retracing=True)
def _masked_scale(x: Any, seed: Any, dropped: int, scale: float) -> tuple[Any, Any]:
    """``(x`` with its dropped elements zeroed and the others scaled, the keep mask``)``.

    Each element's 32 random bits are a hash of its position and the seed, computed in the same
    fused loop as the select: the element in row ``i`` (of the dimensions but the last, flattened)
    and column ``j`` gets ``mix(a[j] + b[i])``, with ``a = mix(j ^ k0)`` and ``b =
    mix(mix(i ^ k1) + k0)`` computed once per column and per row, and ``k0, k1`` the mixed seed
    words. It is kept when the bits, as an unsigned number, are at least ``dropped``.
    """
    shape = tf.shape(x)
    columns = tf.reduce_prod(shape[-1:])  # 1 for a scalar; the rank may be unknown here
    rows = tf.size(x) // tf.maximum(columns, 1)
    key = tf.bitcast(seed, tf.uint32)
    k0 = _mix(tf.bitwise.bitwise_xor(key[0], tf.constant(0x9E3779B9, tf.uint32)))
    k1 = _mix(key[1] + tf.constant(0x85EBCA6B, tf.uint32))
    a = _mix(tf.bitwise.bitwise_xor(tf.bitcast(tf.range(columns), tf.uint32), k0))
    b = _mix(_mix(tf.bitwise.bitwise_xor(tf.bitcast(tf.range(rows), tf.uint32), k1)) + k0)
    bits = _mix(a[tf.newaxis, :] + b[:, tf.newaxis])
    keep = tf.reshape(bits >= tf.constant(dropped, tf.uint32), shape)
    return tf.where(keep, x * tf.cast(scale, x.dtype), tf.zeros_like(x)), keep


@tf.function(jit_compile=True, reduce_retracing=True)
def _masked_scale_grad(dy: Any, keep: Any, scale: float) -> Any:
    return tf.where(keep, dy * tf.cast(scale, dy.dtype), tf.zeros_like(dy))


def _seed_tensor(seed: Any) -> Any:
    """A ``[2]`` int32 seed from a ``keras.random.SeedGenerator`` (advancing it) or a tensor."""
    if isinstance(seed, keras.random.SeedGenerator):
        seed = seed.next()
    seed = tf.convert_to_tensor(seed)
    if seed.dtype != tf.int32:
        # Keras' generator state is int64; the hash takes two 32-bit words.
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    return seed


def dropout(x: Any, rate: float, seed: Any) -> Any:
    """Inverted dropout of ``x`` in training: each element zeroed with probability ``rate``,
    the others scaled so the expectation is ``x``.

    Args:
        x: a floating tensor.
        rate: the drop probability, ``0 <= rate <= 1``; it is rounded to a multiple of 2**-32,
            and the kept elements are scaled by ``2**32 / (2**32 - round(rate * 2**32))``.
        seed: a ``keras.random.SeedGenerator`` (drawn from, so every call draws a new mask) or
            a ``[2]`` integer seed tensor.

    Raises:
        ValueError: ``rate`` outside ``[0, 1]``.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dropout rate: expected 0 <= rate <= 1, got {rate}")
    x = tf.convert_to_tensor(x)
    dropped = round(rate * _LEVELS)
    if dropped == 0:
        return x
    if dropped == _LEVELS:
        return tf.zeros_like(x)
    seed = _seed_tensor(seed)
    scale = _LEVELS / (_LEVELS - dropped)

    @tf.custom_gradient
    def apply(x: Any) -> Any:
        y, keep = _masked_scale(x, seed, dropped, scale)
        return y, lambda dy: _masked_scale_grad(dy, keep, scale)

    return apply(x)
