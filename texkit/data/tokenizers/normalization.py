"""BERT's text normalization as the reference does it, from Python's own Unicode functions.

Why not ``tf_text.FastBertTokenizer`` or ``tf_text.BertTokenizer``
------------------------------------------------------------------
Both were compared with the reference on hard text, with the real all-MiniLM-L6-v2 vocabulary
and with one holding every character. Both differ from it (on 2 of the 26 texts of
``tests/fixtures/minilm/reference.json``; on about a fifth of 178,000 strings made to probe every
code point), for the same reasons: they normalize with ICU's ``NFKC_Casefold`` and treat
control characters and long words their own way:

* compatibility characters are folded: ``"ﬁ"``, ``"①"``, ``"Ⅻ"``, ``"½"``, full-width ``"ＡＢＣ"``,
  the Kangxi radical ``"⼀"``, math letters ``"𝐀"`` become ``fi``, ``1``, ``xii``, ``1⁄2``,
  ``abc``, ``一``, ``a``; the reference keeps them (its own entry, or ``[UNK]``);
* ``"ß"`` becomes ``ss`` and a word-final ``"Σ"`` becomes ``σ``, where Python's ``str.lower``
  keeps ``ß`` and writes the final ``ς``;
* control characters become word breaks (``"line\\x07bell"``: ``line``, ``bell``) where the
  reference deletes them (``line``, ``##bell``); private-use characters and U+FFFD are kept (and
  turn their word into ``[UNK]``) where the reference deletes them;
* the word limit counts 100 bytes, not 100 characters, so a 60-letter Cyrillic word is
  ``[UNK]``.

So texkit does what the reference does, in the graph: one pass maps every code point through a
table computed (once per process) from Python's own ``unicodedata`` and ``str.lower``, the
functions the reference calls, so the two agree by construction, Unicode version included; a
regular expression reproduces the final-sigma rule of ``str.lower``; ``tf.strings.split`` splits
the words; ``tf_text.FastWordpieceTokenizer`` (``no_pretokenization=True``: WordPiece only, the
linear-time equivalent of greedy longest-match-first) makes the wordpieces. On the 178,000
strings above this gives the reference's ids in both modes without exception.

For each of the 0x110000 code points, :func:`_unicode_tables` records what the reference
tokenizer's cleaning, CJK spacing, lowercasing and accent stripping turn it into, by calling the
``unicodedata`` and ``str.lower`` the reference calls; :class:`_Normalizer` applies the result in
the graph with a lookup, for :class:`~texkit.data.tokenizers.BERTTokenizer`. What depends on
neighbours is returned as RE2 patterns: the final sigma of ``str.lower`` (uncased) and the
punctuation split after NFC (cased). The tables are computed once per process and mode. The
characters on which ``tf_text.FastBertTokenizer`` agrees with the table are found from the same
functions (the end of this module; :mod:`texkit.data.tokenizers.fast_path` uses them).
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

_SIGMA, _FINAL_SIGMA = "\u03a3", "\u03c2"
_KEEP = -1  # in a table row: "the input code point itself"


# --- the reference's character classes ---------------------------------------------------------


def _is_punctuation(char: str) -> bool:
    """BERT's punctuation: every ASCII symbol, and Unicode category P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(cp: int) -> bool:
    """BERT's "Chinese character": the CJK Unified and Compatibility Ideographs blocks."""
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


_NUM_CODE_POINTS = 0x110000


@functools.lru_cache(maxsize=1)
def _deleted() -> np.ndarray:
    """[code point] bool: removed by the reference's cleaning step.

    NUL, U+FFFD and category C* (control, format, surrogate, private use, unassigned), but tab,
    newline and carriage return, which are whitespace.
    """
    categories = (unicodedata.category(chr(cp)) for cp in range(_NUM_CODE_POINTS))
    deleted = np.fromiter((category[0] == "C" for category in categories), bool, _NUM_CODE_POINTS)
    deleted[[0x09, 0x0A, 0x0D]] = False
    deleted[[0x00, 0xFFFD]] = True
    return deleted


def _char_output(cp: int, lowercase: bool) -> str:
    """What the reference makes of one code point it keeps, with spaces where it splits words.

    In cased mode NFC and the punctuation split depend on neighbours and run on the whole text
    (:class:`_Normalizer`); lowercasing ends with NFD, which
    makes a per-character mapping exact (``NFD(NFC(x)) == NFD(x)``) but for the final sigma,
    which :func:`_final_sigma_pattern` handles.
    """
    char = chr(cp)
    if char.isspace():  # \t \n \r, Zs, and the Zl/Zp that Python's str.split() splits on
        return " "
    if lowercase:
        text = unicodedata.normalize("NFD", unicodedata.normalize("NFC", char).lower())
        text = "".join(
            " " if c.isspace() else f" {c} " if _is_punctuation(c) else c
            for c in text
            if unicodedata.category(c) != "Mn"
        )
    else:
        text = char
    return f" {text} " if _is_cjk(cp) else text


def _char_class(ranges: Sequence[tuple[int, int]]) -> str:
    """An RE2 character class matching the given inclusive code point ranges."""
    parts = [f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


def _ranges(mask: np.ndarray) -> list[tuple[int, int]]:
    """Inclusive ``(first, last)`` ranges of the code points where ``mask`` is true."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]


@dataclass(frozen=True)
class _Tables:
    """Per-code-point normalization, as sorted ranges that each point to a row of output.

    A code point ``cp`` in ``[range_starts[i], range_starts[i + 1])`` becomes the code points of
    row ``range_rows[i]`` (``row_values[row_splits[r]:row_splits[r + 1]]``), where ``_KEEP``
    stands for ``cp`` itself.
    """

    range_starts: np.ndarray
    range_rows: np.ndarray
    row_splits: np.ndarray
    row_values: np.ndarray
    final_sigma_pattern: str | None  # lowercase only
    punctuation_pattern: str | None  # cased only


@functools.lru_cache(maxsize=2)
def _unicode_tables(lowercase: bool) -> _Tables:
    rows: dict[tuple[int, ...], int] = {(_KEEP,): 0, (): 1}
    range_starts, range_rows = [], []
    for cp, deleted in enumerate(_deleted().tolist()):
        if deleted:
            row_id = 1  # most code points (unassigned, private use): the fast path
        else:
            out = _char_output(cp, lowercase)
            if out == chr(cp):
                row = (_KEEP,)
            elif out == f" {chr(cp)} " and _is_cjk(cp):
                row = (32, _KEEP, 32)
            else:
                row = tuple(ord(c) for c in out)
            row_id = rows.setdefault(row, len(rows))
        if not range_rows or range_rows[-1] != row_id:
            range_starts.append(cp)
            range_rows.append(row_id)
    row_lengths = [len(row) for row in rows]
    row_values = [value for row in rows for value in row]

    sigma = punctuation = None
    if lowercase:
        sigma = _final_sigma_pattern()
    else:
        is_punct = np.zeros(_NUM_CODE_POINTS, bool)
        for cp in np.flatnonzero(~_deleted()).tolist():
            is_punct[cp] = _is_punctuation(chr(cp))
        punctuation = "(" + _char_class(_ranges(is_punct)) + ")"
    return _Tables(
        range_starts=np.array(range_starts, np.int32),
        range_rows=np.array(range_rows, np.int32),
        row_splits=np.concatenate([[0], np.cumsum(row_lengths)]).astype(np.int32),
        row_values=np.array(row_values, np.int32),
        final_sigma_pattern=sigma,
        punctuation_pattern=punctuation,
    )


def _final_sigma_pattern() -> str:
    """An RE2 pattern for a capital sigma that Python's ``str.lower`` writes as final ``ς``.

    CPython: ``Σ`` is final when the nearest character before it that is not case-ignorable is
    cased, and no cased character follows after case-ignorable ones. Python does not expose the
    two properties, so each code point is classified by how ``str.lower`` treats a sigma next to
    it. Characters the cleaning step deletes are skipped like case-ignorable ones (the reference
    lowercases after deleting them).
    """
    cased = np.zeros(_NUM_CODE_POINTS, bool)
    skipped = _deleted().copy()
    for cp in np.flatnonzero(~skipped).tolist():
        char = chr(cp)
        if ("A" + _SIGMA + char).lower()[1] != _FINAL_SIGMA:
            cased[cp] = True  # cased, and not skipped as case-ignorable
        elif ("A" + _SIGMA + char + "A").lower()[1] != _FINAL_SIGMA:
            skipped[cp] = True  # case-ignorable
    before = _char_class(_ranges(cased))
    skip = _char_class(_ranges(skipped))
    stop = _char_class(_ranges(~(cased | skipped)))
    return f"({before}{skip}*){_SIGMA}({skip}*(?:{stop}|$))"


_BLOCK_BITS = 8  # code points per block of :func:`_lookup_tables`: 2 ** _BLOCK_BITS
_NO_VALUE = -2  # in a row of _Lookup.row_values: no code point (rows are padded to one width)


@dataclass(frozen=True)
class _Lookup:
    """:class:`_Tables` as arrays that a few gathers read, without a search or ragged rows.

    The row of code point ``cp`` is ``block_rows[block_index[cp >> _BLOCK_BITS] + (cp & mask)]``
    (the distinct blocks of ``2 ** _BLOCK_BITS`` code points, stored once each); its code points
    are ``row_values[row]`` (``_KEEP``: ``cp`` itself), padded with ``_NO_VALUE`` to the widest
    row, ``row_lengths[row]`` of them.
    """

    block_index: np.ndarray
    block_rows: np.ndarray
    row_values: np.ndarray
    row_lengths: np.ndarray


@functools.lru_cache(maxsize=2)
def _lookup_tables(lowercase: bool) -> _Lookup:
    tables = _unicode_tables(lowercase)
    ranges = np.searchsorted(tables.range_starts, np.arange(_NUM_CODE_POINTS), side="right") - 1
    blocks = tables.range_rows[ranges].reshape(-1, 2**_BLOCK_BITS)
    unique, index = np.unique(blocks, axis=0, return_inverse=True)
    row_lengths = np.diff(tables.row_splits).astype(np.int32)
    row_values = np.full((len(row_lengths), max(1, int(row_lengths.max()))), _NO_VALUE, np.int32)
    for row, (start, length) in enumerate(zip(tables.row_splits[:-1], row_lengths, strict=True)):
        row_values[row, :length] = tables.row_values[start : start + length]
    return _Lookup(
        block_index=(index.reshape(-1) * 2**_BLOCK_BITS).astype(np.int32),
        block_rows=unique.reshape(-1).astype(np.int32),
        row_values=row_values,
        row_lengths=row_lengths,
    )


class _Normalizer:
    """The reference's cleaning, CJK spacing, NFC, lowercasing and punctuation split, in the graph.

    Holds the lookup of :func:`_lookup_tables` as constants (made with the tokenizer) and the
    patterns of :func:`_unicode_tables`, for one mode.
    """

    def __init__(self, lowercase: bool):
        tables = _unicode_tables(lowercase)
        lookup = _lookup_tables(lowercase)
        self._block_index = tf.constant(lookup.block_index)
        self._block_rows = tf.constant(lookup.block_rows)
        self._row_values = tf.constant(lookup.row_values)
        self._row_lengths = tf.constant(lookup.row_lengths)
        self._final_sigma_pattern = tables.final_sigma_pattern
        self._punctuation_pattern = tables.punctuation_pattern

    def __call__(self, texts: tf.Tensor) -> tf.Tensor:
        """``[batch]`` strings to the normalized ones: words separated by spaces."""
        chars = tf.strings.unicode_decode(texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
        if self._final_sigma_pattern is not None:

            def final_sigma() -> tuple[tf.Tensor, tf.Tensor]:
                # Read bad bytes as U+FFFD first, so the pattern sees what the table will see.
                fixed = tf.strings.unicode_transcode(
                    texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
                )
                fixed = tf.strings.regex_replace(
                    fixed, self._final_sigma_pattern, "\\1" + _FINAL_SIGMA + "\\2"
                )
                fixed = tf.strings.unicode_decode(
                    fixed, "UTF-8", errors="replace", replacement_char=0xFFFD
                )
                return fixed.flat_values, fixed.row_splits

            # Only a capital sigma can change, and few texts hold one.
            values, splits = tf.cond(
                tf.reduce_any(chars.flat_values == ord(_SIGMA)),
                final_sigma,
                lambda: (chars.flat_values, chars.row_splits),
            )
            chars = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
        code_points = chars.flat_values
        mask = 2**_BLOCK_BITS - 1
        blocks = tf.gather(self._block_index, tf.bitwise.right_shift(code_points, _BLOCK_BITS))
        rows = tf.gather(self._block_rows, blocks + tf.bitwise.bitwise_and(code_points, mask))
        # [chars, widest row]: each character's output code points, then padding.
        values = tf.gather(self._row_values, rows)
        values = tf.where(values == _KEEP, code_points[:, tf.newaxis], values)
        values = tf.boolean_mask(values, values != _NO_VALUE)  # in order: row by row
        ends = tf.concat([[0], tf.cumsum(tf.gather(self._row_lengths, rows))], 0)
        splits = tf.gather(ends, chars.row_splits)
        chars = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
        texts = tf.strings.unicode_encode(chars, "UTF-8")
        if self._punctuation_pattern is not None:
            # Cased: NFC joins characters across the text, so it and the punctuation split it
            # may create come after the per-character table.
            texts = tf_text.normalize_utf8(texts, "NFC")
            texts = tf.strings.regex_replace(texts, self._punctuation_pattern, " \\1 ")
        return texts


# --- where tf_text's FastBertTokenizer gives the reference's words -------------------------------

_FAST_CANDIDATES = 0x3000  # code points probed for the fast path: Latin to general punctuation


@functools.lru_cache(maxsize=1)
def _composition_seconds() -> frozenset[int]:
    """Code points that NFC may compose with the character before them (the second of a
    canonical decomposition pair)."""
    seconds = set()
    for cp in range(_NUM_CODE_POINTS):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(int(parts[1], 16))
    return frozenset(seconds)


def _fast_path_candidates(lowercase: bool) -> list[int]:
    """The code points below :data:`_FAST_CANDIDATES` whose treatment by the reference does not
    depend on their neighbours, so that probing each one alone tells how it is treated in any
    text: not the capital sigma (uncased: ``str.lower``'s final sigma), not the characters NFC may
    compose (cased: NFC runs over the text), not the Hangul jamo, no surrogates."""
    seconds = _composition_seconds()
    candidates = []
    for cp in range(_FAST_CANDIDATES):
        char = chr(cp)
        if 0xD800 <= cp < 0xE000 or (lowercase and char == _SIGMA):
            continue
        if 0x1100 <= cp <= 0x11FF:
            continue  # Hangul jamo: NFC composes them algorithmically, not by decomposition pairs
        combining = unicodedata.combining(char) > 0
        if lowercase and combining and unicodedata.category(char) != "Mn":
            continue  # kept, and NFD may reorder it
        if not lowercase and (
            combining or cp in seconds or unicodedata.normalize("NFC", char) != char
        ):
            continue
        candidates.append(cp)
    return candidates


def _probe_words(cp: int, lowercase: bool) -> list[str]:
    """The words the table path makes of ``"a" + chr(cp) + "b"``."""
    middle = "" if _deleted()[cp] else _char_output(cp, lowercase)
    text = "a" + middle + "b"
    if not lowercase:
        text = unicodedata.normalize("NFC", text)
        text = "".join(f" {c} " if _is_punctuation(c) else c for c in text)
    return [word for word in text.split(" ") if word]
