"""Rotary position embeddings against numpy computations written here from the formulas."""

import math

import numpy as np
import pytest
import tensorflow as tf

from texkit.core import rotary
from texkit.core.rotary import (
    ROPE_TYPES,
    RotaryEmbedding,
    apply_rotary,
    rope_settings,
    rotary_inverse_frequencies,
)
from texkit.errors import HParamsError

RNG = np.random.default_rng(7)


def numpy_default(dim, theta):
    return np.array([theta ** (-(2.0 * i) / dim) for i in range(dim // 2)])


def numpy_llama3(dim, theta, factor, low, high, original):
    out = []
    for f in numpy_default(dim, theta):
        wavelength = 2 * math.pi / f
        if wavelength < original / high:
            out.append(f)
        elif wavelength > original / low:
            out.append(f / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
    return np.array(out)


def numpy_yarn(dim, theta, factor, original, beta_fast=32, beta_slow=1, truncate=True):
    def dimension(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = dimension(beta_fast), dimension(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i, f in enumerate(numpy_default(dim, theta)):
        interpolate = min(max((i - low) / (high - low), 0.0), 1.0)
        out.append(interpolate * f / factor + (1 - interpolate) * f)
    return np.array(out)


def numpy_dynamic(dim, theta, factor, original, length):
    if length > original:
        theta = theta * (factor * length / original - (factor - 1)) ** (dim / (dim - 2))
    return numpy_default(dim, theta)


def numpy_rotate(x, positions, inverse, scaling=1.0):
    """x [batch, heads, time, head_dim]; positions [batch, time]; pairs (i, i + half)."""
    x = x.astype(np.float64)
    out = x.copy()
    half = len(inverse)
    for b in range(x.shape[0]):
        for t in range(x.shape[2]):
            for i, f in enumerate(inverse):
                # The angle is rounded to float32, as the reference implementations compute it.
                angle = float(np.float32(positions[b, t]) * np.float32(f))
                c, s = math.cos(angle) * scaling, math.sin(angle) * scaling
                a, z = x[b, :, t, i], x[b, :, t, i + half]
                out[b, :, t, i] = a * c - z * s
                out[b, :, t, i + half] = z * c + a * s
    return out


def frequencies(head_dim, theta, scaling=None, **kwargs):
    inverse, attention = rotary_inverse_frequencies(head_dim, theta, scaling, **kwargs)
    assert inverse.dtype == tf.float32
    return inverse.numpy(), attention


@pytest.mark.parametrize("head_dim,theta", [(64, 10000.0), (128, 500000.0), (256, 1e6)])
def test_default_and_linear(head_dim, theta):
    inverse, attention = frequencies(head_dim, theta)
    np.testing.assert_allclose(inverse, numpy_default(head_dim, theta), rtol=1e-6)
    assert attention == 1.0
    for spelling in ({"rope_type": "default"}, {"type": "default"}, None, {}):
        np.testing.assert_allclose(frequencies(head_dim, theta, spelling)[0], inverse)
    linear, attention = frequencies(head_dim, theta, {"type": "linear", "factor": 8.0})
    np.testing.assert_allclose(linear, numpy_default(head_dim, theta) / 8, rtol=1e-6)
    assert attention == 1.0


def test_llama3_with_llama_3_1_values():
    scaling = {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }
    inverse, attention = frequencies(128, 500000.0, scaling)
    expected = numpy_llama3(128, 500000.0, 8.0, 1.0, 4.0, 8192)
    np.testing.assert_allclose(inverse, expected, rtol=1e-6)
    assert attention == 1.0
    default = numpy_default(128, 500000.0)
    # The three bands are all present: kept, interpolated and divided by the factor.
    assert np.sum(np.isclose(expected, default)) > 0
    assert np.sum(np.isclose(expected, default / 8)) > 0
    assert np.sum(~np.isclose(expected, default) & ~np.isclose(expected, default / 8)) > 0
    other = {**scaling, "factor": 32.0, "high_freq_factor": 2.0, "rope_theta": 10000.0}
    np.testing.assert_allclose(
        frequencies(64, None, other)[0], numpy_llama3(64, 1e4, 32.0, 1.0, 2.0, 8192), rtol=1e-6
    )


@pytest.mark.parametrize(
    "head_dim,theta,settings",
    [
        (128, 1e6, {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
        (64, 10000.0, {"rope_type": "yarn", "factor": 16, "beta_fast": 16.0, "beta_slow": 2.0}),
        (64, 150000.0, {"rope_type": "yarn", "factor": 32.0, "truncate": False}),
        (64, 1e4, {"rope_type": "yarn", "factor": 8.0, "beta_fast": None, "truncate": None}),
    ],
)
def test_yarn(head_dim, theta, settings):
    inverse, attention = frequencies(head_dim, theta, settings, max_position_embeddings=4096)
    original = settings.get("original_max_position_embeddings", 4096)
    expected = numpy_yarn(
        head_dim,
        theta,
        settings["factor"],
        original,
        settings.get("beta_fast") or 32,
        settings.get("beta_slow") or 1,
        settings.get("truncate") is not False,
    )
    np.testing.assert_allclose(inverse, expected, rtol=1e-6)
    assert attention == pytest.approx(0.1 * math.log(settings["factor"]) + 1.0)


def test_yarn_attention_factor_with_mscale_and_given():
    base = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096}
    _, same = frequencies(64, 1e4, {**base, "mscale": 1.0, "mscale_all_dim": 1.0})
    assert same == pytest.approx(1.0)
    _, ratio = frequencies(64, 1e4, {**base, "mscale": 0.707, "mscale_all_dim": 1.0})
    mag = lambda m: 0.1 * m * math.log(40.0) + 1.0  # noqa: E731
    assert ratio == pytest.approx(mag(0.707) / mag(1.0))
    assert frequencies(64, 1e4, {**base, "attention_factor": 1.25})[1] == 1.25
    assert frequencies(64, 1e4, {**base, "factor": 1.0})[1] == 1.0


def test_longrope_switches_at_the_original_length():
    rng = np.random.default_rng(0)
    short, long = rng.uniform(1, 3, 48).tolist(), rng.uniform(2, 40, 48).tolist()
    settings = {"type": "longrope", "short_factor": short, "long_factor": long}
    settings["original_max_position_embeddings"] = 4096
    kwargs = {"max_position_embeddings": 131072}
    default = numpy_default(96, 10000.0)
    factor = 131072 / 4096
    for length, factors in [(None, short), (100, short), (4096, short), (4097, long)]:
        inverse, attention = frequencies(96, 1e4, settings, sequence_length=length, **kwargs)
        np.testing.assert_allclose(inverse, default / np.array(factors), rtol=1e-6)
        assert attention == pytest.approx(math.sqrt(1 + math.log(factor) / math.log(4096)))
    given = {**settings, "factor": 8.0}
    assert frequencies(96, 1e4, given)[1] == pytest.approx(
        math.sqrt(1 + math.log(8) / math.log(4096))
    )
    rope = RotaryEmbedding(96, 1e4, settings, max_position_embeddings=131072)
    compiled = tf.function(rope.inverse_frequencies, jit_compile=True)
    for last, factors in [(4095, short), (4096, long), (9000, long)]:
        positions = tf.constant([[last - 1, last]])
        np.testing.assert_allclose(compiled(positions), default / np.array(factors), rtol=1e-6)


def test_dynamic_below_and_above_the_original_length():
    settings = {"rope_type": "dynamic", "factor": 2.0}
    kwargs = {"max_position_embeddings": 2048}
    default = numpy_default(64, 10000.0)
    for length in (None, 10, 2048):
        np.testing.assert_array_equal(
            frequencies(64, 1e4, settings, sequence_length=length, **kwargs)[0],
            default.astype("float32"),
        )
    rope = RotaryEmbedding(64, 1e4, {**settings, "original_max_position_embeddings": 2048})
    compiled = tf.function(rope.inverse_frequencies, jit_compile=True)
    for length in (5, 2048, 2049, 4096, 10000):
        expected = numpy_dynamic(64, 1e4, 2.0, 2048, length)
        np.testing.assert_allclose(compiled(tf.constant([length - 1])), expected, rtol=2e-6)
        eager = frequencies(64, 1e4, settings, sequence_length=tf.constant(length), **kwargs)[0]
        np.testing.assert_allclose(eager, expected, rtol=2e-6)


def test_compiled_decoding_steps_follow_dynamic_and_yarn():
    # One step at a time, as cached decoding calls it, crossing the original length 16.
    x = RNG.normal(size=(2, 2, 1, 8)).astype("float32")
    dynamic = RotaryEmbedding(8, 100.0, {"type": "dynamic", "factor": 3.0}, None, 16)
    yarn = RotaryEmbedding(8, 100.0, {"rope_type": "yarn", "factor": 4.0}, None, 16)
    step_dynamic = tf.function(dynamic, jit_compile=True)
    step_yarn = tf.function(yarn, jit_compile=True)
    for position in (3, 15, 16, 17, 40):
        positions = np.full([2, 1], position)
        expected = numpy_rotate(x, positions, numpy_dynamic(8, 100.0, 3.0, 16, position + 1))
        np.testing.assert_allclose(step_dynamic(x, positions), expected, atol=1e-5)
        scaling = 0.1 * math.log(4.0) + 1.0
        expected = numpy_rotate(x, positions, numpy_yarn(8, 100.0, 4.0, 16), scaling)
        np.testing.assert_allclose(step_yarn(x, positions), expected, atol=1e-5)


@pytest.mark.parametrize("mode", ["eager", "function", "xla"])
def test_apply_rotary_equals_the_rotation(mode):
    x = RNG.normal(size=(2, 3, 5, 8)).astype("float32")
    positions = np.array([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]], "int32")
    inverse = numpy_default(8, 10000.0).astype("float32")
    run = apply_rotary
    if mode != "eager":
        run = tf.function(apply_rotary, jit_compile=mode == "xla")
    out = run(x, positions, inverse, 1.5).numpy()
    np.testing.assert_allclose(out, numpy_rotate(x, positions, inverse, 1.5), atol=1e-5)
    shared = run(x, positions[0], inverse, 1.0).numpy()
    np.testing.assert_allclose(shared, numpy_rotate(x, positions[[0, 0]], inverse), atol=1e-5)


def test_rotation_keeps_pair_norms_and_is_relative():
    head_dim, half = 16, 8
    inverse = numpy_default(head_dim, 10000.0).astype("float32")
    x = RNG.normal(size=(1, 2, 4, head_dim)).astype("float32")
    out = apply_rotary(x, [3, 50, 700, 9000], inverse).numpy()
    norms = lambda v: np.hypot(v[..., :half], v[..., half:])  # noqa: E731
    np.testing.assert_allclose(norms(out), norms(x), rtol=1e-5)
    q, k = RNG.normal(size=(1, 1, 1, head_dim)), RNG.normal(size=(1, 1, 1, head_dim))
    q, k = q.astype("float32"), k.astype("float32")

    def score(m, n):
        return float(np.sum(apply_rotary(q, [m], inverse) * apply_rotary(k, [n], inverse)))

    for offset in (0, 3, 17):
        reference = score(offset, 0)
        for start in (5, 100, 1000):
            assert score(start + offset, start) == pytest.approx(reference, rel=1e-4, abs=1e-4)
    assert score(3, 0) != pytest.approx(score(4, 0), rel=1e-3)


def test_partial_rotation_passes_the_tail_unchanged():
    rope = RotaryEmbedding(12, 10000.0, partial_rotary_factor=0.5)
    assert rope.rotary_dim == 6
    x = RNG.normal(size=(2, 2, 3, 12)).astype("float32")
    positions = np.array([[1, 2, 3], [4, 5, 6]])
    out = tf.function(rope, jit_compile=True)(x, positions).numpy()
    np.testing.assert_array_equal(out[..., 6:], x[..., 6:])
    inverse = numpy_default(6, 10000.0)
    expected = numpy_rotate(x[..., :6], positions, inverse)
    np.testing.assert_allclose(out[..., :6], expected, atol=1e-5)
    # Transformers 5's rope_parameters may carry the factor and theta.
    same = RotaryEmbedding(12, scaling={"rope_theta": 1e4, "partial_rotary_factor": 0.5})
    np.testing.assert_allclose(same(x, positions).numpy(), out, atol=1e-6)


def test_bfloat16_in_and_out_computed_in_float32():
    x = RNG.normal(size=(1, 2, 6, 32)).astype("float32") * 100
    x16 = tf.cast(x, tf.bfloat16)
    positions = np.array([[10, 200, 3000, 40000, 500000, 6000000]])
    inverse = numpy_default(32, 10000.0).astype("float32")
    out = apply_rotary(x16, positions, inverse)
    assert out.dtype == tf.bfloat16
    reference = numpy_rotate(tf.cast(x16, tf.float32).numpy(), positions, inverse)
    error = np.abs(tf.cast(out, tf.float32).numpy() - reference)
    # Rounded once at the end: within half a bfloat16 unit of the exact result.
    assert np.all(error <= 2.0**-8 * np.abs(reference) + 1e-3)


def test_settings_errors_name_the_key():
    cases = [
        ({"rope_type": "ntk-by-parts"}, "rope_scaling.rope_type", "llama3, yarn, longrope"),
        ({"type": "su"}, "rope_scaling.type", "supported"),
        ({"type": ["linear"]}, "rope_scaling.type", "supported"),
        ({"rope_type": "linear"}, "rope_scaling.factor", "requires"),
        ({"rope_type": "dynamic", "factor": None}, "rope_scaling.factor", "requires"),
        ({"rope_type": "linear", "factor": "2"}, "rope_scaling.factor", "number"),
        ({"rope_type": "linear", "factor": -2.0}, "rope_scaling.factor", "positive"),
        (
            {"rope_type": "linear", "factor": 2.0, "beta_fast": 3},
            "rope_scaling.beta_fast",
            "not a setting",
        ),
        (
            {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4},
            "rope_scaling.original_max_position_embeddings",
            "requires",
        ),
        (
            {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 4.0,
                "high_freq_factor": 1.0,
                "original_max_position_embeddings": 8192,
            },
            "rope_scaling.high_freq_factor",
            "greater",
        ),
        (
            {"rope_type": "yarn", "factor": 4.0},
            "rope_scaling.original_max_position_embeddings",
            "needs it",
        ),
        (
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096.5},
            "rope_scaling.original_max_position_embeddings",
            "integer",
        ),
        (
            {"rope_type": "longrope", "short_factor": [1.0] * 3, "long_factor": [1.0] * 32},
            "rope_scaling.short_factor",
            "32 numbers",
        ),
        ({"rope_theta": 500000.0}, "rope_scaling.rope_theta", "disagrees"),
        ({"partial_rotary_factor": 1.5}, "rope_scaling.partial_rotary_factor", "(0, 1]"),
    ]
    for settings, path, words in cases:
        with pytest.raises(HParamsError, match=words.replace("(", r"\(")) as caught:
            rope_settings(64, 10000.0, settings)
        assert caught.value.path == path, settings
    assert set(ROPE_TYPES) == {"default", "linear", "dynamic", "llama3", "yarn", "longrope"}


def test_exported_from_core():
    import texkit.core

    assert texkit.core.RotaryEmbedding is RotaryEmbedding
    assert texkit.core.apply_rotary is rotary.apply_rotary
    assert texkit.core.rotary_inverse_frequencies is rotary_inverse_frequencies
