"""Trains the toy experiment in a process of its own, for the multi-worker and crash tests.

    python tests/run/train_job.py '{"hparams": {...}, "weights_out": "w.npz", "kill_at_step": 30}'

Prints ``start step <n>`` (the step it resumes from), trains, and saves the model's weights to
``weights_out`` (``.npz``). With ``kill_at_step`` it kills itself with SIGKILL once the optimizer
reaches that step, as a crash would.
"""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import toy_experiment  # noqa: E402, F401  (registers the toy builders)

import texkit as tx  # noqa: E402


class KillAt(keras.callbacks.Callback):
    def __init__(self, step: int):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.step:
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    config = json.loads(sys.argv[1])
    trainer = tx.run.Trainer.from_hparams(config["hparams"])
    latest = trainer.latest_checkpoint
    print(f"start step {tx.run.trainer.checkpoint_step(latest) if latest else 0}", flush=True)
    kill_at = config.get("kill_at_step")
    trainer.train(callbacks=[KillAt(kill_at)] if kill_at else None)
    np.savez(config["weights_out"], *[w.numpy() for w in trainer.model.weights])
    print(f"end step {trainer.step}", flush=True)


if __name__ == "__main__":
    main()
