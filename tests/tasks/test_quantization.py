"""int8 inference: ``tx.tasks.quantize`` over texkit modules.

The quantized module is checked against the same module in float32 (outputs per row, by cosine,
on real text with the real MiniLM and on the fixture checkpoints), against the row quantization
formula, and against itself after saving and loading (exactly equal). Refused calls are checked
to leave every weight and the mode as they were.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from tests.real_data import BBC_NEWS, minilm_folder, require_package
from texkit.core.quantized_table import quantize_rows
from texkit.modules import BERTClassifier, BERTEncoder, GPT2Decoder, LlamaDecoder, T5EncoderDecoder
from texkit.modules.embedding_table import TableEmbedder

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
GPT2 = os.path.join(FIXTURES, "families", "gpt2")
T5 = os.path.join(FIXTURES, "families", "t5")
LLAMA = os.path.join(FIXTURES, "llm", "llama")
QWEN2 = os.path.join(FIXTURES, "llm", "qwen2")
DISTILBERT = os.path.join(FIXTURES, "families", "distilbert")
T5_KEYS = (
    "vocab_size",
    "d_model",
    "d_kv",
    "d_ff",
    "num_layers",
    "num_decoder_layers",
    "num_heads",
    "relative_attention_num_buckets",
    "relative_attention_max_distance",
    "feed_forward_proj",
    "tie_word_embeddings",
)
IDS = np.random.default_rng(7).integers(3, 99, size=(2, 9)).astype(np.int32)
LENGTHS = np.array([9, 6], np.int32)


def row_cosines(a, b, lengths=None):
    """Cosine of each row (the last axis) of ``a`` and ``b``, valid steps only."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    with np.errstate(invalid="ignore"):  # padded steps are all zeros; they are dropped below
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    if lengths is None:
        return cos.ravel()
    return np.concatenate([row[:n] for row, n in zip(cos, lengths, strict=True)])


def snapshot(module):
    """Every weight of ``module`` (path, dtype, values) and its quantization mode."""
    weights = [(w.path, str(w.dtype), np.array(w.numpy())) for w in module.weights]
    return weights, tx.tasks.quantization_mode(module)


def assert_unchanged(module, before):
    weights, mode = snapshot(module)
    assert mode == before[1]
    assert [(p, d) for p, d, _ in weights] == [(p, d) for p, d, _ in before[0]]
    for (path, _, value), (_, _, old) in zip(weights, before[0], strict=True):
        np.testing.assert_array_equal(value, old, err_msg=path)


def quantized_layer_bytes(module):
    """Bytes of the weights of the layers quantize() changes (Dense, EinsumDense, tables)."""
    total = 0
    for layer in module._flatten_layers(include_self=True, recursive=True):
        if type(layer) in (keras.layers.Dense, keras.layers.EinsumDense) or isinstance(
            layer, TableEmbedder
        ):
            total += sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in layer.weights)
    return total


def gpt2_logits(decoder):
    outputs, _, _ = decoder(inputs=IDS, sequence_length=LENGTHS, decoding_strategy="train_greedy")
    return outputs.logits.numpy()


def bbc_texts(count=3):
    folder = os.path.join(require_package(BBC_NEWS), "bbcnews", "data")
    texts = []
    for topic in ("business", "tech", "sports")[:count]:
        with open(os.path.join(folder, topic, "001.txt"), encoding="utf-8") as f:
            texts.append(f.read())
    return texts


def test_rows_are_quantized_with_one_scale_each():
    table = np.random.default_rng(0).normal(size=(6, 10)).astype(np.float32)
    table[2] *= 1e-3  # a small row keeps its own precision
    table[4] = 0.0
    values, scale = quantize_rows(table)
    assert values.dtype == np.int8 and scale.dtype == np.float32
    peak = np.abs(table).max(1)
    np.testing.assert_allclose(scale[peak > 0], peak[peak > 0] / 127, rtol=1e-7)
    assert scale[4] == 1.0 and not values[4].any()
    assert np.abs(values).max() == 127
    error = np.abs(values * scale[:, None] - table)
    assert np.all(error <= scale[:, None] / 2 + 1e-9)


def test_minilm_int8_on_real_text_keeps_outputs_in_a_quarter_of_the_bytes():
    encoder = BERTEncoder.from_pretrained(minilm_folder())
    tokenizer = tx.pretrained.tokenizer_from_pretrained(minilm_folder(), max_seq_length=64)
    features = tokenizer.encode(tf.constant(bbc_texts()))
    lengths = features["sequence_length"].numpy()
    args = dict(sequence_length=features["sequence_length"], segment_ids=features["segment_ids"])
    outputs, pooled = encoder(features["input_ids"], **args)
    float_bytes = quantized_layer_bytes(encoder)

    assert tx.tasks.quantize(encoder) is encoder
    assert tx.tasks.quantization_mode(encoder) == "int8"
    ratio = quantized_layer_bytes(encoder) / float_bytes
    assert 0.25 <= ratio <= 0.30, ratio
    assert encoder.word_embedder.embedding.dtype == "int8"
    assert encoder.blocks[0].self_attention.query.kernel.dtype == "int8"
    int8_outputs, int8_pooled = encoder(features["input_ids"], **args)
    assert row_cosines(outputs, int8_outputs, lengths).min() >= 0.99
    assert row_cosines(pooled, int8_pooled).min() >= 0.99


@pytest.mark.parametrize("folder", [GPT2, LLAMA, QWEN2])
def test_fixture_decoders_int8_logits_close(folder):
    decoder = tx.pretrained.from_pretrained(folder)
    expected = gpt2_logits(decoder)
    tx.tasks.quantize(decoder, "int8")
    got = gpt2_logits(decoder)
    assert row_cosines(expected, got, LENGTHS).min() >= 0.99


def test_t5_int8_logits_close():
    # The T5 fixtures are drawn with initializer_factor=4.0, so large that their attention is
    # nearly one-hot and any change of the weights moves it (benchmarks/RESULTS.md): this is
    # the fixture's architecture (gated, tied, relative positions) at the usual scale.
    with open(os.path.join(T5, "config.json")) as f:
        config = {k: v for k, v in json.load(f).items() if k in T5_KEYS}
    t5 = T5EncoderDecoder(hparams={**config, "initializer_factor": 1.0})
    feed = dict(
        input_ids=IDS,
        sequence_length=LENGTHS,
        decoder_input_ids=IDS[:, :5],
        decoder_sequence_length=np.array([5, 3], np.int32),
    )
    expected = t5(**feed).logits.numpy()
    tx.tasks.quantize(t5)
    assert t5.shared.embedding.dtype == "int8"
    got = t5(**feed).logits.numpy()
    assert row_cosines(expected, got, [5, 3]).min() >= 0.99


@pytest.mark.parametrize("cls, folder", [(GPT2Decoder, GPT2), (LlamaDecoder, LLAMA)])
def test_quantized_decoder_generates_under_xla(cls, folder):
    decoder = cls.from_pretrained(folder)
    start = tf.constant([3, 5], tf.int32)

    def greedy(start):
        outputs, _, lengths = decoder(
            decoding_strategy="infer_greedy", start_tokens=start, end_token=1, max_decoding_length=8
        )
        return outputs.sample_id, outputs.logits

    float_ids, _ = greedy(start)
    tx.tasks.quantize(decoder)
    eager_ids, eager_logits = greedy(start)
    xla_ids, xla_logits = tf.function(greedy, jit_compile=True)(start)
    np.testing.assert_array_equal(xla_ids, eager_ids)
    np.testing.assert_allclose(xla_logits, eager_logits, atol=1e-4)
    # The fixtures' greedy continuations win by margins far above int8's error.
    np.testing.assert_array_equal(eager_ids, float_ids)


def functional_gpt2():
    decoder = GPT2Decoder.from_pretrained(GPT2, {"name": "gpt2"})
    inputs = {
        "inputs": keras.Input((IDS.shape[1],), dtype="int32", name="inputs"),
        "sequence_length": keras.Input((), dtype="int32", name="sequence_length"),
    }
    return keras.Model(inputs, decoder(**inputs)[0].logits), decoder


def test_quantized_model_saves_and_loads_exactly(tmp_path):
    model, decoder = functional_gpt2()
    feed = {"inputs": IDS, "sequence_length": LENGTHS}
    tx.tasks.quantize(decoder)
    expected = model(feed).numpy()
    assert decoder.get_config()["quantization"] == {"mode": "int8", "weight_only": True}

    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert tx.tasks.quantization_mode(loaded.get_layer("gpt2")) == "int8"
    np.testing.assert_array_equal(loaded(feed).numpy(), expected)

    model.save_weights(tmp_path / "model.weights.h5")
    fresh = keras.Model.from_config(model.get_config())
    before = [w.numpy() for w in fresh.weights]
    fresh.load_weights(tmp_path / "model.weights.h5")
    assert any(not np.array_equal(a, w.numpy()) for a, w in zip(before, fresh.weights, strict=True))
    assert [(tuple(w.shape), str(w.dtype)) for w in fresh.weights] == [
        (tuple(w.shape), str(w.dtype)) for w in model.weights
    ]
    np.testing.assert_array_equal(fresh(feed).numpy(), expected)


def test_a_quantized_classifier_saves_whole_and_a_module_config_requantizes(tmp_path):
    classifier = tiny_classifier()
    inputs = {
        "input_ids": keras.Input((None,), dtype="int32", name="input_ids"),
        "sequence_length": keras.Input((), dtype="int32", name="sequence_length"),
    }
    model = keras.Model(inputs, classifier(**inputs)[0])
    feed = {"input_ids": IDS, "sequence_length": LENGTHS}
    tx.tasks.quantize(classifier)
    expected = model(feed).numpy()
    model.save(tmp_path / "classifier.keras")
    loaded = keras.saving.load_model(tmp_path / "classifier.keras")
    np.testing.assert_array_equal(loaded(feed).numpy(), expected)

    # A module deserialized alone is built from its build config, then quantized.
    copy = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(classifier))
    assert copy.built and tx.tasks.quantization_mode(copy) == "int8"
    assert copy.encoder.word_embedder.embedding.dtype == "int8"
    bad = keras.saving.serialize_keras_object(classifier)
    bad["config"]["quantization"] = {"mode": "int3", "weight_only": True}
    with pytest.raises(ValueError, match="mode must be one of"):
        keras.saving.deserialize_keras_object(bad)


def test_quantized_module_exports_as_a_saved_model(tmp_path):
    model, decoder = functional_gpt2()
    tx.tasks.quantize(decoder)
    expected = model({"inputs": IDS, "sequence_length": LENGTHS}).numpy()
    serving = tf.Module()
    serving.weights = list(model.weights)
    serving.logits = tf.function(
        lambda ids, lengths: model({"inputs": ids, "sequence_length": lengths}),
        input_signature=[
            tf.TensorSpec([None, IDS.shape[1]], tf.int32),
            tf.TensorSpec([None], tf.int32),
        ],
    )
    tf.saved_model.save(serving, str(tmp_path / "saved"))
    restored = tf.saved_model.load(str(tmp_path / "saved"))
    assert (
        sum(w.dtype == tf.int8 for w in restored.weights)
        == sum(w.dtype == "int8" for w in model.weights)
        > 0
    )
    # float32 rounding: the graph's kernels need not be the eager ones (1.4e-6 of 4.2 seen).
    np.testing.assert_allclose(
        restored.logits(IDS, LENGTHS).numpy(), expected, rtol=1e-6, atol=1e-6
    )


def tiny_classifier():
    classifier = BERTClassifier.from_pretrained(DISTILBERT, {"num_classes": 3})
    classifier(IDS, LENGTHS)
    return classifier


def test_refused_calls_change_nothing():
    decoder = GPT2Decoder.from_pretrained(GPT2)
    before = snapshot(decoder)
    with pytest.raises(ValueError, match="mode must be one of"):
        tx.tasks.quantize(decoder, "int3")
    with pytest.raises(TypeError, match="weight_only must be a bool"):
        tx.tasks.quantize(decoder, weight_only="yes")
    with pytest.raises(ValueError, match="int4.*weight_only=True"):
        tx.tasks.quantize(decoder, "int4", weight_only=False)
    with pytest.raises(TypeError, match="module must be a Keras layer"):
        tx.tasks.quantize("decoder")
    assert_unchanged(decoder, before)

    tx.tasks.quantize(decoder)
    quantized = snapshot(decoder)
    for mode in ("int8", "int4"):
        with pytest.raises(ValueError, match="already quantized"):
            tx.tasks.quantize(decoder, mode)
    assert_unchanged(decoder, quantized)


def test_unbuilt_lora_float16_or_nothing_to_quantize_is_refused():
    unbuilt = GPT2Decoder(
        hparams={
            "vocab_size": 20,
            "dim": 8,
            "decoder": {"num_blocks": 1, "multihead_attention": {"num_heads": 2}},
        }
    )
    with pytest.raises(ValueError, match="not built"):
        tx.tasks.quantize(unbuilt)
    assert tx.tasks.quantization_mode(unbuilt) is None and not unbuilt.built

    classifier = tiny_classifier()
    classifier.logits_layer.enable_lora(2)
    before = snapshot(classifier)
    with pytest.raises(ValueError, match="LoRA enabled"):
        tx.tasks.quantize(classifier)
    assert_unchanged(classifier, before)

    half = GPT2Decoder.from_pretrained(GPT2, dtype="mixed_float16")
    gpt2_logits(half)
    before = snapshot(half)
    with pytest.raises(ValueError, match="float16"):
        tx.tasks.quantize(half)
    assert_unchanged(half, before)

    norm = keras.layers.LayerNormalization()
    norm.build((None, 4))
    with pytest.raises(ValueError, match="no Dense, EinsumDense or embedding table"):
        tx.tasks.quantize(norm)
    assert tx.tasks.quantization_mode(norm) is None


def test_a_layer_keras_quantized_counts_as_quantized():
    classifier = tiny_classifier()
    classifier.logits_layer.quantize("int8")
    assert tx.tasks.quantization_mode(classifier) == "int8"
    before = snapshot(classifier)
    with pytest.raises(ValueError, match="already quantized"):
        tx.tasks.quantize(classifier)
    assert_unchanged(classifier, before)


def test_int4_packs_dense_kernels_and_keeps_logits_close():
    decoder = GPT2Decoder.from_pretrained(GPT2)
    expected = gpt2_logits(decoder)
    query = decoder.decoder.blocks[0].self_attention.query
    units = query.units
    tx.tasks.quantize(decoder, "int4")
    assert tx.tasks.quantization_mode(decoder) == "int4"
    assert query._kernel.dtype == "int8" and query._kernel.shape[-1] == (units + 1) // 2
    assert decoder.word_embedder.embedding.dtype == "int8"  # tables stay int8
    assert row_cosines(expected, gpt2_logits(decoder), LENGTHS).min() >= 0.95


def test_activation_quantized_int8_is_close_too():
    decoder = GPT2Decoder.from_pretrained(GPT2)
    expected = gpt2_logits(decoder)
    tx.tasks.quantize(decoder, weight_only=False)
    assert decoder.get_config()["quantization"] == {"mode": "int8", "weight_only": False}
    query = decoder.decoder.blocks[0].self_attention.query
    assert query.inputs_quantizer is not None
    assert row_cosines(expected, gpt2_logits(decoder), LENGTHS).min() >= 0.99
