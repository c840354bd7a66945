"""Pretrained checkpoints: the BERT family (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA), GPT-2, T5,
and the decoder LLMs of the Llama line (Llama, Mistral, Qwen 2/3, Gemma 1/2/3, Phi-3); and
:func:`save_pretrained`, which writes a module back as its family's Hugging Face folder.

:func:`from_pretrained` builds whatever module a checkpoint folder holds; each family class's
own ``from_pretrained`` calls the one loader, :func:`module_from_pretrained`. A family is data
(:class:`~texkit.pretrained.family.Family`: its module, config translation and name table,
written with :class:`~texkit.pretrained.names.NameTable`), in one file of this package that
registers it when imported; :mod:`~texkit.pretrained.loading` loads every family the same
strict, all-or-nothing way, and :mod:`~texkit.pretrained.checkpoints` reads the formats.
"""

import importlib
import pkgutil

from texkit.pretrained.checkpoints import CheckpointError, LoadReport, resolve_checkpoint
from texkit.pretrained.deprecated import (
    bert_hparams_from_config,
    bert_name_table,
    detect_format,
    gpt2_hparams_from_config,
    load_bert_checkpoint,
    read_bert_config,
    t5_name_table,
    vocab_file,
)
from texkit.pretrained.family import FAMILIES
from texkit.pretrained.folders import checkpoint_format, hparams_from_config, read_config
from texkit.pretrained.hf_export import save_pretrained
from texkit.pretrained.loading import (
    from_pretrained,
    load_checkpoint,
    module_from_pretrained,
    register_loaders,
)
from texkit.pretrained.tokenizers import tokenizer_from_pretrained

# Every module of this package is imported, so that a family's file registers its family
# (adding a family adds a file here and edits none); then the one loader is registered for
# the classes of every family.
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
register_loaders()

__all__ = [
    "FAMILIES",
    "CheckpointError",
    "LoadReport",
    "bert_hparams_from_config",
    "bert_name_table",
    "checkpoint_format",
    "detect_format",
    "from_pretrained",
    "gpt2_hparams_from_config",
    "hparams_from_config",
    "load_bert_checkpoint",
    "load_checkpoint",
    "module_from_pretrained",
    "read_bert_config",
    "read_config",
    "resolve_checkpoint",
    "save_pretrained",
    "t5_name_table",
    "tokenizer_from_pretrained",
    "vocab_file",
]
