"""What ``run.preemption`` costs under ``multi_worker``: one scalar all-reduce per execution.

With ``run.preemption: true`` every worker adds its SIGTERM flag to the others' after each
execution of the train step, so that all stop after the same step. This measures a 2-worker
``MultiWorkerMirroredStrategy`` run on 127.0.0.1 (one process per worker, this script started
again with ``--worker``) training a small WordEmbedder classifier, with the agreement off and on,
at ``steps_per_execution`` 1 and 10. Each figure is the training time of ``--steps`` steps
inside the chief (after a first interval that traces and warms up), the fastest of ``--repeats``
runs; the runs of one round go in turn, so that the machine's load hits all alike.

    python benchmarks/preemption.py [--steps 600] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import machine  # noqa: E402


def _worker(config: dict) -> None:
    import numpy as np

    import texkit as tx

    hparams = {
        "optimization": {"optimizer": {"type": "Adam"}, "learning_rate": 0.001},
        "distribution": {"type": "multi_worker"},
        "run": {
            "train_steps": config["steps"] + config["warmup"],
            "checkpoint_every_steps": config["warmup"],
            "steps_per_execution": config["steps_per_execution"],
            "preemption": config["preemption"],
            "loss": {"type": "SparseCategoricalCrossentropy", "kwargs": {"from_logits": True}},
            "tensorboard": False,
            "verbose": 0,
            "seed": 0,
        },
    }
    strategy = tx.run.strategy_from_hparams(hparams["distribution"])  # before any other TF work
    import keras
    import tensorflow as tf

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 1000, size=(4096, 32)).astype(np.int32)
    labels = (ids[:, 0] % 2).astype(np.int32)

    def train(context: tf.distribute.InputContext) -> tf.data.Dataset:
        batch = context.get_per_replica_batch_size(64)
        dataset = tf.data.Dataset.from_tensor_slices((ids, labels)).repeat()
        return dataset.shard(context.num_input_pipelines, context.input_pipeline_id).batch(
            batch, drop_remainder=True
        )

    def model_fn() -> keras.Model:
        inputs = keras.Input((32,), dtype="int32")
        embedded = tx.modules.WordEmbedder(vocab_size=1000, hparams={"dim": 64})(inputs)
        pooled = keras.layers.GlobalAveragePooling1D()(embedded)
        return keras.Model(inputs, keras.layers.Dense(2)(pooled))

    trainer = tx.run.Trainer(model_fn, tx.run.Data(train=train), hparams, strategy=strategy)

    class Clock(keras.callbacks.Callback):
        started = None

        def on_epoch_end(self, epoch, logs=None):
            if self.started is None:  # the first interval traced and warmed up
                self.started = time.perf_counter()

    clock = Clock()
    trainer.train(callbacks=[clock])
    seconds = time.perf_counter() - clock.started
    print(json.dumps({"seconds": seconds}), flush=True)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _run(steps: int, steps_per_execution: int, preemption: bool) -> float:
    config = {
        "steps": steps,
        "warmup": 100,
        "steps_per_execution": steps_per_execution,
        "preemption": preemption,
    }
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        processes.append(
            subprocess.Popen(
                [sys.executable, __file__, "--worker", json.dumps(config)],
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_CONFIG": json.dumps(tf_config)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [process.communicate(timeout=600) for process in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        if process.returncode:
            raise RuntimeError(err[-2000:])
    return json.loads(outputs[0][0].strip().splitlines()[-1])["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(json.loads(args.worker))
        return
    print(machine("tensorflow", "keras"))
    settings = [(spe, preemption) for spe in (1, 10) for preemption in (False, True)]
    best = {setting: float("inf") for setting in settings}
    for round_ in range(args.repeats):
        for spe, preemption in settings:
            seconds = _run(args.steps, spe, preemption)
            best[(spe, preemption)] = min(best[(spe, preemption)], seconds)
            print(f"  round {round_ + 1}: spe {spe}, preemption {preemption}: {seconds:.2f} s")
    print(f"\n2 workers on 127.0.0.1, {args.steps} steps of 64 examples (32 ids), fastest of "
          f"{args.repeats}:\n")  # fmt: skip
    print("| steps_per_execution | run.preemption | steps/s | time with / without |")
    print("|---|---|---|---|")
    for spe in (1, 10):
        off, on = best[(spe, False)], best[(spe, True)]
        print(f"| {spe} | false | {args.steps / off:,.0f} | |")
        print(f"| {spe} | true | {args.steps / on:,.0f} | {on / off:.2f} |")
    print(f"\nReproduce: python benchmarks/preemption.py --steps {args.steps} "
          f"--repeats {args.repeats}")  # fmt: skip


if __name__ == "__main__":
    main()
