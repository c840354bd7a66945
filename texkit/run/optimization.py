"""Optimizers from hparams: a Keras optimizer, a learning-rate schedule, clipping, accumulation.

Example::

    optimizer = tx.run.optimizer_from_hparams({
        "optimizer": {"type": "AdamW", "kwargs": {"weight_decay": 0.01, "epsilon": 1e-6}},
        "learning_rate": 5e-5,
        "learning_rate_schedule": {
            "type": "WarmupPolynomialDecay", "kwargs": {"warmup_steps": 100, "decay_steps": 1000}},
        "gradient_clip": {"mode": "global_norm", "value": 1.0},
    })

The learning rate is set once, at the top level: it is the constant rate, or the peak (initial)
rate that the schedule starts from. Clipping and accumulation map to the Keras optimizer's own
``global_clipnorm`` / ``clipnorm`` / ``clipvalue`` and ``gradient_accumulation_steps``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import keras

from texkit import registry
from texkit.errors import Problems
from texkit.hparams import HParams, HParamsError, accepted_kwargs

__all__ = ["default_optimization_hparams", "optimizer_from_hparams", "OPTIMIZATION_HPARAMS_DOC"]

_CLIP_MODES = {
    "none": None,
    "global_norm": "global_clipnorm",
    "norm": "clipnorm",
    "value": "clipvalue",
}
# Settings with a key of their own here; setting them in optimizer.kwargs is an error.
_OWN_KEYS = {
    "learning_rate": "learning_rate",
    "clipnorm": "gradient_clip",
    "clipvalue": "gradient_clip",
    "global_clipnorm": "gradient_clip",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
}

OPTIMIZATION_HPARAMS_DOC = {
    "optimizer": "The Keras optimizer ({type, kwargs}), e.g. Adam, AdamW, SGD, Adafactor, Lamb.",
    "learning_rate": "The constant learning rate, or the peak/initial rate of the schedule.",
    "learning_rate_schedule": (
        "{type, kwargs}: None for a constant rate, WarmupPolynomialDecay (BERT), "
        "InverseSquareRootDecay (Transformer), or a Keras schedule (ExponentialDecay, "
        "CosineDecay, PolynomialDecay, PiecewiseConstantDecay, ...), which gets learning_rate "
        "as its initial_learning_rate."
    ),
    "gradient_clip.mode": "'none', 'global_norm' (all gradients together), 'norm' (each "
    "gradient) or 'value' (each element).",
    "gradient_clip.value": "The clipping threshold.",
    "gradient_accumulation_steps": (
        "Apply the average gradient of this many steps at once (1: every step), as with a "
        "batch this many times larger."
    ),
    "name": "Name of the optimizer.",
}


def default_optimization_hparams() -> dict:
    """Defaults of :func:`optimizer_from_hparams`; see ``OPTIMIZATION_HPARAMS_DOC``."""
    return {
        "optimizer": {"type": "Adam", "kwargs": {}},
        "learning_rate": 0.001,
        "learning_rate_schedule": {"type": None, "kwargs": {}},
        "gradient_clip": {"mode": "none", "value": 1.0},
        "gradient_accumulation_steps": 1,
        "name": "optimizer",
    }


def _schedule(hp: HParams) -> Any:
    spec = hp.learning_rate_schedule
    if spec.type is None:
        if spec.kwargs:
            raise HParamsError(
                "kwargs given without a schedule type", "learning_rate_schedule.kwargs"
            )
        return hp.learning_rate
    schedule_class = registry.resolve(spec.type)
    if not (
        isinstance(schedule_class, type)
        and issubclass(schedule_class, keras.optimizers.schedules.LearningRateSchedule)
    ):
        raise HParamsError(
            f"{spec.type!r} is not a Keras LearningRateSchedule", "learning_rate_schedule.type"
        )
    kwargs = spec.kwargs.todict()
    accepted = accepted_kwargs(schedule_class) or set()
    for rate_arg in ("learning_rate", "initial_learning_rate"):
        if rate_arg in kwargs:
            raise HParamsError(
                "set the rate with the top-level learning_rate",
                f"learning_rate_schedule.kwargs.{rate_arg}",
            )
        if rate_arg in accepted:
            kwargs[rate_arg] = hp.learning_rate
    try:
        return schedule_class(**kwargs)
    except (TypeError, ValueError) as error:
        raise HParamsError(f"{spec.type}: {error}", "learning_rate_schedule.kwargs") from error


# More micro-batches than this per update is a typo (a 10**12 would never update).
MAX_ACCUMULATION_STEPS = 65536


def check_optimization_hparams(hp: HParams) -> None:
    """Checks the values of validated optimization hparams; errors name the key."""
    problems = Problems()
    if not math.isfinite(hp.learning_rate) or hp.learning_rate < 0:
        problems.add(f"expected a finite rate >= 0, got {hp.learning_rate}", "learning_rate")
    if hp.gradient_clip.mode not in _CLIP_MODES:
        problems.add(
            f"expected one of {sorted(_CLIP_MODES)}, got {hp.gradient_clip.mode!r}",
            "gradient_clip.mode",
        )
    value = hp.gradient_clip.value
    if value is not None and not (
        isinstance(value, (int, float)) and not isinstance(value, bool)
        and math.isfinite(value) and value > 0
    ):  # fmt: skip
        problems.add(f"expected a finite number > 0 or None, got {value!r}", "gradient_clip.value")
    steps = hp.gradient_accumulation_steps
    if not 1 <= steps <= MAX_ACCUMULATION_STEPS:
        problems.add(
            f"expected an int in [1, {MAX_ACCUMULATION_STEPS}], got {steps}",
            "gradient_accumulation_steps",
        )
    problems.raise_if_any()


def optimizer_from_hparams(hparams: Mapping | HParams | None = None) -> keras.optimizers.Optimizer:
    """A Keras optimizer built from optimization hparams (see the module docstring).

    Raises:
        HParamsError: an unknown key or type, a setting placed in ``optimizer.kwargs`` that has
            its own key here, or an out-of-range value; the error names the key.
    """
    hp = HParams(hparams, default_optimization_hparams())
    check_optimization_hparams(hp)
    optimizer_class = registry.resolve(hp.optimizer.type)
    if not (
        isinstance(optimizer_class, type)
        and issubclass(optimizer_class, keras.optimizers.Optimizer)
    ):
        raise HParamsError(f"{hp.optimizer.type!r} is not a Keras optimizer", "optimizer.type")
    kwargs = hp.optimizer.kwargs.todict()
    for key, owner in _OWN_KEYS.items():
        if key in kwargs:
            raise HParamsError(f"set this with the top-level {owner!r}", f"optimizer.kwargs.{key}")
    clip_arg = _CLIP_MODES[hp.gradient_clip.mode]
    if clip_arg is not None:
        if not hp.gradient_clip.value > 0:
            raise HParamsError(
                f"expected a threshold > 0, got {hp.gradient_clip.value}", "gradient_clip.value"
            )
        kwargs[clip_arg] = hp.gradient_clip.value
    if hp.gradient_accumulation_steps > 1:
        kwargs["gradient_accumulation_steps"] = hp.gradient_accumulation_steps
    kwargs.setdefault("name", hp.name)
    learning_rate = _schedule(hp)
    try:
        return optimizer_class(learning_rate=learning_rate, **kwargs)
    except (TypeError, ValueError) as error:
        raise HParamsError(f"{hp.optimizer.type}: {error}", "optimizer.kwargs") from error
