"""Export never deletes what texkit did not write, and a failed export changes nothing."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.cli import main
from texkit.run import export as export_module

from .toy_experiment import toy_experiment as experiment

TOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "toy_experiment.py")


def _tree(path):
    """Every file under ``path`` with its bytes: what must be left exactly as it was."""
    files = {}
    for root, _, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as stream:
                files[os.path.relpath(full, path)] = stream.read()
    return files


def _siblings(path):
    return sorted(os.listdir(os.path.dirname(path)))


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("run") / "model"
    trainer = tx.run.Trainer.from_hparams(
        experiment(str(model_dir), train_steps=20, checkpoint_every_steps=10)
    )
    trainer.train()
    return trainer


def _serve(path, text=("1 2 3", "30 31 32 33")):
    served = tf.saved_model.load(str(path))  # kept: its functions hold weak references to it
    return served.serve(tf.constant(list(text))).numpy()


def test_export_refuses_the_runs_own_model_dir_even_with_overwrite(trainer):
    model_dir = trainer.hparams.run.model_dir
    before = _tree(model_dir)
    assert any(name.startswith("ckpt-20") for name in before)
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match="not a SavedModel.*never deletes"):
            trainer.export(model_dir, overwrite=overwrite)
        assert _tree(model_dir) == before


def test_export_refuses_a_users_folder_and_a_file(tmp_path, trainer):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "thesis.txt").write_text("years of work")
    (folder / "variables").mkdir()  # a name a SavedModel uses does not make it one
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match=r"'thesis.txt'"):
            trainer.export(str(folder), overwrite=overwrite)
    assert _tree(folder) == {"thesis.txt": b"years of work"}
    file = tmp_path / "serving"
    file.write_text("a file")
    with pytest.raises(FileExistsError, match="is a file"):
        trainer.export(str(file), overwrite=True)
    assert file.read_text() == "a file"
    assert _siblings(str(file)) == ["notes", "serving"]  # no temporary folder left behind


def test_export_writes_into_a_new_or_empty_folder(tmp_path, trainer):
    expected = trainer.model.predict(
        trainer.data.preprocessor(tf.constant(["1 2 3", "30 31 32 33"])), verbose=0
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    for path in (tmp_path / "new" / "serving", empty):
        assert trainer.export(str(path)) == str(path)
        np.testing.assert_allclose(_serve(path), expected, atol=1e-5)
    assert _siblings(str(empty)) == ["empty", "new"]


def test_overwrite_replaces_an_earlier_export_and_only_with_overwrite(tmp_path, trainer):
    path = tmp_path / "serving"
    trainer.export(str(path))
    first = _serve(path)
    before = _tree(path)
    with pytest.raises(FileExistsError, match="already holds a SavedModel.*--overwrite"):
        trainer.export(str(path))
    assert _tree(path) == before
    # Change the weights, so the replaced SavedModel is told apart from the old one.
    for weight in trainer.model.trainable_weights:
        weight.assign(weight * 0.5)
    try:
        trainer.export(str(path), overwrite=True)
        second = _serve(path)
    finally:
        for weight in trainer.model.trainable_weights:
            weight.assign(weight * 2.0)
    assert not np.allclose(first, second)
    assert _siblings(str(path)) == ["serving"]


def test_a_failed_export_leaves_the_earlier_one_and_no_temporary_folder(
    tmp_path, trainer, monkeypatch
):
    path = tmp_path / "serving"
    trainer.export(str(path))
    before = _tree(path)
    archive_class = type(keras.export.ExportArchive())  # the backend's subclass
    written = archive_class.write_out

    def write_half_then_fail(self, filepath, **kwargs):
        written(self, filepath, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(archive_class, "write_out", write_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        trainer.export(str(path), overwrite=True)
    assert _tree(path) == before
    assert _siblings(str(path)) == ["serving"]


def test_saved_model_entries_are_what_an_export_writes(tmp_path, trainer):
    # The "only a SavedModel" rule is only as good as this list: it must hold what TF writes.
    path = tmp_path / "serving"
    trainer.export(str(path))
    assert set(os.listdir(path)) <= export_module.SAVED_MODEL_ENTRIES
    assert "saved_model.pb" in os.listdir(path)


def test_cli_export_refuses_without_overwrite_and_names_the_folder(tmp_path, trainer, capsys):
    config = os.path.join(trainer.hparams.run.model_dir, "hparams.yaml")
    model_dir = trainer.hparams.run.model_dir
    before = _tree(model_dir)
    assert main(["export", config, "--output", model_dir, "--include", TOY]) == 2
    error = capsys.readouterr().err.strip()
    # One line, before any checkpoint is read.
    assert error.count("\n") == 0 and "Traceback" not in error and "loaded" not in error
    assert repr(model_dir) in error and "never deletes" in error
    assert _tree(model_dir) == before

    serving = str(tmp_path / "serving")
    assert main(["export", config, "--output", serving, "--include", TOY]) == 0
    assert main(["export", config, "--output", serving, "--include", TOY]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["export", config, "--output", serving, "--overwrite", "--include", TOY]) == 0
    assert _serve(serving).shape == (2, 2)
