"""texkit._quiet: TensorFlow's start-up lines dropped at the level TF_CPP_MIN_LOG_LEVEL asks for.

The whole path (a fresh process importing texkit) is tested by the CLI and example tests; here the
filter itself, on lines in each of the formats TensorFlow writes.
"""

import os

import pytest

from texkit._quiet import _c_stderr_filtered, asks_verbose


def test_quiet_tensorflow_drops_the_lines_the_level_hides_and_keeps_the_rest(capfd):
    written = (
        b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        b"I0000 00:00:1795469269.516676    9985 port.cc:153] oneDNN custom operations are on.\n"
        b"W0000 00:00:1795469269.516676    9985 cudart_stub.cc:31] a warning\n"
        b"E0000 00:00:1795469270.610130    9985 cuda_platform.cc:52] failed call to cuInit\n"
        b"2025-01-01 12:00:00.000001: I tensorflow/core/platform/cpu_feature_guard.cc:1] info\n"
        b"a line of the user's\n"
    )
    with _c_stderr_filtered(2):
        os.write(2, written)
    kept = capfd.readouterr().err.splitlines()
    assert kept == [kept[0], "a line of the user's"] and "cuInit" in kept[0]
    with _c_stderr_filtered(0):
        os.write(2, written)
    assert capfd.readouterr().err == written.decode()
    # After an error, everything is passed on: it may explain the error.
    with pytest.raises(ImportError), _c_stderr_filtered(2):
        os.write(2, written)
        raise ImportError("a broken library")
    assert capfd.readouterr().err == written.decode()


@pytest.mark.parametrize(
    "argv, verbose",
    [
        (["/venv/bin/texkit", "train", "x.yaml", "--verbose"], True),
        (["/venv/bin/texkit", "--verbose", "hparams", "WordEmbedder"], True),
        (["/venv/bin/texkit", "train", "x.yaml"], False),
        # While Python imports the packages of a module run with -m, argv[0] is "-m".
        (["-m", "--config", "c.yaml", "--verbose"], True),
        # Another program's --verbose is its own: TensorFlow stays quiet.
        (["/usr/bin/pytest", "--verbose"], False),
        (["train.py", "--verbose"], False),
        ([], False),
    ],
)
def test_verbose_is_asked_by_the_texkit_command_and_python_m_modules_only(argv, verbose):
    assert asks_verbose(argv) is verbose
