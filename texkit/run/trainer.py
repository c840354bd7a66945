"""The Trainer: ``keras.Model.fit`` under a distribution strategy, run by hparams.

Example::

    trainer = tx.run.Trainer(build_model, data, {
        "optimization": {"optimizer": {"type": "AdamW"}, "learning_rate": 3e-4},
        "distribution": {"type": "mirrored"},
        "run": {"model_dir": "runs/demo", "train_steps": 1000, "checkpoint_every_steps": 100},
    })
    trainer.train()            # resumes from runs/demo's last checkpoint, if there is one
    trainer.evaluate("test")
    trainer.export("runs/demo/export")

The run is counted in optimizer steps. Keras' "epochs" are the intervals between checkpoints:
one ``fit`` epoch is ``checkpoint_every_steps`` steps, at whose end the model and optimizer are
saved as ``model_dir/ckpt-<step>`` (the last ``keep_checkpoints`` are kept) and, every
``eval_every_steps``, evaluated. The training data is repeated and read without reshuffling
files, so a run that restarts from step ``s`` skips the first ``s`` batches and sees exactly the
data an uninterrupted run would have seen (give the shuffle a seed). Keras'
``BackupAndRestore`` callback is not used for this: it resumes at an epoch's start but restarts
the data from its beginning, and keeps one backup instead of the last K checkpoints.

A run resumed at a step that is not a multiple of ``checkpoint_every_steps`` (after a preemption,
``run.preemption``, or with another interval) trains to the next multiple in one ``fit`` and goes
on in whole intervals in another; a ``train_steps`` that is not a multiple ends with a shorter
``fit``. Each ``fit`` reads the split from ``start_step`` again. A split given as a function of the
input context, or as texkit data (whose ``make_dataset`` builds the pipeline, this worker's shard
of it, on each call), starts its shuffles afresh each time, so the resumed run sees exactly the
batches of an uninterrupted one. A ``tf.data.Dataset`` object given as it is keeps one shuffle
state for all its iterations: after the first ``fit`` of a process, a shuffle that reshuffles each
iteration deals another order (the same examples, every step counted).

A resume starts from the newest checkpoint that can be read: a newer one whose files cannot be
(truncated, missing) is skipped with a warning naming it (see :mod:`texkit.run.checkpoints`).
``restore`` (``texkit evaluate|predict|export``) loads exactly the checkpoint asked for, or fails.

The whole resolved experiment is written to ``model_dir/hparams.yaml`` when training starts,
after the latest checkpoint (if any) was restored: a resume that fails leaves the record as it was;
``texkit evaluate|predict|export`` read it back.

(About 730 lines: the Trainer class is one object whose methods share the strategy, the model,
the checkpoint manager and the data; its settings, callbacks, checkpoint files and export live
beside it in ``run_config.py``, ``callbacks.py``, ``checkpoints.py`` and ``export.py``.)
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import keras
import tensorflow as tf

from texkit import _compat, registry
from texkit.hparams import HParams, HParamsError, hparams_scope
from texkit.run import preemption, readiness
from texkit.run.callbacks import Checkpointer, DivergenceGuard, EarlyStopping
from texkit.run.checkpoints import (
    check_checkpoint_list,
    checkpoint_step,
    remove_temporaries,
    restore_checkpoint,
    resume,
)
from texkit.run.distribution import strategy_from_hparams
from texkit.run.experiment import default_experiment_hparams, resolve_builder, validate_experiment
from texkit.run.export import check_export_path, export_saved_model
from texkit.run.optimization import optimizer_from_hparams
from texkit.run.run_config import build_metric, check_run_hparams

__all__ = ["Preempted", "Trainer", "TrainingDiverged", "WorkerLost", "checkpoint_step"]

Preempted = preemption.Preempted
WorkerLost = preemption.WorkerLost


class TrainingDiverged(FloatingPointError):
    """The loss became NaN or infinite; ``step`` is where, ``checkpoint`` the last good one."""

    def __init__(self, message: str, step: int, checkpoint: str | None):
        super().__init__(message)
        self.step = step
        self.checkpoint = checkpoint


@contextlib.contextmanager
def _dtype_policy(name: str) -> Iterator[None]:
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _task(strategy: tf.distribute.Strategy) -> tuple[bool, int]:
    """(whether this process is the chief, its task id) under ``strategy``."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True, 0
    cluster = resolver.cluster_spec().as_dict()
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    if not cluster or task_type is None:
        return True, 0
    if "chief" in cluster:
        return task_type == "chief", task_id
    return task_type == "worker" and task_id == 0, task_id


def check_writable_folder(path: str, key: str) -> None:
    """Raises :class:`HParamsError` naming ``key`` when ``path`` is not a folder texkit can
    write in: a file, a folder that cannot be created, or one without write permission
    (checked by writing and removing a small file, before any training step)."""
    if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
        raise HParamsError(f"{path!r} is a file; give a folder", key)
    try:
        tf.io.gfile.makedirs(path)
        probe = os.path.join(path, f".texkit-write-check-{uuid.uuid4().hex[:12]}")
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("ok")
        tf.io.gfile.remove(probe)
    except (tf.errors.OpError, OSError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise HParamsError(f"cannot write in {path!r}: {reason}", key) from None


class Trainer:
    """Builds a model and its optimizer under a distribution strategy and trains it with ``fit``.

    Args:
        model_fn: ``() -> keras.Model``, called inside the strategy's scope and the run's
            precision policy. The model defines its loss through ``compute_loss`` (or
            ``add_loss``), or ``run.loss`` names a Keras loss. A model's own ``compute_loss``
            returns the mean loss of the batch it is given; under several replicas the Trainer
            divides it by their number, as Keras does for the losses it computes itself (so it
            should not also return Keras' ``compute_loss`` of a compiled loss).
        data: a :class:`texkit.run.Data` or a mapping of split names (``train``, ``eval``,
            ``test``) to datasets; see :class:`texkit.run.Data` for what a split may be.
        hparams: experiment hparams (:func:`texkit.run.default_experiment_hparams`); the
            ``optimization``, ``distribution`` and ``run`` sections are used here.
        strategy: the strategy made from ``hparams.distribution`` earlier, if it had to be
            made before the data (``multi_worker`` must come before any other TensorFlow work);
            the caller then also applied ``run.seed`` already.

    Raises:
        HParamsError: any unknown key or bad value, before anything is built.
    """

    def __init__(
        self,
        model_fn: Callable[[], keras.Model],
        data: Mapping,
        hparams: Any = None,
        *,
        strategy: tf.distribute.Strategy | None = None,
    ):
        self.hparams = HParams(hparams, default_experiment_hparams())
        run = self.hparams.run
        check_run_hparams(run)
        if not isinstance(data, Mapping):
            raise TypeError(
                f"data: expected a texkit.run.Data or a mapping of splits, got {data!r}"
            )
        self.data = data
        if strategy is None:
            strategy = _strategy(self.hparams)
            _seed(self.hparams)
        self.strategy = strategy
        _check_jit_compile(run, strategy)
        self.is_chief, self._task_id = _task(self.strategy)
        self._check_steps_per_execution()
        with _dtype_policy(run.precision), self.strategy.scope():
            model = model_fn()
            if not isinstance(model, keras.Model):
                raise TypeError(f"model_fn must return a keras.Model, got {type(model).__name__}")
            self.model = model
            self._compile()
            if not model.built:
                self._build_from_data()
            model.optimizer.build(model.trainable_variables)
        if not _defines_no_loss(model) and _overrides_compute_loss(model):
            model.compute_loss = _mean_over_replicas(model.compute_loss)
        _compat.build_model_from_specs(self.model, self.strategy)
        if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            _compat.average_scalar_logs_across_workers()
        self._checkpoint = tf.train.Checkpoint(
            model=self.model, optimizer=self.model.optimizer, rng=_random_states(self.model)
        )
        self._manager = None
        if run.model_dir:
            check_checkpoint_list(self._write_dir())
            self._manager = tf.train.CheckpointManager(
                self._checkpoint, self._write_dir(), max_to_keep=run.keep_checkpoints
            )
        self.step = 0

    @classmethod
    def from_hparams(cls, hparams: Any) -> Trainer:
        """A Trainer for an experiment file's hparams: builds its data, then its model.

        Everything is validated first (:func:`texkit.run.validate_experiment`), so a typo fails
        before any data is read.
        """
        hp = validate_experiment(hparams)
        data_fn = resolve_builder(hp.data.type, "data", "data.type")
        model_builder = resolve_builder(hp.model.type, "model", "model.type")
        # Multi-worker collectives must be set up before the data touches TensorFlow.
        strategy = _strategy(hp)
        _seed(hp)  # before the data, whose shuffling draws on TensorFlow's global seed
        with _naming_the_builder(hp.data.type, "data"):
            data = data_fn(hp.data.hparams)

        def model_fn() -> keras.Model:
            with _naming_the_builder(hp.model.type, "model"):
                return model_builder(hp.model.hparams, data)

        return cls(model_fn, data, hp, strategy=strategy)

    # -- building --------------------------------------------------------------------------------

    def _check_steps_per_execution(self) -> None:
        """Several steps per execution under a collective all-reduce of several workers need
        fixed batch shapes; Keras' gradient accumulation does not run under one."""
        spe = self.hparams.run.steps_per_execution
        strategy = self.strategy
        collective = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or (
            isinstance(strategy, tf.distribute.MirroredStrategy)
            and strategy.num_replicas_in_sync > 1
        )
        accumulation = self.hparams.optimization.gradient_accumulation_steps
        if collective and accumulation > 1:
            raise HParamsError(
                f"Keras' gradient accumulation cannot run under {type(strategy).__name__} with "
                f"{strategy.num_replicas_in_sync} replicas (its update all-reduces inside a "
                "tf.cond: 'merge_call called while defining a new graph'); use 1 and a global "
                "batch that many times larger (more replicas carry it)",
                "optimization.gradient_accumulation_steps",
            )
        if spe == 1 or not collective:
            return
        # Keys assigned when tracing must come in the same order on every worker: in one process
        # (mirrored) they do; across workers only if no batch shape makes one of them retrace.
        workers = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
        for split in ("train", "eval") if workers else ():
            if split not in self.data:
                continue
            need = (
                f"{spe} steps per execution under {type(strategy).__name__} need batches of "
                "fixed shapes (drop_remainder, sequences padded to one length); use 1, or fix "
                "the shapes"
            )
            try:
                spec = readiness.replica_batch_spec(
                    _source(self.data[split], split), split, strategy
                )
            except ValueError as error:
                raise HParamsError(f"{need}: {error}", "run.steps_per_execution") from None
            for leaf in tf.nest.flatten(spec):
                if not leaf.shape.is_fully_defined():
                    raise HParamsError(
                        f"{need}: data split {split!r} has a feature of shape {leaf.shape}",
                        "run.steps_per_execution",
                    )
        _compat.trace_time_collective_keys()

    def _compile(self) -> None:
        run = self.hparams.run
        loss = None
        if run.loss.type is not None:
            loss = registry.resolve(run.loss.type)(**run.loss.kwargs.todict())
        elif _defines_no_loss(self.model):
            raise HParamsError(
                f"the model {self.model.name!r} defines no loss: override compute_loss, call "
                "add_loss, or name a Keras loss here",
                "run.loss.type",
            )
        metrics = [build_metric(spec, f"run.metrics.{i}") for i, spec in enumerate(run.metrics)]
        metrics = [m() if callable(m) else m for m in metrics]
        self.model.compile(
            optimizer=optimizer_from_hparams(self.hparams.optimization),
            loss=loss,
            metrics=metrics or None,
            jit_compile="auto" if run.jit_compile is None else run.jit_compile,
            steps_per_execution=run.steps_per_execution,
        )

    def _features_spec(self) -> Any:
        """The spec of the features of one batch of the train split (else the first split)."""
        split = "train" if "train" in self.data else next(iter(self.data), None)
        if split is None:
            raise ValueError("the data has no split to take the model's input shapes from")
        spec = _plain_dataset(self.data[split], split).element_spec
        return spec[0] if isinstance(spec, tuple) else spec

    def _build_from_data(self) -> None:
        # Zeros of the batch's shapes: reading a batch would advance the data's shuffling.
        self.model(_zeros_like_spec(self._features_spec()), training=False)

    def _write_dir(self) -> str:
        model_dir = self.hparams.run.model_dir
        if self.is_chief:
            return model_dir
        # Every worker takes part in saving; only the chief's copy is kept.
        return os.path.join(model_dir, f".worker-{self._task_id}")

    # -- checkpoints -----------------------------------------------------------------------------

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest ``ckpt-<step>`` in ``model_dir`` (None without one)."""
        model_dir = self.hparams.run.model_dir
        return tf.train.latest_checkpoint(model_dir) if model_dir else None

    def save(self, step: int) -> str | None:
        """Writes ``model_dir/ckpt-<step>`` (every worker must call it); returns its path."""
        if self._manager is None:
            return None
        try:
            path = self._manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as error:
            # A full or failing disk: TensorFlow leaves the half-written ckpt-<step>_temp folder.
            remove_temporaries(self._write_dir(), f"ckpt-{step}_temp*")
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise OSError(
                f"cannot write checkpoint {step} in {self._write_dir()!r}: {reason} (the last "
                "complete checkpoint is kept; resume from it once there is room)"
            ) from error
        if not self.is_chief:
            tf.io.gfile.rmtree(self._write_dir())
        return path

    def restore(self, checkpoint: str | None = None) -> int:
        """Loads a checkpoint (default: the latest) into the model and optimizer; returns its step.

        Raises:
            FileNotFoundError: no checkpoint was given and ``model_dir`` has none, or the given
                one does not exist.
            ValueError: the checkpoint is not a texkit ``ckpt-<step>``, is unreadable, or does not
                match the model; the message names it, and the model may not be used.
        """
        path = checkpoint or self.latest_checkpoint
        if path is None:
            raise FileNotFoundError(f"no checkpoint in {self.hparams.run.model_dir!r}")
        step = checkpoint_step(path)
        if not tf.io.gfile.exists(f"{path}.index"):
            raise FileNotFoundError(
                f"checkpoint {path!r} does not exist (expected {path}.index and its data files)"
            )
        restore_checkpoint(self._checkpoint, path)
        self.step = step
        return self.step

    def _write_record(self) -> None:
        """Writes ``model_dir/hparams.yaml`` whole or not at all (a temporary file, renamed)."""
        model_dir = self.hparams.run.model_dir
        tf.io.gfile.makedirs(model_dir)
        path = os.path.join(model_dir, "hparams.yaml")
        temporary = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
        try:
            with tf.io.gfile.GFile(temporary, "w") as f:
                f.write(self.hparams.to_yaml())
            tf.io.gfile.rename(temporary, path, overwrite=True)
        finally:
            if tf.io.gfile.exists(temporary):
                tf.io.gfile.remove(temporary)

    # -- data ------------------------------------------------------------------------------------

    def _input(self, split: str, start_step: int | None = None) -> Any:
        if split not in self.data:
            raise KeyError(f"the data has no {split!r} split; it has {sorted(self.data)}")
        source = _source(self.data[split], split)
        if isinstance(source, tf.data.Dataset):
            return source if start_step is None else source.repeat().skip(start_step)

        def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
            dataset = source(context)
            if not isinstance(dataset, tf.data.Dataset):
                raise TypeError(
                    f"data split {split!r}: the function returned {type(dataset).__name__}, "
                    "not a tf.data.Dataset"
                )
            return dataset if start_step is None else dataset.repeat().skip(start_step)

        return self.strategy.distribute_datasets_from_function(dataset_fn)

    # -- running ---------------------------------------------------------------------------------

    def train(self, callbacks: list | None = None) -> dict[str, list[float]]:
        """Trains to ``run.train_steps``, resuming from ``model_dir``'s latest checkpoint.

        Args:
            callbacks: more Keras callbacks, called after texkit's own.

        Returns:
            The Keras history (one value per checkpoint interval for each logged quantity).

        Raises:
            TrainingDiverged: the loss became NaN or infinite; the message names the step and the
                last good checkpoint, which is kept.
        """
        run = self.hparams.run
        if run.model_dir and self.is_chief:
            check_writable_folder(run.model_dir, "run.model_dir")
            # A run killed while saving leaves ckpt-<step>_temp folders: TensorFlow's, not data.
            remove_temporaries(run.model_dir, "ckpt-*_temp*")
        start, resumed_from = 0, None
        if run.model_dir:
            start, resumed_from = resume(self._checkpoint, run.model_dir)
        if resumed_from is not None:
            self.step = start
        if start and run.verbose:
            print(f"texkit: resuming from {resumed_from} (step {start})")
        interval, total = run.checkpoint_every_steps, run.train_steps
        if start % run.steps_per_execution and start < total:
            raise HParamsError(
                f"the checkpoint to resume from is at step {start}, which is not a multiple of "
                f"{run.steps_per_execution}: resume with the steps_per_execution of the run that "
                "wrote it",
                "run.steps_per_execution",
            )
        if run.model_dir and self.is_chief:
            # Only once the run can go on: a resume that fails leaves the record of the run
            # that wrote the checkpoints as it was.
            self._write_record()
        eval_every = interval if run.eval_every_steps is None else run.eval_every_steps
        evaluate = bool(eval_every) and "eval" in self.data
        guard = DivergenceGuard(run.steps_per_execution)
        own: list[keras.callbacks.Callback] = [guard, Checkpointer(self, guard)]
        with preemption.catch_sigterm() if run.preemption else contextlib.nullcontext() as flag:
            if flag is not None:
                own.append(preemption.PreemptionCheckpointer(self, flag, guard))
            counted = list(own)  # the callbacks that count steps
            if run.early_stopping.patience:
                own.append(
                    EarlyStopping(
                        monitor=run.early_stopping.monitor,
                        patience=run.early_stopping.patience,
                        mode=run.early_stopping.mode,
                        min_delta=run.early_stopping.min_delta,
                    )
                )
            if run.tensorboard and run.model_dir and self.is_chief:
                own.append(keras.callbacks.TensorBoard(os.path.join(run.model_dir, "logs")))
            try:
                history = self._fit(start, counted, own + list(callbacks or []), guard, evaluate)
            except tf.errors.OpError as error:
                lost = None
                if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
                    this_task = f"{self.strategy.cluster_resolver.task_type} {self._task_id}"
                    lost = preemption.worker_lost(error, self.latest_checkpoint, this_task)
                if lost is None:
                    self._check_data_unchanged(error)
                    raise
                raise lost from error
        if guard.diverged_at is not None:
            raise self._diverged(guard)
        return history

    def _check_data_unchanged(self, error: tf.errors.OpError) -> None:
        """Raises ``ValueError`` naming the file when ``error`` came from an input file changed
        since its texkit data was made (the pipeline's own check stops with an op error)."""
        for source in self.data.values():
            check = getattr(source, "check_files_unchanged", None)
            if callable(check):
                try:
                    check()
                except ValueError as changed:
                    raise changed from error

    def _fit(
        self,
        start: int,
        counted: list[Any],
        callbacks: list[Any],
        guard: DivergenceGuard,
        evaluate: bool,
    ) -> dict[str, list[float]]:
        """Runs ``fit`` from step ``start`` to ``run.train_steps`` in checkpoint intervals."""
        run = self.hparams.run
        interval, total = run.checkpoint_every_steps, run.train_steps
        eval_every = interval if run.eval_every_steps is None else run.eval_every_steps
        every = max(eval_every // interval, 1)
        full = total // interval * interval
        boundary = min(-(-start // interval) * interval, full)
        last = max(start, full)
        # One fit to the next checkpoint (a run preempted between two), one for the whole
        # intervals, one more for a last, shorter stretch: (begin, end, epoch length, eval every).
        pieces = [
            (start, boundary, boundary - start, every),
            (boundary, full, interval, every),
            (last, total, total - last, 1),
        ]
        history: dict[str, list[float]] = {}
        self.step = start
        for begin, end, length, validation_freq in pieces:
            if begin >= end:
                continue
            first_epoch = begin // interval

            def step_of(epoch: int, first_epoch=first_epoch, begin=begin, length=length) -> int:
                return begin + (epoch - first_epoch) * length

            for callback in counted:
                callback.step_of_epoch = step_of
            fit_history = self.model.fit(
                self._input("train", start_step=begin),
                initial_epoch=first_epoch,
                epochs=first_epoch + (end - begin) // length,
                steps_per_epoch=length,
                validation_data=self._input("eval") if evaluate else None,
                validation_steps=run.eval_steps,
                validation_freq=validation_freq,
                callbacks=callbacks,
                verbose=run.verbose,
                shuffle=False,
            )
            for key, values in fit_history.history.items():
                history.setdefault(key, []).extend(float(v) for v in values)
            self.step = begin + len(fit_history.epoch) * length
            if guard.diverged_at is not None or self.model.stop_training:
                break
        return history

    def _diverged(self, guard: DivergenceGuard) -> TrainingDiverged:
        step, spe = guard.diverged_at, guard.steps_per_execution
        where = f"at step {step}" if spe == 1 else f"between steps {step - spe + 1} and {step}"
        kept = self.latest_checkpoint
        message = (
            f"the training loss became NaN or infinite {where}; "
            + (f"the last good checkpoint is {kept}." if kept else "no checkpoint was written.")
            + " Lower the learning rate, clip gradients (optimization.gradient_clip) or check the "
            "data of that step."
        )
        return TrainingDiverged(message, step, kept)

    def check_static_shapes(self, split: str = "train") -> str:
        """Compiles the step each replica runs with XLA on ``split``'s batches, as a TPU would;
        returns its HLO. Works under every strategy (see :mod:`texkit.run.readiness`).

        TPUs need every shape known when the step compiles: global batches of a fixed size
        (``drop_remainder``) that the replicas share evenly, sequences padded to a fixed length,
        int32 (not int64) ids, no strings, only ops with an XLA kernel and no shape that depends
        on the data.

        Raises:
            ValueError: naming the feature or the op that breaks one of these.
        """
        source = _source(self.data[split], split) if split in self.data else None
        if source is None:
            raise KeyError(f"the data has no {split!r} split; it has {sorted(self.data)}")
        spec = readiness.replica_batch_spec(source, split, self.strategy)
        readiness.check_batch_spec(spec, split)
        return readiness.check_replica_step(
            self.model,
            self.strategy,
            spec,
            lambda: optimizer_from_hparams(self.hparams.optimization),
        )

    def evaluate(self, split: str = "eval", steps: int | None = None) -> dict[str, float]:
        """The model's loss and metrics on a split, as a dict."""
        results = self.model.evaluate(self._input(split), steps=steps, return_dict=True, verbose=0)
        return {key: float(value) for key, value in results.items()}

    def predict(self, split: str = "test", steps: int | None = None) -> Any:
        """The model's outputs on a split (labels, if the split has them, are ignored)."""
        return self.model.predict(self._input(split), steps=steps, verbose=0)

    def export(self, path: str, preprocessor: Any = None, overwrite: bool = False) -> str:
        """Writes a SavedModel for serving; returns ``path``.

        Its ``serve`` endpoint (also the ``serving_default`` signature) takes raw inputs, as
        ``preprocessor.serving_input_signature`` describes, when there is a preprocessor (given
        here, or the data's ``preprocessor``), and the model's own inputs otherwise.

        ``path`` must be new or empty; ``overwrite=True`` replaces a SavedModel an earlier export
        wrote there, and nothing else (see ``texkit.run.export``).

        Raises:
            FileExistsError: ``path`` is a file, or a folder that may not be replaced.
        """
        check_export_path(path, overwrite)  # before any tracing: a refusal costs nothing
        preprocessor = preprocessor or getattr(self.data, "preprocessor", None)
        model = self.model
        if preprocessor is not None:
            signature = getattr(preprocessor, "serving_input_signature", None)
            if signature is None:
                raise ValueError(
                    f"the preprocessor {preprocessor!r} has no serving_input_signature: give it "
                    "one (a tf.TensorSpec or a dict of them) to export raw-input serving"
                )
            if isinstance(preprocessor, keras.layers.Layer) and not preprocessor.built:
                preprocessor(_zeros_like_spec(signature))  # builds it, as export requires
            tracked = [model, preprocessor]

            def serve(inputs: Any) -> Any:
                return model(preprocessor(inputs), training=False)

        else:
            signature = self._model_input_signature()
            tracked = [model]

            def serve(inputs: Any) -> Any:
                return model(inputs, training=False)

        return export_saved_model(path, serve, signature, tracked, overwrite=overwrite)

    def _model_input_signature(self) -> Any:
        try:
            inputs = self.model.input  # a functional model's inputs, in their structure
        except (AttributeError, ValueError):
            inputs = None  # a subclassed model: the data's specs say what it takes
        if inputs is not None:
            return tf.nest.map_structure(
                lambda t: tf.TensorSpec(t.shape, t.dtype, name=t.name), inputs
            )
        return tf.nest.map_structure(
            lambda s: tf.TensorSpec([None, *s.shape[1:]], s.dtype, name=s.name),
            self._features_spec(),
        )


@contextlib.contextmanager
def _naming_the_builder(name: str, section: str) -> Iterator[None]:
    """A builder's own ValueError or TypeError (not an HParamsError, which names its key) says
    which builder and section it came from."""
    try:
        yield
    except HParamsError:
        raise
    except (ValueError, TypeError) as error:
        message = f"the {section} builder {name!r} failed with its {section}.hparams: {error}"
        try:
            named = type(error)(message)
        except Exception:  # noqa: BLE001 - a type that takes other arguments
            named = ValueError(message)
        raise named from error


def _zeros_like_spec(spec: Any) -> Any:
    return tf.nest.map_structure(
        lambda s: tf.zeros([1 if d is None else d for d in s.shape], s.dtype), spec
    )


def _check_jit_compile(run: HParams, strategy: tf.distribute.Strategy) -> None:
    """Refuses ``run.jit_compile: true`` where Keras' XLA step cannot run: it compiles the whole
    distributed step, and XLA compiles for one device with no cross-worker collectives."""
    if run.jit_compile is not True:
        return
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        where = "under 'multi_worker' (its collectives have no XLA kernel)"
    elif isinstance(strategy, tf.distribute.MirroredStrategy) and strategy.num_replicas_in_sync > 1:
        where = (
            f"under 'mirrored' on {strategy.num_replicas_in_sync} devices (XLA compiles a "
            "function for one device)"
        )
    else:
        return
    raise HParamsError(
        f"Keras cannot compile its distributed train step with XLA {where}: leave it None "
        "(Keras then runs the step without XLA) or false; Trainer.check_static_shapes() still "
        "compiles each replica's step with XLA, and type 'tpu' compiles the step itself",
        "run.jit_compile",
    )


def _seed(hp: HParams) -> None:
    if hp.run.seed is not None:
        keras.utils.set_random_seed(hp.run.seed)


def _strategy(hp: HParams) -> tf.distribute.Strategy:
    if hp.run.deterministic:
        tf.config.experimental.enable_op_determinism()
    with hparams_scope("distribution"):
        return strategy_from_hparams(hp.distribution)


def _random_states(model: keras.Model) -> list[Any]:
    """The states of the model's random generators (dropout's, for one), in the model's order.

    ``tf.train.Checkpoint`` does not reach them through the model, yet a resumed run must draw
    the same dropout masks as an uninterrupted one. They are saved by position, because Keras
    numbers their names per process.
    """
    tracked = {id(v) for v in model.weights}
    return [v for v in model.variables if id(v) not in tracked]


def _overrides_compute_loss(model: keras.Model) -> bool:
    compute_loss = getattr(type(model).compute_loss, "__func__", type(model).compute_loss)
    return compute_loss is not keras.Model.compute_loss


def _mean_over_replicas(compute_loss: Callable[..., Any]) -> Callable[..., Any]:
    """A model's own ``compute_loss`` (the mean loss of the batch it is given), divided by the
    number of replicas in sync, as Keras divides its own losses.

    Each replica computes the loss of its part of the global batch; the gradients of the
    replicas are then summed. Keras scales the losses it computes itself (compiled losses and
    ``add_loss``) by ``1 / replicas`` so that the sum is the global batch's mean, and unscales
    the value it logs; a model's own ``compute_loss`` made of plain ops is not scaled by Keras,
    and would otherwise give gradients, and a logged loss, ``replicas`` times too large.
    """

    @functools.wraps(compute_loss)
    def scaled(*args: Any, **kwargs: Any) -> Any:
        loss = compute_loss(*args, **kwargs)
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if loss is None or replicas == 1:
            return loss
        return loss * tf.cast(1.0 / replicas, loss.dtype)

    return scaled


def _defines_no_loss(model: keras.Model) -> bool:
    compute_loss = getattr(type(model).compute_loss, "__func__", type(model).compute_loss)
    return compute_loss is keras.Model.compute_loss and not model.losses


def _source(source: Any, split: str) -> Any:
    if not isinstance(source, tf.data.Dataset):
        # texkit data: make_dataset(input_context) reads this worker's shard, afresh each call.
        make = getattr(source, "make_dataset", None)
        source = make if callable(make) else getattr(source, "dataset", source)
    if isinstance(source, tf.data.Dataset) or callable(source):
        return source
    raise TypeError(
        f"data split {split!r}: expected a tf.data.Dataset, a function input_context -> Dataset "
        f"or texkit data (make_dataset or .dataset), got {type(source).__name__}"
    )


def _plain_dataset(source: Any, split: str) -> tf.data.Dataset:
    source = _source(source, split)
    return source if isinstance(source, tf.data.Dataset) else source(tf.distribute.InputContext())
