"""Pretrained checkpoints: the BERT family (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA), GPT-2, T5.

:func:`from_pretrained` builds whatever module a checkpoint folder holds. A family is data
(:class:`~texkit.pretrained.family.Family`: its module, config translation and name tables);
:mod:`~texkit.pretrained.loading` loads every family the same strict, all-or-nothing way, and
:mod:`~texkit.pretrained.checkpoints` holds what the readers share. Each family registers a
loader for each texkit class it loads (``texkit.registry.register_loader``), which the classes'
own ``from_pretrained`` call.
"""

from texkit.pretrained.bert import (
    bert_hparams_from_config,
    detect_format,
    load_bert_checkpoint,
    read_bert_config,
    vocab_file,
)
from texkit.pretrained.bert_names import bert_name_table
from texkit.pretrained.checkpoints import CheckpointError, LoadReport, resolve_checkpoint
from texkit.pretrained.family import FAMILIES
from texkit.pretrained.folders import read_config
from texkit.pretrained.gpt2 import gpt2_hparams_from_config
from texkit.pretrained.loading import from_pretrained, load_checkpoint, tokenizer_from_pretrained
from texkit.pretrained.t5 import t5_name_table

__all__ = [
    "FAMILIES",
    "CheckpointError",
    "LoadReport",
    "bert_hparams_from_config",
    "bert_name_table",
    "detect_format",
    "from_pretrained",
    "gpt2_hparams_from_config",
    "load_bert_checkpoint",
    "load_checkpoint",
    "read_bert_config",
    "read_config",
    "resolve_checkpoint",
    "t5_name_table",
    "tokenizer_from_pretrained",
    "vocab_file",
]
