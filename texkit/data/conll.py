"""Reading and writing CoNLL-format files: CoNLL-2003 (named entities, chunks) and CoNLL-U
(Universal Dependencies).

Formats
-------
``"conll2003"``: one token per line, its columns separated by runs of ASCII whitespace (spaces or
tabs), a blank line between sentences; every token line of a file has as many columns as its
first one. A line whose first column is ``-DOCSTART-`` starts a document: it is not a sentence,
but is kept in :attr:`Sentence.document_start` of the sentence after it (a document with no
sentence, a ``-DOCSTART-`` followed by another or by the end of the file, is a sentence without
tokens), so writing the sentences back writes the line again, followed by a blank line.

``"conllu"``: ten tab-separated columns (:data:`CONLLU_COLUMNS`: ID FORM LEMMA UPOS XPOS FEATS
HEAD DEPREL DEPS MISC), ``_`` for an empty one, a blank line after each sentence. Comment lines
(``# sent_id = ...``) come before a sentence's token lines and are kept in
:attr:`Sentence.comments`. Multiword-token lines (ID ``3-4``) and empty nodes (ID ``5.1``) are not
words: they are kept, with their place, in :attr:`Sentence.extra_lines`, and
:attr:`Sentence.tokens` holds the word lines only (what a tagger tags).

Round trip
----------
``write_conll(path, read_conll(source), ending=conll_file_ending(source))``
(:func:`~texkit.data.conll_writer.write_conll`) writes ``source`` again byte for byte when it is
well-formed: UTF-8 lines ending in ``\\n``, one blank line between sentences, and for CoNLL-2003
columns separated by one space (or the ``separator`` given to the writer: one tab, say) with
nothing after the last. The end of a file varies (the CoNLL-U specification asks for a blank line
after the last sentence; the Turkish Web Treebank files have no newline after their last line):
:func:`conll_file_ending` tells which a file has and the writer writes any of them. Other files
read the same but are written normalized: ``\\r\\n`` line ends become ``\\n``, a leading UTF-8
byte-order mark is dropped, several blank lines (or lines of spaces) become one blank line, other
column separators become ``separator``.

Bad input
---------
Files are read in chunks of 64 KiB, one sentence at a time (:func:`iter_conll`), so a huge file is
never held whole. Every problem stops the reading with a ``ValueError`` naming the file and line
(the policy of :mod:`texkit.data.sources`): a line longer than ``max_line_bytes`` (found before
it is held whole), a NUL byte, a carriage return that does not end a line, invalid UTF-8 (unless
``invalid_utf8="replace"``: U+FFFD), a token line with the wrong number of columns (naming both
counts), an empty CoNLL-U column, a CoNLL-U comment after a sentence's token lines. A missing
file is a ``FileNotFoundError``; a folder, a FIFO or a device is refused without blocking
(:mod:`texkit.files`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from typing import IO

from texkit import files
from texkit.data.file_scan import MAX_LINE_BYTES
from texkit.data.sources import NUL_MESSAGE

__all__ = [
    "CONLLU_COLUMNS",
    "DOCSTART",
    "ENDINGS",
    "FORMATS",
    "Sentence",
    "column_index",
    "conll_file_ending",
    "iter_conll",
    "read_conll",
]

FORMATS = ("conll2003", "conllu")
CONLLU_COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
DOCSTART = "-DOCSTART-"
# How a file ends after its last line: a blank line after the last sentence, just a newline,
# or nothing.
ENDINGS = {"blank_line": "\n\n", "newline": "\n", "none": ""}

# Bytes read at a time: the lines of a chunk are split at once, and as bytes objects they
# take a few times the chunk's size.
_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"
ASCII_SPACE = re.compile(r"[ \t\v\f]+")


@dataclasses.dataclass
class Sentence:
    """One sentence of a CoNLL file.

    Attributes:
        tokens: the columns of each word line, in order (CoNLL-U: word lines only).
        comments: CoNLL-U comment lines before the token lines, ``#`` included.
        extra_lines: CoNLL-U multiword-token and empty-node lines, each as ``(place, columns)``:
            the line stands before ``tokens[place]`` (after the last word when ``place`` is
            ``len(tokens)``); lines of one place keep their order.
        document_start: the ``-DOCSTART-`` line (CoNLL-2003) that starts a document with this
            sentence, its columns joined by one space, or ``None``.
        line: the file line of its first token (or multiword/empty-node) line; 0 when not read
            from a file. Not compared by ``==``.
    """

    tokens: list[list[str]]
    comments: list[str] = dataclasses.field(default_factory=list)
    extra_lines: list[tuple[int, list[str]]] = dataclasses.field(default_factory=list)
    document_start: str | None = None
    line: int = dataclasses.field(default=0, compare=False)

    def __len__(self) -> int:
        return len(self.tokens)

    def column(self, key: int | str) -> list[str]:
        """One column of every word: by index (``-1``: the last, a CoNLL-2003 file's NER tag)
        or by CoNLL-U name (``"FORM"``, ``"UPOS"``: :data:`CONLLU_COLUMNS`).

        Raises:
            ValueError: an unknown name, or an index outside a token's columns.
        """
        index = column_index(key)
        try:
            return [columns[index] for columns in self.tokens]
        except IndexError:
            widths = sorted({len(columns) for columns in self.tokens})
            raise ValueError(f"column {key!r} is outside tokens of {widths} columns") from None

    def token_line(self, index: int) -> int:
        """The file line of ``tokens[index]`` (see :attr:`line`)."""
        before = sum(1 for place, _ in self.extra_lines if place <= index)
        return self.line + index + before


def column_index(key: int | str) -> int:
    """The index of a column given by index or CoNLL-U name; an unknown name is a
    ``ValueError`` naming the known ones."""
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise ValueError(f"a column is an int index or a CoNLL-U name, got {key!r}")
    if isinstance(key, int):
        return key
    if key not in CONLLU_COLUMNS:
        raise ValueError(f"unknown column {key!r}; CoNLL-U columns are {', '.join(CONLLU_COLUMNS)}")
    return CONLLU_COLUMNS.index(key)


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")


def _open(path: str) -> IO[bytes]:
    path = os.fspath(path)
    if "://" not in path and not os.path.lexists(path):
        raise FileNotFoundError(f"{path}: no such file")
    return files.open_regular(path, what="CoNLL file")


def _raw_lines(stream: IO[bytes], path: str, limit: int) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes without its \\n or \\r\\n)``, read in chunks; a line is never held
    longer than ``limit`` bytes plus a chunk before it is refused."""
    number, pending, first = 0, b"", True
    while chunk := stream.read(_CHUNK):
        data = pending + chunk
        if first:
            data, first = data[len(_BOM) :] if data.startswith(_BOM) else data, False
        lines = data.split(b"\n")
        pending = lines.pop()
        for raw in lines:
            number += 1
            yield number, _checked(raw[:-1] if raw.endswith(b"\r") else raw, path, number, limit)
        if len(pending) > limit + 1:  # + 1: a \r that a \n in the next chunk would end
            _long(path, number + 1, limit)
    if pending:
        yield number + 1, _checked(pending, path, number + 1, limit)


def _long(path: str, number: int, limit: int) -> None:
    raise ValueError(
        f"{path}:{number}: the line is longer than {limit:,} bytes (its \\n or \\r\\n not "
        "counted), the most 'max_line_bytes' allows: not a CoNLL file? If the file is right, "
        "raise 'max_line_bytes'"
    )


def _checked(raw: bytes, path: str, number: int, limit: int) -> bytes:
    if len(raw) > limit:
        _long(path, number, limit)
    if b"\x00" in raw:
        raise ValueError(f"{path}:{number}: {NUL_MESSAGE}")
    if b"\r" in raw:
        raise ValueError(
            f"{path}:{number}: the line holds a carriage return (\\r) that does not end it: old "
            "Mac line endings or a stray \\r; convert the file to \\n (or \\r\\n) line endings"
        )
    return raw


def _decode(raw: bytes, path: str, number: int, invalid_utf8: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        if invalid_utf8 == "replace":
            return raw.decode("utf-8", "replace")
        raise ValueError(
            f"{path}:{number}: the line is not valid UTF-8 ({error.reason} at byte {error.start}); "
            "give invalid_utf8='replace' to read it with U+FFFD"
        ) from None


class _Builder:
    """The sentence being read: its lines as they come, and the checks of each line."""

    def __init__(self, path: str, format: str, num_columns: int | str | None):
        self.path, self.format = path, format
        self.width = 10 if format == "conllu" else num_columns
        self.width_line = 0  # the line that set the width (CoNLL-2003 without num_columns)
        self.document_start: str | None = None
        self.sentence: Sentence | None = None

    def _current(self, number: int) -> Sentence:
        if self.sentence is None:
            self.sentence = Sentence([], document_start=self.document_start)
            self.document_start = None
        if not self.sentence.line and number:
            self.sentence.line = number
        return self.sentence

    def add(self, text: str, number: int) -> Sentence | None:
        """Adds a non-blank line; returns a sentence the line completed (a ``-DOCSTART-``
        line ends the sentence or document before it)."""
        if self.format == "conllu":
            self._add_conllu(text, number)
            return None
        columns = ASCII_SPACE.split(text.strip(" \t\v\f"))
        if columns[0] == DOCSTART:
            done = self.finish()
            self.document_start = " ".join(columns)
            return done
        self._check_width(columns, number)
        self._current(number).tokens.append(columns)
        return None

    def _check_width(self, columns: list[str], number: int) -> None:
        if self.width is None:
            self.width, self.width_line = len(columns), number
        if len(columns) == self.width or self.width == "any":
            return
        if self.format == "conllu":
            expected = f"a CoNLL-U token line has 10 ({' '.join(CONLLU_COLUMNS)})"
        elif self.width_line:
            expected = f"the file's first token line ({self.width_line}) has {self.width}"
        else:
            expected = f"num_columns is {self.width}"
        raise ValueError(f"{self.path}:{number}: {len(columns)} columns, but {expected}")

    def _add_conllu(self, text: str, number: int) -> None:
        if text.startswith("#"):
            if self.sentence is not None and self.sentence.line:
                raise ValueError(
                    f"{self.path}:{number}: a comment after the sentence's token lines; CoNLL-U "
                    "comments come before a sentence's first token line"
                )
            self._current(0).comments.append(text)
            return
        columns = text.split("\t")
        self._check_width(columns, number)
        if "" in columns:
            name = CONLLU_COLUMNS[columns.index("")]
            raise ValueError(
                f"{self.path}:{number}: column {name} is empty; CoNLL-U writes _ for an empty field"
            )
        sentence = self._current(number)
        if "-" in columns[0] or "." in columns[0]:
            sentence.extra_lines.append((len(sentence.tokens), columns))
        else:
            sentence.tokens.append(columns)

    def end(self) -> Sentence | None:
        """The sentence read so far, if any (at a blank line or the end of the file)."""
        done, self.sentence = self.sentence, None
        return done

    def finish(self) -> Sentence | None:
        """The sentence read so far or, if there is none, the empty document of a pending
        ``-DOCSTART-`` line (at the end of the file, or at the next ``-DOCSTART-``)."""
        done = self.end()
        if done is None and self.document_start is not None:
            done, self.document_start = Sentence([], document_start=self.document_start), None
        return done


def iter_conll(
    path: str | os.PathLike,
    format: str = "conll2003",
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    invalid_utf8: str = "error",
    num_columns: int | str | None = None,
) -> Iterator[Sentence]:
    """The sentences of a CoNLL file, one at a time (the file is read in chunks: never whole).

    Args:
        path: the file (a local path or a ``tf.io.gfile`` URL).
        format: ``"conll2003"`` or ``"conllu"`` (see :mod:`texkit.data.conll`).
        max_line_bytes: the most bytes of one line (its ``\\n`` or ``\\r\\n`` not counted).
        invalid_utf8: ``"error"`` or ``"replace"`` (invalid bytes read as U+FFFD).
        num_columns: CoNLL-2003 only: the columns every token line has (``None``: as many as
            the file's first token line; ``"any"``: lines may differ, as in files whose middle
            columns are a morphological analyser's features, fewer for unknown words).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a regular file, or a bad line (see "Bad input" above), naming the file
            and line.
    """
    _check_format(format)
    if invalid_utf8 not in ("error", "replace"):
        raise ValueError(f"invalid_utf8 must be 'error' or 'replace', got {invalid_utf8!r}")
    if (
        isinstance(max_line_bytes, bool)
        or not isinstance(max_line_bytes, int)
        or max_line_bytes < 1
    ):
        raise ValueError(f"max_line_bytes must be a positive int, got {max_line_bytes!r}")
    if num_columns is not None and (
        format == "conllu"
        or num_columns != "any"
        and (isinstance(num_columns, bool) or not isinstance(num_columns, int) or num_columns < 1)
    ):
        raise ValueError(
            f"num_columns is a positive int or 'any', for conll2003 only; got {num_columns!r}"
        )
    path = os.fspath(path)
    builder = _Builder(path, format, num_columns)
    with _open(path) as stream:
        for number, raw in _raw_lines(stream, path, max_line_bytes):
            text = _decode(raw, path, number, invalid_utf8)
            done = builder.end() if not text.strip(" \t\v\f") else builder.add(text, number)
            if done is not None:
                yield done
    done = builder.finish()
    if done is not None:
        yield done


def read_conll(
    path: str | os.PathLike,
    format: str = "conll2003",
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    invalid_utf8: str = "error",
    num_columns: int | str | None = None,
) -> list[Sentence]:
    """All the sentences of a CoNLL file (:func:`iter_conll`, which takes the same arguments)."""
    return list(
        iter_conll(
            path,
            format,
            max_line_bytes=max_line_bytes,
            invalid_utf8=invalid_utf8,
            num_columns=num_columns,
        )
    )


def conll_file_ending(path: str | os.PathLike) -> str:
    """How the file ends, a key of :data:`ENDINGS`: ``"blank_line"`` (``\\n\\n``), ``"newline"``
    or ``"none"`` (its last line has no ``\\n``; an empty file too). Reads its last bytes only."""
    with _open(os.fspath(path)) as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - 4))
        tail = stream.read().replace(b"\r\n", b"\n")
    if tail.endswith(b"\n\n"):
        return "blank_line"
    return "newline" if tail.endswith(b"\n") else "none"
