"""Hostile configs end in one clear error naming the key or file, within seconds and bounded memory.

Each case runs in the sandbox (tests/hostile.py): a child process under a 3 GiB address-space cap
and a time limit, so a regression (a FIFO read that blocks, /dev/zero read whole, a table of
10^9 x 512 values, a RecursionError) fails its test instead of the machine. FIFOs and files are
made at test time in ``tmp_path``.
"""

import contextlib
import io
import os

import pytest
import yaml

from texkit.errors import MAX_DEPTH

from .test_limits import nested

TOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run", "toy_experiment.py")


# -- the cases (run in the child) -----------------------------------------------------------------


def cli(argv):
    """``texkit ARGV``: [exit code, what it wrote on stderr]."""
    from texkit.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    return [code, err.getvalue()]


def module_with_deep_hparams(depth):
    import texkit as tx

    tx.modules.WordEmbedder(vocab_size=10, hparams={"dim": 4, "extra": nested(depth)})


def yaml_config(path):
    import texkit as tx

    return tx.HParams.from_yaml(path, None).todict()


def override(text):
    import texkit as tx

    return tx.apply_overrides({}, [text])


def sinusoids(dim, position_size):
    import texkit as tx

    embedder = tx.modules.SinusoidsPositionEmbedder(position_size, hparams={"dim": dim})
    return embedder.dim


def decoder_positions(position_size):
    import texkit as tx

    hparams = {"dim": 512, "position_embedder": {"type": "sinusoids", "position_size": None}}
    hparams["position_embedder"]["position_size"] = position_size
    tx.modules.TransformerDecoder(vocab_size=8, hparams=hparams)


# -- the tests ------------------------------------------------------------------------------------


def _one_line(outcome, code, *says):
    returned, err = outcome.value
    assert returned == code, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for text in says:
        assert text in err, err


def test_hparams_a_thousand_levels_deep_name_the_path_before_keras_sees_them(sandbox):
    outcome = sandbox.expect_error(
        module_with_deep_hparams,
        1000,
        error="HParamsError",
        contains=("'extra.a.a.a.", "more levels", f"nested deeper than {MAX_DEPTH} levels"),
    )
    assert outcome.seconds < 10


def test_a_2000_level_override_is_one_line_from_texkit_train(sandbox, tmp_path):
    key = ".".join(["a"] * 2000)
    sandbox.expect_error(override, key + "=1", error="HParamsError", contains=("2,000 parts",))
    config = tmp_path / "experiment.yaml"
    config.write_text("run: {train_steps: 1}\n")
    outcome = sandbox.run(cli, ["train", str(config), key + "=1", "--include", TOY])
    _one_line(outcome, 2, "2,000 parts", f"deeper than {MAX_DEPTH} levels")


def test_integers_of_5000_digits_name_the_key(sandbox, tmp_path):
    config = tmp_path / "experiment.yaml"
    config.write_text("run:\n  train_steps: " + "9" * 5000 + "\n")
    sandbox.expect_error(
        yaml_config, str(config), error="HParamsError",
        contains=(str(config), "'train_steps'", "5,000 digits", "line 2"),
    )  # fmt: skip
    outcome = sandbox.run(cli, ["train", str(config), "--include", TOY])
    _one_line(outcome, 2, "'train_steps'", "5,000 digits")
    config.write_text("run: {train_steps: 1}\n")
    argv = ["train", str(config), "run.train_steps=" + "9" * 5000, "--include", TOY]
    _one_line(sandbox.run(cli, argv), 2, "'run.train_steps'", "5,000 digits")


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_fifo_or_a_device_as_the_config_is_refused_without_blocking(sandbox, tmp_path, kind):
    if kind == "fifo":
        path = str(tmp_path / "experiment.yaml")
        os.mkfifo(path)
        says = "FIFO"
    else:
        path = "/dev/zero"
        says = "a device, not a regular file"
    sandbox.expect_error(yaml_config, path, error="HParamsError", contains=(path, says))
    _one_line(sandbox.run(cli, ["train", path, "--include", TOY]), 2, path, says)
    assert sandbox.run(cli, ["hparams", "WordEmbedder"]).value[0] == 0  # the child is still well


def test_fifos_as_the_commands_other_files_are_refused_without_blocking(sandbox, tmp_path):
    fifo = str(tmp_path / "pipe.py")
    os.mkfifo(fifo)
    config = tmp_path / "experiment.yaml"
    config.write_text(yaml.safe_dump({"run": {"model_dir": str(tmp_path / "model")}}))
    _one_line(sandbox.run(cli, ["train", str(config), "--include", fifo]), 2, fifo, "FIFO")
    _one_line(sandbox.run(cli, ["migrate", fifo, "--model", "x"]), 2, fifo, "FIFO")
    argv = ["predict", str(config), "--output", fifo, "--overwrite", "--include", TOY]
    _one_line(sandbox.run(cli, argv), 2, fifo, "is not a regular file")
    assert not (tmp_path / "model").exists()


def test_sizes_that_would_allocate_gigabytes_are_refused_at_construction(sandbox):
    from texkit.hparams.core import MAX_DIM, MAX_ELEMENTS

    # 10^9 widths: 7.45 GiB of float64 arrays before the bound.
    outcome = sandbox.expect_error(
        sinusoids, 10**9, None, error="HParamsError", contains=("'dim'", f"at most {MAX_DIM}")
    )
    assert outcome.seconds < 5
    sandbox.expect_error(
        sinusoids, 1024, 2**22, error="ValueError",
        contains=("position_size=4194304 x dim=1024", f"{MAX_ELEMENTS:,}"),
    )  # fmt: skip
    sandbox.expect_error(
        decoder_positions, 2**23, error="HParamsError",
        contains=("'position_embedder.position_size'", f"{MAX_ELEMENTS:,}"),
    )  # fmt: skip
    # Real sizes still build their table (64 MiB here), well within the cap.
    assert sandbox.run(sinusoids, 2048, 8192).value == 2048
