"""texkit modules: Keras layers configured by hparams."""

from texkit.modules.base import ModuleBase
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder

__all__ = ["ModuleBase", "PositionEmbedder", "SinusoidsPositionEmbedder", "WordEmbedder"]
