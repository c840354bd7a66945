"""Character vocabularies: one id per Unicode character, for character-level models.

A :class:`CharVocab` is a :class:`~texkit.data.Vocab` whose entries are single characters (Unicode
code points, as ``tf.strings.unicode_split`` and Python's ``str`` count them; a combining accent
is a character of its own). The special tokens keep :class:`~texkit.data.Vocab`'s fixed ids:
``<PAD>`` 0, ``<BOS>`` 1, ``<EOS>`` 2, ``<UNK>`` 3; the characters follow from id 4 on.

Its file holds one entry per line (UTF-8, lines ending in ``\\n`` or ``\\r\\n``), so that a
space, a tab or a newline can be written too:

* a line of one character is that character (a line holding only a space is a space, but editors
  tend to strip it: write ``\\u0020``);
* a backslash escape: ``\\n`` (newline), ``\\t`` (tab), ``\\r`` (carriage return), ``\\\\``
  (backslash), ``\\uXXXX`` (4 hex digits) or ``\\UXXXXXXXX`` (8 hex digits) for any code point;
* a line equal to one of the special tokens (``<PAD>`` ...) is skipped, as in
  :class:`~texkit.data.Vocab`: that token keeps its fixed id.

Anything else (an empty line, two characters, an unknown escape, a surrogate code point, a
character listed twice) is an error naming the file and line. A UTF-8 byte-order mark at the
start of the file is removed (write U+FEFF itself as ``\\ufeff``). :meth:`CharVocab.save` writes
this format: printable characters as themselves, the four escapes above, every other character
(the space and all whitespace, control and format characters) as ``\\uXXXX`` or ``\\UXXXXXXXX``.

Example::

    vocab = tx.data.CharVocab.from_files(["train.txt"])   # or from_texts(["a text", ...])
    vocab.save("chars.txt")
    vocab = tx.data.CharVocab("chars.txt")
    ids = vocab.words_to_char_ids(tf.constant([["the", "cat", ""]]), max_word_length=8)
"""

from __future__ import annotations

import collections
import os
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit import files
from texkit.data.tokenizers.reading import quoted
from texkit.data.vocab import Vocab

__all__ = ["CharVocab"]

_BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8
_NAMED = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\"}
_WRITTEN = {value: key for key, value in _NAMED.items()}
_CODE_POINT = re.compile(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})")
_FORMAT = "one character, \\n, \\t, \\r, \\\\, \\uXXXX or \\UXXXXXXXX"


def _parse_entry(entry: str, specials: Sequence[str], where: str) -> str:
    """The character (or special token) a line of a character vocabulary file stands for."""
    if entry in specials or len(entry) == 1:
        return entry
    if not entry:
        raise ValueError(f"{where}: empty line; write a space as \\u0020 ({_FORMAT} per line)")
    if entry in _NAMED:
        return _NAMED[entry]
    match = _CODE_POINT.fullmatch(entry)
    if match is None:
        what = "an unknown escape" if entry.startswith("\\") else "not one character"
        raise ValueError(f"{where}: {quoted(entry)} is {what}; expected {_FORMAT} per line")
    code = int(match.group(1) or match.group(2), 16)
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise ValueError(f"{where}: {entry} is not a Unicode character (a surrogate or too big)")
    return chr(code)


def _written(char: str) -> str:
    """How :meth:`CharVocab.save` writes a character."""
    if char in _WRITTEN:
        return _WRITTEN[char]
    if char.isprintable() and not char.isspace():
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _read_char_file(filename: str, specials: Sequence[str]) -> list[str]:
    if not tf.io.gfile.exists(filename):
        raise FileNotFoundError(f"character vocabulary file {filename!r} does not exist")
    if tf.io.gfile.isdir(filename):
        raise ValueError(f"character vocabulary file {filename!r} is a folder; give the file")
    data = files.read_bytes(
        filename, files.MAX_JSON_BYTES, what="vocabulary file (texkit.files.MAX_JSON_BYTES)"
    )
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()
    entries = []
    for number, raw in enumerate(raw_lines, start=1):
        where = f"{filename}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{where}: the line is not valid UTF-8 ({error.reason} at byte {error.start})"
            ) from None
        if line.endswith("\r"):  # a \r\n line end (a carriage return is written \r)
            line = line[:-1]
        entries.append(_parse_entry(line, specials, where))
    if not entries:
        raise ValueError(f"{filename}: the character vocabulary file holds no characters")
    return entries


def _check_limits(min_count: Any, max_size: Any) -> None:
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count must be an int >= 1, got {min_count!r}")
    if max_size is not None and (
        isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 0
    ):
        raise ValueError(f"max_size must be None or an int >= 0, got {max_size!r}")


def _ranked(counts: collections.Counter, min_count: int, max_size: int | None) -> list[str]:
    # Counter keeps first-seen order among equal counts; sorted() is stable.
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    kept = [char for char, count in ranked if count >= min_count]
    return kept if max_size is None else kept[:max_size]


class CharVocab(Vocab):
    """A vocabulary of single characters, read from a file in the format described in
    :mod:`texkit.data.char_vocab` (one character or escape per line).

    Everything :class:`~texkit.data.Vocab` offers works on characters: the fixed special ids,
    ``map_tokens_to_ids`` in the graph, ``map_ids_to_tokens_py`` in Python. It is the
    vocabulary of a text field with ``unit: character`` (see :mod:`texkit.data.text_data`).

    Args:
        filename: path of the file (any ``tf.io.gfile`` path).
        pad_token, bos_token, eos_token, unk_token: the special tokens, ids 0, 1, 2 and 3.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: a folder, not a regular file, an empty file, or a line that is not one
            character, escape or special token, or repeats a character: naming file and line.
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
        specials = [pad_token, bos_token, eos_token, unk_token]
        entries = _read_char_file(self._filename, specials)
        self._init(entries, pad_token, bos_token, eos_token, unk_token)

    def _init(
        self, tokens: list[str], pad_token: str, bos_token: str, eos_token: str, unk_token: str
    ) -> None:
        specials = (pad_token, bos_token, eos_token, unk_token)
        for number, token in enumerate(tokens, start=1):
            if isinstance(token, str) and len(token) != 1 and token not in specials:
                raise ValueError(
                    f"{self._filename}:{number}: {quoted(token)} is not one character; a "
                    "character vocabulary lists single characters"
                )
        super()._init(tokens, pad_token, bos_token, eos_token, unk_token)

    @classmethod
    def from_texts(
        cls, texts: Iterable[str], min_count: int = 1, max_size: int | None = None, **specials: str
    ) -> CharVocab:
        """The characters of ``texts``, most frequent first (ties in first-seen order).

        Args:
            texts: strings (every character counts, spaces and newlines included).
            min_count: keep characters seen at least this many times.
            max_size: keep at most this many characters (``None``: all).
            **specials: ``pad_token``, ``bos_token``, ``eos_token``, ``unk_token``.

        Raises:
            TypeError: ``texts`` is one string, or holds something else than strings.
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be an iterable of strings, not one string")
        _check_limits(min_count, max_size)
        counts: collections.Counter = collections.Counter()
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{index}] is a {type(text).__name__}, expected str")
            counts.update(text)
        return cls.from_tokens(_ranked(counts, min_count, max_size), **specials)

    @classmethod
    def from_files(
        cls,
        paths: str | Sequence[str],
        min_count: int = 1,
        max_size: int | None = None,
        **specials: str,
    ) -> CharVocab:
        """The characters of text files, read line by line as the text datasets read them
        (``\\r\\n`` accepted, invalid UTF-8 replaced with U+FFFD; the line ends themselves are
        not counted); arguments as in :meth:`from_texts`."""
        from texkit.data.sources import check_files, normalize_lines

        _check_limits(min_count, max_size)
        found = check_files([paths] if isinstance(paths, str) else list(paths), "paths")
        counts: collections.Counter = collections.Counter()
        lines = tf.data.TextLineDataset(found).batch(4096)
        lines = lines.map(lambda batch: tf.strings.reduce_join(normalize_lines(batch)[0]))
        for joined in lines.as_numpy_iterator():
            counts.update(joined.decode("utf-8"))
        return cls.from_tokens(_ranked(counts, min_count, max_size), **specials)

    def save(self, path: str) -> None:
        """Writes the characters (ids 4 on, in order) to ``path`` in the file format of
        :mod:`texkit.data.char_vocab`; ``CharVocab(path)`` reads back the same ids.

        The file is written under a temporary name and renamed, replacing ``path``.
        """
        text = "".join(_written(char) + "\n" for char in self._tokens[4:])
        temporary = f"{os.fspath(path)}.tmp-{uuid.uuid4().hex}"
        try:
            with tf.io.gfile.GFile(temporary, "wb") as stream:
                stream.write(text.encode("utf-8"))
            tf.io.gfile.rename(temporary, os.fspath(path), overwrite=True)
        finally:
            if tf.io.gfile.exists(temporary):
                tf.io.gfile.remove(temporary)

    def map_ids_to_text_py(self, ids: Any) -> str:
        """The text of a 1-D sequence of ids: its characters joined, the ids of ``<PAD>``,
        ``<BOS>`` and ``<EOS>`` left out (``<UNK>`` stays as the unknown token).

        Raises:
            ValueError: ``ids`` is not 1-D, or an id is outside the vocabulary.
        """
        ids = np.asarray(ids)
        if ids.ndim != 1:
            raise ValueError(f"ids must be 1-D, got shape {ids.shape}")
        # Negative ids are kept, for map_ids_to_tokens_py to refuse.
        kept = ids[(ids < 0) | (ids > self.eos_token_id)] if ids.size else ids
        return "".join(self.map_ids_to_tokens_py(kept).tolist())

    def words_to_char_ids(self, words: Any, max_word_length: int, bow_eow: bool = False) -> Any:
        """The character ids of a string tensor of words, in the graph (``tf.data``,
        ``tf.function``; string ops, so not inside an XLA-compiled function).

        Args:
            words: string tensor of any shape ``[...]``, e.g. the ``[batch, time]`` ``text`` of a
                word-level dataset. Padding words (``""`` or :attr:`pad_token`, with which the
                datasets pad ``text``) give only pad ids; a word equal to :attr:`bos_token`,
                :attr:`eos_token` or :attr:`unk_token` gives that token's id alone, then pad
                ids (it is not spelled out character by character).
            max_word_length: characters kept per word; longer words are truncated.
            bow_eow: mark each non-empty word with ``<BOS>``'s id before its first character and
                ``<EOS>``'s id after its last (within ``max_word_length``, which must then be at
                least 3; a longer word keeps its first ``max_word_length - 2`` characters).

        Returns:
            int32 ``[..., max_word_length]``, padded with 0 (``<PAD>``), the ids of
            characters not in the vocabulary ``<UNK>``'s.
        """
        least = 3 if bow_eow else 1
        if (
            isinstance(max_word_length, bool)
            or not isinstance(max_word_length, (int, np.integer))
            or max_word_length < least
        ):
            raise ValueError(
                f"max_word_length must be an int >= {least}"
                f"{' with bow_eow' if bow_eow else ''}, got {max_word_length!r}"
            )
        words = tf.convert_to_tensor(words)
        if words.dtype != tf.string:
            raise TypeError(f"words must be a string tensor, got dtype {words.dtype.name}")
        flat = tf.reshape(words, [-1])
        chars = tf.strings.unicode_split(flat, "UTF-8", errors="replace")
        ids = self.map_tokens_to_ids(chars)
        if bow_eow:
            column = tf.stack([tf.size(flat), 1])
            ids = tf.concat(
                [
                    tf.RaggedTensor.from_tensor(tf.fill(column, self.bos_token_id)),
                    ids[:, : max_word_length - 2],
                    tf.RaggedTensor.from_tensor(tf.fill(column, self.eos_token_id)),
                ],
                axis=1,
            )
        dense = ids[:, :max_word_length].to_tensor(
            self.pad_token_id, shape=[None, int(max_word_length)]
        )
        first = tf.one_hot(0, int(max_word_length), dtype=tf.int32)
        for token, token_id in (
            (self.bos_token, self.bos_token_id),
            (self.eos_token, self.eos_token_id),
            (self.unk_token, self.unk_token_id),
        ):
            dense = tf.where(tf.equal(flat, token)[:, None], token_id * first, dense)
        padding = tf.logical_or(tf.equal(flat, ""), tf.equal(flat, self.pad_token))
        dense = tf.where(padding[:, None], tf.zeros_like(dense), dense)
        shape = tf.concat([tf.shape(words), [int(max_word_length)]], axis=0)
        result = tf.reshape(dense, shape)
        result.set_shape(words.shape.concatenate([int(max_word_length)]))
        return result

    def __repr__(self) -> str:
        return f"CharVocab({self._filename!r}, size={self.size})"
