"""Pretrained checkpoints: reading BERT in the Google TF and Hugging Face formats.

:mod:`~texkit.pretrained.checkpoints` holds what every family shares (errors, reports, readers,
all-or-nothing assignment); a family module holds its config translation and name tables, and
registers a loader for each texkit class it loads (``texkit.registry.register_loader``).
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

__all__ = [
    "CheckpointError",
    "LoadReport",
    "bert_hparams_from_config",
    "bert_name_table",
    "detect_format",
    "load_bert_checkpoint",
    "read_bert_config",
    "resolve_checkpoint",
    "vocab_file",
]
