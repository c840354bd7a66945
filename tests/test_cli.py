import contextlib
import ctypes
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
import tensorflow as tf
import yaml

import texkit as tx
from texkit import registry
from texkit.cli import _include, main
from texkit.hparams import HParams
from texkit.modules import WordEmbedder


def test_hparams_prints_the_defaults_as_yaml(capsys):
    assert main(["hparams", "WordEmbedder"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out) == WordEmbedder.default_hparams()
    # Each key carries its documentation line as a comment.
    assert f"dim: 100  # {WordEmbedder.HPARAMS_DOC['dim']}" in out.splitlines()


def test_hparams_applies_and_validates_overrides(capsys):
    assert main(["hparams", "WordEmbedder", "dim=64", "dropout_rate=0.1"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["dim"] == 64 and printed["dropout_rate"] == 0.1
    assert main(["hparams", "WordEmbedder", "dimm=64"]) == 2
    assert "'dimm'" in capsys.readouterr().err


def test_hparams_checks_values_as_the_class_does(capsys):
    # The merge accepts any int for dim; WordEmbedder(vocab_size=..., hparams=...) refuses -3.
    assert main(["hparams", "WordEmbedder", "dim=-3"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "'dim'" in captured.err and "-3" in captured.err
    assert "Traceback" not in captured.err
    assert main(["hparams", "WordEmbedder", "dropout_rate=1.5"]) == 2
    assert "'dropout_rate'" in capsys.readouterr().err
    assert main(["hparams", "TransformerDecoder", "dim=0"]) == 2  # needs vocab_size too
    assert "'dim'" in capsys.readouterr().err


def test_hparams_accepts_every_registered_module_at_its_defaults(capsys):
    # The stand-in sizes (vocab_size=1, ...) never make a class refuse its own defaults.
    names = [
        name
        for name in registry.registered_names()
        if hasattr(registry.resolve(name), "HPARAMS_DOC")
        and registry.resolve(name).__module__.startswith("texkit.")
    ]
    assert "WordEmbedder" in names and "MLPTransformConnector" in names
    for name in names:
        assert main(["hparams", name]) == 0, (name, capsys.readouterr().err)
        captured = capsys.readouterr()
        assert captured.err == "", name
        # Valid YAML of the defaults, every documented path's line in it as a comment.
        cls = registry.resolve(name)
        assert yaml.safe_load(captured.out) == HParams(None, cls.default_hparams()).todict(), name
        for path, doc in cls.HPARAMS_DOC.items():
            if "." not in path or _is_dict_path(cls.default_hparams(), path):
                assert f"  # {doc}" in captured.out, (name, path)


def _is_dict_path(hparams, path):
    """Whether every part of ``path`` but the last names a dict (not a list's template)."""
    node = hparams
    for part in path.split(".")[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict) and path.split(".")[-1] in node


class _NeedsATable:
    """A class whose constructor needs an argument that is not a size: checked for type only."""

    def __init__(self, table, hparams=None):
        raise AssertionError("texkit hparams cannot construct this class")

    @classmethod
    def default_hparams(cls):
        return {"dim": 4, "name": "needs_a_table"}


def test_hparams_says_when_it_can_check_types_only(capsys):
    registry.register(_NeedsATable, "CliTestNeedsATable")
    assert main(["hparams", "CliTestNeedsATable", "dim=-3"]) == 0
    captured = capsys.readouterr()
    assert yaml.safe_load(captured.out)["dim"] == -3
    assert "type only" in captured.err and "table" in captured.err


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


# A line of TensorFlow's C++ logging: absl's format ("E0000 00:00:1795752322.529258  2077
# cuda_platform.cc:52] ...") or TensorFlow's own ("2025-01-01 12:00:00.000000: E tensorflow/...").
TENSORFLOW_LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:|\d{4}-\d\d-\d\d [\d:.]+: [IWEF] )", re.M
)


def test_command_keeps_tensorflow_quiet_unless_asked():
    # As in a user's shell: TF_CPP_MIN_LOG_LEVEL unset, stdout and stderr pipes. Building the
    # module runs the first op, after which TensorFlow logs "failed call to cuInit" (an ERROR
    # line) on a machine without a GPU.
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "-m", "texkit.cli", "hparams", "WordEmbedder"],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert result.stderr == "", result.stderr
    assert yaml.safe_load(result.stdout) == tx.modules.WordEmbedder.default_hparams()
    assert max(len(line) for line in result.stdout.splitlines()) <= 500
    # --verbose asks for TensorFlow's lines (its info lines while it loads, at least).
    asked = subprocess.run(
        [sys.executable, "-m", "texkit.cli", "hparams", "WordEmbedder", "--verbose"],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert TENSORFLOW_LOG_LINE.search(asked.stderr), asked.stderr
    assert asked.stdout == result.stdout


def test_help_is_plain_text():
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in help_text.getvalue() and "--verbose" in help_text.getvalue()


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


def test_include_imports_a_file_in_a_package_as_part_of_it(tmp_path, monkeypatch):
    # tmp/cli_pkg/__init__.py and tmp/cli_pkg/task/builders.py, which imports its package.
    package = tmp_path / "cli_pkg"
    (package / "task").mkdir(parents=True)
    (package / "__init__.py").write_text("SHARED = 'from the package'\n")
    (package / "task" / "__init__.py").write_text("")
    (package / "task" / "builders.py").write_text("from cli_pkg import SHARED\nVALUE = SHARED\n")
    loose = tmp_path / "loose.py"
    loose.write_text("import neighbour\nVALUE = neighbour.VALUE\n")
    (tmp_path / "neighbour.py").write_text("VALUE = 'next door'\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        _include(str(package / "task" / "builders.py"))
        assert sys.modules["cli_pkg.task.builders"].VALUE == "from the package"
        _include(str(loose))
        assert sys.modules["texkit_include_loose"].VALUE == "next door"
    finally:
        for name in ("cli_pkg", "cli_pkg.task", "cli_pkg.task.builders", "neighbour"):
            sys.modules.pop(name, None)
        sys.modules.pop("texkit_include_loose", None)


def test_evaluate_without_a_checkpoint_says_so(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    assert main(["evaluate", config, "--include", TOY]) == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_a_missing_or_broken_checkpoint_is_one_line_naming_it(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    assert main(["train", config, "run.train_steps=20", "--include", TOY]) == 0
    written = str(tmp_path / "model" / "hparams.yaml")
    model_dir = tmp_path / "model"
    capsys.readouterr()
    missing = str(model_dir / "ckpt-999")
    broken = model_dir / "ckpt-20.data-00000-of-00001"
    cases = [
        (missing, f"checkpoint {missing!r} does not exist"),
        (str(model_dir), "is not a texkit checkpoint"),
    ]
    for checkpoint, expected in cases:
        assert main(["evaluate", written, "--checkpoint", checkpoint, "--include", TOY]) == 2
        error = capsys.readouterr().err
        assert expected in error and "Traceback" not in error, error
    broken.write_bytes(broken.read_bytes()[:100])  # truncated
    assert main(["evaluate", written, "--include", TOY]) == 2
    error = capsys.readouterr().err
    assert "ckpt-20' cannot be read" in error and "Traceback" not in error


def test_misused_paths_are_one_line_each_before_anything_runs(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    cases = [
        (["train", config, "--include", config], "is not a Python file"),
        (["train", str(tmp_path), "--include", TOY], "is a directory; give the YAML file"),
        (
            ["predict", config, "--output", str(tmp_path), "--include", TOY],
            "is a directory; give a file path",
        ),
    ]
    for argv, expected in cases:
        assert main(argv) == 2, argv
        error = capsys.readouterr().err
        assert expected in error and "Traceback" not in error, error
        assert error.count("\n") == 1, error
    assert not (tmp_path / "model").exists()  # nothing ran


def test_a_diverged_run_is_one_line_naming_the_step_and_exit_1(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    argv = ["train", config, "optimization.learning_rate=1e38", "--include", TOY]
    assert main(argv) == 1
    error = capsys.readouterr().err
    assert "became NaN or infinite at step" in error and "Traceback" not in error, error
    assert error.count("\n") == 1, error


def test_a_model_dir_texkit_cannot_write_in_is_one_line_before_training(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("a user's file")
    cases = [
        (str(afile), "is a file; give a folder"),
        (str(afile / "sub"), "cannot write in"),
        ("/proc/self/texkit_model", "cannot write in"),  # not writable, even for root
    ]
    for model_dir, expected in cases:
        config = _write_experiment(tmp_path)
        argv = ["train", config, f"run.model_dir={model_dir}", "--include", TOY]
        assert main(argv) == 2, model_dir
        error = capsys.readouterr().err
        assert expected in error and "'run.model_dir'" in error, error
        assert "Traceback" not in error and error.count("\n") == 1, error
    assert afile.read_text() == "a user's file"


def test_a_checkpoint_that_cannot_be_written_is_one_line_and_nothing_of_the_users_is_removed(
    tmp_path, capsys
):
    config = _write_experiment(tmp_path)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    # A file where TensorFlow writes its temporary folder for ckpt-20: the save fails for real.
    (model_dir / "ckpt-20_temp").write_text("in the way")
    mine = model_dir / "ckpt-7_temp_notes"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's file")
    assert main(["train", config, "run.train_steps=20", "--include", TOY]) == 1
    error = capsys.readouterr().err
    assert "cannot write checkpoint 20" in error and "Traceback" not in error, error
    assert error.count("\n") == 1, error
    assert (mine / "notes.txt").read_text() == "a user's file"
    # TensorFlow's leftovers of a run killed while saving are removed when the next run starts.
    (model_dir / "ckpt-20_temp").unlink()
    stale = model_dir / "ckpt-10_temp"
    stale.mkdir()
    (stale / "part-00000-of-00001.index").write_bytes(b"")
    assert main(["train", config, "run.train_steps=20", "--include", TOY]) == 0
    assert not stale.exists() and (mine / "notes.txt").exists()
    assert (model_dir / "ckpt-20.index").exists()


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A toy run of 20 steps, its record, and files and folders to misuse."""
    from tests.run.toy_experiment import toy_experiment

    folder = tmp_path_factory.mktemp("misuse")
    config = folder / "experiment.yaml"
    config.write_text(yaml.safe_dump(toy_experiment(str(folder / "model"), train_steps=20)))
    assert main(["train", str(config), "--include", TOY]) == 0
    (folder / "served").mkdir()
    (folder / "served" / "keep.txt").write_text("a user's file")
    (folder / "afile").write_text("a user's file")
    (folder / "digits.yaml").write_text("run:\n  train_steps: " + "9" * 5000 + "\n")
    # Texar configs that fail when run: a syntax error, an exception, a KeyboardInterrupt.
    (folder / "syntax.py").write_text("emb = {'dim': 4}\nenc = {'dim':\n")
    (folder / "raises.py").write_text("emb = {'dim': 4}\nraise RuntimeError('boom')\n")
    (folder / "interrupts.py").write_text("\n\nraise KeyboardInterrupt\n")
    return folder


# (command line with {run} for the run's folder, exit code, what stderr must say). Exit 2: a
# mistake in the command or the config, found before anything runs or is written.
MISUSES = [
    ("", 2, "the following arguments are required: command"),
    ("frobnicate", 2, "invalid choice: 'frobnicate'"),
    ("train", 2, "the following arguments are required: config"),
    ("train {run}/missing.yaml", 2, "hparams file not found: {run}/missing.yaml"),
    ("train {run}", 2, "is a directory; give the YAML file"),
    ("train {run}/experiment.yaml --include {run}/missing.py", 2, "--include: no such file"),
    ("train {run}/experiment.yaml --include {run}/experiment.yaml", 2, "is not a Python file"),
    ("train {run}/experiment.yaml run.train_steps", 2, "must have the form key=value"),
    ("train {run}/experiment.yaml run.train_stpes=9", 2, "'run.train_stpes'"),
    ("train {run}/experiment.yaml run.train_steps=abc", 2, "'run.train_steps': expected int"),
    ("train {run}/experiment.yaml model.type=os.system", 2, "refusing type 'os.system'"),
    ("train {run}/experiment.yaml distribution.type=bogus", 2, "'distribution.type'"),
    ("train {run}/experiment.yaml run.model_dir={run}/afile", 2, "is a file; give a folder"),
    ("train {run}/experiment.yaml --checkpoint x", 2, "unrecognized arguments: --checkpoint"),
    ("evaluate {run}/model/hparams.yaml --checkpoint {run}/model/ckpt-9", 2, "does not exist"),
    ("evaluate {run}/model/hparams.yaml --checkpoint {run}/model", 2, "not a texkit checkpoint"),
    ("evaluate {run}/model/hparams.yaml --split nosuch", 2, "--split: the data has no 'nosuch'"),
    ("predict {run}/model/hparams.yaml --split nosuch --output {run}/p.jsonl", 2, "no 'nosuch'"),
    ("evaluate {run}/experiment.yaml run.model_dir={run}/empty", 2, "no checkpoint in"),
    ("predict {run}/model/hparams.yaml --output {run}", 2, "is a directory; give a file path"),
    (
        "export {run}/model/hparams.yaml --output {run}/served",
        2,
        "is not empty and is not a SavedModel",
    ),
    ("export {run}/model/hparams.yaml --output {run}/afile", 2, "is a file; give a folder path"),
    ("hparams WordEmbedder dim=-3", 2, "'dim': expected a positive int, got -3"),
    ("hparams os.system", 2, "refusing"),
    ("migrate {run}/missing.py --model x", 2, "missing.py does not exist"),
    # Issue 29: nesting, digits, a missing TPU, an existing output, configs that fail when run.
    (f"train {{run}}/experiment.yaml {'.'.join(['a'] * 2000)}=1", 2, "override key of 2,000 parts"),
    (f"train {{run}}/experiment.yaml run.train_steps={'9' * 5000}", 2, "'run.train_steps'"),
    ("train {run}/digits.yaml", 2, "the value of 'train_steps': an integer of 5,000 digits"),
    (f"hparams WordEmbedder dim={'9' * 5000}", 2, "'dim': cannot parse the value"),
    ("hparams SinusoidsPositionEmbedder dim=1000000000", 2, "'dim': expected at most 1048576"),
    ("train {run}/experiment.yaml distribution.type=tpu", 2, "'distribution.type': 'tpu': no TPU"),
    ("predict {run}/model/hparams.yaml --output {run}/afile", 2, "exists; give --overwrite"),
    ("predict {run}/model/hparams.yaml --output {run}/no/p.jsonl", 2, "does not exist"),
    ("migrate {run}/syntax.py --model x", 2, "syntax.py, line 2 failed when run as Python"),
    ("migrate {run}/raises.py --model x", 2, "raises.py, line 2 failed when run as Python"),
    ("migrate {run}/interrupts.py --model x", 2, "interrupts.py, line 3 failed when run as"),
    ("migrate {run}/syntax.py --model x --output {run}/afile", 2, "exists; give --overwrite"),
]


@pytest.mark.parametrize(
    "command, code, says", MISUSES, ids=[m[0][:60] or "nothing" for m in MISUSES]
)
def test_a_misused_command_is_one_clear_line_and_changes_nothing(
    trained_run, capsys, command, code, says
):
    run = str(trained_run)
    argv = [part.format(run=run) for part in command.split()]
    if argv and argv[0] in ("train", "evaluate", "predict", "export") and "--include" not in argv:
        argv += ["--include", TOY]
    before = sorted(os.listdir(trained_run)), sorted(os.listdir(trained_run / "model"))
    try:
        result = main(argv)
    except SystemExit as exit:  # argparse's own errors: its usage line, then the error
        result = exit.code
    error = capsys.readouterr().err
    assert result == code, error
    assert says.format(run=run) in error and "Traceback" not in error, error
    if not error.startswith("usage:"):
        assert error.count("\n") == 1, error
    assert (sorted(os.listdir(trained_run)), sorted(os.listdir(trained_run / "model"))) == before
    assert (trained_run / "served" / "keep.txt").read_text() == "a user's file"
    assert (trained_run / "afile").read_text() == "a user's file"


def _without_root_overrides():
    """In the child, before exec: give up root's power to write where permissions forbid
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), as an ordinary user has not got it."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for capability in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def test_a_read_only_model_dir_is_one_line_before_training():
    # Root writes anywhere: as root, the command runs without that power.
    from tests.run.toy_experiment import toy_experiment

    folder = tempfile.mkdtemp(prefix="texkit-read-only-")
    try:
        os.chmod(folder, 0o755)
        model_dir = os.path.join(folder, "model")
        os.mkdir(model_dir, 0o555)
        os.chmod(model_dir, 0o555)
        config = os.path.join(folder, "experiment.yaml")
        with open(config, "w") as f:
            f.write(yaml.safe_dump(toy_experiment(model_dir)))
        os.chmod(config, 0o644)

        result = subprocess.run(
            [sys.executable, "-m", "texkit.cli", "train", config, "--include", TOY],
            env={**os.environ, "HOME": folder, "PYTHONDONTWRITEBYTECODE": "1"},
            preexec_fn=_without_root_overrides,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 2, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert "'run.model_dir'" in last and "cannot write in" in last, result.stderr
        assert "Traceback" not in result.stderr
        assert os.listdir(model_dir) == []
    finally:
        os.chmod(os.path.join(folder, "model"), 0o755)
        shutil.rmtree(folder)


def test_a_builders_own_error_names_the_builder_and_its_section(tmp_path, capsys):
    config = _write_experiment(tmp_path)
    # The toy data builder does not check its batch size; TensorFlow's error alone would not
    # say where the -1 came from.
    assert main(["train", config, "data.hparams.batch_size=-1", "--include", TOY]) == 2
    error = capsys.readouterr().err
    assert "the data builder 'toy_data' failed with its data.hparams:" in error, error
    assert "Traceback" not in error and error.count("\n") == 1, error
