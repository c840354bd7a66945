"""Sampling from a step's logits: temperature, top-k and nucleus (top-p) filtering, and the
stateless seeds that make a draw reproducible (see
:func:`~texkit.modules.decoders.sample_decode`)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import tensorflow as tf

__all__ = [
    "check_temperature",
    "filter_top_k",
    "filter_top_p",
    "is_int",
    "sample_choice",
    "seed_tensor",
]

NEG_INF = float("-inf")


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_temperature(softmax_temperature: Any) -> None:
    """A temperature must be positive; a tensor is checked when its value is static."""
    value = softmax_temperature
    if isinstance(value, (tf.Tensor, tf.Variable)):
        value = tf.get_static_value(value)
        if value is None:
            return
    if not (isinstance(value, numbers.Real) or hasattr(value, "dtype")) or not value > 0:
        raise ValueError(f"softmax_temperature must be positive, got {softmax_temperature!r}")


def seed_tensor(seed: Any) -> Any:
    """A ``[2]`` int32 seed for the stateless samplers from an int, a pair, or ``None``."""
    if seed is None:
        return tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)
    if is_int(seed):
        if not 0 <= seed < 2**31:
            raise ValueError(f"seed must be in [0, 2**31), got {seed}")
        return tf.constant([int(seed), 0], tf.int32)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int32)
    if seed.shape.rank != 1 or seed.shape[0] != 2:
        raise ValueError(f"seed must be an int or a [2] int tensor, got shape {seed.shape}")
    return seed


def _check_top_k(top_k: Any) -> None:
    if not is_int(top_k) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative int, got {top_k!r}")


def _check_top_p(top_p: Any) -> None:
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")


def filter_top_k(logits: Any, top_k: int) -> Any:
    """``logits`` with all but the ``top_k`` largest of each row set to ``-inf`` (0: no filter).

    Ties with the ``top_k``-th largest value are kept.
    """
    _check_top_k(top_k)
    if top_k == 0:
        return logits
    top_k = min(int(top_k), logits.shape[-1] or int(top_k))
    kth = tf.math.top_k(logits, k=top_k).values[..., -1:]
    return tf.where(logits < kth, tf.cast(NEG_INF, logits.dtype), logits)


def filter_top_p(logits: Any, top_p: float) -> Any:
    """Nucleus filtering (Holtzman et al., 2020): keeps the most likely tokens up to the first
    whose cumulative probability mass reaches ``top_p``, sets the other logits to ``-inf``.

    A token is kept when the mass of the tokens more likely than it is below ``top_p``, so the
    most likely token always stays and, without ties, the kept set is the smallest one whose mass
    reaches ``top_p``. Tokens tied with the last kept one are kept too, and the masses are summed
    in float32, so at an exact boundary rounding may keep one more token. ``top_p >= 1`` keeps
    everything.
    """
    _check_top_p(top_p)
    if top_p >= 1.0:
        return logits
    logits = tf.cast(logits, tf.float32)
    ordered = tf.sort(logits, axis=-1, direction="DESCENDING")
    mass_before = tf.math.cumsum(tf.nn.softmax(ordered, axis=-1), axis=-1, exclusive=True)
    kept = tf.where(mass_before < top_p, ordered, tf.cast(float("inf"), tf.float32))
    threshold = tf.reduce_min(kept, axis=-1, keepdims=True)
    return tf.where(logits < threshold, NEG_INF, logits)


def sample_choice(
    softmax_temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: Any = None
) -> Callable[[Any, Any], Any]:
    """``choose(logits, time) -> ids``: a token drawn from ``softmax(logits /
    softmax_temperature)`` restricted to the ``top_k`` and the top-``top_p`` tokens, with a seed
    folded with ``time`` (see :func:`sample_decode`). Checks the arguments at once."""
    check_temperature(softmax_temperature)
    _check_top_k(top_k)  # before tracing the loop
    _check_top_p(top_p)
    seed = seed_tensor(seed)

    def choose(logits: Any, time: Any) -> Any:
        logits = filter_top_p(filter_top_k(logits / softmax_temperature, top_k), top_p)
        step_seed = tf.random.experimental.stateless_fold_in(seed, time)
        return tf.random.stateless_categorical(logits, 1, step_seed, dtype=tf.int32)[:, 0]

    return choose
