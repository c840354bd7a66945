"""Normalization: RMS norm, computed in float32 whatever the layer's dtype policy.

:class:`RMSNorm` (Zhang and Sennrich, 2019) divides each vector by its root mean square, with no
mean subtracted and no bias, then scales it::

    y = x / sqrt(mean(x^2) + epsilon) * scale          (T5, Llama, Mistral, Qwen)
    y = x / sqrt(mean(x^2) + epsilon) * (1 + scale)    (unit_offset=True: Gemma)

The layer norm of BERT and the Transformer is Keras' ``LayerNormalization``
(:func:`texkit.core.transformer.layer_norm`).
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

__all__ = ["RMSNorm"]


@keras.saving.register_keras_serializable(package="texkit")
class RMSNorm(keras.layers.RMSNormalization):
    """RMS norm over ``axis``: ``x / sqrt(mean(x^2) + epsilon) * scale``, in float32.

    Keras' ``RMSNormalization`` with its one weight, ``scale`` (so checkpoint name tables refer to
    ``<norm>.scale``), computed on float32 copies of the inputs and of ``scale`` and cast back to
    the compute dtype: under ``mixed_bfloat16`` only the result is rounded, as the reference
    implementations do.

    Args:
        axis: the axis (or axes) normalized.
        epsilon: added to the mean square.
        unit_offset: if true, the stored weight is an offset from 1 (``scale`` starts at zeros and
            the vectors are multiplied by ``1 + scale``), Gemma's convention.
        **kwargs: Keras layer arguments (``name``, ``dtype``).

    >>> import numpy as np
    >>> norm = RMSNorm(epsilon=0.0)
    >>> np.round(norm(np.array([[3.0, 4.0]], "float32")).numpy(), 4)
    array([[0.8485, 1.1314]], dtype=float32)
    """

    def __init__(
        self, axis: Any = -1, epsilon: float = 1e-6, unit_offset: bool = False, **kwargs: Any
    ):
        super().__init__(axis=axis, epsilon=epsilon, **kwargs)
        self.unit_offset = bool(unit_offset)

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)
        if self.unit_offset:
            self.scale.assign(ops.zeros_like(self.scale))

    def call(self, x: Any) -> Any:
        scale = ops.cast(self.scale, "float32")
        if self.unit_offset:
            scale = scale + 1.0
        y = ops.rms_normalization(
            ops.cast(x, "float32"), scale=scale, axis=self.axis, epsilon=self.epsilon
        )
        return ops.cast(y, self.compute_dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "unit_offset": self.unit_offset}
