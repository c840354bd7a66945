"""Names of earlier releases, kept for one release: each warns with the call that replaces it.

The BERT-only and family-specific helpers became the family-neutral calls every family uses:

* ``tx.pretrained.load_bert_checkpoint``: ``tx.pretrained.load_checkpoint``.
* ``tx.pretrained.read_bert_config``: ``tx.pretrained.read_config`` (family and hparams).
* ``tx.pretrained.detect_format``: ``tx.pretrained.checkpoint_format``.
* ``tx.pretrained.bert_hparams_from_config`` and ``gpt2_hparams_from_config``:
  ``tx.pretrained.hparams_from_config`` with the family.
* ``tx.pretrained.vocab_file``: ``tx.pretrained.tokenizer_from_pretrained``.
* ``tx.pretrained.bert_name_table`` and ``t5_name_table``: the family's ``name_table``
  (``FAMILIES["bert"].name_table``).
* ``texkit.pretrained.bert.tokenizer_from_pretrained``: ``tx.data.BERTTokenizer.from_pretrained``.
* ``texkit.pretrained.loading.encoder_from_pretrained`` and ``model_from_pretrained``:
  ``tx.pretrained.module_from_pretrained`` (in :mod:`~texkit.pretrained.loading`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from texkit.deprecation import deprecated_alias, warn_deprecated
from texkit.hparams.rules import short
from texkit.pretrained import bert_names
from texkit.pretrained.checkpoints import CheckpointError
from texkit.pretrained.family import FAMILIES
from texkit.pretrained.folders import checkpoint_format, hparams_from_config, read_config
from texkit.pretrained.gpt2 import gpt2_hparams_from_config as _gpt2_hparams_from_config
from texkit.pretrained.loading import load_checkpoint
from texkit.pretrained.t5 import t5_name_table as _t5_name_table
from texkit.pretrained.tokenizers import _vocab_file, wordpiece_from_pretrained

__all__ = [
    "bert_hparams_from_config",
    "bert_name_table",
    "detect_format",
    "gpt2_hparams_from_config",
    "load_bert_checkpoint",
    "read_bert_config",
    "t5_name_table",
    "tokenizer_from_pretrained",
    "vocab_file",
]

load_bert_checkpoint = deprecated_alias(
    load_checkpoint, "tx.pretrained.load_bert_checkpoint", "tx.pretrained.load_checkpoint"
)
detect_format = deprecated_alias(
    checkpoint_format, "tx.pretrained.detect_format", "tx.pretrained.checkpoint_format"
)
vocab_file = deprecated_alias(
    _vocab_file,
    "tx.pretrained.vocab_file",
    "tx.pretrained.tokenizer_from_pretrained (or tx.data.BERTTokenizer.from_pretrained)",
)
tokenizer_from_pretrained = deprecated_alias(
    wordpiece_from_pretrained,
    "texkit.pretrained.bert.tokenizer_from_pretrained",
    "tx.data.BERTTokenizer.from_pretrained (or tx.pretrained.tokenizer_from_pretrained)",
)
bert_name_table = deprecated_alias(
    bert_names.bert_name_table,
    "tx.pretrained.bert_name_table",
    "tx.pretrained.FAMILIES['bert'].name_table",
)

t5_name_table = deprecated_alias(
    _t5_name_table, "tx.pretrained.t5_name_table", "tx.pretrained.FAMILIES['t5'].name_table"
)
gpt2_hparams_from_config = deprecated_alias(
    _gpt2_hparams_from_config,
    "tx.pretrained.gpt2_hparams_from_config",
    "tx.pretrained.hparams_from_config(tx.pretrained.FAMILIES['gpt2'], config)",
)


def read_bert_config(path: str | os.PathLike) -> dict:
    """Deprecated: use :func:`texkit.pretrained.read_config`, which returns ``(family,
    hparams)`` for a folder of any family. The hparams of a BERT checkpoint folder."""
    warn_deprecated("tx.pretrained.read_bert_config", "tx.pretrained.read_config")
    family, hparams = read_config(path)
    if family.name != "bert":
        raise CheckpointError(f"{os.fspath(path)}: a {family.name} checkpoint, not BERT")
    return hparams


def bert_hparams_from_config(config: Mapping[str, Any], source: str = "config") -> dict:
    """Deprecated: use :func:`texkit.pretrained.hparams_from_config` with
    ``FAMILIES["bert"]``. A BERT config's hparams (another ``model_type`` is an error)."""
    warn_deprecated(
        "tx.pretrained.bert_hparams_from_config",
        "tx.pretrained.hparams_from_config(tx.pretrained.FAMILIES['bert'], config)",
    )
    if isinstance(config, Mapping):
        model_type = config.get("model_type", "bert")
        if model_type != "bert":
            raise CheckpointError(f"{source}: model_type {short(model_type)} is not a BERT model")
    return hparams_from_config(FAMILIES["bert"], config, source)
