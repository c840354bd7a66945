import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit import registry
from texkit.core.addressing_attention import CosineAttention, LocationAttention
from texkit.core.attention_mechanisms import AttentionMechanism, BahdanauAttention, LuongAttention
from texkit.core.layers import get_instance
from texkit.hparams import HParams, HParamsError

RNG = np.random.default_rng(11)
QUERY_DIM = 6

# name: (factory, memory_dim). Every case is built for queries of size QUERY_DIM.
CASES = {
    "luong_dot": (lambda **kw: LuongAttention(score="dot", **kw), QUERY_DIM),
    "luong_general": (lambda **kw: LuongAttention(**kw), 5),
    "luong_general_units_scale": (lambda **kw: LuongAttention(units=6, scale=True, **kw), 5),
    "luong_scaled_dot_scale": (
        lambda **kw: LuongAttention(score="scaled_dot", scale=True, **kw),
        QUERY_DIM,
    ),
    "bahdanau": (lambda **kw: BahdanauAttention(7, **kw), 5),
    "bahdanau_normalized": (lambda **kw: BahdanauAttention(7, normalize=True, **kw), 5),
    "cosine": (lambda **kw: CosineAttention(strength=2.0, **kw), QUERY_DIM),
    "cosine_units_fixed_strength": (
        lambda **kw: CosineAttention(units=4, strength=3.0, learn_strength=False, **kw),
        5,
    ),
    "location": (lambda **kw: LocationAttention(max_memory_length=9, **kw), 5),
}


def softplus(x):
    return np.logaddexp(0.0, x)


def numpy_scores(layer, query, memory):
    """Each mechanism's score, in float64 from the layer's own weights."""
    w = {v.path.split("/")[-1]: v.numpy().astype(np.float64) for v in layer.weights}
    q, m = query.astype(np.float64), memory.astype(np.float64)
    if isinstance(layer, LuongAttention):
        keys = m @ w["memory_kernel"] if layer.score_type == "general" else m
        scores = np.einsum("btd,bd->bt", keys, q)
        if layer.score_type == "scaled_dot":
            scores /= np.sqrt(q.shape[-1])
        return scores * w["scale"] if layer.scale else scores
    if isinstance(layer, BahdanauAttention):
        hidden = (m @ w["memory_kernel"]) + (q @ w["query_kernel"])[:, None, :]
        v = w["attention_v"]
        if layer.normalize:
            hidden = hidden + w["attention_b"]
            v = w["attention_g"] * v / np.linalg.norm(v)
        return np.tanh(hidden) @ v
    if isinstance(layer, CosineAttention):
        if layer.units is not None:
            q, m = q @ w["query_kernel"], m @ w["memory_kernel"]
        cosine = np.einsum("btd,bd->bt", m, q)
        cosine /= np.linalg.norm(q, axis=-1)[:, None] * np.linalg.norm(m, axis=-1)
        beta = softplus(w["strength"]) if layer.learn_strength else layer.strength
        return beta * cosine
    if isinstance(layer, LocationAttention):
        logits = q @ w["kernel"] + (w["bias"] if layer.use_bias else 0.0)
        return logits[:, : m.shape[1]]
    raise TypeError(layer)


def numpy_alignments(scores, lengths):
    """Softmax over each row's first ``lengths[b]`` steps, zeros after."""
    out = np.zeros_like(scores)
    for b, length in enumerate(lengths):
        row = scores[b, :length]
        e = np.exp(row - row.max())
        out[b, :length] = e / e.sum()
    return out


def make(case, time=5, batch=3, randomize=True, **kw):
    """A built mechanism (with random weights) and a query, memory and lengths for it."""
    factory, memory_dim = CASES[case]
    layer = factory(**kw)
    layer.build((batch, QUERY_DIM), (batch, time, memory_dim))
    if randomize:
        # Random values everywhere (also for g, b, the strength), so no term of a formula hides
        # behind an initial 0 or 1.
        for weight in layer.weights:
            weight.assign(RNG.normal(size=weight.shape) * 0.7)
    query = RNG.normal(size=(batch, QUERY_DIM)).astype(np.float32)
    memory = RNG.normal(size=(batch, time, memory_dim)).astype(np.float32)
    lengths = np.array([time, 2, 3][:batch], np.int32)
    return layer, query, memory, lengths


def alignments(layer, query, memory, lengths=None):
    return layer(query, layer.prepare_memory(memory), lengths).numpy()


@pytest.mark.parametrize("case", CASES)
def test_scores_and_alignments_equal_formula(case):
    layer, query, memory, lengths = make(case)
    keys = layer.prepare_memory(memory)
    scores = layer.score(query, keys)
    assert scores.dtype == tf.float32
    want = numpy_scores(layer, query, memory)
    np.testing.assert_allclose(scores.numpy(), want, rtol=1e-5, atol=1e-5)

    got = layer(query, keys, lengths).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, numpy_alignments(want, lengths), atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)
    padded = np.arange(memory.shape[1])[None, :] >= lengths[:, None]
    assert np.all(got[padded] == 0.0)
    unmasked = layer(query, keys).numpy()
    np.testing.assert_allclose(unmasked, numpy_alignments(want, [want.shape[1]] * 3), atol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_padding_changes_nothing(case):
    layer, query, memory, lengths = make(case)
    base = alignments(layer, query, memory, lengths)
    # Garbage in the padded steps and in 3 appended steps; NaN too, which must not leak.
    for fill in ("random", "nan"):
        grown = np.concatenate([memory, np.zeros((3, 3, memory.shape[-1]), np.float32)], axis=1)
        for b, length in enumerate(lengths):
            steps = grown[b, length:]
            steps[...] = RNG.normal(size=steps.shape) * 50 if fill == "random" else np.nan
        got = alignments(layer, query, grown, lengths)
        np.testing.assert_allclose(got[:, :5], base, atol=1e-6, err_msg=fill)
        assert np.all(got[:, 5:] == 0.0)


@pytest.mark.parametrize("case", CASES)
def test_graph_and_xla_give_the_same_alignments(case):
    layer, query, memory, lengths = make(case)
    eager = alignments(layer, query, memory, lengths)

    def step(q, m, n):
        return layer(q, layer.prepare_memory(m), n)

    xla = tf.function(step, jit_compile=True)(query, memory, lengths)
    np.testing.assert_allclose(xla.numpy(), eager, atol=1e-6)
    # A graph with an unknown memory length, as when memories come from tf.data.
    spec = (
        tf.TensorSpec((None, QUERY_DIM), tf.float32),
        tf.TensorSpec((None, None, memory.shape[-1]), tf.float32),
        tf.TensorSpec((None,), tf.int32),
    )
    graph = tf.function(step, input_signature=spec)(query, memory, lengths)
    np.testing.assert_allclose(graph.numpy(), eager, atol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_mixed_bfloat16_gives_float32_alignments_close_to_float32(case):
    layer, query, memory, lengths = make(case)
    mixed = CASES[case][0](dtype="mixed_bfloat16")
    mixed.build(query.shape, memory.shape)
    mixed.set_weights(layer.get_weights())
    assert all(w.dtype == "float32" for w in mixed.weights)
    keys = mixed.prepare_memory(memory)
    assert keys.dtype == tf.bfloat16
    assert mixed.score(query, keys).dtype == tf.float32
    got = mixed(query, keys, lengths)
    assert got.dtype == tf.float32
    expected = alignments(layer, query, memory, lengths)
    np.testing.assert_allclose(got.numpy(), expected, atol=3e-2)
    # Under XLA, as close to float32: where its fusions round to bfloat16 depends on the CPU
    # (equal to the eager result to 1e-6 on one with AVX-512 bfloat16 instructions, within
    # 2e-3 to 1.5e-2 on one without).
    xla = tf.function(lambda q, m, n: mixed(q, mixed.prepare_memory(m), n), jit_compile=True)
    np.testing.assert_allclose(xla(query, memory, lengths).numpy(), expected, atol=3e-2)


@pytest.mark.parametrize("case", CASES)
def test_config_round_trip(case):
    layer, query, memory, lengths = make(case, dtype="float32", name="attention")
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    # Through keras.saving, as inside a saved decoder: built from the recorded shapes.
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer) and restored.get_config() == config
    assert restored.built
    restored.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        alignments(restored, query, memory, lengths),
        alignments(layer, query, memory, lengths),
        atol=1e-7,
    )


@pytest.mark.parametrize("case", CASES)
def test_gradients_reach_every_weight(case):
    layer, query, memory, lengths = make(case)
    target = RNG.normal(size=(3, 5)).astype(np.float32)
    memory = tf.constant(memory)
    with tf.GradientTape() as tape:
        tape.watch(memory)
        loss = tf.reduce_sum(layer(query, layer.prepare_memory(memory), lengths) * target)
    weights = layer.trainable_weights
    grads = tape.gradient(loss, [*weights, memory])
    for weight, grad in zip(weights, grads, strict=False):
        assert grad is not None, weight.path
        assert np.all(np.isfinite(grad.numpy())) and np.any(grad.numpy() != 0), weight.path
    if not isinstance(layer, LocationAttention):  # the only one blind to the memory content
        assert np.any(grads[-1].numpy() != 0)


def test_initial_values():
    luong = LuongAttention(scale=True)
    luong.build((2, 4), (2, 3, 5))
    assert luong.scale_weight.numpy() == 1.0
    bahdanau = BahdanauAttention(16, normalize=True)
    bahdanau.build((2, 4), (2, 3, 5))
    np.testing.assert_allclose(bahdanau.attention_g.numpy(), 0.25)
    assert np.all(bahdanau.attention_b.numpy() == 0.0)
    for strength in (0.5, 2.0, 50.0):
        cosine = CosineAttention(strength=strength)
        cosine.build((2, 4), (2, 3, 4))
        np.testing.assert_allclose(softplus(cosine.strength_weight.numpy()), strength, rtol=1e-6)
    location = LocationAttention(4, use_bias=False)
    location.build((2, 4), (2, 3, 5))
    assert [w.path.split("/")[-1] for w in location.weights] == ["kernel"]


def test_cosine_zero_vectors_give_no_nan():
    layer = CosineAttention()
    layer.build((2, 3), (2, 4, 3))
    query = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], np.float32)
    memory = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    memory[1, 0] = 0.0
    query = tf.constant(query)
    with tf.GradientTape() as tape:
        tape.watch(query)
        got = layer(query, layer.prepare_memory(memory), np.array([3, 4]))
        loss = tf.reduce_sum(got * RNG.normal(size=(2, 4)))
    np.testing.assert_allclose(got.numpy()[0], [1 / 3, 1 / 3, 1 / 3, 0.0], atol=1e-6)
    assert np.all(np.isfinite(got.numpy()))
    assert np.all(np.isfinite(tape.gradient(loss, query).numpy()))


def test_empty_memory_gives_a_row_of_zeros():
    layer, query, memory, _ = make("bahdanau")
    got = alignments(layer, query, memory, np.array([0, 5, 1], np.int32))
    assert np.all(got[0] == 0.0)
    np.testing.assert_allclose(got[1:].sum(-1), 1.0, atol=1e-6)


def test_output_shape_and_symbolic_call():
    layer, *_ = make("luong_general", dtype="mixed_bfloat16", randomize=False)
    assert layer.compute_output_shape((3, 6), (3, 5, 6)) == (3, 5)
    query = keras.Input((QUERY_DIM,))
    keys = keras.Input((None, QUERY_DIM))
    out = layer(query, keys, keras.Input((), dtype="int32"))
    assert tuple(out.shape) == (None, None) and out.dtype == "float32"


def test_resolved_by_registry_name():
    layer = get_instance(
        {"type": "BahdanauAttention", "kwargs": {"units": 8}},
        "attention",
        expected=AttentionMechanism,
        dtype="mixed_bfloat16",
    )
    assert isinstance(layer, BahdanauAttention) and layer.units == 8
    assert layer.dtype_policy.name == "mixed_bfloat16"
    for cls in (LuongAttention, BahdanauAttention, CosineAttention, LocationAttention):
        assert registry.resolve(cls.__name__) is cls
        assert keras.saving.get_registered_object(f"texkit>{cls.__name__}") is cls
    with pytest.raises(HParamsError, match="attention"):
        get_instance({"type": "Dense", "kwargs": {"units": 3}}, "attention", AttentionMechanism)
    with pytest.raises(HParamsError, match=r"attention\.kwargs.*units"):
        get_instance({"type": "BahdanauAttention", "kwargs": {"units": 0}}, "attention")


def test_registered_by_importing_texkit():
    code = "import texkit; print(texkit.registry.resolve('LocationAttention').__name__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "LocationAttention", result.stderr[-2000:]


def test_hparams_check_kwargs_against_the_constructor():
    defaults = {
        "attention": {"type": "LuongAttention", "kwargs": {"units": 256, "score": "general"}},
        "name": "decoder",
    }
    # Switching the type keeps only the default kwargs the new class accepts.
    hp = HParams({"attention": {"type": "CosineAttention"}}, defaults)
    assert hp.attention.kwargs.todict() == {"units": 256}
    with pytest.raises(HParamsError, match=r"attention\.kwargs\.unit\b.*'units'"):
        HParams({"attention": {"type": "BahdanauAttention", "kwargs": {"unit": 8}}}, defaults)


@pytest.mark.parametrize(
    "factory, match",
    [
        (lambda: LuongAttention(score="cosine"), r"'score'.*'cosine'"),
        (lambda: LuongAttention(units=0), r"'units'.*got 0"),
        (lambda: LuongAttention(units=4, score="dot"), r"'units'.*units=4"),
        (lambda: LuongAttention(scale=1), r"'scale'.*got 1"),
        (lambda: BahdanauAttention(0), r"'units'.*got 0"),
        (lambda: BahdanauAttention(2.5), r"'units'.*got 2.5"),
        (lambda: BahdanauAttention(4, normalize="yes"), r"'normalize'.*'yes'"),
        (lambda: CosineAttention(units=-1), r"'units'.*got -1"),
        (lambda: CosineAttention(strength=0.0), r"'strength'.*got 0.0"),
        (lambda: CosineAttention(strength=True), r"'strength'.*got True"),
        (lambda: CosineAttention(learn_strength=None), r"'learn_strength'.*None"),
        (lambda: LocationAttention(0), r"'max_memory_length'.*got 0"),
        (lambda: LocationAttention(4, use_bias=0), r"'use_bias'.*got 0"),
    ],
)
def test_bad_arguments_name_the_argument(factory, match):
    with pytest.raises(HParamsError, match=match):
        factory()


@pytest.mark.parametrize(
    "layer, memory_dim, match",
    [
        (LuongAttention(score="dot"), 5, r"'score'.*query size 6 and memory size 5"),
        (LuongAttention(score="scaled_dot"), 5, r"'score'.*query size 6 and memory size 5"),
        (LuongAttention(units=4), 5, r"'units'.*units=4 must equal the query size 6"),
        (CosineAttention(), 5, r"'units'.*query size 6 and memory size 5"),
    ],
)
def test_mismatched_sizes_name_the_argument(layer, memory_dim, match):
    with pytest.raises(HParamsError, match=match):
        layer.build((2, 6), (2, 3, memory_dim))


def test_memory_longer_than_max_memory_length():
    layer = LocationAttention(4)
    with pytest.raises(HParamsError, match=r"6 steps.*max_memory_length=4"):
        layer.build((2, 3), (2, 6, 5))
    layer.build((2, 3), (2, None, 5))
    query = RNG.normal(size=(2, 3)).astype(np.float32)
    memory = RNG.normal(size=(2, 6, 5)).astype(np.float32)
    with pytest.raises(HParamsError, match=r"6 steps.*max_memory_length=4"):
        layer.prepare_memory(memory)
    with pytest.raises(HParamsError, match=r"6 steps.*max_memory_length=4"):
        layer(query, memory)
    # Unknown length in a graph: a runtime assertion.
    step = tf.function(
        lambda q, m: layer(q, layer.prepare_memory(m)),
        input_signature=(tf.TensorSpec((None, 3)), tf.TensorSpec((None, None, 5))),
    )
    assert step(query, memory[:, :4]).shape == (2, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_memory_length=4"):
        step(query, memory)


def test_unbuilt_layers_say_to_call_build():
    memory = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    query = RNG.normal(size=(2, 4)).astype(np.float32)
    for layer in (BahdanauAttention(4), LuongAttention(), CosineAttention(3), LocationAttention(5)):
        with pytest.raises(ValueError, match=r"call build\(query_shape, memory_shape\)"):
            layer.prepare_memory(memory)
        with pytest.raises(ValueError, match=r"call build\(query_shape, memory_shape\)"):
            layer(query, memory)
        with pytest.raises(ValueError, match=r"call build\(query_shape, memory_shape\)"):
            layer.score(query, memory)
    # Mechanisms whose weights do not depend on the query size build from the memory alone.
    for layer, key_dim in ((LuongAttention(score="dot"), 4), (LuongAttention(units=7), 7)):
        assert layer.prepare_memory(memory).shape == (2, 3, key_dim) and layer.built
    for layer in (BahdanauAttention(4), LuongAttention(), CosineAttention(3), LocationAttention(5)):
        with pytest.raises(ValueError, match="last dimension of the query must be known"):
            layer.build(None, memory.shape)
