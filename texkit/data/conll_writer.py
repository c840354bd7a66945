"""Writing CoNLL files (CoNLL-2003 and CoNLL-U), so that what :mod:`texkit.data.conll` read
writes back byte for byte (the round trip and the formats are described there).

Every sentence is checked before its lines are written: a column that is empty or holds a line
break or a separator, a CoNLL-U line without 10 columns, a comment that is not one ``#`` line: each
would read back differently, and is an error naming the sentence and token. CoNLL-2003 tokens of
different numbers of columns are written as given (they read back with ``num_columns="any"``).
The file is written beside ``path`` and moved over it at the end, so a refused call leaves
``path`` as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator

from texkit.data.conll import ASCII_SPACE, DOCSTART, ENDINGS, FORMATS, Sentence

__all__ = ["write_conll"]


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")


def _check_columns(columns: list[str], format: str, separator: str, where: str) -> None:
    if not isinstance(columns, list | tuple) or not all(isinstance(c, str) for c in columns):
        raise ValueError(f"{where}: expected a list of strings, got {columns!r}")
    if format == "conllu" and len(columns) != 10:
        raise ValueError(f"{where}: {len(columns)} columns; a CoNLL-U token line has 10")
    for column in columns:
        bad = "\n\r\t" if format == "conllu" else "\n\r\t\v\f " + separator
        if not column or any(c in column for c in bad):
            raise ValueError(
                f"{where}: column {column!r} is empty or holds a line break or separator, so the "
                "file would not read back the same"
            )


def _sentence_lines(sentence: Sentence, format: str, separator: str, where: str) -> list[str]:
    """The lines of one sentence's block (without the ``-DOCSTART-`` line), checked."""
    if format == "conll2003" and (sentence.comments or sentence.extra_lines):
        raise ValueError(f"{where}: comments and extra lines are CoNLL-U only")
    if format == "conllu" and sentence.document_start is not None:
        raise ValueError(f"{where}: -DOCSTART- lines are CoNLL-2003 only")
    for comment in sentence.comments:
        if not isinstance(comment, str) or not comment.startswith("#") or "\n" in comment:
            raise ValueError(f"{where}: a comment is one line starting with '#', got {comment!r}")
    lines = list(sentence.comments)
    extras = sorted(sentence.extra_lines, key=lambda extra: extra[0])  # stable: keeps order
    if extras != list(sentence.extra_lines) or any(
        not 0 <= place <= len(sentence.tokens) for place, _ in extras
    ):
        raise ValueError(f"{where}: extra_lines must be in order, places within the tokens")
    join = "\t" if format == "conllu" else separator
    extra = 0
    for index in range(len(sentence.tokens) + 1):
        while extra < len(extras) and extras[extra][0] == index:
            _check_columns(extras[extra][1], format, separator, f"{where}, extra line {extra}")
            lines.append(join.join(extras[extra][1]))
            extra += 1
        if index < len(sentence.tokens):
            _check_columns(sentence.tokens[index], format, separator, f"{where}, token {index}")
            lines.append(join.join(sentence.tokens[index]))
    return lines


def _blocks(sentences: Iterable[Sentence], format: str, separator: str) -> Iterator[list[str]]:
    """The blocks of lines of the file (blank lines between them), checked."""
    for number, sentence in enumerate(sentences):
        where = f"sentence {number}"
        if not isinstance(sentence, Sentence):
            raise ValueError(f"{where}: expected a Sentence, got {type(sentence).__name__}")
        if sentence.document_start is not None:
            start = sentence.document_start
            if "\n" in start or ASCII_SPACE.split(start.strip())[0] != DOCSTART:
                raise ValueError(f"{where}: document_start must be a {DOCSTART} line: {start!r}")
            yield [separator.join(ASCII_SPACE.split(start.strip()))]
        lines = _sentence_lines(sentence, format, separator, where)
        if lines:
            yield lines


def write_conll(
    path: str | os.PathLike,
    sentences: Iterable[Sentence],
    format: str = "conll2003",
    *,
    separator: str = " ",
    ending: str = "blank_line",
) -> None:
    """Writes sentences as a CoNLL file (UTF-8, ``\\n`` line ends), replacing ``path`` only once
    every sentence is written: a refused sentence leaves ``path`` as it was.

    Args:
        path: the file to write (local).
        sentences: e.g. from :func:`read_conll` or :func:`iter_conll` (streamed through).
        format: ``"conll2003"`` or ``"conllu"``.
        separator: CoNLL-2003 only: between columns, ``" "`` or ``"\\t"``.
        ending: after the last line, a key of :data:`ENDINGS` (:func:`conll_file_ending` of
            the file read, for a byte-identical copy).

    Raises:
        ValueError: a bad argument, or a sentence that would not read back as given (a column
            empty or holding a separator, a CoNLL-U line without 10 columns, ...), naming it.
    """
    _check_format(format)
    if separator not in (" ", "\t"):
        raise ValueError(f"separator must be ' ' or '\\t', got {separator!r}")
    if ending not in ENDINGS:
        raise ValueError(f"ending must be one of {list(ENDINGS)}, got {ending!r}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".conll-")
    try:
        with open(handle, "w", encoding="utf-8", newline="") as out:
            written = False
            for block in _blocks(sentences, format, separator):
                out.write(("\n\n" if written else "") + "\n".join(block))
                written = True
            if written:
                out.write(ENDINGS[ending])
        mode = os.stat(path).st_mode & 0o777 if os.path.isfile(path) else 0o644
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
