"""Dropout: the one entry point every texkit module uses.

``dropout(inputs, rate, training, seed, noise_shape=None)`` returns ``inputs`` unchanged outside
training or at rate 0. In training, element-wise dropout runs through
:func:`texkit.core.fused.dropout` (one fused pass forward and back, random bits hashed from each
element's position and the seed); dropout with a ``noise_shape`` (one draw shared along the axes
of size 1: whole vectors, whole table rows, one mask per sequence) through
``keras.random.dropout``. Both are inverted dropout: kept values are scaled by ``1 / (1 - rate)``,
so the expectation is unchanged.
"""

from __future__ import annotations

from typing import Any

import keras

from texkit.core import fused

__all__ = ["dropout"]


def dropout(inputs: Any, rate: float, training: Any, seed: Any, noise_shape: Any = None) -> Any:
    """Inverted dropout of ``inputs`` with drop probability ``rate`` when ``training``.

    Args:
        inputs: a floating tensor.
        rate: the drop probability, in ``[0, 1]``.
        training: Keras' training flag; dropout acts only when it is true.
        seed: a ``keras.random.SeedGenerator`` (each call draws a new mask).
        noise_shape: the shape of the mask, broadcast over ``inputs`` (``None``: one draw per
            element).
    """
    if not training or rate == 0:
        return inputs
    if noise_shape is None:
        return fused.dropout(inputs, rate, seed)
    return keras.random.dropout(inputs, rate, noise_shape=noise_shape, seed=seed)
