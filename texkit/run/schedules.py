"""Learning-rate schedules that Keras does not ship: BERT's warmup + decay, the Transformer's.

Each is a ``keras.optimizers.schedules.LearningRateSchedule`` (serializable, usable inside XLA),
registered by class name for ``learning_rate_schedule.type`` in optimization hparams. ``step`` is
the optimizer's update count, starting at 0.
"""

from __future__ import annotations

import keras
from keras import ops

from texkit import registry

__all__ = ["WarmupPolynomialDecay", "InverseSquareRootDecay"]


def _check_positive(name: str, value: float, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")


def _serializable(cls):
    keras.saving.register_keras_serializable(package="texkit")(cls)
    return registry.register(cls)


@_serializable
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's schedule: linear warmup to ``learning_rate``, then polynomial decay.

    As in the original BERT optimizer: the decayed rate is
    ``(learning_rate - end_learning_rate) * (1 - min(step, decay_steps) / decay_steps) ** power
    + end_learning_rate``, counted from step 0 (so the decay includes the warmup steps), and for
    ``step < warmup_steps`` it is replaced by ``learning_rate * step / warmup_steps``.

    Args:
        learning_rate: the peak rate, reached at the end of warmup.
        decay_steps: the step at which the rate reaches ``end_learning_rate`` (BERT: the number
            of training steps).
        warmup_steps: steps of linear warmup (0: none).
        end_learning_rate: the final rate.
        power: 1.0 is linear decay.
    """

    def __init__(
        self,
        learning_rate: float,
        decay_steps: int,
        warmup_steps: int = 0,
        end_learning_rate: float = 0.0,
        power: float = 1.0,
    ):
        _check_positive("learning_rate", learning_rate)
        _check_positive("decay_steps", decay_steps)
        _check_positive("warmup_steps", warmup_steps, allow_zero=True)
        _check_positive("end_learning_rate", end_learning_rate, allow_zero=True)
        _check_positive("power", power)
        self.learning_rate = float(learning_rate)
        self.decay_steps = int(decay_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        fraction = ops.minimum(step, float(self.decay_steps)) / float(self.decay_steps)
        decayed = (self.learning_rate - self.end_learning_rate) * ops.power(
            1.0 - fraction, self.power
        ) + self.end_learning_rate
        if self.warmup_steps == 0:
            return decayed
        warmup = self.learning_rate * step / float(self.warmup_steps)
        return ops.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self) -> dict:
        return {
            "learning_rate": self.learning_rate,
            "decay_steps": self.decay_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
        }


@_serializable
class InverseSquareRootDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The Transformer's schedule: linear warmup, then decay with the inverse square root.

    ``learning_rate * min(step / warmup_steps, sqrt(warmup_steps / step))``: it peaks at
    ``learning_rate`` at ``step == warmup_steps``. Vaswani et al.'s
    ``d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`` is this with
    ``learning_rate = (d_model * warmup_steps) ** -0.5``.
    """

    def __init__(self, learning_rate: float, warmup_steps: int):
        _check_positive("learning_rate", learning_rate)
        _check_positive("warmup_steps", warmup_steps)
        self.learning_rate = float(learning_rate)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = float(self.warmup_steps)
        decay = ops.sqrt(warmup / ops.maximum(step, 1.0))
        return self.learning_rate * ops.minimum(step / warmup, decay)

    def get_config(self) -> dict:
        return {"learning_rate": self.learning_rate, "warmup_steps": self.warmup_steps}
