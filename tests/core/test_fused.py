"""texkit.core.fused against the formulas (math.erf in float64), finite differences, Keras'
GELU and the statistics a dropout mask must have."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.core import fused, get_activation


def _gelu_reference(x: np.ndarray, approximate: bool) -> np.ndarray:
    x = x.astype(np.float64)
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _gelu_and_grad(x, approximate, jit=None):
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fused.gelu(x, approximate=approximate)
            loss = tf.reduce_sum(y * tf.cast(tf.range(tf.size(y)), y.dtype)[None, :] * 0.01)
        return y, tape.gradient(loss, x)

    if jit is not None:
        run = tf.function(run, jit_compile=jit)
    return run(x)


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("jit", [None, False, True])
def test_gelu_equals_the_formula_and_its_derivative(approximate, jit):
    x = np.linspace(-7.0, 7.0, 1001)[None, :]
    y, grad = _gelu_and_grad(tf.constant(x, tf.float64), approximate, jit)
    np.testing.assert_allclose(y.numpy(), _gelu_reference(x, approximate), rtol=1e-12, atol=1e-14)
    # The derivative against central differences of the float64 formula.
    eps = 1e-6
    slope = (_gelu_reference(x + eps, approximate) - _gelu_reference(x - eps, approximate)) / (
        2 * eps
    )
    weights = np.arange(x.size) * 0.01
    np.testing.assert_allclose(grad.numpy(), slope * weights, rtol=1e-6, atol=1e-8)

    y32, grad32 = _gelu_and_grad(tf.constant(x, tf.float32), approximate, jit)
    np.testing.assert_allclose(y32.numpy(), y.numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(grad32.numpy(), grad.numpy(), rtol=2e-5, atol=2e-5)
    assert y32.dtype == tf.float32 and grad32.dtype == tf.float32
    keras_y = keras.activations.gelu(tf.constant(x, tf.float32), approximate=approximate)
    np.testing.assert_allclose(y32.numpy(), keras_y.numpy(), rtol=1e-5, atol=1e-6)


def test_gelu_of_bfloat16_is_the_float32_result_rounded_once():
    x = tf.constant(np.linspace(-5, 5, 257)[None, :], tf.bfloat16)
    y, grad = _gelu_and_grad(x, False)
    assert y.dtype == tf.bfloat16 and grad.dtype == tf.bfloat16
    y32, grad32 = _gelu_and_grad(tf.cast(x, tf.float32), False)
    np.testing.assert_array_equal(y.numpy(), tf.cast(y32, tf.bfloat16).numpy())
    # The incoming gradient is rounded to bfloat16 by the loss; one more rounding on the way out.
    np.testing.assert_allclose(
        tf.cast(grad, tf.float32).numpy(), grad32.numpy(), rtol=2**-7, atol=1e-3
    )


def test_training_activation_finds_the_gelus_only():
    x = tf.constant(np.linspace(-3, 3, 13), tf.float32)
    for spec, approximate in (
        ("gelu", False),
        ({"type": "gelu", "kwargs": {"approximate": True}}, True),
    ):
        fast = fused.training_activation(get_activation(spec))
        np.testing.assert_allclose(
            fast(x).numpy(), fused.gelu(x, approximate=approximate).numpy(), rtol=0, atol=0
        )
    assert fused.training_activation(get_activation("relu")) is None
    assert fused.training_activation(None) is None


def _keep_and_scale(rate):
    dropped = round(rate * 2**32)
    return 1 - dropped / 2**32, 2**32 / (2**32 - dropped)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.77])
def test_dropout_keeps_each_element_with_the_keep_probability_and_scales_it(rate):
    x = tf.constant(np.random.default_rng(0).uniform(1, 2, [1000, 1001]), tf.float32)
    y = fused.dropout(x, rate, keras.random.SeedGenerator(3)).numpy()
    keep_probability, scale = _keep_and_scale(rate)
    kept = y != 0
    np.testing.assert_allclose(y[kept], x.numpy()[kept] * np.float32(scale), rtol=1e-7)
    n = kept.size
    sigma = math.sqrt(keep_probability * (1 - keep_probability) / n)
    assert abs(kept.mean() - keep_probability) < 5 * sigma
    # Neighbours along a row and along a column (their bits share the row's or the column's
    # hash): not correlated.
    for first, second in ((kept[:, :-1], kept[:, 1:]), (kept[:-1], kept[1:])):
        both = (first & second).mean()
        assert abs(both - keep_probability**2) < 5 * math.sqrt(keep_probability**2 / first.size)
    # Rows and columns: no structure along either axis.
    for axis in (0, 1):
        means = kept.mean(axis=axis)
        spread = math.sqrt(keep_probability * (1 - keep_probability) / kept.shape[axis])
        assert np.abs(means - keep_probability).max() < 6 * spread


def test_dropout_masks_of_different_seeds_are_independent():
    # Seeds as a SeedGenerator makes them (one word counting up) and far apart; 3-D, so rows
    # are the flattened leading dimensions.
    x = tf.ones([40, 50, 60])
    seeds = [[1, 2], [1, 3], [2, 2], [-7, 123456789]]
    masks = [fused.dropout(x, 0.5, tf.constant(seed)).numpy().reshape(-1) != 0 for seed in seeds]
    n = masks[0].size
    for i, first in enumerate(masks):
        for second in masks[i + 1 :]:
            assert abs((first & second).mean() - 0.25) < 5 * math.sqrt(0.25 * 0.75 / n)
    # No two rows of one mask are equal.
    rows = np.packbits(masks[0].reshape(-1, 60), axis=1)
    assert len(np.unique(rows, axis=0)) == rows.shape[0]
    # The mask depends on the shape and the seed only, not on how the function was traced
    # (here for a generalized shape, after calls of other ranks) or compiled.
    for y in (tf.ones([7]), tf.ones([]), tf.ones([3, 0, 2])):
        fused.dropout(y, 0.5, tf.constant([1, 2]))
    again = fused.dropout(x, 0.5, tf.constant([1, 2])).numpy().reshape(-1) != 0
    np.testing.assert_array_equal(again, masks[0])
    graph = tf.function(lambda: fused.dropout(x, 0.5, tf.constant([1, 2])), jit_compile=True)
    np.testing.assert_array_equal(graph().numpy().reshape(-1) != 0, masks[0])


@pytest.mark.parametrize("jit", [None, True])
def test_dropout_gradient_is_the_same_mask_and_scale(jit):
    x = tf.constant(np.random.default_rng(1).normal(size=[3, 5, 7]), tf.float32)  # odd size
    weights = tf.constant(np.random.default_rng(2).normal(size=[3, 5, 7]), tf.float32)
    seed = tf.constant([7, 11], tf.int32)

    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fused.dropout(x, 0.3, seed)
            loss = tf.reduce_sum(y * weights)
        return y, tape.gradient(loss, x)

    if jit is not None:
        run = tf.function(run, jit_compile=jit)
    y, grad = run(x)
    _, scale = _keep_and_scale(0.3)
    kept = y.numpy() != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(grad.numpy(), np.where(kept, weights.numpy() * scale, 0), rtol=1e-6)
    # The same seed tensor draws the same mask; a generator draws a new one on every call.
    np.testing.assert_array_equal(fused.dropout(x, 0.3, seed).numpy(), y.numpy())
    generator = keras.random.SeedGenerator(5)
    first, second = (fused.dropout(x, 0.3, generator).numpy() != 0 for _ in range(2))
    assert (first != second).any()


def test_dropout_of_bfloat16_and_the_edge_rates():
    x = tf.constant(np.random.default_rng(4).uniform(1, 2, [64, 65]), tf.bfloat16)
    y = fused.dropout(x, 0.25, tf.constant([1, 2]))
    assert y.dtype == tf.bfloat16
    kept = y.numpy() != 0
    np.testing.assert_array_equal(
        y.numpy()[kept], (tf.cast(x, tf.bfloat16) * tf.constant(4 / 3, tf.bfloat16)).numpy()[kept]
    )
    np.testing.assert_array_equal(fused.dropout(x, 0.0, tf.constant([1, 2])).numpy(), x.numpy())
    assert not fused.dropout(x, 1.0, tf.constant([1, 2])).numpy().any()
    for rate in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout rate"):
            fused.dropout(x, rate, tf.constant([1, 2]))


def test_each_replica_of_a_mirrored_strategy_computes_the_same():
    # The XLA-compiled parts run on each logical CPU device of the strategy.
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    x = tf.constant(np.linspace(-3, 3, 24).reshape(4, 6), tf.float32)
    seed = tf.constant([1, 2])

    def replica():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fused.dropout(fused.gelu(x), 0.5, seed)
        return y, tape.gradient(y, x)

    results = strategy.run(tf.function(replica))
    want = replica()
    for got in results:
        replicas = strategy.experimental_local_results(got)
        assert len(replicas) == 2
    for got, expected in zip(results, want, strict=True):
        for value in strategy.experimental_local_results(got):
            np.testing.assert_array_equal(value.numpy(), expected.numpy())


def test_eager_calls_of_new_shapes_do_not_retrace_each_time():
    # Eager training with a new sequence length per batch: the compiled parts are traced for a
    # generalized shape (XLA still compiles each concrete shape once).
    generator = keras.random.SeedGenerator(1)
    before = fused._gelu_forward.experimental_get_tracing_count()
    for n in range(3, 11):
        fused.dropout(fused.gelu(tf.ones([2, n, 4])), 0.1, generator)
    assert fused._gelu_forward.experimental_get_tracing_count() - before <= 2
