"""Building blocks shared by texkit's modules."""

from texkit.core import addressing_attention, attention_mechanisms, fused, layers
from texkit.core.layers import (
    MaskedMeanPooling,
    get_activation,
    get_initializer,
    get_instance,
    get_layer,
)

__all__ = [
    "addressing_attention",
    "attention_mechanisms",
    "fused",
    "layers",
    "MaskedMeanPooling",
    "get_activation",
    "get_initializer",
    "get_instance",
    "get_layer",
]
