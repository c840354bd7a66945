"""FeedForwardNetwork: a stack of layers applied one after the other (Texar's network).

The layers come from the hparams ``layers`` list, each a ``{type, kwargs}`` built by
:func:`texkit.core.layers.get_instance` (as :func:`~texkit.core.layers.get_layer` does, with the
network's dtype policy), or are given as Keras layers to the constructor.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import keras

from texkit.configurable import ModuleBase
from texkit.core.layers import get_instance
from texkit.hparams import HParams, HParamsError

__all__ = ["FeedForwardNetwork"]


def _takes_training(layer: keras.layers.Layer) -> bool:
    return "training" in inspect.signature(layer.call).parameters


class FeedForwardNetwork(ModuleBase):
    """A feed-forward network: the output of each layer is the input of the next.

    Args:
        layers: Keras layers to stack instead of the hparams ``layers`` (which must then be
            empty); they are saved in the config with Keras' serialization.
        hparams: see the table below.

    Call arguments:
        inputs: a tensor the first layer accepts.
        training: Keras' training flag, passed to the layers whose ``call`` takes it (dropout).

    Returns:
        The last layer's output (the inputs themselves when there is no layer).

    Example:
        >>> network = FeedForwardNetwork(hparams={"layers": [
        ...     {"type": "Dense", "kwargs": {"units": 256, "activation": "relu"}},
        ...     {"type": "Dense", "kwargs": {"units": 10}}]})
        >>> network(tf.zeros([64, 100])).shape
        TensorShape([64, 10])
    """

    HPARAMS_DOC = {
        "layers": (
            "The layers, first to last: a list of {type, kwargs}, each a registered Keras or "
            "texkit layer (see texkit.core.layers.get_layer)."
        ),
        "name": "Layer name.",
    }

    def __init__(
        self,
        layers: Sequence[keras.layers.Layer] | None = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        super().__init__(hparams, **kwargs)
        specs = self.hparams.layers
        if layers is not None:
            if specs:
                raise HParamsError(
                    "give the layers either as the layers argument or in hparams, not both",
                    "layers",
                )
            if isinstance(layers, keras.layers.Layer) or not isinstance(layers, Sequence):
                raise ValueError(
                    f"{self.name}: layers must be a list of Keras layers, got {type(layers)}"
                )
            for index, layer in enumerate(layers):
                if not isinstance(layer, keras.layers.Layer):
                    raise ValueError(
                        f"{self.name}: layers[{index}] is a {type(layer).__name__}, "
                        "not a Keras layer"
                    )
            self.network_layers = list(layers)
            self._given_layers = True
        else:
            # The network's dtype policy (e.g. mixed precision) reaches every layer it builds.
            self.network_layers = [
                get_instance(
                    spec, f"layers.{index}", expected=keras.layers.Layer, dtype=self.dtype_policy
                )
                for index, spec in enumerate(specs)
            ]
            self._given_layers = False
        self._training_args = [_takes_training(layer) for layer in self.network_layers]

    @classmethod
    def default_hparams(cls) -> dict:
        return {"layers": [], "name": "feed_forward_network"}

    @property
    def layers(self) -> list[keras.layers.Layer]:
        """The layers, first to last."""
        return list(self.network_layers)

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        shape = inputs_shape
        for layer in self.network_layers:
            if not layer.built:
                layer.build(shape)
            shape = layer.compute_output_shape(shape)
        self.built = True

    def call(self, inputs: Any, training: Any = None) -> Any:
        outputs = inputs
        for layer, takes_training in zip(self.network_layers, self._training_args, strict=True):
            outputs = layer(outputs, training=training) if takes_training else layer(outputs)
        return outputs

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        shape = inputs_shape
        for layer in self.network_layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def get_config(self) -> dict:
        config = super().get_config()
        if self._given_layers:
            config["layers"] = [
                keras.saving.serialize_keras_object(layer) for layer in self.network_layers
            ]
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FeedForwardNetwork:
        config = dict(config)
        if config.get("layers") is not None:
            config["layers"] = [
                keras.saving.deserialize_keras_object(layer) for layer in config["layers"]
            ]
        return super().from_config(config)
