"""Encoders: Transformer and BERT."""

from texkit.modules.encoders.bert_encoder import BERTEncoder
from texkit.modules.encoders.transformer_encoder import TransformerEncoder

__all__ = ["BERTEncoder", "TransformerEncoder"]
