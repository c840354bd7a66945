"""Tokenizers in the TensorFlow graph, with the reference's ids: BERT's WordPiece, GPT-2's BPE,
ALBERT's and T5's SentencePiece, the byte-level BPE ``tokenizer.json`` and byte-fallback
SentencePiece models of the Llama line, and chat templates.

* :mod:`~texkit.data.tokenizers.templated`: :class:`TemplateTokenizer`, the base they share
  (texts to ids, ids packed in a template of special tokens, the vocabulary's facts).
* :mod:`~texkit.data.tokenizers.packing`: ids packed in a template, padded to a static length.
* :mod:`~texkit.data.tokenizers.reading`: reading a tokenizer's files with the errors a user
  can act on.
* :mod:`~texkit.data.tokenizers.bert_tokenizer`: :class:`BERTTokenizer`, what it reproduces and
  its known differences from the reference tokenizer.
* :mod:`~texkit.data.tokenizers.vocab_file`: reading a BERT ``vocab.txt``; the special tokens.
* :mod:`~texkit.data.tokenizers.normalization`: why not ``tf_text``'s BERT tokenizers, and the
  per-code-point tables that normalize text as the reference does.
* :mod:`~texkit.data.tokenizers.fast_path`: the texts ``tf_text.FastBertTokenizer`` tokenizes as
  the tables do, and how a batch is routed between the two.
* :mod:`~texkit.data.tokenizers.byte_bpe`: :class:`GPT2BPETokenizer`, GPT-2's and RoBERTa's
  byte-level BPE (``vocab.json`` + ``merges.txt``), what it reproduces.
* :mod:`~texkit.data.tokenizers.byte_level_bpe`: :class:`ByteLevelBPETokenizer`, byte-level BPE
  from a Hugging Face ``tokenizer.json`` (Llama 3, Qwen2 and 3, Mistral's Tekken), what it
  reproduces.
* :mod:`~texkit.data.tokenizers.tokenizer_json`: reading a byte-level BPE ``tokenizer.json``.
* :mod:`~texkit.data.tokenizers.post_processors`: a ``tokenizer.json``'s post-processor as the
  packing template.
* :mod:`~texkit.data.tokenizers.split_patterns`: the pre-tokenization patterns as data (GPT-2's,
  Llama 3's, Qwen2's, Tekken's), and the split in RE2 without lookahead.
* :mod:`~texkit.data.tokenizers.bpe_merges`: BPE merges on vocabulary ids in the graph.
* :mod:`~texkit.data.tokenizers.bpe_files`: reading ``vocab.json`` and ``merges.txt``.
* :mod:`~texkit.data.tokenizers.sentencepiece`: :class:`SentencePieceTokenizer`, ALBERT's and
  T5's SentencePiece (``spiece.model``) and the byte-fallback models of Llama 2, Mistral and
  Gemma (``tokenizer.model``), what it reproduces and its known differences.
* :mod:`~texkit.data.tokenizers.sentencepiece_decode`: the ``sentencepiece`` library's decode
  in TensorFlow ops.
* :mod:`~texkit.data.tokenizers.incremental`: :class:`IncrementalDecoder`, ``detokenize`` for
  streaming generation, as ids arrive, in whole characters.
* :mod:`~texkit.data.tokenizers.tokenizer_config`: a Hugging Face folder's special tokens
  (``tokenizer_config.json``, ``special_tokens_map.json``).
* :mod:`~texkit.data.tokenizers.albert_text`: ALBERT's preprocessing in TensorFlow ops, and its
  split of the pieces that end with a digit and a comma.
* :mod:`~texkit.data.tokenizers.sentencepiece_files`: reading ``spiece.model`` or
  ``tokenizer.model`` and a Hugging Face folder's tokenizer config.
* :mod:`~texkit.data.tokenizers.chat_templates`: a folder's chat templates (:class:`ChatTemplates`)
  and ``apply_chat_template``, which the tokenizers of the Llama line's folders have.
* :mod:`~texkit.data.tokenizers.chat_sandbox`: the sandboxed Jinja environment templates render
  in, as transformers', with strict undefined values.
* :mod:`~texkit.data.tokenizers.unknown_runs`: why and how long runs of characters a
  SentencePiece model lacks are cut before it sees them (the same ids, in linear time).
"""

from texkit.data.tokenizers.bert_tokenizer import BERTTokenizer
from texkit.data.tokenizers.byte_bpe import GPT2BPETokenizer
from texkit.data.tokenizers.byte_level_bpe import ByteLevelBPETokenizer
from texkit.data.tokenizers.chat_templates import (
    ChatTemplateError,
    ChatTemplateMixin,
    ChatTemplates,
    apply_chat_template,
)
from texkit.data.tokenizers.incremental import BatchIncrementalDecoder, IncrementalDecoder
from texkit.data.tokenizers.sentencepiece import SentencePieceTokenizer
from texkit.data.tokenizers.templated import TemplateTokenizer
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
    "BatchIncrementalDecoder",
    "ByteLevelBPETokenizer",
    "CLS_TOKEN",
    "ChatTemplateError",
    "ChatTemplateMixin",
    "ChatTemplates",
    "GPT2BPETokenizer",
    "IncrementalDecoder",
    "MASK_TOKEN",
    "PAD_TOKEN",
    "SEP_TOKEN",
    "SPECIAL_TOKENS",
    "SentencePieceTokenizer",
    "TemplateTokenizer",
    "UNK_TOKEN",
    "apply_chat_template",
]
