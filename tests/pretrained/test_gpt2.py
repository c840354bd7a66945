"""GPT-2 loading (Hugging Face and OpenAI's TF format) against Hugging Face transformers.

``tests/fixtures/families/gpt2`` is a tiny random ``GPT2LMHeadModel`` saved by transformers, with
its logits on a padded batch and its ``generate`` outputs (greedy, and beam search with 4 beams
and no length penalty) for two prompts; ``make_fixtures.py`` there checked that the greedy path
has no near-ties. OpenAI's format is written here from the same weights, by OpenAI's naming
(``model/h0/attn/c_attn/w`` with a leading axis of 1), and must give the same logits.
"""

import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

import texkit as tx
from texkit.hparams import HParamsError
from texkit.modules import GPT2Decoder
from texkit.pretrained import CheckpointError, load_checkpoint

FOLDER = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families", "gpt2")
END = 98  # the fixture's eos, never generated


@pytest.fixture(scope="module")
def ref():
    arrays = np.load(os.path.join(FOLDER, "reference.npz"), allow_pickle=False)
    return {k: arrays[k] for k in arrays.files}


@pytest.fixture(scope="module")
def lm():
    return tx.pretrained.from_pretrained(FOLDER)


def assert_valid_steps_close(got, want, lengths, atol=1e-5):
    for row, length in enumerate(lengths):
        np.testing.assert_allclose(got[row, :length], want[row, :length], atol=atol, rtol=0)


def test_from_pretrained_builds_a_tied_gpt2(lm):
    assert isinstance(lm, GPT2Decoder)
    report = lm.load_report
    assert report.family == "gpt2" and report.format == "huggingface"
    assert report.unused == []
    assert lm.hparams.decoder.num_blocks == 2 and lm.hparams.dim == 32
    # Every weight comes from the file (c_attn gives three), the output layer is the table.
    assert len(set(report.loaded)) == len(load_file(os.path.join(FOLDER, "model.safetensors")))
    assert lm.output_layer.embedder is lm.word_embedder


def test_teacher_forced_logits_match_transformers(lm, ref):
    outputs, _, _ = lm(inputs=tf.constant(ref["input_ids"]), sequence_length=ref["lengths"])
    assert_valid_steps_close(outputs.logits.numpy(), ref["logits"], ref["lengths"])


def test_greedy_continuation_equals_generate(lm, ref):
    assert float(ref["greedy_margin"]) > 1e-3  # no near-ties on the path
    prompt = tf.constant(ref["prompt_ids"])
    steps = ref["greedy"].shape[1] - 1  # texkit's ids start after the first prompt token

    @tf.function(jit_compile=True)
    def greedy(prompt):
        outputs, _, _ = lm(
            decoding_strategy="infer_greedy", context=prompt, end_token=END,
            max_decoding_length=steps,
        )  # fmt: skip
        return outputs.sample_id

    np.testing.assert_array_equal(greedy(prompt).numpy(), ref["greedy"][:, 1:])


def test_beam_search_equals_generate_with_four_beams(lm, ref):
    prompt = tf.constant(ref["prompt_ids"])
    steps = ref["beam"].shape[1] - 1
    search = lm.beam_search(4, 0.0, end_token=END, max_decoding_length=steps, context=prompt)
    np.testing.assert_array_equal(search.ids.numpy()[:, 0], ref["beam"][:, 1:])


def openai_name(hf_name):
    """Hugging Face GPT-2 name -> OpenAI's, by the two releases' conventions."""
    name = re.sub(r"^h\.(\d+)\.", r"h\1.", hf_name)
    name = (
        re.sub(r"\.weight$", ".w", name)
        if re.search(r"(c_attn|c_proj|c_fc)\.weight$", name)
        else name
    )
    name = re.sub(r"(ln_\w+)\.weight$", r"\1.g", name)
    name = re.sub(r"(ln_\w+)\.bias$", r"\1.b", name)
    name = re.sub(r"\.bias$", ".b", name)
    name = re.sub(r"^(wte|wpe)\.weight$", r"\1", name)
    return "model/" + name.replace(".", "/")


def write_openai(folder):
    os.makedirs(folder, exist_ok=True)
    state = load_file(os.path.join(FOLDER, "model.safetensors"))
    names, tensors = [], []
    for hf_name, value in state.items():
        hf_name = hf_name.removeprefix("transformer.")
        name = openai_name(hf_name)
        if name.endswith("/w"):
            value = value[None]  # OpenAI's 1x1 convolutions: [1, in, out]
        names.append(name)
        tensors.append(tf.constant(value))
    tf.raw_ops.SaveV2(
        prefix=os.path.join(folder, "model.ckpt"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=tensors,
    )
    with open(os.path.join(FOLDER, "config.json")) as f:
        config = json.load(f)
    hparams = {"n_vocab": config["vocab_size"], "n_ctx": config["n_positions"],
               "n_embd": config["n_embd"], "n_head": config["n_head"],
               "n_layer": config["n_layer"]}  # fmt: skip
    # OpenAI's models have 4 * n_embd inner units and no key for it; the fixture has 37.
    hparams["n_inner"] = config["n_inner"]
    with open(os.path.join(folder, "hparams.json"), "w") as f:
        json.dump(hparams, f)
    return folder, names


def test_openai_release_format_gives_the_same_logits(tmp_path, ref):
    folder, names = write_openai(str(tmp_path / "openai"))
    assert "model/h0/attn/c_attn/w" in names and "model/ln_f/g" in names
    lm = GPT2Decoder.from_pretrained(folder)
    assert lm.load_report.format == "openai"
    assert sorted(lm.load_report.loaded) == sorted(names)
    outputs, _, _ = lm(inputs=tf.constant(ref["input_ids"]), sequence_length=ref["lengths"])
    assert_valid_steps_close(outputs.logits.numpy(), ref["logits"], ref["lengths"])


def test_user_hparams_change_dropout_not_the_architecture():
    lm = GPT2Decoder.from_pretrained(FOLDER, {"decoder": {"residual_dropout": 0.0}})
    assert lm.hparams.decoder.residual_dropout == 0.0
    assert lm.hparams.decoder.num_blocks == 2  # the rest of the nested config is kept
    with pytest.raises(HParamsError, match="decoder.num_blocks"):
        GPT2Decoder.from_pretrained(FOLDER, {"decoder": {"num_blocks": 3}})


# -- failure modes: each loads nothing ------------------------------------------------------


def copy(tmp_path):
    target = str(tmp_path / "gpt2")
    shutil.copytree(FOLDER, target)
    return target


def snapshot(model):
    return [w.numpy().copy() for w in model.weights]


def assert_unchanged(model, before):
    for weight, value in zip(model.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value, err_msg=weight.path)


def edited(tmp_path, edit):
    path = copy(tmp_path)
    file = os.path.join(path, "model.safetensors")
    state = load_file(file)
    edit(state)
    save_file(state, file)
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.__setitem__("transformer.h.0.attn.c_attn.weight",
                                 np.zeros((32, 95), np.float32)),
         r"'transformer\.h\.0\.attn\.c_attn\.weight' has shape \[32, 95\]"),
        (lambda s: s.pop("transformer.h.1.mlp.c_fc.bias"), r"missing 'h\.1\.mlp\.c_fc\.bias'"),
        (lambda s: s.__setitem__("transformer.h.1.attn.extra.weight",
                                 np.zeros((3,), np.float32)),
         r"unknown encoder variable 'transformer\.h\.1\.attn\.extra\.weight'"),
        (lambda s: s["transformer.ln_f.weight"].__setitem__(0, np.inf), "1 NaN or infinite"),
    ],
    ids=["wrong-shape", "missing", "unknown", "non-finite"],
)  # fmt: skip
def test_broken_weights_load_nothing(tmp_path, edit, message):
    path = edited(tmp_path, edit)
    lm = GPT2Decoder.from_pretrained(FOLDER)
    before = snapshot(lm)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(lm, path)
    assert_unchanged(lm, before)


def test_a_config_that_contradicts_the_weights_fails_before_building(tmp_path):
    path = copy(tmp_path)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    for key, value, said in [("n_layer", 10**6, "decoder.num_blocks=1000000"),
                             ("vocab_size", 10**12, "vocab_size=1000000000000"),
                             ("n_positions", 10**9, "position_size=1000000000")]:  # fmt: skip
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump({**config, key: value}, f)
        with pytest.raises(CheckpointError, match=re.escape(said) + ".*nothing was built"):
            GPT2Decoder.from_pretrained(path)


def test_variants_texkit_does_not_build_are_refused(tmp_path):
    path = copy(tmp_path)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({**config, "scale_attn_by_inverse_layer_idx": True}, f)
    with pytest.raises(CheckpointError, match="scale_attn_by_inverse_layer_idx"):
        GPT2Decoder.from_pretrained(path)


def test_openai_folder_without_weights_is_named(tmp_path):
    folder = tmp_path / "openai"
    folder.mkdir()
    (folder / "hparams.json").write_text("{}")
    with pytest.raises(CheckpointError, match="hparams.json found but no model.ckpt"):
        tx.pretrained.from_pretrained(str(folder))
