"""Embedding tables stored as int8 with one scale per row, for inference.

A layer that holds its table in a weight named ``embedding`` (``[rows, dim]``: texkit's
:class:`~texkit.modules.WordEmbedder` and :class:`~texkit.modules.PositionEmbedder`) is
quantized by :func:`quantize_table`: the float weight is replaced by an int8 weight of the same
name and shape, ``q``, and a float32 weight ``embedding_scale`` ``[rows]``, ``s``, with::

    embedding[r] ~= q[r] * s[r],   s[r] = max_j |embedding[r, j]| / 127,   |q| <= 127

(a row of zeros gets ``s = 1``). One scale per row (per token) keeps a rare token's small
vector as precise as a frequent token's large one; the error of each value is at most half a
step, ``s[r] / 2``.

The readers dequantize only what they use: :func:`dequantize_rows` scales the int8 rows gathered for
the ids; :func:`table_logits` (an output layer tied to the table, ``x E^T``) multiplies
by the int8 table cast to the compute dtype and scales each logit by its token's ``s``;
:func:`full_table` gives the whole float table (for what needs all of it).
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from texkit import _compat

__all__ = [
    "dequantize_rows",
    "full_table",
    "is_quantized_table",
    "quantize_rows",
    "quantize_table",
    "table_logits",
]

_LEVELS = 127  # symmetric int8: [-127, 127]


def quantize_rows(table: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(q, s)``: ``table`` ``[rows, dim]`` as int8 values and one float32 scale per row."""
    table = np.asarray(table, np.float32)
    if table.ndim != 2:
        raise ValueError(f"quantize_rows: expected a [rows, dim] table, got shape {table.shape}")
    peak = np.max(np.abs(table), axis=1)
    scale = np.where(peak > 0, peak / _LEVELS, 1.0).astype(np.float32)
    values = np.clip(np.rint(table / scale[:, None]), -_LEVELS, _LEVELS).astype(np.int8)
    return values, scale


def is_quantized_table(layer: Any) -> bool:
    """Whether ``layer``'s ``embedding`` is an int8 table quantized by :func:`quantize_table`."""
    return getattr(layer, "embedding_scale", None) is not None


def quantize_table(layer: keras.layers.Layer) -> None:
    """Replaces ``layer.embedding`` (built, float) by its int8 form and ``embedding_scale``.

    Both are non-trainable; they keep the layer's weight paths (``<layer>/embedding``, and
    ``<layer>/embedding_scale`` beside it).
    """
    values, scale = quantize_rows(ops.convert_to_numpy(layer.embedding))
    with _compat.unlocked_tracker(layer):
        del layer.embedding
        layer.embedding = layer.add_weight(
            name="embedding",
            shape=values.shape,
            initializer="zeros",
            dtype="int8",
            trainable=False,
            autocast=False,
        )
        layer.embedding_scale = layer.add_weight(
            name="embedding_scale",
            shape=scale.shape,
            initializer="ones",
            dtype="float32",
            trainable=False,
            autocast=False,
        )
    layer.embedding.assign(values)
    layer.embedding_scale.assign(scale)


def _scale(layer: Any, dtype: Any) -> Any:
    return ops.cast(layer.embedding_scale, dtype)


def full_table(layer: Any, dtype: Any) -> Any:
    """The layer's whole table ``[rows, dim]`` in ``dtype`` (dequantized if it is int8)."""
    table = ops.cast(layer.embedding, dtype)
    if is_quantized_table(layer):
        table = table * _scale(layer, dtype)[:, None]
    return table


def dequantize_rows(rows: Any, scales: Any, dtype: Any) -> Any:
    """Gathered int8 ``rows`` ``[..., dim]`` with their ``scales`` ``[...]``, as ``dtype``."""
    return ops.cast(rows, dtype) * ops.cast(scales, dtype)[..., None]


def table_logits(x: Any, layer: Any) -> Any:
    """``x E^T`` for ``x [..., dim]`` and the layer's table ``E``, in ``x``'s dtype: with an int8
    table, ``(x q^T) * s`` (the scale of each token applied to its logit, not to its row)."""
    dtype = x.dtype
    if not is_quantized_table(layer):
        return ops.matmul(x, ops.transpose(ops.cast(layer.embedding, dtype)))
    logits = tf.linalg.matmul(x, ops.cast(layer.embedding, dtype), transpose_b=True)
    return logits * _scale(layer, dtype)
