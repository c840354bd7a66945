import json
import os
import subprocess
import sys

import tensorflow as tf
import yaml

import texkit as tx
from texkit.cli import main
from texkit.modules import WordEmbedder


def test_hparams_prints_the_defaults_as_yaml(capsys):
    assert main(["hparams", "WordEmbedder"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == WordEmbedder.default_hparams()


def test_hparams_applies_and_validates_overrides(capsys):
    assert main(["hparams", "WordEmbedder", "dim=64", "dropout_rate=0.1"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["dim"] == 64 and printed["dropout_rate"] == 0.1
    assert main(["hparams", "WordEmbedder", "dimm=64"]) == 2
    assert "'dimm'" in capsys.readouterr().err


def test_hparams_refuses_unknown_and_unsafe_names(capsys):
    assert main(["hparams", "WordEmbeder"]) == 2
    assert "WordEmbedder" in capsys.readouterr().err
    assert main(["hparams", "os.system"]) == 2
    assert "refusing" in capsys.readouterr().err


def test_console_script_runs_in_a_fresh_process():
    result = subprocess.run(
        [sys.executable, "-m", "texkit.cli", "hparams", "SinusoidsPositionEmbedder"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert yaml.safe_load(result.stdout) == tx.modules.SinusoidsPositionEmbedder.default_hparams()


def test_installed_texkit_command():
    command = os.path.join(os.path.dirname(sys.executable), "texkit")
    result = subprocess.run(
        [command, "hparams", "PositionEmbedder", "dim=16"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert yaml.safe_load(result.stdout)["dim"] == 16


TOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run", "toy_experiment.py")


def _write_experiment(tmp_path, **run):
    from tests.run.toy_experiment import toy_experiment

    hparams = toy_experiment(str(tmp_path / "model"), **run)
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(hparams))
    return str(path)


def test_train_evaluate_predict_and_export_run_an_experiment_end_to_end(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    assert main(["train", config, "run.train_steps=60", "--include", TOY]) == 0
    trained = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert trained["step"] == 60 and trained["eval"]["accuracy"] > 0.8
    # hparams.yaml, written beside the checkpoints, is itself an experiment file.
    written = str(tmp_path / "model" / "hparams.yaml")
    assert yaml.safe_load(open(written))["run"]["train_steps"] == 60
    assert main(["evaluate", written, "--split", "eval", "--include", TOY]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["step"] == 60
    assert abs(evaluated["eval"]["accuracy"] - trained["eval"]["accuracy"]) < 1e-6
    output = tmp_path / "predictions.jsonl"
    assert main(["predict", written, "--output", str(output), "--include", TOY]) == 0
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(rows) == 512 and all(len(row) == 2 for row in rows)
    assert main(["export", written, "--output", str(tmp_path / "serving"), "--include", TOY]) == 0
    served = tf.saved_model.load(str(tmp_path / "serving"))
    assert served.serve(tf.constant(["1 2 3", "30 31 32 33"])).shape == (2, 2)


def test_an_experiment_with_a_typo_fails_at_once_naming_the_key(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    assert main(["train", "--include", TOY, config, "run.train_stpes=10"]) == 2
    assert "'run.train_stpes'" in capsys.readouterr().err
    assert main(["train", config, "model.hparams.embeder.dim=8", "--include", TOY]) == 2
    assert "'model.hparams.embeder'" in capsys.readouterr().err
    assert main(["train", config, "model.type=toy_clasifier", "--include", TOY]) == 2
    error = capsys.readouterr().err
    assert "'model.type'" in error and "toy_classifier" in error
    assert main(["train", config, "data.type=WordEmbedder", "--include", TOY]) == 2
    assert "not a data builder" in capsys.readouterr().err
    assert not (tmp_path / "model").exists()  # nothing started


def test_evaluate_without_a_checkpoint_says_so(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    assert main(["evaluate", config, "--include", TOY]) == 2
    assert "no checkpoint" in capsys.readouterr().err
