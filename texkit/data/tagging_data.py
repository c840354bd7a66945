"""Sequence-tagging data: the words and tags of CoNLL files (:mod:`texkit.data.conll`) as batches,
for named-entity recognition, part-of-speech tagging or chunking.

Each example is one sentence and gives four tensors:

* ``words``: ``[batch, time]`` string, the words as read (original case, for character
  features), padded with ``""``;
* ``word_ids``: ``[batch, time]`` int32, their ids in the word vocabulary (of the lowercased
  words with ``lowercase``; unknown words give ``<UNK>``'s id), padded with 0 (``<PAD>``);
* ``tag_ids``: ``[batch, time]`` int32, the index of each tag in the tag list, padded with 0:
  ids run from 0 to ``num_tags - 1`` with no special tags (as a CRF's ``num_tags`` expects), so
  the padding is a real tag's id and must be masked with ``length``;
* ``length``: ``[batch]`` int32, the words of each sentence (no BOS or EOS).

The files are read once, at construction (the scan), by :func:`~texkit.data.conll.iter_conll`,
whose bad-input rules apply (a line longer than ``max_line_bytes``, invalid UTF-8, a wrong number
of columns: errors naming the file and line); a tag that is not in the tag list is an error
naming the file, line and tag. The sentences are then held in memory as strings (a tagging
corpus is megabytes) and the pipeline is :class:`~texkit.data.DataBase`'s: shuffling, buckets,
sharding. Sentences without words (a document with no sentence) are skipped and counted; over-long
ones are truncated or discarded (``length_filter_mode``) and counted. As for every texkit
dataset, a file changed after the dataset was made stops the pipeline with an error naming it.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from texkit import files
from texkit.data import conll, file_scan
from texkit.data.data_base import DataBase
from texkit.data.fields import Field, check_key_int
from texkit.data.vocab import Vocab, split_tokens
from texkit.hparams import HParamsError

__all__ = ["TaggingData"]

# The columns of words and tags when the hparams leave them None.
_DEFAULT_COLUMNS = {"conll2003": (0, -1), "conllu": ("FORM", "UPOS")}
_MODES = ("truncate", "discard")


def _columns(format: str, word_column: Any, tag_column: Any) -> tuple[int, int]:
    words, tags = _DEFAULT_COLUMNS[format]
    for given in (word_column, tag_column):
        # CoNLL-U's names would silently pick another column of a CoNLL-2003 file.
        if format == "conll2003" and isinstance(given, str):
            raise ValueError(f"conll2003 columns have no names: give an index, got {given!r}")
    return (
        conll.column_index(words if word_column is None else word_column),
        conll.column_index(tags if tag_column is None else tag_column),
    )


def _halves(records: Any) -> Any:
    """``[n, 2]``: the words and the tags of ``[n]`` records, each joined by tabs."""
    return tf.strings.split(records, "\n", maxsplit=1).to_tensor("", shape=[None, 2])


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _lower(words: Any) -> Any:
    return tf.strings.lower(words, encoding="utf-8")


class _TagField(Field):
    """The words and tags of CoNLL files, one record per sentence: its words joined by tabs, a
    newline, its tags joined by tabs (neither holds a tab or a newline)."""

    is_sequence = True

    def __init__(self, key: str, hparams: Any, vocab: Vocab | None):
        super().__init__("sentences", key, hparams)
        if hparams.format not in conll.FORMATS:
            raise HParamsError(
                f"expected one of {list(conll.FORMATS)}, got {hparams.format!r}", f"{key}.format"
            )
        for name in ("word_column", "tag_column"):
            try:
                _columns(hparams.format, hparams[name], None)
            except ValueError as error:
                raise HParamsError(str(error), f"{key}.{name}") from None
        columns = hparams.num_columns
        if columns is not None and columns != "any" and not _positive_int(columns):
            raise HParamsError(
                f"expected None, 'any' or a positive int, got {columns!r}", f"{key}.num_columns"
            )
        if columns is not None and hparams.format == "conllu":
            raise HParamsError(
                "conll2003 only: CoNLL-U lines have 10 columns", f"{key}.num_columns"
            )
        if hparams.length_filter_mode not in _MODES:
            raise HParamsError(
                f"expected one of {list(_MODES)}, got {hparams.length_filter_mode!r}",
                f"{key}.length_filter_mode",
            )
        check_key_int(hparams, "max_seq_length", key, optional=True)
        if hparams.pad_to_max_seq_length and hparams.max_seq_length is None:
            raise HParamsError(
                "pad_to_max_seq_length needs max_seq_length", f"{key}.pad_to_max_seq_length"
            )
        if hparams.vocab_file and vocab is not None:
            raise HParamsError("give a vocab_file or a vocab, not both", f"{key}.vocab_file")
        if hparams.tags and hparams.tag_file:
            raise HParamsError("give tags or a tag_file, not both", f"{key}.tag_file")
        self.vocab = vocab
        if hparams.vocab_file:
            try:
                self.vocab = Vocab(hparams.vocab_file)
            except (ValueError, FileNotFoundError) as error:
                raise type(error)(f"{error} (hparams '{key}.vocab_file')") from None
        self.tags = self._given_tags()
        self.max_length = hparams.max_seq_length
        self._records: list[tuple[int, int, str]] = []
        self._tag_table: Any = None

    def _given_tags(self) -> list[str] | None:
        hp, key = self.hparams, self.key
        if hp.tag_file:
            data = files.read_bytes(hp.tag_file, files.MAX_JSON_BYTES, context=f"{key}.tag_file")
            try:
                tags = data.decode("utf-8").splitlines()
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"{hp.tag_file}: not UTF-8 ({error.reason} at byte {error.start}) "
                    f"(hparams '{key}.tag_file')"
                ) from None
            tags, where = [tag.strip() for tag in tags], f"{key}.tag_file"
        elif hp.tags:
            tags, where = list(hp.tags), f"{key}.tags"
        else:
            return None
        if not all(isinstance(tag, str) and tag and tag.split() == [tag] for tag in tags):
            raise HParamsError(f"tags are non-empty strings without whitespace: {tags}", where)
        if len(set(tags)) != len(tags):
            twice = sorted(tag for tag, n in collections.Counter(tags).items() if n > 1)
            raise HParamsError(f"tags listed more than once: {twice}", where)
        return tags

    def scan_files(self) -> list[str]:
        """Reads every sentence (see :mod:`texkit.data.tagging_data`); builds the tag list and
        the vocabulary when none was given."""
        hp = self.hparams
        paths = self.paths()
        word_index, tag_index = _columns(hp.format, hp.word_column, hp.tag_column)
        known = None if self.tags is None else set(self.tags)
        seen_tags: set[str] = set()
        counts: collections.Counter = collections.Counter()
        self._records, self.scanned = [], []
        for file_index, path in enumerate(paths):
            stamp, longest = file_scan.file_stamp(path), 0
            for sentence in conll.iter_conll(
                path, hp.format, max_line_bytes=hp.max_line_bytes, num_columns=hp.num_columns
            ):
                words = _column(sentence, word_index, path, f"{self.key}.word_column")
                tags = _column(sentence, tag_index, path, f"{self.key}.tag_column")
                if known is not None:
                    _check_tags(sentence, tags, known, path, f"{self.key}.tags")
                seen_tags.update(tags)
                counts.update(words)
                record = "\t".join(words) + "\n" + "\t".join(tags)
                longest = max(longest, len(record.encode("utf-8")))
                self._records.append((file_index, sentence.line, record))
            self.scanned.append(file_scan.ScannedFile(path, stamp, longest))
        if self.tags is None:
            self.tags = sorted(seen_tags)
        if self.vocab is None:
            self.vocab = Vocab.from_tokens(_ranked(counts, hp.lowercase))
        return paths

    def read(self, numbered: bool) -> tf.data.Dataset:
        records = [record for _, _, record in self._records]
        if not numbered:
            return tf.data.Dataset.from_tensor_slices(tf.constant(records, tf.string))
        file_indices = tf.constant([index for index, _, _ in self._records], tf.int32)
        lines = tf.constant([line for _, line, _ in self._records], tf.int64)
        return tf.data.Dataset.from_tensor_slices((file_indices, lines, tf.constant(records)))

    def _split(self, clean: Any) -> tuple[Any, Any]:
        parts = _halves(clean)
        words, tags = split_tokens(parts[:, 0], "\t"), split_tokens(parts[:, 1], "\t")
        limit = self.hparams.max_seq_length
        if limit is not None:
            words, tags = words[:, :limit], tags[:, :limit]
        return words, tags

    def check(self, raw: Any) -> tuple[Any, dict[str, Any], Any, Any]:
        hp = self.hparams
        counts = split_tokens(_halves(raw)[:, 0], "\t").row_lengths()
        empty = tf.equal(counts, 0)
        too_long = tf.zeros_like(empty)
        if hp.max_seq_length is not None:
            too_long = counts > hp.max_seq_length
        skip = tf.logical_or(empty, tf.logical_and(too_long, hp.length_filter_mode == "discard"))
        return raw, {"empty": empty, "too_long": too_long}, skip, tf.zeros_like(empty)

    def error_message(self, record: bytes) -> str:
        return "unreadable sentence"  # never: the reader raised at the scan

    def actions(self) -> dict[str, str]:
        too_long = "truncated" if self.hparams.length_filter_mode == "truncate" else "discarded"
        return {"empty": "skipped", "too_long": too_long}

    def length(self, clean: Any) -> Any:
        return tf.cast(self._split(clean)[0].row_lengths(), tf.int32)

    def _tag_ids(self, tags: Any) -> Any:
        if self._tag_table is None:
            with tf.init_scope():  # made eagerly: shared by every graph that uses it
                keys = tf.constant(self.tags)
                ids = tf.range(len(self.tags), dtype=tf.int32)
                initializer = tf.lookup.KeyValueTensorInitializer(keys, ids)
                self._tag_table = tf.lookup.StaticHashTable(initializer, -1)
        return tags.with_flat_values(self._tag_table.lookup(tags.flat_values))

    def process(self, clean: Any) -> dict[str, Any]:
        words, tags = self._split(clean)
        shape = [clean.shape[0], self.max_length if self.hparams.pad_to_max_seq_length else None]
        looked_up = _lower(words) if self.hparams.lowercase else words
        lengths = tf.cast(words.row_lengths(), tf.int32)
        lengths.set_shape(clean.shape[:1])
        return {
            "words": words.to_tensor("", shape=shape),
            "word_ids": self.vocab.map_tokens_to_ids(looked_up).to_tensor(0, shape=shape),
            "tag_ids": self._tag_ids(tags).to_tensor(0, shape=shape),
            "length": lengths,
        }


def _column(sentence: conll.Sentence, index: int, path: str, key: str) -> list[str]:
    try:
        return sentence.column(index)
    except ValueError as error:
        raise ValueError(f"{path}:{sentence.line}: {error} (hparams '{key}')") from None


def _check_tags(
    sentence: conll.Sentence, tags: list[str], known: set[str], path: str, key: str
) -> None:
    for index, tag in enumerate(tags):
        if tag not in known:
            raise ValueError(
                f"{path}:{sentence.token_line(index)}: the tag {tag!r} is not in the tag list "
                f"(hparams '{key}' or its tag_file)"
            )


def _ranked(counts: collections.Counter, lowercase: bool) -> list[str]:
    """The words of ``counts``, most frequent first (ties in first-seen order); with
    ``lowercase``, lowercased by the op the pipeline uses, so the two always agree."""
    if lowercase and counts:
        lowered = _lower(tf.constant(list(counts))).numpy()
        merged: collections.Counter = collections.Counter()
        for word, low in zip(counts, lowered, strict=True):
            merged[low.decode("utf-8")] += counts[word]
        counts = merged
    return [word for word, _ in sorted(counts.items(), key=lambda item: -item[1])]


TAGGING_FIELD_DOC = {
    "files": "CoNLL files (paths or glob patterns), read in order; one string is a list of one.",
    "format": "'conll2003' (whitespace-separated columns) or 'conllu' (see tx.data.conll).",
    "word_column": "Column of the words, an index or (conllu) a CoNLL-U name (None: 0 for "
    "conll2003, 'FORM' for conllu).",
    "tag_column": "Column of the tags (None: -1, the last, for conll2003; 'UPOS' for conllu).",
    "num_columns": "conll2003: the columns of every token line (None: as many as the first; "
    "'any': lines may differ).",
    "vocab_file": "Word vocabulary, one token per line ('': built from files, most frequent "
    "first, unless a vocab is given to the constructor).",
    "tags": "The tags, in id order ([]: tag_file, or every tag of files, sorted).",
    "tag_file": "A file of tags, one per line, in id order ('': tags).",
    "lowercase": "Look words up lowercased (UTF-8); batches keep the words as read.",
    "max_seq_length": "Most words per sentence (None: no limit).",
    "length_filter_mode": "Longer sentences: 'truncate' or 'discard' (counted either way).",
    "pad_to_max_seq_length": "Pad every batch to max_seq_length: static shapes.",
    "max_line_bytes": "Most bytes in one line of the files (1 MiB): a longer line is an error "
    "naming file and line, found before the line is read whole.",
}


class TaggingData(DataBase):
    """The sentences of CoNLL files as batches of words, word ids and tag ids, for tagging.

    Batches: ``words``, ``word_ids``, ``tag_ids`` ``[batch, time]`` and ``length`` ``[batch]``
    (see :mod:`texkit.data.tagging_data`). The word vocabulary and the tag list are read from
    ``vocab_file`` and ``tags`` (or ``tag_file``), or built from the files themselves; give a
    development or test set the training set's: ``vocab=train.vocab`` and
    ``tags: train.tags``.

    Args:
        hparams: see :meth:`default_hparams` (``source`` must be ``'files'``).
        vocab: a word vocabulary (instead of ``vocab_file``).

    Example::

        train = tx.data.TaggingData({
            "dataset": {"files": ["train.conllu"], "format": "conllu", "tag_column": "UPOS"},
            "batch_size": 32,
        })
        dev = tx.data.TaggingData(
            {"dataset": {"files": ["dev.conllu"], "format": "conllu", "tags": train.tags}},
            vocab=train.vocab,
        )
        for batch in train:
            potentials = tagger(batch["word_ids"], batch["length"])
    """

    HPARAMS_DOC = {
        **DataBase.HPARAMS_DOC,
        **{f"dataset.{key}": doc for key, doc in TAGGING_FIELD_DOC.items()},
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            **DataBase.default_hparams(),
            "dataset": {
                "files": [],
                "format": "conll2003",
                "word_column": None,
                "tag_column": None,
                "num_columns": None,
                "vocab_file": "",
                "tags": [],
                "tag_file": "",
                "lowercase": False,
                "max_seq_length": None,
                "length_filter_mode": "truncate",
                "pad_to_max_seq_length": False,
                "max_line_bytes": file_scan.MAX_LINE_BYTES,
            },
            "name": "tagging",
        }

    def __init__(self, hparams: Any = None, vocab: Vocab | None = None):
        self._vocab = vocab
        super().__init__(hparams)

    def _make_fields(self) -> list[Field]:
        if self.hparams.source != "files":
            raise HParamsError("TaggingData reads CoNLL files only: 'files'", "source")
        return [_TagField("dataset", self.hparams.dataset, self._vocab)]

    @property
    def vocab(self) -> Vocab:
        """The word vocabulary."""
        return self._fields[0].vocab

    @property
    def tags(self) -> list[str]:
        """The tags in id order (``tag_ids`` index it)."""
        return list(self._fields[0].tags)

    @property
    def num_tags(self) -> int:
        """How many tags there are."""
        return len(self._fields[0].tags)

    @staticmethod
    def word_list(
        files: str | Sequence[str],
        format: str = "conll2003",
        word_column: int | str | None = None,
        num_columns: int | str | None = None,
        lowercase: bool = False,
    ) -> list[str]:
        """Every word of the files' sentences, most frequent first (ties in first-seen order),
        lowercased as the pipeline does with ``lowercase``: what ``vocab_file: ''`` builds. For
        ``Vocab.from_tokens``, or to write one per line as a vocabulary file."""
        index, _ = _columns(format, word_column, None)
        counts: collections.Counter = collections.Counter()
        for path in [files] if isinstance(files, str) else files:
            for sentence in conll.iter_conll(path, format, num_columns=num_columns):
                counts.update(_column(sentence, index, path, "word_column"))
        return _ranked(counts, lowercase)

    @staticmethod
    def tag_list(
        files: str | Sequence[str],
        format: str = "conll2003",
        tag_column: int | str | None = None,
        num_columns: int | str | None = None,
    ) -> list[str]:
        """Every tag of the files' sentences, sorted: what ``tags: []`` builds."""
        _, index = _columns(format, None, tag_column)
        found: set[str] = set()
        for path in [files] if isinstance(files, str) else files:
            for sentence in conll.iter_conll(path, format, num_columns=num_columns):
                found.update(_column(sentence, index, path, "tag_column"))
        return sorted(found)
