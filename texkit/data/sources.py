"""Where examples come from (text files, TFRecord files, tensorflow-datasets) and the bad-input
policy every text dataset applies.

Bad input
---------
Every line of a text file goes through the same checks, in the graph:

* **line endings**: ``\\n`` ends a line; a ``\\r`` before it (Windows ``\\r\\n`` files) is removed.
  This is a repair of the format, not of the data, and is not counted.
* **invalid UTF-8**: ``invalid_utf8_mode: replace`` (default) replaces each invalid byte sequence
  with U+FFFD and keeps the line; ``skip`` drops the example; ``error`` stops at construction with
  the file and line. Counted either way.
* **empty lines** (nothing but whitespace): ``empty_line_mode: skip`` (default) drops the
  example; ``keep`` keeps it as an empty sequence (plus BOS/EOS). Counted either way.
* **over-long lines** (more than ``max_seq_length`` tokens): ``length_filter_mode: truncate``
  (default) keeps the first ``max_seq_length`` tokens; ``discard`` drops the example. Counted.
* **scalar files**: a line that is not a number of the declared type is an error at construction,
  naming the file and line (a label is never guessed).
* **missing files**: an error naming the path or pattern; a path that is a folder, a FIFO or a
  device: an error naming the hparams key (:func:`texkit.files.check_regular_file`, which never
  blocks).
* **giant lines**: a line longer than ``max_line_bytes`` (1 MiB by default; its ``\\n`` or
  ``\\r\\n`` not counted) is an error naming the file and line. TensorFlow's line reader holds a
  whole line in memory (and the checks a few copies of it), so a 1 MB ``.gz`` of 1 GB without a
  newline would exhaust memory: the scan finds such a line in the file's bytes, in chunks of
  1 MiB, before anything reads it whole. A file of longer lines needs the hparam raised.
* **truncated or corrupt compressed files** (``compression_type: GZIP`` or ``ZLIB``): an error
  naming the file. TensorFlow's readers return the lines of a truncated stream up to the cut
  without a word, so the scan reads each compressed file through to its end marker first.
* **aligned files** (paired or multi-aligned data): files whose line counts differ are an error
  naming every file and its count; an example dropped on one side is dropped on all sides.

A dataset scans its input once when it is constructed (one pass over each file's bytes, then one
in ``tf.data``; no Python per line), so every error above is raised before training starts and
the counts are known: they are in the dataset's :attr:`~texkit.data.DataBase.report` and logged
(a warning when anything was skipped or repaired). Nothing is dropped without being counted. The
scan stops at the first error.

Files changed later
-------------------
The scan records each file's size and modification time; each time the pipeline reads the files
anew (each epoch), a ``stat`` per file compares them before the first record and after the last
(:func:`check_unchanged`). A file changed since the dataset was made (lines appended, replaced, a
TFRecord file cut at a record's end, which TensorFlow would read without a word) stops the
pipeline with an error naming it: rebuild the dataset to read the new contents.
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

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_RECORD_BYTES",
    "ScannedFile",
    "changed_files",
    "changed_message",
    "check_files",
    "check_raw_files",
    "check_regular_file",
    "check_unchanged",
    "file_stamp",
    "line_flaw_message",
    "line_flaws",
    "normalize_lines",
    "read_scanned",
    "tfds_examples",
]

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


def check_files(patterns: Sequence[str], key: str) -> list[str]:
    """Expands glob patterns (in order); a pattern that matches nothing is an error naming it."""
    if isinstance(patterns, str) or not patterns:
        raise ValueError(f"hparams '{key}': expected a non-empty list of paths, got {patterns!r}")
    paths: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"hparams '{key}': expected a path, got {pattern!r}")
        if any(c in pattern for c in "*?["):
            matches = sorted(tf.io.gfile.glob(pattern))
            if not matches:
                raise FileNotFoundError(f"hparams '{key}': no file matches {pattern!r}")
            paths.extend(matches)
        elif not tf.io.gfile.exists(pattern):
            raise FileNotFoundError(f"hparams '{key}': file {pattern!r} does not exist")
        else:
            paths.append(pattern)
    for path in paths:
        check_regular_file(path, key)
    return paths


class _NotRegular(ValueError):
    """What :func:`texkit.files.check_regular_file` raises here, reworded with the key."""


def check_regular_file(path: str, key: str) -> None:
    """Raises ``ValueError`` naming ``key`` unless ``path`` is a regular file
    (:func:`texkit.files.check_regular_file`, which never blocks): a FIFO would block the reader
    forever, a device such as ``/dev/zero`` never ends."""
    if tf.io.gfile.isdir(path):
        raise ValueError(f"hparams '{key}': {path!r} is a folder; give a file")
    try:
        files.check_regular_file(path, error=_NotRegular)
    except _NotRegular as refused:
        raise ValueError(f"hparams '{key}': {refused}") from None


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
_NUL_MESSAGE = (
    "the line holds a NUL byte: a binary file, or UTF-16 text? texkit reads UTF-8 text "
    "(convert the file, e.g. with iconv -f UTF-16 -t UTF-8)"
)
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
            found.append((lines_before + int(np.searchsorted(ends, nul)) + 1, _NUL_MESSAGE))
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


def normalize_lines(lines: Any) -> tuple[Any, Any, Any]:
    """Applies the line policy's repairs to a string tensor of any shape.

    Returns:
        ``(lines, invalid_utf8, empty)``: the lines without a trailing ``\\r`` or a leading
        UTF-8 byte-order mark, and with invalid UTF-8 replaced by U+FFFD; whether each line had
        invalid UTF-8; whether it is empty or whitespace only.
    """
    lines = tf.strings.regex_replace(lines, "\r$", "")
    lines = _without_bom(lines)
    repaired = tf.strings.unicode_transcode(
        lines, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    invalid = tf.not_equal(repaired, lines)
    empty = tf.equal(tf.strings.length(tf.strings.strip(repaired)), 0)
    return repaired, invalid, empty


_BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8


def _starts_with_bom(lines: Any) -> Any:
    # Compared as bytes: RE2 matches code points, not bytes.
    return tf.equal(tf.strings.substr(lines, 0, len(_BOM)), _BOM)


def _without_bom(lines: Any) -> Any:
    # Substr's position must lie within every string: lines without a mark get one to cut.
    marked = tf.where(_starts_with_bom(lines), lines, tf.strings.join([_BOM, lines]))
    return tf.strings.substr(marked, len(_BOM), -1)


def line_flaws(raw: Any) -> dict[str, Any]:
    """What the policy counts or refuses in raw lines (a string tensor of any shape).

    * ``bom``: a UTF-8 byte-order mark at the start (a file's first line, as some editors write
      it); :func:`normalize_lines` removes it. Counted.
    * ``nul``: a NUL byte: a binary file, or UTF-16 text (whose ASCII characters each hold one).
      An error.

    (Carriage returns inside lines never reach the graph: TensorFlow's line reader deletes them;
    :func:`check_raw_files` finds them in the files, and NULs there too before any line is read
    whole: this check serves tensorflow-datasets text.)
    """
    return {
        "bom": _starts_with_bom(raw),
        "nul": _holds_nul(raw),
    }


def _holds_nul(raw: Any) -> Any:
    # A literal split works on bytes (RE2 matches nothing in a line that is not valid UTF-8);
    # one split at most, so a line of NULs costs two copies of it, not a string per NUL.
    parts = tf.strings.split(tf.reshape(raw, [-1]), sep="\x00", maxsplit=1).row_lengths()
    return tf.reshape(parts > 1, tf.shape(raw))


def line_flaw_message(record: bytes) -> str | None:
    """Why a raw line is refused by the policy (``None`` if it is not)."""
    if b"\x00" in record:
        return _NUL_MESSAGE
    return None


def tfds_examples(name: str, split: str, data_dir: str | None, key: str) -> tf.data.Dataset:
    """The examples (dicts of features) of a tensorflow-datasets split, in a fixed order.

    The dataset must be prepared already (downloaded into ``data_dir`` or the default folder) or
    mocked (``tfds.testing.mock_data``); ``key`` is the hparams key, for errors.
    """
    if not name:
        raise ValueError(f"hparams '{key}.name': a tensorflow-datasets name is required")
    import tensorflow_datasets as tfds  # imported here: it is slow to import and often unused

    try:
        return tfds.load(name, split=split, data_dir=data_dir, shuffle_files=False)
    except Exception as error:  # tfds raises many types; re-raise with the key that names it
        raise ValueError(
            f"hparams '{key}': cannot load tensorflow-datasets {name!r} split {split!r}: {error}"
        ) from error
