"""Sharded safetensors folders (``model.safetensors.index.json``) and bfloat16/float16 weights.

The real fixture folders (tests/fixtures/families/gpt2 and roberta) are rewritten in a temporary
folder: as shards with an index, in bfloat16, in float16, and both; each loads to the original's
weights rounded to the file's dtype, exactly, and to logits within what that rounding allows. A
broken index or shard is refused, naming the index and the entry, and nothing is loaded.
"""

from __future__ import annotations

import json
import os
import shutil

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

import texkit as tx
from texkit.pretrained import CheckpointError

FAMILIES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")
GPT2 = os.path.join(FAMILIES, "gpt2")
ROBERTA = os.path.join(FAMILIES, "roberta")
INDEX = "model.safetensors.index.json"


def rewrite(source, folder, dtype=np.float32, shards=1, single=False):
    """``source``'s folder copied to ``folder`` with its weights in ``dtype``, in ``shards``
    shards and an index (``single``: keep ``model.safetensors`` too); returns the map."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(source):
        if name != "model.safetensors" and os.path.isfile(os.path.join(source, name)):
            shutil.copy(os.path.join(source, name), folder)
    tensors = {
        k: v.astype(dtype) for k, v in load_file(os.path.join(source, "model.safetensors")).items()
    }
    if shards == 1:
        save_file(tensors, os.path.join(folder, "model.safetensors"))
        return None
    names = sorted(tensors)
    weight_map = {}
    for i in range(shards):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: tensors[k] for k in names[i::shards]}
        save_file(part, os.path.join(folder, shard))
        weight_map.update(dict.fromkeys(part, shard))
    write_index(folder, {"metadata": {"total_size": 0}, "weight_map": weight_map})
    if single:
        save_file(tensors, os.path.join(folder, "model.safetensors"))
    return weight_map


def write_index(folder, index):
    with open(os.path.join(folder, INDEX), "w") as f:
        f.write(index if isinstance(index, str) else json.dumps(index))


def values(module):
    return [np.asarray(v.numpy(), np.float32) for v in module.weights]


@pytest.fixture(scope="module")
def originals():
    return {source: tx.pretrained.from_pretrained(source) for source in (GPT2, ROBERTA)}


def gpt2_logits(lm):
    ids = tf.constant([[5, 17, 3, 42, 8, 1]])
    outputs, _, _ = lm(inputs=ids, sequence_length=[6])
    return outputs.logits.numpy()


@pytest.mark.parametrize(
    "dtype, shards",
    [(np.float32, 3), (ml_dtypes.bfloat16, 1), (np.float16, 1), (ml_dtypes.bfloat16, 2)],
    ids=["sharded", "bfloat16", "float16", "sharded-bfloat16"],
)
@pytest.mark.parametrize("source", [GPT2, ROBERTA], ids=["gpt2", "roberta"])
def test_rewritten_folder_loads_the_rounded_weights(tmp_path, originals, source, dtype, shards):
    folder = str(tmp_path / "model")
    rewrite(source, folder, dtype, shards)
    assert (INDEX in os.listdir(folder)) == (shards > 1)
    loaded = tx.pretrained.from_pretrained(folder)
    original = originals[source]
    assert type(loaded) is type(original)
    assert loaded.load_report.unused == original.load_report.unused
    assert sorted(loaded.load_report.loaded) == sorted(original.load_report.loaded)
    for got, want in zip(values(loaded), values(original), strict=True):
        np.testing.assert_array_equal(got, np.float32(want.astype(dtype)))
    if source == GPT2:
        tolerance = {np.float32: 1e-6, np.float16: 1e-2}.get(dtype, 1e-1)
        np.testing.assert_allclose(
            gpt2_logits(loaded), gpt2_logits(original), atol=tolerance, rtol=0
        )


def test_single_file_is_preferred_to_the_index(tmp_path, originals):
    folder = str(tmp_path / "model")
    rewrite(GPT2, folder, np.float32, shards=2, single=True)
    os.remove(os.path.join(folder, "model-00002-of-00002.safetensors"))  # never read
    loaded = tx.pretrained.from_pretrained(folder)
    for got, want in zip(values(loaded), values(originals[GPT2]), strict=True):
        np.testing.assert_array_equal(got, want)


def sharded(tmp_path):
    folder = str(tmp_path / "model")
    weight_map = rewrite(GPT2, folder, np.float32, shards=2)
    return folder, weight_map


def refused(folder, *words):
    with pytest.raises(CheckpointError) as error:
        tx.pretrained.from_pretrained(folder)
    for word in words:
        assert word in str(error.value), str(error.value)


def test_missing_shard_is_refused(tmp_path):
    folder, _ = sharded(tmp_path)
    os.remove(os.path.join(folder, "model-00002-of-00002.safetensors"))
    refused(folder, INDEX, "model-00002-of-00002.safetensors", "not there")


def test_map_entry_not_in_its_shard_is_refused(tmp_path):
    folder, weight_map = sharded(tmp_path)
    weight_map["transformer.h.9.mlp.c_fc.weight"] = "model-00001-of-00002.safetensors"
    write_index(folder, {"weight_map": weight_map})
    refused(folder, INDEX, "transformer.h.9.mlp.c_fc.weight", "does not hold it")


def test_map_entry_under_the_wrong_shard_is_refused(tmp_path):
    folder, weight_map = sharded(tmp_path)
    entry = next(k for k, v in weight_map.items() if v == "model-00002-of-00002.safetensors")
    weight_map[entry] = "model-00001-of-00002.safetensors"
    write_index(folder, {"weight_map": weight_map})
    refused(folder, INDEX, entry, "model-00002-of-00002.safetensors")


def test_shard_entry_not_in_the_map_is_refused(tmp_path):
    folder, weight_map = sharded(tmp_path)
    entry = sorted(weight_map)[0]
    del weight_map[entry]
    write_index(folder, {"weight_map": weight_map})
    refused(folder, INDEX, entry, "is not in the map")


@pytest.mark.parametrize("shard", ["../model.safetensors", "/etc/passwd", "..", "a/b.safetensors"])
def test_shard_outside_the_folder_is_refused(tmp_path, shard):
    folder, weight_map = sharded(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    entry = sorted(weight_map)[0]
    weight_map[entry] = shard
    write_index(folder, {"weight_map": weight_map})
    refused(folder, INDEX, entry, "a file name inside the folder")


@pytest.mark.parametrize(
    "text, words",
    [
        ("[1, 2]", ["expected a JSON object"]),
        ('{"metadata": {}}', ["weight_map"]),
        ('{"weight_map": ["a"]}', ["weight_map"]),
        ('{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}', ["'a'"]),
        ('{"weight_map": {', ["not valid JSON"]),
    ],
    ids=["not-an-object", "no-weight-map", "weight-map-a-list", "repeated-key", "truncated"],
)
def test_malformed_index_is_refused(tmp_path, text, words):
    folder, _ = sharded(tmp_path)
    write_index(folder, text)
    refused(folder, INDEX, *words)


def test_nan_in_a_bfloat16_entry_is_refused_and_nothing_loads(tmp_path, originals):
    folder = str(tmp_path / "model")
    rewrite(GPT2, folder, ml_dtypes.bfloat16, shards=2)
    shard = os.path.join(folder, "model-00001-of-00002.safetensors")
    tensors = load_file(shard)
    entry = sorted(tensors)[0]
    bad = tensors[entry].astype(np.float32)
    bad.flat[0] = np.nan
    tensors[entry] = bad.astype(ml_dtypes.bfloat16)
    save_file(tensors, shard)
    refused(folder, entry, "NaN or infinite")
    lm = tx.pretrained.from_pretrained(GPT2)
    before = values(lm)
    with pytest.raises(CheckpointError, match="nothing was loaded"):
        tx.pretrained.load_checkpoint(lm, folder)
    for got, want in zip(values(lm), before, strict=True):
        np.testing.assert_array_equal(got, want)


def test_other_non_float_dtypes_are_still_refused(tmp_path):
    folder = str(tmp_path / "model")
    rewrite(GPT2, folder, np.float32)
    file = os.path.join(folder, "model.safetensors")
    tensors = load_file(file)
    entry = sorted(tensors)[0]
    tensors[entry] = tensors[entry].astype(np.int32)
    save_file(tensors, file)
    refused(folder, entry, "not floating-point weights")


def test_truncated_shard_is_refused(tmp_path):
    folder, _ = sharded(tmp_path)
    shard = os.path.join(folder, "model-00002-of-00002.safetensors")
    with open(shard, "rb") as f:
        data = f.read()
    with open(shard, "wb") as f:
        f.write(data[: len(data) // 2])
    refused(folder, "model-00002-of-00002.safetensors", "truncated or corrupt")


def test_real_minilm_sharded_in_bfloat16(tmp_path):
    from tests.real_data import minilm_folder

    source = minilm_folder()
    folder = str(tmp_path / "minilm")
    rewrite(source, folder, ml_dtypes.bfloat16, shards=3)
    loaded = tx.pretrained.from_pretrained(folder)
    original = tx.pretrained.from_pretrained(source)
    for got, want in zip(values(loaded), values(original), strict=True):
        np.testing.assert_array_equal(got, np.float32(want.astype(ml_dtypes.bfloat16)))
    ids = tf.constant([[101, 7592, 2088, 102]])
    got, want = (m(ids, sequence_length=[4])[0].numpy() for m in (loaded, original))
    np.testing.assert_allclose(got, want, atol=5e-2 * np.abs(want).max(), rtol=0)
