"""The VAE training pieces: Texar's annealing loop, word dropout's statistics, the KL term in
NumPy float64, and the importance-weighted NLL against an exact marginal likelihood."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.core import DiagonalGaussian
from texkit.data import Vocab
from texkit.learning import KLAnnealing, gaussian_kl, importance_weighted_nll, word_dropout


def texar_weights(start, warm_up, steps_per_epoch, steps):
    """The weights of Texar's vae_train.py loop: incremented before each training step."""
    rate = 1.0 / (warm_up * steps_per_epoch)
    weight, weights = start, []
    for _ in range(steps):
        weight = min(1.0, weight + rate)
        weights.append(weight)
    return np.array(weights)


def test_kl_annealing_follows_texars_loop_and_compiles():
    annealing = KLAnnealing.from_texar({"warm_up": 10, "start": 0.1}, steps_per_epoch=37)
    steps = np.arange(1, 600)
    expected = texar_weights(0.1, 10, 37, len(steps))
    np.testing.assert_allclose([float(annealing(s)) for s in steps], expected, atol=1e-6)
    assert float(annealing(0)) == pytest.approx(0.1)
    # In a compiled step, from the optimizer's int64 counter.
    counter = tf.Variable(332, dtype=tf.int64)
    weight = tf.function(lambda: annealing(counter + 1), jit_compile=True)()
    assert float(weight) == pytest.approx(1.0)  # 0.1 + 333 / 370 = 1.0
    assert float(KLAnnealing(0.1, 0, 5)(1)) == 1.0  # no warm-up: weight 1 at once
    with pytest.raises(ValueError, match="start"):
        KLAnnealing(start=1.5)
    with pytest.raises(ValueError, match="warm_up"):
        KLAnnealing(warm_up=-1)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        KLAnnealing(steps_per_epoch=0)
    with pytest.raises(ValueError, match="warmup"):
        KLAnnealing.from_texar({"warmup": 10}, 5)


def test_word_dropout_rate_start_token_and_padding():
    rng = np.random.default_rng(0)
    batch, time, rate = 400, 30, 0.3
    ids = rng.integers(4, 100, size=(batch, time)).astype(np.int32)
    ids[:, 0] = Vocab.bos_token_id
    lengths = rng.integers(1, time + 1, size=batch).astype(np.int32)
    dropped = word_dropout(ids, rate, lengths, seed=3).numpy()
    changed = dropped != ids
    assert np.all(dropped[changed] == Vocab.unk_token_id)
    assert not changed[:, 0].any()  # the start token, never
    positions = np.arange(time)[None, :]
    assert not changed[positions >= lengths[:, None]].any()  # padding, never
    droppable = (positions >= 1) & (positions < lengths[:, None])
    n = droppable.sum()
    share = changed[droppable].mean()
    assert abs(share - rate) < 4 * np.sqrt(rate * (1 - rate) / n), (share, n)
    # A new draw with a generator; the same for the same int seed.
    assert np.array_equal(word_dropout(ids, rate, lengths, seed=3), dropped)
    # Rates 0 and 1, outside training, and under XLA.
    np.testing.assert_array_equal(word_dropout(ids, 0.0, lengths), ids)
    np.testing.assert_array_equal(word_dropout(ids, 0.5, lengths, training=False), ids)
    everything = word_dropout(ids, 1.0, lengths).numpy()
    assert np.all(everything[droppable] == Vocab.unk_token_id)
    assert np.array_equal(everything[~droppable], ids[~droppable])
    compiled = tf.function(lambda x, n: word_dropout(x, 0.3, n, seed=5), jit_compile=True)
    assert compiled(ids, lengths).shape == ids.shape
    with pytest.raises(ValueError, match="rate"):
        word_dropout(ids, 1.5)
    with pytest.raises(ValueError, match=r"\[batch, time\] ints"):
        word_dropout(ids.astype(np.float32), 0.5)


def test_gaussian_kl_equals_numpy_float64():
    rng = np.random.default_rng(1)
    mean, log_variance = rng.normal(size=(6, 16)), rng.normal(size=(6, 16))
    expected = 0.5 * np.sum(mean**2 + np.exp(log_variance) - 1 - log_variance, axis=-1)
    actual = gaussian_kl(tf.constant(mean, tf.float32), tf.constant(log_variance, tf.float32))
    np.testing.assert_allclose(actual, expected, rtol=1e-5)


def test_importance_weighted_nll_is_numpys_log_mean_exp():
    rng = np.random.default_rng(2)
    terms = [rng.normal(scale=20, size=(7, 5)) for _ in range(3)]
    log_weights = terms[0] + terms[1] - terms[2]
    top = log_weights.max(axis=0)
    expected = -(top + np.log(np.exp(log_weights - top).mean(axis=0)))
    actual = importance_weighted_nll(*(tf.constant(t, tf.float64) for t in terms))
    np.testing.assert_allclose(actual, expected, rtol=1e-10)
    with pytest.raises(ValueError, match="num_samples, batch"):
        importance_weighted_nll(terms[0], terms[1], terms[2][:3])


def linear_gaussian_terms(x, posterior, samples, a, noise, seed):
    """log p(x|z), log p(z), log q(z|x) for z ~ q, with z ~ N(0, 1), x | z ~ N(a z, noise^2)."""
    z = posterior.sample(samples, seed=seed)  # [K, batch, 1]
    log_likelihood = DiagonalGaussian(a * z, tf.fill(tf.shape(z), noise)).log_prob(x[:, None])
    prior = DiagonalGaussian.standard_normal(z.shape[1:])
    return log_likelihood, prior.log_prob(z), posterior.log_prob(z)


def test_importance_weighted_nll_recovers_an_exact_marginal_likelihood():
    # z ~ N(0, 1), x | z ~ N(a z, s^2): p(x) = N(0, a^2 + s^2), p(z | x) is Gaussian.
    a, s, seed = 1.5, 0.7, keras.random.SeedGenerator(4)
    x = np.array([-2.0, 0.3, 1.7], np.float32)
    exact = 0.5 * (np.log(2 * np.pi * (a**2 + s**2)) + x.astype(np.float64) ** 2 / (a**2 + s**2))
    post_var = 1.0 / (1.0 + a**2 / s**2)
    posterior = DiagonalGaussian(
        tf.constant((post_var * a / s**2 * x)[:, None]), tf.fill([3, 1], np.sqrt(post_var))
    )
    # With the exact posterior every importance weight is p(x): exact for any K.
    for samples in (1, 5):
        terms = linear_gaussian_terms(x, posterior, samples, a, s, seed)
        estimate = importance_weighted_nll(*terms)
        np.testing.assert_allclose(estimate, exact, rtol=1e-5)
    # With the prior as proposal: the estimate falls towards the exact value as K grows
    # (K = 1 is the negative ELBO's estimate, an upper bound in expectation).
    # 200 independent estimates per verse, side by side in the batch.
    repeats = np.tile(x, 200)
    prior = DiagonalGaussian.standard_normal([len(repeats), 1])
    gaps = []
    for samples in (1, 10, 2000):
        estimates = importance_weighted_nll(
            *linear_gaussian_terms(repeats, prior, samples, a, s, seed)
        ).numpy()
        gaps.append(estimates.reshape(200, 3).mean(axis=0) - exact)
    assert np.all(gaps[0] > gaps[1]) and np.all(gaps[1] > gaps[2])
    np.testing.assert_allclose(gaps[2], 0.0, atol=0.02)
