"""What a dataset's scan at construction found: per-field counts of bad input, and the scan.

:class:`~texkit.data.DataBase` reads its whole input once when it is made, in vectorized chunks:
every field's records are checked against the bad-input policy (:mod:`texkit.data.sources`),
problems and skipped records are counted, the first error stops construction naming the file and
line, and aligned fields must have as many records. The result is an :class:`InputReport`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from texkit.data.fields import Field

__all__ = ["FieldReport", "InputReport"]

_NO_ERROR = 2**62
# Records checked and processed per vectorized call, at most.
_CHUNK = 1024
# Bytes of raw records per vectorized call, at most: the checks hold a few copies of a chunk at
# once, so lines of a megabyte are checked 16 at a time (lines of 16 KiB or less, 1,024).
_CHUNK_BYTES = 16 << 20


def chunk_size(longest: int) -> int:
    """Records per vectorized call when the longest record has ``longest`` bytes.

    The same records come out whatever the chunk size: the checks are per record."""
    return max(1, min(_CHUNK, _CHUNK_BYTES // max(longest, 1)))


@dataclasses.dataclass(frozen=True)
class FieldReport:
    """What the scan found in one field's input.

    Attributes:
        field: the field's name (``"text"``, ``"source"``, a ``data_name``).
        sources: the files (or ``tfds:name[split]``) it read.
        records: records (lines) read.
        counts: ``{problem: number of records}``, e.g. ``{"invalid_utf8": 2, "empty": 1}``.
        actions: ``{problem: what was done}``, e.g. ``{"invalid_utf8": "replaced"}``.
    """

    field: str
    sources: tuple[str, ...]
    records: int
    counts: Mapping[str, int]
    actions: Mapping[str, str]

    def __str__(self) -> str:
        problems = [
            f"{count} {problem.replace('_', ' ')} ({self.actions[problem]})"
            for problem, count in self.counts.items()
            if count
        ]
        where = ", ".join(self.sources)
        return f"{self.field}: {self.records} records from {where}" + (
            "; " + "; ".join(problems) if problems else ""
        )


@dataclasses.dataclass(frozen=True)
class InputReport:
    """The scan of a dataset's input: per field counts, and the examples of one epoch.

    Attributes:
        fields: one :class:`FieldReport` per field.
        examples: examples in one epoch (before sharding), after skipping.
        skipped: examples dropped by the bad-input policy.
    """

    fields: tuple[FieldReport, ...]
    examples: int
    skipped: int

    @property
    def clean(self) -> bool:
        """Whether nothing was skipped or repaired."""
        return not self.skipped and not any(any(f.counts.values()) for f in self.fields)

    def __str__(self) -> str:
        lines = [f"{self.examples} examples, {self.skipped} skipped"]
        lines += [f"  {field}" for field in self.fields]
        return "\n".join(lines)


def _scan_field(
    field: Field, dataset: tf.data.Dataset, parallel: int, chunk: int
) -> tuple[Any, ...]:
    """``field``'s counts by problem, its skipped and read records, and its first error."""
    problems = list(field.actions())

    def flags(index: Any, number: Any, raw: Any) -> tuple[Any, ...]:
        _, found, skip, error = field.check(raw)
        counts = [tf.reduce_sum(tf.cast(found[problem], tf.int64)) for problem in problems]
        counts += [tf.reduce_sum(tf.cast(skip, tf.int64)), tf.size(raw, out_type=tf.int64)]
        first = tf.argmax(tf.cast(error, tf.int32), output_type=tf.int32)
        where = tf.stack([tf.cast(index[first], tf.int64), tf.cast(number[first], tf.int64)])
        text = raw[first] if raw.dtype == tf.string else tf.strings.as_string(raw[first])
        return tf.stack(counts), tf.reduce_any(error), where, text

    def add(state: Any, item: Any) -> Any:
        counts, first, first_text = state
        new_counts, error, where, text = item
        # Records arrive in order, so the first error seen is the earliest.
        take = tf.logical_and(error, first[0] == _NO_ERROR)
        return (
            counts + new_counts,
            tf.where(take, where, first),
            tf.where(take, text, first_text),
        )

    initial = (
        tf.zeros(len(problems) + 2, tf.int64),
        tf.constant([_NO_ERROR, _NO_ERROR], tf.int64),
        tf.constant(""),
    )
    chunks = dataset.batch(chunk).map(flags, num_parallel_calls=parallel)
    # The scan stops after the first chunk with an error: the rest cannot change the outcome
    # (a file of a billion bad lines fails in its first chunk, not after all of them).
    chunks = chunks.scan(False, lambda seen, item: (tf.logical_or(seen, item[1]), (seen, item)))
    chunks = chunks.take_while(lambda seen, item: tf.logical_not(seen))
    counts, first, text = chunks.reduce(initial, lambda state, element: add(state, element[1]))
    counts = counts.numpy().tolist()
    found = dict(zip(problems, counts[:-2], strict=True))
    return found, counts[-2], counts[-1], (first.numpy().tolist(), text.numpy())


def _scan_fields(
    fields: Sequence[Field],
    records: Sequence[tuple[list[str], tf.data.Dataset]],
    raw_examples: Callable[[], tf.data.Dataset],
    check: Callable[[Sequence[Any]], tuple[list[Any], Any]],
    parallel: int,
    chunk: int = _CHUNK,
) -> InputReport:
    """The :class:`InputReport` of ``fields``, each read from its entry of ``records`` (source
    names, and a dataset of ``(file index, line number, raw record)``).

    ``raw_examples`` gives the fields' raw records zipped and ``check`` the skip flags of a chunk
    of them (:meth:`DataBase._check`): only needed to count the examples skipped when more than
    one field skips some. ``chunk`` records are checked per vectorized call. Raises
    ``ValueError`` at the first error, or if the fields' record counts differ.
    """
    reports, skips, totals = [], [], []
    for field, (names, dataset) in zip(fields, records, strict=True):
        counts, skipped, num_records, (first, text) = _scan_field(field, dataset, parallel, chunk)
        if first[0] != _NO_ERROR:
            where = f"{names[first[0]]}:{first[1]}"
            raise ValueError(f"{where}: {field.error_message(text)} (hparams '{field.key}')")
        reports.append(FieldReport(field.name, tuple(names), num_records, counts, field.actions()))
        skips.append(skipped)
        totals.append(num_records)
    if len(set(totals)) > 1:
        described = "; ".join(
            f"{r.field} ({', '.join(r.sources)}): {r.records} lines" for r in reports
        )
        raise ValueError(f"aligned inputs have different numbers of lines: {described}")
    total = totals[0]
    if sum(1 for s in skips if s) <= 1:
        skipped = max(skips)
    else:
        chunks = raw_examples().batch(chunk)
        skips_of = chunks.map(lambda *raws: tf.reduce_sum(tf.cast(check(raws)[1], tf.int64)))
        skipped = int(skips_of.reduce(tf.constant(0, tf.int64), lambda a, b: a + b))
    return InputReport(tuple(reports), total - skipped, skipped)
