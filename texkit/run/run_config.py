"""The ``run`` section of an experiment: its defaults, documentation and checks.

Kept apart from the Trainer so that :mod:`texkit.run.experiment` (which validates whole
experiments) and :mod:`texkit.run.trainer` (which builds an experiment's Trainer) both import it
and neither imports the other's dependents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras

from texkit import registry
from texkit.hparams import HParams, HParamsError, hparams_scope

__all__ = [
    "PRECISIONS",
    "RUN_HPARAMS_DOC",
    "build_metric",
    "check_run_hparams",
    "default_run_hparams",
]

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
# Metric names that `Model.compile` resolves itself (by the loss), beyond `keras.metrics.get`.
_COMPILE_METRIC_NAMES = ("accuracy", "acc", "crossentropy", "ce")

RUN_HPARAMS_DOC = {
    "model_dir": (
        "Where checkpoints, hparams.yaml and TensorBoard logs go (a local path or a tf.io.gfile "
        "URL such as gs://...). Empty: no checkpoints and no resume."
    ),
    "train_steps": "Total optimizer steps of the run (a resumed run counts its earlier steps).",
    "checkpoint_every_steps": (
        "Save a checkpoint every this many steps; it is also the length of one Keras epoch "
        "(one progress bar)."
    ),
    "keep_checkpoints": "How many of the latest checkpoints to keep.",
    "eval_every_steps": (
        "Evaluate on the 'eval' split every this many steps (a multiple of "
        "checkpoint_every_steps); None: at every checkpoint; 0: never during training."
    ),
    "eval_steps": "Batches per evaluation; None: the whole 'eval' split.",
    "early_stopping.monitor": "The logged value to watch, e.g. 'val_loss' or 'val_accuracy'.",
    "early_stopping.patience": (
        "Stop after this many evaluations without improvement; 0 turns early stopping off."
    ),
    "early_stopping.mode": "'min', 'max', or 'auto' (from the name of the monitored value).",
    "early_stopping.min_delta": "The smallest change that counts as an improvement.",
    "loss": (
        "{type, kwargs}: a Keras loss for models that do not define compute_loss, e.g. "
        "SparseCategoricalCrossentropy with kwargs {from_logits: true}; type None: the model's own."
    ),
    "metrics": (
        "Metrics to compile: Keras metric names ('accuracy', 'sparse_categorical_accuracy', ...) "
        "or {type, kwargs} dicts naming registered metric classes."
    ),
    "precision": (
        "'float32', 'mixed_bfloat16' (TPUs, recent GPUs and CPUs) or 'mixed_float16' (GPUs; the "
        "loss is scaled dynamically)."
    ),
    "jit_compile": "Compile the train step with XLA: true, false, or None (Keras decides).",
    "steps_per_execution": (
        "Steps run per call into the compiled graph (TPUs want many); checkpoint_every_steps and "
        "train_steps must be multiples of it."
    ),
    "tensorboard": "Write TensorBoard logs to model_dir/logs.",
    "preemption": (
        "Catch SIGTERM while training (cloud VMs send it before preemption): every worker stops "
        "after the same step, ckpt-<step> is saved there, and the run ends with "
        "texkit.run.Preempted (texkit train exits 75); started again, it resumes at that step."
    ),
    "seed": "Seed of Python, NumPy, TensorFlow and Keras, set before the data and model are built.",
    "deterministic": "Turn on TensorFlow's deterministic ops (slower; for exact reproduction).",
    "verbose": (
        "0: silent; 1: a progress bar per checkpoint interval when stdout is a terminal, one "
        "line per interval when it is a file or a pipe (a log); 2: one line per interval."
    ),
    "name": "Name of these settings.",
}


def default_run_hparams() -> dict:
    """Defaults of the ``run`` section; see ``RUN_HPARAMS_DOC``."""
    return {
        "model_dir": "",
        "train_steps": 1000,
        "checkpoint_every_steps": 100,
        "keep_checkpoints": 3,
        "eval_every_steps": None,
        "eval_steps": None,
        "early_stopping": {"monitor": "val_loss", "patience": 0, "mode": "auto", "min_delta": 0.0},
        "loss": {"type": None, "kwargs": {}},
        "metrics": [],
        "precision": "float32",
        "jit_compile": None,
        "steps_per_execution": 1,
        "tensorboard": True,
        "preemption": False,
        "seed": None,
        "deterministic": False,
        "verbose": 1,
        "name": "run",
    }


def _positive_int(value: Any, path: str, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise HParamsError(f"expected an int >= {minimum}, got {value!r}", path)


def check_run_hparams(hp: HParams) -> None:
    """Checks the values of a validated ``run`` section; errors name the key (``run.<key>``)."""
    for key in ("train_steps", "checkpoint_every_steps", "keep_checkpoints", "steps_per_execution"):
        _positive_int(hp[key], f"run.{key}")
    every, spe = hp.checkpoint_every_steps, hp.steps_per_execution
    for key in ("checkpoint_every_steps", "train_steps"):
        if hp[key] % spe:
            raise HParamsError(
                f"{hp[key]} is not a multiple of steps_per_execution ({spe})", f"run.{key}"
            )
    if hp.eval_every_steps is not None:
        _positive_int(hp.eval_every_steps, "run.eval_every_steps", minimum=0)
        if hp.eval_every_steps % every:
            raise HParamsError(
                f"{hp.eval_every_steps} is not a multiple of checkpoint_every_steps ({every})",
                "run.eval_every_steps",
            )
    if hp.eval_steps is not None:
        _positive_int(hp.eval_steps, "run.eval_steps")
    if hp.seed is not None:
        _positive_int(hp.seed, "run.seed", minimum=0)
    if hp.precision not in PRECISIONS:
        raise HParamsError(f"expected one of {PRECISIONS}, got {hp.precision!r}", "run.precision")
    if hp.jit_compile is not None and not isinstance(hp.jit_compile, bool):
        raise HParamsError(
            f"expected true, false or None, got {hp.jit_compile!r}", "run.jit_compile"
        )
    if not isinstance(hp.preemption, bool):
        raise HParamsError(f"expected true or false, got {hp.preemption!r}", "run.preemption")
    if hp.verbose not in (0, 1, 2):
        raise HParamsError(f"expected 0, 1 or 2, got {hp.verbose!r}", "run.verbose")
    stopping = hp.early_stopping
    if stopping.mode not in ("auto", "min", "max"):
        raise HParamsError(
            f"expected 'auto', 'min' or 'max', got {stopping.mode!r}", "run.early_stopping.mode"
        )
    _positive_int(stopping.patience, "run.early_stopping.patience", minimum=0)
    if hp.loss.type is not None:
        loss = registry.resolve(hp.loss.type)
        if not (isinstance(loss, type) and issubclass(loss, keras.losses.Loss)):
            raise HParamsError(f"{hp.loss.type!r} is not a Keras Loss class", "run.loss.type")
    for index, metric in enumerate(hp.metrics):
        build_metric(metric, f"run.metrics.{index}")


def build_metric(spec: Any, path: str) -> Any:
    if isinstance(spec, str):
        if spec not in _COMPILE_METRIC_NAMES:
            try:
                keras.metrics.get(spec)
            except (ValueError, TypeError):
                raise HParamsError(f"Keras has no metric named {spec!r}", path) from None
        return spec
    if isinstance(spec, Mapping):
        with hparams_scope(path):
            merged = HParams(spec, {"type": None, "kwargs": {}})
        with hparams_scope(f"{path}.type"):
            metric_class = registry.resolve(merged.type) if merged.type else None
        if not (isinstance(metric_class, type) and issubclass(metric_class, keras.metrics.Metric)):
            raise HParamsError(f"{merged.type!r} is not a Keras Metric class", f"{path}.type")
        return lambda: metric_class(**merged.kwargs.todict())
    raise HParamsError(f"expected a metric name or {{type, kwargs}}, got {spec!r}", path)
