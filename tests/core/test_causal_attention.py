"""CausalSelfAttention against a numpy implementation of the Llama-line attention."""

import numpy as np
import pytest
import tensorflow as tf

from texkit.core import CausalSelfAttention, RotaryEmbedding

WIDTH = 16


def _rms(x, weight, eps):
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * weight


def _rotate(x, positions, theta=10000.0):
    """Half-split rotary of ``x [batch, heads, steps, d]`` at ``positions [steps]``."""
    d = x.shape[-1]
    inverse = theta ** -(np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.asarray(positions, np.float64)[:, None] * inverse
    angles = np.concatenate([angles, angles], axis=-1)
    first, second = x[..., : d // 2], x[..., d // 2 :]
    return x * np.cos(angles) + np.concatenate([-second, first], axis=-1) * np.sin(angles)


def reference(layer, x, lengths=None):
    """The layer's outputs on ``x [batch, steps, width]`` from its weights, in numpy."""
    x = np.asarray(x, np.float64)
    batch, steps, _ = x.shape
    heads, kv_heads, d = layer.num_heads, layer.num_kv_heads, layer.head_dim

    def project(dense, n):
        y = x @ dense.kernel.numpy()
        if dense.use_bias:
            y = y + dense.bias.numpy()
        return y.reshape(batch, steps, n, d).transpose(0, 2, 1, 3)

    q, k, v = (
        project(layer.query, heads),
        project(layer.key, kv_heads),
        project(layer.value, kv_heads),
    )
    if layer.query_norm is not None:
        eps = layer.query_key_norm_epsilon
        q = _rms(q, layer.query_norm.scale.numpy(), eps)
        k = _rms(k, layer.key_norm.scale.numpy(), eps)
    if layer.rotary is not None:
        q, k = _rotate(q, np.arange(steps)), _rotate(k, np.arange(steps))
    k, v = np.repeat(k, heads // kv_heads, axis=1), np.repeat(v, heads // kv_heads, axis=1)
    scores = q @ k.transpose(0, 1, 3, 2) * layer.scale
    if layer.softcap is not None:
        scores = layer.softcap * np.tanh(scores / layer.softcap)
    rows, cols = np.arange(steps)[:, None], np.arange(steps)[None, :]
    allowed = cols <= rows
    if layer.sliding_window is not None:
        allowed &= cols > rows - layer.sliding_window
    allowed = np.broadcast_to(allowed, (batch, 1, steps, steps))
    if lengths is not None:
        allowed = allowed & (
            np.arange(steps)[None, None, None, :] < np.asarray(lengths)[:, None, None, None]
        )
    scores = np.where(allowed, scores, -1e30)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, steps, heads * d)
    out = context @ layer.output_dense.kernel.numpy()
    if layer.output_dense.use_bias:
        out = out + layer.output_dense.bias.numpy()
    return out


def make(seed=0, **kwargs):
    kwargs.setdefault("num_heads", 4)
    kwargs.setdefault("head_dim", 4)
    kwargs.setdefault("output_dim", WIDTH)
    layer = CausalSelfAttention(**kwargs)
    layer.build((None, None, WIDTH))
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
    return layer


def inputs(batch=2, steps=7, seed=1):
    return np.random.default_rng(seed).normal(size=(batch, steps, WIDTH)).astype("float32")


def rotary(head_dim):
    return RotaryEmbedding(head_dim, 10000.0)


CASES = {
    "mha": {},
    "gqa": {"num_heads": 8, "num_kv_heads": 2},
    "mqa": {"num_heads": 4, "num_kv_heads": 1},
    "head_dim": {"num_heads": 2, "num_kv_heads": 1, "head_dim": 12},
    "biases": {"num_kv_heads": 2, "use_qkv_bias": True, "use_output_bias": True},
    "qk_norm": {"num_kv_heads": 2, "query_key_norm_epsilon": 1e-6},
    "softcap": {"softcap": 2.0, "scale": 0.3},
    "window": {"num_kv_heads": 2, "sliding_window": 3},
    "all": {"num_heads": 8, "num_kv_heads": 2, "head_dim": 6, "query_key_norm_epsilon": 1e-5,
            "softcap": 3.0, "sliding_window": 2, "use_qkv_bias": True},
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("with_rotary", [False, True])
def test_matches_numpy(case, with_rotary):
    kwargs = dict(CASES[case])
    if with_rotary:
        kwargs["rotary"] = rotary(kwargs.get("head_dim", 4))
    layer = make(**kwargs)
    x = inputs()
    out, cache = layer(x, tf.range(7))
    assert cache is None
    np.testing.assert_allclose(out.numpy(), reference(layer, x), rtol=1e-4, atol=1e-4)


def test_window_boundary():
    """A key exactly ``window`` back is excluded, ``window - 1`` back included."""
    window = 3
    layer = make(sliding_window=window)
    x = inputs(batch=1, steps=6)
    base, _ = layer(x, tf.range(6))
    q = 5
    for back, changes in ((window, False), (window - 1, True)):
        changed = x.copy()
        changed[0, q - back] += 5.0
        out, _ = layer(changed, tf.range(6))
        moved = not np.allclose(out.numpy()[0, q], base.numpy()[0, q], atol=1e-6)
        assert moved == changes, back


def test_padding_does_not_change_real_positions():
    layer = make(num_heads=4, num_kv_heads=2, rotary=rotary(4))
    x = inputs(batch=2, steps=5)
    lengths = np.array([5, 3])
    padded = np.concatenate([x, inputs(batch=2, steps=3, seed=9)], axis=1)
    short, _ = layer(x, tf.range(5), sequence_length=lengths)
    long, _ = layer(padded, tf.range(8), sequence_length=lengths)
    np.testing.assert_allclose(long.numpy()[0, :5], short.numpy()[0], atol=1e-5)
    np.testing.assert_allclose(long.numpy()[1, :3], short.numpy()[1, :3], atol=1e-5)
    mask = np.arange(8)[None, :] < lengths[:, None]
    masked, _ = layer(padded, tf.range(8), sequence_length=mask)
    np.testing.assert_allclose(masked.numpy(), long.numpy(), atol=1e-6)
    np.testing.assert_allclose(
        long.numpy()[:, :3], reference(layer, padded, lengths)[:, :3], rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("chunk", [1, 2])
def test_cached_decoding_equals_full_pass(window, chunk):
    layer = make(num_heads=8, num_kv_heads=2, head_dim=6, sliding_window=window,
                 rotary=rotary(6), query_key_norm_epsilon=1e-6)  # fmt: skip
    steps = 8
    x = inputs(batch=2, steps=steps)
    full, _ = layer(x, tf.range(steps))

    @tf.function(jit_compile=True)
    def step(piece, cache, time):
        positions = time + tf.range(chunk)
        return layer(piece, positions, cache=cache, time=time)

    cache = layer.empty_cache(2, 10)
    assert tuple(cache.keys.shape) == (2, 2, 10, 6)
    outs = []
    for time in range(0, steps, chunk):
        out, cache = step(x[:, time : time + chunk], cache, tf.constant(time))
        outs.append(out.numpy())
    assert tuple(cache.values.shape) == (2, 2, 10, 6)
    np.testing.assert_allclose(np.concatenate(outs, 1), full.numpy(), rtol=1e-4, atol=1e-4)


def test_runs_in_tf_function_and_xla():
    layer = make(num_heads=4, num_kv_heads=2, rotary=rotary(4), softcap=5.0)
    x = inputs()
    eager, _ = layer(x, tf.range(7))
    graph = tf.function(lambda v: layer(v, tf.range(7))[0])(x)
    xla = tf.function(lambda v: layer(v, tf.range(7))[0], jit_compile=True)(x)
    np.testing.assert_allclose(graph.numpy(), eager.numpy(), atol=1e-5)
    np.testing.assert_allclose(xla.numpy(), eager.numpy(), atol=1e-5)


def test_batched_positions_and_names():
    layer = make(num_kv_heads=2, rotary=rotary(4), query_key_norm_epsilon=1e-6,
                 names=("q_proj", "k_proj", "v_proj", "o_proj"),
                 norm_names=("q_norm", "k_norm"))  # fmt: skip
    x = inputs()
    flat, _ = layer(x, tf.range(7))
    batched, _ = layer(x, tf.tile(tf.range(7)[None], [2, 1]))
    np.testing.assert_allclose(batched.numpy(), flat.numpy(), atol=1e-6)
    names = {layer.query.name, layer.key.name, layer.value.name, layer.output_dense.name}
    assert names == {"q_proj", "k_proj", "v_proj", "o_proj"}
    assert (layer.query_norm.name, layer.key_norm.name) == ("q_norm", "k_norm")
    assert tuple(layer.key.kernel.shape) == (WIDTH, 8)
    assert layer.get_config()["num_kv_heads"] == 2


def test_dropout_only_in_training():
    layer = make(dropout_rate=0.5)
    x = inputs()
    a, _ = layer(x, tf.range(7))
    b, _ = layer(x, tf.range(7), training=False)
    np.testing.assert_allclose(a.numpy(), b.numpy())
    c, _ = layer(x, tf.range(7), training=True)
    assert not np.allclose(c.numpy(), a.numpy())


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"num_heads": 6, "num_kv_heads": 4}, "num_kv_heads"),
        ({"num_heads": 0}, "num_heads"),
        ({"num_heads": 4, "head_dim": 0}, "head_dim"),
        ({"num_heads": 4, "softcap": 0.0}, "softcap"),
        ({"num_heads": 4, "sliding_window": 0}, "sliding_window"),
        ({"num_heads": 4, "scale": -1.0}, "scale"),
        ({"num_heads": 4, "query_key_norm_epsilon": -1e-6}, "query_key_norm_epsilon"),
        ({"num_heads": 4, "dropout_rate": 1.0}, "dropout_rate"),
        ({"num_heads": 4, "names": ("q", "k")}, "names"),
    ],
)
def test_errors_name_the_argument(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        CausalSelfAttention(**kwargs)


def test_cache_needs_time():
    layer = make()
    with pytest.raises(ValueError, match="time"):
        layer(inputs(), tf.range(7), cache=layer.empty_cache(2, 8))
    with pytest.raises(ValueError, match="max_length"):
        layer.empty_cache(2, 0)


def test_mixed_bfloat16():
    layer = make(num_heads=4, num_kv_heads=2, rotary=rotary(4), dtype="mixed_bfloat16")
    x = inputs()
    out, _ = layer(x, tf.range(7))
    assert out.dtype == tf.bfloat16
    np.testing.assert_allclose(
        out.numpy().astype("float32"), reference(layer, x), rtol=0.1, atol=0.15
    )
    cache = layer.empty_cache(2, 8)
    assert cache.keys.dtype == tf.bfloat16
    assert layer.empty_cache(2, 8, "float32").keys.dtype == tf.float32
    step, cache = layer(x[:, :1], tf.range(1), cache=cache, time=0)
    np.testing.assert_allclose(
        step.numpy().astype("float32"), out.numpy()[:, :1].astype("float32"), atol=0.05
    )
