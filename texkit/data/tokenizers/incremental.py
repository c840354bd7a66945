"""Incremental detokenization for streaming generation: text as ids arrive, whole characters only.

A generation loop yields a few ids per step; :class:`IncrementalDecoder` turns them into the
new text since the last step, so that the texts of all the steps and of the last
:meth:`~IncrementalDecoder.flush`, joined, are exactly the tokenizer's ``detokenize`` of the
whole sequence (tested for every tokenizer class, ids pushed one at a time and in chunks,
split in the middle of characters).

The method: each tokenizer's ``detokenize`` is a left-to-right rule over per-id tables (the
same tables, read here in Python), with a little state that decides what an id gives:

* UTF-8 is decoded as bytes arrive (:class:`Utf8Stream`): a whole character is given once its
  last byte is in; bytes that cannot start or go on with a character become U+FFFD as soon as
  that is certain; a character cut short waits, and becomes U+FFFD only at
  :meth:`~IncrementalDecoder.flush` (or, for SentencePiece, when a piece that is not a byte ends
  the run). Byte-level BPE (GPT-2, RoBERTa, ``tokenizer.json``) puts one U+FFFD per maximal
  invalid sequence, as Python's and Rust's lossy decoding; SentencePiece's byte pieces one per
  byte, as the ``sentencepiece`` library.
* SentencePiece: the first piece that gives text loses its leading space (with
  ``remove_extra_whitespaces``, the ``▁`` pieces before it give nothing), so the state is
  whether that piece has come; without ``skip_special_tokens``, the text's first space is
  dropped when the model adds a dummy prefix.
* WordPiece: the first token is written as it is, the others after a space unless they start
  with ``##`` (Hugging Face's per-token cleanup is in the tables). transformers' cleanup of the
  whole text (``clean_up_tokenization_spaces``) only removes spaces, each decided by the few
  characters around it: text is given up to the last place between two characters that are
  not spaces and that no cleanup pattern holds side by side, where no replacement can reach
  across, and the rest waits for more.

So a push costs time in the ids and bytes it brings (the WordPiece cleanup: in the text since
the last such place), never in the length of the text so far.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from texkit.data.tokenizers.bert_tokenizer import CLEAN_UP_TOKENIZATION, BERTTokenizer
from texkit.data.tokenizers.byte_bpe import GPT2BPETokenizer
from texkit.data.tokenizers.byte_level_bpe import ByteLevelBPETokenizer
from texkit.data.tokenizers.sentencepiece import SentencePieceTokenizer

__all__ = ["BatchIncrementalDecoder", "IncrementalDecoder", "Utf8Stream"]

_REPLACEMENT = "\ufffd"
# Lead byte -> (length of the character, smallest and largest second byte): the Unicode
# standard's table of well-formed UTF-8 (Table 3-7); other lead bytes never start one.
_LEADS: dict[int, tuple[int, int, int]] = {
    **{b: (2, 0x80, 0xBF) for b in range(0xC2, 0xE0)},
    0xE0: (3, 0xA0, 0xBF),
    **{b: (3, 0x80, 0xBF) for b in (*range(0xE1, 0xED), 0xEE, 0xEF)},
    0xED: (3, 0x80, 0x9F),
    0xF0: (4, 0x90, 0xBF),
    **{b: (4, 0x80, 0xBF) for b in range(0xF1, 0xF4)},
    0xF4: (4, 0x80, 0x8F),
}


class Utf8Stream:
    """UTF-8 bytes in, whole characters out, with U+FFFD where bytes are not UTF-8.

    Args:
        per_byte: one U+FFFD per byte of an invalid sequence (the ``sentencepiece`` library's
            byte pieces); otherwise one per maximal invalid sequence (Python's
            ``bytes.decode("utf-8", "replace")``, Rust's ``from_utf8_lossy``, ICU).
    """

    def __init__(self, per_byte: bool = False):
        self._per_byte = per_byte
        self._pending = b""

    def push(self, data: bytes) -> str:
        """The characters that ``data`` completes; a character cut short waits."""
        pending = self._pending + data
        if pending.isascii():
            self._pending = b""
            return pending.decode("ascii")
        out, start, i, size = [], 0, 0, len(pending)
        while i < size:
            lead = pending[i]
            if lead < 0x80:
                i += 1
                continue
            length, low, high = _LEADS.get(lead, (1, 0, 0))
            valid = 1  # bytes of the sequence that can still make a character
            while valid < length and i + valid < size:
                byte = pending[i + valid]
                if not (low if valid == 1 else 0x80) <= byte <= (high if valid == 1 else 0xBF):
                    break
                valid += 1
            if valid == length and lead in _LEADS:  # a whole character
                i += length
            elif valid < length and i + valid == size:  # cut short: the rest may come
                break
            else:  # a maximal invalid sequence (a lone byte that starts none)
                out.append(pending[start:i].decode("utf-8"))
                out.append(self._replacement(valid))
                i += valid
                start = i
        out.append(pending[start:i].decode("utf-8"))
        self._pending = pending[i:]
        return "".join(out)

    def flush(self) -> str:
        """The character cut short at the end, as U+FFFD (``""`` if none); empties the stream."""
        pending, self._pending = self._pending, b""
        return self._replacement(len(pending)) if pending else ""

    def _replacement(self, invalid: int) -> str:
        return _REPLACEMENT * (invalid if self._per_byte else 1)


class _ByteLevelStream:
    """Byte-level BPE: each id's bytes, joined, as lossy UTF-8."""

    def __init__(self, tables: tuple[list[bytes], frozenset[int]]):
        self._token_bytes, self._skipped = tables
        self._utf8 = Utf8Stream()

    def push(self, ids: list[int]) -> str:
        skipped = self._skipped
        return self._utf8.push(b"".join(self._token_bytes[i] for i in ids if i not in skipped))

    def flush(self) -> str:
        return self._utf8.flush()


class _PieceStream:
    """SentencePiece: :class:`~texkit.data.tokenizers.sentencepiece_decode.PieceTables`' rule."""

    def __init__(self, tables: Any, skip_special_tokens: bool):
        self._tables, self._skip = tables, skip_special_tokens
        self._utf8 = Utf8Stream(per_byte=True)
        self._first_done = not (skip_special_tokens and tables.strip)
        self._lead_open = not skip_special_tokens and tables.dummy_prefix

    def push(self, ids: list[int]) -> str:
        tables, out = self._tables, []
        texts = tables.literal if not self._skip else None
        for i in ids:
            if texts is not None:
                part = texts[i]
            elif self._first_done:
                part = tables.surface[i]
            else:
                part = tables.stripped[i]
                self._first_done = not tables.blank[i]
            if tables.is_byte[i]:
                out.append(self._utf8.push(part))
            else:  # any other piece ends a run of byte pieces
                out.append(self._utf8.flush())
                out.append(part.decode("utf-8"))
        return self._lead("".join(out))

    def flush(self) -> str:
        return self._lead(self._utf8.flush())

    def _lead(self, text: str) -> str:
        """Without ``skip_special_tokens``: the text's first space dropped (dummy prefix)."""
        if self._lead_open and text:
            self._lead_open = False
            return text.removeprefix(" ")
        return text


class _WordPieceStream:
    """WordPiece: first and later texts of each id, and transformers' cleanup if asked."""

    def __init__(self, tables: tuple[Any, ...]):
        self._first, self._later, self._skipped, self._cleanup = tables
        self._started = False
        self._pending = ""
        # Pairs of characters that no cleanup pattern holds side by side, neither a space,
        # are places where no replacement can reach across (each replacement removes spaces).
        self._joined = {
            old[k : k + 2]
            for old, _ in self._cleanup
            for k in range(len(old) - 1)
            if " " not in old[k : k + 2]
        }

    def push(self, ids: list[int]) -> str:
        parts = []
        for i in ids:
            if i in self._skipped:
                continue
            parts.append(self._later[i] if self._started else self._first[i])
            self._started = True
        if not self._cleanup:
            return "".join(parts)
        pending = self._pending + "".join(parts)
        cut = len(pending) - 1
        while cut > 0 and not self._separable(pending[cut - 1 : cut + 1]):
            cut -= 1
        self._pending = pending[max(cut, 0) :]
        return self._cleaned(pending[: max(cut, 0)])

    def flush(self) -> str:
        pending, self._pending = self._pending, ""
        return self._cleaned(pending)

    def _separable(self, pair: str) -> bool:
        return " " not in pair and pair not in self._joined

    def _cleaned(self, text: str) -> str:
        for old, new in self._cleanup:
            text = text.replace(old, new)
        return text


# Each byte-level tokenizer's bytes by id, read once from its graph constant.
_TOKEN_BYTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _stream_maker(tokenizer: Any, skip_special_tokens: bool) -> tuple[Any, int]:
    """A function making a fresh stream of ``tokenizer``'s rule, and its vocabulary size."""
    if isinstance(tokenizer, SentencePieceTokenizer):
        tables = tokenizer._decoder.tables
        return (lambda: _PieceStream(tables, skip_special_tokens)), len(tables.surface)
    if isinstance(tokenizer, (GPT2BPETokenizer, ByteLevelBPETokenizer)):
        if tokenizer not in _TOKEN_BYTES:
            _TOKEN_BYTES[tokenizer] = tokenizer._token_bytes.numpy().tolist()
        skipped = frozenset(tokenizer.special_ids if skip_special_tokens else ())
        tables = (_TOKEN_BYTES[tokenizer], skipped)
        return (lambda: _ByteLevelStream(tables)), len(tables[0])
    if isinstance(tokenizer, BERTTokenizer):
        first, later = tokenizer.piece_texts
        skipped = frozenset(tokenizer.decode_skipped_ids if skip_special_tokens else ())
        cleanup = CLEAN_UP_TOKENIZATION if tokenizer.clean_up_tokenization_spaces else ()
        tables = (first, later, skipped, cleanup)
        return (lambda: _WordPieceStream(tables)), len(first)
    raise TypeError(
        "IncrementalDecoder: tokenizer must be a SentencePieceTokenizer, GPT2BPETokenizer, "
        f"ByteLevelBPETokenizer or BERTTokenizer, got {type(tokenizer).__name__}"
    )


def _checked_ids(ids: Any, vocab_size: int, rank: int, where: str) -> np.ndarray:
    """``ids`` as an int64 array of rank ``rank`` (a scalar is taken as one id when
    ``rank`` is 1), each in ``[0, vocab_size)``; a clear error otherwise."""
    array = np.asarray(ids.numpy() if hasattr(ids, "numpy") else ids)
    if rank == 1 and array.ndim == 0:
        array = array.reshape(1)
    if array.size == 0 and array.ndim == rank:  # [] is float to numpy
        array = array.astype(np.int64)
    if array.ndim != rank or not np.issubdtype(array.dtype, np.integer):
        shape = "[n] (or one id)" if rank == 1 else "[batch] or [batch, n]"
        raise ValueError(
            f"{where}: ids must be integer ids of shape {shape}, got {array.dtype} of shape "
            f"{array.shape}"
        )
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        bad = array[(array < 0) | (array >= vocab_size)].flat[0]
        raise ValueError(f"{where}: ids must be in [0, {vocab_size}), got {bad}")
    return array.astype(np.int64)


class IncrementalDecoder:
    """Streaming ``detokenize``: the new text of each step's ids, whole characters only.

    The texts of all :meth:`push` calls and of :meth:`flush`, joined, are exactly
    ``tokenizer.detokenize(all_ids, skip_special_tokens)`` (see the module for how, and why a
    push costs what it brings, not the length of the text so far).

    Args:
        tokenizer: A :class:`~texkit.data.tokenizers.SentencePieceTokenizer`,
            :class:`~texkit.data.tokenizers.GPT2BPETokenizer`,
            :class:`~texkit.data.tokenizers.ByteLevelBPETokenizer` or
            :class:`~texkit.data.tokenizers.BERTTokenizer`.
        skip_special_tokens: As ``detokenize``'s (the special tokens give nothing).

    Example:
        With the Llama-2-like tokenizer of the tests, whose ``神`` is three byte pieces:

        >>> tokenizer = tx.data.SentencePieceTokenizer.from_pretrained(
        ...     "tests/fixtures/sentencepiece_byte/llama"
        ... )
        >>> ids = tokenizer.tokenize("God 神").numpy()  # ▁God ▁ <0xE7> <0xA5> <0x9E>
        >>> decoder = tx.data.IncrementalDecoder(tokenizer)
        >>> [decoder.push(step) for step in ids]  # one id per generation step
        ['God', ' ', '', '', '神']
        >>> decoder.flush()
        ''
    """

    def __init__(self, tokenizer: Any, skip_special_tokens: bool = True):
        if not isinstance(skip_special_tokens, bool):
            raise TypeError(
                f"IncrementalDecoder: skip_special_tokens must be a bool, got "
                f"{skip_special_tokens!r}"
            )
        self._make, self._vocab_size = _stream_maker(tokenizer, skip_special_tokens)
        self._stream = self._make()

    @property
    def vocab_size(self) -> int:
        """The number of ids the tokenizer decodes (ids are checked against it)."""
        return self._vocab_size

    def push(self, ids: Any) -> str:
        """The new whole-character text that ``ids`` bring.

        Args:
            ids: One id or ``[n]`` ids (a list, a numpy array or a tensor), in ``[0,
                vocab_size)``; checked before anything changes.

        Returns:
            The text since the last push; ``""`` while a character or a cleanup waits.
        """
        array = _checked_ids(ids, self._vocab_size, 1, "IncrementalDecoder.push")
        return self._stream.push(array.tolist())

    def flush(self) -> str:
        """The rest of the text at the end: what waited, a character cut short as the
        reference's U+FFFD. The decoder then starts a new sequence."""
        text = self._stream.flush()
        self._stream = self._make()
        return text


class BatchIncrementalDecoder:
    """:class:`IncrementalDecoder` for a batch of sequences: one decoder per row.

    Args:
        tokenizer: As :class:`IncrementalDecoder`'s.
        batch_size: The number of rows (an int >= 1).
        skip_special_tokens: As :class:`IncrementalDecoder`'s.
    """

    def __init__(self, tokenizer: Any, batch_size: int, skip_special_tokens: bool = True):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(
                f"BatchIncrementalDecoder: batch_size must be an int >= 1, got {batch_size!r}"
            )
        self._rows = [IncrementalDecoder(tokenizer, skip_special_tokens) for _ in range(batch_size)]

    @property
    def batch_size(self) -> int:
        return len(self._rows)

    def push(self, ids: Any) -> list[str]:
        """Each row's new text: ``ids`` is ``[batch]`` (one id per row) or ``[batch, n]``."""
        array = np.asarray(ids.numpy() if hasattr(ids, "numpy") else ids)
        where = "BatchIncrementalDecoder.push"
        if array.ndim == 1:
            array = array[:, np.newaxis]
        array = _checked_ids(array, self._rows[0].vocab_size, 2, where)
        if array.shape[0] != len(self._rows):
            raise ValueError(f"{where}: ids must have {len(self._rows)} rows, got {array.shape[0]}")
        rows = zip(self._rows, array, strict=True)
        return [row._stream.push(values.tolist()) for row, values in rows]

    def flush(self) -> list[str]:
        """Each row's :meth:`IncrementalDecoder.flush`."""
        return [row.flush() for row in self._rows]
