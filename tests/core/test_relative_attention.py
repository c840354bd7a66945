"""RelativeAttention against softmax(scale * Q K^T + bias + mask) V in NumPy, and its cache."""

import keras
import numpy as np
import pytest

from texkit.core.attention import KVCache, attention_mask
from texkit.core.relative_attention import RelativeAttention

RNG = np.random.default_rng(11)


def numpy_attention(layer, queries, memory, bias=None, mask=None, scale=1.0):
    q = queries @ layer.query.kernel.numpy()
    k = memory @ layer.key.kernel.numpy()
    v = memory @ layer.value.kernel.numpy()
    heads, depth = layer.num_heads, layer.head_dim
    out = np.zeros((*queries.shape[:2], heads * depth))
    for b in range(queries.shape[0]):
        for h in range(heads):
            cols = slice(h * depth, (h + 1) * depth)
            scores = scale * q[b, :, cols] @ k[b, :, cols].T
            if bias is not None:
                scores = scores + np.broadcast_to(bias, (1, heads, *scores.shape))[0, h]
            if mask is not None:
                allowed = np.broadcast_to(mask, (queries.shape[0], 1, *scores.shape))[b, 0]
                scores = np.where(allowed, scores, -np.inf)
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
            out[b, :, cols] = weights @ v[b, :, cols]
    return out @ layer.output_dense.kernel.numpy()


def make(**kw):
    init = keras.initializers.RandomNormal(stddev=0.4)
    return RelativeAttention(3, 4, 10, kernel_initializer=init, **kw)


@pytest.mark.parametrize("scale", [None, 0.5])
def test_equals_its_formula_with_bias_and_mask(scale):
    x = RNG.normal(size=(2, 5, 10)).astype("float32")
    layer = make(scale=scale)
    bias = RNG.normal(size=(1, 3, 5, 5)).astype("float32")
    mask = attention_mask(5, 5, np.array([5, 3]), causal=True).numpy()
    got = layer(x, bias=bias, attention_mask=mask).numpy()
    want = numpy_attention(layer, x, x, bias, mask, 1.0 if scale is None else scale)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cross_attention_and_projection_layout():
    x = RNG.normal(size=(2, 3, 10)).astype("float32")
    memory = RNG.normal(size=(2, 6, 7)).astype("float32")
    layer = make(names=("q", "k", "v", "o"), use_bias=False)
    got = layer(x, memory).numpy()
    np.testing.assert_allclose(got, numpy_attention(layer, x, memory), rtol=1e-4, atol=1e-5)
    assert [w.path.split("/", 1)[1] for w in layer.weights] == [
        "q/kernel", "k/kernel", "v/kernel", "o/kernel",
    ]  # fmt: skip
    assert layer.key.kernel.shape == (7, 12)


def test_cached_steps_equal_causal_attention():
    time = 4
    x = RNG.normal(size=(2, time, 10)).astype("float32")
    layer = make()
    bias = RNG.normal(size=(1, 3, time, time)).astype("float32")
    want = layer(x, bias=bias, attention_mask=attention_mask(time, time, causal=True)).numpy()
    zeros = np.zeros((2, 3, time, 4), "float32")
    cache = KVCache(zeros, zeros)
    for t in range(time):
        cache = layer.write_cache(x[:, t : t + 1], cache, t)
        allowed = (np.arange(time) <= t)[None, None, None, :]
        step = layer.attend(x[:, t : t + 1], cache, bias[:, :, t : t + 1], allowed).numpy()
        np.testing.assert_allclose(step[:, 0], want[:, t], rtol=1e-4, atol=1e-5)


def test_config_round_trip_and_keras_file(tmp_path):
    inputs = keras.Input((4, 10))
    layer = make(scale=0.25, dropout_rate=0.1, names=("q", "k", "v", "o"))
    model = keras.Model(inputs, layer(inputs))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    x = RNG.normal(size=(2, 4, 10)).astype("float32")
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert loaded.layers[-1].get_config() == layer.get_config()
    with pytest.raises(ValueError, match="4 projection names"):
        RelativeAttention(2, 2, 4, names=("q", "k"))
