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
* **missing files**: an error naming the path or pattern.
* **truncated or corrupt compressed files** (``compression_type: GZIP`` or ``ZLIB``): an error
  naming the file. TensorFlow's readers return the lines of a truncated stream up to the cut
  without a word, so the scan reads each compressed file through to its end marker first.
* **aligned files** (paired or multi-aligned data): files whose line counts differ are an error
  naming every file and its count; an example dropped on one side is dropped on all sides.

A dataset scans its input once when it is constructed (one pass in ``tf.data``, no Python per
line), so every error above is raised before training starts and the counts are known: they are
in the dataset's :attr:`~texkit.data.DataBase.report` and logged (a warning when anything was
skipped or repaired). Nothing is dropped without being counted.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import zlib
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

__all__ = [
    "check_raw_files",
    "check_files",
    "line_flaw_message",
    "line_flaws",
    "normalize_lines",
    "numbered_lines",
    "tfds_examples",
]

_CHUNK = 1 << 20


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


def check_regular_file(path: str, key: str) -> None:
    """Raises ``ValueError`` naming ``key`` when ``path`` is a folder, or (on the local file
    system) not a regular file: a FIFO would block the reader forever, a device such as
    ``/dev/zero`` never ends."""
    if tf.io.gfile.isdir(path):
        raise ValueError(f"hparams '{key}': {path!r} is a folder; give a file")
    if "://" in path:
        return  # cloud storage holds regular files only
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # reported by the reader
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or special file"
        raise ValueError(f"hparams '{key}': {path!r} is {kind}, not a regular file")


def check_raw_files(
    paths: Sequence[str], compression_type: str, key: str, text: bool = True
) -> None:
    """One pass over each file's bytes (decompressed), for what TensorFlow's readers hide.

    * A ``GZIP`` or ``ZLIB`` stream that ends before its end marker (a truncated file) or does
      not decompress: TensorFlow reads a truncated stream's lines up to the cut without a word.
    * With ``text``, a carriage return that does not end a line (before ``\\n``, or at the end
      of the file): TensorFlow's line reader deletes every ``\\r``, so old Mac (``\\r``-only)
      files would read as one line and a stray ``\\r`` would glue two words together.

    Raises:
        ValueError: naming the file (and line) and ``key``.
    """
    for path in paths:
        try:
            with tf.io.gfile.GFile(path, "rb") as raw:
                chunks = _chunks(raw, compression_type)
                line = _stray_carriage_return(chunks) if text else _read_all(chunks)
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
        if line is not None:
            raise ValueError(
                f"{path}:{line}: the line holds a carriage return (\\r) that does not end it: old "
                "Mac line endings or a stray \\r; convert the file to \\n (or \\r\\n) line "
                f"endings (hparams '{key}')"
            )


def _chunks(raw: Any, compression_type: str) -> Any:
    """The file's bytes, decompressed, in chunks; ``EOFError`` if a stream is cut short."""
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


def _read_all(chunks: Any) -> None:
    for _ in chunks:
        pass


_STRAY_CR = re.compile(rb"\r(?!\n)")


def _stray_carriage_return(chunks: Any) -> int | None:
    """The 1-based line of the first ``\\r`` not followed by ``\\n`` (``None``: there is none)."""
    lines_before, carry = 0, b""
    for chunk in chunks:
        data = carry + chunk
        # A \r that ends the chunk is judged with the next chunk's first byte.
        carry = b"\r" if data.endswith(b"\r") else b""
        body = data[:-1] if carry else data
        found = _STRAY_CR.search(body)
        if found:
            return lines_before + body.count(b"\n", 0, found.start()) + 1
        lines_before += body.count(b"\n")
    return None


def numbered_lines(
    paths: Sequence[str], compression_type: str = "", reader: Any = tf.data.TextLineDataset
) -> tf.data.Dataset:
    """``(file_index, line_number, record)`` for every record of ``paths``, in order.

    ``line_number`` counts from 1 within each file; records are lines for the default ``reader``
    (``tf.data.TFRecordDataset`` reads TFRecords the same way).
    """
    indices = tf.data.Dataset.from_tensor_slices(
        (tf.range(len(paths), dtype=tf.int32), tf.constant(list(paths)))
    )

    def one_file(index: Any, path: Any) -> tf.data.Dataset:
        records = reader(path, compression_type=compression_type)
        return records.enumerate(start=1).map(lambda number, record: (index, number, record))

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
    :func:`check_raw_files` finds them in the files.)
    """
    return {
        "bom": _starts_with_bom(raw),
        "nul": _holds_nul(raw),
    }


def _holds_nul(raw: Any) -> Any:
    # A literal split works on bytes (RE2 matches nothing in a line that is not valid UTF-8).
    parts = tf.strings.split(tf.reshape(raw, [-1]), sep="\x00").row_lengths()
    return tf.reshape(parts > 1, tf.shape(raw))


def line_flaw_message(record: bytes) -> str | None:
    """Why a raw line is refused by the policy (``None`` if it is not)."""
    if b"\x00" in record:
        return (
            "the line holds a NUL byte: a binary file, or UTF-16 text? texkit reads UTF-8 text "
            "(convert the file, e.g. with iconv -f UTF-16 -t UTF-8)"
        )
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
