"""write_tfrecords and TFRecordData on real files, checked against TensorFlow's own parsing."""

import numpy as np
import pytest
import tensorflow as tf

from texkit.data import TFRecordData, write_tfrecords
from texkit.hparams import HParamsError

FEATURES = {
    "input_ids": ["int64", "fixed", [6]],
    "label": ["int64", "fixed", []],
    "weights": ["float32", "fixed", [2, 3]],
    "tokens": ["string", "var"],
    "spans": ["int64", "var"],
}


def make_examples(count=9, seed=0):
    rng = np.random.default_rng(seed)
    examples = []
    for index in range(count):
        size = int(rng.integers(0, 5))
        examples.append(
            {
                "input_ids": np.concatenate([[index], rng.integers(0, 1000, size=5)]),
                "label": index % 3,
                "weights": rng.random((2, 3)).astype(np.float32),
                "tokens": [f"tök{i}" for i in range(size)],
                "spans": rng.integers(-5, 5, size=size),
            }
        )
    return examples


def tfrecord_data(paths, **hparams):
    dataset = {"files": paths, "features": FEATURES, **hparams.pop("dataset", {})}
    return TFRecordData({"dataset": dataset, "shuffle": False, **hparams})


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_write_then_read_equals_the_examples(tmp_path, compression):
    examples = make_examples()
    path = str(tmp_path / "train.tfrecord")
    assert write_tfrecords(path, examples, compression_type=compression) == len(examples)
    # Independent reader: TensorFlow's parser on the raw records.
    raw = tf.data.TFRecordDataset(path, compression_type=compression)
    first = tf.io.parse_single_example(
        next(iter(raw)), {"input_ids": tf.io.FixedLenFeature([6], tf.int64)}
    )
    np.testing.assert_array_equal(first["input_ids"].numpy(), examples[0]["input_ids"])

    data = tfrecord_data([path], dataset={"compression_type": compression}, batch_size=4)
    assert data.num_examples == len(examples)
    rows = []
    for batch in data.dataset.as_numpy_iterator():
        assert batch["input_ids"].dtype == np.int32 and batch["weights"].shape[1:] == (2, 3)
        for i in range(len(batch["label"])):
            rows.append({key: value[i] for key, value in batch.items()})
    assert len(rows) == len(examples)
    for row, example in zip(rows, examples, strict=True):
        np.testing.assert_array_equal(row["input_ids"], example["input_ids"])
        assert row["label"] == example["label"]
        np.testing.assert_array_equal(row["weights"], example["weights"])
        size = len(example["tokens"])
        assert [t.decode() for t in row["tokens"][:size]] == example["tokens"]
        assert all(t == b"" for t in row["tokens"][size:])
        np.testing.assert_array_equal(row["spans"][:size], example["spans"])
        assert not row["spans"][size:].any()


def test_static_shapes_and_int64(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    write_tfrecords(path, make_examples(10))
    features = {k: v for k, v in FEATURES.items() if k in ("input_ids", "label")}
    data = TFRecordData(
        {
            "dataset": {"files": [path], "features": features, "int64_as_int32": False},
            "batch_size": 4,
            "drop_remainder": True,
        }
    )
    spec = data.dataset.element_spec
    assert spec["input_ids"].shape == (4, 6) and spec["input_ids"].dtype == tf.int64
    assert spec["label"].shape == (4,)
    assert sum(1 for _ in data.dataset) == 2


def test_several_files_globs_and_sharding(tmp_path):
    examples = make_examples(12)
    for part in range(3):
        write_tfrecords(str(tmp_path / f"part-{part}.tfrecord"), examples[part * 4 : part * 4 + 4])
    data = tfrecord_data([str(tmp_path / "part-*.tfrecord")], batch_size=2)
    assert data.num_examples == 12
    assert len(data.report.fields[0].sources) == 3
    shards = []
    for index in range(2):
        context = tf.distribute.InputContext(2, index, num_replicas_in_sync=2)
        shards.append(
            [
                int(i)
                for b in data.make_dataset(context).as_numpy_iterator()
                for i in b["input_ids"][:, 0]
            ]
        )
    assert not set(shards[0]) & set(shards[1])
    assert sorted(shards[0] + shards[1]) == sorted(int(e["input_ids"][0]) for e in examples)


def test_bucketing_by_a_var_feature(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    write_tfrecords(path, make_examples(40))
    data = tfrecord_data(
        [path],
        dataset={"length_feature": "spans"},
        bucket_boundaries=[2, 4],
        batch_size=8,
    )
    for batch in data.dataset.as_numpy_iterator():
        lengths = (batch["tokens"] != b"").sum(axis=1)
        buckets = set(np.searchsorted([2, 4], lengths, side="right"))
        assert len(buckets) == 1


def test_bad_files_and_specs_are_named(tmp_path):
    path = tmp_path / "a.tfrecord"
    write_tfrecords(str(path), make_examples(20))
    broken = tmp_path / "broken.tfrecord"
    broken.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(ValueError, match=r"broken.tfrecord: unreadable TFRecord file"):
        tfrecord_data([str(path), str(broken)])
    with pytest.raises(ValueError, match=r"a.tfrecord: unreadable.*absent"):
        TFRecordData(
            {"dataset": {"files": [str(path)], "features": {"absent": ["int64", "fixed", []]}}}
        )
    with pytest.raises(FileNotFoundError, match="missing.tfrecord"):
        tfrecord_data([str(tmp_path / "missing.tfrecord")])
    for features, where in [
        ({"x": ["int32", "fixed", []]}, "dataset.features.x"),
        ({"x": ["int64", "sparse"]}, "dataset.features.x"),
        ({"x": ["int64", "fixed", [0]]}, "dataset.features.x"),
        ({}, "dataset.features"),
    ]:
        with pytest.raises(HParamsError, match=where):
            TFRecordData({"dataset": {"files": [str(path)], "features": features}})
    with pytest.raises(HParamsError, match="dataset.length_feature"):
        tfrecord_data([str(path)], dataset={"length_feature": "nope"})


def test_a_failed_write_leaves_no_file(tmp_path):
    path = tmp_path / "out.tfrecord"

    def examples():
        yield {"x": [1, 2]}
        yield {"x": [object()]}

    with pytest.raises(TypeError, match=r"example 1, feature 'x'"):
        write_tfrecords(str(path), examples())
    assert not list(tmp_path.iterdir())
