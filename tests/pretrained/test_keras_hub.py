"""KerasHub preset folders of ``BertBackbone`` against KerasHub itself.

``tests/fixtures/keras_hub/bert_tiny/`` is a tiny random ``keras_hub.models.BertBackbone`` saved
by ``save_to_preset``, with its outputs on a padded batch in ``reference.npz``
(``tests/fixtures/keras_hub/make_fixture.py`` made them; KerasHub is not needed here, and the
tests block its import). texkit loads the folder and must reproduce the backbone's sequence and
pooled outputs at every valid step; the failure modes are checked on copies of the folder.
"""

import json
import os
import shutil
import sys

import h5py
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.data.tokenizers import BERTTokenizer
from texkit.modules import BERTEncoder, RoBERTaEncoder
from texkit.pretrained import CheckpointError, load_checkpoint

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_hub")
FOLDER = os.path.join(FIXTURES, "bert_tiny")
QUERY_1 = "layers/transformer_encoder_1/_self_attention_layer/query_dense/vars/0"


@pytest.fixture(autouse=True)
def no_keras_hub(monkeypatch):
    """texkit must not need KerasHub: importing it fails in these tests."""
    for name in [n for n in sys.modules if n == "keras_hub" or n.startswith("keras_hub.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "keras_hub", None)


def reference():
    arrays = np.load(os.path.join(FIXTURES, "reference.npz"), allow_pickle=False)
    return {k: arrays[k] for k in arrays.files}


def copy_of(tmp_path):
    path = str(tmp_path / "bert_tiny")
    shutil.copytree(FOLDER, path)
    return path


def h5_entries(path):
    names = []

    def visit(name, node):  # returns None: visititems stops at any other value
        if isinstance(node, h5py.Dataset):
            names.append(name)

    with h5py.File(os.path.join(path, "model.weights.h5"), "r") as f:
        f.visititems(visit)
    return sorted(names)


def snapshot(model):
    return [w.numpy().copy() for w in model.weights]


def assert_unchanged(model, before):
    for weight, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value, err_msg=weight.path)


def fresh():
    encoder = BERTEncoder(tx.pretrained.read_config(FOLDER)[1])
    encoder.build((None, None))
    return encoder, snapshot(encoder)


def test_outputs_equal_keras_hub_and_every_entry_is_loaded():
    encoder = tx.pretrained.from_pretrained(FOLDER)
    assert isinstance(encoder, BERTEncoder)
    ref = reference()
    mask = ref["padding_mask"].astype(bool)
    sequence, pooled = encoder(
        tf.constant(ref["token_ids"]),
        sequence_length=tf.constant(mask.sum(axis=1), tf.int32),
        segment_ids=tf.constant(ref["segment_ids"]),
    )
    np.testing.assert_allclose(
        np.asarray(sequence)[mask], ref["sequence_output"][mask], rtol=0, atol=1e-5
    )
    np.testing.assert_allclose(np.asarray(pooled), ref["pooled_output"], rtol=0, atol=1e-5)
    report = encoder.load_report
    assert report.format == "keras_hub" and report.family == "bert"
    assert sorted(report.loaded) == h5_entries(FOLDER)
    assert report.heads == ["pooler"] and report.unused == [] and report.missing_heads == []


def test_config_translation():
    hparams = tx.pretrained.read_config(FOLDER)[1]
    assert {k: hparams[k] for k in (
        "vocab_size", "num_hidden_layers", "num_attention_heads", "hidden_size",
        "intermediate_size", "max_position_embeddings", "type_vocab_size",
        "hidden_dropout_prob", "attention_probs_dropout_prob", "hidden_act", "layer_norm_eps",
    )} == {
        "vocab_size": 50, "num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8,
        "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2,
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu_new", "layer_norm_eps": 1e-12,
    }  # fmt: skip
    assert tx.pretrained.checkpoint_format(FOLDER) == "keras_hub"


def test_tokenizer_from_preset():
    tokenizer = BERTTokenizer.from_pretrained(FOLDER)
    assert tokenizer.lowercase is True and tokenizer.vocab_size == 50
    ref = reference()
    np.testing.assert_array_equal(tokenizer.tokenize(str(ref["text"])).numpy(), ref["text_ids"])


def test_tokenizer_option_it_lacks_is_refused(tmp_path):
    path = copy_of(tmp_path)
    file = os.path.join(path, "tokenizer.json")
    with open(file) as f:
        config = json.load(f)
    config["config"]["strip_accents"] = False
    with open(file, "w") as f:
        json.dump(config, f)
    with pytest.raises(ValueError, match="strip_accents=False"):
        BERTTokenizer.from_pretrained(path)


def test_truncated_weights_file_loads_nothing(tmp_path):
    path = copy_of(tmp_path)
    file = os.path.join(path, "model.weights.h5")
    with open(file, "rb") as f:
        data = f.read()
    with open(file, "wb") as f:
        f.write(data[: len(data) // 2])
    encoder, before = fresh()
    with pytest.raises(CheckpointError, match=r"model\.weights\.h5.*truncated or corrupt"):
        load_checkpoint(encoder, path)
    assert_unchanged(encoder, before)


def test_wrong_shape_names_the_entry_and_loads_nothing(tmp_path):
    path = copy_of(tmp_path)
    with h5py.File(os.path.join(path, "model.weights.h5"), "r+") as f:
        del f[QUERY_1]
        f.create_dataset(QUERY_1, data=np.zeros((8, 2, 3), np.float32))
    encoder, before = fresh()
    with pytest.raises(CheckpointError, match=rf"{QUERY_1}.*\[8, 2, 3\].*\[8, 2, 4\]"):
        load_checkpoint(encoder, path)
    assert_unchanged(encoder, before)


def test_unknown_layer_entry_is_an_error(tmp_path):
    path = copy_of(tmp_path)
    with h5py.File(os.path.join(path, "model.weights.h5"), "r+") as f:
        f.create_dataset("layers/dense_1/vars/0", data=np.zeros((8, 8), np.float32))
    with pytest.raises(CheckpointError, match="unknown encoder variable 'layers/dense_1/vars/0'"):
        tx.pretrained.from_pretrained(path)


def test_config_contradicting_weights_fails_before_building(tmp_path):
    path = copy_of(tmp_path)
    file = os.path.join(path, "config.json")
    with open(file) as f:
        config = json.load(f)
    config["config"]["intermediate_dim"] = 32
    with open(file, "w") as f:
        json.dump(config, f)
    with pytest.raises(CheckpointError, match="intermediate_size=32"):
        tx.pretrained.from_pretrained(path)


def test_other_backbone_is_refused(tmp_path):
    path = copy_of(tmp_path)
    file = os.path.join(path, "config.json")
    with open(file) as f:
        config = json.load(f)
    config["class_name"] = "RobertaBackbone"
    with open(file, "w") as f:
        json.dump(config, f)
    with pytest.raises(CheckpointError, match="'RobertaBackbone'.*BertBackbone"):
        tx.pretrained.from_pretrained(path)


def test_other_family_class_is_refused():
    with pytest.raises(CheckpointError, match="KerasHub 'BertBackbone'"):
        RoBERTaEncoder.from_pretrained(FOLDER)


def test_missing_weights_file_is_named(tmp_path):
    path = copy_of(tmp_path)
    os.remove(os.path.join(path, "model.weights.h5"))
    with pytest.raises(CheckpointError, match="no model.weights.h5"):
        tx.pretrained.from_pretrained(path)
