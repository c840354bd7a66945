"""The same training under different strategies and settings ends with the same weights.

Each test trains the toy experiment (tests/run/toy_experiment.py, dropout off) twice, changing one
thing the result must not depend on, and compares the two runs' weights: mixed precision under
``MirroredStrategy`` against the default strategy, XLA with mixed bfloat16, and
``steps_per_execution`` under ``MirroredStrategy`` and a real two-process
``MultiWorkerMirroredStrategy`` (whose workers run as ``python -c`` scripts on 127.0.0.1).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx

from ..background import job_result, process_job
from .cluster import worker_environments
from .test_trainer import OwnLossModel
from .toy_experiment import toy_experiment as experiment

HERE = os.path.dirname(os.path.abspath(__file__))
NO_DROPOUT = {"embedder": {"dropout_rate": 0.0}}
DEFAULT = {"type": "default"}
MIRRORED = {"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}
# SGD, not the experiment's Adam: Adam's step does not change when every gradient is multiplied
# by one factor, so a loss scale left in the gradients, or a sum over replicas where a mean is
# due, would end with the same weights under Adam.
SGD = {"optimizer": {"type": "SGD"}, "learning_rate": 0.5}
# The spacing of the compute dtype's numbers near 1: bfloat16 keeps 8 significant bits (about 3
# decimal digits), float16 11.
EPSILON = {"mixed_bfloat16": 2.0**-7, "mixed_float16": 2.0**-10}


def _weights(trainer):
    return [w.numpy() for w in trainer.model.weights]


def _max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))


def _tolerance(precision, start, end):
    """How far two runs of ``precision`` may end apart when only their rounding differs.

    The two runs compute each example alike; they differ in the order in which float32 values
    are added (the replicas' halves of a batch, XLA's fusions). A weight that then rounds the
    other way in the compute dtype changes a step by up to one spacing of that dtype, so the
    runs may end apart by that fraction of how far training moved the weights. A real difference
    (other batches, a sum for a mean, a loss scale not undone) moves them apart by about the
    whole of it.
    """
    return EPSILON[precision] * _max_diff(start, end)


class LossScaleLog(keras.callbacks.Callback):
    """Records the dynamic loss scale after every step."""

    def __init__(self):
        super().__init__()
        self.scales = []

    def on_train_batch_end(self, batch, logs=None):
        self.scales.append(float(self.model.optimizer.dynamic_scale.numpy()))


def _train(precision, distribution, per_replica=False, **run):
    hparams = experiment("", train_steps=20, checkpoint_every_steps=10, precision=precision, **run)
    hparams["model"]["hparams"] = NO_DROPOUT
    hparams["data"]["hparams"] = {"per_replica": per_replica}
    hparams["distribution"] = distribution
    hparams["optimization"] = SGD
    trainer = tx.run.Trainer.from_hparams(hparams)
    optimizer = trainer.model.optimizer
    callbacks = []
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        # The default scale (2**15, doubled after 2000 finite steps) would not change in 20
        # steps. Started at 2**28 it overflows float16 and the first steps are skipped, halving
        # it; doubled after every 3 finite steps it overflows again: both ways it changes run.
        optimizer.dynamic_scale.assign(2.0**28)
        optimizer.dynamic_growth_steps = 3
        callbacks.append(LossScaleLog())
    start = _weights(trainer)
    trainer.train(callbacks=callbacks)
    return trainer, start, _weights(trainer), callbacks[0].scales if callbacks else None


@pytest.mark.parametrize("per_replica", [False, True])
@pytest.mark.parametrize("precision", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_under_mirrored_equals_default_with_the_same_global_batch(
    precision, per_replica
):
    default, start, end, scales = _train(precision, DEFAULT, per_replica)
    mirrored, start_mirrored, end_mirrored, scales_mirrored = _train(
        precision, MIRRORED, per_replica
    )
    for trainer in (default, mirrored):
        (embedder,) = [
            layer for layer in trainer.model.layers if isinstance(layer, tx.modules.WordEmbedder)
        ]
        assert embedder.compute_dtype == precision.split("_")[1]
        assert all(w.dtype == "float32" for w in trainer.model.weights)
    assert _max_diff(start, start_mirrored) == 0.0
    # Every weight moved, by far more than the tolerance: equal ends are not equal starts.
    tolerance = _tolerance(precision, start, end)
    for before, after in zip(start, end, strict=True):
        assert float(np.abs(after - before).max()) > 1e-2
    assert _max_diff(end, end_mirrored) <= tolerance, (_max_diff(end, end_mirrored), tolerance)
    scaled = [
        isinstance(t.model.optimizer, keras.optimizers.LossScaleOptimizer)
        for t in (default, mirrored)
    ]
    assert scaled == [precision == "mixed_float16"] * 2
    if precision == "mixed_float16":
        # The scale went down (skipped steps) and up again, alike under both strategies.
        assert scales == scales_mirrored
        assert scales[0] < 2.0**28 and (np.diff(scales) > 0).any()
        steps = [int(t.model.optimizer.iterations.numpy()) for t in (default, mirrored)]
        assert steps[0] == steps[1] < 20  # the optimizer counts the steps it applied


def test_jit_compile_with_mixed_bfloat16_equals_no_jit_compile():
    _, start, end, _ = _train("mixed_bfloat16", DEFAULT, jit_compile=False)
    _, start_jit, end_jit, _ = _train("mixed_bfloat16", DEFAULT, jit_compile=True)
    assert _max_diff(start, start_jit) == 0.0
    assert _max_diff(start, end) > 1e-2
    tolerance = _tolerance("mixed_bfloat16", start, end)
    assert _max_diff(end, end_jit) <= tolerance, (_max_diff(end, end_jit), tolerance)


# One worker of a multi-worker run: trains the toy experiment and saves its weights (.npz).
_WORKER = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import toy_experiment  # registers the toy builders
import texkit as tx
config = json.loads(sys.argv[2])
trainer = tx.run.Trainer.from_hparams(config["hparams"])
trainer.train()
np.savez(config["weights_out"], *[w.numpy() for w in trainer.model.weights])
"""


def _start_workers(hparams, folder):
    """Starts the two worker processes of one run on 127.0.0.1; returns them."""
    processes = []
    for index, env in enumerate(worker_environments(2)):
        config = {"hparams": hparams, "weights_out": str(folder / f"worker{index}.npz")}
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", _WORKER, HERE, json.dumps(config)],
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    return processes


# Keras runs steps_per_execution > 1 steps in a tf.while_loop whose body calls the train step in
# a tf.cond, which drops the collective all-reduce's call-time instance key; the Trainer has
# TensorFlow assign the keys when tracing instead (texkit._compat.trace_time_collective_keys),
# once it has checked that the batches have fixed shapes.


def test_steps_per_execution_under_mirrored_equals_one_step_per_execution():
    starts, runs = [], []
    for steps_per_execution in (1, 5):
        hparams = experiment(
            "", train_steps=20, checkpoint_every_steps=10, steps_per_execution=steps_per_execution
        )
        hparams["model"]["hparams"] = NO_DROPOUT
        hparams["distribution"] = MIRRORED
        trainer = tx.run.Trainer.from_hparams(hparams)
        starts.append(_weights(trainer))
        trainer.train()
        runs.append(_weights(trainer))
    assert _max_diff(starts[0], starts[1]) == 0.0
    assert _max_diff(starts[0], runs[0]) > 1e-2
    assert _max_diff(runs[0], runs[1]) <= 1e-5


def _steps_per_execution_clusters(folder):
    """The two clusters of the test below, as a job (tests/background.py): the workers' exit
    codes and outputs, and the folder of each run's weights."""
    runs = {}
    for steps_per_execution in (1, 5):
        hparams = experiment(
            "", train_steps=20, checkpoint_every_steps=10, steps_per_execution=steps_per_execution
        )
        hparams["model"]["hparams"] = NO_DROPOUT
        hparams["data"]["hparams"] = {"per_replica": True}
        hparams["distribution"] = {"type": "multi_worker"}
        run_folder = folder / f"spe{steps_per_execution}"
        run_folder.mkdir()
        runs[steps_per_execution] = (run_folder, _start_workers(hparams, run_folder))
    # Both runs go at once: each process waits on TensorFlow's start more than it computes.
    outputs = []
    try:
        for _, processes in runs.values():
            for process in processes:
                output, _ = process.communicate(timeout=240)
                outputs.append((process.returncode, output))
    finally:
        for _, processes in runs.values():
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    return outputs, {steps: run_folder for steps, (run_folder, _) in runs.items()}


SPE_WORKERS = "test_steps_per_execution_under_two_worker_processes_equals_one_step_per_execution"
process_job(SPE_WORKERS, _steps_per_execution_clusters)


def test_steps_per_execution_under_two_worker_processes_equals_one_step_per_execution():
    outputs, folders = job_result(SPE_WORKERS)
    for code, output in outputs:
        assert code == 0, output[-3000:]
    weights = {}
    for steps_per_execution, folder in folders.items():
        chief, other = np.load(folder / "worker0.npz"), np.load(folder / "worker1.npz")
        for key in chief:
            np.testing.assert_array_equal(chief[key], other[key])
        weights[steps_per_execution] = [chief[key] for key in chief]
    start = _weights(
        tx.run.Trainer.from_hparams(
            {**experiment(""), "model": {"type": "toy_classifier", "hparams": NO_DROPOUT}}
        )
    )
    assert _max_diff(start, weights[1]) > 1e-2
    assert _max_diff(weights[1], weights[5]) <= 1e-5


def test_a_models_own_loss_under_mirrored_equals_default():
    # Without the Trainer's scaling, each replica's mean loss is summed over the replicas:
    # gradients (visible under SGD) and the logged loss twice too large.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
    results = []
    for distribution in (DEFAULT, MIRRORED):
        keras.utils.set_random_seed(0)
        data = tx.run.Data(train=tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat())
        hparams = {
            "optimization": SGD | {"learning_rate": 0.05},
            "distribution": distribution,
            "run": {"train_steps": 8, "checkpoint_every_steps": 4, "verbose": 0},
        }
        trainer = tx.run.Trainer(OwnLossModel, data, hparams)
        history = trainer.train()
        results.append((_weights(trainer), history["loss"]))
    (default_weights, default_loss), (mirrored_weights, mirrored_loss) = results
    assert _max_diff(default_weights, mirrored_weights) <= 1e-5
    np.testing.assert_allclose(mirrored_loss, default_loss, rtol=1e-5)


def test_gradient_accumulation_under_mirrored_is_refused_naming_the_key():
    # Keras' accumulation all-reduces inside a tf.cond, which fails in the first step.
    hparams = experiment("", train_steps=20, checkpoint_every_steps=10)
    hparams["optimization"]["gradient_accumulation_steps"] = 2
    hparams["distribution"] = MIRRORED
    with pytest.raises(tx.HParamsError, match="gradient accumulation cannot run") as error:
        tx.run.Trainer.from_hparams(hparams)
    assert error.value.path == "optimization.gradient_accumulation_steps"
    hparams["distribution"] = DEFAULT
    assert tx.run.Trainer.from_hparams(hparams).train()["loss"]
