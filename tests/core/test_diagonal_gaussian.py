"""DiagonalGaussian against its formulas in NumPy float64, torch's KL (the Texar-PyTorch fixture)
and Monte Carlo estimates."""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.core import DiagonalGaussian

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "texar_torch" / "vae_connectors.npz"


def random_gaussian(rng, shape=(3, 5)):
    return rng.normal(size=shape), np.exp(rng.normal(scale=0.5, size=shape))


def test_log_prob_is_the_gaussian_density_summed_over_the_event():
    rng = np.random.default_rng(0)
    loc, scale = random_gaussian(rng)
    value = rng.normal(size=loc.shape)
    expected = np.sum(
        -0.5 * ((value - loc) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi), axis=-1
    )
    gaussian = DiagonalGaussian(tf.constant(loc, tf.float32), tf.constant(scale, tf.float32))
    np.testing.assert_allclose(gaussian.log_prob(value), expected, rtol=1e-5, atol=1e-5)
    # The same from the log variance.
    from_variance = DiagonalGaussian.from_log_variance(
        tf.constant(loc, tf.float32), tf.constant(2 * np.log(scale), tf.float32)
    )
    np.testing.assert_allclose(from_variance.log_prob(value), expected, rtol=1e-5, atol=1e-5)


def test_kl_divergences_equal_the_closed_forms_and_torch():
    rng = np.random.default_rng(1)
    (loc, scale), (loc2, scale2) = random_gaussian(rng), random_gaussian(rng)
    closed = np.sum(np.log(scale2 / scale) + (scale**2 + (loc - loc2) ** 2) / (2 * scale2**2)
                    - 0.5, axis=-1)  # fmt: skip
    first = DiagonalGaussian(tf.constant(loc, tf.float32), tf.constant(scale, tf.float32))
    second = DiagonalGaussian(tf.constant(loc2, tf.float32), tf.constant(scale2, tf.float32))
    np.testing.assert_allclose(first.kl_divergence(second), closed, rtol=1e-5, atol=1e-5)
    standard = np.sum(0.5 * (loc**2 + scale**2 - 1) - np.log(scale), axis=-1)
    np.testing.assert_allclose(first.kl_to_standard_normal(), standard, rtol=1e-5, atol=1e-5)
    unit = DiagonalGaussian.standard_normal(loc.shape)
    np.testing.assert_allclose(first.kl_divergence(unit), standard, rtol=1e-5, atol=1e-5)

    reference = np.load(FIXTURE)  # torch.distributions.kl_divergence on MultivariateNormal
    gaussian = DiagonalGaussian(reference["rep_loc"], reference["rep_scale"])
    other = DiagonalGaussian(reference["other_loc"], reference["other_scale"])
    np.testing.assert_allclose(gaussian.kl_to_standard_normal(), reference["kl_standard"],
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(gaussian.kl_divergence(other), reference["kl_other"],
                               rtol=1e-5, atol=1e-5)  # fmt: skip


def test_kl_matches_a_monte_carlo_estimate_from_its_own_samples():
    rng = np.random.default_rng(2)
    loc, scale = random_gaussian(rng, (2, 4))
    loc2, scale2 = random_gaussian(rng, (2, 4))
    first = DiagonalGaussian(tf.constant(loc, tf.float32), tf.constant(scale, tf.float32))
    second = DiagonalGaussian(tf.constant(loc2, tf.float32), tf.constant(scale2, tf.float32))
    draws = first.sample(100_000, seed=3)  # [100000, 2, 4]
    log_ratio = (first.log_prob(draws) - second.log_prob(draws)).numpy().astype(np.float64)
    estimate, error = log_ratio.mean(axis=0), log_ratio.std(axis=0) / np.sqrt(len(log_ratio))
    exact = first.kl_divergence(second).numpy()
    assert np.all(np.abs(estimate - exact) < 4 * error + 1e-3), (estimate, exact, error)
    # The draws have the Gaussian's moments.
    np.testing.assert_allclose(draws.numpy().mean(axis=0), loc, atol=0.04)
    np.testing.assert_allclose(draws.numpy().std(axis=0), scale, rtol=0.02)


def test_samples_follow_the_seed_and_gradients_reach_loc_and_scale():
    loc = tf.Variable(tf.random.normal([3, 4], seed=1))
    scale = tf.Variable(tf.exp(tf.random.normal([3, 4], seed=2)))
    gaussian = DiagonalGaussian(loc, scale)
    np.testing.assert_array_equal(gaussian.sample(seed=5), gaussian.sample(seed=5))
    generator = keras.random.SeedGenerator(7)
    assert not np.array_equal(gaussian.sample(seed=generator), gaussian.sample(seed=generator))
    with tf.GradientTape() as tape:
        draw = DiagonalGaussian(loc, scale).sample(seed=11)
        total = tf.reduce_sum(draw)
    grad_loc, grad_scale = tape.gradient(total, [loc, scale])
    np.testing.assert_allclose(grad_loc, np.ones([3, 4]))
    # d(loc + scale * eps) / d scale = eps, the standard normal noise of the draw.
    np.testing.assert_allclose(grad_scale, (draw - loc) / scale, rtol=1e-5, atol=1e-6)


def test_it_runs_under_xla():
    @tf.function(jit_compile=True)
    def terms(loc, log_variance):
        gaussian = DiagonalGaussian.from_log_variance(loc, log_variance)
        draw = gaussian.sample(seed=1)
        return gaussian.log_prob(draw), gaussian.kl_to_standard_normal()

    loc, log_variance = tf.zeros([2, 3]), tf.zeros([2, 3])
    log_prob, kl = terms(loc, log_variance)
    assert log_prob.shape == (2,) and np.all(np.isfinite(log_prob))
    np.testing.assert_allclose(kl, [0.0, 0.0], atol=1e-7)


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(TypeError, match="loc must be floating"):
        DiagonalGaussian(tf.zeros([2, 3], tf.int32), tf.ones([2, 3]))
    with pytest.raises(ValueError, match=r"scale_diag of shape \(2, 4\)"):
        DiagonalGaussian(tf.zeros([2, 3]), tf.ones([2, 4]))
    with pytest.raises(ValueError, match="event"):
        DiagonalGaussian(tf.zeros([]), tf.ones([]))
    with pytest.raises(TypeError, match="other must be a DiagonalGaussian"):
        DiagonalGaussian(tf.zeros([2, 3]), tf.ones([2, 3])).kl_divergence(tf.zeros([2, 3]))
