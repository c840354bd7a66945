import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.core.attention import MultiHeadAttention
from texkit.hparams import HParamsError

RNG = np.random.default_rng(7)


def numpy_attention(layer, queries, memory, memory_lengths=None, causal=False):
    """softmax(Q K^T / sqrt(d_k) + mask) V per head, then the output projection, in NumPy."""
    w = {v.path.split("/")[-2] + "/" + v.path.split("/")[-1]: v.numpy() for v in layer.weights}
    q = queries @ w["query/kernel"] + w["query/bias"]
    k = memory @ w["key/kernel"] + w["key/bias"]
    v = memory @ w["value/kernel"] + w["value/bias"]
    heads = layer.hparams.num_heads
    depth = q.shape[-1] // heads
    out = np.zeros(q.shape)
    for b in range(q.shape[0]):
        for h in range(heads):
            cols = slice(h * depth, (h + 1) * depth)
            scores = q[b, :, cols] @ k[b, :, cols].T / np.sqrt(depth)
            allowed = np.ones(scores.shape, bool)
            if memory_lengths is not None:
                allowed[:, memory_lengths[b] :] = False
            if causal:
                allowed &= np.tril(np.ones(scores.shape, bool))
            scores = np.where(allowed, scores, -np.inf)
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
            out[b, :, cols] = weights @ v[b, :, cols]
    return out @ w["output/kernel"] + w["output/bias"]


def make(**kw):
    hparams = {"num_units": 12, "num_heads": 3, "output_dim": 10, "dropout_rate": 0.0}
    return MultiHeadAttention(hparams, **kw)


def test_every_hparam_is_documented():
    assert undocumented_hparams(MultiHeadAttention) == ([], [])


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_equals_formula(causal):
    layer = make()
    x = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    lengths = np.array([5, 2, 4])
    got = layer(x, memory_sequence_length=lengths, causal=causal).numpy()
    want = numpy_attention(layer, x, x, lengths, causal)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_cross_attention_equals_formula_and_ignores_padded_memory():
    layer = make()
    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    memory = RNG.normal(size=(2, 6, 7)).astype(np.float32)
    lengths = np.array([6, 3])
    got = layer(x, memory=memory, memory_sequence_length=lengths).numpy()
    np.testing.assert_allclose(got, numpy_attention(layer, x, memory, lengths), atol=1e-5)
    changed = memory.copy()
    changed[1, 3:] = 100.0
    again = layer(x, memory=changed, memory_sequence_length=lengths).numpy()
    np.testing.assert_allclose(again, got, atol=1e-6)


def test_causal_future_steps_do_not_change_earlier_outputs():
    layer = make()
    x = RNG.normal(size=(1, 6, 8)).astype(np.float32)
    base = layer(x, causal=True).numpy()
    changed = x.copy()
    changed[0, 4:] = -3.0
    np.testing.assert_allclose(layer(changed, causal=True).numpy()[0, :4], base[0, :4], atol=1e-6)


def test_dropout_applies_in_training_only():
    layer = MultiHeadAttention(
        {"num_units": 8, "num_heads": 2, "output_dim": 8, "dropout_rate": 0.5}
    )
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    a, b = layer(x, training=False), layer(x, training=False)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(layer(x, training=True), a)


def test_contract(tmp_path):
    x = RNG.normal(size=(4, 5, 8)).astype(np.float32)
    check_module_contract(
        make,
        {"queries": x, "memory_sequence_length": np.array([5, 3, 1, 4], np.int32)},
        tmp_path,
        sequence_inputs={"queries": 1},
        length_key="memory_sequence_length",
        output_time_axes=1,
    )


def test_bad_hparams_name_the_key():
    with pytest.raises(HParamsError, match="num_heads"):
        MultiHeadAttention({"num_units": 10, "num_heads": 3})
    with pytest.raises(HParamsError, match="dropout_rate"):
        MultiHeadAttention({"dropout_rate": 1.0})


def test_mixed_bfloat16_computes_in_bfloat16():
    layer = make(dtype="mixed_bfloat16")
    x = tf.constant(RNG.normal(size=(1, 3, 8)), tf.float32)
    assert layer(x).dtype == tf.bfloat16


def _step_by_step(layer, x, cache):
    outputs = []
    for t in range(x.shape[1]):
        out, cache = layer.call_cached(x[:, t : t + 1], cache, tf.constant(t))
        outputs.append(out)
    return tf.concat(outputs, axis=1), cache


@pytest.mark.parametrize("compile", [None, False, True])
def test_cached_steps_equal_the_causal_formula(compile):
    layer = make()
    x = RNG.normal(size=(3, 6, 8)).astype(np.float32)
    layer(x)
    want = numpy_attention(layer, x, x, causal=True)

    def run(x):
        return _step_by_step(layer, x, layer.init_cache(3, 9))

    if compile is not None:
        run = tf.function(run, jit_compile=compile)
    got, cache = run(x)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    # Steps 0..5 hold the projected keys and values; the rest of the buffer is untouched.
    keys, values = layer.project_memory(x)
    np.testing.assert_allclose(cache.keys[:, :, :6].numpy(), keys.numpy(), atol=1e-6)
    np.testing.assert_allclose(cache.values[:, :, :6].numpy(), values.numpy(), atol=1e-6)
    assert not np.any(cache.keys[:, :, 6:].numpy())


def test_cached_chunks_and_stale_cache_entries():
    """A prompt written in chunks gives the causal outputs; whatever lies in the buffer past the
    current step (another hypothesis' keys, in beam search) gets zero weight."""
    layer = make()
    x = RNG.normal(size=(2, 7, 8)).astype(np.float32)
    want = layer(x, causal=True).numpy()
    cache = layer.init_cache(2, 10)
    stale = tf.constant(RNG.normal(size=cache.keys.shape).astype(np.float32) * 50)
    cache = cache._replace(keys=stale, values=-stale)
    first, cache = layer.call_cached(x[:, :3], cache, 0)
    second, cache = layer.call_cached(x[:, 3:], cache, 3)
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), want, atol=1e-5)


@pytest.mark.parametrize("compile", [None, True])
def test_beam_cached_attention_reads_each_history_through_its_ancestry(compile):
    """call_cached_beams over caches that stay in place equals call_cached over each
    hypothesis' own history, gathered step by step from the slots its ancestry names."""
    layer = make()
    batch, beams, length, time, steps = 2, 3, 9, 4, 2
    rows = batch * beams
    layer(tf.zeros([rows, 1, 8]))
    x = RNG.normal(size=(rows, steps, 8)).astype(np.float32)
    keys = RNG.normal(size=(rows, 3, length, 4)).astype(np.float32)
    cache = layer.init_cache(rows, length)._replace(keys=tf.constant(keys), values=-keys * 2)
    ancestry = RNG.integers(0, beams, size=(rows, length)).astype(np.int32)
    ancestry[:, time : time + steps] = RNG.integers(0, beams, size=(rows, steps))  # overridden

    run = layer.call_cached_beams
    if compile is not None:
        run = tf.function(run, jit_compile=compile)
    got, written = run(x, cache, tf.constant(time), ancestry, beams)

    owner = (np.arange(rows) // beams * beams)[:, None] + ancestry  # the row holding each step
    owner[:, time : time + steps] = np.arange(rows)[:, None]  # the steps written now: its own

    def history(part):  # [rows, heads, length, depth]: step t of row r taken from owner[r, t]
        part = np.asarray(part)
        return np.stack([part[owner[:, t], :, t] for t in range(length)], axis=2)

    own_keys, own_values = history(cache.keys), history(cache.values)
    want, want_cache = layer.call_cached(x, cache._replace(keys=own_keys, values=own_values), time)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
    # Each row wrote its own steps and nothing else.
    np.testing.assert_allclose(
        written.keys.numpy()[:, :, time : time + steps],
        want_cache.keys.numpy()[:, :, time : time + steps],
        atol=1e-6,
    )
    unchanged = np.ones(length, bool)
    unchanged[time : time + steps] = False
    np.testing.assert_array_equal(written.keys.numpy()[:, :, unchanged], keys[:, :, unchanged])
    np.testing.assert_array_equal(
        written.values.numpy()[:, :, unchanged], -keys[:, :, unchanged] * 2
    )


def test_projected_memory_equals_cross_attention():
    layer = make()
    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    memory = RNG.normal(size=(2, 6, 7)).astype(np.float32)
    lengths = np.array([6, 3])
    want = layer(x, memory=memory, memory_sequence_length=lengths).numpy()
    from texkit.core.attention import attention_mask

    got = layer.attend(x, layer.project_memory(memory), attention_mask(4, 6, lengths))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_cache_errors_name_the_problem():
    layer = make()
    with pytest.raises(ValueError, match="before call_cached"):
        layer.call_cached(tf.zeros([1, 1, 8]), None, 0)
    layer(tf.zeros([1, 2, 8]))
    with pytest.raises(ValueError, match="max_length must be a positive int"):
        layer.init_cache(1, 0)
    cache = layer.init_cache(2, 5)
    assert cache.keys.shape == (2, 3, 5, 4) and cache.values.dtype == tf.float32


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_write_steps_writes_the_steps_into_the_buffer(mode):
    """The cache write of every decoder (a scatter outside XLA, a dynamic update slice under
    it) against NumPy's slice assignment, for one step and for several."""
    from texkit.core.attention import write_steps

    rng = np.random.default_rng(0)
    buffer = rng.normal(size=(2, 3, 7, 4)).astype(np.float32)

    def run(steps, time):
        return write_steps(tf.constant(buffer), steps, time)

    if mode != "eager":
        run = tf.function(run, jit_compile=mode == "xla")
    for count, time in ((1, 0), (1, 6), (3, 2)):
        steps = rng.normal(size=(2, 3, count, 4)).astype(np.float64)
        want = buffer.copy()
        want[:, :, time : time + count] = steps.astype(np.float32)
        got = run(tf.constant(steps), tf.constant(time))
        np.testing.assert_array_equal(got.numpy(), want)
