"""Building blocks shared by texkit's modules."""

from texkit.core import layers
from texkit.core.layers import get_activation, get_initializer, get_instance, get_layer

__all__ = ["layers", "get_activation", "get_initializer", "get_instance", "get_layer"]
