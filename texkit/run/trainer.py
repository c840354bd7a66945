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

The eval and test splits are read whole (or for ``run.eval_steps`` / ``steps`` batches): a split
whose length tf.data does not know is counted once, so that Keras reads exactly its batches
(:func:`~texkit.run.inputs.count_batches`). A training split that gives no batch is an error.
``run.verbose: 1`` is Keras' progress bar on a terminal and one line per interval in a log.

The whole resolved experiment is written to ``model_dir/hparams.yaml`` when training starts,
after the latest checkpoint (if any) was restored: a resume that fails leaves the record as it was;
``texkit evaluate|predict|export`` read it back.

The Trainer holds the strategy, the model, the data and the run's
:class:`~texkit.run.checkpoints.RunCheckpoints`, and runs the ``fit`` loop; the rest lives beside
it: its settings in ``run_config.py``, compiling the model in ``compiling.py``, what the strategy
allows in ``strategy_checks.py``, reading the splits in ``inputs.py``, its callbacks (which hold
the checkpoints and the :class:`~texkit.run.callbacks.RunProgress` they share with the Trainer,
never the Trainer) in ``callbacks.py`` and ``preemption.py``, and serving export in
``export.py``.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import keras
import tensorflow as tf

from texkit import _compat
from texkit.hparams import HParams, HParamsError, hparams_scope
from texkit.run import preemption, readiness
from texkit.run.callbacks import (
    Checkpointer,
    DivergenceGuard,
    EarlyStopping,
    InputGuard,
    RunProgress,
    TrainingDiverged,
)
from texkit.run.checkpoints import RunCheckpoints, checkpoint_step, write_record
from texkit.run.checkpoints import check_writable_folder as check_writable_folder
from texkit.run.compiling import compile_model, precision_policy, scale_own_loss
from texkit.run.distribution import strategy_from_hparams
from texkit.run.experiment import build_experiment, default_experiment_hparams, validate_experiment
from texkit.run.export import export_model
from texkit.run.inputs import (
    check_files_unchanged,
    count_batches,
    features_spec,
    read_split,
    split_source,
    zeros_like_spec,
)
from texkit.run.optimization import optimizer_from_hparams
from texkit.run.run_config import check_run_hparams
from texkit.run.strategy_checks import check_jit_compile, check_steps_per_execution, task_of
from texkit.utils.fit_output import EndOfDataExpected, end_of_data_expected, keras_verbose

__all__ = ["Preempted", "Trainer", "TrainingDiverged", "WorkerLost", "checkpoint_step"]

Preempted = preemption.Preempted
WorkerLost = preemption.WorkerLost


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
        check_jit_compile(run, strategy)
        self.is_chief, task_id = task_of(self.strategy)
        check_steps_per_execution(self.hparams, self.strategy, self.data)
        with precision_policy(run.precision), self.strategy.scope():
            model = model_fn()
            if not isinstance(model, keras.Model):
                raise TypeError(f"model_fn must return a keras.Model, got {type(model).__name__}")
            self.model = model
            compile_model(model, self.hparams)
            if not model.built:
                # Zeros of the batch's shapes: reading a batch would advance the data's shuffling.
                model(zeros_like_spec(features_spec(self.data)), training=False)
            model.optimizer.build(model.trainable_variables)
        scale_own_loss(model)
        _compat.build_model_from_specs(self.model, self.strategy)
        if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            _compat.average_scalar_logs_across_workers()
        self.checkpoints = RunCheckpoints(
            self.model, run.model_dir, run.keep_checkpoints, self.is_chief, task_id
        )
        self._progress = RunProgress()
        self._batch_counts: dict[tuple[str, int], int | None] = {}

    @classmethod
    def from_hparams(cls, hparams: Any) -> Trainer:
        """A Trainer for an experiment file's hparams: builds its data, then its model.

        Everything is validated first (:func:`texkit.run.validate_experiment`), so a typo fails
        before any data is read.
        """
        hp = validate_experiment(hparams)
        # Multi-worker collectives must be set up before the data touches TensorFlow.
        strategy = _strategy(hp)
        _seed(hp)  # before the data, whose shuffling draws on TensorFlow's global seed
        data, model_fn = build_experiment(hp)
        return cls(model_fn, data, hp, strategy=strategy)

    @property
    def step(self) -> int:
        """The optimizer step the model is at: where training stopped, or of the checkpoint
        restored."""
        return self._progress.step

    @step.setter
    def step(self, step: int) -> None:
        self._progress.step = step

    # -- checkpoints -----------------------------------------------------------------------------

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest ``ckpt-<step>`` in ``model_dir`` (None without one)."""
        return self.checkpoints.latest

    def save(self, step: int) -> str | None:
        """Writes ``model_dir/ckpt-<step>`` (every worker must call it); returns its path."""
        return self.checkpoints.save(step)

    def restore(self, checkpoint: str | None = None) -> int:
        """Loads a checkpoint (default: the latest) into the model and optimizer; returns its step.

        Raises:
            FileNotFoundError: no checkpoint was given and ``model_dir`` has none, or the given
                one does not exist.
            ValueError: the checkpoint is not a texkit ``ckpt-<step>``, is unreadable, or does not
                match the model; the message names it, and the model may not be used.
        """
        self.step = self.checkpoints.restore(checkpoint)
        return self.step

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
        start = self._resume()
        progress = self._progress = RunProgress(start)
        own: list[keras.callbacks.Callback] = [
            DivergenceGuard(progress),
            InputGuard(progress),
            Checkpointer(self.checkpoints, progress),
        ]
        with preemption.catch_sigterm() if run.preemption else contextlib.nullcontext() as flag:
            if flag is not None:
                own.append(
                    preemption.PreemptionCheckpointer(
                        self.checkpoints, progress, flag, self.strategy
                    )
                )
            own += self._reporting_callbacks()
            try:
                history = self._fit(start, own + list(callbacks or []))
            except tf.errors.OpError as error:
                lost = None
                if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
                    this_task = (
                        f"{self.strategy.cluster_resolver.task_type} {self.checkpoints.task_id}"
                    )
                    lost = preemption.worker_lost(error, self.latest_checkpoint, this_task)
                if lost is None:
                    check_files_unchanged(self.data, error)
                    raise
                raise lost from error
        if progress.diverged_at is not None:
            raise TrainingDiverged.at(
                progress.diverged_at, run.steps_per_execution, self.latest_checkpoint
            )
        if progress.ran_out_at is not None:
            raise ValueError(
                f"data split 'train' gave no batch after step {progress.ran_out_at}: it is "
                "read repeated, so it is empty (check its files, and filters that may drop "
                "every example); no checkpoint was written for that step"
            )
        return history

    def _resume(self) -> int:
        """Restores the newest readable checkpoint of ``model_dir`` (if any), writes the run's
        record and returns the step to start from."""
        run = self.hparams.run
        self.checkpoints.prepare("run.model_dir")
        start, resumed_from = self.checkpoints.resume()
        if resumed_from is not None:
            self.step = start
        if start and run.verbose:
            print(f"texkit: resuming from {resumed_from} (step {start})")
        if start % run.steps_per_execution and start < run.train_steps:
            raise HParamsError(
                f"the checkpoint to resume from is at step {start}, which is not a multiple of "
                f"{run.steps_per_execution}: resume with the steps_per_execution of the run that "
                "wrote it",
                "run.steps_per_execution",
            )
        if run.model_dir and self.is_chief:
            # Only once the run can go on: a resume that fails leaves the record of the run
            # that wrote the checkpoints as it was.
            write_record(run.model_dir, self.hparams.to_yaml())
        return start

    def _reporting_callbacks(self) -> list[keras.callbacks.Callback]:
        """Early stopping and TensorBoard, as ``run`` asks."""
        run = self.hparams.run
        callbacks: list[keras.callbacks.Callback] = []
        if run.early_stopping.patience:
            callbacks.append(
                EarlyStopping(
                    monitor=run.early_stopping.monitor,
                    patience=run.early_stopping.patience,
                    mode=run.early_stopping.mode,
                    min_delta=run.early_stopping.min_delta,
                )
            )
        if run.tensorboard and run.model_dir and self.is_chief:
            callbacks.append(keras.callbacks.TensorBoard(os.path.join(run.model_dir, "logs")))
        return callbacks

    def _fit(self, start: int, callbacks: list[Any]) -> dict[str, list[float]]:
        """Runs ``fit`` from step ``start`` to ``run.train_steps`` in checkpoint intervals."""
        run = self.hparams.run
        interval, total = run.checkpoint_every_steps, run.train_steps
        eval_every = interval if run.eval_every_steps is None else run.eval_every_steps
        evaluate = bool(eval_every) and "eval" in self.data
        eval_steps = self._steps("eval", run.eval_steps) if evaluate else None
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
        progress = self._progress
        for begin, end, length, validation_freq in pieces:
            if begin >= end:
                continue
            first_epoch = begin // interval
            progress.start_fit(begin, first_epoch, length)
            # The train split is repeated and read for exactly the steps asked: it runs out
            # only when empty, which InputGuard reports. The eval split is read for its counted
            # steps, or to its end where it cannot be counted: Keras' "ran out of data" says
            # nothing then.
            quiet = EndOfDataExpected(train=True, validation=eval_steps is None)
            with warnings.catch_warnings():
                fit_history = self.model.fit(
                    read_split(self.data, "train", self.strategy, start_step=begin),
                    initial_epoch=first_epoch,
                    epochs=first_epoch + (end - begin) // length,
                    steps_per_epoch=length,
                    validation_data=(
                        read_split(self.data, "eval", self.strategy) if evaluate else None
                    ),
                    validation_steps=eval_steps,
                    validation_freq=validation_freq,
                    callbacks=[*callbacks, quiet],
                    verbose=keras_verbose(run.verbose),
                    shuffle=False,
                )
            for key, values in fit_history.history.items():
                history.setdefault(key, []).extend(float(v) for v in values)
            progress.step = begin + len(fit_history.epoch) * length
            if progress.ran_out_at is not None:
                progress.step = progress.ran_out_at
                break
            if progress.diverged_at is not None or self.model.stop_training:
                break
        return history

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
        if split not in self.data:
            raise KeyError(f"the data has no {split!r} split; it has {sorted(self.data)}")
        source = split_source(self.data[split], split)
        spec = readiness.replica_batch_spec(source, split, self.strategy)
        readiness.check_batch_spec(spec, split)
        return readiness.check_replica_step(
            self.model,
            self.strategy,
            spec,
            lambda: optimizer_from_hparams(self.hparams.optimization),
        )

    def _steps(self, split: str, steps: int | None) -> int | None:
        """``steps``, else the number of batches of ``split`` (counted once, see
        :func:`~texkit.run.inputs.count_batches`; ``None``: read it to its end)."""
        if steps is not None:
            return steps
        key = (split, id(self.data.get(split)))
        if key not in self._batch_counts:
            self._batch_counts[key] = count_batches(self.data, split, self.strategy)
        return self._batch_counts[key]

    def evaluate(self, split: str = "eval", steps: int | None = None) -> dict[str, float]:
        """The model's loss and metrics on a split (all of it, or its first ``steps`` batches),
        as a dict."""
        steps = self._steps(split, steps)
        with end_of_data_expected(steps is None):
            results = self.model.evaluate(
                read_split(self.data, split, self.strategy),
                steps=steps,
                return_dict=True,
                verbose=0,
            )
        if not results:
            raise ValueError(
                f"data split {split!r} gave no batch to evaluate: a split is read more than once "
                "(it may be counted first), so it must be readable again, not a one-shot generator"
            )
        return {key: float(value) for key, value in results.items()}

    def predict(self, split: str = "test", steps: int | None = None) -> Any:
        """The model's outputs on a split (all of it, or its first ``steps`` batches; labels,
        if the split has them, are ignored)."""
        with end_of_data_expected(steps is None):
            return self.model.predict(
                read_split(self.data, split, self.strategy), steps=steps, verbose=0
            )

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
        return export_model(self.model, path, self.data, preprocessor, overwrite)


def _seed(hp: HParams) -> None:
    if hp.run.seed is not None:
        keras.utils.set_random_seed(hp.run.seed)


def _strategy(hp: HParams) -> tf.distribute.Strategy:
    if hp.run.deterministic:
        tf.config.experimental.enable_op_determinism()
    with hparams_scope("distribution"):
        return strategy_from_hparams(hp.distribution)
