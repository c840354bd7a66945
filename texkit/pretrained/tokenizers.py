"""A checkpoint folder's tokenizer: :func:`tokenizer_from_pretrained` for every family and for
folders that hold only a tokenizer, :class:`FolderTokenizer` (the tokenizer a folder's files
make), and the reading of a WordPiece folder (``vocab.txt`` and its casing) behind
:meth:`BERTTokenizer.from_pretrained <texkit.data.BERTTokenizer.from_pretrained>`.

A family names its tokenizer class (``Family.tokenizer``) and the options its folders need
(``Family.tokenizer_options``, e.g. ``{"style": "roberta"}``); each tokenizer class reads its
own files in its ``from_pretrained``. The decoder families of the Llama line name
:class:`FolderTokenizer`: their folders hold a SentencePiece model (Llama 2, Mistral, Gemma)
or a byte-level BPE ``tokenizer.json`` (Llama 3, Qwen, Mistral's Tekken), and the files say
which.

Which file, when a folder holds several (:data:`TOKENIZER_FILES`, first found wins):

1. ``tokenizer.model`` (a SentencePiece model: Llama 2, Mistral, Gemma):
   :class:`~texkit.data.tokenizers.SentencePieceTokenizer`, style ``"llama"`` unless the folder
   says ALBERT or T5; specials and BOS / EOS from ``tokenizer_config.json``. These folders also
   hold a ``tokenizer.json``, which Hugging Face's ``AutoTokenizer`` reads (the fast tokenizer):
   it is a conversion of the same model, and gives the same ids except at whitespace that
   starts a text, runs of whitespace, and a written ``▁`` (the tests count them); texkit runs
   the model itself, as the ``sentencepiece`` library does, which is what the model was
   trained with. A ``tokenizer.model`` that is not a SentencePiece model (Llama 3's
   ``tiktoken`` file) is passed over.
2. ``spiece.model`` (ALBERT, T5): :class:`~texkit.data.tokenizers.SentencePieceTokenizer`, the
   style from the folder.
3. ``vocab.txt`` (BERT and its kin; their ``tokenizer.json`` is WordPiece):
   :class:`~texkit.data.tokenizers.BERTTokenizer`.
4. ``tokenizer.json`` (byte-level BPE: Llama 3, Qwen 2 / 3, Tekken): ``ByteLevelBPETokenizer``
   of :mod:`texkit.data.tokenizers.byte_level_bpe`, unless the folder also holds
   ``vocab.json`` + ``merges.txt`` and its ``tokenizer_class`` is GPT-2's or RoBERTa's (then 5,
   whose template those folders need).
5. ``vocab.json`` + ``merges.txt`` (GPT-2, RoBERTa):
   :class:`~texkit.data.tokenizers.GPT2BPETokenizer`, ``style="roberta"`` for a
   ``RobertaTokenizer`` folder, else ``"gpt2"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

import texkit.files
from texkit import registry
from texkit.data.tokenizers import BERTTokenizer, GPT2BPETokenizer, SentencePieceTokenizer
from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import CheckpointError, resolve_checkpoint
from texkit.pretrained.folders import inspect_folder

__all__ = [
    "TOKENIZER_FILES",
    "FolderTokenizer",
    "tokenizer_from_pretrained",
    "wordpiece_from_pretrained",
]

# The files that make a tokenizer, in the order they are looked for (see the module).
TOKENIZER_FILES = (
    "tokenizer.model",
    "spiece.model",
    "vocab.txt",
    "tokenizer.json",
    "vocab.json + merges.txt",
)
_GPT2_CLASSES = {
    "GPT2Tokenizer": "gpt2",
    "GPT2TokenizerFast": "gpt2",
    "RobertaTokenizer": "roberta",
    "RobertaTokenizerFast": "roberta",
}


def _byte_level_bpe() -> type:
    """``ByteLevelBPETokenizer``, imported when a folder needs it."""
    from texkit.data.tokenizers.byte_level_bpe import ByteLevelBPETokenizer

    return ByteLevelBPETokenizer


def _is_sentencepiece(file: str) -> bool:
    """Whether ``file`` begins as a serialized SentencePiece ``ModelProto`` (field 1, a piece);
    opened as a regular file (never waits on a FIFO)."""
    with texkit.files.open_regular(file, error=CheckpointError, what="tokenizer model") as f:
        return f.read(1) == b"\n"


def _tokenizer_class(folder: str) -> str | None:
    """The ``tokenizer_class`` of the folder's ``tokenizer_config.json`` (``None``: none)."""
    config = _read_json_if_any(os.path.join(folder, "tokenizer_config.json"))
    value = config.get("tokenizer_class") if isinstance(config, Mapping) else None
    return value if isinstance(value, str) else None


def _choose(folder: str) -> tuple[type | None, dict[str, Any]]:
    """The tokenizer class the folder's files make and the options it needs (``None``: the
    folder holds no tokenizer file)."""
    files = set(tf.io.gfile.listdir(folder))
    if "tokenizer.model" in files and _is_sentencepiece(os.path.join(folder, "tokenizer.model")):
        return SentencePieceTokenizer, {}
    if "spiece.model" in files:
        return SentencePieceTokenizer, {}
    if "vocab.txt" in files:
        return BERTTokenizer, {}
    bpe_files = {"vocab.json", "merges.txt"} <= files
    style = _GPT2_CLASSES.get(_tokenizer_class(folder) or "") if bpe_files else None
    if "tokenizer.json" in files and style is None:
        return _byte_level_bpe(), {}
    if bpe_files:
        return GPT2BPETokenizer, {"style": style or "gpt2"}
    return None, {}


class FolderTokenizer:
    """The tokenizer a folder's files make, as a family's tokenizer class: the decoder families
    of the Llama line register ``Family(..., tokenizer=FolderTokenizer)``, and
    :func:`tokenizer_from_pretrained` opens folders that hold only a tokenizer with it.

    ``FolderTokenizer.from_pretrained(folder)`` returns an instance of the class the files
    name (see the module for the order), never of this one.

    Example:
        >>> tokenizer = FolderTokenizer.from_pretrained("tests/fixtures/sentencepiece_byte/llama")
        >>> type(tokenizer).__name__, tokenizer.style, tokenizer.bos_token_id
        ('SentencePieceTokenizer', 'llama', 1)
    """

    def __init__(self) -> None:
        raise TypeError("FolderTokenizer is not made: call FolderTokenizer.from_pretrained(folder)")

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **kwargs: Any) -> Any:
        """The tokenizer of the folder's files, through that class's ``from_pretrained``.

        Args:
            path: A folder (local or any ``tf.io.gfile`` path), or a packaged checkpoint's or a
                hub model's name.
            **kwargs: The tokenizer's own arguments (``max_seq_length``...), which override
                what the folder says (``style`` for ``GPT2BPETokenizer``).

        Raises:
            CheckpointError: no tokenizer file in the folder (the message lists the files
                looked for).
        """
        folder = resolve_checkpoint(path)
        if not tf.io.gfile.isdir(folder):
            raise CheckpointError(f"{folder}: expected a tokenizer folder, got a file")
        tokenizer, options = _choose(folder)
        if tokenizer is None:
            raise CheckpointError(
                f"{folder}: no tokenizer file in the folder (looked for "
                f"{', '.join(TOKENIZER_FILES)}); found "
                f"{sorted(tf.io.gfile.listdir(folder)) or 'nothing'}"
            )
        return tokenizer.from_pretrained(folder, **{**options, **kwargs})


def tokenizer_from_pretrained(path: str | os.PathLike, **kwargs: Any) -> Any:
    """The in-graph tokenizer of a checkpoint folder's family, or of a folder that holds only
    a tokenizer, made from the folder's files.

    ``BERTTokenizer`` for BERT, DistilBERT and ELECTRA (``vocab.txt``), ``GPT2BPETokenizer``
    for RoBERTa (``style="roberta"``) and GPT-2, ``SentencePieceTokenizer`` for ALBERT and T5
    (``spiece.model``), each through its own ``from_pretrained``; a folder that is not a
    checkpoint (no config or no weights) but holds a tokenizer's files gets the tokenizer
    those make (:class:`FolderTokenizer`: ``tokenizer.model`` of Llama 2, Mistral and Gemma,
    ``tokenizer.json`` of Llama 3 and Qwen...). Every one has ``encode(texts,
    second_texts=None)`` with the same outputs (``input_ids``, ``segment_ids``,
    ``sequence_length``), so a pipeline written for one family runs on another.

    Args:
        path: a checkpoint or tokenizer folder, or a packaged checkpoint's name.
        **kwargs: the tokenizer's own arguments (``max_seq_length``; ``lowercase`` for
            ``BERTTokenizer``, which a Google folder needs).

    Raises:
        CheckpointError: neither a checkpoint folder texkit loads nor a folder with a
            tokenizer's files (the message says why it is no checkpoint and lists the
            tokenizer files looked for).
    """
    path = resolve_checkpoint(path)
    try:
        family, _, _ = inspect_folder(path)
    except CheckpointError as error:
        if not tf.io.gfile.isdir(path) or _choose(path)[0] is None:
            raise CheckpointError(
                f"{error}; nor a tokenizer folder (looked for {', '.join(TOKENIZER_FILES)})"
            ) from None
        return FolderTokenizer.from_pretrained(path, **kwargs)
    if family.tokenizer is None:
        raise CheckpointError(f"{path}: texkit has no tokenizer for {family.name} checkpoints")
    return family.tokenizer.from_pretrained(path, **{**family.tokenizer_options, **kwargs})


def wordpiece_from_pretrained(
    cls: type, path: Any, lowercase: bool | None = None, **kwargs: Any
) -> Any:
    """Implements ``BERTTokenizer.from_pretrained``: the folder's ``vocab.txt``, casing and
    ``clean_up_tokenization_spaces`` (how transformers decodes; false when not said).

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
    cleanup = config.get("clean_up_tokenization_spaces")
    if isinstance(cleanup, bool):  # how transformers decodes this folder's ids
        kwargs.setdefault("clean_up_tokenization_spaces", cleanup)
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
