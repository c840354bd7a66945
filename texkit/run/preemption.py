"""Preemption: a SIGTERM during training saves a checkpoint at the next step and ends the run.

Cloud VMs (and Kubernetes, and most batch schedulers) send SIGTERM some seconds before they stop
a machine. With ``run.preemption: true`` the Trainer catches it while it trains: at the end of
the step (or of the ``steps_per_execution`` steps) in which the signal arrived, every worker
agrees to stop, ``model_dir/ckpt-<step>`` is written at that step (which need not be a multiple
of ``checkpoint_every_steps``), and :class:`Preempted` is raised; ``texkit train`` then exits
with :data:`EXIT_CODE` (75). Started again with the same command, the run resumes at that step
and loses none.

Why not TensorFlow's ``tf.distribute.experimental.PreemptionCheckpointHandler`` (read in
TensorFlow 2.21, ``failure_handling.py``): it runs each step through its own ``run(train_fn)``,
which Keras 3's ``fit`` does not call; it decides what to watch by probing the GCE metadata
server: on GCP GPU and CPU VMs it polls that server for a maintenance event instead of catching
SIGTERM, elsewhere it catches SIGTERM; it adds a variable of its own (the number of checkpointed
runs) to the checkpoint, which then no longer matches one written without it; and after saving
it ends the process itself (with exit code 42 outside GCP). A signal handler that sets a flag, and
a Keras callback that acts on it between steps, do the same inside ``fit``, on every machine,
with texkit's own checkpoints and exit code.

Agreement across workers: under ``multi_worker`` the signal may reach one worker only, or the
workers at different steps. After each execution every worker adds its flag to the others' (one
all-reduce of a scalar, in the same order on every worker), so all stop after the same step
and write the same checkpoint. On one machine (``default``, ``mirrored``, ``one_device``) there
is one process and no collective.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import tensorflow as tf

from texkit.run.callbacks import RunProgress, StepCounting
from texkit.run.checkpoints import RunCheckpoints

__all__ = [
    "EXIT_CODE",
    "Preempted",
    "PreemptionCheckpointer",
    "WorkerLost",
    "catch_sigterm",
    "end_process",
]

# The exit code of a preempted `texkit train`: sysexits' EX_TEMPFAIL ("temporary failure; try
# again"). A scheduler that restarts on failure restarts it; the run resumes.
EXIT_CODE = 75


class Preempted(Exception):
    """Training stopped on SIGTERM after ``step``; ``checkpoint`` holds that step."""

    exit_code = EXIT_CODE

    def __init__(self, message: str, step: int, checkpoint: str | None):
        super().__init__(message)
        self.step = step
        self.checkpoint = checkpoint


class WorkerLost(RuntimeError):
    """A ``multi_worker`` run lost a worker (``worker``: e.g. ``worker 1``) and stopped.

    Every worker's collectives are aborted; the run cannot go on without it. Start every worker
    again: the run resumes from its last checkpoint. ``texkit train`` exits with
    :data:`EXIT_CODE`, as for a preemption.
    """

    exit_code = EXIT_CODE

    def __init__(self, message: str, worker: str | None):
        super().__init__(message)
        self.worker = worker


def end_process(code: int) -> None:
    """Ends the process at once with ``code``, its output flushed: what ``texkit train`` does
    after a :class:`WorkerLost`.

    After a lost worker, TensorFlow's collectives stay aborted for the life of the process, the
    run is over and its last checkpoint written. An ordinary exit then deletes the input
    pipeline's iterators, and a tf.data iterator's destructor was seen to wait for one of its
    threads for seconds, once for about half a minute: the supervisor that starts the workers
    again should not wait for that. A script of your own can do the same.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


_PEER = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")
_FUNCTION_NODE = re.compile(r"\{\{[^}]*\}\}")
_LOST_WORDS = ("is down", "unhealthy", "reset by peer", "aborted")


def worker_lost(error: Exception, checkpoint: str | None, this_task: str) -> WorkerLost | None:
    """The :class:`WorkerLost` that a TensorFlow error of a ``multi_worker`` step means, if any.

    TensorFlow reports a lost peer as ``UnavailableError`` (its connection was reset, or a health
    check found it silent) or as aborted collectives, naming the peer's task in the message;
    ``this_task`` (e.g. ``worker 0``) is this process, which the message may also name.
    """
    message = str(error)
    if not (
        isinstance(error, tf.errors.UnavailableError) or "Collective ops is aborted" in message
    ):
        return None
    peers = [f"{job} {task}" for job, task in _PEER.findall(message)]
    worker = next((peer for peer in peers if peer != this_task), None)
    reason = next(
        (
            _FUNCTION_NODE.sub("", line).strip().rstrip(":")
            for line in message.splitlines()
            if any(word in line for word in _LOST_WORDS)
        ),
        type(error).__name__,
    )
    kept = f"the last checkpoint is {checkpoint}" if checkpoint else "no checkpoint was written"
    return WorkerLost(
        f"lost {worker or 'a worker'} of the cluster ({reason}); {kept}. Start every worker "
        "again to resume.",
        worker,
    )


class _Flag:
    def __init__(self) -> None:
        self.requested = False


@contextlib.contextmanager
def catch_sigterm() -> Iterator[_Flag]:
    """Sets ``flag.requested`` on SIGTERM while the block runs, then restores the handler.

    A SIGTERM that arrived but was not acted on (it came after the last step) is delivered
    again once the previous handler is back, so the process ends as it would have.

    Raises:
        RuntimeError: not in the main thread (Python delivers signals there only).
    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("run.preemption: train() must run in the main thread to catch SIGTERM")
    flag = _Flag()
    acted = []

    def handler(signum: int, frame: Any) -> None:
        flag.requested = True

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield flag
    except Preempted:
        acted.append(True)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        if flag.requested and not acted:
            signal.raise_signal(signal.SIGTERM)


def _agreement(strategy: tf.distribute.Strategy) -> Callable[[bool], bool]:
    """A function of this worker's flag that is true when any worker's is."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return lambda requested: requested

    @tf.function
    def total(flag: tf.Tensor) -> tf.Tensor:
        return strategy.reduce("SUM", strategy.run(lambda: tf.identity(flag)), axis=None)

    return lambda requested: bool(total(tf.constant(1.0 if requested else 0.0)) > 0)


class PreemptionCheckpointer(StepCounting):
    """After each execution of the train step: if any worker got SIGTERM, saves a checkpoint
    at this step through ``checkpoints``, records it as ``progress.step`` and raises
    :class:`Preempted`.

    Args:
        checkpoints: the run's checkpoints.
        progress: the progress the Trainer and its callbacks share.
        flag: set by :func:`catch_sigterm` when this process got SIGTERM.
        strategy: the run's strategy, whose workers agree to stop together.
    """

    def __init__(
        self,
        checkpoints: RunCheckpoints,
        progress: RunProgress,
        flag: _Flag,
        strategy: tf.distribute.Strategy,
    ):
        super().__init__(progress)
        self.checkpoints = checkpoints
        self.flag = flag
        self.agree = _agreement(strategy)

    def on_train_batch_end(self, batch: int, logs: Mapping | None = None) -> None:
        # Every worker joins the agreement after every execution, in the same order.
        if not self.agree(self.flag.requested) or self.progress.diverged_at is not None:
            return
        step = self.step_after(batch)
        path = self.checkpoints.save(step)
        self.progress.step = step
        kept = f"saved {path}" if path else "no model_dir: nothing saved"
        raise Preempted(
            f"preempted (SIGTERM) after step {step}; {kept}. Start the run again to resume.",
            step,
            path,
        )
