"""Relative position biases (T5; Raffel et al., 2020): a learned bias per head and distance bucket.

Instead of position embeddings, each attention adds to its score of query ``i`` and key ``j`` a
learned value per head, looked up by the *bucket* of ``j - i``
(:func:`relative_position_bucket`): small distances get a bucket each, larger ones share
logarithmically wider buckets up to ``max_distance``, and all farther ones the last bucket.
Bidirectional buckets (an encoder) tell keys before the query from keys after it; causal ones (a
decoder's self-attention) look back only. :class:`RelativePositionBias` holds the table and gives
the bias :class:`texkit.core.relative_attention.RelativeAttention` adds to its scores.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf
from keras import ops

__all__ = ["RelativePositionBias", "relative_position_bucket"]


def relative_position_bucket(
    relative_position: Any, bidirectional: bool, num_buckets: int, max_distance: int
) -> Any:
    """T5's bucket of each ``relative_position`` (key position minus query position), int32.

    Bidirectional: half the buckets for keys at or before the query, half for keys after it.
    Within each half, distances below half of its buckets get one bucket each; larger ones
    share buckets whose widths grow logarithmically up to ``max_distance``, and all farther
    ones the last bucket. Looking back only (``bidirectional=False``), keys after the query
    fall into bucket 0.

    >>> relative_position_bucket([-3, -1, 0, 1, 3], True, 8, 16).numpy()
    array([2, 1, 0, 5, 6], dtype=int32)
    >>> relative_position_bucket([-3, -1, 0, 1, 3], False, 8, 16).numpy()
    array([3, 1, 0, 0, 0], dtype=int32)
    """
    relative_position = tf.cast(relative_position, tf.int32)
    buckets = tf.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += tf.cast(relative_position > 0, tf.int32) * num_buckets
        distance = tf.abs(relative_position)
    else:
        distance = -tf.minimum(relative_position, 0)
    exact = num_buckets // 2
    # The logarithmic part in float32, as the reference computes it.
    scaled = tf.math.log(tf.cast(tf.maximum(distance, 1), tf.float32) / exact) / math.log(
        max_distance / exact
    )
    large = exact + tf.cast(scaled * (num_buckets - exact), tf.int32)
    large = tf.minimum(large, num_buckets - 1)
    return buckets + tf.where(distance < exact, distance, large)


@keras.saving.register_keras_serializable(package="texkit")
class RelativePositionBias(keras.layers.Embedding):
    """The table of a relative position bias, ``[num_buckets, num_heads]``, and its lookup.

    A Keras ``Embedding`` (its one weight is ``embeddings``, the name checkpoint tables refer
    to) whose call takes query and key positions instead of ids.

    Args:
        num_buckets: the number of distance buckets (at least 4).
        num_heads: the number of attention heads (one bias per head).
        max_distance: the distance from which all positions share a bucket.
        bidirectional: whether keys after the query get buckets of their own (an encoder) or
            share bucket 0 (causal self-attention).
        **kwargs: ``Embedding`` arguments (``embeddings_initializer``, ``name``, ``dtype``).

    Call arguments:
        query_positions: ``[queries]`` int positions.
        key_positions: ``[keys]`` int positions.

    Returns:
        float32 ``[1, num_heads, queries, keys]``, to add to attention scores.

    >>> import numpy as np
    >>> bias = RelativePositionBias(8, 2, 16, bidirectional=False)
    >>> positions = np.arange(3)
    >>> tuple(bias(positions, positions).shape)
    (1, 2, 3, 3)
    """

    def __init__(
        self,
        num_buckets: int,
        num_heads: int,
        max_distance: int,
        bidirectional: bool = True,
        **kwargs: Any,
    ):
        if num_buckets < 4:
            raise ValueError(f"at least 4 buckets are needed, got {num_buckets}")
        super().__init__(num_buckets, num_heads, **kwargs)
        self.num_buckets, self.num_heads = num_buckets, num_heads
        self.max_distance, self.bidirectional = max_distance, bool(bidirectional)

    def call(self, query_positions: Any, key_positions: Any) -> Any:
        relative = (
            ops.cast(key_positions, "int32")[None, :] - ops.cast(query_positions, "int32")[:, None]
        )
        buckets = relative_position_bucket(
            relative, self.bidirectional, self.num_buckets, self.max_distance
        )
        bias = ops.cast(super().call(buckets), "float32")  # [queries, keys, heads]
        return ops.transpose(bias, (2, 0, 1))[None]

    def compute_output_shape(self, query_shape: Any, key_shape: Any = None) -> tuple:
        keys = None if key_shape is None else key_shape[0]
        return (1, self.num_heads, query_shape[0], keys)

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("input_dim", "output_dim"):
            config.pop(key, None)
        return {
            **config,
            "num_buckets": self.num_buckets,
            "num_heads": self.num_heads,
            "max_distance": self.max_distance,
            "bidirectional": self.bidirectional,
        }
