"""A field: one aligned input of a dataset, and what :class:`~texkit.data.DataBase` asks of it.

The text of :class:`~texkit.data.MonoTextData`; the source and target of
:class:`~texkit.data.PairedTextData`; each member of :class:`~texkit.data.MultiAlignedData`. A
field knows how to read its raw records, check them against the bad-input policy
(:mod:`texkit.data.sources`) and turn a batch of records into tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from texkit.data import file_scan, sources
from texkit.hparams import HParamsError, check_positive_int

__all__ = ["Field", "check_key_int"]


def check_key_int(hparams: Any, name: str, key: str, optional: bool = False) -> None:
    """:func:`~texkit.hparams.check_positive_int` for ``hparams[name]``, the error naming the
    full key (``dataset.max_line_bytes``, not ``max_line_bytes``)."""
    try:
        check_positive_int(hparams, name, optional=optional)
    except HParamsError as error:
        raise HParamsError(error.message, f"{key}.{name}") from None


class Field:
    """One aligned input of a dataset; subclasses implement the four methods below."""

    is_sequence = False  # whether it gives a length to bucket by
    max_length: int | None = None  # its longest length (None: unbounded)
    reader: Any = tf.data.TextLineDataset  # reads the records of this field's files
    reads_text = True  # whether the files are lines of text (checked for stray \r)
    limit_key = "max_line_bytes"  # the hparams key of the most bytes one record may have

    def __init__(self, name: str, key: str, hparams: Any):
        self.name, self.key, self.hparams = name, key, hparams
        self.scanned: list[file_scan.ScannedFile] = []  # the files, as the scan found them
        if self.limit_key in hparams:
            check_key_int(hparams, self.limit_key, key)

    def paths(self) -> list[str]:
        """The files to read, patterns expanded; a missing file is an error naming it."""
        compression = self.hparams.get("compression_type", "")
        if compression not in ("", "GZIP", "ZLIB"):
            raise HParamsError(
                f"expected '', 'GZIP' or 'ZLIB', got {compression!r}",
                f"{self.key}.compression_type",
            )
        return sources.check_files(list(self.hparams.files), f"{self.key}.files")

    def scan_files(self) -> list[str]:
        """Expands the patterns and reads every file's bytes once
        (:func:`~texkit.data.file_scan.check_raw_files`): what TensorFlow's readers would hide
        or read whole is an error here. Records each file's size and modification time (in
        :attr:`scanned`) for :meth:`read` to check. Returns the paths."""
        paths = self.paths()
        self.scanned = file_scan.check_raw_files(
            paths,
            self.hparams.compression_type,
            f"{self.key}.files",
            self.reads_text,
            limit=self.hparams.get(self.limit_key),
            limit_key=f"{self.key}.{self.limit_key}",
        )
        return paths

    def read(self, numbered: bool) -> tf.data.Dataset:
        """The raw records of the files :meth:`scan_files` read; with ``numbered`` (the scan):
        ``(file_index, line_number, raw)``, each file checked to be unchanged since its bytes
        were read. (The pipeline checks the files each epoch: :class:`~texkit.data.DataBase`.)"""
        return file_scan.read_scanned(
            self.scanned, self.hparams.compression_type, self.reader, f"{self.key}.files", numbered
        )

    @property
    def longest_record(self) -> int:
        """The bytes of the longest line (or record) the scan found in this field's files."""
        return max((file.longest for file in self.scanned), default=0)

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
