"""The Trainer's own Keras callbacks: divergence and input guards, checkpointing, early stopping.

Each callback holds its model (set by Keras), its settings, and what it acts on: the
:class:`~texkit.run.checkpoints.RunCheckpoints` that write the run's checkpoints, and the
:class:`RunProgress` that the Trainer and these callbacks share. None holds the Trainer, and the
Trainer sets no callback's state: it tells the progress which steps a ``fit`` covers
(:meth:`RunProgress.start_fit`), and the callbacks read their steps from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import keras

from texkit.hparams import HParamsError
from texkit.run.checkpoints import RunCheckpoints

__all__ = [
    "Checkpointer",
    "DivergenceGuard",
    "EarlyStopping",
    "InputGuard",
    "RunProgress",
    "StepCounting",
    "TrainingDiverged",
]


class TrainingDiverged(FloatingPointError):
    """The loss became NaN or infinite; ``step`` is where, ``checkpoint`` the last good one."""

    def __init__(self, message: str, step: int, checkpoint: str | None):
        super().__init__(message)
        self.step = step
        self.checkpoint = checkpoint

    @classmethod
    def at(cls, step: int, steps_per_execution: int, checkpoint: str | None) -> TrainingDiverged:
        """The error of a loss first seen NaN or infinite after ``step``; ``checkpoint`` is the
        last good one (``None``: none was written)."""
        spe = steps_per_execution
        where = f"at step {step}" if spe == 1 else f"between steps {step - spe + 1} and {step}"
        message = (
            f"the training loss became NaN or infinite {where}; "
            + (
                f"the last good checkpoint is {checkpoint}."
                if checkpoint
                else "no checkpoint was written."
            )
            + " Lower the learning rate, clip gradients (optimization.gradient_clip) or check the "
            "data of that step."
        )
        return cls(message, step, checkpoint)


class RunProgress:
    """Where a run is, in optimizer steps: shared by the Trainer and its callbacks.

    Keras numbers a ``fit``'s epochs and batches; the run counts optimizer steps. Before each
    ``fit`` the Trainer says which steps it covers (:meth:`start_fit`); the callbacks turn Keras'
    numbers into steps with :meth:`step_of`. ``step`` is the step the model is at as far as the
    Trainer knows (a finished ``fit``, a restored checkpoint, a preemption), ``diverged_at``
    the step after which the loss was first NaN or infinite (``None``: it never was), and
    ``ran_out_at`` the step at which the training data gave no more batches (``None``: it
    always gave them).
    """

    def __init__(self, step: int = 0):
        self.step = step
        self.diverged_at: int | None = None
        self.ran_out_at: int | None = None
        self._begin, self._first_epoch, self._length = step, 0, 0

    @property
    def epoch_length(self) -> int:
        """The steps of each epoch of the current ``fit``."""
        return self._length

    def start_fit(self, begin: int, first_epoch: int, length: int) -> None:
        """The next ``fit`` starts at step ``begin`` with epoch ``first_epoch``, each epoch
        ``length`` steps long."""
        self._begin, self._first_epoch, self._length = begin, first_epoch, length

    def step_of(self, epoch: int) -> int:
        """The step at which ``epoch`` of the current ``fit`` starts (where ``epoch - 1`` ends)."""
        return self._begin + (epoch - self._first_epoch) * self._length


class StepCounting(keras.callbacks.Callback):
    """A callback that knows at which step each train batch ends, from the :class:`RunProgress`
    it shares."""

    def __init__(self, progress: RunProgress):
        super().__init__()
        self.progress = progress
        self._epoch_start = 0

    def on_epoch_begin(self, epoch: int, logs: Mapping | None = None) -> None:
        self._epoch_start = self.progress.step_of(epoch)

    def step_after(self, batch: int) -> int:
        """The step at the end of ``batch`` (its last, with several steps per execution)."""
        return self._epoch_start + batch + 1


class DivergenceGuard(StepCounting):
    """Stops training at the first execution whose loss is NaN or infinite, and records its step
    as ``progress.diverged_at``."""

    def on_train_batch_end(self, batch: int, logs: Mapping | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.progress.diverged_at = self.step_after(batch)
            self.model.stop_training = True


class InputGuard(StepCounting):
    """Stops training at the end of an epoch that ran fewer steps than its length although
    nothing stopped it (Keras ends an epoch early when its data runs out), and records where as
    ``progress.ran_out_at``."""

    def __init__(self, progress: RunProgress):
        super().__init__(progress)
        self._steps_run = 0

    def on_epoch_begin(self, epoch: int, logs: Mapping | None = None) -> None:
        super().on_epoch_begin(epoch, logs)
        self._steps_run = 0

    def on_train_batch_end(self, batch: int, logs: Mapping | None = None) -> None:
        self._steps_run = batch + 1

    def on_epoch_end(self, epoch: int, logs: Mapping | None = None) -> None:
        if self._steps_run < self.progress.epoch_length and not self.model.stop_training:
            self.progress.ran_out_at = self.step_after(self._steps_run - 1)
            self.model.stop_training = True


class Checkpointer(keras.callbacks.Callback):
    """Saves ``ckpt-<step>`` through ``checkpoints`` at the end of every epoch (checkpoint
    interval) of a run that has neither diverged nor run out of data."""

    def __init__(self, checkpoints: RunCheckpoints, progress: RunProgress):
        super().__init__()
        self.checkpoints = checkpoints
        self.progress = progress

    def on_epoch_end(self, epoch: int, logs: Mapping | None = None) -> None:
        if self.progress.diverged_at is None and self.progress.ran_out_at is None:
            self.checkpoints.save(self.progress.step_of(epoch + 1))


class EarlyStopping(keras.callbacks.EarlyStopping):
    """Keras' EarlyStopping that waits quietly for the epochs that evaluate."""

    def _set_monitor_op(self) -> None:
        try:
            super()._set_monitor_op()
        except ValueError:
            raise HParamsError(
                f"cannot tell whether {self.monitor!r} should go up or down: set 'min' or 'max'",
                "run.early_stopping.mode",
            ) from None

    def get_monitor_value(self, logs: Mapping | None) -> Any:
        logs = logs or {}
        if self.monitor in logs:
            return logs[self.monitor]
        if any(key.startswith("val_") for key in logs) or not self.monitor.startswith("val_"):
            raise HParamsError(
                f"nothing is logged as {self.monitor!r}; logged: {sorted(logs)}",
                "run.early_stopping.monitor",
            )
        return None
