"""Input sharding under ``tf.distribute``: one epoch reads every example exactly once across input
pipelines and replicas; with ``drop_remainder`` at most once, dropping what the arithmetic says.

Every example written to disk carries an id (its line starts with a token ``id<k>``; TFRecord
and tfds examples have an ``id`` or ``label`` feature; scalar files hold the id), and the ids read
back are checked against the ids written, and against shard sizes and bucket sizes computed here
from the files. The shards are read three ways:

* in one process, through the ``tf.distribute.InputContext`` each input pipeline gets from
  ``strategy.distribute_datasets_from_function``: 1 worker with 2 replicas, 2 workers with 1,
  and 2 workers with 2 replicas each (``InputContext(2, i, num_replicas_in_sync=4)``);
* a real ``MirroredStrategy`` over the 2 logical CPUs of tests/conftest.py;
* a real ``MultiWorkerMirroredStrategy`` of 2 processes on 127.0.0.1 (tests/run/shard_job.py).
  On CPU, TensorFlow gives it one replica per worker whatever the logical devices (it mirrors a
  worker's GPUs or TPUs, else one CPU: ``_initialize_local_devices`` in TensorFlow's
  collective_all_reduce_strategy.py; shard_job.py splits the CPU in 2 and the strategy still has
  2 replicas in sync for 2 workers), so the real multi-worker run is 2 workers x 1 replica;
  2 workers x 2 replicas is read through input contexts only.
"""

import bisect
import collections
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import texkit as tx
from texkit.hparams import HParamsError

from ..background import job_result, process_job
from .cluster import worker_environments
from .shard_job import example_ids

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shard_job.py")

# (input pipelines, replicas in sync): what distribute_datasets_from_function gives a
# MirroredStrategy on 2 devices, 2 single-device workers, and 2 workers of 2 devices.
LAYOUTS = [(1, 2), (2, 2), (2, 4)]

MAX_SEQ_LENGTH = 10

BATCHINGS = {
    "batch": {},
    "buckets": {"bucket_boundaries": [4, 7]},
    "bucket_batch_sizes": {"bucket_boundaries": [5], "bucket_batch_sizes": [8, 4]},
    "batch_tokens": {"batch_tokens": 48},
}


class Corpus:
    """Examples written to disk: ``lines.txt`` holds line ``id<k> w w ...`` (1 to 7 tokens),
    with a blank line (skipped by the bad-input policy) after every ``blank_every``-th."""

    def __init__(self, folder, count, blank_every=0):
        self.ids, self.record, self.tokens = [], {}, {}
        lines = []
        for k in range(count):
            self.ids.append(k)
            self.record[k] = len(lines)
            self.tokens[k] = 1 + k % 7
            lines.append(" ".join([f"id{k}"] + ["w"] * (k % 7)))
            if blank_every and k % blank_every == blank_every - 1:
                lines.append("   ")
        self.blank_lines = len(lines) - count
        self.path = str(folder / "lines.txt")
        self.targets = str(folder / "targets.txt")
        self.vocab = str(folder / "vocab.txt")
        with open(self.path, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(self.targets, "w") as f:  # aligned, one token longer, for PairedTextData
            f.write("\n".join(line + " x" if line.strip() else line for line in lines) + "\n")
        with open(self.vocab, "w") as f:
            f.write("\n".join([f"id{k}" for k in range(count)] + ["w", "x"]) + "\n")

    def shard(self, pipelines, index):
        """The ids of shard ``index``: every ``pipelines``-th record of the file, as documented."""
        return [k for k in self.ids if self.record[k] % pipelines == index]


def _mono(corpus, pad=False, **hparams):
    return tx.data.MonoTextData(
        {
            "dataset": {
                "files": [corpus.path],
                "vocab_file": corpus.vocab,
                "max_seq_length": MAX_SEQ_LENGTH,
                "pad_to_max_seq_length": pad,
            },
            "batch_size": 8,
            "seed": 1,
            **hparams,
        }
    )


def _paired(corpus, **hparams):
    return tx.data.PairedTextData(
        {
            "source_dataset": {
                "files": [corpus.path],
                "vocab_file": corpus.vocab,
                "max_seq_length": MAX_SEQ_LENGTH,
            },
            "target_dataset": {
                "files": [corpus.targets],
                "vocab_file": corpus.vocab,
                "max_seq_length": MAX_SEQ_LENGTH,
            },
            "batch_size": 8,
            "seed": 1,
            **hparams,
        }
    )


def _length(data, corpus, k):
    """The length an example is bucketed by, from the files: its tokens plus BOS and EOS (the
    paired target: one more token, 'x')."""
    if isinstance(data, tx.data.PairedTextData):
        return corpus.tokens[k] + 1 + 2
    return corpus.tokens[k] + 2


def _contexts(pipelines, replicas):
    return [
        tf.distribute.InputContext(
            num_input_pipelines=pipelines, input_pipeline_id=index, num_replicas_in_sync=replicas
        )
        for index in range(pipelines)
    ]


def _read(data, context):
    """The ids of each batch one input pipeline gives, in order."""
    return [example_ids(batch) for batch in data.make_dataset(context).as_numpy_iterator()]


def _bucket_sizes(data, corpus, replicas):
    """{bucket: per-replica batch size} and the boundaries, from the hparams' documented
    meaning: sizes are global; a token budget is global, and a bucket's batch size is the
    per-replica budget divided by the bucket's longest length."""
    hp = data.hparams
    boundaries = list(hp.bucket_boundaries)
    buckets = range(len(boundaries) + 1)
    if hp.batch_tokens:
        longest = MAX_SEQ_LENGTH + 2  # with BOS and EOS: the longest length the data may give
        bound = 8
        while not hp.bucket_boundaries and bound < longest:
            boundaries.append(bound)  # "buckets grow by 10% from 8"
            bound = max(bound + 1, int(bound * 1.1))
        uppers = [b - 1 for b in boundaries] + [longest]
        buckets = range(len(boundaries) + 1)
        return {b: max(1, hp.batch_tokens // replicas // uppers[b]) for b in buckets}, boundaries
    if hp.bucket_batch_sizes:
        return {b: hp.bucket_batch_sizes[b] // replicas for b in buckets}, boundaries
    return {b: hp.batch_size // replicas for b in buckets}, boundaries


def _check_batch_sizes(data, corpus, context, batches):
    """Per-replica batch sizes: the global size / replicas (the last batch of a pipeline, or of a
    bucket, may be smaller); bucketed batches hold one bucket's examples."""
    replicas = context.num_replicas_in_sync
    if not (data.hparams.bucket_boundaries or data.hparams.batch_tokens):
        size = data.hparams.batch_size // replicas
        assert all(len(batch) == size for batch in batches[:-1])
        assert 0 < len(batches[-1]) <= size
        return
    sizes, boundaries = _bucket_sizes(data, corpus, replicas)
    smaller = collections.Counter()
    for batch in batches:
        lengths = [_length(data, corpus, k) for k in batch]
        buckets = {bisect.bisect_right(boundaries, n) for n in lengths}
        assert len(buckets) == 1, (batch, lengths)
        bucket = buckets.pop()
        assert 0 < len(batch) <= sizes[bucket]
        smaller[bucket] += len(batch) < sizes[bucket]
        if data.hparams.batch_tokens:
            assert len(batch) * max(lengths) <= data.hparams.batch_tokens // replicas
    assert max(smaller.values(), default=0) <= 1  # only a bucket's last batch may be smaller


# Paired data (slower to trace) in the 2 x 2 layout only: it adds alignment and bucketing by
# the longer side.
READS = [(_mono, batching, LAYOUTS) for batching in BATCHINGS] + [
    (_paired, batching, [(2, 4)]) for batching in ("buckets", "batch_tokens")
]


@pytest.mark.parametrize(
    "make, batching, layouts", READS, ids=[f"{m.__name__[1:]}-{b}" for m, b, _ in READS]
)
def test_every_example_is_read_once_per_epoch_across_pipelines(tmp_path, make, batching, layouts):
    corpus = Corpus(tmp_path, 101, blank_every=9)
    data = make(corpus, **BATCHINGS[batching])
    assert data.report.examples == len(corpus.ids)
    assert data.report.skipped == corpus.blank_lines
    for pipelines, replicas in layouts:
        read = []
        for context in _contexts(pipelines, replicas):
            batches = _read(data, context)
            ids = [k for batch in batches for k in batch]
            assert sorted(ids) == corpus.shard(pipelines, context.input_pipeline_id)
            _check_batch_sizes(data, corpus, context, batches)
            read += ids
        assert collections.Counter(read) == collections.Counter(corpus.ids), (pipelines, replicas)


def _expected_reads(data, corpus, pipelines, replicas):
    """How many examples each pipeline reads in an epoch with drop_remainder, from the files.

    A pipeline feeds ``replicas // pipelines`` replicas and drops what does not fill a batch for
    each of them (per bucket when bucketing). Without bucketing, every pipeline stops after as
    many such steps as the smallest shard fills.
    """
    local = replicas // pipelines
    shards = [corpus.shard(pipelines, index) for index in range(pipelines)]
    if data.hparams.bucket_boundaries or data.hparams.batch_tokens:
        sizes, boundaries = _bucket_sizes(data, corpus, replicas)
        reads = []
        for shard in shards:
            per_bucket = collections.Counter(
                bisect.bisect_right(boundaries, _length(data, corpus, k)) for k in shard
            )
            step = {b: sizes[b] * local for b in sizes}
            reads.append(sum(n // step[b] * step[b] for b, n in per_bucket.items()))
        return reads
    step = data.hparams.batch_size // pipelines
    steps = min(len(shard) for shard in shards) // step
    return [steps * step] * pipelines


@pytest.mark.parametrize("batching", ["batch", "buckets", "batch_tokens"])
def test_drop_remainder_reads_each_example_at_most_once_and_drops_by_the_arithmetic(
    tmp_path, batching
):
    corpus = Corpus(tmp_path, 101, blank_every=9)
    data = _mono(corpus, drop_remainder=True, **BATCHINGS[batching])
    for pipelines, replicas in LAYOUTS:
        reads, read = _expected_reads(data, corpus, pipelines, replicas), []
        for context in _contexts(pipelines, replicas):
            batches = _read(data, context)
            ids = [k for batch in batches for k in batch]
            assert set(ids) <= set(corpus.shard(pipelines, context.input_pipeline_id))
            assert len(ids) == reads[context.input_pipeline_id], (pipelines, replicas)
            if not BATCHINGS[batching]:
                assert {len(batch) for batch in batches} == {data.hparams.batch_size // replicas}
            else:
                sizes, _ = _bucket_sizes(data, corpus, replicas)
                assert {len(batch) for batch in batches} <= set(sizes.values())
            # A pipeline's batches are dealt out to its replicas in turn: a whole number of
            # steps, so no replica of the last step is left without a batch.
            assert len(batches) % (replicas // pipelines) == 0
            read += ids
        assert max(collections.Counter(read).values()) == 1


@pytest.mark.parametrize("count", [96, 101, 103, 104, 111])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_drop_remainder_without_skipped_lines_drops_examples_modulo_the_global_batch(
    tmp_path, count, layout
):
    pipelines, replicas = layout
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"{k}\n" for k in range(count)))
    data = tx.data.ScalarData(
        {
            "dataset": {"files": [str(ids)]},
            "batch_size": 8,
            "drop_remainder": True,
            "seed": 1,
        }
    )
    read = [
        k for context in _contexts(pipelines, replicas) for b in _read(data, context) for k in b
    ]
    assert max(collections.Counter(read).values()) == 1
    assert set(read) <= set(range(count))
    assert count - len(read) == count % 8


@pytest.mark.parametrize("layout", [(2, 2), (2, 4)])
def test_drop_remainder_over_several_epochs_keeps_the_pipelines_in_step(tmp_path, layout):
    pipelines, replicas = layout
    count, epochs = 101, 3
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"{k}\n" for k in range(count)))
    data = tx.data.ScalarData(
        {
            "dataset": {"files": [str(ids)]},
            "batch_size": 8,
            "drop_remainder": True,
            "num_epochs": epochs,
            "seed": 1,
        }
    )
    shards = [_read(data, context) for context in _contexts(pipelines, replicas)]
    assert len({len(batches) for batches in shards}) == 1  # as many steps on every worker
    assert all(len(batch) == 8 // replicas for batches in shards for batch in batches)
    read = [k for batches in shards for batch in batches for k in batch]
    assert max(collections.Counter(read).values()) <= epochs
    assert count * epochs - len(read) < 8 * pipelines


def test_tfrecord_shards_hold_every_record_once(tmp_path):
    count = 90
    # Three files, so sharding by record crosses file boundaries.
    for part in range(3):
        tx.data.write_tfrecords(
            str(tmp_path / f"part-{part}.tfrecord"),
            ({"id": k, "tokens": list(range(1 + k % 9))} for k in range(part * 30, part * 30 + 30)),
        )
    for batching in (
        {},
        {"bucket_boundaries": [4, 7]},
        {"bucket_boundaries": [5], "bucket_batch_sizes": [8, 4]},
    ):
        data = tx.data.TFRecordData(
            {
                "dataset": {
                    "files": [str(tmp_path / "part-*.tfrecord")],
                    "features": {"id": ["int64", "fixed", []], "tokens": ["int64", "var"]},
                    "length_feature": "tokens" if batching else "",
                },
                "batch_size": 8,
                "seed": 1,
                **batching,
            }
        )
        for pipelines, replicas in LAYOUTS:
            read = []
            for context in _contexts(pipelines, replicas):
                batches = list(data.make_dataset(context).as_numpy_iterator())
                ids = [k for batch in batches for k in example_ids(batch)]
                assert sorted(ids) == list(range(context.input_pipeline_id, count, pipelines))
                for batch in batches:
                    assert len(batch["id"]) <= 8 // replicas
                    # Every example's tokens arrive with it (padding with 0 after them).
                    for k, tokens in zip(batch["id"], batch["tokens"], strict=True):
                        assert list(tokens[: 1 + k % 9]) == list(range(1 + k % 9))
                read += ids
            assert sorted(read) == list(range(count)), (batching, pipelines, replicas)


def test_tfds_source_shards_hold_every_example_once(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    count = 60
    titles = [" ".join([f"id{k}"] + ["w"] * (k % 7)) for k in range(count)]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join([f"id{k}" for k in range(count)] + ["w"]) + "\n")

    def as_dataset(self, split, decoders=None, read_config=None, **kwargs):
        return tf.data.Dataset.from_tensor_slices(
            {
                "title": titles,
                "description": titles,
                "label": tf.range(count, dtype=tf.int64),
            }
        )

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        data = tx.data.MultiAlignedData(
            {
                "source": "tfds",
                "tfds": {"name": "ag_news_subset", "split": "train"},
                "datasets": [
                    {"data_name": "x", "vocab_file": str(vocab), "tfds_feature": "title"},
                    {"data_type": "int", "data_name": "label", "tfds_feature": "label"},
                ],
                "batch_size": 8,
                "bucket_boundaries": [5, 8],
                "seed": 1,
            }
        )
        assert data.num_examples == count
        for pipelines, replicas in LAYOUTS:
            read = []
            for context in _contexts(pipelines, replicas):
                # example_ids checks that the title's id and the label agree on every row.
                ids = [k for batch in _read(data, context) for k in batch]
                assert sorted(ids) == list(range(context.input_pipeline_id, count, pipelines))
                read += ids
            assert sorted(read) == list(range(count))


def test_batch_sizes_that_do_not_divide_among_the_replicas_are_errors_naming_the_key(tmp_path):
    corpus = Corpus(tmp_path, 20)
    four = tf.distribute.InputContext(2, 0, num_replicas_in_sync=4)
    with pytest.raises(HParamsError, match=r"'batch_size'.*10 .*4 replicas.*multiple of 4"):
        _mono(corpus, batch_size=10).make_dataset(four)
    with pytest.raises(HParamsError, match=r"'bucket_batch_sizes'.*6 .*4 replicas"):
        _mono(corpus, bucket_boundaries=[5], bucket_batch_sizes=[8, 6]).make_dataset(four)
    # Without a strategy any size goes.
    assert sum(len(b) for b in _read(_mono(corpus, batch_size=10), None)) == 20


def _mirrored_ids(strategy, data):
    """Per step, the ids each replica read, iterating the strategy's distributed dataset."""
    steps = []
    for batch in strategy.distribute_datasets_from_function(data.make_dataset):
        per_key = {key: strategy.experimental_local_results(value) for key, value in batch.items()}
        steps.append(
            [
                example_ids({key: values[r].numpy() for key, values in per_key.items()})
                for r in range(strategy.num_replicas_in_sync)
            ]
        )
    return steps


@pytest.mark.parametrize("pad", [False, True], ids=["dynamic", "static"])
def test_mirrored_strategy_reads_every_example_once_and_drops_the_global_remainder(tmp_path, pad):
    strategy = tx.run.strategy_from_hparams({"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]})
    assert strategy.num_replicas_in_sync == 2
    count = 45  # 45 = 5 * 8 + 5: a last global batch that is not full
    corpus = Corpus(tmp_path, count)
    for drop in (False, True):
        data = _mono(corpus, pad=pad, drop_remainder=drop)
        steps = _mirrored_ids(strategy, data)
        read = [k for step in steps for ids in step for k in ids]
        if not drop:
            assert collections.Counter(read) == collections.Counter(corpus.ids)
            assert all(len(ids) == 4 for step in steps[:-1] for ids in step)
        else:
            assert max(collections.Counter(read).values()) == 1
            assert count - len(read) == count % 8
            # Every replica of every step has a full batch: none is empty, none is dropped.
            assert [len(ids) for step in steps for ids in step] == [4] * (2 * (count // 8))


def _run_workers(tmp_path, runs):
    """Runs shard_job.py as the 2 workers of a MultiWorkerMirroredStrategy; their outputs."""
    processes = []
    for index, env in enumerate(worker_environments(2)):
        config = {
            "runs": runs,
            "ids_out": str(tmp_path / f"worker{index}.json"),
            "local_devices": 2,
        }
        processes.append(
            subprocess.Popen(
                [sys.executable, JOB, json.dumps(config)],
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    failed = [
        f"worker {index} (exit {process.returncode}):\n{output[-2000:]}"
        for index, (process, output) in enumerate(zip(processes, outputs, strict=True))
        if process.returncode
    ]
    assert not failed, "\n".join(failed)
    results = []
    for index in range(2):
        with open(tmp_path / f"worker{index}.json") as f:
            results.append(json.load(f))
    return results


def _two_worker_reads(tmp_path):
    """The files and runs of the test below and what its 2 workers read, as a job
    (tests/background.py)."""
    count = 47  # shards of 24 and 23: the workers' last batches differ
    corpus = Corpus(tmp_path, count)
    mono = {
        "dataset": {"files": [corpus.path], "vocab_file": corpus.vocab},
        "batch_size": 8,
        "seed": 1,
    }
    # The same examples as aligned files split at different lines (20 + 27 and 27 + 20): a
    # reader that shards by file would pair a source line with another example's target.
    lines = open(corpus.path).read().splitlines()
    for name, cut in (("source", 20), ("target", 27)):
        for part, chunk in enumerate((lines[:cut], lines[cut:])):
            (tmp_path / f"{name}{part}.txt").write_text("\n".join(chunk) + "\n")
    paired = {
        "source_dataset": {
            "files": [str(tmp_path / f"source{part}.txt") for part in range(2)],
            "vocab_file": corpus.vocab,
        },
        "target_dataset": {
            "files": [str(tmp_path / f"target{part}.txt") for part in range(2)],
            "vocab_file": corpus.vocab,
        },
        "batch_size": 8,
        "seed": 1,
    }
    runs = [
        {"data_class": "MonoTextData", "hparams": mono},
        {"data_class": "MonoTextData", "hparams": {**mono, "drop_remainder": True}},
        {"data_class": "MonoTextData", "hparams": {**mono, "bucket_boundaries": [4, 7]}},
        {"data_class": "PairedTextData", "hparams": paired},
        # Global batches, sharded by tf.data as Keras' fit does with a dataset.
        {"data_class": "PairedTextData", "hparams": paired, "global_batches": True},
    ]
    return count, corpus, runs, _run_workers(tmp_path, runs)


process_job("test_two_worker_processes_read_every_example_once", _two_worker_reads)


def test_two_worker_processes_read_every_example_once():
    count, corpus, runs, workers = job_result("test_two_worker_processes_read_every_example_once")
    assert [w["num_replicas_in_sync"] for w in workers] == [2, 2]
    for index, run in enumerate(runs):
        steps = [w["runs"][index] for w in workers]
        # The strategy keeps the workers in step.
        assert len(steps[0]) == len(steps[1]), run
        per_worker = [[k for step in s for ids in step for k in ids] for s in steps]
        if not run.get("global_batches"):
            for pipeline, ids in enumerate(per_worker):
                assert set(ids) <= set(corpus.shard(2, pipeline))
        read = per_worker[0] + per_worker[1]
        if not run["hparams"].get("drop_remainder"):
            assert collections.Counter(read) == collections.Counter(corpus.ids), run
            sizes = [len(ids) for s in steps for step in s[:-1] for ids in step]
            if run["hparams"].get("bucket_boundaries"):
                assert max(sizes) <= 4
            else:
                assert set(sizes) == {4}  # 8 / 2 replicas, but in the last step
        else:
            assert max(collections.Counter(read).values()) == 1
            assert count - len(read) == count % 8
            # Every replica of every step has a full batch of 8 / 2.
            assert all(len(ids) == 4 for s in steps for step in s for ids in step)
