"""What a run's settings ask of its strategy, checked before anything is built: this process's
place in the cluster, XLA (``run.jit_compile``), several steps per execution and gradient
accumulation under collective all-reduces."""

from __future__ import annotations

from collections.abc import Mapping

import tensorflow as tf

from texkit import _compat
from texkit.hparams import HParams, HParamsError
from texkit.run import readiness
from texkit.run.inputs import split_source

__all__ = ["check_jit_compile", "check_steps_per_execution", "task_of"]


def task_of(strategy: tf.distribute.Strategy) -> tuple[bool, int]:
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


def _collective(strategy: tf.distribute.Strategy) -> bool:
    """Whether ``strategy``'s replicas all-reduce with collectives (several of them)."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or (
        isinstance(strategy, tf.distribute.MirroredStrategy) and strategy.num_replicas_in_sync > 1
    )


def check_jit_compile(run: HParams, strategy: tf.distribute.Strategy) -> None:
    """Refuses ``run.jit_compile: true`` where Keras' XLA step cannot run: it compiles the whole
    distributed step, and XLA compiles for one device with no cross-worker collectives."""
    if run.jit_compile is not True:
        return
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        where = "under 'multi_worker' (its collectives have no XLA kernel)"
    elif _collective(strategy):
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


def check_steps_per_execution(
    hparams: HParams, strategy: tf.distribute.Strategy, data: Mapping
) -> None:
    """Several steps per execution under a collective all-reduce of several workers need
    fixed batch shapes; Keras' gradient accumulation does not run under one."""
    spe = hparams.run.steps_per_execution
    collective = _collective(strategy)
    if collective and hparams.optimization.gradient_accumulation_steps > 1:
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
        if split not in data:
            continue
        need = (
            f"{spe} steps per execution under {type(strategy).__name__} need batches of "
            "fixed shapes (drop_remainder, sequences padded to one length); use 1, or fix "
            "the shapes"
        )
        try:
            spec = readiness.replica_batch_spec(split_source(data[split], split), split, strategy)
        except ValueError as error:
            raise HParamsError(f"{need}: {error}", "run.steps_per_execution") from None
        for leaf in tf.nest.flatten(spec):
            if not leaf.shape.is_fully_defined():
                raise HParamsError(
                    f"{need}: data split {split!r} has a feature of shape {leaf.shape}",
                    "run.steps_per_execution",
                )
    _compat.trace_time_collective_keys()
