"""Stochastic connectors: a sample of a distribution, optionally mapped to a decoder's state.

Texar's two connectors of VAEs, called on a distribution and returning ``(output, sample)``:

* :class:`ReparameterizedStochasticConnector`: the sample is a differentiable function of the
  distribution's parameters (a :class:`~texkit.core.diagonal_gaussian.DiagonalGaussian`), so the
  gradients of what the decoder does with it reach the encoder (Kingma & Welling, 2014).
* :class:`StochasticConnector`: the sample with its gradient stopped, for distributions that
  cannot be reparameterized (any object with ``sample(sample_shape, seed)``).

``output`` is the sample passed through one dense layer (texkit's
:class:`~texkit.modules.connectors.MLPTransformConnector`) to ``output_size``, which may be
nested (a Keras cell's ``state_size``: ``[h, c]`` of an LSTM), or, with ``transform=False``, the
sample itself. With ``num_samples`` the sample has a leading axis of that many draws
(``[num_samples, batch, event_size]``) and each output ``[num_samples, batch, size]``.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from texkit.hparams import HParamsError
from texkit.modules.connectors import MLPTransformConnector, _ConnectorBase

__all__ = ["ReparameterizedStochasticConnector", "StochasticConnector"]


class _SamplingConnector(_ConnectorBase):
    """What both connectors share: the sample, its optional MLP and the checks."""

    HPARAMS_DOC = {
        "activation_fn": (
            "Activation after the dense layer that maps the sample to output_size: None or "
            "'identity' for none, a registered name ('tanh') or {type, kwargs}."
        ),
        "seed": "Seed of the connector's random draws (None: a random one).",
        "name": "Layer name.",
    }
    _transform_default = True

    def __init__(
        self, output_size: Any, mlp_input_size: int | None = None, hparams: Any = None,
        **kwargs: Any,
    ):  # fmt: skip
        super().__init__(output_size, hparams, **kwargs)
        if mlp_input_size is not None and (
            isinstance(mlp_input_size, bool) or not isinstance(mlp_input_size, int)
            or mlp_input_size < 1
        ):  # fmt: skip
            raise ValueError(
                f"mlp_input_size must be None or a positive int (the sample's event size), got "
                f"{mlp_input_size!r}"
            )
        self._mlp_input_size = mlp_input_size
        self.mlp = MLPTransformConnector(
            self.output_size,
            hparams={"activation_fn": self.hparams.activation_fn, "name": "mlp"},
            dtype=self.dtype_policy,
        )
        if mlp_input_size is not None:
            self.mlp.build((None, mlp_input_size))
        seed = self.hparams.seed
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise HParamsError(f"expected an int or null, got {seed!r}", "seed")
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True

    def __call__(
        self, distribution: Any, num_samples: int | None = None, transform: bool | None = None,
        seed: Any = None, **kwargs: Any,
    ) -> tuple[Any, Any]:  # fmt: skip
        # Keras takes only tensors positionally; the distribution is a Python object.
        return super().__call__(
            distribution=distribution, num_samples=num_samples, transform=transform, seed=seed,
            **kwargs,
        )  # fmt: skip

    def call(
        self, distribution: Any, num_samples: int | None = None, transform: bool | None = None,
        seed: Any = None,
    ) -> tuple[Any, Any]:  # fmt: skip
        self._check_distribution(distribution)
        if num_samples is not None and (
            isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1
        ):
            raise ValueError(f"num_samples must be None or a positive int, got {num_samples!r}")
        sample_shape = () if num_samples is None else (num_samples,)
        seed = self.seed_generator if seed is None else seed
        sample = distribution.sample(sample_shape, seed=seed)
        sample = self._finish_sample(sample)
        if len(sample.shape) < 2:
            sample = ops.expand_dims(sample, -1)  # a scalar event: one feature
        if self._transform_default if transform is None else transform:
            return self._transform(sample, num_samples), sample
        flat = self._flat_sizes
        if len(flat) != 1 or sample.shape[-1] != flat[0]:
            raise ValueError(
                f"{self.name}: with transform=False the sample is the output and must have "
                f"output_size {self.output_size}, got a sample of shape {tuple(sample.shape)}"
            )
        return sample, sample

    def _transform(self, sample: Any, num_samples: int | None) -> Any:
        features = ops.cast(sample, self.compute_dtype)
        if num_samples is None:
            return self.mlp(features)
        # The draws fold into the batch for the dense layer, then unfold.
        leading = ops.shape(features)[:2]
        folded = ops.reshape(features, (-1, features.shape[-1]))
        return keras.tree.map_structure(
            lambda x: ops.reshape(x, (leading[0], leading[1], x.shape[-1])), self.mlp(folded)
        )

    def _check_distribution(self, distribution: Any) -> None:
        if not callable(getattr(distribution, "sample", None)):
            raise TypeError(
                f"{self.name}: distribution must have a sample(sample_shape, seed) method, got "
                f"{type(distribution).__name__}"
            )

    def _finish_sample(self, sample: Any) -> Any:
        return sample

    def get_config(self) -> dict:
        return {**super().get_config(), "mlp_input_size": self._mlp_input_size}


class ReparameterizedStochasticConnector(_SamplingConnector):
    """A reparameterized sample of a distribution and its transform to ``output_size``.

    Gradients flow through the sample to the distribution's parameters (e.g. a VAE encoder's
    mean and scale). The distribution must say so: its ``reparameterized`` attribute is true
    (:class:`~texkit.core.diagonal_gaussian.DiagonalGaussian`).

    Args:
        output_size: an int, nested lists of ints or a Keras RNN cell (its ``state_size``).
        mlp_input_size: the sample's event size, to build the dense layer at once (needed to
            load saved weights before a first call); ``None`` builds it at the first call.
        hparams: see the table below.

    Call arguments:
        distribution: the distribution, with ``sample(sample_shape, seed)``.
        num_samples: ``None`` for one draw per batch element, or an int: that many draws in a
            new leading axis.
        transform: map the sample through the dense layer (default ``True``); ``False`` returns
            the sample as the output (its event size must be the int ``output_size``).
        seed: a seed for this call (int or ``keras.random.SeedGenerator``); ``None`` uses the
            connector's own generator (``hparams.seed``), a new draw at each call.

    Returns:
        ``(output, sample)``: ``output`` in ``output_size``'s structure, each ``[batch, size]``
        (``[num_samples, batch, size]``); ``sample`` the draw before the transform.

    Example:
        >>> posterior = tx.core.DiagonalGaussian(tf.zeros([2, 32]), tf.ones([2, 32]))
        >>> connector = ReparameterizedStochasticConnector(keras.layers.LSTMCell(64))
        >>> (h, c), z = connector(posterior)
        >>> h.shape, c.shape, z.shape
        (TensorShape([2, 64]), TensorShape([2, 64]), TensorShape([2, 32]))
    """

    @classmethod
    def default_hparams(cls) -> dict:
        return {"activation_fn": None, "seed": None, "name": "reparameterized_stochastic_connector"}

    def _check_distribution(self, distribution: Any) -> None:
        super()._check_distribution(distribution)
        if not getattr(distribution, "reparameterized", False):
            raise ValueError(
                f"{self.name}: the distribution {type(distribution).__name__} cannot be "
                "reparameterized (its reparameterized attribute is not true); use "
                "StochasticConnector"
            )


class StochasticConnector(_SamplingConnector):
    """A sample of a distribution with its gradient stopped, optionally transformed.

    For distributions that cannot be reparameterized (discrete ones): the sample is a constant to
    what follows, as in Texar. Any object with ``sample(sample_shape, seed)`` will do.

    Args:
        output_size: an int, nested lists of ints or a Keras RNN cell (its ``state_size``).
        mlp_input_size: the sample's event size, to build the dense layer at once; ``None``
            builds it at the first transform.
        hparams: see the table below.

    Call arguments:
        distribution: the distribution, with ``sample(sample_shape, seed)``.
        num_samples: ``None`` or an int, as for :class:`ReparameterizedStochasticConnector`.
        transform: map the sample through the dense layer; the default is ``False``, as in
            Texar (the sample is the output and must have the int ``output_size``).
        seed: a seed for this call; ``None`` uses the connector's own generator.

    Returns:
        ``(output, sample)``: the (transformed) sample and the sample, as float tensors.

    Example:
        >>> noise = tx.core.DiagonalGaussian(tf.zeros([2, 8]), tf.ones([2, 8]))
        >>> output, sample = StochasticConnector(8)(noise)
        >>> output.shape
        TensorShape([2, 8])
    """

    _transform_default = False

    @classmethod
    def default_hparams(cls) -> dict:
        return {"activation_fn": None, "seed": None, "name": "stochastic_connector"}

    def _finish_sample(self, sample: Any) -> Any:
        sample = ops.stop_gradient(sample)
        if "float" not in keras.backend.standardize_dtype(sample.dtype):
            sample = ops.cast(sample, "float32")
        return sample
