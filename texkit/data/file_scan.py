"""The scan of a dataset's files before anything reads them, and the check that they stay as
the scan found them.

:func:`check_raw_files` reads each file's bytes once (decompressed, in chunks of 1 MiB, so neither
a decompression bomb nor a giant line is ever held whole) for what TensorFlow's readers hide or
would read whole: truncated compressed streams, lines longer than ``max_line_bytes``, NUL bytes,
stray carriage returns, TFRecord framing that claims more than the file holds. It records each
file's size and modification time (:class:`ScannedFile`); :func:`check_unchanged` compares them
again each epoch, and :func:`read_scanned` reads the scanned files. The bad-input policy these
serve is described in :mod:`texkit.data.sources`.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import re
import stat
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit import files
from texkit.data.sources import NUL_MESSAGE

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_RECORD_BYTES",
    "ScannedFile",
    "changed_files",
    "changed_message",
    "check_raw_files",
    "check_unchanged",
    "file_stamp",
    "read_scanned",
]


class _NotRegular(ValueError):
    """What :func:`texkit.files.open_regular` raises here, reworded with the key."""


_CHUNK = 1 << 20

# The longest line of a text file (hparams ``max_line_bytes``): a sentence or a paragraph is a
# few hundred bytes, a whole document on one line rarely more than a few hundred kilobytes.
MAX_LINE_BYTES = 1 << 20
# The longest record of a TFRecord file (hparams ``max_record_bytes``): examples of token ids are
# kilobytes, one with an image or audio clip megabytes.
MAX_RECORD_BYTES = 1 << 28


@dataclasses.dataclass(frozen=True)
class ScannedFile:
    """A file as the scan at construction found it.

    Attributes:
        path: its path.
        stamp: ``(size in bytes, modification time in ns)`` before it was read
            (:func:`file_stamp`).
        longest: the bytes of its longest line (text) or record (TFRecord).
    """

    path: str
    stamp: tuple[int, int]
    longest: int


def file_stamp(path: str) -> tuple[int, int]:
    """``(size in bytes, modification time in ns)`` of the regular file ``path``; ``(-1, -1)``
    when it is gone or no longer a regular file. One ``stat``; never raises."""
    try:
        if "://" in path:
            status = tf.io.gfile.stat(path)
            return int(status.length), int(status.mtime_nsec)
        status = os.stat(path)
    except Exception:  # noqa: BLE001 - whatever the file system says, the file is not as it was
        return (-1, -1)
    if not stat.S_ISREG(status.st_mode):
        return (-1, -1)
    return status.st_size, status.st_mtime_ns


def changed_files(scanned: Sequence[ScannedFile]) -> list[str]:
    """The files of ``scanned`` whose size or modification time is no longer what the scan
    found."""
    return [file.path for file in scanned if file_stamp(file.path) != file.stamp]


def changed_message(path: str, key: str, quote: str = "'") -> str:
    """The error for a file changed since its dataset was made."""
    return (
        f"{path}: changed since the dataset was made (its size or modification time is not what "
        f"the scan found, or it is gone): rebuild the dataset (hparams {quote}{key}{quote})"
    )


def check_raw_files(
    paths: Sequence[str],
    compression_type: str,
    key: str,
    text: bool = True,
    limit: int | None = None,
    limit_key: str = "",
) -> list[ScannedFile]:
    """One pass over each file's bytes (decompressed, in chunks of 1 MiB, so neither a
    decompression bomb nor a giant line is ever held whole), for what TensorFlow's readers hide
    or would read whole.

    * A ``GZIP`` or ``ZLIB`` stream that ends before its end marker (a truncated file) or does
      not decompress: TensorFlow reads a truncated stream's lines up to the cut without a word.
    * With ``text``: a line longer than ``limit`` bytes (its ``\\n`` or ``\\r\\n`` not counted):
      TensorFlow's line reader holds a whole line in memory, and the checks several copies of
      it, so a 1 MB compressed file of 1 GB without a newline would exhaust memory. A NUL
      byte (a binary or UTF-16 file; found here so that no line is read whole first). A
      carriage return that does not end a line (before ``\\n``): TensorFlow's line reader
      deletes every ``\\r``, so old Mac (``\\r``-only) files would read as one line and a stray
      ``\\r`` would glue two words together.
    * Without ``text`` (TFRecord files): a record longer than ``limit`` bytes, or one that
      claims more bytes than the file holds: TensorFlow's reader allocates a record's length
      before it reads it (a 112-byte file claiming 2 GiB crashes it).

    Args:
        paths: the files, checked to be regular files.
        compression_type: ``''``, ``'GZIP'`` or ``'ZLIB'``.
        key: the hparams key of the files, for errors.
        text: whether the files hold lines of text (else TFRecords).
        limit: the most bytes of one line or record (``None``: no limit).
        limit_key: the hparams key of ``limit``, for errors.

    Returns:
        A :class:`ScannedFile` per path: its size and modification time before it was read
        (compared again each epoch: :func:`check_unchanged`) and its longest line or record.

    Raises:
        ValueError: naming the file (and line or record) and ``key``.
    """
    scanned = []
    for path in paths:
        stamp = file_stamp(path)
        try:
            with files.open_regular(path, error=_NotRegular) as raw:
                chunks = _chunks(raw, compression_type)
                if text:
                    problem, longest = _scan_lines(chunks, limit)
                else:
                    problem, longest = _scan_records(chunks, limit)
        except _NotRegular as refused:
            raise ValueError(f"hparams '{key}': {refused}") from None
        except EOFError:
            raise ValueError(
                f"hparams '{key}': {path} ends before the end of its {compression_type} stream: "
                "the file is truncated (TensorFlow would read it up to the cut without an error)"
            ) from None
        except (OSError, zlib.error) as error:
            raise ValueError(
                f"hparams '{key}': {path} is not readable {compression_type or 'text'} data "
                f"({error})"
            ) from None
        if problem is not None:
            where, what = problem
            limit_text = f"{limit:,}" if limit is not None else ""
            what = what.format(limit=limit_text, limit_key=limit_key)
            raise ValueError(f"{path}{where}: {what} (hparams '{key}')")
        scanned.append(ScannedFile(path, stamp, longest))
    return scanned


def _chunks(raw: Any, compression_type: str) -> Iterator[bytes]:
    """The file's bytes, decompressed, in chunks of at most 1 MiB; ``EOFError`` if a stream is
    cut short."""
    if compression_type == "GZIP":
        with gzip.GzipFile(fileobj=raw) as stream:
            while chunk := stream.read(_CHUNK):
                yield chunk
        return
    if compression_type != "ZLIB":
        while chunk := raw.read(_CHUNK):
            yield chunk
        return
    stream = zlib.decompressobj()
    while not stream.eof and (chunk := raw.read(_CHUNK)):
        while chunk:  # bounded output per call: a highly compressed file never fills memory
            yield stream.decompress(chunk, _CHUNK)
            chunk = stream.unconsumed_tail
    if not stream.eof:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")


_STRAY_CR = re.compile(rb"\r(?!\n)")
_CR_MESSAGE = (
    "the line holds a carriage return (\\r) that does not end it: old Mac line endings or a "
    "stray \\r; convert the file to \\n (or \\r\\n) line endings"
)
_LONG_LINE_MESSAGE = (
    "the line is longer than {limit} bytes (its \\n or \\r\\n not counted), the most "
    "'{limit_key}' allows: not a text file? If the file is right, raise '{limit_key}'"
)

_Problem = tuple[str, str]  # (":line" or "", message), the message's {limit} to fill in


def _scan_lines(chunks: Iterator[bytes], limit: int | None) -> tuple[_Problem | None, int]:
    """The first flaw of a text file's bytes (the earliest line's), and its longest line's
    bytes (without its ``\\n`` or ``\\r\\n``).

    Each chunk is looked at with C-speed searches (NumPy for the newlines), never per line in
    Python, and only the bytes of the current chunk are held.
    """
    lines_before = 0  # newlines before ``body``
    run = 0  # bytes of the current line before ``body``
    longest = 0
    carry = b""
    for chunk in chunks:
        data = carry + chunk if carry else chunk
        # A \r that ends the chunk is judged with the next chunk's first byte.
        carry = b"\r" if data.endswith(b"\r") else b""
        body = data[:-1] if carry else data
        array = np.frombuffer(body, np.uint8)
        ends = np.flatnonzero(array == ord("\n"))
        found: list[tuple[int, str]] = []  # (line, message)
        nul = body.find(b"\x00")
        if nul >= 0:
            found.append((lines_before + int(np.searchsorted(ends, nul)) + 1, NUL_MESSAGE))
        stray = _STRAY_CR.search(body)
        if stray:
            line = lines_before + int(np.searchsorted(ends, stray.start())) + 1
            found.append((line, _CR_MESSAGE))
        if len(ends):
            lengths = np.diff(ends, prepend=-1) - 1
            # A \r before the \n is the line's end, not its content (and never in the previous
            # body: a \r that ends a chunk is carried into the next).
            lengths -= (ends > 0) & (array[np.maximum(ends - 1, 0)] == ord("\r"))
            lengths[0] += run
            top = int(lengths.max())
            longest = max(longest, top)
            if limit is not None and top > limit:
                line = lines_before + int(np.argmax(lengths > limit)) + 1
                found.append((line, _LONG_LINE_MESSAGE))
            run = len(body) - int(ends[-1]) - 1
        else:
            run += len(body)
        longest = max(longest, run)
        if limit is not None and run > limit:
            found.append((lines_before + len(ends) + 1, _LONG_LINE_MESSAGE))
        if found:
            line, message = min(found)
            return (f":{line}", message), longest
        lines_before += len(ends)
    return None, longest


_RECORD_HEADER = 12  # the length (8 bytes, little-endian) and its CRC (4 bytes)
_RECORD_FOOTER = 4  # the data's CRC


def _scan_records(chunks: Iterator[bytes], limit: int | None) -> tuple[_Problem | None, int]:
    """The first flaw of a TFRecord file's framing (a record longer than ``limit``, or cut
    short by the end of the file), and its longest record's bytes. The CRCs are left to
    TensorFlow's reader, which checks them before it trusts a length, so a flaw here is one
    that reader would fail on too, or one it would fail on only after allocating the length."""
    header = b""
    skip = 0  # bytes of the current record (and its footer) still to pass
    number = 0  # records begun
    longest = 0
    for chunk in chunks:
        position = 0
        while position < len(chunk):
            if skip:
                step = min(skip, len(chunk) - position)
                skip -= step
                position += step
                continue
            need = _RECORD_HEADER - len(header)
            header += chunk[position : position + need]
            position += need
            if len(header) < _RECORD_HEADER:
                break
            (length,) = struct.unpack_from("<Q", header)
            number += 1
            if limit is not None and length > limit:
                message = (
                    f"unreadable TFRecord file: record {number} holds {length:,} bytes, more than "
                    "{limit} ('{limit_key}'): a corrupt file? If the file is right, raise "
                    "'{limit_key}'"
                )
                return ("", message), longest
            longest = max(longest, length)
            header, skip = b"", length + _RECORD_FOOTER
    if header or skip:
        cut = number + 1 if header else number  # a header begun, or a record's data
        return (
            "",
            f"unreadable TFRecord file: record {cut} is cut short by the end of the file (a "
            "truncated or corrupt file)",
        ), longest
    return None, longest


class _Stamps:
    """Checks files against the stamps the scan recorded, inside a ``tf.data`` pipeline."""

    def __init__(self, entries: Sequence[tuple[ScannedFile, str]]):
        self.entries = list(entries)  # (scanned file, hparams key of its files)
        # TensorFlow's assertion message escapes single quotes.
        self.messages = tf.constant(
            [changed_message(file.path, key, '"') for file, key in self.entries] or [""]
        )

    def _first_changed(self, indices: Any) -> Any:
        for index in indices.tolist():
            if 0 <= index < len(self.entries):
                file = self.entries[index][0]
                if file_stamp(file.path) != file.stamp:
                    return np.int32(index)
        return np.int32(-1)

    def after_check(self, indices: Any, value: Any) -> Any:
        """``value``, once the files ``indices`` (a vector; out of range: no file) are found
        unchanged; else an ``InvalidArgumentError`` naming the first changed one."""
        changed = tf.numpy_function(self._first_changed, [indices], tf.int32, stateful=True)
        changed.set_shape([])
        check = tf.debugging.Assert(changed < 0, [self.messages[tf.maximum(changed, 0)]])
        with tf.control_dependencies([check]):
            return tf.identity(value)


def check_unchanged(
    dataset: tf.data.Dataset, entries: Sequence[tuple[ScannedFile, str]]
) -> tf.data.Dataset:
    """``dataset`` (of batched records: every component ``[n, ...]``) between two empty
    batches whose making checks that the files of ``entries`` (each a scanned file and the
    hparams key of its files) are unchanged since the scan: one ``stat`` per file before the
    first batch and after the last, each time the dataset is iterated anew (each epoch).

    A file changed since the dataset was made (lines appended, replaced by another file, a
    TFRecord file cut at a record's end) stops the pipeline with an ``InvalidArgumentError``
    naming the file (:func:`changed_message`) instead of being read silently. The stats run in
    Python (``tf.numpy_function``): two calls per epoch, outside the per-record path, so the
    check costs nothing measurable.
    """
    if not entries:
        return dataset
    stamps = _Stamps(entries)
    every = tf.range(len(entries), dtype=tf.int32)
    specs = dataset.element_spec

    def empty(_: Any) -> Any:
        def nothing(spec: Any) -> Any:
            return stamps.after_check(every, tf.zeros([0, *spec.shape[1:]], spec.dtype))

        return tf.nest.map_structure(nothing, specs)

    checks = tf.data.Dataset.from_tensors(0).map(empty)
    return checks.concatenate(dataset).concatenate(checks)


def read_scanned(
    scanned: Sequence[ScannedFile],
    compression_type: str,
    reader: Any,
    key: str,
    numbered: bool = False,
) -> tf.data.Dataset:
    """The records of the files the scan read, in order.

    With ``numbered`` (the scan's reading): ``(file_index, line_number, record)``
    (``line_number`` from 1 within each file), each file checked to be unchanged since
    :func:`check_raw_files` read it, when it is opened and after its last record (see
    :func:`check_unchanged`, which the pipeline applies each epoch).

    Args:
        scanned: what :func:`check_raw_files` returned.
        compression_type: ``''``, ``'GZIP'`` or ``'ZLIB'``.
        reader: ``tf.data.TextLineDataset`` (lines) or ``tf.data.TFRecordDataset``.
        key: the hparams key of the files, for errors.
        numbered: give numbered records.
    """
    paths = [file.path for file in scanned]
    if not numbered:
        return reader(paths, compression_type=compression_type)
    stamps = _Stamps([(file, key) for file in scanned])
    count = len(paths)

    def one_file(index: Any, path: Any) -> tf.data.Dataset:
        # Checks the file read before (to its end) and this one (about to be opened); the
        # element after the last file only checks that one.
        path = stamps.after_check(tf.stack([index - 1, index]), path)
        records = reader(path, compression_type=compression_type)
        records = records.take(tf.where(index < count, tf.constant(-1, tf.int64), 0))
        return records.enumerate(start=1).map(lambda number, record: (index, number, record))

    indices = tf.data.Dataset.from_tensor_slices(
        (tf.range(count + 1, dtype=tf.int32), tf.constant([*paths, paths[-1]]))
    )
    return indices.flat_map(one_file)
