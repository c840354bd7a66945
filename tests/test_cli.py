import subprocess
import sys

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
    import os

    command = os.path.join(os.path.dirname(sys.executable), "texkit")
    result = subprocess.run(
        [command, "hparams", "PositionEmbedder", "dim=16"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert yaml.safe_load(result.stdout)["dim"] == 16
