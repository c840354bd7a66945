"""texkit modules: Keras layers configured by hparams."""

from texkit.modules.base import ModuleBase
from texkit.modules.bert_heads import (
    BERTMaskedLMHead,
    BERTNextSentenceHead,
    BERTPretrainer,
    SpanHead,
    TokenTaggingHead,
)
from texkit.modules.classifiers import BERTClassifier
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder
from texkit.modules.encoders import BERTEncoder, TransformerEncoder

__all__ = [
    "BERTClassifier",
    "BERTEncoder",
    "BERTMaskedLMHead",
    "BERTNextSentenceHead",
    "BERTPretrainer",
    "ModuleBase",
    "PositionEmbedder",
    "SinusoidsPositionEmbedder",
    "SpanHead",
    "TokenTaggingHead",
    "TransformerEncoder",
    "WordEmbedder",
]
