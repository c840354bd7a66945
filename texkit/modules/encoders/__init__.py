"""Encoders: Transformer, BERT, convolutional and RNN."""

from texkit.modules.encoders.bert_encoder import BERTEncoder
from texkit.modules.encoders.conv_encoder import Conv1DEncoder
from texkit.modules.encoders.rnn_encoders import BidirectionalRNNEncoder, UnidirectionalRNNEncoder
from texkit.modules.encoders.transformer_encoder import TransformerEncoder

__all__ = [
    "BERTEncoder",
    "BidirectionalRNNEncoder",
    "Conv1DEncoder",
    "TransformerEncoder",
    "UnidirectionalRNNEncoder",
]
