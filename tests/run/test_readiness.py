"""Trainer.check_static_shapes under every strategy: what compiles for a TPU and what does not.

The check compiles the step each replica runs with XLA; under ``mirrored`` on the 2 logical CPUs
of tests/conftest.py it must see the per-replica batch (half the global one). Each way a step can
break a TPU is made on purpose in a small model, and the error must name the feature or the op.
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
from .test_trainer import NO_DROPOUT
from .toy_experiment import toy_experiment as experiment

MIRRORED = {"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}
ONE_DEVICE = {"type": "one_device", "devices": ["/cpu:1"]}
STRATEGIES = [{"type": "default"}, ONE_DEVICE, MIRRORED]


def _trainer(distribution, per_replica=False, **run):
    hparams = experiment("", **run)
    hparams["model"]["hparams"] = NO_DROPOUT
    hparams["data"]["hparams"] = {"per_replica": per_replica}
    hparams["distribution"] = distribution
    return tx.run.Trainer.from_hparams(hparams)


@pytest.mark.parametrize("per_replica", [False, True], ids=["global_batches", "per_replica"])
@pytest.mark.parametrize("distribution", STRATEGIES, ids=lambda d: d["type"])
def test_the_replica_step_compiles_with_the_per_replica_batch(distribution, per_replica):
    trainer = _trainer(distribution, per_replica)
    hlo = trainer.check_static_shapes()
    replicas = trainer.strategy.num_replicas_in_sync
    assert replicas == (2 if distribution is MIRRORED else 1)
    # The toy data's global batch is 16 sequences of 12 int32 ids.
    assert f"s32[{16 // replicas},12]" in hlo
    assert f"s32[{16 // replicas * 2},12]" not in hlo


def _examples(count=24, dtype=np.int32):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, size=(count, 6)).astype(dtype)
    return {"ids": ids}, (ids.sum(axis=1) % 2).astype(np.int32)


class StepModel(keras.Model):
    """Embeds ids, pools, classifies; ``extra`` adds one op to the step to break it on purpose."""

    def __init__(self, extra=None):
        super().__init__()
        self.extra = extra
        self.embedding = keras.layers.Embedding(20, 4)
        self.logits = keras.layers.Dense(2)

    def call(self, features):
        embedded = self.embedding(features["ids"])
        pooled = tf.reduce_mean(embedded, axis=1)
        if self.extra is not None:
            pooled = self.extra(features, pooled)
        return self.logits(pooled)


def _check(extra=None, distribution=None, batch=8, dtype=np.int32, text=False):
    features, labels = _examples(dtype=dtype)
    if text:
        features["text"] = np.array(["a b"] * len(labels))
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        batch, drop_remainder=True
    )
    hparams = {
        "distribution": distribution or {"type": "default"},
        "run": {
            "loss": {"type": "SparseCategoricalCrossentropy", "kwargs": {"from_logits": True}},
            "verbose": 0,
        },
    }
    trainer = tx.run.Trainer(lambda: StepModel(extra), tx.run.Data(train=dataset), hparams)
    return trainer.check_static_shapes()


def _python_function(features, pooled):
    doubled = tf.numpy_function(lambda x: x * 2, [pooled], tf.float32, stateful=False)
    return tf.ensure_shape(doubled, pooled.shape) + pooled


def _boolean_mask(features, pooled):
    kept = tf.boolean_mask(pooled, features["ids"][:, 0] > 5)
    return pooled + tf.reduce_mean(kept)


def _strings(features, pooled):
    text = tf.strings.as_string(features["ids"])
    return pooled + tf.cast(tf.strings.length(text)[:, :1], tf.float32)


@pytest.mark.parametrize("distribution", STRATEGIES, ids=lambda d: d["type"])
@pytest.mark.parametrize(
    "extra, match",
    [
        (_python_function, r"op PyFuncStateless \(node '[^']*'\), which has no XLA kernel"),
        (_boolean_mask, r"shape that depends on the data made by Where \('[^']*boolean_mask"),
        (_strings, r"op AsString \(node '[^']*'\), which has no XLA kernel"),
    ],
    ids=["no_xla_kernel", "data_dependent_shape", "string_op"],
)
def test_an_op_a_tpu_cannot_compile_is_named(distribution, extra, match):
    assert "s32[" in _check(distribution=distribution)  # the same model without the op compiles
    with pytest.raises(ValueError, match=match):
        _check(extra, distribution)


@pytest.mark.parametrize("distribution", STRATEGIES, ids=lambda d: d["type"])
def test_features_a_tpu_step_cannot_take_are_named(distribution):
    with pytest.raises(ValueError, match=r"batch\[0\]\['ids'\] is int64; TPUs want int32"):
        _check(distribution=distribution, dtype=np.int64)
    with pytest.raises(ValueError, match=r"batch\[0\]\['text'\] is a string tensor"):
        _check(distribution=distribution, text=True)


def test_a_global_batch_the_replicas_cannot_share_is_named():
    assert "s32[4,6]" in _check(distribution=MIRRORED, batch=8)
    with pytest.raises(ValueError, match="global batch of 7 is not divisible by the 2 replicas"):
        _check(distribution=MIRRORED, batch=7)
    # One replica takes any batch size.
    assert "s32[7,6]" in _check(batch=7)


def test_jit_compile_where_keras_cannot_compile_the_distributed_step_is_refused():
    # It fails inside fit otherwise: XLA cannot reach the second device's variables. (The
    # multi_worker case is in the 2-process test below: CollectiveGatherV2 has no XLA kernel.)
    hparams = experiment("", jit_compile=True)
    hparams["distribution"] = MIRRORED
    with pytest.raises(tx.HParamsError, match="under 'mirrored' on 2 devices") as error:
        tx.run.Trainer.from_hparams(hparams)
    assert error.value.path == "run.jit_compile"
    # One device compiles.
    hparams["distribution"] = {"type": "mirrored", "devices": ["/cpu:0"]}
    assert tx.run.Trainer.from_hparams(hparams).model.jit_compile is True


def test_a_global_batch_of_unknown_size_is_named_under_mirrored():
    trainer = _trainer(MIRRORED)
    x = {"ids": np.zeros((20, 12), np.int32), "length": np.ones(20, np.int32)}
    trainer.data = tx.run.Data(
        train=tf.data.Dataset.from_tensor_slices((x, np.zeros(20, np.int32))).batch(16)
    )
    with pytest.raises(ValueError, match=r"batch\[0\]\['ids'\] has shape \(None, 12\)"):
        trainer.check_static_shapes()


CHECK_JOB = """
import json, sys
sys.path.insert(0, {tests!r})
import toy_experiment
import texkit as tx
config = json.loads(sys.argv[1])
try:
    trainer = tx.run.Trainer.from_hparams(config["hparams"])
    hlo = trainer.check_static_shapes()
    print("compiled", "s32[8,12]" in hlo, trainer.strategy.num_replicas_in_sync, flush=True)
except ValueError as error:
    print("refused", error, flush=True)
"""


def _multi_worker_check(tmp_path, batch_size, jit_compile):
    """The 2 workers of a check, as a job (tests/background.py): their exit codes and outputs."""
    script = tmp_path / "check_job.py"
    script.write_text(CHECK_JOB.format(tests=os.path.dirname(os.path.abspath(__file__))))
    hparams = experiment("", jit_compile=jit_compile)
    hparams["distribution"] = {"type": "multi_worker"}
    hparams["data"]["hparams"] = {"batch_size": batch_size}
    if jit_compile == "spe":
        # Several steps per execution across workers need batches of fixed shapes.
        hparams["run"].update(jit_compile=None, steps_per_execution=5, checkpoint_every_steps=20)
        hparams["data"]["hparams"]["drop_remainder"] = False
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), json.dumps({"hparams": hparams})],
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for env in worker_environments(2)
    ]
    return [(process.communicate(timeout=300)[0], process.returncode) for process in processes]


MULTI_WORKER_CHECKS = {
    "ready": (16, None, "compiled True 2"),
    "uneven_batch": (15, None, "global batch of 15 is not divisible by the 2 replicas"),
    "jit_compile": (
        16,
        True,
        "'run.jit_compile': Keras cannot compile its distributed train step with XLA",
    ),
    "steps_per_execution": (16, "spe", "'run.steps_per_execution': 5 steps per execution under "),
}
MULTI_WORKER_TEST = "test_the_check_under_multi_worker_sees_each_replicas_batch"
for _case, (_batch_size, _jit_compile, _) in MULTI_WORKER_CHECKS.items():
    process_job(f"{MULTI_WORKER_TEST}[{_case}]", _multi_worker_check, _batch_size, _jit_compile)


@pytest.mark.parametrize("case", list(MULTI_WORKER_CHECKS))
def test_the_check_under_multi_worker_sees_each_replicas_batch(case):
    expected = MULTI_WORKER_CHECKS[case][2]
    for output, code in job_result(f"{MULTI_WORKER_TEST}[{case}]"):
        assert code == 0, output
        assert expected in output, output
