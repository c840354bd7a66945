"""The part every dataset shares: scanning the input, then shuffling, repeating, batching,
bucketing, sharding and prefetching it.

A dataset is made of *fields* (:mod:`texkit.data.fields`): one per aligned input (the text of
:class:`MonoTextData`; the source and target of :class:`PairedTextData`; each member of
:class:`MultiAlignedData`). A field knows how to read its raw records, check them against the
bad-input policy (:mod:`texkit.data.sources`) and turn one record into tensors.
:class:`DataBase` zips the fields, scans them once at construction (counts, errors, aligned line
counts: :mod:`texkit.data.input_report`) and builds the ``tf.data`` pipeline:

    read -> zip fields -> shard (per input pipeline) -> in chunks: check, drop skipped examples,
    process (tokenize, look up ids, truncate) -> shuffle -> repeat -> batch or bucket -> prefetch
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from typing import Any

import tensorflow as tf

from texkit.configurable import Configurable
from texkit.data import file_scan, sources
from texkit.data.batching import (
    batch,
    bucket_batch,
    bucket_sizes,
    check_batching_hparams,
    per_replica,
)
from texkit.data.fields import Field
from texkit.data.input_report import (
    _CHUNK,
    FieldReport,
    InputReport,
    _scan_fields,
    chunk_size,
)
from texkit.hparams import HParamsError, check_positive_int

__all__ = ["DataBase", "FieldReport", "InputReport"]

logger = logging.getLogger("texkit")


def _files_as_lists(hparams: Any) -> Any:
    """``hparams`` with every ``files`` that is a string made a list of it (nested dicts and
    lists of dicts included); anything else as given, for validation to judge."""
    if isinstance(hparams, dict) or hasattr(hparams, "todict"):
        plain = hparams.todict() if hasattr(hparams, "todict") else hparams
        return {
            key: [value] if key == "files" and isinstance(value, str) else _files_as_lists(value)
            for key, value in plain.items()
        }
    if isinstance(hparams, list):
        return [_files_as_lists(item) for item in hparams]
    return hparams


class DataBase(Configurable):
    """Base of texkit's datasets: common hparams and the ``tf.data`` pipeline.

    Use ``data.dataset`` (a ``tf.data.Dataset`` of dict batches), iterate over ``data``, or pass
    ``data.make_dataset`` to ``strategy.distribute_datasets_from_function``: given a
    ``tf.distribute.InputContext`` it reads its own shard of the examples and batches
    ``batch_size // num_replicas_in_sync`` per replica.
    """

    HPARAMS_DOC = {
        "num_epochs": "Passes over the data; -1 repeats forever.",
        "batch_size": "Global batch size (per replica: divided by the replicas in sync).",
        "drop_remainder": "Drop the examples that do not fill a whole global batch, so every "
        "replica of every step gets a full batch (with pad_to_max_seq_length: static shapes, as "
        "TPUs need).",
        "shuffle": "Shuffle the examples.",
        "shuffle_buffer_size": "Examples in the shuffle buffer.",
        "seed": "Shuffle seed (None: a different order each run).",
        "reshuffle_each_iteration": "A new order every epoch.",
        "bucket_boundaries": "Length boundaries of buckets: examples of similar length are "
        "batched together ([]: no bucketing).",
        "bucket_batch_sizes": "Global batch size per bucket, len(bucket_boundaries) + 1 of them "
        "([]: batch_size for every bucket).",
        "batch_tokens": "Token budget per global batch (0: off; per replica: divided by the "
        "replicas in sync, rounded down): each bucket's batch size is the budget divided by its "
        "longest length; buckets grow by 10% from 8 when bucket_boundaries is [].",
        "num_parallel_calls": "Parallel calls of the processing map (-1: tf.data.AUTOTUNE).",
        "prefetch_buffer_size": "Batches to prefetch (-1: AUTOTUNE, 0: none).",
        "source": "Where examples come from: 'files' or 'tfds' (tensorflow-datasets).",
        "tfds.name": "tensorflow-datasets name, e.g. 'wmt14_translate/de-en' (source: tfds).",
        "tfds.split": "Its split, e.g. 'train' or 'train[:10%]'.",
        "tfds.data_dir": "Where the prepared dataset is (None: tfds' default).",
        "name": "Name of the dataset.",
    }

    @classmethod
    def make_hparams(cls, hparams: Any) -> Any:
        """Validated hparams; a ``files`` given as one string (as Texar allowed) is the list of
        that one path or pattern."""
        return super().make_hparams(_files_as_lists(hparams))

    def __init__(self, hparams: Any = None):
        self._hparams = self.make_hparams(hparams)
        self._check_common_hparams()
        self._fields = self._make_fields()
        self._chunk = _CHUNK  # records per vectorized call: fewer when lines are long (_scan)
        self._report = self._scan()
        self._dataset: tf.data.Dataset | None = None
        self._shard_sizes_cache: dict[int, list[int]] = {}
        level = logging.INFO if self._report.clean else logging.WARNING
        logger.log(level, "%s: %s", self.hparams.name, self._report)

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_epochs": 1,
            "batch_size": 64,
            "drop_remainder": False,
            "shuffle": True,
            "shuffle_buffer_size": 10000,
            "seed": None,
            "reshuffle_each_iteration": True,
            "bucket_boundaries": [],
            "bucket_batch_sizes": [],
            "batch_tokens": 0,
            "num_parallel_calls": -1,
            "prefetch_buffer_size": -1,
            "source": "files",
            "tfds": {"name": "", "split": "train", "data_dir": None},
            "name": "data",
        }

    def _check_common_hparams(self) -> None:
        hp = self.hparams
        check_positive_int(hp, "batch_size", "shuffle_buffer_size")
        if hp.num_epochs == 0 or hp.num_epochs < -1:
            raise HParamsError(f"expected a positive int or -1, got {hp.num_epochs}", "num_epochs")
        if hp.seed is not None and (isinstance(hp.seed, bool) or not isinstance(hp.seed, int)):
            raise HParamsError(f"expected None or an int, got {hp.seed!r}", "seed")
        if hp.source not in ("files", "tfds"):
            raise HParamsError(f"expected 'files' or 'tfds', got {hp.source!r}", "source")
        check_batching_hparams(hp)

    # -- Subclass hooks ------------------------------------------------------------------------

    def _make_fields(self) -> list[Field]:
        raise NotImplementedError

    def _max_length(self) -> int | None:
        """The longest possible bucketing length (None: unbounded)."""
        bounds = [field.max_length for field in self._fields if field.is_sequence]
        return None if not bounds or None in bounds else max(bounds)

    # -- Reading and scanning ------------------------------------------------------------------

    def _tfds(self) -> tf.data.Dataset:
        tfds_hp = self.hparams.tfds
        return sources.tfds_examples(tfds_hp.name, tfds_hp.split, tfds_hp.data_dir, "tfds")

    def _field_records(self, numbered: bool) -> list[tuple[list[str], tf.data.Dataset]]:
        """Per field: (source names, dataset of raw records, or with ``numbered`` of
        ``(file index, line number, raw record)``)."""
        if self.hparams.source == "files":
            if numbered:  # the scan: every file's bytes are read once first
                for field in self._fields:
                    field.scan_files()
            return [
                ([file.path for file in field.scanned], field.read(numbered))
                for field in self._fields
            ]
        tfds_hp = self.hparams.tfds
        examples = self._tfds().enumerate(start=1)
        where = [f"tfds:{tfds_hp.name}[{tfds_hp.split}]"]
        records = []
        for field in self._fields:
            field.from_tfds(examples.element_spec[1])  # checks the feature exists
            if numbered:
                dataset = examples.map(lambda n, ex, f=field: (0, n, f.from_tfds(ex)))
            else:
                dataset = examples.map(lambda n, ex, f=field: f.from_tfds(ex))
            records.append((where, dataset))
        return records

    def _raw_examples(self) -> tf.data.Dataset:
        """A tuple of raw records per example, the fields zipped."""
        records = [dataset for _, dataset in self._field_records(numbered=False)]
        return tf.data.Dataset.zip(tuple(records))

    def _scan(self) -> InputReport:
        records = self._field_records(numbered=True)
        self._chunk = chunk_size(max(field.longest_record for field in self._fields))
        try:
            return _scan_fields(
                self._fields,
                records,
                self._raw_examples,
                self._check,
                self._parallel(),
                self._chunk,
            )
        except tf.errors.OpError as error:  # a file changed while it was scanned
            explained = self._explain(error)
            if explained is None:
                raise
            raise explained from None

    def _check(self, raws: Sequence[Any]) -> tuple[list[Any], Any]:
        """(clean values per field, skip) for ``[n]`` raw records of every field."""
        cleans, skip = [], tf.zeros_like(raws[0], tf.bool)
        for field, raw in zip(self._fields, raws, strict=True):
            clean, _, field_skip, _ = field.check(raw)
            cleans.append(clean)
            skip = tf.logical_or(skip, field_skip)
        return cleans, skip

    # -- The pipeline --------------------------------------------------------------------------

    @property
    def report(self) -> InputReport:
        """What the scan at construction found (counts of skipped and repaired records)."""
        return self._report

    @property
    def num_examples(self) -> int:
        """Examples in one epoch, before sharding."""
        return self._report.examples

    def _parallel(self) -> int:
        calls = self.hparams.num_parallel_calls
        return tf.data.AUTOTUNE if calls == -1 else calls

    def _check_chunk(self, raws: tuple[Any, ...], boundaries: Any) -> tuple[tuple[Any, ...], Any]:
        """The clean records kept from ``[n]`` raw records of every field, and their buckets."""
        cleans, skip = self._check(raws)
        keep = tf.logical_not(skip)
        cleans = [tf.boolean_mask(clean, keep) for clean in cleans]
        if boundaries is None:
            return tuple(cleans), tf.zeros(tf.shape(cleans[0]), tf.int64)
        lengths = [f.length(c) for f, c in zip(self._fields, cleans, strict=True) if f.is_sequence]
        if not lengths:
            raise HParamsError(
                f"{type(self).__name__} has no sequence to bucket by", "bucket_boundaries"
            )
        longest = tf.reduce_max(tf.stack(lengths), axis=0)
        bucket = tf.searchsorted(tf.constant(boundaries, tf.int32), longest, side="right")
        return tuple(cleans), tf.cast(bucket, tf.int64)

    def _process_batch(self, cleans: tuple[Any, ...], lengths: Any) -> dict[str, Any]:
        outputs: dict[str, Any] = {}
        for field, clean in zip(self._fields, cleans, strict=True):
            outputs.update(field.process(clean))
        return outputs

    def make_dataset(
        self, input_context: tf.distribute.InputContext | None = None
    ) -> tf.data.Dataset:
        """Builds the pipeline; with ``input_context``, this input pipeline's shard of it.

        Sharding is by example (every ``num_input_pipelines``-th example after the scan's
        order), so the pipelines' shards are disjoint and together hold every example: an epoch
        reads each example once across pipelines and replicas. With ``drop_remainder`` it reads
        each at most once: a pipeline drops what does not fill a batch for every replica it
        feeds and, without bucketing, every pipeline stops after as many steps as the smallest
        shard fills. When nothing was skipped, an epoch then drops ``examples % batch_size``
        examples, as one pipeline would. (With bucketing, pipelines may give different numbers
        of batches; the strategy then gives the replicas of a pipeline that has run out empty
        batches.)

        Without ``input_context`` the pipeline gives global batches; a multi-worker strategy
        given it whole shares them out by batch, not by file.
        """
        hp = self.hparams
        replicas = input_context.num_replicas_in_sync if input_context else 1
        pipelines = input_context.num_input_pipelines if input_context else 1
        batch_size = per_replica(hp.batch_size, replicas, "batch_size")
        # With drop_remainder every replica of every step gets a full batch. The strategy deals a
        # pipeline's batches out to the replicas it feeds in turn, and at the end would give the
        # last ones an empty batch (or, with static shapes, drop the full batches of an
        # incomplete step): so the pipeline drops the remainder of its replicas' whole share,
        # then splits each share into per-replica batches.
        group = max(1, replicas // pipelines) if hp.drop_remainder else 1
        bucketing = bool(hp.bucket_boundaries or hp.batch_tokens)
        boundaries, sizes = (
            bucket_sizes(hp, batch_size, replicas, self._max_length()) if bucketing else (None, [])
        )
        dataset = self._clean_records(input_context, boundaries)
        if hp.shuffle:
            dataset = dataset.shuffle(
                hp.shuffle_buffer_size,
                seed=hp.seed,
                reshuffle_each_iteration=hp.reshuffle_each_iteration,
            )
        if hp.num_epochs != 1:
            dataset = dataset.repeat(None if hp.num_epochs == -1 else hp.num_epochs)
        if bucketing:
            dataset = bucket_batch(dataset, sizes, group, hp.drop_remainder)
        else:
            dataset = batch(dataset, batch_size, group, hp.drop_remainder)
            if hp.drop_remainder and pipelines > 1 and hp.num_epochs != -1:
                # Every worker runs as many steps as the smallest shard fills, so no step
                # mixes full batches with the dummy ones the strategy gives a worker that has
                # run out (with a static batch size these are rows of zeros, not empty batches).
                steps = min(self._shard_sizes(pipelines)) * hp.num_epochs // (batch_size * group)
                dataset = dataset.take(steps * group)
        dataset = dataset.map(
            self._process_batch, num_parallel_calls=self._parallel(), deterministic=True
        )
        if hp.prefetch_buffer_size:
            size = hp.prefetch_buffer_size
            dataset = dataset.prefetch(tf.data.AUTOTUNE if size == -1 else size)
        return _shared_out_by_batch(dataset) if input_context is None else dataset

    def _clean_records(
        self, input_context: tf.distribute.InputContext | None, boundaries: Any
    ) -> tf.data.Dataset:
        """This input pipeline's shard of the clean records, one ``(record, bucket)`` at a time.

        Records are checked in vectorized chunks (the files themselves before the first chunk
        and after the last, each epoch); shuffling and batching move single clean records;
        tokenizing, id lookup and padding run on whole batches."""
        dataset = self._raw_examples()
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(
                input_context.num_input_pipelines, input_context.input_pipeline_id
            )
        dataset = file_scan.check_unchanged(
            dataset.batch(self._chunk),
            [(file, f"{field.key}.files") for field in self._fields for file in field.scanned],
        )
        dataset = dataset.map(
            lambda *raws: self._check_chunk(raws, boundaries),
            num_parallel_calls=self._parallel(),
            deterministic=True,
        )
        return dataset.unbatch()

    def _shard_sizes(self, pipelines: int) -> list[int]:
        """The examples of one epoch in each of ``pipelines`` shards (after skipping)."""
        examples = self._report.examples
        if not self._report.skipped:
            return [len(range(index, examples, pipelines)) for index in range(pipelines)]
        if pipelines not in self._shard_sizes_cache:
            # Examples were skipped: one more pass finds which shards they fell in.
            def count(start: Any, raws: tuple[Any, ...]) -> Any:
                kept = tf.logical_not(self._check(raws)[1])
                shard = (start * self._chunk + tf.range(tf.size(kept, tf.int64))) % pipelines
                return tf.math.bincount(
                    tf.boolean_mask(shard, kept), minlength=pipelines, dtype=tf.int64
                )

            chunks = self._raw_examples().batch(self._chunk).enumerate()
            counts = chunks.map(lambda start, raws: count(start, raws))
            total = counts.reduce(tf.zeros(pipelines, tf.int64), lambda a, b: a + b)
            self._shard_sizes_cache[pipelines] = [int(n) for n in total.numpy()]
        return self._shard_sizes_cache[pipelines]

    @property
    def dataset(self) -> tf.data.Dataset:
        """The whole pipeline, a ``tf.data.Dataset`` of dict batches (built once)."""
        if self._dataset is None:
            self._dataset = self.make_dataset()
        return self._dataset

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The batches of :attr:`dataset`; a file changed since the dataset was made stops the
        iteration with a ``ValueError`` naming it (see :meth:`check_files_unchanged`)."""
        iterator = iter(self.dataset)
        while True:
            try:
                batch = next(iterator)
            except StopIteration:
                return
            except tf.errors.OpError as error:
                explained = self._explain(error)
                if explained is None:
                    raise
                raise explained from None
            yield batch

    def check_files_unchanged(self) -> None:
        """Raises ``ValueError`` naming each input file whose size or modification time is no
        longer what the scan at construction found.

        The pipeline checks this itself before its first record and after its last, each epoch
        (:func:`~texkit.data.file_scan.check_unchanged`), failing with an
        ``InvalidArgumentError`` whose message names the file; iterating over the dataset
        object (``for batch in data``) gives this ``ValueError`` instead. Call it to turn an
        error raised while reading :attr:`dataset` elsewhere (e.g. in ``fit``) into one that
        names the file."""
        changed = [
            file_scan.changed_message(path, f"{field.key}.files")
            for field in self._fields
            for path in file_scan.changed_files(field.scanned)
        ]
        if changed:
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            raise ValueError(changed[0] + more)

    def _explain(self, error: tf.errors.OpError) -> ValueError | None:
        """A ``ValueError`` naming the file behind a reader's error, or ``None``."""
        try:
            self.check_files_unchanged()
        except ValueError as changed:
            return changed
        if isinstance(error, tf.errors.DataLossError):
            # The scan read every record, so a reader's error now means a file changed even
            # though its size and modification time did not.
            reason = re.sub(r"\{\{[^}]*\}\}\s*", "", error.message).split("\n")[0]
            where = "; ".join(
                f"hparams '{field.key}.files': {_some(file.path for file in field.scanned)}"
                for field in self._fields
                if field.scanned
            )
            return ValueError(
                f"{where}: a file no longer reads as the scan found it ({reason}): was it "
                "changed? Rebuild the dataset"
            )
        return None


def _some(paths: Any, shown: int = 3) -> str:
    """The first ``shown`` of ``paths``, and how many more there are."""
    paths = list(paths)
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def _shared_out_by_batch(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` set to be shared out by batch when given whole to a multi-worker strategy.

    Keras does so with a dataset of global batches, and tf.data would otherwise shard it by
    file, which cuts each field's files apart: a source line would be paired with another
    example's target when the fields' files split differently."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)
