"""The stochastic connectors against Texar-PyTorch 0.1.4 on the same noise and weights.

``tests/fixtures/texar_torch/vae_connectors.npz`` (made by ``make_vae_fixture.py`` there) holds
torch's samples, the standard normal noise behind them, the connectors' linear layers, their
outputs and torch's gradients. texkit's connector gets the same noise through a
``DiagonalGaussian`` whose ``sample`` uses the recorded noise instead of a new draw: the
connector's own work (the reparameterized transform, the MLP, the gradient paths) is compared.
"""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.core import DiagonalGaussian
from texkit.modules import ReparameterizedStochasticConnector, StochasticConnector

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "texar_torch" / "vae_connectors.npz"


@pytest.fixture(scope="module")
def ref():
    return dict(np.load(FIXTURE))


class RecordedNoiseGaussian(DiagonalGaussian):
    """A DiagonalGaussian whose draws use torch's recorded noise."""

    def __init__(self, loc, scale, noise):
        super().__init__(loc, scale)
        self.noise = noise

    def sample(self, sample_shape=(), seed=None):
        assert tuple(sample_shape) + tuple(self.loc.shape) == self.noise.shape
        return self.reparameterize(self.noise)


class RecordedSample:
    """A distribution that cannot be reparameterized, returning a fixed sample."""

    reparameterized = False

    def __init__(self, sample):
        self.value = sample

    def sample(self, sample_shape=(), seed=None):
        return self.value


def set_linear(connector, ref, prefix):
    connector.mlp.dense.set_weights([ref[f"{prefix}_kernel"], ref[f"{prefix}_bias"]])


def test_reparameterized_connector_equals_texar_pytorch_outputs_and_gradients(ref):
    connector = ReparameterizedStochasticConnector([6, 5], mlp_input_size=8)
    set_linear(connector, ref, "rep")
    loc, scale = tf.Variable(ref["rep_loc"]), tf.Variable(ref["rep_scale"])
    with tf.GradientTape() as tape:
        (first, second), sample = connector(RecordedNoiseGaussian(loc, scale, ref["rep_noise"]))
        total = tf.reduce_sum(first * ref["rep_probe_0"]) + tf.reduce_sum(
            second * ref["rep_probe_1"]
        )
    np.testing.assert_allclose(sample, ref["rep_sample"], atol=1e-5)
    np.testing.assert_allclose(first, ref["rep_output_0"], atol=1e-5)
    np.testing.assert_allclose(second, ref["rep_output_1"], atol=1e-5)
    grad_loc, grad_scale = tape.gradient(total, [loc, scale])
    # The gradients reach the mean and the scale, as torch's rsample's do.
    np.testing.assert_allclose(grad_loc, ref["rep_grad_loc"], atol=1e-5)
    np.testing.assert_allclose(grad_scale, ref["rep_grad_scale"], atol=1e-5)
    assert np.abs(grad_scale).min() > 0 and np.abs(grad_loc).min() > 0

    # num_samples: texkit keeps the draws on their own axis; Texar-PyTorch folds them into the
    # batch ([3 * batch, size]). Same numbers.
    (first3, second3), sample3 = connector(
        RecordedNoiseGaussian(loc, scale, ref["rep3_noise"]), num_samples=3
    )
    assert first3.shape == (3, 4, 6) and second3.shape == (3, 4, 5)
    np.testing.assert_allclose(sample3, ref["rep3_sample"], atol=1e-5)
    np.testing.assert_allclose(tf.reshape(first3, [12, 6]), ref["rep3_output_0"], atol=1e-5)
    np.testing.assert_allclose(tf.reshape(second3, [12, 5]), ref["rep3_output_1"], atol=1e-5)


def test_activation_and_untransformed_samples(ref):
    connector = ReparameterizedStochasticConnector(7, hparams={"activation_fn": "tanh"})
    distribution = RecordedNoiseGaussian(ref["tanh_loc"], ref["tanh_scale"], ref["tanh_noise"])
    connector(distribution)  # builds the dense layer from the sample's size
    set_linear(connector, ref, "tanh")
    output, _ = connector(distribution)
    np.testing.assert_allclose(output, ref["tanh_output"], atol=1e-5)
    # transform=False: the output is the sample itself.
    same = ReparameterizedStochasticConnector(8)
    output, sample = same(distribution, transform=False)
    np.testing.assert_allclose(output, ref["tanh_loc"] + ref["tanh_scale"] * ref["tanh_noise"],
                               atol=1e-6)  # fmt: skip
    assert output is sample


def test_stochastic_connector_equals_texar_pytorch_and_stops_the_gradient(ref):
    connector = StochasticConnector(3, mlp_input_size=5)
    set_linear(connector, ref, "stoch")
    output, sample = connector(RecordedSample(ref["stoch_sample"]), transform=True)
    np.testing.assert_allclose(output, ref["stoch_output"], atol=1e-5)
    np.testing.assert_array_equal(sample, ref["stoch_sample"])
    # Reparameterizable or not, no gradient flows back through the sample.
    loc = tf.Variable(tf.zeros([4, 3]))
    with tf.GradientTape() as tape:
        output, _ = StochasticConnector(3)(DiagonalGaussian(loc, tf.ones([4, 3])), seed=1)
        total = tf.reduce_sum(output)
    assert tape.gradient(total, loc) is None
    # The reparameterized connector on the same draw: the gradient is all ones.
    with tf.GradientTape() as tape:
        output, _ = ReparameterizedStochasticConnector(3)(
            DiagonalGaussian(loc, tf.ones([4, 3])), transform=False, seed=1
        )
        total = tf.reduce_sum(output)
    np.testing.assert_array_equal(tape.gradient(total, loc), np.ones([4, 3]))


def test_real_draws_have_the_distributions_moments_and_follow_the_seed():
    loc = tf.constant([[0.5, -1.0, 2.0]])
    scale = tf.constant([[0.2, 1.0, 3.0]])
    connector = ReparameterizedStochasticConnector(3, hparams={"seed": 4})
    _, sample = connector(DiagonalGaussian(loc, scale), num_samples=20000, transform=False)
    np.testing.assert_allclose(sample.numpy().mean(axis=(0, 1)), loc[0], atol=0.05)
    np.testing.assert_allclose(sample.numpy().std(axis=(0, 1)), scale[0], rtol=0.03)
    # The connector's own generator draws anew at each call; a call's seed repeats.
    first, second = (connector(DiagonalGaussian(loc, scale))[1] for _ in range(2))
    assert not np.array_equal(first, second)
    seeded = [connector(DiagonalGaussian(loc, scale), seed=9)[1] for _ in range(2)]
    np.testing.assert_array_equal(*seeded)


def test_connector_runs_in_tf_function_and_xla_and_rebuilds_from_its_config(ref):
    cell = keras.layers.LSTMCell(6)
    connector = ReparameterizedStochasticConnector(cell, mlp_input_size=8)
    noise = ref["rep_noise"]

    def run(loc, scale):
        return connector(RecordedNoiseGaussian(loc, scale, noise))[0]

    eager = run(ref["rep_loc"], ref["rep_scale"])
    compiled = tf.function(run, jit_compile=True)(ref["rep_loc"], ref["rep_scale"])
    graph = tf.function(run)(ref["rep_loc"], ref["rep_scale"])
    for other in (compiled, graph):
        for a, b in zip(eager, other, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)
    twin = ReparameterizedStochasticConnector.from_config(connector.get_config())
    assert twin.output_size == [6, 6] and len(twin.weights) == len(connector.weights) == 2
    twin.set_weights(connector.get_weights())
    again = twin(RecordedNoiseGaussian(ref["rep_loc"], ref["rep_scale"], noise))[0]
    for a, b in zip(eager, again, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)

    @tf.function(jit_compile=True)
    def draw(loc):
        return connector(DiagonalGaussian(loc, tf.ones_like(loc)))

    (h, c), sample = draw(tf.zeros([2, 8]))
    assert h.shape == c.shape == (2, 6) and sample.shape == (2, 8)
    assert np.all(np.isfinite(sample))


def test_bad_calls_are_refused_by_name():
    gaussian = DiagonalGaussian(tf.zeros([2, 4]), tf.ones([2, 4]))
    with pytest.raises(ValueError, match="cannot be reparameterized.*StochasticConnector"):
        ReparameterizedStochasticConnector(4)(RecordedSample(tf.zeros([2, 4])))
    with pytest.raises(TypeError, match=r"sample\(sample_shape, seed\)"):
        ReparameterizedStochasticConnector(4)(tf.zeros([2, 4]))
    with pytest.raises(ValueError, match="num_samples"):
        ReparameterizedStochasticConnector(4)(gaussian, num_samples=0)
    with pytest.raises(ValueError, match=r"output_size \[3, 3\]"):
        StochasticConnector([3, 3])(gaussian)  # transform=False: the sample must fit
    with pytest.raises(ValueError, match="mlp_input_size"):
        ReparameterizedStochasticConnector(4, mlp_input_size=0)
    with pytest.raises(ValueError, match="output_size"):
        ReparameterizedStochasticConnector(0)
