"""TFRecord files of ``tf.train.Example`` feature dicts: :func:`write_tfrecords` writes them and
:class:`TFRecordData` reads them, the format TPU jobs read from cloud storage.

Features are declared in hparams as ``name: [dtype, kind, shape]``:

* ``dtype``: ``int64``, ``float32`` or ``string``;
* ``kind``: ``fixed`` (every example has ``prod(shape)`` values, given ``shape``) or ``var``
  (any number of values: a 1-D tensor, padded per batch, with 0 or ``""``);
* ``shape``: the fixed shape (``[]`` for a scalar); ignored for ``var``.

With ``int64_as_int32`` (default) int64 features become int32, which TPUs prefer.

Every file is read once at construction: a missing file, a corrupted file, a record without
a declared feature or one longer than ``max_record_bytes`` (256 MiB by default) is an error naming
the file, before training starts. A file changed after that (cut short, replaced) is an error
naming it when it is next read (each epoch).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.data import file_scan
from texkit.data.data_base import DataBase
from texkit.data.fields import Field
from texkit.data.input_report import FieldReport, InputReport, chunk_size
from texkit.hparams import HParamsError

__all__ = ["TFRecordData", "write_tfrecords"]

_DTYPES = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}


def _feature(value: Any, key: str, index: int) -> tf.train.Feature:
    values = np.asarray(value).reshape(-1)
    if not values.size:
        # No list at all: parses as empty for any declared type.
        return tf.train.Feature()
    if values.dtype.kind in "biu":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64)))
    if values.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values.astype(np.float32)))
    items = values.tolist()
    if values.dtype.kind in "USO" and all(isinstance(v, str | bytes) for v in items):
        encoded = [v.encode("utf-8") if isinstance(v, str) else v for v in items]
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=encoded))
    raise TypeError(
        f"example {index}, feature {key!r}: cannot store {type(items[0]).__name__} values; "
        "expected ints, floats, strings or bytes"
    )


def write_tfrecords(
    path: str, examples: Iterable[Mapping[str, Any]], compression_type: str = ""
) -> int:
    """Writes feature dicts as ``tf.train.Example`` records; returns how many were written.

    Each value is a number, a string or bytes, or a list/array of them (flattened): ints and
    bools become ``int64_list``, floats ``float_list``, strings and bytes ``bytes_list``. The file
    is written under a temporary name and renamed at the end, so a failure never leaves a
    partial file at ``path``.

    Raises:
        TypeError: a value of another type, naming the example and feature.
    """
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    options = tf.io.TFRecordOptions(compression_type=compression_type or None)
    count = 0
    try:
        with tf.io.TFRecordWriter(temporary, options) as writer:
            for index, example in enumerate(examples):
                features = {key: _feature(value, key, index) for key, value in example.items()}
                proto = tf.train.Example(features=tf.train.Features(feature=features))
                writer.write(proto.SerializeToString())
                count += 1
        tf.io.gfile.rename(temporary, os.fspath(path), overwrite=True)
    finally:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)
    return count


def _parse_spec(features: Any, key: str) -> dict[str, tuple[str, str, list[int]]]:
    if not isinstance(features, Mapping) or not features:
        raise HParamsError("expected {name: [dtype, kind, shape]} with at least one feature", key)
    spec = {}
    for name, declared in features.items():
        where = f"{key}.{name}"
        declared = list(declared) if isinstance(declared, list | tuple) else [declared]
        if len(declared) == 2:
            declared.append([])
        if len(declared) != 3:
            raise HParamsError(f"expected [dtype, kind, shape], got {declared!r}", where)
        dtype, kind, shape = declared
        if dtype not in _DTYPES:
            raise HParamsError(f"dtype must be one of {list(_DTYPES)}, got {dtype!r}", where)
        if kind not in ("fixed", "var"):
            raise HParamsError(f"kind must be 'fixed' or 'var', got {kind!r}", where)
        if not isinstance(shape, list | tuple) or not all(
            isinstance(d, int) and d > 0 for d in shape
        ):
            raise HParamsError(f"shape must be a list of positive ints, got {shape!r}", where)
        spec[str(name)] = (dtype, kind, list(shape))
    return spec


class TFRecordField(Field):
    """The records of TFRecord files, parsed into the declared features."""

    reader = tf.data.TFRecordDataset
    reads_text = False
    limit_key = "max_record_bytes"

    def __init__(self, name: str, key: str, hparams: Any):
        super().__init__(name, key, hparams)
        self.spec = _parse_spec(hparams.features, f"{key}.features")
        length_feature = hparams.length_feature
        if length_feature and length_feature not in self.spec:
            raise HParamsError(
                f"{length_feature!r} is not a declared feature", f"{key}.length_feature"
            )
        self.is_sequence = bool(length_feature)
        self._parsing = {
            name: tf.io.FixedLenFeature(shape, _DTYPES[dtype])
            if kind == "fixed"
            else tf.io.VarLenFeature(_DTYPES[dtype])
            for name, (dtype, kind, shape) in self.spec.items()
        }

    def check(self, raw: Any) -> tuple[Any, dict[str, Any], Any, Any]:
        no = tf.zeros(tf.shape(raw), tf.bool)
        return raw, {}, no, no

    def actions(self) -> dict[str, str]:
        return {}

    def _dtype(self, dtype: str) -> Any:
        if dtype == "int64" and self.hparams.int64_as_int32:
            return tf.int32
        return _DTYPES[dtype]

    def _parse(self, clean: Any, names: Any) -> dict[str, Any]:
        return tf.io.parse_example(clean, {name: self._parsing[name] for name in names})

    def length(self, clean: Any) -> Any:
        name = self.hparams.length_feature
        value = self._parse(clean, [name])[name]
        if isinstance(value, tf.sparse.SparseTensor):
            return tf.cast(tf.RaggedTensor.from_sparse(value).row_lengths(), tf.int32)
        return tf.fill(tf.shape(clean), tf.shape(value)[1])

    def process(self, clean: Any) -> dict[str, Any]:
        parsed = self._parse(clean, self.spec)
        outputs = {}
        for name, (dtype, kind, _) in self.spec.items():
            value = parsed[name]
            if kind == "var":
                padding = "" if dtype == "string" else 0
                value = tf.sparse.to_dense(value, default_value=tf.constant(padding, value.dtype))
                value.set_shape(clean.shape[:1].concatenate([None]))
            outputs[name] = tf.cast(value, self._dtype(dtype)) if dtype == "int64" else value
        return outputs


class TFRecordData(DataBase):
    """Batches of the feature dicts stored in TFRecord files (see :func:`write_tfrecords`).

    Example::

        tx.data.write_tfrecords("train.tfrecord", ({"input_ids": ids, "label": y} for ...))
        data = tx.data.TFRecordData({"dataset": {
            "files": ["gs://bucket/train-*.tfrecord"],
            "features": {"input_ids": ["int64", "fixed", [128]], "label": ["int64", "fixed", []]},
        }, "batch_size": 32, "drop_remainder": True})
    """

    HPARAMS_DOC = {
        **DataBase.HPARAMS_DOC,
        "dataset.files": "TFRecord files (paths or glob patterns, any tf.io.gfile path); one "
        "string is a list of one.",
        "dataset.compression_type": "'', 'GZIP' or 'ZLIB'.",
        "dataset.features": "{name: [dtype, kind, shape]}: see texkit.data.tfrecord_data.",
        "dataset.int64_as_int32": "Give int64 features as int32.",
        "dataset.length_feature": "The var feature whose length buckets examples ('': none).",
        "dataset.max_record_bytes": "Most bytes in one record (256 MiB): a longer record, or "
        "one that claims more bytes than its file holds, is an error naming the file, found "
        "before TensorFlow's reader allocates it.",
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            **DataBase.default_hparams(),
            "dataset": {
                "files": [],
                "compression_type": "",
                "features": None,
                "int64_as_int32": True,
                "length_feature": "",
                "max_record_bytes": file_scan.MAX_RECORD_BYTES,
            },
            "name": "tfrecord",
        }

    def _make_fields(self) -> list[Field]:
        if self.hparams.source != "files":
            raise HParamsError("TFRecordData reads files only", "source")
        return [TFRecordField("records", "dataset", self.hparams.dataset)]

    def _scan(self) -> InputReport:
        field = self._fields[0]
        paths = field.scan_files()
        self._chunk = chunk_size(field.longest_record)
        total = 0
        for scanned in field.scanned:
            records = file_scan.read_scanned(
                [scanned], field.hparams.compression_type, field.reader, "dataset.files", True
            ).map(lambda index, number, record: record)
            # Parsing validates every record; the count is of the raw records.
            parsed = records.batch(self._chunk).map(
                lambda raw: (tf.size(raw, tf.int64), field.process(raw))
            )
            try:
                sizes = parsed.map(lambda size, _: size)
                total += int(sizes.reduce(tf.constant(0, tf.int64), lambda n, size: n + size))
            except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
                reason = re.sub(r"\{\{[^}]*\}\}\s*", "", error.message).split("\n")[0]
                raise ValueError(f"{scanned.path}: unreadable TFRecord file: {reason}") from None
        report = FieldReport(field.name, tuple(paths), total, {}, {})
        return InputReport((report,), total, 0)
