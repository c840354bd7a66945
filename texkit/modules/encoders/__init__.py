"""Encoders: Transformer, BERT and convolutional."""

from texkit.modules.encoders.bert_encoder import BERTEncoder
from texkit.modules.encoders.conv_encoder import Conv1DEncoder
from texkit.modules.encoders.transformer_encoder import TransformerEncoder

__all__ = ["BERTEncoder", "Conv1DEncoder", "TransformerEncoder"]
