"""The Trainer's own Keras callbacks: divergence guard, checkpointing, early stopping."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import keras

from texkit.hparams import HParamsError

__all__ = ["Checkpointer", "DivergenceGuard", "EarlyStopping"]


class DivergenceGuard(keras.callbacks.Callback):
    """Stops training at the first execution whose loss is NaN or infinite."""

    def __init__(self, steps_per_execution: int):
        super().__init__()
        self.steps_per_execution = steps_per_execution
        self.epoch_start = 0
        self.step_of_epoch: Callable[[int], int] = lambda epoch: 0
        self.diverged_at: int | None = None

    def on_epoch_begin(self, epoch: int, logs: Mapping | None = None) -> None:
        self.epoch_start = self.step_of_epoch(epoch)

    def on_train_batch_end(self, batch: int, logs: Mapping | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.diverged_at = self.epoch_start + batch + 1
            self.model.stop_training = True


class Checkpointer(keras.callbacks.Callback):
    """Saves ``ckpt-<step>`` at the end of every epoch (checkpoint interval) of a healthy run,
    through ``trainer.save(step)``."""

    def __init__(self, trainer: Any, guard: DivergenceGuard):
        super().__init__()
        self.trainer = trainer
        self.guard = guard
        self.step_of_epoch: Callable[[int], int] = lambda epoch: 0

    def on_epoch_end(self, epoch: int, logs: Mapping | None = None) -> None:
        if self.guard.diverged_at is None:
            self.trainer.save(self.step_of_epoch(epoch + 1))


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
