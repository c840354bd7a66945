"""BERT checkpoint loading: real all-MiniLM-L6-v2 weights against Hugging Face's outputs.

The reference outputs in tests/fixtures/minilm were computed by Hugging Face transformers on
torch (tests/fixtures/minilm/make_reference.py). The Google-format checkpoint is written here
from the same weights, with names converted by rules written in this file, not texkit's table.
"""

import json
import os
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

import texkit as tx
from tests.real_data import minilm_folder  # skipped without the package, failed under CI
from texkit.hparams import HParamsError
from texkit.modules import BERTEncoder, BERTPretrainer
from texkit.pretrained import CheckpointError, load_checkpoint

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "minilm")


@pytest.fixture(scope="module")
def reference():
    with open(os.path.join(FIXTURES, "reference.json")) as f:
        data = json.load(f)
    arrays = np.load(os.path.join(FIXTURES, "reference.npz"), allow_pickle=False)
    return data, {k: arrays[k] for k in arrays.files}


@pytest.fixture(scope="module")
def minilm():
    return BERTEncoder.from_pretrained(minilm_folder())


def google_name(hf_name):
    """Hugging Face BERT name -> (Google TF name, transpose?), by the two projects' conventions."""
    name = hf_name[len("bert.") :] if hf_name.startswith("bert.") else hf_name
    name = re.sub(r"layer\.(\d+)", r"layer_\1", name)
    name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
        "LayerNorm.bias", "LayerNorm.beta"
    )
    transpose = False
    if re.search(r"_embeddings\.weight$", name):
        name = name[: -len(".weight")]
    elif name.endswith(".weight"):
        name, transpose = name[: -len(".weight")] + ".kernel", True
    return "bert/" + name.replace(".", "/"), transpose


def write_google_checkpoint(folder, hf_state, config, extra=None):
    """A TF1-style name-based checkpoint, as Google's BERT release ships, plus Adam slots."""
    os.makedirs(folder, exist_ok=True)
    names, tensors = [], []
    for hf_name, value in hf_state.items():
        if hf_name == "embeddings.position_ids":
            continue
        name, transpose = google_name(hf_name)
        value = value.T if transpose else value
        names += [name, name + "/adam_m", name + "/adam_v"]
        tensors += [value, np.zeros_like(value), np.zeros_like(value)]
    for name, value in (extra or {}).items():
        names.append(name)
        tensors.append(value)
    names.append("global_step")
    tensors.append(np.array(1000, np.int64))
    tf.raw_ops.SaveV2(
        prefix=os.path.join(folder, "bert_model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(t) for t in tensors],
    )
    google_config = {k: v for k, v in config.items() if k in (
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
        "max_position_embeddings", "type_vocab_size", "initializer_range")}  # fmt: skip
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump(google_config, f)


def run_reference_batch(encoder, batch):
    ids = np.array(batch["input_ids"], np.int32)
    mask = np.array(batch["attention_mask"], bool)
    outputs, pooled = encoder(
        ids,
        sequence_length=mask.sum(1).astype(np.int32),
        segment_ids=np.array(batch["token_type_ids"], np.int32),
    )
    return outputs.numpy(), pooled.numpy(), mask


@pytest.mark.parametrize("batch", ["single", "pairs"])
def test_huggingface_weights_match_reference_outputs(minilm, reference, batch):
    data, arrays = reference
    outputs, pooled, mask = run_reference_batch(minilm, data[batch])
    want = arrays[f"{batch}_last_hidden_state"]
    assert np.abs(outputs[mask] - want[mask]).max() <= 1e-5
    assert np.abs(pooled - arrays[f"{batch}_pooler_output"]).max() <= 1e-5


def test_config_translates_to_hparams(minilm):
    with open(os.path.join(minilm_folder(), "config.json")) as f:
        config = json.load(f)
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        assert minilm.hparams[key] == config[key]


@pytest.fixture(scope="module")
def google_minilm(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("google") / "minilm")
    source = minilm_folder()
    with open(os.path.join(source, "config.json")) as f:
        config = json.load(f)
    write_google_checkpoint(folder, load_file(os.path.join(source, "model.safetensors")), config)
    shutil.copy(os.path.join(source, "vocab.txt"), folder)
    return folder


@pytest.fixture(scope="module")
def tanh_gelu_minilm(tmp_path_factory):
    """MiniLM's Hugging Face folder with ``hidden_act: gelu_new`` (the tanh approximation)."""
    folder = str(tmp_path_factory.mktemp("tanh") / "minilm")
    shutil.copytree(minilm_folder(), folder)
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({**config, "hidden_act": "gelu_new"}, f)
    return folder


@pytest.mark.parametrize("batch", ["single", "pairs"])
def test_google_checkpoint_of_the_same_weights_gives_google_s_outputs(
    google_minilm, tanh_gelu_minilm, reference, batch
):
    """Google's BERT code computes its config's ``gelu`` with the tanh approximation: the
    Google folder equals the Hugging Face folder whose config says ``gelu_new``, and differs
    from the exact GELU's outputs by what the approximation changes."""
    assert tx.pretrained.checkpoint_format(google_minilm) == "google"
    encoder = BERTEncoder.from_pretrained(google_minilm)
    assert encoder.hparams.hidden_act == "gelu_new"
    data, arrays = reference
    outputs, pooled, mask = run_reference_batch(encoder, data[batch])
    same, same_pooled, _ = run_reference_batch(
        BERTEncoder.from_pretrained(tanh_gelu_minilm), data[batch]
    )
    assert np.abs(outputs[mask] - same[mask]).max() <= 1e-6
    assert np.abs(pooled - same_pooled).max() <= 1e-6
    exact = arrays[f"{batch}_last_hidden_state"]
    assert 1e-6 < np.abs(outputs[mask] - exact[mask]).max() <= 1e-2


def test_user_hparams_may_change_dropout_but_not_the_architecture():
    encoder = BERTEncoder.from_pretrained(minilm_folder(), {"hidden_dropout_prob": 0.2})
    assert encoder.hparams.hidden_dropout_prob == 0.2
    with pytest.raises(HParamsError, match="num_hidden_layers") as info:
        BERTEncoder.from_pretrained(minilm_folder(), {"num_hidden_layers": 12})
    assert info.value.path == "num_hidden_layers"


# -- a tiny BERT in both formats, for the error cases ----------------------------------------

TINY = {
    "vocab_size": 30,
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 12,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "model_type": "bert",
}


def tiny_hf_state(seed=0, heads=False):
    """Hugging Face BertModel (BertForPreTraining with heads) names and [out, in] shapes."""
    rng = np.random.default_rng(seed)
    h, i, v = TINY["hidden_size"], TINY["intermediate_size"], TINY["vocab_size"]
    shapes = {
        "embeddings.word_embeddings.weight": (v, h),
        "embeddings.position_embeddings.weight": (TINY["max_position_embeddings"], h),
        "embeddings.token_type_embeddings.weight": (2, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
        "pooler.dense.weight": (h, h),
        "pooler.dense.bias": (h,),
    }
    for n in range(TINY["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):  # fmt: skip
            shapes[p + part + ".weight"] = (h, h)
            shapes[p + part + ".bias"] = (h,)
        shapes[p + "attention.output.LayerNorm.weight"] = (h,)
        shapes[p + "attention.output.LayerNorm.bias"] = (h,)
        shapes[p + "intermediate.dense.weight"] = (i, h)
        shapes[p + "intermediate.dense.bias"] = (i,)
        shapes[p + "output.dense.weight"] = (h, i)
        shapes[p + "output.dense.bias"] = (h,)
        shapes[p + "output.LayerNorm.weight"] = (h,)
        shapes[p + "output.LayerNorm.bias"] = (h,)
    state = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
    if heads:
        state = {"bert." + k: w for k, w in state.items()}
        state.update({
            "cls.predictions.transform.dense.weight": rng.normal(size=(h, h)).astype(np.float32),
            "cls.predictions.transform.dense.bias": rng.normal(size=(h,)).astype(np.float32),
            "cls.predictions.transform.LayerNorm.weight": rng.normal(size=(h,)).astype(np.float32),
            "cls.predictions.transform.LayerNorm.bias": rng.normal(size=(h,)).astype(np.float32),
            "cls.predictions.bias": rng.normal(size=(v,)).astype(np.float32),
            "cls.seq_relationship.weight": rng.normal(size=(2, h)).astype(np.float32),
            "cls.seq_relationship.bias": rng.normal(size=(2,)).astype(np.float32),
        })  # fmt: skip
    return state


def write_hf(folder, state, config=TINY):
    os.makedirs(folder, exist_ok=True)
    save_file(state, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    return folder


def snapshot(model):
    return [w.numpy().copy() for w in model.weights]


def assert_unchanged(model, before):
    for weight, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value, err_msg=weight.path)


def tiny_encoder(fmt="huggingface"):
    """The tiny BERT of TINY; Google's release config's "gelu" is the tanh approximation."""
    hparams = {k: v for k, v in TINY.items() if k != "model_type"}
    if fmt == "google":
        hparams["hidden_act"] = "gelu_new"
    encoder = BERTEncoder(hparams)
    encoder.build((None, None))
    return encoder


def test_tiny_huggingface_checkpoint_loads_every_weight(tmp_path):
    state = tiny_hf_state()
    encoder = tiny_encoder()
    report = load_checkpoint(encoder, write_hf(str(tmp_path / "hf"), state))
    assert sorted(report.loaded) == sorted(state)
    np.testing.assert_array_equal(
        encoder.blocks[1].ffn_inner.kernel.numpy(),
        state["encoder.layer.1.intermediate.dense.weight"].T,
    )
    assert report.unused == []


def test_missing_folder_names_the_path(tmp_path):
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match="no-such-folder"):
        load_checkpoint(encoder, str(tmp_path / "no-such-folder"))
    assert_unchanged(encoder, before)


def test_missing_weights_file_is_named(tmp_path):
    folder = write_hf(str(tmp_path / "hf"), tiny_hf_state())
    os.remove(os.path.join(folder, "model.safetensors"))
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(tiny_encoder(), folder)


def test_truncated_safetensors_loads_nothing(tmp_path):
    folder = write_hf(str(tmp_path / "hf"), tiny_hf_state())
    file = os.path.join(folder, "model.safetensors")
    with open(file, "rb") as f:
        data = f.read()
    with open(file, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(encoder, folder)
    assert_unchanged(encoder, before)


def test_wrong_shape_names_the_variable_and_loads_nothing(tmp_path):
    state = tiny_hf_state()
    state["encoder.layer.1.attention.self.key.weight"] = np.zeros((8, 6), np.float32)
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match=r"encoder\.layer\.1\.attention\.self\.key\.weight"):
        load_checkpoint(encoder, write_hf(str(tmp_path / "hf"), state))
    assert_unchanged(encoder, before)


def test_unknown_encoder_variable_is_an_error(tmp_path):
    state = tiny_hf_state()
    state["encoder.layer.2.output.dense.bias"] = np.zeros((8,), np.float32)
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match=r"unknown encoder variable 'encoder\.layer\.2"):
        load_checkpoint(encoder, write_hf(str(tmp_path / "hf"), state))
    assert_unchanged(encoder, before)


def test_missing_encoder_variable_is_an_error(tmp_path):
    state = tiny_hf_state()
    del state["pooler.dense.bias"]
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match=r"missing 'pooler\.dense\.bias'"):
        load_checkpoint(encoder, write_hf(str(tmp_path / "hf"), state))
    assert_unchanged(encoder, before)


def test_other_heads_are_reported_not_loaded(tmp_path):
    state = tiny_hf_state()
    state["classifier.weight"] = np.zeros((3, 8), np.float32)
    report = load_checkpoint(tiny_encoder(), write_hf(str(tmp_path / "hf"), state))
    assert report.unused == ["classifier.weight"]


def test_pickle_only_folder_is_refused(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match="safetensors"):
        load_checkpoint(encoder, str(folder))
    assert_unchanged(encoder, before)


def test_config_of_another_model_is_refused(tmp_path):
    folder = write_hf(str(tmp_path / "hf"), tiny_hf_state(), {**TINY, "model_type": "roberta"})
    with pytest.raises(CheckpointError, match="roberta"):
        BERTEncoder.from_pretrained(folder)


def test_heads_load_from_both_formats(tmp_path):
    state = tiny_hf_state(heads=True)
    # Google's "gelu" is the tanh approximation: Hugging Face's "gelu_new".
    hf = write_hf(str(tmp_path / "hf"), state, {**TINY, "hidden_act": "gelu_new"})
    google = str(tmp_path / "google")
    p = "cls.predictions.transform."
    heads = {
        "cls/predictions/transform/dense/kernel": state[p + "dense.weight"].T,
        "cls/predictions/transform/dense/bias": state[p + "dense.bias"],
        "cls/predictions/transform/LayerNorm/gamma": state[p + "LayerNorm.weight"],
        "cls/predictions/transform/LayerNorm/beta": state[p + "LayerNorm.bias"],
        "cls/predictions/output_bias": state["cls.predictions.bias"],
        "cls/seq_relationship/output_weights": state["cls.seq_relationship.weight"],
        "cls/seq_relationship/output_bias": state["cls.seq_relationship.bias"],
    }
    encoder_state = {k: w for k, w in state.items() if k.startswith("bert.")}
    write_google_checkpoint(google, encoder_state, TINY, extra=heads)
    outputs = []
    for folder in (hf, google):
        model = BERTPretrainer.from_pretrained(folder)
        assert model.load_report.heads == ["pooler", "mlm", "nsp"]
        np.testing.assert_array_equal(model.nsp_head.dense.kernel.numpy(), heads[
            "cls/seq_relationship/output_weights"].T)  # fmt: skip
        np.testing.assert_array_equal(
            model.mlm_head.output_bias.numpy(), heads["cls/predictions/output_bias"]
        )
        ids = np.array([[2, 5, 7, 3, 0]], np.int32)
        mlm, nsp = model(ids, masked_lm_positions=np.array([[1, 2]]), sequence_length=[4])
        outputs.append((mlm.numpy(), nsp.numpy()))
    np.testing.assert_allclose(outputs[0][0], outputs[1][0], atol=1e-6)
    np.testing.assert_allclose(outputs[0][1], outputs[1][1], atol=1e-6)


def test_checkpoint_without_heads_reports_them_missing():
    model = BERTPretrainer.from_pretrained(minilm_folder())
    assert model.load_report.heads == ["pooler"]
    assert model.load_report.missing_heads == ["mlm", "nsp"]


def test_a_checkpoint_without_pooler_loads_the_rest_and_says_so(tmp_path):
    # Hugging Face's BertForMaskedLM and BertForTokenClassification are saved without a pooler.
    state = {k: v for k, v in tiny_hf_state().items() if not k.startswith("pooler.")}
    encoder = tiny_encoder()
    pooler_before = encoder.pooler.kernel.numpy().copy()
    report = load_checkpoint(encoder, write_hf(str(tmp_path / "hf"), state))
    assert report.missing_heads == ["pooler"]
    np.testing.assert_array_equal(encoder.pooler.kernel.numpy(), pooler_before)
    np.testing.assert_array_equal(
        encoder.word_embedder.embedding.numpy(), state["embeddings.word_embeddings.weight"]
    )


def test_non_float_weights_are_refused_before_anything_loads(tmp_path):
    state = tiny_hf_state()
    state["pooler.dense.bias"] = np.arange(8, dtype=np.int64)
    encoder = tiny_encoder()
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match=r"'pooler\.dense\.bias' holds int64"):
        load_checkpoint(encoder, write_hf(str(tmp_path / "hf"), state))
    assert_unchanged(encoder, before)


@pytest.mark.parametrize(
    "key, value, named",
    [
        ("num_hidden_layers", 1_000_000, "num_hidden_layers=1000000"),
        ("vocab_size", 10**12, "vocab_size=1000000000000, hidden_size=8, but"),
        ("intermediate_size", 10**12, "intermediate_size=1000000000000"),
        ("max_position_embeddings", 10**12, "position_embeddings"),
        ("hidden_size", 10**6, "hidden_size=1000000"),
    ],
)
@pytest.mark.parametrize("fmt", ["huggingface", "google"])
def test_a_config_that_contradicts_its_weights_fails_before_building(tmp_path, fmt, key, value,
                                                                     named):  # fmt: skip
    config = {**TINY, key: value}
    if key == "hidden_size":
        config["num_attention_heads"] = 1
    folder = str(tmp_path / fmt)
    if fmt == "huggingface":
        write_hf(folder, tiny_hf_state(), config)
    else:
        write_google_checkpoint(folder, tiny_hf_state(), config)
    with pytest.raises(CheckpointError, match=re.escape(named)) as error:
        BERTEncoder.from_pretrained(folder)
    assert "nothing was built" in str(error.value)


@pytest.mark.parametrize("fmt", ["huggingface", "google"])
def test_non_finite_weights_are_refused_unless_allowed(tmp_path, fmt):
    state = tiny_hf_state()
    state["encoder.layer.1.output.dense.bias"][[0, 3]] = [np.nan, np.inf]
    folder = str(tmp_path / fmt)
    if fmt == "huggingface":
        write_hf(folder, state)
        name = "encoder.layer.1.output.dense.bias"
    else:
        write_google_checkpoint(folder, state, TINY)
        name = "bert/encoder/layer_1/output/dense/bias"
    encoder = tiny_encoder(fmt)
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match=re.escape(f"'{name}' holds 2 NaN or infinite")):
        load_checkpoint(encoder, folder)
    assert_unchanged(encoder, before)
    loaded = BERTEncoder.from_pretrained(folder, allow_non_finite=True)
    bias = loaded.blocks[1].ffn_output.bias.numpy()
    assert np.isnan(bias[0]) and np.isinf(bias[3])


def test_truncated_google_data_file_loads_nothing(tmp_path):
    folder = str(tmp_path / "google")
    state = tiny_hf_state()
    write_google_checkpoint(folder, state, TINY)
    (data,) = [f for f in os.listdir(folder) if ".data-" in f]
    path = os.path.join(folder, data)
    with open(path, "rb") as f:
        content = f.read()
    with open(path, "wb") as f:
        f.write(content[: len(content) // 2])
    encoder = tiny_encoder("google")
    before = snapshot(encoder)
    with pytest.raises(CheckpointError, match="bert_model.ckpt"):
        load_checkpoint(encoder, folder)
    assert_unchanged(encoder, before)


def test_a_folder_on_another_file_system_loads(tmp_path):
    # gs:// and the like go through tf.io.gfile; ram:// is one that needs no network.
    state = tiny_hf_state()
    local = write_hf(str(tmp_path / "hf"), state)
    remote = "ram://texkit-test/hf"
    tf.io.gfile.makedirs(remote)
    for name in ("config.json", "model.safetensors"):
        tf.io.gfile.copy(os.path.join(local, name), f"{remote}/{name}", overwrite=True)
    encoder = BERTEncoder.from_pretrained(remote)
    assert sorted(encoder.load_report.loaded) == sorted(state)
    ids = np.array([[2, 5, 7]], np.int32)
    expected = BERTEncoder.from_pretrained(local)(ids)[0].numpy()
    np.testing.assert_array_equal(encoder(ids)[0].numpy(), expected)


def test_validated_hparams_are_refused_by_from_pretrained():
    hparams = tx.HParams({"hidden_dropout_prob": 0.2}, BERTEncoder.default_hparams())
    with pytest.raises(TypeError, match="plain dict"):
        BERTEncoder.from_pretrained(minilm_folder(), hparams)


def test_a_user_model_around_the_encoder_is_left_to_keras_to_build(tmp_path):
    class Tagger(keras.Model):
        def __init__(self):
            super().__init__()
            # It never reads the pooled output: no pooler (the checkpoint's is left unused).
            self.encoder = BERTEncoder(
                {k: v for k, v in TINY.items() if k != "model_type"}, add_pooling_layer=False
            )
            self.dense = keras.layers.Dense(3)

        def call(self, ids):
            return self.dense(self.encoder(ids)[0])

    state = tiny_hf_state()
    model = Tagger()
    report = load_checkpoint(model, write_hf(str(tmp_path / "hf"), state))
    assert report.unused == ["pooler.dense.bias", "pooler.dense.weight"]
    assert model.encoder.built and not model.dense.built
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 5), np.int32), np.zeros((4, 5, 3)), epochs=1, verbose=0)
    assert len(model.optimizer.variables) > 2 * len(model.encoder.weights)


def test_loading_into_a_model_of_another_activation_is_refused_and_changes_nothing(minilm):
    # MiniLM's weights fit a relu model exactly; only the folder's config says gelu.
    hparams = minilm.hparams.todict()
    relu = BERTEncoder({**hparams, "hidden_act": "relu"})
    relu(tf.constant([[5, 6, 7]]))  # built
    before = [w.numpy().copy() for w in relu.weights]
    with pytest.raises(CheckpointError, match=r"config.json: the checkpoint's hidden_act='gelu'"):
        tx.pretrained.load_checkpoint(relu, minilm_folder())
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, relu.weights, strict=True))
    # The same architecture loads.
    same = BERTEncoder(hparams)
    assert tx.pretrained.load_checkpoint(same, minilm_folder()).loaded
