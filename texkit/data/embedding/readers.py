"""Reading word2vec and GloVe files into the embedding table of a vocabulary.

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
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO

import numpy as np
import tensorflow as tf

from texkit import files
from texkit.data.embedding.table import EmbeddingFileError, PretrainedEmbedding, _Rows

__all__ = ["load_glove", "load_word2vec"]

_CHUNK_SIZE = 1 << 20
_MAX_LINE = 1 << 20  # plus 64 bytes per value: a longer line or word means a broken file
_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09, 0x0D}


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
    # A FIFO or a device is refused without blocking (a FIFO would wait forever).
    return files.open_regular(path, error=EmbeddingFileError)


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
