"""texkit data: vocabularies, tokenizers and ``tf.data`` input pipelines.

The bad-input policy every text dataset follows is documented in :mod:`texkit.data.sources`.
"""

from texkit.data import bert_pretraining
from texkit.data.bert_pretraining import (
    MaskedLMMasker,
    NSPInstances,
    make_nsp_pairs,
    pack_pair,
    pretraining_dataset,
)
from texkit.data.char_vocab import CharVocab
from texkit.data.conll import Sentence, conll_file_ending, iter_conll, read_conll
from texkit.data.conll_writer import write_conll
from texkit.data.data_base import DataBase
from texkit.data.embedding import (
    Embedding,
    EmbeddingFileError,
    PretrainedEmbedding,
    load_glove,
    load_word2vec,
)
from texkit.data.input_report import FieldReport, InputReport
from texkit.data.scalar_data import MultiAlignedData, ScalarData
from texkit.data.tagging_data import TaggingData
from texkit.data.text_data import MonoTextData, PairedTextData
from texkit.data.tfrecord_data import TFRecordData, write_tfrecords
from texkit.data.tokenizers import (
    BatchIncrementalDecoder,
    BERTTokenizer,
    ByteLevelBPETokenizer,
    GPT2BPETokenizer,
    IncrementalDecoder,
    SentencePieceTokenizer,
)
from texkit.data.vocab import Vocab, make_vocab, split_tokens

__all__ = [
    "BERTTokenizer",
    "BatchIncrementalDecoder",
    "ByteLevelBPETokenizer",
    "CharVocab",
    "DataBase",
    "Embedding",
    "EmbeddingFileError",
    "FieldReport",
    "GPT2BPETokenizer",
    "IncrementalDecoder",
    "InputReport",
    "MaskedLMMasker",
    "MonoTextData",
    "MultiAlignedData",
    "NSPInstances",
    "PairedTextData",
    "PretrainedEmbedding",
    "ScalarData",
    "Sentence",
    "SentencePieceTokenizer",
    "TFRecordData",
    "TaggingData",
    "Vocab",
    "bert_pretraining",
    "conll_file_ending",
    "iter_conll",
    "load_glove",
    "load_word2vec",
    "make_nsp_pairs",
    "make_vocab",
    "pack_pair",
    "pretraining_dataset",
    "read_conll",
    "split_tokens",
    "write_conll",
    "write_tfrecords",
]
