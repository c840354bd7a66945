"""Pretrained word vectors (word2vec, GloVe) as the initial embedding table of a vocabulary.

:func:`load_word2vec` and :func:`load_glove` return a :class:`PretrainedEmbedding`: a
``[vocab_size, dim]`` float32 matrix, row ``i`` for the token of id ``i``, ready for
``WordEmbedder(init_value=...)``. :class:`Embedding` does the same from hparams (Texar's).

* word2vec text: a header line ``"V D"``, then ``V`` lines ``word v1 ... vD``.
* word2vec binary: the header line, then ``V`` entries: the word's UTF-8 bytes, a space, ``D``
  little-endian float32 and an optional newline (the C tool writes one, gensim none).
  ``binary=None`` detects the layout: text if the values of the first entry are printable ASCII.
* GloVe text: lines ``word v1 ... vD``, no header. A word may contain spaces (some GloVe files
  have them): the last ``D`` fields are the vector, the rest of the line is the word.

Files are streamed through ``tf.io.gfile`` (local, ``gs://`` ...), never read whole; only the rows
of vocab tokens are kept and parsed as numbers. :class:`EmbeddingFileError`, naming the file and
the line or binary entry, reports a header ``D`` other than ``dim``, a GloVe line or a kept
word2vec row with another number of values, a value that is not a finite number, and fewer
entries than the header announces. Words match tokens exactly as UTF-8 bytes (no lowercasing);
a word's first occurrence wins; blank lines are skipped; a word2vec file is read up to the ``V``
entries of its header.

A token missing from the file (special tokens such as ``<PAD>`` usually are) gets a random row,
drawn with ``numpy.random.default_rng(seed)`` in id order: normal with mean 0 and the standard
deviation of all values of the found vectors, or uniform in ``[-0.1, 0.1)`` when none is found.
The counts are logged (logger ``texkit.data.embedding``; a warning when nothing is found).

``vocab`` is a :class:`texkit.data.Vocab` (its ``token_to_id_map_py``) or any mapping of token to
id with the ids ``0 .. n-1``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import tensorflow as tf

from texkit.configurable import Configurable
from texkit.hparams import HParams, HParamsError, check_positive_int

__all__ = ["Embedding", "EmbeddingFileError", "PretrainedEmbedding", "load_glove", "load_word2vec"]

logger = logging.getLogger(__name__)

_CHUNK_SIZE = 1 << 20
_MAX_LINE = 1 << 20  # plus 64 bytes per value: a longer line or word means a broken file
_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09, 0x0D}


class EmbeddingFileError(ValueError):
    """A vector file that cannot be read; the message names the file and the line or entry."""


@dataclass(frozen=True, eq=False)
class PretrainedEmbedding:
    """The embedding table of a vocabulary, loaded by :func:`load_word2vec` / :func:`load_glove`.

    ``np.asarray(result)`` is the matrix, so ``WordEmbedder(init_value=result)`` works directly.

    Attributes:
        matrix: float32 ``[vocab_size, dim]``, row ``i`` for the token of id ``i``; read-only
            (``matrix.copy()`` to change it).
        found: number of vocab tokens found in the file.
        missing: the tokens not found (their rows are random), in id order.
    """

    matrix: np.ndarray
    found: int
    missing: tuple[str, ...]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) != self.matrix.dtype:
            if copy is False:
                raise ValueError(f"cannot convert the float32 matrix to {dtype} without a copy")
            return self.matrix.astype(dtype)
        return self.matrix.copy() if copy else self.matrix


# -- the rows of a vocabulary ----------------------------------------------------------------


class _Rows:
    """The matrix being filled: which tokens are wanted, which were found."""

    def __init__(self, vocab: Any, dim: int, seed: int, path: str):
        for name, value, low in (("dim", dim, 1), ("seed", seed, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.tokens = _tokens_by_id(vocab)
        self.dim, self.seed, self.path = int(dim), int(seed), path
        self.matrix = np.zeros((len(self.tokens), self.dim), np.float32)
        self.found = np.zeros(len(self.tokens), bool)
        # Looked up with .get only: a Vocab's map may be a defaultdict (unknown token -> <UNK>).
        self._ids = {token.encode("utf-8"): index for index, token in enumerate(self.tokens)}

    def error(self, message: str) -> EmbeddingFileError:
        return EmbeddingFileError(f"{self.path}: {message}")

    def wanted(self, word: bytes) -> int | None:
        """The id to fill for ``word``; None if not in the vocab or already found."""
        index = self._ids.get(word)
        return None if index is None or self.found[index] else index

    def add(self, index: int, values: np.ndarray, where: str) -> None:
        if not np.isfinite(values).all():
            raise self.error(f"{where}: the vector of {self.tokens[index]!r} is not finite")
        self.matrix[index] = values
        self.found[index] = True

    def parse(self, index: int, fields: list[bytes], where: str) -> None:
        """Parses the text values of the row of ``index``."""
        if len(fields) != self.dim:
            found = f"{len(fields)} values for {self.tokens[index]!r}"
            raise self.error(f"{where}: {found}, expected dim={self.dim}")
        try:
            values = np.array([float(field) for field in fields], np.float32)
        except ValueError as error:
            raise self.error(f"{where}: {error}") from None
        self.add(index, values, where)

    def finish(self) -> PretrainedEmbedding:
        missing_ids = np.flatnonzero(~self.found)
        found = len(self.tokens) - len(missing_ids)
        rng = np.random.default_rng(self.seed)
        std = float(self.matrix[self.found].std()) if found else 0.0
        shape = (len(missing_ids), self.dim)
        if std > 0:
            self.matrix[missing_ids] = rng.normal(0.0, std, size=shape)
            drawn = f"normal(0, {std:.4g})"
        else:
            self.matrix[missing_ids] = rng.uniform(-0.1, 0.1, size=shape)
            drawn = "uniform(-0.1, 0.1)"
        self.matrix.flags.writeable = False
        message = f"{len(missing_ids)} missing rows drawn from {drawn} (seed {self.seed})"
        if self.path:
            message = f"{self.path}: {found} of {len(self.tokens)} vocab tokens found; {message}"
        (logger.warning if self.path and not found else logger.info)(message)
        missing = tuple(self.tokens[i] for i in missing_ids)
        return PretrainedEmbedding(self.matrix, found, missing)


def _tokens_by_id(vocab: Any) -> list[str]:
    mapping = getattr(vocab, "token_to_id_map_py", vocab)
    if not isinstance(mapping, Mapping) or not mapping:
        got = "an empty one" if isinstance(mapping, Mapping) else type(vocab).__name__
        raise ValueError(
            f"vocab must be a texkit.data.Vocab or a mapping of token to id, got {got}"
        )
    tokens: list[Any] = [None] * len(mapping)
    for token, index in mapping.items():
        ok = isinstance(index, (int, np.integer)) and not isinstance(index, bool)
        if not isinstance(token, str) or not ok or not 0 <= index < len(mapping):
            raise ValueError(f"vocab ids must be 0..{len(mapping) - 1}, got {token!r}: {index!r}")
        if tokens[index] is not None:
            raise ValueError(f"vocab gives id {index} to both {tokens[index]!r} and {token!r}")
        tokens[index] = token
    return tokens


# -- reading files ---------------------------------------------------------------------------


class _ByteStream:
    """A file read in chunks, consumed by lines, delimited fields or byte counts."""

    def __init__(self, file: BinaryIO):
        self._file, self._buffer, self._pos = file, b"", 0
        self._start = 0  # file offset of _buffer[0]

    @property
    def offset(self) -> int:
        return self._start + self._pos

    def _more(self) -> bool:
        data = self._file.read(_CHUNK_SIZE)
        if not data:
            return False
        self._start += self._pos
        self._buffer = self._buffer[self._pos :] + data
        self._pos = 0
        return True

    def _end_of(self, delimiter: bytes, limit: int) -> int | None:
        # Buffer index past the first (one-byte) delimiter within limit bytes; the buffer's end
        # if the file ends first; None if there is none within limit bytes.
        scanned = 0
        while True:
            stop = min(len(self._buffer), self._pos + limit)
            index = self._buffer.find(delimiter, self._pos + scanned, stop)
            if index >= 0:
                return index + 1
            scanned = len(self._buffer) - self._pos
            if scanned >= limit:
                return None
            if not self._more():
                return len(self._buffer)

    def read_until(self, delimiter: bytes, limit: int, peek: bool = False) -> bytes | None:
        # The bytes to the delimiter or the end of the file (b"" at the end); None if too long.
        end = self._end_of(delimiter, limit)
        if end is None:
            return None
        data = self._buffer[self._pos : end]
        self._pos = self._pos if peek else end
        return data

    def read(self, size: int) -> bytes:
        while len(self._buffer) - self._pos < size and self._more():
            pass
        data = self._buffer[self._pos : self._pos + size]
        self._pos += len(data)
        return data


def _open(path: str) -> Any:
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"embedding file not found: {path}")
    if tf.io.gfile.isdir(path):
        raise EmbeddingFileError(f"{path}: is a folder, expected a vector file")
    return tf.io.gfile.GFile(path, "rb")


def _lines(stream: _ByteStream, rows: _Rows, first_line: int) -> Any:
    """(line number, line without its newline) of the non-blank lines."""
    limit = _MAX_LINE + 64 * rows.dim
    number = first_line - 1
    while True:
        line = stream.read_until(b"\n", limit)
        number += 1
        if line is None:
            raise rows.error(f"line {number} is longer than {limit} bytes")
        if not line:
            return
        line = line.rstrip()
        if line:
            yield number, line


def _read_header(stream: _ByteStream, rows: _Rows) -> int:
    line = stream.read_until(b"\n", 1024) or b""
    fields = line.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        hint = " (GloVe files have no header: use load_glove)" if len(fields) > 2 else ""
        raise rows.error(f"line 1: expected the header 'vocab_size dim', got {line[:60]!r}{hint}")
    if int(fields[1]) != rows.dim:
        raise rows.error(f"line 1: the header gives dim {int(fields[1])}, expected dim={rows.dim}")
    return int(fields[0])


def _looks_binary(stream: _ByteStream, dim: int) -> bool:
    line = stream.read_until(b"\n", _MAX_LINE + 64 * dim, peek=True) or b""
    fields = line.rstrip().split(None, 1)
    return len(fields) < 2 or not _PRINTABLE.issuperset(fields[1][: 4 * dim])


def _read_word2vec_text(stream: _ByteStream, rows: _Rows, count: int) -> None:
    read = 0
    for number, line in _lines(stream, rows, first_line=2):
        if read == count:
            return
        read += 1
        word, *values = line.split(None, 1)
        index = rows.wanted(word)
        if index is not None:
            rows.parse(index, values[0].split() if values else [], f"line {number}")
    if read < count:
        raise rows.error(f"the header announces {count} vectors, the file holds {read}")


def _read_word2vec_binary(stream: _ByteStream, rows: _Rows, count: int) -> None:
    size = 4 * rows.dim
    for entry in range(1, count + 1):
        offset = stream.offset
        word = stream.read_until(b" ", _MAX_LINE)
        data = stream.read(size) if word and word.endswith(b" ") else b""
        index = rows.wanted(word[:-1].lstrip(b"\n")) if len(data) == size else None
        if index is not None or len(data) < size:  # rare: format the entry's name only here
            where = f"entry {entry} of {count} (byte {offset})"
            if word is None:
                raise rows.error(f"{where}: no word in {_MAX_LINE} bytes; not a word2vec file?")
            if len(data) < size:
                raise rows.error(f"{where}: the file ends inside the entry (truncated?)")
            rows.add(index, np.frombuffer(data, "<f4"), where)


def load_word2vec(
    path: str | os.PathLike, vocab: Any, dim: int, binary: bool | None = None, seed: int = 0
) -> PretrainedEmbedding:
    """Reads a word2vec file (text or binary) into the embedding table of ``vocab``.

    Args:
        path: the file (local or any ``tf.io.gfile`` path such as ``gs://...``).
        vocab: a :class:`texkit.data.Vocab` or a mapping of token to id (ids ``0 .. n-1``).
        dim: the size of the vectors; the file's header must agree.
        binary: True or False for the binary or text layout; None to detect it from the first
            entry (see the module docstring).
        seed: seed of the random rows of tokens missing from the file.

    Returns:
        A :class:`PretrainedEmbedding`; ``WordEmbedder(init_value=result)`` takes it as it is.

    Raises:
        FileNotFoundError: no file at ``path``.
        EmbeddingFileError: a broken file or another ``dim`` (see the module docstring).
    """
    path = os.fspath(path)
    if binary is not None and not isinstance(binary, bool):
        raise ValueError(f"binary must be True, False or None, got {binary!r}")
    rows = _Rows(vocab, dim, seed, path)
    with _open(path) as file:
        stream = _ByteStream(file)
        count = _read_header(stream, rows)
        if binary is None:
            binary = _looks_binary(stream, rows.dim)
        if binary:
            _read_word2vec_binary(stream, rows, count)
        else:
            _read_word2vec_text(stream, rows, count)
    return rows.finish()


def load_glove(path: str | os.PathLike, vocab: Any, dim: int, seed: int = 0) -> PretrainedEmbedding:
    """Reads a GloVe text file into the embedding table of ``vocab``.

    Every line must hold a word and ``dim`` values; the first line exactly ``dim + 1`` fields,
    which catches a wrong ``dim`` at once (later words may contain spaces). Arguments, result and
    errors as for :func:`load_word2vec`.
    """
    path = os.fspath(path)
    rows = _Rows(vocab, dim, seed, path)
    with _open(path) as file:
        for number, line in _lines(_ByteStream(file), rows, first_line=1):
            fields = line.rsplit(None, rows.dim)
            if len(fields) != rows.dim + 1 or (number == 1 and len(line.split()) != rows.dim + 1):
                found = len(line.split())
                hint = " (a word2vec header? use load_word2vec)" if number == found == 2 else ""
                expected = f"expected a word and dim={rows.dim} values"
                raise rows.error(f"line {number}: {expected}, got {found} fields{hint}")
            index = rows.wanted(fields[0].strip())
            if index is not None:
                rows.parse(index, fields[1:], f"line {number}")
    return rows.finish()


# -- configurable ------------------------------------------------------------------------------

_READ_FNS: dict[str, Callable[..., PretrainedEmbedding]] = {
    "load_word2vec": load_word2vec,
    "load_glove": load_glove,
}  # by name only: a config cannot name any other function


class Embedding(Configurable):
    """The initial embedding table of a vocabulary: pretrained vectors or random rows.

    Texar's ``Embedding``: reads ``hparams.file`` with ``hparams.read_fn``. Rows of tokens missing
    from the file are random (see :mod:`texkit.data.embedding`); with ``file: ""`` every row is,
    uniform in ``[-0.1, 0.1)``.

    Args:
        vocab: a :class:`texkit.data.Vocab` or a mapping of token to id (ids ``0 .. n-1``).
        hparams: see the table below.

    Example:
        >>> embedding = Embedding(vocab, {"file": "glove.6B.50d.txt", "read_fn": "load_glove"})
        >>> embedder = WordEmbedder(init_value=embedding.word_vecs)
    """

    HPARAMS_DOC = {
        "file": "Path of the vector file (local or tf.io.gfile); '' for a random table.",
        "dim": "Size of the vectors; a file of another size is an error.",
        "read_fn": f"How to read the file: one of {sorted(_READ_FNS)}.",
        "binary": "load_word2vec only: true (binary), false (text) or null (detect).",
        "seed": "Seed (int >= 0) of the random rows.",
        "name": "Name of the embedding.",
    }

    def __init__(self, vocab: Any, hparams: Mapping | HParams | None = None):
        self._hparams = hp = self.make_hparams(hparams)
        check_positive_int(hp, "dim")
        if hp.seed < 0:
            raise HParamsError(f"expected an int >= 0, got {hp.seed}", "seed")
        if hp.read_fn not in _READ_FNS:
            raise HParamsError(
                f"expected one of {sorted(_READ_FNS)}, got {hp.read_fn!r}", "read_fn"
            )
        word2vec = hp.read_fn == "load_word2vec"
        if hp.binary is not None and not (isinstance(hp.binary, bool) and word2vec):
            wanted = "null, or true/false with read_fn 'load_word2vec'"
            got = f"got {hp.binary!r} with read_fn {hp.read_fn!r}"
            raise HParamsError(f"expected {wanted}; {got}", "binary")
        if hp.file:
            kwargs = {"binary": hp.binary} if word2vec else {}
            read = _READ_FNS[hp.read_fn]
            self._pretrained = read(hp.file, vocab, hp.dim, seed=hp.seed, **kwargs)
        else:
            self._pretrained = _Rows(vocab, hp.dim, hp.seed, "").finish()

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "file": "",
            "dim": 50,
            "read_fn": "load_word2vec",
            "binary": None,
            "seed": 0,
            "name": "embedding",
        }

    @property
    def word_vecs(self) -> np.ndarray:
        """The ``[vocab_size, dim]`` float32 table (read-only)."""
        return self._pretrained.matrix

    @property
    def vector_size(self) -> int:
        """The size of the vectors (``hparams.dim``)."""
        return self.hparams.dim

    @property
    def pretrained(self) -> PretrainedEmbedding:
        """What was loaded: the table, the count of found tokens and the missing ones."""
        return self._pretrained
