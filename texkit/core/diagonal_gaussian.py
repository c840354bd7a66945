"""The Gaussian with a diagonal covariance: a VAE's posterior and prior, without TF Probability.

``DiagonalGaussian(loc, scale_diag)`` is a batch of independent Gaussians over the last axis
(the event), as TF Probability's ``MultivariateNormalDiag`` and torch's ``Normal`` summed over
that axis: ``sample`` draws by the reparameterization ``loc + scale_diag * epsilon`` with
``epsilon`` standard normal (gradients reach ``loc`` and ``scale_diag``), ``log_prob`` and the
KL divergences are the closed forms, summed over the event axis. Computations run in the dtype
of ``loc`` (float32 for VAEs under mixed precision: cast first).
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf
from keras import ops

__all__ = ["DiagonalGaussian"]

_LOG_2PI = math.log(2.0 * math.pi)


class DiagonalGaussian:
    """Independent Gaussians ``N(loc, scale_diag**2)`` over the last axis of ``loc``.

    Args:
        loc: the means, ``[..., event_size]`` floats.
        scale_diag: the standard deviations, positive, broadcastable to ``loc``.

    Example:
        >>> posterior = DiagonalGaussian.from_log_variance(ops.zeros([4, 8]), ops.zeros([4, 8]))
        >>> posterior.sample(seed=1).shape, posterior.kl_to_standard_normal().shape
        (TensorShape([4, 8]), TensorShape([4]))
    """

    #: Samples are differentiable functions of ``loc`` and ``scale_diag``.
    reparameterized = True

    def __init__(self, loc: Any, scale_diag: Any, *, _log_scale: Any = None):
        self.loc = ops.convert_to_tensor(loc)
        if "float" not in keras.backend.standardize_dtype(self.loc.dtype):
            raise TypeError(f"DiagonalGaussian: loc must be floating, got {self.loc.dtype}")
        if len(self.loc.shape) < 1 or self.loc.shape[-1] is None:
            raise ValueError(
                f"DiagonalGaussian: loc needs a last (event) axis of known size, got shape "
                f"{tuple(self.loc.shape)}"
            )
        self.scale_diag = ops.cast(ops.convert_to_tensor(scale_diag), self.loc.dtype)
        try:
            tf.broadcast_static_shape(self.scale_diag.shape, self.loc.shape)
        except ValueError:
            raise ValueError(
                f"DiagonalGaussian: scale_diag of shape {tuple(self.scale_diag.shape)} does not "
                f"broadcast to loc's {tuple(self.loc.shape)}"
            ) from None
        self._log_scale = _log_scale

    @classmethod
    def from_log_variance(cls, loc: Any, log_variance: Any) -> DiagonalGaussian:
        """The Gaussian of means ``loc`` and variances ``exp(log_variance)``, as a VAE's encoder
        predicts them (the log variance is kept, for exact log-densities and KL terms)."""
        loc = ops.convert_to_tensor(loc)
        log_scale = 0.5 * ops.cast(log_variance, loc.dtype)
        return cls(loc, ops.exp(log_scale), _log_scale=log_scale)

    @property
    def event_size(self) -> int:
        """The size of the last axis."""
        return int(self.loc.shape[-1])

    def log_scale(self) -> Any:
        """``log(scale_diag)``, broadcast to ``loc``'s shape."""
        log_scale = ops.log(self.scale_diag) if self._log_scale is None else self._log_scale
        return ops.broadcast_to(log_scale, ops.shape(self.loc))

    def reparameterize(self, epsilon: Any) -> Any:
        """``loc + scale_diag * epsilon``: the sample that standard normal noise ``epsilon``
        (shape ``sample_shape + loc.shape``) gives."""
        return self.loc + self.scale_diag * ops.cast(epsilon, self.loc.dtype)

    def sample(self, sample_shape: Any = (), seed: Any = None) -> Any:
        """Draws ``sample_shape + loc.shape`` values by reparameterization.

        Args:
            sample_shape: the shape of independent draws in front, ``()`` for one per Gaussian.
            seed: a ``keras.random.SeedGenerator`` (a new draw at each call), an int (the same
                draw for the same seed) or ``None`` (Keras' global generator).
        """
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        shape = tuple(sample_shape) + tuple(ops.shape(self.loc))
        epsilon = keras.random.normal(shape, dtype=self.loc.dtype, seed=seed)
        return self.reparameterize(epsilon)

    def log_prob(self, value: Any) -> Any:
        """The log-density of ``value`` (``[..., event_size]``, broadcast against ``loc``),
        summed over the event axis: shape ``value.shape[:-1]`` broadcast with the batch."""
        z = (ops.cast(value, self.loc.dtype) - self.loc) / self.scale_diag
        return -0.5 * ops.sum(ops.square(z) + _LOG_2PI + 2.0 * self.log_scale(), axis=-1)

    def kl_divergence(self, other: DiagonalGaussian) -> Any:
        """``KL(self || other)`` in closed form, summed over the event axis."""
        if not isinstance(other, DiagonalGaussian):
            raise TypeError(
                f"kl_divergence: other must be a DiagonalGaussian, got {type(other).__name__}"
            )
        variance_ratio = ops.square(self.scale_diag / other.scale_diag)
        mean_term = ops.square((self.loc - other.loc) / other.scale_diag)
        log_ratio = other.log_scale() - self.log_scale()
        return ops.sum(0.5 * (variance_ratio + mean_term - 1.0) + log_ratio, axis=-1)

    def kl_to_standard_normal(self) -> Any:
        """``KL(self || N(0, I))``, summed over the event axis: the VAE's KL term
        ``0.5 * sum(loc**2 + scale**2 - 1 - 2 log scale)``."""
        log_scale = self.log_scale()
        terms = ops.square(self.loc) + ops.exp(2.0 * log_scale) - 1.0 - 2.0 * log_scale
        return 0.5 * ops.sum(terms, axis=-1)

    @classmethod
    def standard_normal(cls, shape: Any, dtype: str = "float32") -> DiagonalGaussian:
        """``N(0, I)`` with ``loc`` of shape ``shape`` (batch dimensions and the event size)."""
        zeros = ops.zeros(shape, dtype=dtype)
        return cls(zeros, ops.ones_like(zeros), _log_scale=zeros)

    def __repr__(self) -> str:
        return f"DiagonalGaussian(shape={tuple(self.loc.shape)}, dtype={self.loc.dtype})"
