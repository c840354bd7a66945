"""Compiling the Trainer's model from the ``run`` and ``optimization`` sections: its precision
policy, loss, metrics and optimizer.

The loss is a Keras loss that ``run.loss`` names, or the model's own (``compute_loss`` or
``add_loss``). A model's own ``compute_loss`` returns the mean loss of the batch it is given;
under several replicas it is divided by their number (:func:`scale_own_loss`), as Keras divides
the losses it computes itself.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import keras
import tensorflow as tf

from texkit import registry
from texkit.hparams import HParams, HParamsError
from texkit.run.optimization import optimizer_from_hparams
from texkit.run.run_config import build_metric

__all__ = ["compile_model", "precision_policy", "scale_own_loss"]


@contextlib.contextmanager
def precision_policy(name: str) -> Iterator[None]:
    """Keras' dtype policy ``name`` (``run.precision``) while the block runs."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _overrides_compute_loss(model: keras.Model) -> bool:
    compute_loss = getattr(type(model).compute_loss, "__func__", type(model).compute_loss)
    return compute_loss is not keras.Model.compute_loss


def defines_no_loss(model: keras.Model) -> bool:
    """Whether ``model`` has neither a ``compute_loss`` nor a ``train_step`` of its own, nor
    an ``add_loss``."""
    own_step = type(model).train_step is not keras.Model.train_step
    return not own_step and not _overrides_compute_loss(model) and not model.losses


def compile_model(model: keras.Model, hparams: HParams) -> None:
    """Compiles ``model`` with the loss, metrics, XLA and steps per execution of
    ``hparams.run`` and the optimizer of ``hparams.optimization``.

    Raises:
        HParamsError: the model defines no loss and ``run.loss`` names none.
    """
    run = hparams.run
    loss = None
    if run.loss.type is not None:
        loss = registry.resolve(run.loss.type)(**run.loss.kwargs.todict())
    elif defines_no_loss(model):
        raise HParamsError(
            f"the model {model.name!r} defines no loss: override compute_loss, call "
            "add_loss, or name a Keras loss here",
            "run.loss.type",
        )
    metrics = [build_metric(spec, f"run.metrics.{i}") for i, spec in enumerate(run.metrics)]
    metrics = [m() if callable(m) else m for m in metrics]
    model.compile(
        optimizer=optimizer_from_hparams(hparams.optimization),
        loss=loss,
        metrics=metrics or None,
        jit_compile="auto" if run.jit_compile is None else run.jit_compile,
        steps_per_execution=run.steps_per_execution,
    )


def scale_own_loss(model: keras.Model) -> None:
    """Divides the model's own ``compute_loss`` (if it has one) by the replicas in sync."""
    if _overrides_compute_loss(model):
        model.compute_loss = _mean_over_replicas(model.compute_loss)


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
