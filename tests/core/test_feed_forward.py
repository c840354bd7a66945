"""FeedForward (plain and gated) against down(act(gate x) * up x) computed in NumPy."""

import math

import keras
import numpy as np
import pytest

from texkit.core.feed_forward import FeedForward

RNG = np.random.default_rng(5)
erf = np.vectorize(math.erf)

ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
}
SPECS = {
    "relu": "relu",
    "silu": "silu",
    "gelu": "gelu",
    "gelu_tanh": {"type": "gelu", "kwargs": {"approximate": True}},
}


def numpy_feed_forward(layer, x, activation):
    act = ACTIVATIONS[activation]

    def dense(d, v):
        return v @ d.kernel.numpy() + (d.bias.numpy() if d.use_bias else 0)

    hidden = act(dense(layer.inner[0], x))
    if layer.gated:
        hidden = hidden * dense(layer.inner[1], x)
    return dense(layer.output_dense, hidden)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("gated", [True, False])
@pytest.mark.parametrize("use_bias", [True, False])
def test_equals_its_formula(activation, gated, use_bias):
    x = RNG.normal(size=(2, 3, 6)).astype("float32")
    layer = FeedForward(
        10, 7, activation=SPECS[activation], gated=gated, use_bias=use_bias,
        kernel_initializer=keras.initializers.RandomNormal(stddev=0.5),
    )  # fmt: skip
    y = layer(x).numpy()
    assert y.shape == (2, 3, 7)
    assert len(layer.inner) == (2 if gated else 1)
    assert len(layer.weights) == (len(layer.inner) + 1) * (2 if use_bias else 1)
    if use_bias:
        for dense in (*layer.inner, layer.output_dense):
            dense.bias.assign(RNG.normal(size=dense.bias.shape).astype("float32"))
        y = layer(x).numpy()
    np.testing.assert_allclose(y, numpy_feed_forward(layer, x, activation), rtol=1e-4, atol=1e-5)


def test_layer_names_and_initializers():
    layer = FeedForward(
        4, 3, gated=True, names=("gate_proj", "up_proj", "down_proj"),
        kernel_initializer="zeros", output_initializer="ones", name="mlp",
    )  # fmt: skip
    layer.build((None, 2))
    assert [w.path for w in layer.weights] == [
        "mlp/gate_proj/kernel",
        "mlp/up_proj/kernel",
        "mlp/down_proj/kernel",
    ]
    assert not layer.inner[0].kernel.numpy().any()
    assert layer.output_dense.kernel.numpy().all()
    assert [d.name for d in FeedForward(4, 3).inner] == ["inner"]
    with pytest.raises(ValueError, match="expected 3 names"):
        FeedForward(4, 3, gated=True, names=("a", "b"))


def test_dropout_only_in_training():
    x = np.ones((2, 5, 4), "float32")
    layer = FeedForward(16, 4, dropout_rate=0.5)
    np.testing.assert_array_equal(layer(x).numpy(), layer(x, training=False).numpy())
    assert not np.allclose(layer(x, training=True).numpy(), layer(x).numpy())


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
def test_mixed_precision_and_keras_file(tmp_path, activation):
    inputs = keras.Input((3, 6))
    layer = FeedForward(8, 6, activation=SPECS[activation], gated=True, dtype="mixed_bfloat16")
    model = keras.Model(inputs, layer(inputs))
    x = RNG.normal(size=(2, 3, 6)).astype("float32")
    assert model(x).dtype == "bfloat16"
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
    assert loaded.layers[-1].get_config() == layer.get_config()
