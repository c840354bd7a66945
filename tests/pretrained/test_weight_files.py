"""A format's weights may be several files: the reader takes each entry from its own file."""

import os
import re

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from texkit.pretrained.checkpoints import HUGGINGFACE, CheckpointError
from texkit.pretrained.family import Format, huggingface_format
from texkit.pretrained.folders import weight_files
from texkit.pretrained.readers import WeightsReader

GPT2 = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families", "gpt2")


def split(tmp_path, state, parts=2):
    names = sorted(state)
    files = []
    for index in range(parts):
        file = str(tmp_path / f"model-{index + 1}-of-{parts}.safetensors")
        save_file({name: state[name] for name in names[index::parts]}, file)
        files.append(file)
    return files


def test_entries_of_several_files_read_as_one_checkpoint(tmp_path):
    state = load_file(os.path.join(GPT2, "model.safetensors"))
    files = split(tmp_path, state)
    reader = WeightsReader(files, HUGGINGFACE, lambda name: False)
    assert sorted(reader.shapes) == sorted(state)
    assert reader.file_bytes == sum(os.path.getsize(f) for f in files)
    for name, value in state.items():
        np.testing.assert_array_equal(reader.read(name), value)
    assert reader.file.endswith("(model-1-of-2.safetensors, model-2-of-2.safetensors)")


def test_an_entry_in_two_files_is_an_error(tmp_path):
    first, second = str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")
    save_file({"x": np.zeros(2, np.float32)}, first)
    save_file({"x": np.ones(2, np.float32)}, second)
    with pytest.raises(CheckpointError, match="'x' is in .*a.safetensors too"):
        WeightsReader([first, second], HUGGINGFACE, lambda name: False)


def test_a_format_names_its_files_and_a_string_is_one():
    fmt = huggingface_format(re.compile("^$"), re.compile("^h"))
    assert fmt.weights == ("model.safetensors",)
    assert weight_files("/m", fmt) == [os.path.join("/m", "model.safetensors")]
    sharded = Format(HUGGINGFACE, "config.json", ("a.safetensors", "b.safetensors"),
                     re.compile("^$"), re.compile("^h"))  # fmt: skip
    assert weight_files("/m", sharded) == ["/m/a.safetensors", "/m/b.safetensors"]
