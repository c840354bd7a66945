"""texkit modules: Keras layers configured by hparams."""

from texkit.configurable import ModuleBase
from texkit.modules.bert_heads import (
    BERTMaskedLMHead,
    BERTNextSentenceHead,
    BERTPretrainer,
    SpanHead,
    TokenTaggingHead,
)
from texkit.modules.char_embedders import CharCNNEmbedder, WordCharEmbedder
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
from texkit.modules.conv1d_network import Conv1DNetwork
from texkit.modules.crf import CRF
from texkit.modules.crf_heads import CRFTaggingHead
from texkit.modules.decoders import (
    AttentionRNNDecoder,
    BasicRNNDecoder,
    GPT2Decoder,
    LlamaDecoder,
    TransformerDecoder,
)
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder
from texkit.modules.encoders import (
    ALBERTEncoder,
    BERTEncoder,
    BERTFamilyEncoder,
    BidirectionalRNNEncoder,
    Conv1DEncoder,
    DistilBERTEncoder,
    ELECTRAEncoder,
    HierarchicalRNNEncoder,
    RoBERTaEncoder,
    TransformerEncoder,
    UnidirectionalRNNEncoder,
)
from texkit.modules.feed_forward_network import FeedForwardNetwork
from texkit.modules.memory_network import MemNetEmbedder, MemNetRNNLike
from texkit.modules.stochastic_connectors import (
    ReparameterizedStochasticConnector,
    StochasticConnector,
)
from texkit.modules.t5 import T5Decoder, T5Encoder, T5EncoderDecoder

__all__ = [
    "ALBERTEncoder",
    "AttentionRNNDecoder",
    "BasicRNNDecoder",
    "BERTClassifier",
    "BERTEncoder",
    "BERTFamilyEncoder",
    "BERTMaskedLMHead",
    "BERTNextSentenceHead",
    "BERTPretrainer",
    "BidirectionalRNNEncoder",
    "CharCNNEmbedder",
    "ConstantConnector",
    "Conv1DClassifier",
    "Conv1DEncoder",
    "Conv1DNetwork",
    "CRF",
    "CRFTaggingHead",
    "DistilBERTEncoder",
    "ELECTRAEncoder",
    "FeedForwardNetwork",
    "ForwardConnector",
    "GPT2Decoder",
    "HierarchicalRNNEncoder",
    "LlamaDecoder",
    "MemNetEmbedder",
    "MemNetRNNLike",
    "MLPTransformConnector",
    "ModuleBase",
    "PositionEmbedder",
    "ReparameterizedStochasticConnector",
    "RoBERTaEncoder",
    "SinusoidsPositionEmbedder",
    "SpanHead",
    "StochasticConnector",
    "T5Decoder",
    "T5Encoder",
    "T5EncoderDecoder",
    "TokenTaggingHead",
    "TransformerDecoder",
    "TransformerEncoder",
    "UnidirectionalRNNClassifier",
    "UnidirectionalRNNEncoder",
    "WordCharEmbedder",
    "WordEmbedder",
]
