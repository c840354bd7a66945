"""A field: one aligned input of a dataset, and what :class:`~texkit.data.DataBase` asks of it.

The text of :class:`~texkit.data.MonoTextData`; the source and target of
:class:`~texkit.data.PairedTextData`; each member of :class:`~texkit.data.MultiAlignedData`. A
field knows how to read its raw records, check them against the bad-input policy
(:mod:`texkit.data.sources`) and turn a batch of records into tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

from texkit.data import sources
from texkit.hparams import HParamsError

__all__ = ["Field"]


class Field:
    """One aligned input of a dataset; subclasses implement the four methods below."""

    is_sequence = False  # whether it gives a length to bucket by
    max_length: int | None = None  # its longest length (None: unbounded)

    def __init__(self, name: str, key: str, hparams: Any):
        self.name, self.key, self.hparams = name, key, hparams

    reader: Any = tf.data.TextLineDataset  # reads the records of this field's files
    reads_text = True  # whether the files are lines of text (checked for stray \r)

    def paths(self) -> list[str]:
        """The files to read, patterns expanded; a missing file is an error naming it."""
        compression = self.hparams.get("compression_type", "")
        if compression not in ("", "GZIP", "ZLIB"):
            raise HParamsError(
                f"expected '', 'GZIP' or 'ZLIB', got {compression!r}",
                f"{self.key}.compression_type",
            )
        return sources.check_files(list(self.hparams.files), f"{self.key}.files")

    def read(self, paths: Sequence[str], numbered: bool) -> tf.data.Dataset:
        """The raw records of ``paths``, with ``numbered``: ``(file_index, line_number, raw)``."""
        compression = self.hparams.compression_type
        if numbered:  # the scan: what TensorFlow's readers would hide is an error here
            sources.check_raw_files(paths, compression, f"{self.key}.files", self.reads_text)
            return sources.numbered_lines(paths, compression, self.reader)
        return self.reader(list(paths), compression_type=compression)

    def from_tfds(self, example: Mapping[str, Any]) -> Any:
        """The raw value of this field in a tensorflow-datasets example."""
        feature = self.hparams.tfds_feature
        if feature not in example:
            raise ValueError(
                f"hparams '{self.key}.tfds_feature': the dataset has no feature {feature!r}; "
                f"it has {sorted(example)}"
            )
        return example[feature]

    def check(self, raw: Any) -> tuple[Any, dict[str, Any], Any, Any]:
        """``(clean values, {problem: bool}, skip, error)`` for a ``[n]`` vector of raw records
        (every part is ``[n]``)."""
        raise NotImplementedError

    def error_message(self, record: bytes) -> str:
        """Why a record :meth:`check` flagged as an error cannot be used."""
        raise NotImplementedError

    def actions(self) -> dict[str, str]:
        """``{problem: what is done}`` for each problem :meth:`check` reports."""
        raise NotImplementedError

    def length(self, clean: Any) -> Any:
        """The ``[n]`` int32 lengths of ``[n]`` clean records, for bucketing."""
        raise NotImplementedError

    def process(self, clean: Any) -> dict[str, Any]:
        """The batch of ``[batch]`` clean records: padded dense tensors keyed by output name.

        When ``clean`` has a static batch size, the outputs keep it.
        """
        raise NotImplementedError
