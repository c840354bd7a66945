"""Tokenizers in the TensorFlow graph, with the reference's ids: BERT's WordPiece, GPT-2's BPE,
ALBERT's and T5's SentencePiece.

* :mod:`~texkit.data.tokenizers.bert_tokenizer`: :class:`BERTTokenizer`, what it reproduces and
  its known differences from the reference tokenizer.
* :mod:`~texkit.data.tokenizers.vocab_file`: reading a BERT ``vocab.txt``; the special tokens.
* :mod:`~texkit.data.tokenizers.normalization`: why not ``tf_text``'s BERT tokenizers, and the
  per-code-point tables that normalize text as the reference does.
* :mod:`~texkit.data.tokenizers.fast_path`: the texts ``tf_text.FastBertTokenizer`` tokenizes as
  the tables do, and how a batch is routed between the two.
* :mod:`~texkit.data.tokenizers.packing`: ``[CLS] A [SEP] B [SEP]`` padded to a static length.
* :mod:`~texkit.data.tokenizers.templated`: what the subword tokenizers share (ids packed in a
  template of special tokens).
* :mod:`~texkit.data.tokenizers.byte_bpe`: :class:`GPT2BPETokenizer`, GPT-2's and RoBERTa's
  byte-level BPE (``vocab.json`` + ``merges.txt``), what it reproduces and how without lookahead.
* :mod:`~texkit.data.tokenizers.sentencepiece`: :class:`SentencePieceTokenizer`, ALBERT's and
  T5's SentencePiece (``spiece.model``), ALBERT's preprocessing in TensorFlow ops, what it
  reproduces and its known differences.
* :mod:`~texkit.data.tokenizers.unknown_runs`: why and how long runs of characters a
  SentencePiece model lacks are cut before it sees them (the same ids, in linear time).
"""

from texkit.data.tokenizers.bert_tokenizer import BERTTokenizer
from texkit.data.tokenizers.byte_bpe import GPT2BPETokenizer
from texkit.data.tokenizers.sentencepiece import SentencePieceTokenizer
from texkit.data.tokenizers.vocab_file import (
    CLS_TOKEN,
    MASK_TOKEN,
    PAD_TOKEN,
    SEP_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
)

__all__ = [
    "BERTTokenizer",
    "CLS_TOKEN",
    "GPT2BPETokenizer",
    "MASK_TOKEN",
    "PAD_TOKEN",
    "SEP_TOKEN",
    "SPECIAL_TOKENS",
    "SentencePieceTokenizer",
    "UNK_TOKEN",
]
