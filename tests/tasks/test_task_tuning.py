"""A task's LoRA, quantization and export, end to end: what ``enable_lora``, ``save``/``load``,
``save_adapters``/``load_adapters``, ``merge_lora``, ``quantize`` and ``save_pretrained`` keep
of a fine-tuned model, each checked against the model's own outputs before the step."""

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx

GPT2 = "tests/fixtures/families/gpt2_bpe"
IDS = tf.constant([[5, 60, 700, 31, 9, 1200]])
PAIRS = (["Q: who made the earth? A:"] * 8, [" God"] * 8)


def _lm():
    return tx.tasks.CausalLM.from_pretrained(GPT2, {"sequence_length": 24, "jit_compile": False})


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A CausalLM fine-tuned with LoRA on prompt/completion pairs, and its logits before."""
    lm = _lm()
    before = lm(IDS).numpy()
    lm.enable_lora(4, targets=("query", "value", "ffn_inner"))
    np.testing.assert_array_equal(lm(IDS).numpy(), before)  # B starts at zero
    features = lm.preprocess(tf.constant(PAIRS[0]), tf.constant(PAIRS[1]))
    loss_before = float(lm.compute_loss(features, None, lm(features)))
    lm.compile(optimizer=tf.keras.optimizers.Adam(0.03))
    lm.fit(tf.data.Dataset.from_tensor_slices(PAIRS).batch(4), epochs=6, verbose=0)
    loss_after = float(lm.compute_loss(features, None, lm(features)))
    assert loss_after < loss_before / 3, (loss_before, loss_after)
    return lm, before


def test_lora_fine_tuning_changes_the_outputs_through_the_adapters_only(tuned):
    lm, before = tuned
    assert not np.allclose(lm(IDS).numpy(), before)
    fresh = _lm()
    frozen = [w for w in lm.decoder.weights if "lora" not in w.path]
    assert len(frozen) == len(fresh.decoder.weights)
    for new, old in zip(frozen, fresh.decoder.weights, strict=True):
        np.testing.assert_array_equal(new.numpy(), old.numpy(), err_msg=new.path)


def test_a_saved_task_keeps_its_adapters(tuned, tmp_path):
    lm, _ = tuned
    lm.save(tmp_path / "task")
    back = tx.tasks.Task.load(tmp_path / "task")
    np.testing.assert_array_equal(back(IDS).numpy(), lm(IDS).numpy())
    assert tx.tasks.lora_enabled(back.decoder)


def test_adapters_alone_load_onto_a_fresh_base(tuned, tmp_path):
    lm, _ = tuned
    lm.save_adapters(tmp_path / "adapters.safetensors")
    fresh = _lm()
    fresh.load_adapters(tmp_path / "adapters.safetensors")
    np.testing.assert_array_equal(fresh(IDS).numpy(), lm(IDS).numpy())


def test_merged_and_exported_to_hugging_face_the_model_reloads_to_the_same_outputs(tmp_path):
    lm = _lm()
    lm.enable_lora(4)
    lm.compile(optimizer=tf.keras.optimizers.Adam(0.03))
    lm.fit(tf.data.Dataset.from_tensor_slices(PAIRS).batch(4), epochs=1, verbose=0)
    adapted = lm(IDS).numpy()
    lm.save_pretrained(tmp_path / "hf")  # merges first
    assert not tx.tasks.lora_enabled(lm.decoder)
    np.testing.assert_allclose(lm(IDS).numpy(), adapted, atol=1e-5)
    back = tx.tasks.CausalLM.from_pretrained(tmp_path / "hf", {"jit_compile": False})
    np.testing.assert_allclose(back(IDS).numpy(), adapted, atol=1e-5)
    assert back.generate("In the beginning", max_new_tokens=6) == lm.generate(
        "In the beginning", max_new_tokens=6
    )


def test_an_int8_task_stays_close_generates_and_saves(tmp_path):
    lm = _lm()
    floats = lm(IDS).numpy()[0]
    lm.quantize("int8")
    quantized = lm(IDS).numpy()[0]
    cosine = (floats * quantized).sum(-1) / np.linalg.norm(floats, axis=-1)
    cosine /= np.linalg.norm(quantized, axis=-1)
    assert cosine.min() >= 0.99, cosine
    assert isinstance(lm.generate("In the beginning", max_new_tokens=4), str)
    with pytest.raises(ValueError, match="quantiz"):
        lm.quantize("int8")
    lm.save(tmp_path / "int8")
    back = tx.tasks.Task.load(tmp_path / "int8")
    np.testing.assert_array_equal(back(IDS).numpy()[0], quantized)
    assert tx.tasks.quantization_mode(back.decoder) == "int8"
