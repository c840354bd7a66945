"""The Trainer: distribution, checkpoints, resume after a crash, NaN, evaluation, precision, export.

The toy experiment (tests/run/toy_experiment.py) is a WordEmbedder classifier on int32, padded,
fixed-size batches. Runs that must be separate processes (multi-worker, SIGKILL, a fresh process
loading an export) go through tests/run/train_job.py or a small script.
"""

import json
import os
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.configurable import hparams_paths
from texkit.run.experiment import EXPERIMENT_HPARAMS_DOC
from texkit.run.run_config import RUN_HPARAMS_DOC

from ..background import job_result, process_job
from . import toy_experiment
from .cluster import worker_environments
from .toy_experiment import toy_experiment as experiment

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_job.py")
NO_DROPOUT = {"embedder": {"dropout_rate": 0.0}}


def _weights(trainer):
    return [w.numpy() for w in trainer.model.weights]


def _max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))


def _run_job(hparams, weights_out, env=None, kill_at_step=None, wait=True, **options):
    """Runs tests/run/train_job.py; ``options`` are its other settings (``sigterm_at_step``...)."""
    config = {
        "hparams": hparams,
        "weights_out": str(weights_out),
        "kill_at_step": kill_at_step,
        **options,
    }
    process = subprocess.Popen(
        [sys.executable, JOB, json.dumps(config)],
        # TF_CPP_MIN_LOG_LEVEL as in a user's shell: texkit's quiet default.
        env={**{k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process if not wait else _finish(process)


def _finish(process):
    output, _ = process.communicate(timeout=300)
    return process.returncode, output


def _start_step(output):
    return int(output.split("start step ")[1].split()[0])


def test_every_run_and_experiment_hparam_is_documented():
    assert set(hparams_paths(tx.run.default_run_hparams())) == set(RUN_HPARAMS_DOC)
    assert set(hparams_paths(tx.run.default_experiment_hparams())) == set(EXPERIMENT_HPARAMS_DOC)


def test_trains_and_evaluates_the_toy_task(tmp_path):
    trainer = tx.run.Trainer.from_hparams(experiment(str(tmp_path), train_steps=60))
    before = trainer.evaluate("test")["accuracy"]
    history = trainer.train()
    after = trainer.evaluate("test")
    assert trainer.step == 60
    assert len(history["loss"]) == 3 and len(history["val_loss"]) == 3
    assert after["accuracy"] > max(0.8, before + 0.2), (before, after)
    # evaluate() equals the formula on the model's own predictions.
    logits = trainer.predict("test")
    labels = np.concatenate([y.numpy() for _, y in trainer.data["test"]])
    assert logits.shape == (len(labels), 2)
    np.testing.assert_allclose(after["accuracy"], (logits.argmax(-1) == labels).mean(), atol=1e-6)


def test_checkpoints_every_n_steps_keep_the_last_k_and_hparams_yaml(tmp_path):
    hparams = experiment(str(tmp_path), train_steps=50, checkpoint_every_steps=10)
    hparams["run"]["keep_checkpoints"] = 2
    trainer = tx.run.Trainer.from_hparams(hparams)
    trainer.train()
    names = sorted(p for p in os.listdir(tmp_path) if p.endswith(".index"))
    assert names == ["ckpt-40.index", "ckpt-50.index"]
    written = tx.HParams.from_yaml(tmp_path / "hparams.yaml", tx.run.default_experiment_hparams())
    assert written == tx.run.validate_experiment(hparams)
    assert written.model.hparams.embedder.dim == 16  # the builder's defaults, resolved


def test_a_resume_that_fails_leaves_the_runs_record_as_it_was(tmp_path):
    tx.run.Trainer.from_hparams(experiment(str(tmp_path), train_steps=20)).train()
    record = (tmp_path / "hparams.yaml").read_bytes()
    # Another embedding size cannot restore the checkpoints; executions of 8 steps cannot
    # resume at step 20.
    wider = experiment(str(tmp_path), train_steps=40)
    wider["model"]["hparams"] = {"embedder": {"dim": 24}}
    with pytest.raises((AssertionError, ValueError)):
        tx.run.Trainer.from_hparams(wider).train()
    with pytest.raises(tx.HParamsError, match="run.steps_per_execution"):
        tx.run.Trainer.from_hparams(
            experiment(
                str(tmp_path), train_steps=48, checkpoint_every_steps=24, steps_per_execution=8
            )
        ).train()
    assert (tmp_path / "hparams.yaml").read_bytes() == record
    assert not [name for name in os.listdir(tmp_path) if ".tmp-" in name]
    # The record still describes the checkpoints: evaluating from it works.
    again = tx.run.Trainer.from_hparams(
        tx.HParams.from_yaml(tmp_path / "hparams.yaml", tx.run.default_experiment_hparams())
    )
    assert again.restore() == 20


def test_a_resume_with_another_interval_goes_on_to_its_multiples(tmp_path):
    tx.run.Trainer.from_hparams(experiment(str(tmp_path), train_steps=20)).train()
    trainer = tx.run.Trainer.from_hparams(
        experiment(str(tmp_path), train_steps=50, checkpoint_every_steps=15, keep_checkpoints=9)
    )
    history = trainer.train()
    assert trainer.step == 50 and int(trainer.model.optimizer.iterations.numpy()) == 50
    names = sorted(int(p[5:-6]) for p in os.listdir(tmp_path) if p.endswith(".index"))
    assert names == [20, 30, 45, 50]  # to the next multiple of 15, whole intervals, the rest
    assert len(history["loss"]) == 3


def test_train_steps_not_a_multiple_of_the_interval_end_with_a_checkpoint(tmp_path):
    trainer = tx.run.Trainer.from_hparams(experiment(str(tmp_path), train_steps=25))
    history = trainer.train()
    assert trainer.step == 25 and len(history["loss"]) == 2
    assert trainer.latest_checkpoint.endswith("ckpt-25")
    assert int(trainer.model.optimizer.iterations.numpy()) == 25


def test_resuming_in_process_equals_an_uninterrupted_run(tmp_path):
    whole = tx.run.Trainer.from_hparams(experiment(str(tmp_path / "whole"), train_steps=40))
    whole.train()
    first = tx.run.Trainer.from_hparams(experiment(str(tmp_path / "split"), train_steps=20))
    first.train()
    second = tx.run.Trainer.from_hparams(experiment(str(tmp_path / "split"), train_steps=40))
    second.train()
    assert second.step == 40
    # Dropout is on: its random state is part of the checkpoint.
    assert _max_diff(_weights(whole), _weights(second)) == 0.0


def _killed_run(folder):
    """The runs of the test below, as a job (tests/background.py): killed, resumed and,
    meanwhile, uninterrupted."""
    hparams = experiment(str(folder / "killed"), train_steps=60)
    hparams["run"]["deterministic"] = True
    reference = experiment(str(folder / "whole"), train_steps=60)
    reference["run"]["deterministic"] = True
    whole = _run_job(reference, folder / "whole.npz", wait=False)
    killed = _run_job(hparams, folder / "killed.npz", kill_at_step=30)
    killed_saved = (folder / "killed.npz").exists()
    resumed = _run_job(hparams, folder / "killed.npz")
    return {
        "folder": folder,
        "killed": (*killed, killed_saved),
        "resumed": resumed,
        "whole": _finish(whole),
    }


process_job("test_a_run_killed_with_sigkill_resumes_from_its_last_checkpoint", _killed_run)


def test_a_run_killed_with_sigkill_resumes_from_its_last_checkpoint():
    runs = job_result("test_a_run_killed_with_sigkill_resumes_from_its_last_checkpoint")
    code, output, weights_saved = runs["killed"]
    assert code == -signal.SIGKILL, output
    assert not weights_saved
    code, output = runs["resumed"]
    assert code == 0, output
    assert _start_step(output) == 20  # the last checkpoint before the kill at step 30
    code, output = runs["whole"]
    assert code == 0 and _start_step(output) == 0, output
    resumed = np.load(runs["folder"] / "killed.npz")
    whole = np.load(runs["folder"] / "whole.npz")
    for key in whole:
        np.testing.assert_array_equal(resumed[key], whole[key])


def _two_worker_run(folder):
    """The cluster of the test below, as a job (tests/background.py): its workers' outputs and
    the checkpoints they wrote."""
    hparams = experiment(str(folder / "multi"), train_steps=20, checkpoint_every_steps=10)
    hparams["model"]["hparams"] = NO_DROPOUT
    hparams["data"]["hparams"] = {"per_replica": True}
    hparams["distribution"] = {"type": "multi_worker"}
    processes = [
        _run_job(hparams, folder / f"worker{index}.npz", env=env, wait=False)
        for index, env in enumerate(worker_environments(2))
    ]
    outputs = [_finish(process) for process in processes]
    checkpoints = sorted(p for p in os.listdir(folder / "multi") if p.endswith(".index"))
    return folder, outputs, checkpoints


TWO_WORKERS = "test_two_worker_processes_end_equal_to_one_process_with_the_same_global_batch"
process_job(TWO_WORKERS, _two_worker_run)


def test_two_worker_processes_end_equal_to_one_process_with_the_same_global_batch():
    single = experiment("", train_steps=20, checkpoint_every_steps=10)
    single["model"]["hparams"] = NO_DROPOUT
    trainer = tx.run.Trainer.from_hparams(single)
    trainer.train()
    folder, outputs, checkpoints = job_result(TWO_WORKERS)
    for code, output in outputs:
        assert code == 0, output
    chief, other = np.load(folder / "worker0.npz"), np.load(folder / "worker1.npz")
    expected = _weights(trainer)
    for index, key in enumerate(chief):
        np.testing.assert_array_equal(chief[key], other[key])
        np.testing.assert_allclose(chief[key], expected[index], atol=1e-5)
    assert checkpoints == ["ckpt-10.index", "ckpt-20.index"]


@pytest.mark.parametrize("per_replica", [False, True])
def test_mirrored_on_two_devices_equals_default_with_the_same_global_batch(per_replica):
    results = []
    for distribution in (
        {"type": "default"},
        {"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]},
    ):
        hparams = experiment("", train_steps=20, checkpoint_every_steps=10)
        hparams["model"]["hparams"] = NO_DROPOUT
        hparams["data"]["hparams"] = {"per_replica": per_replica}
        hparams["distribution"] = distribution
        trainer = tx.run.Trainer.from_hparams(hparams)
        start = _weights(trainer)
        trainer.train()
        results.append((start, _weights(trainer)))
    (start_default, end_default), (start_mirrored, end_mirrored) = results
    assert _max_diff(start_default, start_mirrored) == 0.0
    assert _max_diff(start_default, end_default) > 1e-3
    assert _max_diff(end_default, end_mirrored) <= 1e-5


def _float_data(nan_at_batch=None, batches=12):
    rng = np.random.RandomState(0)
    x = rng.randn(batches * 8, 4).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int32)
    if nan_at_batch is not None:
        x[nan_at_batch * 8] = np.nan
    return tx.run.Data(train=tf.data.Dataset.from_tensor_slices((x, y)).batch(8))


def _dense_model():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])


def _dense_run(model_dir="", **run):
    return {
        "run": {
            "model_dir": model_dir,
            "loss": {"type": "SparseCategoricalCrossentropy", "kwargs": {"from_logits": True}},
            "tensorboard": False,
            "verbose": 0,
            "seed": 0,
            **run,
        }
    }


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_nan_stops_the_run_naming_the_step_and_keeps_the_last_good_checkpoint(
    tmp_path, steps_per_execution
):
    # The data repeats every 12 batches: batch 9 (step 10) is the first with a NaN.
    trainer = tx.run.Trainer(
        _dense_model,
        _float_data(nan_at_batch=9),
        _dense_run(
            str(tmp_path),
            train_steps=40,
            checkpoint_every_steps=4,
            steps_per_execution=steps_per_execution,
        ),
    )
    with pytest.raises(tx.run.TrainingDiverged) as caught:
        trainer.train()
    where = "at step 10" if steps_per_execution == 1 else "between steps 9 and 10"
    assert where in str(caught.value)
    assert caught.value.step == 10
    assert caught.value.checkpoint.endswith("ckpt-8")
    assert "ckpt-8" in str(caught.value)
    reader = tf.train.load_checkpoint(caught.value.checkpoint)
    for name, _ in tf.train.list_variables(caught.value.checkpoint):
        value = reader.get_tensor(name)
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.isfinite(value).all(), name
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(".index")) == [
        "ckpt-4.index",
        "ckpt-8.index",
    ]


def test_early_stopping_stops_when_the_monitored_value_stops_improving():
    data = _float_data()
    data = tx.run.Data(train=data["train"], eval=data["train"].take(2))
    hparams = _dense_run(train_steps=100, checkpoint_every_steps=4)
    hparams["optimization"] = {"learning_rate": 0.0}  # nothing improves
    hparams["run"]["early_stopping"] = {"monitor": "val_loss", "patience": 2}
    trainer = tx.run.Trainer(_dense_model, data, hparams)
    history = trainer.train()
    # The first evaluation sets the best value; two more without improvement stop the run.
    assert len(history["val_loss"]) == 3
    assert trainer.step == 12


def test_evaluation_runs_every_eval_every_steps():
    data = _float_data()
    data = tx.run.Data(train=data["train"], eval=data["train"].take(2))
    hparams = _dense_run(train_steps=24, checkpoint_every_steps=4, eval_every_steps=8)
    history = tx.run.Trainer(_dense_model, data, hparams).train()
    assert len(history["loss"]) == 6
    assert len(history["val_loss"]) == 3  # steps 8, 16 and 24


def test_early_stopping_on_a_value_that_is_never_logged_names_the_key():
    data = _float_data()
    data = tx.run.Data(train=data["train"], eval=data["train"].take(2))
    hparams = _dense_run(train_steps=8, checkpoint_every_steps=4)
    hparams["run"]["early_stopping"] = {"monitor": "val_acuracy", "patience": 1}
    with pytest.raises(tx.HParamsError, match="run.early_stopping.mode.*'min' or 'max'"):
        tx.run.Trainer(_dense_model, data, hparams).train()
    hparams["run"]["early_stopping"]["mode"] = "max"
    with pytest.raises(tx.HParamsError, match="run.early_stopping.monitor.*val_loss"):
        tx.run.Trainer(_dense_model, data, hparams).train()


def test_tensorboard_logs_are_written(tmp_path):
    hparams = _dense_run(str(tmp_path), train_steps=8, checkpoint_every_steps=4)
    hparams["run"]["tensorboard"] = True
    tx.run.Trainer(_dense_model, _float_data(), hparams).train()
    events = [
        name
        for _, _, files in os.walk(tmp_path / "logs")
        for name in files
        if name.startswith("events.out.tfevents")
    ]
    assert events


@pytest.mark.parametrize("precision", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_with_float32_variables(precision):
    before = keras.config.dtype_policy().name
    hparams = experiment("", train_steps=40)
    hparams["run"]["precision"] = precision
    trainer = tx.run.Trainer.from_hparams(hparams)
    assert keras.config.dtype_policy().name == before  # the policy does not leak
    (embedder,) = [
        layer for layer in trainer.model.layers if isinstance(layer, tx.modules.WordEmbedder)
    ]
    assert embedder.compute_dtype == precision.split("_")[1]
    assert all(w.dtype == "float32" for w in trainer.model.weights)
    scaled = isinstance(trainer.model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert scaled == (precision == "mixed_float16")
    trainer.train()
    assert trainer.evaluate("test")["accuracy"] > 0.7


def test_jit_compile_and_steps_per_execution_train_the_same_weights():
    results = []
    for jit_compile, steps_per_execution in ((False, 1), (True, 5)):
        hparams = experiment("", train_steps=20)
        hparams["model"]["hparams"] = NO_DROPOUT
        hparams["run"].update(jit_compile=jit_compile, steps_per_execution=steps_per_execution)
        trainer = tx.run.Trainer.from_hparams(hparams)
        trainer.train()
        results.append(_weights(trainer))
    assert _max_diff(*results) <= 1e-5


def test_the_train_step_compiles_with_xla_with_fully_static_shapes():
    hparams = experiment("", jit_compile=True)
    trainer = tx.run.Trainer.from_hparams(hparams)
    hlo = trainer.check_static_shapes()
    assert "s32[16,12]" in hlo  # the int32 ids of one fixed-size batch
    # A batch with a ragged remainder (no drop_remainder) and int64 ids are named as the cause.
    x = {"ids": np.zeros((20, 12), np.int32), "length": np.ones(20, np.int32)}
    unbatched = tf.data.Dataset.from_tensor_slices((x, np.zeros(20, np.int32)))
    trainer.data = tx.run.Data(train=unbatched.batch(16))
    with pytest.raises(ValueError, match=r"batch\[0\]\['ids'\] has shape \(None, 12\)"):
        trainer.check_static_shapes()
    trainer.data = tx.run.Data(
        train=unbatched.map(lambda f, y: ({**f, "ids": tf.cast(f["ids"], tf.int64)}, y)).batch(
            16, drop_remainder=True
        )
    )
    with pytest.raises(ValueError, match=r"batch\[0\]\['ids'\] is int64"):
        trainer.check_static_shapes()


class OwnLossModel(keras.Model):
    """A model that defines its loss itself, as texkit's models do."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)

    def call(self, inputs):
        return self.dense(inputs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return keras.ops.mean(keras.ops.square(y_pred[:, 0] - keras.ops.cast(y, "float32")))


def test_a_model_with_its_own_compute_loss_trains_without_a_loss_setting():
    hparams = _dense_run(train_steps=40, checkpoint_every_steps=20)
    hparams["run"]["loss"] = {"type": None}
    hparams["optimization"] = {"learning_rate": 0.05}
    data = _float_data()
    trainer = tx.run.Trainer(OwnLossModel, data, hparams)
    before = trainer.evaluate("train")["loss"]
    trainer.train()
    after = trainer.evaluate("train")["loss"]
    assert after < 0.5 * before
    # The logged loss is the model's own: the mean squared error, computed here with NumPy.
    x = np.concatenate([x for x, _ in data["train"]])
    y = np.concatenate([y for _, y in data["train"]])
    predictions = trainer.model.predict(x, verbose=0)[:, 0]
    np.testing.assert_allclose(after, np.mean((predictions - y) ** 2), rtol=1e-5)


def test_a_model_without_a_loss_is_an_error_naming_the_key():
    hparams = _dense_run(train_steps=4, checkpoint_every_steps=4)
    hparams["run"]["loss"] = {"type": None}
    with pytest.raises(tx.HParamsError, match="run.loss.type.*defines no loss"):
        tx.run.Trainer(_dense_model, _float_data(), hparams)


@pytest.mark.parametrize(
    "run, path",
    [
        ({"train_stpes": 10}, "run.train_stpes"),
        ({"train_steps": 0}, "run.train_steps"),
        ({"checkpoint_every_steps": 10, "steps_per_execution": 3}, "run.checkpoint_every_steps"),
        ({"eval_every_steps": 15, "checkpoint_every_steps": 10}, "run.eval_every_steps"),
        ({"precision": "float16"}, "run.precision"),
        ({"jit_compile": "yes"}, "run.jit_compile"),
        ({"metrics": ["acuracy"]}, "run.metrics.0"),
        ({"metrics": [{"type": "Dense"}]}, "run.metrics.0.type"),
        ({"loss": {"type": "Adam"}}, "run.loss.type"),
        ({"early_stopping": {"mode": "up"}}, "run.early_stopping.mode"),
    ],
)
def test_bad_run_hparams_name_the_key_before_anything_is_built(run, path):
    built = []

    def model_fn():
        built.append(True)
        return _dense_model()

    with pytest.raises(tx.HParamsError) as caught:
        tx.run.Trainer(model_fn, _float_data(), {"run": run})
    assert caught.value.path == path
    assert not built


_RELOAD = """
import json, sys
import numpy as np
import tensorflow as tf
served = tf.saved_model.load(sys.argv[1])
inputs = json.loads(sys.argv[2])
if isinstance(inputs, dict):
    inputs = {k: tf.constant(v, tf.int32) for k, v in inputs.items()}
else:
    inputs = tf.constant(inputs)
print(json.dumps(served.serve(inputs).numpy().tolist()))
print(json.dumps(list(served.signatures)))
"""


def _served_in_a_fresh_process(path, inputs):
    result = subprocess.run(
        [sys.executable, "-c", _RELOAD, str(path), json.dumps(inputs)],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outputs, signatures = result.stdout.strip().splitlines()[-2:]
    return np.array(json.loads(outputs)), json.loads(signatures)


def test_an_export_reloaded_in_a_fresh_process_predicts_the_same(tmp_path):
    trainer = tx.run.Trainer.from_hparams(experiment("", train_steps=20))
    trainer.train()
    features, _ = trainer.data.examples["test"]
    features = {key: value[:8] for key, value in features.items()}
    expected = trainer.model.predict(features, verbose=0)

    # With the data's preprocessor, the SavedModel takes raw text.
    trainer.export(str(tmp_path / "text"))
    served, signatures = _served_in_a_fresh_process(
        tmp_path / "text", toy_experiment.as_text(features)
    )
    assert "serving_default" in signatures
    np.testing.assert_allclose(served, expected, atol=1e-5)

    # Without one, it takes the model's own inputs (token ids).
    trainer.data = tx.run.Data(train=trainer.data["train"])
    trainer.export(str(tmp_path / "ids"))
    served, _ = _served_in_a_fresh_process(
        tmp_path / "ids", {key: value.tolist() for key, value in features.items()}
    )
    np.testing.assert_allclose(served, expected, atol=1e-5)


def test_the_tpu_yaml_holds_valid_tpu_settings():
    path = os.path.join(
        os.path.dirname(__file__),
        os.pardir,
        os.pardir,
        "examples",
        "bert_classifier",
        "config_tpu.yaml",
    )
    hp = tx.HParams.from_yaml(path, tx.run.default_experiment_hparams())
    tx.run.run_config.check_run_hparams(hp.run)
    assert hp.distribution.type == "tpu"
    assert hp.run.precision == "mixed_bfloat16" and hp.run.jit_compile is True
    assert hp.run.steps_per_execution > 1
    assert hp.data.hparams.pad_to_max_seq_length and hp.data.hparams.drop_remainder
    optimizer = tx.run.optimizer_from_hparams(hp.optimization)
    assert optimizer.global_clipnorm == 1.0
    with pytest.raises(tx.HParamsError, match="no TPU found"):
        tx.run.strategy_from_hparams(hp.distribution)


class _LabeledNumbers:
    """texkit data (a ScalarData of ints) as ``(features, label)`` batches for ``_dense_model``;
    it passes the data's own file check on, as a texkit data object has it."""

    def __init__(self, data):
        self.data = data

    def make_dataset(self, input_context=None):
        def labeled(batch):
            value = tf.cast(batch["x"], tf.float32)[:, None]
            return tf.tile(value, [1, 4]), batch["x"] % 2

        return self.data.make_dataset(input_context).map(labeled)

    def check_files_unchanged(self):
        self.data.check_files_unchanged()


def test_an_input_file_changed_during_training_stops_it_naming_the_file(tmp_path):
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("".join(f"{i}\n" for i in range(8)))
    data = tx.data.ScalarData(
        {"dataset": {"files": [str(numbers)], "data_name": "x"}, "batch_size": 4, "seed": 0}
    )

    class AppendAfterTwoSteps(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                with open(numbers, "a") as stream:
                    stream.write("8\n")

    trainer = tx.run.Trainer(
        _dense_model, tx.run.Data(train=_LabeledNumbers(data)), _dense_run(train_steps=12)
    )
    with pytest.raises(ValueError, match="numbers.txt.*changed since the dataset was made"):
        trainer.train(callbacks=[AppendAfterTwoSteps()])
