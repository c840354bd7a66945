"""texkit modules: Keras layers configured by hparams."""

from texkit.configurable import ModuleBase
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
from texkit.modules.connectors import (
    ConstantConnector,
    ForwardConnector,
    MLPTransformConnector,
)
from texkit.modules.decoders import (
    AttentionRNNDecoder,
    BasicRNNDecoder,
    GPT2Decoder,
    TransformerDecoder,
)
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder
from texkit.modules.encoders import (
    BERTEncoder,
    BidirectionalRNNEncoder,
    Conv1DEncoder,
    TransformerEncoder,
    UnidirectionalRNNEncoder,
)

__all__ = [
    "AttentionRNNDecoder",
    "BasicRNNDecoder",
    "BERTClassifier",
    "BERTEncoder",
    "BERTMaskedLMHead",
    "BERTNextSentenceHead",
    "BERTPretrainer",
    "BidirectionalRNNEncoder",
    "ConstantConnector",
    "Conv1DClassifier",
    "Conv1DEncoder",
    "ForwardConnector",
    "GPT2Decoder",
    "MLPTransformConnector",
    "ModuleBase",
    "PositionEmbedder",
    "SinusoidsPositionEmbedder",
    "SpanHead",
    "TokenTaggingHead",
    "TransformerDecoder",
    "TransformerEncoder",
    "UnidirectionalRNNClassifier",
    "UnidirectionalRNNEncoder",
    "WordEmbedder",
]
