"""texkit data: tokenizers and ``tf.data`` input pipelines."""

from texkit.data import bert_pretraining
from texkit.data.bert_pretraining import (
    MaskedLMMasker,
    NSPInstances,
    make_nsp_pairs,
    pack_pair,
    pretraining_dataset,
)
from texkit.data.tokenizers import BERTTokenizer

__all__ = [
    "BERTTokenizer",
    "MaskedLMMasker",
    "NSPInstances",
    "bert_pretraining",
    "make_nsp_pairs",
    "pack_pair",
    "pretraining_dataset",
]
