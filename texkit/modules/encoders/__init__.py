"""Encoders: Transformer, the BERT family, T5, convolutional and RNN."""

from texkit.modules.encoders.bert_encoder import BERTEncoder
from texkit.modules.encoders.bert_family import BERTFamilyEncoder
from texkit.modules.encoders.conv_encoder import Conv1DEncoder
from texkit.modules.encoders.family_encoders import (
    ALBERTEncoder,
    DistilBERTEncoder,
    ELECTRAEncoder,
    RoBERTaEncoder,
)
from texkit.modules.encoders.hierarchical_encoder import HierarchicalRNNEncoder
from texkit.modules.encoders.rnn_encoders import BidirectionalRNNEncoder, UnidirectionalRNNEncoder
from texkit.modules.encoders.t5_encoder import T5Encoder
from texkit.modules.encoders.transformer_encoder import TransformerEncoder

__all__ = [
    "ALBERTEncoder",
    "BERTEncoder",
    "BERTFamilyEncoder",
    "BidirectionalRNNEncoder",
    "Conv1DEncoder",
    "DistilBERTEncoder",
    "ELECTRAEncoder",
    "HierarchicalRNNEncoder",
    "RoBERTaEncoder",
    "T5Encoder",
    "TransformerEncoder",
    "UnidirectionalRNNEncoder",
]
