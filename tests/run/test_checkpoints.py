"""Checkpoint files on disk: resuming past unreadable ones, refusing what would block or mislead.

The edge cases use a checkpoint of one variable (fast); one real Trainer run checks that a resume
past a truncated newest checkpoint ends with the weights of a run that was never interrupted.
"""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.run.callbacks import Checkpointer, DivergenceGuard, RunProgress
from texkit.run.checkpoints import RunCheckpoints, check_checkpoint_list, resume

from .toy_experiment import toy_experiment as experiment

LOGGER = "texkit.run.checkpoints"


def _save(folder, values):
    """Saves ``ckpt-1 .. ckpt-n`` of one variable holding ``values[i]``; returns a checkpoint of
    a fresh variable (holding -1) to restore them into."""
    variable = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(v=variable)
    manager = tf.train.CheckpointManager(checkpoint, str(folder), max_to_keep=len(values))
    for step, value in enumerate(values, 1):
        variable.assign(value)
        manager.save(checkpoint_number=step)
    fresh = tf.Variable(-1.0)
    return tf.train.Checkpoint(v=fresh), fresh


def _data_file(folder, step):
    return folder / f"ckpt-{step}.data-00000-of-00001"


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_the_resume_skips_unreadable_newer_checkpoints_naming_each(tmp_path, caplog):
    checkpoint, variable = _save(tmp_path, [10.0, 20.0, 30.0])
    _truncate(_data_file(tmp_path, 3))
    (tmp_path / "ckpt-2.index").unlink()
    listed = sorted(os.listdir(tmp_path))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        step, path = resume(checkpoint, str(tmp_path))
    assert (step, os.path.basename(path)) == (1, "ckpt-1")
    assert float(variable.numpy()) == 10.0  # what ckpt-1 was saved with
    warnings = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    assert "ckpt-3, which cannot be read" in warnings[0], warnings
    assert "ckpt-2, which cannot be read" in warnings[1] and "index is missing" in warnings[1]
    assert "resuming from" in warnings[2] and "ckpt-3, ckpt-2" in warnings[2], warnings
    assert sorted(os.listdir(tmp_path)) == listed  # nothing removed


def test_without_a_readable_checkpoint_the_resume_fails_naming_model_dir(tmp_path):
    checkpoint, _ = _save(tmp_path, [10.0, 20.0])
    for step in (1, 2):
        _data_file(tmp_path, step).write_bytes(b"")
    with pytest.raises(ValueError, match="no checkpoint in") as caught:
        resume(checkpoint, str(tmp_path))
    assert str(tmp_path) in str(caught.value) and "ckpt-2, ckpt-1" in str(caught.value)


def test_another_models_checkpoint_fails_at_once_without_falling_back(tmp_path, caplog):
    _save(tmp_path, [10.0, 20.0])
    other = tf.train.Checkpoint(v=tf.Variable([0.0, 0.0]))  # another shape
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with pytest.raises(ValueError, match="ckpt-2' cannot be restored into this model"):
            resume(other, str(tmp_path))
    assert not [record for record in caplog.records if record.name == LOGGER]


def test_a_list_of_checkpoints_tensorflow_cannot_parse_is_an_error_not_a_restart(tmp_path):
    checkpoint, _ = _save(tmp_path, [10.0])
    # TensorFlow ignores such a list: the run would start again from step 0.
    (tmp_path / "checkpoint").write_text("not { a checkpoint list")
    with pytest.raises(ValueError, match="not TensorFlow's list of checkpoints") as caught:
        resume(checkpoint, str(tmp_path))
    assert str(tmp_path / "checkpoint") in str(caught.value)
    assert resume(checkpoint, str(tmp_path / "empty")) == (0, None)  # no list: no checkpoint


# Hostile cases: run in the sandbox (tests/hostile.py), where a FIFO that blocks fails the test.


def resume_from(folder):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(-1.0))
    step, _ = resume(checkpoint, folder)
    return [step, float(checkpoint.v.numpy())]


def checkpoint_list_of(folder):
    return check_checkpoint_list(folder)


def test_fifos_among_the_checkpoint_files_are_refused_or_skipped_without_blocking(
    tmp_path, sandbox
):
    _save(tmp_path, [10.0, 20.0])
    data = _data_file(tmp_path, 2)
    data.unlink()
    os.mkfifo(data)
    outcome = sandbox.run(resume_from, str(tmp_path))
    assert outcome.value == [1, 10.0], outcome
    (tmp_path / "checkpoint").unlink()
    os.mkfifo(tmp_path / "checkpoint")
    sandbox.expect_error(
        checkpoint_list_of, str(tmp_path), error="ValueError", contains=("checkpoint", "FIFO")
    )
    sandbox.expect_error(resume_from, str(tmp_path), error="ValueError", contains=("FIFO",))


# One real run.


def _weights(trainer):
    return [w.numpy() for w in trainer.model.weights]


def test_a_run_resumes_past_a_truncated_newest_checkpoint_to_the_same_weights(tmp_path, caplog):
    hparams = experiment(str(tmp_path), train_steps=30, checkpoint_every_steps=10)
    whole = tx.run.Trainer.from_hparams(hparams)
    whole.train()
    expected = _weights(whole)
    _truncate(_data_file(tmp_path, 30))
    again = tx.run.Trainer.from_hparams(hparams)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        again.train()
    warnings = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    assert any("ckpt-30, which cannot be read" in message for message in warnings), warnings
    assert any("resuming from" in m and "ckpt-20 (step 20)" in m for m in warnings), warnings
    # It trained steps 21-30 again (dropout's random state is in the checkpoint): the weights of
    # the run that was never interrupted.
    assert again.step == 30
    for a, b in zip(expected, _weights(again), strict=True):
        np.testing.assert_array_equal(a, b)
    # ckpt-30 was written again, whole.
    assert tx.run.Trainer.from_hparams(hparams).restore() == 30


def _compiled_model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.optimizer.build(model.trainable_variables)
    return model


def test_checkpointing_stands_apart_from_the_trainer(tmp_path):
    # The Checkpointer holds the run's checkpoints and the progress it shares, not a Trainer:
    # a plain fit with it writes the checkpoints of the steps the progress says it covers.
    model = _compiled_model()
    checkpoints = RunCheckpoints(model, str(tmp_path), keep=2)
    progress = RunProgress(step=10)
    progress.start_fit(begin=10, first_epoch=2, length=5)
    x = np.zeros((20, 2), "float32")
    model.fit(
        x, x[:, :1], batch_size=2, initial_epoch=2, epochs=4, steps_per_epoch=5, verbose=0,
        callbacks=[DivergenceGuard(progress), Checkpointer(checkpoints, progress)],
    )  # fmt: skip
    assert sorted(p for p in os.listdir(tmp_path) if p.endswith(".index")) == [
        "ckpt-15.index",
        "ckpt-20.index",
    ]
    assert progress.diverged_at is None
    restored = RunCheckpoints(_compiled_model(), str(tmp_path), keep=2)
    assert restored.resume() == (20, checkpoints.latest)
    assert restored.restore(os.path.join(str(tmp_path), "ckpt-15")) == 15
