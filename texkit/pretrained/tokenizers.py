"""A checkpoint folder's tokenizer: :func:`tokenizer_from_pretrained` for every family, and the
reading of a WordPiece folder (``vocab.txt`` and its casing) behind
:meth:`BERTTokenizer.from_pretrained <texkit.data.BERTTokenizer.from_pretrained>`.

A family names its tokenizer class (``Family.tokenizer``) and the options its folders need
(``Family.tokenizer_options``, e.g. ``{"style": "roberta"}``); each tokenizer class reads its
own files in its ``from_pretrained``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

import texkit.files
from texkit import registry
from texkit.data.tokenizers import BERTTokenizer
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import CheckpointError, resolve_checkpoint
from texkit.pretrained.folders import inspect_folder

__all__ = ["tokenizer_from_pretrained", "wordpiece_from_pretrained"]


def tokenizer_from_pretrained(path: str | os.PathLike, **kwargs: Any) -> Any:
    """The in-graph tokenizer of a checkpoint folder's family, made from the folder's files.

    ``BERTTokenizer`` for BERT, DistilBERT and ELECTRA (``vocab.txt``), ``GPT2BPETokenizer``
    for RoBERTa (``style="roberta"``) and GPT-2, ``SentencePieceTokenizer`` for ALBERT and T5
    (``spiece.model``), each through its own ``from_pretrained``. Every one has
    ``encode(texts, second_texts=None)`` with the same outputs (``input_ids``, ``segment_ids``,
    ``sequence_length``), so a pipeline written for one family runs on another.

    Args:
        path: a checkpoint folder, or a packaged checkpoint's name.
        **kwargs: the tokenizer's own arguments (``max_seq_length``; ``lowercase`` for
            ``BERTTokenizer``, which a Google folder needs).

    Raises:
        CheckpointError: not a checkpoint folder texkit loads.
    """
    path = resolve_checkpoint(path)
    family, _, _ = inspect_folder(path)
    if family.tokenizer is None:
        raise CheckpointError(f"{path}: texkit has no tokenizer for {family.name} checkpoints")
    return family.tokenizer.from_pretrained(path, **{**family.tokenizer_options, **kwargs})


def wordpiece_from_pretrained(
    cls: type, path: Any, lowercase: bool | None = None, **kwargs: Any
) -> Any:
    """Implements ``BERTTokenizer.from_pretrained``: the folder's ``vocab.txt`` and casing.

    A KerasHub preset's vocabulary is ``assets/tokenizer/vocabulary.txt``, its casing the
    ``lowercase`` of its ``tokenizer.json`` (a serialized KerasHub ``BertTokenizer``).
    """
    path = resolve_checkpoint(path)
    vocab = os.path.join(path, "vocab.txt")
    keras_hub_vocab = os.path.join(path, "assets", "tokenizer", "vocabulary.txt")
    if not tf.io.gfile.exists(vocab) and tf.io.gfile.exists(keras_hub_vocab):
        config_file = os.path.join(path, "tokenizer.json")
        serialized = _read_json_if_any(config_file)
        config = serialized.get("config") if isinstance(serialized, Mapping) else None
        # BERTTokenizer strips accents exactly when it lowercases, splits on whitespace and
        # punctuation, and marks word pieces with "##".
        lowercase = _checked_casing(
            path, config_file, config if isinstance(config, Mapping) else {}, lowercase,
            "lowercase", "a KerasHub tokenizer.json",
            {"split": (None, True), "suffix_indicator": (None, "##")},
        )  # fmt: skip
        return cls(keras_hub_vocab, lowercase=lowercase, **kwargs)
    config_file = os.path.join(path, "tokenizer_config.json")
    config = _read_json_if_any(config_file)
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{config_file}: expected a JSON object")
    lowercase = _checked_casing(
        path, config_file, config, lowercase, "do_lower_case",
        "a tokenizer_config.json", {"tokenize_chinese_chars": (None, True)},
    )  # fmt: skip
    return cls(vocab, lowercase=lowercase, **kwargs)


def _read_json_if_any(file: str) -> Any:
    """The JSON value of a tokenizer's config file (``{}`` when there is none), read strictly
    (:func:`texkit.files.read_json`: a regular file, no repeated keys, bounded size and depth)."""
    if not tf.io.gfile.exists(file) and not os.path.islink(file):  # a dangling link is an error
        return {}
    return texkit.files.read_json(
        file, limit=texkit.files.MAX_CONFIG_BYTES, error=CheckpointError, what="tokenizer config"
    )


def _checked_casing(
    path: str, config_file: str, config: Mapping, lowercase: bool | None, key: str, where: str,
    unsupported: dict,
) -> bool:  # fmt: skip
    """The casing a tokenizer config gives (``lowercase`` if given), with the options
    ``BERTTokenizer`` does not implement refused (``strip_accents`` other than the casing)."""
    if lowercase is None:
        if not isinstance(config.get(key), bool):
            raise ValueError(
                f"BERTTokenizer.from_pretrained: {path!r} does not say whether the model is "
                f"uncased (no {key} in {where}); pass lowercase=True for an uncased model, "
                "False for a cased one"
            )
        lowercase = config[key]
    for option, supported in {"strip_accents": (None, lowercase), **unsupported}.items():
        if option in config and config[option] not in supported:
            raise ValueError(
                f"BERTTokenizer.from_pretrained: {config_file!r} sets {option}="
                f"{short(config[option])}, which BERTTokenizer does not support"
            )
    return lowercase


def _vocab_file(path: str | os.PathLike) -> str:
    """The ``vocab.txt`` of a checkpoint folder (an error naming the folder if it has none)."""
    file = os.path.join(os.fspath(path), "vocab.txt")
    if not tf.io.gfile.exists(file):
        raise CheckpointError(f"{os.fspath(path)}: no vocab.txt in the checkpoint folder")
    return file


registry.register_loader(BERTTokenizer, wordpiece_from_pretrained)
