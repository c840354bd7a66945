"""LoRA (texkit.tasks.lora, texkit.tasks.lora_files) on the small fixture checkpoints.

Checked against independent computations: the parameter count against the formula
``rank * (d_in + d_out)`` from the base's kernel shapes, the merged model against the adapted
one, an adapter file against the model it was saved from, and training against a bitwise copy
of every weight that must not move.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import save_file

import texkit as tx
from texkit.pretrained.checkpoints import CheckpointError
from texkit.tasks import (
    enable_lora,
    load_adapters,
    lora_enabled,
    lora_from_hparams,
    lora_parameter_count,
    merge_lora,
    save_adapters,
)
from texkit.tasks.lora import adapted_layers, layer_paths

FAMILIES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")
LLM = os.path.join(os.path.dirname(__file__), "..", "fixtures", "llm")
GPT2, LLAMA = os.path.join(FAMILIES, "gpt2"), os.path.join(LLM, "llama")
DISTILBERT = os.path.join(FAMILIES, "distilbert")
IDS = np.array([[5, 17, 3, 42, 8, 1], [9, 2, 33, 4, 0, 0]], np.int32)
LENGTHS = np.array([6, 4], np.int32)
ALL_GPT2 = ("query", "key", "value", "output_dense", "ffn_inner", "ffn_output")


def gpt2():
    return tx.modules.GPT2Decoder.from_pretrained(GPT2)


def logits(decoder):
    outputs, _, _ = decoder(IDS, LENGTHS, decoding_strategy="train_greedy")
    return outputs.logits.numpy()


def classifier():
    return tx.modules.BERTClassifier.from_pretrained(DISTILBERT, {"num_classes": 3})


def classify(model, training=False):
    return model(IDS, sequence_length=LENGTHS, training=training)[0]


def randomize_adapters(module, seed=0):
    """Non-zero B matrices (they start at zeros), so that the adapters change the outputs."""
    rng = np.random.default_rng(seed)
    for _, layer in adapted_layers(module):
        for variable in (layer.lora_kernel_a, layer.lora_kernel_b):
            variable.assign(0.2 * rng.standard_normal(variable.shape).astype(np.float32))


def snapshot(module):
    """Every variable's path, value and trainable flag."""
    return [(v.path, v.numpy().copy(), bool(v.trainable)) for v in module.weights]


def assert_same(before, after):
    assert [(p, t) for p, _, t in before] == [(p, t) for p, _, t in after]
    for (path, old, _), (_, new, _) in zip(before, after, strict=True):
        np.testing.assert_array_equal(old, new, err_msg=path)


def test_parameter_count_is_rank_times_in_plus_out_and_only_adapters_train():
    decoder = gpt2()
    shapes = {p: tuple(la.kernel.shape) for p, la in layer_paths(decoder) if hasattr(la, "units")}
    paths = enable_lora(decoder, 3, targets=ALL_GPT2)
    assert lora_enabled(decoder) and len(paths) == 6 * decoder.hparams.decoder.num_blocks
    assert lora_parameter_count(decoder) == sum(3 * (shapes[p][0] + shapes[p][1]) for p in paths)
    adapters = {
        id(v) for _, la in adapted_layers(decoder) for v in (la.lora_kernel_a, la.lora_kernel_b)
    }
    assert {
        id(v) for v in decoder.trainable_weights
    } == adapters  # biases, norms, embeddings frozen


def test_outputs_unchanged_right_after_enabling():
    decoder = gpt2()
    base = logits(decoder)
    enable_lora(decoder, 4, alpha=16, targets=ALL_GPT2)
    np.testing.assert_array_equal(logits(decoder), base)
    llama = tx.modules.LlamaDecoder.from_pretrained(LLAMA)
    before = logits(llama)
    enable_lora(llama, 2, targets=("query", "value", "inner.0", "inner.1", "ffn.output_dense"))
    np.testing.assert_array_equal(logits(llama), before)


def test_training_moves_only_the_adapters_and_the_named_head():
    model = classifier()
    enable_lora(model, 4, alpha=8, targets=("query", "value"), train=("logits_layer",))
    trainable = {id(v) for v in model.trainable_weights}
    head = {id(v) for v in model.logits_layer.weights}
    assert head <= trainable and len(trainable) == len(head) + 2 * len(adapted_layers(model))
    frozen = [(v, v.numpy().copy()) for v in model.weights if id(v) not in trainable]
    moving = [(v, v.numpy().copy()) for v in model.trainable_weights]
    labels = np.array([0, 2], np.int32)
    optimizer = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    losses = []
    for _ in range(5):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, classify(model))
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    for variable, old in frozen:
        np.testing.assert_array_equal(variable.numpy(), old, err_msg=variable.path)
    assert all(not np.array_equal(v.numpy(), old) for v, old in moving)


def test_merge_equals_the_adapted_model_and_removes_the_adapters():
    llama = tx.modules.LlamaDecoder.from_pretrained(LLAMA)
    flags = [(v.path, v.trainable) for v in llama.weights]
    base = logits(llama)
    enable_lora(llama, 3, alpha=5, targets=("self_attention.output_dense", "key", "inner.1"))
    randomize_adapters(llama)
    adapted = logits(llama)
    assert np.abs(adapted - base).max() > 1e-2
    merged = merge_lora(llama)
    assert len(merged) == 3 * len(llama.blocks)
    np.testing.assert_allclose(logits(llama), adapted, atol=1e-5, rtol=1e-5)
    assert not lora_enabled(llama) and lora_parameter_count(llama) == 0
    assert [(v.path, v.trainable) for v in llama.weights] == flags  # as before enabling
    assert not any("lora" in v.path for v in llama.weights + llama.trainable_weights)
    enable_lora(llama, 2)  # a plain model again: LoRA may be enabled anew


def test_merge_keeps_an_einsum_dense_kernel_layout():
    inputs = keras.Input((3, 4))
    einsum = keras.layers.EinsumDense("btc,chd->bthd", (3, 2, 5), bias_axes="hd", name="proj")
    model = keras.Model(inputs, einsum(inputs))
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    assert enable_lora(model, 2, targets="proj") == ["proj"]
    randomize_adapters(model, seed=3)
    layer = model.get_layer("proj")
    scale = layer.lora_alpha / layer.lora_rank
    delta = scale * np.matmul(layer.lora_kernel_a.numpy(), layer.lora_kernel_b.numpy())
    expected = np.einsum("btc,chd->bthd", x, layer._kernel.numpy() + delta) + layer.bias.numpy()
    np.testing.assert_allclose(model(x).numpy(), expected, atol=1e-5)
    merge_lora(model)
    np.testing.assert_allclose(model(x).numpy(), expected, atol=1e-5)
    assert layer.kernel.shape == (4, 2, 5) and not layer.lora_enabled


def test_adapters_round_trip_onto_a_fresh_base(tmp_path):
    model = classifier()
    enable_lora(model, 2, alpha=3, targets=("query", "output_dense"), train="logits_layer")
    randomize_adapters(model)
    model.logits_layer.kernel.assign(model.logits_layer.kernel.numpy() + 0.5)
    expected = classify(model).numpy()
    path = save_adapters(model, tmp_path / "adapters.safetensors")
    size = os.path.getsize(path)
    assert size < 4 * (lora_parameter_count(model) + 200) + 4096  # adapters and head only
    fresh = classifier()
    assert not np.allclose(classify(fresh).numpy(), expected)
    load_adapters(fresh, path)  # enables them itself, with the file's settings
    np.testing.assert_array_equal(classify(fresh).numpy(), expected)
    again = classifier()
    enable_lora(again, 2, alpha=3, targets=("query", "output_dense"), train="logits_layer")
    load_adapters(again, path)  # or into adapters of the same settings
    np.testing.assert_array_equal(classify(again).numpy(), expected)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"rank": 2, "targets": ("querry",)}, "no layer of .* matches 'querry'"),
        ({"rank": 2, "targets": ("output",)}, "Keras name of the attribute output_dense"),
        ({"rank": 2, "targets": ("self_attention",)}, "not a Dense layer"),
        ({"rank": 2, "targets": ()}, "targets: expected at least one"),
        ({"rank": 0}, "rank: expected a positive integer, got 0"),
        ({"rank": 2.5}, "rank: expected a positive integer"),
        ({"rank": 2, "alpha": 0}, "alpha: expected a positive number"),
        ({"rank": 2, "train": ("head",)}, "train: no layer of .* matches 'head'"),
        ({"rank": 2, "targets": ("query",), "train": ("query",)}, "train: .* is also a target"),
    ],
)
def test_refused_arguments_change_nothing(arguments, message):
    decoder = gpt2()
    before = snapshot(decoder)
    with pytest.raises(ValueError, match=message):
        enable_lora(decoder, **arguments)
    assert_same(before, snapshot(decoder))
    assert not lora_enabled(decoder)


def test_enabling_twice_or_before_building_is_refused():
    decoder = gpt2()
    enable_lora(decoder, 2, targets="query")
    randomize_adapters(decoder)
    before = snapshot(decoder)
    with pytest.raises(ValueError, match="already enabled on decoder.blocks.0.self_attention"):
        enable_lora(decoder, 2, targets="value")
    assert_same(before, snapshot(decoder))
    unbuilt = tx.modules.GPT2Decoder(decoder.hparams.todict())
    with pytest.raises(ValueError, match="module: .* is not built"):
        enable_lora(unbuilt, 2)
    with pytest.raises(ValueError, match="has no LoRA adapters to merge"):
        merge_lora(gpt2())


def test_adapters_for_another_base_are_refused(tmp_path):
    decoder = gpt2()
    enable_lora(decoder, 4, targets=("query", "value"))
    randomize_adapters(decoder)
    path = save_adapters(decoder, tmp_path / "gpt2.safetensors")
    other_rank = gpt2()
    enable_lora(other_rank, 2, targets=("query", "value"))
    before = snapshot(other_rank)
    with pytest.raises(ValueError, match="'decoder.blocks.0.self_attention.query' has rank 2"):
        load_adapters(other_rank, path)
    assert_same(before, snapshot(other_rank))
    wider = tx.modules.GPT2Decoder({**decoder.hparams.todict(), "dim": 64})
    wider(IDS, LENGTHS, decoding_strategy="train_greedy")
    before = snapshot(wider)
    with pytest.raises(ValueError, match="adapter 'decoder.blocks.0.self_attention.query' was"):
        load_adapters(wider, path)
    assert_same(before, snapshot(wider))
    assert not lora_enabled(wider)
    fewer = gpt2()
    enable_lora(fewer, 4, targets=("query",))
    with pytest.raises(ValueError, match="self_attention.value' is in the file, not in the mod"):
        load_adapters(fewer, path)
    (tmp_path / "garbage.safetensors").write_bytes(b"\x10" * 64)
    with pytest.raises(ValueError, match="garbage.safetensors: not a safetensors file"):
        load_adapters(gpt2(), tmp_path / "garbage.safetensors")
    save_file({"x": np.zeros(2, np.float32)}, str(tmp_path / "weights.safetensors"))
    with pytest.raises(ValueError, match="not a texkit LoRA adapter file"):
        load_adapters(gpt2(), tmp_path / "weights.safetensors")


def test_greedy_decoding_compiles_with_adapters():
    """XLA compiles the decoding loop of a model with adapters."""
    decoder = gpt2()
    enable_lora(decoder, 4, targets=ALL_GPT2)
    randomize_adapters(decoder, seed=2)
    prompt = tf.constant(IDS[:, :3])

    def greedy(prompt):
        outputs, _, _ = decoder(
            decoding_strategy="infer_greedy", context=prompt, end_token=98,
            max_decoding_length=8,
        )  # fmt: skip
        return outputs.sample_id

    ids = tf.function(greedy, jit_compile=True)(prompt).numpy()
    # Each generated id is the argmax of the adapted model's teacher-forced logits (eager).
    tokens = np.concatenate([IDS[:, :1], ids], axis=1)
    outputs, _, _ = decoder(tokens[:, :-1], decoding_strategy="train_greedy")
    predicted = outputs.logits.numpy().argmax(-1)
    for row in range(len(ids)):
        ended = list(ids[row, 2:]).index(98) + 3 if 98 in ids[row, 2:] else ids.shape[1]
        np.testing.assert_array_equal(ids[row, 2:ended], predicted[row, 2:ended])


def test_lora_from_hparams():
    decoder = gpt2()
    assert lora_from_hparams(decoder, None) == [] and lora_from_hparams(decoder, {}) == []
    for hparams, key in [
        ({"rank": 2, "bogus": 1}, "lora.bogus"),
        ({"alpha": 4}, "lora.rank"),
        ({"rank": -1}, "lora.rank"),
        ({"rank": 2, "targets": ["nothing"]}, "lora.targets"),
    ]:
        with pytest.raises(tx.HParamsError, match=key):
            lora_from_hparams(decoder, hparams)
    assert not lora_enabled(decoder)
    paths = lora_from_hparams(decoder, {"rank": 2, "alpha": 4, "targets": ["ffn_inner"]})
    assert paths == [f"decoder.blocks.{i}.ffn_inner" for i in range(len(paths))]
    assert adapted_layers(decoder)[0][1].lora_alpha == 4


def test_the_checkpoint_loader_refuses_lora_and_quantized_models():
    decoder = gpt2()
    enable_lora(decoder, 2, targets="value")
    before = snapshot(decoder)
    with pytest.raises(CheckpointError, match="value has LoRA enabled; nothing was loaded"):
        tx.pretrained.load_checkpoint(decoder, GPT2)
    assert_same(before, snapshot(decoder))
    quantized = gpt2()
    quantized.decoder.blocks[1].ffn_output.quantize("int8")
    before = snapshot(quantized)
    with pytest.raises(CheckpointError, match="ffn_output is quantized \\(int8\\)"):
        tx.pretrained.load_checkpoint(quantized, GPT2)
    assert_same(before, snapshot(quantized))
