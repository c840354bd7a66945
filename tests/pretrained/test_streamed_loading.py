"""Loading in two passes (texkit/pretrained/streamed_loading.py): all checks, then assignment,
one shard at a time, and all or nothing even when a shard changes between the passes.

The folders are the GPT-2 fixture (tests/fixtures/families/gpt2) rewritten here as three shards
with every weight doubled (exact in float32), so a variable that took a value from a shard is
told from one that did not. Each broken folder is loaded into a model made from the fixture
itself, which must keep every value. A change between the passes is made through the module's
``between_passes`` hook, after the checks passed; the error must name the shard, and the
variables assigned from the shards before it must get their previous values back.
"""

from __future__ import annotations

import json
import os
import re

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

import texkit as tx
from texkit.pretrained import CheckpointError, streamed_loading

FAMILIES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")
GPT2 = os.path.join(FAMILIES, "gpt2")
ROBERTA = os.path.join(FAMILIES, "roberta")
LLAMA = os.path.join(os.path.dirname(__file__), "..", "fixtures", "llm", "llama")
INDEX = "model.safetensors.index.json"
SHARDS = [f"model-{i:05d}-of-00003.safetensors" for i in (1, 2, 3)]
LAST = SHARDS[-1]


def sharded(tmp_path, dtype=np.float32, scale=2.0):
    """The GPT-2 fixture as three shards (entries in sorted order) of ``scale`` times its
    weights in ``dtype``; returns the folder and the index's map."""
    folder = tmp_path / "model"
    folder.mkdir()
    with open(os.path.join(GPT2, "config.json")) as f:
        (folder / "config.json").write_text(f.read())
    tensors = load_file(os.path.join(GPT2, "model.safetensors"))
    names = sorted(tensors)
    weight_map = {}
    for i, shard in enumerate(SHARDS):
        part = {k: (tensors[k] * np.float32(scale)).astype(dtype) for k in names[i::3]}
        save_file(part, str(folder / shard))
        weight_map.update(dict.fromkeys(part, shard))
    write_index(folder, weight_map)
    return str(folder), weight_map


def write_index(folder, weight_map):
    with open(os.path.join(folder, INDEX), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)


def values(module):
    return [np.array(v.numpy()) for v in module.weights]


@pytest.fixture
def model():
    """A model holding the fixture's weights, and a copy of its values."""
    lm = tx.pretrained.from_pretrained(GPT2)
    return lm, values(lm)


def assert_unchanged(lm, before):
    for variable, want in zip(lm.weights, before, strict=True):
        np.testing.assert_array_equal(variable.numpy(), want, err_msg=variable.path)


def refused(lm, folder, *words):
    """Loading ``folder`` into ``lm`` and building from it both fail, naming ``words``."""
    for load in (lambda: tx.pretrained.load_checkpoint(lm, folder),
                 lambda: tx.pretrained.from_pretrained(folder)):  # fmt: skip
        with pytest.raises(CheckpointError) as error:
            load()
        for word in words:
            assert word in str(error.value), str(error.value)
    return str(error.value)


def test_a_sharded_folder_loads_every_weight_from_its_shard(tmp_path, model):
    lm, before = model
    folder, _ = sharded(tmp_path)
    report = tx.pretrained.load_checkpoint(lm, folder)
    for got, want in zip(values(lm), before, strict=True):
        np.testing.assert_array_equal(got, want * np.float32(2))
    assert sorted(report.loaded) == sorted(tx.pretrained.from_pretrained(GPT2).load_report.loaded)


def test_no_shard_is_left_open(tmp_path, model):
    lm, _ = model
    folder, _ = sharded(tmp_path)

    def open_files():
        fds = "/proc/self/fd"
        return [os.path.realpath(os.path.join(fds, fd)) for fd in os.listdir(fds)]

    def between(plan):  # after the checks: every shard was closed again
        assert not [f for f in open_files() if f.startswith(os.path.realpath(folder))]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed_loading, "between_passes", between)
        tx.pretrained.load_checkpoint(lm, folder)
    assert not [f for f in open_files() if f.startswith(os.path.realpath(folder))]


@pytest.mark.parametrize("source", [GPT2, ROBERTA], ids=["gpt2", "roberta"])
def test_entries_read_and_assigned_in_parts_load_the_same_weights(source):
    """Parts of 100 bytes (a row or two of the fixtures' entries) go through the part-by-part
    path of every layout the families have (GPT-2's fused and split query/key/value, Hugging
    Face's transposed dense kernels): the weights equal those loaded whole, which
    test_gpt2.py and test_bert.py check against transformers."""
    whole = values(tx.pretrained.from_pretrained(source))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed_loading, "_CHUNK_BYTES", 100)
        in_parts = tx.pretrained.from_pretrained(source)
    for got, want in zip(values(in_parts), whole, strict=True):
        np.testing.assert_array_equal(got, want)


def _reads_share_a_buffer(variable):
    """Two reads of the variable are the same memory (``np.from_dlpack`` sees each read's
    buffer): true for a variable TensorFlow reads in place, false for one in its "copy on read"
    mode, where each read copies the whole variable."""
    first = np.from_dlpack(tf.convert_to_tensor(variable))
    second = np.from_dlpack(tf.convert_to_tensor(variable))
    return first.__array_interface__["data"][0] == second.__array_interface__["data"][0]


@pytest.mark.parametrize("source", [GPT2, ROBERTA, LLAMA], ids=["gpt2", "roberta", "llama"])
def test_weights_loaded_in_parts_are_read_in_place_afterwards(source):
    """TensorFlow's slice assignment (``variable[a:b].assign``) would leave each variable
    loaded part by part copying its whole value at every later read, every decoding step
    included (checked here: such a variable fails the same test). The loader's parts leave
    every variable read in place."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed_loading, "_CHUNK_BYTES", 100)
        module = tx.pretrained.from_pretrained(source)
    assert all(_reads_share_a_buffer(v) for v in module.weights)
    sliced = tf.Variable(np.zeros([4, 3], np.float32))
    assert _reads_share_a_buffer(sliced)
    sliced[1:2].assign(np.ones([1, 3], np.float32))
    assert not _reads_share_a_buffer(sliced)


def test_non_finite_values_are_counted_across_parts(tmp_path):
    folder, _ = sharded(tmp_path)
    path = os.path.join(folder, LAST)
    tensors = load_file(path)
    name = next(k for k in sorted(tensors) if tensors[k].ndim == 2)
    tensors[name][0, 0] = np.nan
    tensors[name][-1, -1] = -np.inf
    save_file(tensors, path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed_loading, "_CHUNK_BYTES", 100)
        with pytest.raises(CheckpointError, match=re.escape(f"'{name}' holds 2 NaN or infinite")):
            tx.pretrained.from_pretrained(folder)


@pytest.mark.parametrize("policy", ["float32", "bfloat16"])
def test_bfloat16_weights_stay_bfloat16_only_where_the_policy_asks(tmp_path, policy):
    folder, _ = sharded(tmp_path, ml_dtypes.bfloat16)
    lm = tx.pretrained.from_pretrained(folder, dtype=policy)
    stored = {}
    for shard in SHARDS:
        stored.update(load_file(os.path.join(folder, shard)))
    assert {str(v.dtype) for v in lm.weights} == {policy}
    embedding = next(v for v in lm.weights if "word_embedder" in v.path)
    wte = stored["transformer.wte.weight"]
    np.testing.assert_array_equal(np.asarray(embedding.numpy(), np.float32), np.float32(wte))


# -- bad input: each refused by the checks, naming the file or key, nothing assigned ----------


def test_a_missing_shard(tmp_path, model):
    folder, _ = sharded(tmp_path)
    os.remove(os.path.join(folder, SHARDS[1]))
    refused(model[0], folder, INDEX, SHARDS[1], "not there")
    assert_unchanged(*model)


def test_an_index_that_names_a_file_not_there(tmp_path, model):
    folder, weight_map = sharded(tmp_path)
    weight_map["transformer.ln_f.bias"] = "model-00004-of-00004.safetensors"
    write_index(folder, weight_map)
    refused(model[0], folder, INDEX, "model-00004-of-00004.safetensors", "not there")
    assert_unchanged(*model)


def test_a_truncated_shard(tmp_path, model):
    folder, _ = sharded(tmp_path)
    path = os.path.join(folder, LAST)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) - 100])
    refused(model[0], folder, LAST, "truncated or corrupt")
    assert_unchanged(*model)


def test_a_shard_holding_a_tensor_not_in_the_index(tmp_path, model):
    folder, _ = sharded(tmp_path)
    path = os.path.join(folder, LAST)
    tensors = load_file(path)
    tensors["transformer.h.0.attn.extra"] = np.ones(3, np.float32)
    save_file(tensors, path)
    refused(model[0], folder, INDEX, "transformer.h.0.attn.extra", LAST, "is not in the map")
    assert_unchanged(*model)


def test_a_tensor_of_the_wrong_shape(tmp_path, model):
    folder, _ = sharded(tmp_path)
    path = os.path.join(folder, LAST)
    tensors = load_file(path)
    name = sorted(tensors)[-1]
    tensors[name] = np.ones((*tensors[name].shape[:-1], 5), np.float32)
    save_file(tensors, path)
    with pytest.raises(CheckpointError, match=re.escape(f"'{name}' has shape")):
        tx.pretrained.load_checkpoint(model[0], folder)
    with pytest.raises(CheckpointError, match=re.escape(name)):
        tx.pretrained.from_pretrained(folder)
    assert_unchanged(*model)


def test_a_non_finite_value_in_the_last_shard_assigns_nothing_from_the_others(tmp_path, model):
    folder, _ = sharded(tmp_path)
    path = os.path.join(folder, LAST)
    tensors = load_file(path)
    name = sorted(tensors)[-1]
    tensors[name].flat[-1] = np.inf
    save_file(tensors, path)
    message = refused(model[0], folder, name, "1 NaN or infinite", "nothing was loaded")
    assert message.count("NaN or infinite") == 1, message
    assert_unchanged(*model)


# -- a shard that changes after the checks passed ------------------------------------------


def _nan_in_last_entry(path):
    tensors = load_file(path)
    name = sorted(tensors)[-1]
    tensors[name].flat[0] = np.nan
    save_file(tensors, path)


def _cut(path):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def _reshaped(path):
    tensors = load_file(path)
    name = sorted(tensors)[-1]
    tensors[name] = tensors[name].reshape(-1, 1)
    save_file(tensors, path)


CHANGES = {
    "a-nan": (_nan_in_last_entry, "NaN or infinite"),
    "truncated": (_cut, "truncated or corrupt"),
    "removed": (os.remove, "not a readable safetensors file"),
    "header-changed": (_reshaped, "changed while it was being loaded"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_shard_changed_between_the_passes_restores_every_variable(tmp_path, model, change):
    lm, before = model
    folder, _ = sharded(tmp_path)
    alter, words = CHANGES[change]
    changed = []

    def between(plan):
        alter(os.path.join(folder, LAST))
        changed.append(plan)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed_loading, "between_passes", between)
        with pytest.raises(CheckpointError) as error:
            tx.pretrained.load_checkpoint(lm, folder)
    message = str(error.value)
    assert changed and LAST in message and words in message, message
    # The first two shards were assigned before the last one failed, then restored.
    restored = re.search(r"nothing was loaded: the (\d+) variables assigned were restored", message)
    assert restored and int(restored.group(1)) > 0, message
    assert_unchanged(lm, before)


def test_a_model_built_for_the_load_is_discarded_without_a_copy(tmp_path):
    folder, _ = sharded(tmp_path)

    def between(plan):
        _nan_in_last_entry(os.path.join(folder, LAST))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed_loading, "between_passes", between)
        with pytest.raises(CheckpointError, match=f"{LAST}.*discarded"):
            tx.pretrained.from_pretrained(folder)
