"""texkit.files: what is refused before a file is read, and that nothing in it blocks.

FIFOs and devices are made at test time; a FIFO nobody writes to would block a plain ``open``
forever, so those cases run in the sandbox (tests/hostile.py) under a time limit.
"""

import json
import os

import pytest
import tensorflow as tf

from texkit import files
from texkit.errors import MAX_DEPTH, MAX_DIGITS


class Refused(ValueError):
    """The error class a caller chooses (as the pretrained loaders pass CheckpointError)."""


def check(path):
    """A case for the sandbox: every entry point on ``path``."""
    results = []
    for call in (
        lambda: files.check_regular_file(path, error=Refused, context="hparams 'k'"),
        lambda: files.read_bytes(path, 100, error=Refused, context="hparams 'k'"),
        lambda: files.read_json(path, error=Refused, context="hparams 'k'"),
    ):
        try:
            call()
            results.append("read")
        except Refused as error:
            results.append(str(error))
    return results


def fifo(folder):
    path = os.path.join(folder, "pipe.json")
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "make, said",
    [
        (fifo, "a FIFO (named pipe), not a regular file"),
        (lambda folder: "/dev/zero", "a device, not a regular file"),
        (lambda folder: folder, "a folder, not a file"),
    ],
    ids=["fifo", "dev_zero", "folder"],
)
def test_special_files_are_refused_without_blocking(sandbox, tmp_path, make, said):
    path = make(str(tmp_path))
    outcome = sandbox.run(check, path, timeout=10)
    assert outcome.error is None, outcome.message
    for message in outcome.value:
        assert message.startswith(f"{path}: {said}") and message.endswith("(hparams 'k')")


def test_links_that_lead_nowhere_are_named(tmp_path):
    dangling = tmp_path / "config.json"
    dangling.symlink_to(tmp_path / "gone.json")
    with pytest.raises(Refused, match="a symbolic link to .*gone.json', which does not exist"):
        files.read_json(dangling, error=Refused)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(Refused, match="a: cannot be opened"):
        files.read_json(tmp_path / "a", error=Refused)
    with pytest.raises(Refused, match="no such file"):
        files.check_regular_file(tmp_path / "missing", error=Refused)


def test_a_link_to_a_regular_file_is_followed(tmp_path):
    target = tmp_path / "real.json"
    target.write_text('{"a": 1}')
    (tmp_path / "link.json").symlink_to(target)
    assert files.read_json(tmp_path / "link.json") == {"a": 1}
    assert files.check_regular_file(tmp_path / "link.json") == target.stat().st_size


def test_sizes_over_the_limit_are_refused_before_reading(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 101)
    with pytest.raises(
        Refused, match=r"big.txt: 101 bytes, more than a vocabulary may have \(100\)"
    ):
        files.read_bytes(path, 100, error=Refused, what="vocabulary")
    path.write_bytes(b"x" * 100)
    assert files.read_bytes(path, 100) == b"x" * 100  # exactly the limit is read


def test_json_is_read_strictly(tmp_path):
    path = tmp_path / "config.json"

    def read(text):
        path.write_text(text, encoding="utf-8")
        return files.read_json(path, error=Refused, context="the config")

    assert read('\ufeff{"a": [1, 2.5, null], "b": {"c": "d"}}') == json.loads(
        '{"a": [1, 2.5, null], "b": {"c": "d"}}'
    )
    with pytest.raises(Refused, match=r"config.json: the key 'a' is given twice in one object \("):
        read('{"a": 1, "b": {"a": 2}, "a": 3}')
    assert read('{"a": 1, "b": {"a": 2}}')["b"]["a"] == 2  # the same key in another object
    with pytest.raises(Refused, match=f"nested deeper than {MAX_DEPTH} levels"):
        read("[" * 100_000 + "]" * 100_000)  # past the JSON parser's recursion limit
    with pytest.raises(Refused, match=f"nested deeper than {MAX_DEPTH} levels"):
        read('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))
    assert read('{"a": ' * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1))
    with pytest.raises(Refused, match=f"an integer of 100,001 digits \\(at most {MAX_DIGITS}"):
        read('{"n": ' + "9" * 100_001 + "}")
    assert read('{"n": -' + "9" * MAX_DIGITS + "}")["n"] == -int("9" * MAX_DIGITS)
    with pytest.raises(Refused, match="not valid JSON"):
        read('{"a": }')
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(Refused, match="config.json: not UTF-8 text"):
        files.read_json(path, error=Refused)


def test_file_systems_of_tensorflow_are_read_through_gfile():
    path = "ram://texkit_files_test/config.json"
    with tf.io.gfile.GFile(path, "w") as stream:
        stream.write('{"a": 1}')
    assert files.read_json(path) == {"a": 1}
    assert files.check_regular_file(path) == len('{"a": 1}')
    assert files.file_size(path) == len('{"a": 1}')
    with pytest.raises(Refused, match="more than a config file may have"):
        files.read_json(path, limit=3, error=Refused)
    with pytest.raises(Refused, match="ram://texkit_files_test/none.json: no such file"):
        files.read_json("ram://texkit_files_test/none.json", error=Refused)


def test_file_size_answers_none_for_anything_but_a_regular_file(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert files.file_size(tmp_path / "f") == 3
    assert files.file_size(tmp_path) is None
    assert files.file_size("/dev/zero") is None
    assert files.file_size(tmp_path / "missing") is None
