"""texkit modules: Keras layers configured by hparams."""

from texkit.modules.base import ModuleBase
from texkit.modules.bert_heads import (
    BERTMaskedLMHead,
    BERTNextSentenceHead,
    BERTPretrainer,
    SpanHead,
    TokenTaggingHead,
)
from texkit.modules.classifiers import (
    BERTClassifier,
    Conv1DClassifier,
    UnidirectionalRNNClassifier,
)
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder
from texkit.modules.encoders import BERTEncoder, Conv1DEncoder, TransformerEncoder

__all__ = [
    "BERTClassifier",
    "BERTEncoder",
    "BERTMaskedLMHead",
    "BERTNextSentenceHead",
    "BERTPretrainer",
    "Conv1DClassifier",
    "Conv1DEncoder",
    "ModuleBase",
    "PositionEmbedder",
    "SinusoidsPositionEmbedder",
    "SpanHead",
    "TokenTaggingHead",
    "TransformerEncoder",
    "UnidirectionalRNNClassifier",
    "WordEmbedder",
]
