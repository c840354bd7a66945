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
    RoBERTaEncoder,
    TransformerEncoder,
    UnidirectionalRNNEncoder,
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
    "ConstantConnector",
    "Conv1DClassifier",
    "Conv1DEncoder",
    "DistilBERTEncoder",
    "ELECTRAEncoder",
    "ForwardConnector",
    "GPT2Decoder",
    "LlamaDecoder",
    "MLPTransformConnector",
    "ModuleBase",
    "PositionEmbedder",
    "RoBERTaEncoder",
    "SinusoidsPositionEmbedder",
    "SpanHead",
    "T5Decoder",
    "T5Encoder",
    "T5EncoderDecoder",
    "TokenTaggingHead",
    "TransformerDecoder",
    "TransformerEncoder",
    "UnidirectionalRNNClassifier",
    "UnidirectionalRNNEncoder",
    "WordEmbedder",
]
