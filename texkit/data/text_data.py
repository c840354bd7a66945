"""Text datasets: :class:`MonoTextData` (one text per example) and :class:`PairedTextData`
(source and target, e.g. for translation).

Each example of a text field gives three tensors (prefixed ``source_`` / ``target_`` in paired
data):

* ``text``: the tokens as read (out-of-vocabulary ones too), with ``bos_token``/``eos_token``
  added, padded with the vocabulary's pad token (``vocab.map_tokens_to_ids(text)`` equals
  ``text_ids``);
* ``text_ids``: their int32 ids, padded with 0 (``<PAD>``'s id);
* ``length``: int32, the number of tokens, BOS and EOS included.

``max_seq_length`` counts tokens *without* BOS and EOS, as in Texar, so with
``pad_to_max_seq_length`` the time axis is ``max_seq_length`` plus the special tokens added.
Tokens are split at ``delimiter`` (ASCII whitespace by default), or by a ``tokenizer`` given to
the constructor: any function from a ``[n]`` string tensor to an ``[n, None]`` string
``RaggedTensor`` that runs in the graph, e.g. ``tensorflow_text.UnicodeScriptTokenizer().tokenize``.
With ``unit: character`` every Unicode character of a line is a token (spaces and tabs too), for
character-level models: ``max_seq_length`` then counts characters, and ``vocab_file`` is read as
a :class:`~texkit.data.CharVocab` file (one character or escape per line).
Lines go through the bad-input policy of :mod:`texkit.data.sources` (empty lines, invalid UTF-8,
over-long lines), and every skipped or repaired line is counted in ``data.report``. A line of more
than ``max_line_bytes`` bytes (1 MiB by default) is an error naming the file and line, found
before TensorFlow's reader would hold it whole: raise the hparam for files of longer lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from texkit.data import file_scan, sources
from texkit.data.char_vocab import CharVocab
from texkit.data.data_base import DataBase
from texkit.data.fields import Field, check_key_int
from texkit.data.vocab import Vocab, split_tokens
from texkit.hparams import HParamsError

__all__ = ["MonoTextData", "PairedTextData", "TextField", "text_field_defaults", "TEXT_FIELD_DOC"]

_MODES = {
    "length_filter_mode": ("truncate", "discard"),
    "empty_line_mode": ("skip", "keep"),
    "invalid_utf8_mode": ("replace", "skip", "error"),
}


def text_field_defaults(bos_token: str = "<BOS>", tfds_feature: str = "text") -> dict:
    """The hparams of one text input (``dataset`` of MonoTextData, ``source_dataset`` ...)."""
    return {
        "files": [],
        "compression_type": "",
        "vocab_file": "",
        "delimiter": None,
        "unit": "token",
        "bos_token": bos_token,
        "eos_token": "<EOS>",
        "max_seq_length": None,
        "length_filter_mode": "truncate",
        "pad_to_max_seq_length": False,
        "empty_line_mode": "skip",
        "invalid_utf8_mode": "replace",
        "max_line_bytes": file_scan.MAX_LINE_BYTES,
        "tfds_feature": tfds_feature,
    }


TEXT_FIELD_DOC = {
    "files": "Text files (paths or glob patterns, any tf.io.gfile path), one example per line, "
    "read in order; one string is a list of one.",
    "compression_type": "'' , 'GZIP' or 'ZLIB'.",
    "vocab_file": "Vocabulary file, one token per line (see tx.data.Vocab).",
    "delimiter": "Token separator (None: runs of ASCII whitespace).",
    "unit": "'token' (split at delimiter) or 'character' (every Unicode character, spaces "
    "included, is a token; vocab_file is a tx.data.CharVocab file; delimiter must be None).",
    "bos_token": "Token prepended to every sequence ('': none).",
    "eos_token": "Token appended to every sequence ('': none).",
    "max_seq_length": "Most tokens per sequence, BOS/EOS not counted (None: no limit).",
    "length_filter_mode": "Longer lines: 'truncate' or 'discard' (counted either way).",
    "pad_to_max_seq_length": "Pad every batch to max_seq_length (+ BOS/EOS): static shapes.",
    "empty_line_mode": "Empty or blank lines: 'skip' or 'keep' (counted either way).",
    "invalid_utf8_mode": "Lines with invalid UTF-8: 'replace' (with U+FFFD), 'skip' or "
    "'error' (counted either way).",
    "max_line_bytes": "Most bytes in one line of the files (1 MiB): a longer line is an error "
    "naming file and line, found before the line is read whole.",
    "tfds_feature": "The text feature's name when source is 'tfds'.",
}


def _check_unit(hparams: Any, key: str, tokenizer: Any) -> None:
    if hparams.unit not in ("token", "character"):
        raise HParamsError(f"expected 'token' or 'character', got {hparams.unit!r}", f"{key}.unit")
    if hparams.unit == "character" and hparams.delimiter is not None:
        raise HParamsError(
            "must be None with unit: character (every character is a token)", f"{key}.delimiter"
        )
    if hparams.unit == "character" and tokenizer is not None:
        raise HParamsError("a tokenizer splits tokens; give it with unit: token", f"{key}.unit")


class TextField(Field):
    """A text input: lines -> tokens -> ids, with the bad-input policy."""

    is_sequence = True

    def __init__(
        self,
        name: str,
        key: str,
        hparams: Any,
        prefix: str,
        vocab: Vocab | None = None,
        tokenizer: Callable[[Any], Any] | None = None,
    ):
        super().__init__(name, key, hparams)
        self.prefix = prefix
        _check_unit(hparams, key, tokenizer)
        if tokenizer is not None and hparams.delimiter is not None:
            raise HParamsError("give a delimiter or a tokenizer, not both", f"{key}.delimiter")
        self._tokenizer = tokenizer
        if tokenizer is not None:
            self._split(tf.constant(["a b"]))  # a wrong tokenizer fails here, not mid-pipeline
        for mode, choices in _MODES.items():
            if hparams[mode] not in choices:
                raise HParamsError(
                    f"expected one of {list(choices)}, got {hparams[mode]!r}", f"{key}.{mode}"
                )
        check_key_int(hparams, "max_seq_length", key, optional=True)
        if hparams.pad_to_max_seq_length and hparams.max_seq_length is None:
            raise HParamsError(
                "pad_to_max_seq_length needs max_seq_length", f"{key}.pad_to_max_seq_length"
            )
        if hparams.delimiter is not None and (
            not isinstance(hparams.delimiter, str) or not hparams.delimiter
        ):
            raise HParamsError(
                f"expected None or a non-empty string, got {hparams.delimiter!r}",
                f"{key}.delimiter",
            )
        if vocab is None:
            if not hparams.vocab_file:
                raise HParamsError("a vocabulary file is required", f"{key}.vocab_file")
            try:
                vocab = (CharVocab if hparams.unit == "character" else Vocab)(
                    hparams.vocab_file,
                    bos_token=hparams.bos_token or "<BOS>",
                    eos_token=hparams.eos_token or "<EOS>",
                )
            except (ValueError, FileNotFoundError) as error:
                raise type(error)(f"{error} (hparams '{key}.vocab_file')") from None
        elif isinstance(vocab, CharVocab) != (hparams.unit == "character"):
            raise HParamsError(
                f"the shared vocabulary is {'not ' * (hparams.unit == 'character')}a character "
                "vocabulary: give both inputs the same unit",
                f"{key}.unit",
            )
        self.vocab = vocab
        for token in ("bos_token", "eos_token"):
            if hparams[token] and hparams[token] not in vocab.token_to_id_map_py:
                raise HParamsError(f"{hparams[token]!r} is not in the vocabulary", f"{key}.{token}")
        self.num_special = bool(hparams.bos_token) + bool(hparams.eos_token)

    def _split(self, lines: Any) -> Any:
        if self.hparams.unit == "character":
            return tf.strings.unicode_split(lines, "UTF-8")
        if self._tokenizer is None:
            return split_tokens(lines, self.hparams.delimiter)
        tokens = self._tokenizer(lines)
        if not (
            isinstance(tokens, tf.RaggedTensor)
            and tokens.shape.rank == 2
            and tokens.dtype == tf.string
        ):
            raise TypeError(
                f"{self.key}: the tokenizer must map [n] strings to an [n, None] string "
                f"RaggedTensor, got {tokens!r}"
            )
        return tokens

    def check(self, raw: Any) -> tuple[Any, dict[str, Any], Any, Any]:
        hp = self.hparams
        flaws = sources.line_flaws(raw)
        lines, invalid, empty = sources.normalize_lines(raw)
        too_long = tf.zeros_like(empty)
        if hp.max_seq_length is not None:
            counts = self._split(lines).row_lengths()
            too_long = counts > hp.max_seq_length
        skip = tf.logical_and(too_long, hp.length_filter_mode == "discard")
        skip = tf.logical_or(skip, tf.logical_and(empty, hp.empty_line_mode == "skip"))
        skip = tf.logical_or(skip, tf.logical_and(invalid, hp.invalid_utf8_mode == "skip"))
        error = tf.logical_and(invalid, hp.invalid_utf8_mode == "error")
        error = error | flaws["nul"]
        found = {
            "invalid_utf8": invalid,
            "empty": empty,
            "too_long": too_long,
            "byte_order_mark": flaws["bom"],
        }
        return lines, found, skip, error

    def error_message(self, record: bytes) -> str:
        return sources.line_flaw_message(record) or (
            "the line is not valid UTF-8 (invalid_utf8_mode is 'error')"
        )

    def actions(self) -> dict[str, str]:
        hp = self.hparams
        utf8 = {"replace": "replaced with U+FFFD", "skip": "skipped", "error": "error"}
        length = {"truncate": "truncated", "discard": "discarded"}
        return {
            "invalid_utf8": utf8[hp.invalid_utf8_mode],
            "empty": "skipped" if hp.empty_line_mode == "skip" else "kept",
            "too_long": length[hp.length_filter_mode],
            "byte_order_mark": "removed",
        }

    def _tokens(self, clean: Any) -> Any:
        hp = self.hparams
        tokens = self._split(clean)
        if hp.max_seq_length is not None:
            tokens = tokens[:, : hp.max_seq_length]
        return tokens

    def length(self, clean: Any) -> Any:
        return tf.cast(self._tokens(clean).row_lengths(), tf.int32) + self.num_special

    def process(self, clean: Any) -> dict[str, Any]:
        hp = self.hparams
        tokens = self._tokens(clean)
        column = tf.stack([tf.shape(clean)[0], 1])
        parts = [tokens]
        if hp.bos_token:
            parts.insert(0, tf.RaggedTensor.from_tensor(tf.fill(column, hp.bos_token)))
        if hp.eos_token:
            parts.append(tf.RaggedTensor.from_tensor(tf.fill(column, hp.eos_token)))
        tokens = tf.concat(parts, axis=1) if len(parts) > 1 else tokens
        time = self.max_length if hp.pad_to_max_seq_length else None
        shape = [clean.shape[0], time]
        text = tokens.to_tensor(self.vocab.pad_token, shape=shape)
        ids = self.vocab.map_tokens_to_ids(tokens).to_tensor(self.vocab.pad_token_id, shape=shape)
        lengths = tf.cast(tokens.row_lengths(), tf.int32)
        lengths.set_shape(clean.shape[:1])
        return {
            f"{self.prefix}text": text,
            f"{self.prefix}text_ids": ids,
            f"{self.prefix}length": lengths,
        }

    @property
    def max_length(self) -> int | None:
        """The longest sequence this field gives, BOS/EOS included, or None if unbounded."""
        limit = self.hparams.max_seq_length
        return None if limit is None else limit + self.num_special


class MonoTextData(DataBase):
    """Lines of text files (or a tensorflow-datasets text feature) as batches of token ids.

    Batches are dicts: ``text`` ``[batch, time]`` string, ``text_ids`` ``[batch, time]`` int32,
    ``length`` ``[batch]`` int32 (see :mod:`texkit.data.text_data`).

    Example::

        data = tx.data.MonoTextData({
            "dataset": {"files": ["train.txt"], "vocab_file": "vocab.txt", "max_seq_length": 50},
            "batch_size": 32,
        })
        for batch in data:          # or data.dataset, or data.make_dataset(input_context)
            embedded = embedder(batch["text_ids"])
        print(data.report)          # lines read, skipped and repaired
    """

    HPARAMS_DOC = {
        **DataBase.HPARAMS_DOC,
        **{f"dataset.{key}": doc for key, doc in TEXT_FIELD_DOC.items()},
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {**DataBase.default_hparams(), "dataset": text_field_defaults(), "name": "mono_text"}

    def __init__(self, hparams: Any = None, tokenizer: Callable[[Any], Any] | None = None):
        self._tokenizer = tokenizer
        super().__init__(hparams)

    def _make_fields(self) -> list[Field]:
        return [
            TextField("text", "dataset", self.hparams.dataset, prefix="", tokenizer=self._tokenizer)
        ]

    @property
    def vocab(self) -> Vocab:
        """The vocabulary."""
        return self._fields[0].vocab


class PairedTextData(DataBase):
    """Aligned source and target text files (line ``i`` of one pairs with line ``i`` of the
    other), e.g. for translation; or two text features of a tensorflow-datasets dataset.

    Batches: ``source_text``, ``source_text_ids``, ``source_length``, ``target_text``,
    ``target_text_ids``, ``target_length``. An example skipped on one side (empty, over-long with
    ``discard``) is skipped on both. By default the source has no BOS and the target has both
    BOS and EOS, as a decoder trained with teacher forcing needs. Bucketing uses the longer side.

    Example::

        data = tx.data.PairedTextData({
            "source_dataset": {"files": ["train.es"], "vocab_file": "vocab.es"},
            "target_dataset": {"files": ["train.en"], "vocab_file": "vocab.en"},
            "bucket_boundaries": [8, 16, 32], "batch_size": 64,
        })
    """

    HPARAMS_DOC = {
        **DataBase.HPARAMS_DOC,
        **{f"source_dataset.{key}": doc for key, doc in TEXT_FIELD_DOC.items()},
        **{f"target_dataset.{key}": doc for key, doc in TEXT_FIELD_DOC.items()},
        "vocab_share": "The target uses the source vocabulary (target vocab_file must be '').",
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            **DataBase.default_hparams(),
            "source_dataset": text_field_defaults(bos_token="", tfds_feature=""),
            "target_dataset": text_field_defaults(tfds_feature=""),
            "vocab_share": False,
            "name": "paired_text",
        }

    def __init__(self, hparams: Any = None, tokenizer: Callable[[Any], Any] | None = None):
        self._tokenizer = tokenizer
        super().__init__(hparams)

    def _make_fields(self) -> list[Field]:
        hp = self.hparams
        source = TextField(
            "source", "source_dataset", hp.source_dataset, "source_", tokenizer=self._tokenizer
        )
        target_vocab = None
        if hp.vocab_share:
            if hp.target_dataset.vocab_file:
                raise HParamsError(
                    "must be '' when vocab_share is true", "target_dataset.vocab_file"
                )
            target_vocab = source.vocab
        target = TextField(
            "target",
            "target_dataset",
            hp.target_dataset,
            "target_",
            vocab=target_vocab,
            tokenizer=self._tokenizer,
        )
        return [source, target]

    @property
    def source_vocab(self) -> Vocab:
        """The source vocabulary."""
        return self._fields[0].vocab

    @property
    def target_vocab(self) -> Vocab:
        """The target vocabulary (the source's with ``vocab_share``)."""
        return self._fields[1].vocab
