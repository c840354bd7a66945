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
import zlib
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

__all__ = [
    "check_compressed_files",
    "check_files",
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
    return paths


def check_compressed_files(paths: Sequence[str], compression_type: str, key: str) -> None:
    """Reads every ``GZIP`` or ``ZLIB`` file of ``paths`` through to the end of its stream.

    Raises:
        ValueError: a file is truncated (its stream ends before its end marker) or corrupt,
            naming the file and ``key``.
    """
    if compression_type not in ("GZIP", "ZLIB"):
        return
    for path in paths:
        try:
            with tf.io.gfile.GFile(path, "rb") as raw:
                complete = _read_gzip(raw) if compression_type == "GZIP" else _read_zlib(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise ValueError(
                f"hparams '{key}': {path} is not readable {compression_type} data ({error})"
            ) from None
        if not complete:
            raise ValueError(
                f"hparams '{key}': {path} ends before the end of its {compression_type} stream: "
                "the file is truncated (TensorFlow would read it up to the cut without an error)"
            )


def _read_gzip(raw: Any) -> bool:
    try:
        with gzip.GzipFile(fileobj=raw) as stream:
            while stream.read(_CHUNK):
                pass
    except EOFError:  # "Compressed file ended before the end-of-stream marker was reached"
        return False
    return True


def _read_zlib(raw: Any) -> bool:
    stream = zlib.decompressobj()
    while chunk := raw.read(_CHUNK):
        data = chunk
        while data:  # bounded output per call: a highly compressed file never fills memory
            stream.decompress(data, _CHUNK)
            data = stream.unconsumed_tail
        if stream.eof:
            break
    return stream.eof


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
        ``(lines, invalid_utf8, empty)``: the lines without a trailing ``\\r`` and with invalid
        UTF-8 replaced by U+FFFD; whether each line had invalid UTF-8; whether it is empty or
        whitespace only.
    """
    lines = tf.strings.regex_replace(lines, "\r$", "")
    repaired = tf.strings.unicode_transcode(
        lines, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    invalid = tf.not_equal(repaired, lines)
    empty = tf.equal(tf.strings.length(tf.strings.strip(repaired)), 0)
    return repaired, invalid, empty


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
