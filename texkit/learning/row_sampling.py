"""Sampling whose draws belong to the row, not to the batch.

TensorFlow's stateless samplers draw a batch's random numbers in sequence: the third row of a
batch of four gets other numbers than the same input as the first row of a batch of two. A
policy-gradient run split over replicas (each sees part of the global batch) would then sample
other sequences than the same run on one device. Here every random number is a hash of the
row's key, the time step and the token id (a counter-based generator), and a token is drawn by
the Gumbel-max rule, ``argmax(logits + g)`` with ``g = -log(-log(u))``, an exact sample of
``softmax(logits)``. A row's samples are then a function of ``(seed, row key, time)`` alone:
the same under every strategy, batch size and batch order.

A row's key is a hash of its input (its features; two equal inputs have the same key) and of
its sample's index among the samples of that input (:func:`row_keys`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import tensorflow as tf

from texkit.modules.decoders.sampling import check_temperature, filter_top_k, filter_top_p

__all__ = ["hash32", "row_choice", "row_keys", "uniform_noise"]

_M1 = 0x7FEB352D
_M2 = 0x846CA68B
_GOLDEN = 0x9E3779B9


def hash32(x: Any) -> Any:
    """A 32-bit integer hash (a xor-shift-multiply finalizer) of a uint32 tensor, elementwise."""
    x = tf.cast(x, tf.uint32)
    for shift, multiplier in ((16, _M1), (15, _M2), (16, None)):
        x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(shift, tf.uint32)))
        if multiplier is not None:
            x = x * tf.constant(multiplier, tf.uint32)
    return x


def _combine(a: Any, b: Any) -> Any:
    """A hash of two uint32 tensors (broadcast)."""
    b = tf.cast(b, tf.uint32) * tf.constant(_GOLDEN, tf.uint32)
    return hash32(tf.bitwise.bitwise_xor(hash32(a), b))


def _feature_hash(value: Any) -> Any:
    """``[n]`` uint32: a hash of each row of one feature (all its entries in order)."""
    value = tf.convert_to_tensor(value)
    rows = tf.shape(value)[0]
    if value.dtype == tf.string:
        flat = tf.strings.to_hash_bucket_fast(tf.reshape(value, [rows, -1]), 2**31 - 1)
    elif value.dtype.is_integer or value.dtype == tf.bool:
        flat = tf.reshape(tf.cast(value, tf.int64), [rows, -1])
    else:
        flat = tf.bitcast(tf.reshape(tf.cast(value, tf.float32), [rows, -1]), tf.int32)
    flat = tf.cast(tf.bitwise.bitwise_and(tf.cast(flat, tf.int64), 0xFFFFFFFF), tf.uint32)
    positions = tf.cast(tf.range(tf.shape(flat)[1]), tf.uint32)
    mixed = hash32(tf.bitwise.bitwise_xor(flat, hash32(positions + 1)[None, :]))
    # A sum of the mixed entries (wrapping) is order-aware through the positions.
    return tf.reduce_sum(tf.cast(mixed, tf.int64), axis=1) % (2**32)


def row_keys(features: Mapping[str, Any], num_samples: int) -> Any:
    """``[n * num_samples]`` uint32 keys for ``features`` (each ``[n, ...]``) repeated
    ``num_samples`` times per row (row ``i * num_samples + j`` is input ``i``'s sample ``j``):
    a hash of the input's every feature, by name, and of ``j``.

    Raises:
        ValueError: ``features`` is empty (nothing to tell the rows apart by).
    """
    if not features:
        raise ValueError("row_keys: features is empty; give at least one feature per row")
    key = None
    for name in sorted(features):
        value = _combine(
            _feature_hash(features[name]), tf.strings.to_hash_bucket_fast(name, 2**31 - 1)
        )
        key = value if key is None else _combine(key, value)
    key = tf.repeat(tf.cast(key, tf.uint32), num_samples, axis=0)
    index = tf.tile(tf.cast(tf.range(num_samples), tf.uint32), tf.shape(key)[:1] // num_samples)
    return _combine(key, index)


def uniform_noise(keys: Any, time: Any, vocab_size: int) -> Any:
    """``[rows, vocab_size]`` float32 in ``(0, 1)``: the row's numbers at step ``time``."""
    step = _combine(keys, tf.cast(time, tf.uint32) + 1)
    bits = _combine(step[:, None], tf.cast(tf.range(vocab_size), tf.uint32)[None, :])
    # The top 24 bits, centered in their interval: never 0 or 1.
    top = tf.cast(tf.bitwise.right_shift(bits, tf.constant(8, tf.uint32)), tf.float32)
    return (top + 0.5) / float(1 << 24)


def row_choice(
    keys: Any,
    seed: Any,
    softmax_temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
) -> Callable[[Any, Any], Any]:
    """``choose(logits, time) -> ids``: a token drawn for each row from ``softmax(logits /
    softmax_temperature)`` restricted to the ``top_k`` and the top-``top_p`` tokens (the order
    of :func:`~texkit.modules.decoders.sample_decode`), with the row's own random numbers.

    Args:
        keys: ``[rows]`` uint32 row keys (:func:`row_keys`).
        seed: an int or a scalar int tensor (e.g. the training step): other seeds, other draws.
        softmax_temperature, top_k, top_p: the sampling settings.
    """
    check_temperature(softmax_temperature)
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    seeded = _combine(tf.cast(keys, tf.uint32), tf.cast(seed, tf.int64) % (2**32))

    def choose(logits: Any, time: Any) -> Any:
        logits = tf.cast(logits, tf.float32) / softmax_temperature
        logits = filter_top_p(filter_top_k(logits, top_k), top_p)
        noise = uniform_noise(seeded, time, logits.shape[-1] or tf.shape(logits)[-1])
        gumbel = -tf.math.log(-tf.math.log(noise))
        return tf.argmax(logits + gumbel, axis=-1, output_type=tf.int32)

    return choose
