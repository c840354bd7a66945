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
(:func:`texkit.data.file_scan.check_unchanged`). A file changed since the dataset was made
(lines appended, replaced, a TFRecord file cut at a record's end, which TensorFlow would read
without a word) stops the pipeline with an error naming it: rebuild the dataset to read the new
contents. The scan itself is :mod:`texkit.data.file_scan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from texkit import files

__all__ = [
    "NUL_MESSAGE",
    "check_files",
    "check_regular_file",
    "line_flaw_message",
    "line_flaws",
    "normalize_lines",
    "tfds_examples",
]

NUL_MESSAGE = (
    "the line holds a NUL byte: a binary file, or UTF-16 text? texkit reads UTF-8 text "
    "(convert the file, e.g. with iconv -f UTF-16 -t UTF-8)"
)


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
    :func:`~texkit.data.file_scan.check_raw_files` finds them in the files, and NULs there too
    before any line is read whole: this check serves tensorflow-datasets text.)
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
        return NUL_MESSAGE
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
