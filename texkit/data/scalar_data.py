"""Scalar datasets (:class:`ScalarData`: one number per line, e.g. labels) and
:class:`MultiAlignedData` (several aligned inputs of any kind, e.g. a text and its label).

A scalar line must hold exactly one number of the declared type (surrounding whitespace and a
``\\r`` ending are fine); anything else stops construction with an error naming the file and line:
a label is never guessed or skipped. Values from tensorflow-datasets are cast.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.data import file_scan
from texkit.data.data_base import DataBase
from texkit.data.fields import Field
from texkit.data.text_data import TEXT_FIELD_DOC, TextField, text_field_defaults
from texkit.data.vocab import Vocab
from texkit.hparams import HParamsError

__all__ = ["MultiAlignedData", "ScalarData"]

_PATTERNS = {
    "int": r"\s*[+-]?[0-9]+\s*",
    "float": r"(?i)\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?|inf|infinity|nan)\s*",
}
_DTYPES = {"int": tf.int32, "float": tf.float32}


def scalar_field_defaults() -> dict:
    """The hparams of one scalar input."""
    return {
        "files": [],
        "compression_type": "",
        "data_type": "int",
        "data_name": "data",
        "max_line_bytes": file_scan.MAX_LINE_BYTES,
        "tfds_feature": "label",
    }


SCALAR_FIELD_DOC = {
    "files": "Files with one number per line (paths or glob patterns), read in order; one "
    "string is a list of one.",
    "compression_type": "'', 'GZIP' or 'ZLIB'.",
    "data_type": "'int' (int32) or 'float' (float32).",
    "data_name": "The batch key of the values.",
    "max_line_bytes": "Most bytes in one line of the files (1 MiB): a longer line is an error "
    "naming file and line, found before the line is read whole.",
    "tfds_feature": "The feature's name when source is 'tfds'.",
}


class ScalarField(Field):
    """A scalar input: one int or float per record."""

    def __init__(self, name: str, key: str, hparams: Any):
        super().__init__(name, key, hparams)
        if hparams.data_type not in _DTYPES:
            raise HParamsError(
                f"expected 'int' or 'float', got {hparams.data_type!r}", f"{key}.data_type"
            )
        if not hparams.data_name:
            raise HParamsError("a non-empty name is required", f"{key}.data_name")
        self.dtype = _DTYPES[hparams.data_type]

    def check(self, raw: Any) -> tuple[Any, dict[str, Any], Any, Any]:
        if raw.dtype != tf.string:
            no = tf.zeros(tf.shape(raw), tf.bool)
            return tf.cast(raw, self.dtype), {}, no, no
        valid = tf.strings.regex_full_match(raw, _PATTERNS[self.hparams.data_type])
        text = tf.strings.strip(tf.where(valid, raw, "0"))
        if self.dtype == tf.int32:
            # At most 18 digits (leading zeros aside) fit int64: longer ones are out of range
            # before they are parsed (parsing them would fail naming neither file nor line).
            fits = tf.strings.regex_full_match(text, r"[+-]?0*[0-9]{1,18}")
            valid = tf.logical_and(valid, fits)
            text = tf.where(fits, text, "0")
            wide = tf.strings.to_number(text, tf.int64)
            in_range = tf.logical_and(wide >= -(2**31), wide < 2**31)  # int32's range
            valid = tf.logical_and(valid, in_range)
            value = tf.cast(tf.where(valid, wide, 0), tf.int32)
        else:
            # Parsed in float64, so a number beyond float32's range is an error, not a silent
            # inf; "inf" and "nan" written as such are values.
            wide = tf.strings.to_number(text, tf.float64)
            spelled = tf.strings.regex_full_match(tf.strings.lower(text), r"[+-]?inf(inity)?")
            overflow = tf.logical_and(tf.abs(wide) > tf.float32.max, tf.logical_not(spelled))
            valid = tf.logical_and(valid, tf.logical_not(overflow))
            value = tf.cast(tf.where(valid, wide, 0.0), tf.float32)
        return value, {}, tf.zeros_like(valid), tf.logical_not(valid)

    def error_message(self, record: bytes) -> str:
        kind = {"int": "an int32", "float": "a float32"}[self.hparams.data_type]
        return f"{record.decode('utf-8', 'replace')!r} is not {kind} value"

    def actions(self) -> dict[str, str]:
        return {}

    def process(self, clean: Any) -> dict[str, Any]:
        return {self.hparams.data_name: clean}


class ScalarData(DataBase):
    """Numbers, one per line (e.g. class labels), as batches ``{data_name: [batch]}``.

    Example::

        labels = tx.data.ScalarData({"dataset": {"files": ["train.labels"]}, "shuffle": False})
    """

    HPARAMS_DOC = {
        **DataBase.HPARAMS_DOC,
        **{f"dataset.{key}": doc for key, doc in SCALAR_FIELD_DOC.items()},
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {**DataBase.default_hparams(), "dataset": scalar_field_defaults(), "name": "scalar"}

    def _make_fields(self) -> list[Field]:
        return [ScalarField(self.hparams.dataset.data_name, "dataset", self.hparams.dataset)]


class MultiAlignedData(DataBase):
    """Several aligned inputs, text or scalar: line ``i`` of every file is one example.

    Each entry of ``datasets`` is one input with a ``data_type`` (``text``, ``int`` or
    ``float``) and a unique ``data_name``. Text inputs give ``{data_name}_text``,
    ``{data_name}_text_ids`` and ``{data_name}_length``; scalar inputs give ``{data_name}``.
    An example skipped in one input is skipped in all; line counts must agree. Bucketing uses the
    longest text input.

    Example (a sentence classifier's data)::

        data = tx.data.MultiAlignedData({
            "datasets": [
                {"files": ["train.txt"], "vocab_file": "vocab.txt", "data_name": "x"},
                {"files": ["train.labels"], "data_type": "int", "data_name": "y"},
            ],
            "batch_size": 32,
        })
        # batches: x_text, x_text_ids, x_length, y
    """

    HPARAMS_DOC = {
        **DataBase.HPARAMS_DOC,
        **{f"datasets.{key}": doc for key, doc in TEXT_FIELD_DOC.items()},
        "datasets.data_type": "'text', 'int' or 'float'.",
        "datasets.data_name": "Unique name of the input: the prefix of its batch keys.",
        "datasets.vocab_share_with": "Index of an earlier text input whose vocabulary this one "
        "uses (-1: its own vocab_file).",
        "datasets.tfds_feature": "The feature's name when source is 'tfds'.",
    }

    @classmethod
    def default_hparams(cls) -> dict:
        template = {
            **text_field_defaults(tfds_feature=""),
            "data_type": "text",
            "data_name": "",
            "vocab_share_with": -1,
        }
        return {**DataBase.default_hparams(), "datasets": [template], "name": "multi_aligned"}

    def _make_fields(self) -> list[Field]:
        fields: list[Field] = []
        names: set[str] = set()
        vocabs: dict[int, Vocab] = {}
        if not self.hparams.datasets:
            raise HParamsError("at least one input is required", "datasets")
        for index, hp in enumerate(self.hparams.datasets):
            key = f"datasets.{index}"
            if not hp.data_name or hp.data_name in names:
                raise HParamsError(
                    f"expected a unique non-empty name, got {hp.data_name!r}", f"{key}.data_name"
                )
            names.add(hp.data_name)
            if hp.data_type != "text":
                fields.append(ScalarField(hp.data_name, key, hp))
                continue
            shared = hp.vocab_share_with
            if shared != -1 and shared not in vocabs:
                raise HParamsError(
                    f"{shared} is not the index of an earlier text input",
                    f"{key}.vocab_share_with",
                )
            field = TextField(
                hp.data_name, key, hp, prefix=f"{hp.data_name}_", vocab=vocabs.get(shared)
            )
            vocabs[index] = field.vocab
            fields.append(field)
        return fields

    def vocab(self, data_name: str) -> Vocab:
        """The vocabulary of the text input named ``data_name``."""
        for field in self._fields:
            if field.name == data_name and isinstance(field, TextField):
                return field.vocab
        texts = [f.name for f in self._fields if isinstance(f, TextField)]
        raise KeyError(f"no text input named {data_name!r}; the text inputs are {texts}")
