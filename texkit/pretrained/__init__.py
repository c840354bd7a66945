"""Pretrained checkpoints: reading BERT in the Google TF and Hugging Face formats."""

from texkit.pretrained.bert import (
    CheckpointError,
    LoadReport,
    bert_hparams_from_config,
    bert_name_table,
    detect_format,
    load_bert_checkpoint,
    read_bert_config,
    resolve_checkpoint,
    vocab_file,
)

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
