"""Vocabularies: token <-> id maps with fixed ids for the special tokens.

A :class:`Vocab` gives the special tokens the first ids, always the same:

====  ===============  ==========================================
id    default token    meaning
====  ===============  ==========================================
0     ``<PAD>``        padding (batches are padded with id 0)
1     ``<BOS>``        beginning of sequence
2     ``<EOS>``        end of sequence
3     ``<UNK>``        any token that is not in the vocabulary
====  ===============  ==========================================

The tokens of the vocabulary file follow, from id 4 on, in file order. A file that already lists
a special token (a vocabulary written by another tool) is accepted: that line is skipped, so the
token keeps its fixed id and no duplicate is created. Any other token listed twice is an error
that names both lines, since it would make two ids for one token.

The file must be a regular file (a FIFO or a device is refused, never waited on: see
:mod:`texkit.files`) of at most :data:`texkit.files.MAX_JSON_BYTES` bytes (256 MiB); set that
constant higher for a larger vocabulary. Error messages quote at most the first 60 characters of
an entry.

Lookups work in the graph (``map_tokens_to_ids``, ``map_ids_to_tokens``: ``tf.lookup`` tables, so
inside ``tf.data`` and ``tf.function``) and in Python (``map_tokens_to_ids_py``,
``map_ids_to_tokens_py``).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit import files
from texkit.data.tokenizers.reading import quoted

__all__ = ["Vocab", "make_vocab", "split_tokens"]


def split_tokens(lines: Any, delimiter: str | None = None) -> tf.RaggedTensor:
    """Splits a ``[n]`` string tensor into ``[n, None]`` tokens, dropping empty tokens.

    ``delimiter=None`` splits on runs of ASCII whitespace (space, tab, newline, carriage return,
    vertical tab, form feed); other whitespace, such as U+00A0, stays inside tokens. This is the
    tokenization of the text datasets and of :func:`make_vocab`, so the two always agree.
    """
    lines = tf.convert_to_tensor(lines, tf.string)
    if delimiter is None:
        return tf.strings.split(lines)
    tokens = tf.strings.split(lines, sep=delimiter)
    return tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)


def _decode(token: bytes, filename: str, line_number: int) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{filename}:{line_number}: the vocabulary entry is not valid UTF-8 ({error.reason} "
            f"at byte {error.start})"
        ) from None


def _read_vocab_file(filename: str) -> list[str]:
    if not tf.io.gfile.exists(filename):
        raise FileNotFoundError(f"vocabulary file {filename!r} does not exist")
    if tf.io.gfile.isdir(filename):
        raise ValueError(f"vocabulary file {filename!r} is a folder; give the file")
    data = files.read_bytes(
        filename, files.MAX_JSON_BYTES, what="vocabulary file (texkit.files.MAX_JSON_BYTES)"
    )
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if raw_lines and raw_lines[0].startswith(_BOM):  # an encoding mark, not part of the token
        raw_lines[0] = raw_lines[0][len(_BOM) :]
    tokens = []
    for number, raw in enumerate(raw_lines, start=1):
        # Anything after a tab is ignored, so "token<TAB>count" files work as they are.
        entry = raw.rstrip(b"\r").split(b"\t", 1)[0]
        if b"\r" in entry:
            raise ValueError(
                f"{filename}:{number}: a carriage return inside the vocabulary entry (a file "
                "with old Mac line ends?); one token per line, lines ending in \\n or \\r\\n"
            )
        if b"\x00" in entry:
            raise ValueError(
                f"{filename}:{number}: a NUL byte in the vocabulary entry (a UTF-16 file?); "
                "vocabulary files are UTF-8"
            )
        token = _decode(entry, filename, number)
        if not token.strip():
            raise ValueError(f"{filename}:{number}: empty vocabulary entry")
        if token != token.strip():
            raise ValueError(
                f"{filename}:{number}: the vocabulary entry {quoted(token)} begins or ends with "
                "whitespace, so no token split from text can ever match it"
            )
        tokens.append(token)
    if not tokens:
        raise ValueError(f"{filename}: the vocabulary file holds no tokens")
    return tokens


_BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8


class Vocab:
    """A vocabulary read from a file with one token per line.

    Args:
        filename: path of the vocabulary file (any ``tf.io.gfile`` path, e.g. ``gs://``). One
            token per line, UTF-8; anything after a tab on a line is ignored (counts).
        pad_token, bos_token, eos_token, unk_token: the special tokens, ids 0, 1, 2 and 3.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: not a regular file (a FIFO, a device), larger than
            :data:`texkit.files.MAX_JSON_BYTES`, an empty file, an empty or non-UTF-8 line, an
            entry that begins or ends with whitespace, a token listed twice (naming both lines),
            or special tokens that are not four distinct non-empty strings. A UTF-8 byte-order
            mark at the start of the file is removed.

    Example::

        vocab = tx.data.Vocab("vocab.txt")
        ids = vocab.map_tokens_to_ids(tf.constant([["a", "cat"]]))   # int32, in the graph
        vocab.map_ids_to_tokens_py([4, 5])                            # numpy array of str
    """

    def __init__(
        self,
        filename: str,
        pad_token: str = "<PAD>",
        bos_token: str = "<BOS>",
        eos_token: str = "<EOS>",
        unk_token: str = "<UNK>",
    ):
        self._filename = str(filename)
        self._init(_read_vocab_file(self._filename), pad_token, bos_token, eos_token, unk_token)

    @classmethod
    def from_tokens(
        cls,
        tokens: Iterable[str],
        pad_token: str = "<PAD>",
        bos_token: str = "<BOS>",
        eos_token: str = "<EOS>",
        unk_token: str = "<UNK>",
    ) -> Vocab:
        """A vocabulary from a list of tokens (e.g. from :func:`make_vocab`), as if from a file."""
        vocab = cls.__new__(cls)
        vocab._filename = "<tokens>"
        vocab._init(list(tokens), pad_token, bos_token, eos_token, unk_token)
        return vocab

    def _init(
        self, tokens: list[str], pad_token: str, bos_token: str, eos_token: str, unk_token: str
    ) -> None:
        specials = [pad_token, bos_token, eos_token, unk_token]
        if not all(isinstance(t, str) and t for t in specials) or len(set(specials)) != 4:
            raise ValueError(
                f"special tokens must be four distinct non-empty strings, got pad={pad_token!r}, "
                f"bos={bos_token!r}, eos={eos_token!r}, unk={unk_token!r}"
            )
        self.pad_token, self.bos_token, self.eos_token, self.unk_token = specials
        id_of: dict[str, int] = {token: index for index, token in enumerate(specials)}
        line_of: dict[str, int] = {}
        ordered = list(specials)
        for number, token in enumerate(tokens, start=1):
            if not isinstance(token, str) or not token:
                raise ValueError(
                    f"{self._filename}:{number}: empty or non-string token "
                    f"{quoted(token) if isinstance(token, str) else repr(token)}"
                )
            if token in specials:
                continue
            if token in line_of:
                raise ValueError(
                    f"{self._filename}:{number}: token {quoted(token)} is already on line "
                    f"{line_of[token]}; a vocabulary lists each token once"
                )
            line_of[token] = number
            id_of[token] = len(ordered)
            ordered.append(token)
        self._tokens = ordered
        self._token_to_id = id_of
        self._tables: tuple[Any, Any] | None = None

    # -- Python side ---------------------------------------------------------------------------

    @property
    def filename(self) -> str:
        """The file the vocabulary was read from (``"<tokens>"`` for :meth:`from_tokens`)."""
        return self._filename

    @property
    def size(self) -> int:
        """Number of tokens, the four special tokens included."""
        return len(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a copy)."""
        return list(self._tokens)

    @property
    def token_to_id_map_py(self) -> dict[str, int]:
        """``{token: id}`` (a copy)."""
        return dict(self._token_to_id)

    @property
    def id_to_token_map_py(self) -> dict[int, str]:
        """``{id: token}``."""
        return dict(enumerate(self._tokens))

    pad_token_id = 0
    bos_token_id = 1
    eos_token_id = 2
    unk_token_id = 3

    def map_tokens_to_ids_py(self, tokens: Any) -> np.ndarray:
        """Ids (int32 array of the same shape) of a (nested) list or array of tokens; unknown
        tokens map to :attr:`unk_token_id`."""
        array = np.asarray(tokens, dtype=object)
        lookup = np.vectorize(
            lambda t: self._token_to_id.get(_as_str(t), self.unk_token_id), otypes=[np.int32]
        )
        return lookup(array) if array.size else np.zeros(array.shape, np.int32)

    def map_ids_to_tokens_py(self, ids: Any) -> np.ndarray:
        """Tokens (str array of the same shape) of an array of ids.

        Raises:
            ValueError: an id outside ``[0, size)``, naming it.
        """
        ids = np.asarray(ids)
        if ids.size and (ids.min() < 0 or ids.max() >= self.size):
            bad = ids[(ids < 0) | (ids >= self.size)].flat[0]
            raise ValueError(f"id {bad} is outside the vocabulary [0, {self.size})")
        return np.asarray(self._tokens, dtype=object)[ids.astype(np.int64)]

    # -- In the graph --------------------------------------------------------------------------

    def _lookup_tables(self) -> tuple[Any, Any]:
        if self._tables is None:
            # Created eagerly, even when first used while a graph is being traced, so the tables
            # outlive that graph and can be shared by tf.data pipelines and tf.functions.
            with tf.init_scope():
                keys = tf.constant(self._tokens)
                ids = tf.range(self.size, dtype=tf.int32)
                self._tables = (
                    tf.lookup.StaticHashTable(
                        tf.lookup.KeyValueTensorInitializer(keys, ids), self.unk_token_id
                    ),
                    tf.lookup.StaticHashTable(
                        tf.lookup.KeyValueTensorInitializer(ids, keys), self.unk_token
                    ),
                )
        return self._tables

    def map_tokens_to_ids(self, tokens: Any) -> Any:
        """int32 ids of a string tensor (dense or ragged); unknown tokens give ``unk_token_id``."""
        table = self._lookup_tables()[0]
        if isinstance(tokens, tf.RaggedTensor):
            return tokens.with_flat_values(table.lookup(tokens.flat_values))
        return table.lookup(tf.convert_to_tensor(tokens, tf.string))

    def map_ids_to_tokens(self, ids: Any) -> Any:
        """Tokens of an int tensor (dense or ragged); ids outside the vocabulary give
        ``unk_token``."""
        table = self._lookup_tables()[1]
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(table.lookup(tf.cast(ids.flat_values, tf.int32)))
        return table.lookup(tf.cast(ids, tf.int32))

    def __repr__(self) -> str:
        return f"Vocab({self._filename!r}, size={self.size})"


def _as_str(token: Any) -> str:
    return token.decode("utf-8", "replace") if isinstance(token, bytes) else str(token)


def make_vocab(
    files: str | Sequence[str],
    max_size: int | None = None,
    min_count: int = 1,
    delimiter: str | None = None,
) -> list[str]:
    """The tokens of text files, most frequent first (ties in first-seen order).

    Lines are read and split exactly as the text datasets read them (see
    :mod:`texkit.data.sources`): ``\\r\\n`` endings accepted, invalid UTF-8 bytes replaced with
    U+FFFD, tokens split by :func:`split_tokens`.

    Args:
        files: one path or several (any ``tf.io.gfile`` path).
        max_size: keep at most this many tokens (``None``: all).
        min_count: keep tokens seen at least this many times.
        delimiter: as in the datasets' ``delimiter`` hparam (``None``: ASCII whitespace).

    Returns:
        The tokens, for :meth:`Vocab.from_tokens` or to write one per line into a vocabulary
        file.
    """
    from texkit.data.sources import check_files, normalize_lines

    paths = check_files([files] if isinstance(files, str) else list(files), "files")
    if max_size is not None and max_size < 0:
        raise ValueError(f"max_size must be None or >= 0, got {max_size}")
    lines = tf.data.TextLineDataset(paths).batch(4096)
    lines = lines.map(lambda batch: split_tokens(normalize_lines(batch)[0], delimiter).flat_values)
    counts: collections.Counter = collections.Counter()
    for tokens in lines.as_numpy_iterator():
        counts.update(tokens.tolist())
    # Counter keeps first-seen order among equal counts; sorted() is stable.
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    kept = [token.decode("utf-8") for token, count in ranked if count >= min_count]
    return kept if max_size is None else kept[:max_size]
