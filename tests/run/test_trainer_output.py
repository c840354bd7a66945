"""What a Trainer run prints and warns: progress that suits stdout, Keras' "ran out of data"
only where it says something, and an empty training split as a clear error.

pyproject.toml turns Keras' "ran out of data" warning into an error for the whole suite, so the
runs here fail if one is raised where it should not be.
"""

import os
import warnings

import pytest
import tensorflow as tf

import texkit as tx
from texkit.utils.fit_output import keras_verbose

from .toy_experiment import toy_experiment


class StandInStream:
    """An output stream that says whether it is a terminal."""

    def __init__(self, terminal):
        self.terminal = terminal

    def isatty(self):
        return self.terminal


class ClosedStream:
    def isatty(self):
        raise ValueError("I/O operation on closed file")


def test_verbose_1_is_a_bar_on_a_terminal_and_a_line_per_interval_in_a_log():
    assert keras_verbose(1, StandInStream(True)) == 1
    assert keras_verbose("auto", StandInStream(True)) == 1
    assert keras_verbose(1, StandInStream(False)) == 2
    assert keras_verbose("auto", StandInStream(False)) == 2
    assert keras_verbose(1, object()) == 2  # no isatty
    assert keras_verbose(1, ClosedStream()) == 2
    assert [keras_verbose(v, StandInStream(True)) for v in (0, 2)] == [0, 2]
    assert [keras_verbose(v, StandInStream(False)) for v in (0, 2)] == [0, 2]


def _filtered(dataset):
    """The same batches, of a length tf.data no longer knows (as after a filter)."""
    return dataset.filter(lambda features, labels: True)


def test_a_run_logged_to_a_file_writes_short_lines_and_no_keras_warning(tmp_path, capsys):
    hparams = toy_experiment(str(tmp_path), train_steps=20, checkpoint_every_steps=10, verbose=1)
    trainer = tx.run.Trainer.from_hparams(hparams)
    data = dict(trainer.data)
    assert data["eval"].cardinality() > 0
    # Splits of unknown length, read to their end by validation, evaluate and predict.
    trainer.data = {**data, "eval": _filtered(data["eval"]), "test": _filtered(data["test"])}
    assert trainer.data["eval"].cardinality() == tf.data.UNKNOWN_CARDINALITY
    history = trainer.train()
    assert len(history["val_loss"]) == 2
    # The figures of the split whose length tf.data knows (Keras alone, given the filtered one,
    # counts an empty 33rd batch of 16 in them: the Trainer counts the batches first).
    known = trainer.model.evaluate(data["eval"], return_dict=True, verbose=0)
    assert trainer.evaluate("eval") == pytest.approx(known, rel=1e-6)
    assert history["val_loss"][-1] == pytest.approx(known["loss"], rel=1e-6)
    assert len(trainer.predict("test")) == 512
    out = capsys.readouterr().out
    assert "\x08" not in out and "\r" not in out and "\x1b" not in out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 500
    assert sum("val_loss" in line for line in lines) == 2  # a line per interval
    # Steps given and more than the split has: Keras' warning says something, and is kept.
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        trainer.evaluate("eval", steps=40)


def test_an_empty_training_split_is_an_error_naming_it(tmp_path):
    trainer = tx.run.Trainer.from_hparams(toy_experiment(str(tmp_path), train_steps=20))
    data = dict(trainer.data)
    trainer.data = {**data, "train": data["train"].filter(lambda features, labels: False)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # Keras would say to use .repeat()
        with pytest.raises(ValueError, match=r"data split 'train' gave no batch after step 0"):
            trainer.train()
    assert trainer.step == 0
    assert not [name for name in os.listdir(tmp_path) if name.startswith("ckpt-")]
