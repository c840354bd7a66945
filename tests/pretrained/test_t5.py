"""T5 (1.0: relu, tied output; 1.1: gated-gelu, own lm_head) against Hugging Face transformers.

The fixtures under ``tests/fixtures/families/t5`` and ``t5_v1`` are tiny random
``T5ForConditionalGeneration`` models saved by transformers, with their encoder outputs,
teacher-forced decoder logits and ``generate`` outputs (greedy; beam search with 4 beams and no
length penalty); ``make_fixtures.py`` there checked that neither search has near-ties. They use
``initializer_factor=4`` so that generation is not degenerate; the attention scores (T5 does
not scale them) are then large, and float32 rounding in the softmax gives differences of about
1e-5 of the values' scale (at most 1.4e-5 here), which the tolerance below (5e-5) allows.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

import texkit as tx
from tests.core.test_relative_position import t5_bucket
from texkit.core.relative_position import relative_position_bucket
from texkit.modules import T5EncoderDecoder
from texkit.pretrained import CheckpointError, load_checkpoint

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")
EOS = 1


def folder(name):
    return os.path.join(FIXTURES, name)


@pytest.fixture(scope="module", params=["t5", "t5_v1"])
def variant(request):
    name = request.param
    arrays = np.load(os.path.join(folder(name), "reference.npz"), allow_pickle=False)
    return name, tx.pretrained.from_pretrained(folder(name)), {k: arrays[k] for k in arrays.files}


def close(got, want, lengths=None, rtol=5e-5):
    """Equal within ``rtol`` of the reference's largest magnitude (at valid steps)."""
    atol = rtol * float(np.abs(want).max())
    rows = range(len(want)) if lengths is None else range(len(lengths))
    for row in rows:
        steps = slice(None) if lengths is None else slice(0, lengths[row])
        np.testing.assert_allclose(got[row, steps], want[row, steps], atol=atol, rtol=0)


def test_loads_every_weight_of_both_variants(variant):
    name, t5, _ = variant
    assert isinstance(t5, T5EncoderDecoder)
    state = load_file(os.path.join(folder(name), "model.safetensors"))
    assert sorted(t5.load_report.loaded) == sorted(state)
    assert len(t5.load_report.loaded) == len(t5.weights)
    assert t5.hparams.tie_word_embeddings == (name == "t5_v1")
    assert (t5.decoder.lm_head is None) == (name == "t5_v1")


def test_encoder_and_decoder_match_transformers(variant):
    _, t5, ref = variant
    memory = t5.encode(ref["input_ids"], ref["lengths"])
    close(memory.numpy(), ref["last_hidden_state"], ref["lengths"])
    outputs = t5(ref["input_ids"], ref["lengths"], decoder_input_ids=ref["decoder_input_ids"])
    close(outputs.logits.numpy(), ref["decoder_logits"])


def test_greedy_under_xla_and_beam_search_equal_generate(variant):
    _, t5, ref = variant
    ids, lengths = tf.constant(ref["input_ids"]), tf.constant(ref["lengths"])
    steps = ref["greedy"].shape[1] - 1  # generate's rows start with the decoder start token
    assert float(ref["greedy_margin"]) > 1e-3

    @tf.function(jit_compile=True)
    def greedy(ids, lengths):
        memory = t5.encode(ids, lengths)
        outputs, _, _ = t5.decoder(
            decoding_strategy="infer_greedy", memory=memory, memory_sequence_length=lengths,
            start_tokens=t5.start_tokens(tf.shape(ids)[0]), end_token=EOS,
            max_decoding_length=steps,
        )  # fmt: skip
        return outputs.sample_id

    np.testing.assert_array_equal(greedy(ids, lengths).numpy(), ref["greedy"][:, 1:])
    memory = t5.encode(ids, lengths)
    search = t5.decoder.beam_search(
        4, 0.0, start_tokens=t5.start_tokens(3), end_token=EOS, max_decoding_length=steps,
        memory=memory, memory_sequence_length=lengths,
    )  # fmt: skip
    np.testing.assert_array_equal(search.ids.numpy()[:, 0], ref["beam"][:, 1:])


def test_sampling_is_seeded_and_valid(variant):
    _, t5, ref = variant
    memory = t5.encode(ref["input_ids"], ref["lengths"])

    def sample(seed):
        outputs, _, lengths = t5.decoder(
            decoding_strategy="infer_sample", memory=memory,
            memory_sequence_length=ref["lengths"], start_tokens=t5.start_tokens(3),
            end_token=EOS, max_decoding_length=6, top_k=5, seed=seed,
        )  # fmt: skip
        return outputs.sample_id.numpy()

    first = sample(3)
    np.testing.assert_array_equal(first, sample(3))
    assert first.shape == (3, 6) and first.min() >= 0 and first.max() < 99


# T5's bucketing written from the paper's description, one position at a time.
reference_bucket = t5_bucket


@pytest.mark.parametrize("bidirectional", [True, False])
def test_relative_position_buckets(bidirectional):
    relative = np.arange(-300, 300)
    got = relative_position_bucket(relative, bidirectional, 32, 128).numpy()
    want = [reference_bucket(int(r), bidirectional, 32, 128) for r in relative]
    np.testing.assert_array_equal(got, want)


# -- failure modes: each loads nothing ------------------------------------------------------


def copy(tmp_path, name="t5"):
    target = str(tmp_path / name)
    shutil.copytree(folder(name), target)
    return target


def snapshot(model):
    return [w.numpy().copy() for w in model.weights]


def test_missing_lm_head_of_an_untied_t5_loads_nothing(tmp_path):
    path = copy(tmp_path)
    file = os.path.join(path, "model.safetensors")
    state = load_file(file)
    del state["lm_head.weight"]
    save_file(state, file)
    t5 = T5EncoderDecoder.from_pretrained(folder("t5"))
    before = snapshot(t5)
    with pytest.raises(CheckpointError, match=r"missing 'lm_head\.weight'"):
        load_checkpoint(t5, path)
    for weight, value in zip(t5.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)


def test_a_config_that_contradicts_the_weights_fails_before_building(tmp_path):
    path = copy(tmp_path)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    for key, value in [("num_decoder_layers", 10**6), ("num_layers", 10**6),
                       ("relative_attention_num_buckets", 10**9), ("d_ff", 10**9)]:  # fmt: skip
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump({**config, key: value}, f)
        with pytest.raises(CheckpointError, match=f"{key}={value}.*nothing was built"):
            T5EncoderDecoder.from_pretrained(path)


def test_scaling_that_contradicts_tying_is_refused(tmp_path):
    path = copy(tmp_path)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({**config, "scale_decoder_outputs": True}, f)
    with pytest.raises(CheckpointError, match="scale_decoder_outputs"):
        T5EncoderDecoder.from_pretrained(path)
