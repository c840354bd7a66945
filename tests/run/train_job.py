"""Trains the toy experiment in a process of its own, for the multi-worker and crash tests.

    python tests/run/train_job.py '{"hparams": {...}, "weights_out": "w.npz", "kill_at_step": 30}'

Prints ``start step <n>`` (the step it resumes from), trains, and saves the model's weights to
``weights_out`` (``.npz``). With ``kill_at_step`` it kills itself with SIGKILL once the optimizer
reaches that step, as a crash would. With ``sigterm_at_step`` it sends itself SIGTERM (as a cloud
VM about to be preempted does) once the optimizer reaches that step. Either signal is sent only in
the worker of index ``signal_task`` if that is given; a run stopped by ``run.preemption`` prints
``preempted at step <n>`` and exits with ``texkit.run.Preempted.exit_code``, as ``texkit train``
does. ``step_seconds`` slows every step down (for signals sent from outside).
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# isort: off
# texkit first, as in a user's script: it keeps TensorFlow's C++ log lines out.
import texkit as tx  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
import toy_experiment  # noqa: E402, F401  (registers the toy builders)
# isort: on


class SignalAt(keras.callbacks.Callback):
    def __init__(self, step: int, signum: int):
        super().__init__()
        self.step = step
        self.signum = signum
        self.sent = False

    def on_train_batch_end(self, batch, logs=None):
        if not self.sent and int(self.model.optimizer.iterations.numpy()) >= self.step:
            self.sent = True
            os.kill(os.getpid(), self.signum)


class Slow(keras.callbacks.Callback):
    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds

    def on_train_batch_end(self, batch, logs=None):
        print(f"at step {int(self.model.optimizer.iterations.numpy())}", flush=True)
        time.sleep(self.seconds)


def _task_index() -> int:
    return json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("index", 0)


def main() -> None:
    config = json.loads(sys.argv[1])
    trainer = tx.run.Trainer.from_hparams(config["hparams"])
    latest = trainer.latest_checkpoint
    print(f"start step {tx.run.trainer.checkpoint_step(latest) if latest else 0}", flush=True)
    callbacks = []
    signalled = config.get("signal_task") in (None, _task_index())
    if config.get("kill_at_step") and signalled:
        callbacks.append(SignalAt(config["kill_at_step"], signal.SIGKILL))
    if config.get("sigterm_at_step") and signalled:
        callbacks.append(SignalAt(config["sigterm_at_step"], signal.SIGTERM))
    if config.get("step_seconds"):
        callbacks.append(Slow(config["step_seconds"]))
    try:
        trainer.train(callbacks=callbacks)
    except tx.run.Preempted as error:
        print(f"preempted at step {error.step}", flush=True)
        sys.exit(error.exit_code)
    except tx.run.WorkerLost as error:
        print(f"texkit: {error}", flush=True)
        sys.exit(error.exit_code)
    np.savez(config["weights_out"], *[w.numpy() for w in trainer.model.weights])
    print(f"end step {trainer.step}", flush=True)


if __name__ == "__main__":
    main()
