"""Sequence losses against a float64 NumPy reference of the formulas, and Keras' label smoothing."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.losses import (
    sequence_sigmoid_cross_entropy,
    sequence_softmax_cross_entropy,
    sequence_sparse_softmax_cross_entropy,
)

RNG = np.random.default_rng(11)
BATCH, TIME, VOCAB = 4, 6, 7
LOGITS = RNG.normal(scale=2.0, size=(BATCH, TIME, VOCAB)).astype(np.float32)
LABELS = RNG.integers(0, VOCAB, size=(BATCH, TIME)).astype(np.int32)
SOFT = RNG.dirichlet(np.ones(VOCAB), size=(BATCH, TIME)).astype(np.float32)
# Full, partial, a single step and empty.
LENGTHS = np.array([6, 3, 1, 0], np.int32)

# (average_across_batch, average_across_timesteps, sum_over_batch, sum_over_timesteps): every
# combination that sets at most one flag per dimension.
FLAGS = [
    dict(zip(("average_across_batch", "sum_over_batch"), batch, strict=True))
    | dict(zip(("average_across_timesteps", "sum_over_timesteps"), time, strict=True))
    for batch, time in itertools.product([(0, 0), (1, 0), (0, 1)], repeat=2)
]
FLAGS = [{k: bool(v) for k, v in flags.items()} for flags in FLAGS]


def log_softmax(logits):
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def reference_reduce(losses, lengths, flags):
    """Masks [batch, time] losses and reduces them as the flags say, written out in float64."""
    losses = losses.astype(np.float64).copy()
    batch, time = losses.shape
    if lengths is None:
        lengths = np.full(batch, time)
    for b in range(batch):
        losses[b, lengths[b] :] = 0.0
    if flags["sum_over_timesteps"]:
        losses = losses.sum(axis=1)
    elif flags["average_across_timesteps"]:
        losses = np.array([row.sum() / max(n, 1) for row, n in zip(losses, lengths, strict=True)])
    if flags["sum_over_batch"]:
        losses = losses.sum(axis=0)
    elif flags["average_across_batch"]:
        losses = losses.mean(axis=0)
    return losses


def reference_sparse(labels, logits, lengths, flags, eps=0.0):
    log_probs = log_softmax(logits)
    vocab = logits.shape[-1]
    target = (1 - eps) * np.eye(vocab)[labels] + eps / vocab
    return reference_reduce(-(target * log_probs).sum(axis=-1), lengths, flags)


def expected_shape(flags, time_major=False):
    time = flags["sum_over_timesteps"] or flags["average_across_timesteps"]
    batch = flags["sum_over_batch"] or flags["average_across_batch"]
    if time and batch:
        return ()
    if time:
        return (BATCH,)
    if batch:
        return (TIME,)
    return (TIME, BATCH) if time_major else (BATCH, TIME)


def flag_id(flags):
    return "-".join(k for k, v in flags.items() if v) or "none"


@pytest.mark.parametrize("flags", FLAGS, ids=flag_id)
@pytest.mark.parametrize("lengths", [LENGTHS, None], ids=["lengths", "no_lengths"])
def test_sparse_equals_numpy(flags, lengths):
    got = sequence_sparse_softmax_cross_entropy(LABELS, LOGITS, lengths, **flags)
    want = reference_sparse(LABELS, LOGITS, lengths, flags)
    assert got.dtype == tf.float32
    assert tuple(got.shape) == expected_shape(flags) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("flags", FLAGS, ids=flag_id)
@pytest.mark.parametrize("eps", [0.1, 0.5])
def test_sparse_label_smoothing_equals_numpy(flags, eps):
    got = sequence_sparse_softmax_cross_entropy(
        LABELS, LOGITS, LENGTHS, label_smoothing=eps, **flags
    )
    want = reference_sparse(LABELS, LOGITS, LENGTHS, flags, eps)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_label_smoothing_matches_keras_on_valid_steps(eps):
    valid = np.arange(TIME)[None, :] < LENGTHS[:, None]
    keras_loss = keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=eps, reduction=None
    )
    one_hot = np.eye(VOCAB, dtype=np.float32)[LABELS[valid]]
    want = keras.ops.convert_to_numpy(keras_loss(one_hot, LOGITS[valid]))
    no_reduction = {"average_across_batch": False, "sum_over_timesteps": False}
    got = sequence_sparse_softmax_cross_entropy(
        LABELS, LOGITS, LENGTHS, label_smoothing=eps, **no_reduction
    ).numpy()
    np.testing.assert_allclose(got[valid], want, rtol=1e-5, atol=1e-5)
    assert np.all(got[~valid] == 0)
    # Soft labels: keras smooths them the same way.
    want_soft = keras.ops.convert_to_numpy(keras_loss(SOFT[valid], LOGITS[valid]))
    got_soft = sequence_softmax_cross_entropy(
        SOFT, LOGITS, LENGTHS, label_smoothing=eps, **no_reduction
    ).numpy()
    np.testing.assert_allclose(got_soft[valid], want_soft, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("flags", FLAGS, ids=flag_id)
def test_soft_labels_equal_numpy(flags):
    got = sequence_softmax_cross_entropy(SOFT, LOGITS, LENGTHS, **flags)
    want = reference_reduce(-(SOFT * log_softmax(LOGITS)).sum(axis=-1), LENGTHS, flags)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    # One-hot soft labels give the sparse loss.
    one_hot = np.eye(VOCAB, dtype=np.float32)[LABELS]
    np.testing.assert_allclose(
        sequence_softmax_cross_entropy(one_hot, LOGITS, LENGTHS, **flags).numpy(),
        sequence_sparse_softmax_cross_entropy(LABELS, LOGITS, LENGTHS, **flags).numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


def reference_sigmoid(labels, logits):
    z = logits.astype(np.float64)
    p = 1 / (1 + np.exp(-z))
    return -(labels * np.log(p) + (1 - labels) * np.log(1 - p))


@pytest.mark.parametrize("flags", FLAGS, ids=flag_id)
@pytest.mark.parametrize("classes", ["average", "sum", "keep", "none"])
def test_sigmoid_equals_numpy(flags, classes):
    if classes == "none":
        labels = (LABELS % 2).astype(np.float32)
        logits = LOGITS[..., 0]
        per_step = reference_sigmoid(labels, logits)
    else:
        labels = (SOFT > 0.1).astype(np.float32)
        logits = LOGITS
        per_step = reference_sigmoid(labels, logits)
    kwargs = {
        "average_across_classes": classes == "average",
        "sum_over_classes": classes == "sum",
    }
    got = sequence_sigmoid_cross_entropy(labels, logits, LENGTHS, **flags, **kwargs).numpy()
    if classes == "keep":
        want = np.stack(
            [reference_reduce(per_step[..., c], LENGTHS, flags) for c in range(VOCAB)], axis=-1
        )
    else:
        if classes == "average":
            per_step = per_step.mean(axis=-1)
        elif classes == "sum":
            per_step = per_step.sum(axis=-1)
        want = reference_reduce(per_step, LENGTHS, flags)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def padded_copies(extra=3):
    """Inputs with garbage (large logits, out-of-range ids) past the lengths and extra steps."""
    logits = np.concatenate([LOGITS, RNG.normal(size=(BATCH, extra, VOCAB))], axis=1)
    labels = np.concatenate([LABELS, np.zeros((BATCH, extra), np.int32)], axis=1)
    soft = np.concatenate([SOFT, RNG.random(size=(BATCH, extra, VOCAB))], axis=1)
    padded = np.arange(TIME + extra)[None, :] >= LENGTHS[:, None]
    logits[padded] = 1e4 * RNG.normal(size=(padded.sum(), VOCAB))
    labels[padded] = RNG.choice([-1, VOCAB, 10 * VOCAB], size=padded.sum())
    soft[padded] = -5.0
    return labels, logits.astype(np.float32), soft.astype(np.float32)


@pytest.mark.parametrize("flags", FLAGS, ids=flag_id)
def test_padding_never_matters(flags):
    labels, logits, soft = padded_copies()
    time_reduced = flags["sum_over_timesteps"] or flags["average_across_timesteps"]
    batch_reduced = flags["sum_over_batch"] or flags["average_across_batch"]

    def cut(value):
        # A kept time axis grows with the padding: compare the first TIME steps, zeros beyond.
        value = value.numpy()
        if time_reduced:
            return value
        axis = 0 if batch_reduced else 1
        assert not np.take(value, range(TIME, TIME + 3), axis=axis).any()
        return np.take(value, range(TIME), axis=axis)

    for eps in (0.0, 0.2):
        np.testing.assert_allclose(
            cut(
                sequence_sparse_softmax_cross_entropy(
                    labels, logits, LENGTHS, **flags, label_smoothing=eps
                )
            ),
            sequence_sparse_softmax_cross_entropy(
                LABELS, LOGITS, LENGTHS, **flags, label_smoothing=eps
            ).numpy(),
            rtol=1e-6,
            atol=1e-6,
        )
    np.testing.assert_allclose(
        cut(sequence_softmax_cross_entropy(soft, logits, LENGTHS, **flags)),
        sequence_softmax_cross_entropy(SOFT, LOGITS, LENGTHS, **flags).numpy(),
        rtol=1e-6,
        atol=1e-6,
    )


@pytest.mark.parametrize("flags", FLAGS, ids=flag_id)
def test_time_major_equals_batch_major(flags):
    for loss, labels, perm in [
        (sequence_sparse_softmax_cross_entropy, LABELS, (1, 0)),
        (sequence_softmax_cross_entropy, SOFT, (1, 0, 2)),
    ]:
        batch_major = loss(labels, LOGITS, LENGTHS, **flags).numpy()
        time_major = loss(
            np.transpose(labels, perm),
            np.transpose(LOGITS, (1, 0, 2)),
            LENGTHS,
            time_major=True,
            **flags,
        ).numpy()
        assert time_major.shape == expected_shape(flags, time_major=True)
        if time_major.ndim == 2:
            time_major = time_major.T
        np.testing.assert_allclose(time_major, batch_major, rtol=1e-6, atol=1e-6)


def test_bfloat16_logits_are_computed_in_float32():
    logits = tf.constant(LOGITS, tf.bfloat16)
    exact = logits.numpy().astype(np.float32)  # the bfloat16 values themselves
    for eps in (0.0, 0.1):
        got = sequence_sparse_softmax_cross_entropy(
            LABELS, logits, LENGTHS, label_smoothing=eps, sum_over_timesteps=False
        )
        assert got.dtype == tf.float32
        flags = {
            "average_across_batch": True,
            "sum_over_batch": False,
            "average_across_timesteps": False,
            "sum_over_timesteps": False,
        }
        want = reference_sparse(LABELS, exact, LENGTHS, flags, eps)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    got = sequence_softmax_cross_entropy(tf.constant(SOFT, tf.bfloat16), logits, LENGTHS)
    assert got.dtype == tf.float32


def test_tf_function_and_xla():
    def losses(labels, logits, soft, lengths):
        return (
            sequence_sparse_softmax_cross_entropy(labels, logits, lengths, label_smoothing=0.1),
            sequence_sparse_softmax_cross_entropy(
                labels, logits, lengths, average_across_batch=False, sum_over_timesteps=False
            ),
            sequence_softmax_cross_entropy(
                soft, logits, lengths, average_across_timesteps=True, sum_over_timesteps=False
            ),
            sequence_sigmoid_cross_entropy(soft, logits, lengths),
        )

    eager = losses(LABELS, LOGITS, SOFT, LENGTHS)
    for jit in (False, True):
        compiled = tf.function(losses, jit_compile=jit)(LABELS, LOGITS, SOFT, LENGTHS)
        for got, want in zip(compiled, eager, strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eps", [0.0, 0.2])
def test_gradients_are_zero_at_padded_steps(eps):
    labels, logits, soft = padded_copies()
    logits = tf.constant(logits)
    padded = np.arange(TIME + 3)[None, :] >= LENGTHS[:, None]
    for compute in [
        lambda z: sequence_sparse_softmax_cross_entropy(labels, z, LENGTHS, label_smoothing=eps),
        lambda z: sequence_softmax_cross_entropy(soft, z, LENGTHS, label_smoothing=eps),
    ]:
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = compute(logits)
        grad = tape.gradient(loss, logits).numpy()
        assert np.all(np.isfinite(grad))
        assert not grad[padded].any()
        assert np.abs(grad[~padded]).sum() > 0


def test_soft_label_gradients_can_be_stopped():
    labels = tf.constant(SOFT)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(labels)
        kept = sequence_softmax_cross_entropy(labels, LOGITS, LENGTHS)
        stopped = sequence_softmax_cross_entropy(
            labels, LOGITS, LENGTHS, stop_gradient_to_label=True
        )
    assert tape.gradient(kept, labels) is not None
    assert tape.gradient(stopped, labels) is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"average_across_batch": True, "sum_over_batch": True},
            "average_across_batch and sum_over_batch",
        ),
        (
            {"average_across_timesteps": True, "sum_over_timesteps": True},
            "average_across_timesteps and sum_over_timesteps",
        ),
        ({"label_smoothing": 1.0}, r"label_smoothing must be in \[0, 1\), got 1.0"),
        ({"label_smoothing": -0.1}, "label_smoothing"),
    ],
)
def test_bad_flags(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sequence_sparse_softmax_cross_entropy(LABELS, LOGITS, LENGTHS, **kwargs)


def test_bad_shapes_name_the_argument():
    with pytest.raises(
        ValueError, match=r"labels must be \[batch, max_time\] ids, got shape \(4, 6, 7\)"
    ):
        sequence_sparse_softmax_cross_entropy(SOFT, LOGITS, LENGTHS)
    with pytest.raises(ValueError, match=r"logits must be .*got shape \(4, 6\)"):
        sequence_sparse_softmax_cross_entropy(LABELS, LOGITS[..., 0], LENGTHS)
    with pytest.raises(ValueError, match=r"labels shape \(4, 5\), logits shape \(4, 6, 7\)"):
        sequence_sparse_softmax_cross_entropy(LABELS[:, :5], LOGITS, LENGTHS)
    with pytest.raises(ValueError, match=r"sequence_length must be \[batch\], got shape \(4, 1\)"):
        sequence_sparse_softmax_cross_entropy(LABELS, LOGITS, LENGTHS[:, None])
    with pytest.raises(ValueError, match=r"sequence_length must be \[batch\] with batch 4"):
        sequence_sparse_softmax_cross_entropy(LABELS, LOGITS, LENGTHS[:3])
    with pytest.raises(TypeError, match="labels must be int ids, got dtype float32"):
        sequence_sparse_softmax_cross_entropy(LABELS.astype(np.float32), LOGITS, LENGTHS)
    with pytest.raises(ValueError, match=r"labels shape \(4, 6, 6\), logits shape \(4, 6, 7\)"):
        sequence_softmax_cross_entropy(SOFT[..., :6], LOGITS, LENGTHS)
    with pytest.raises(ValueError, match=r"labels must be \[max_time, batch, vocab_size\]"):
        sequence_softmax_cross_entropy(LABELS, LOGITS, LENGTHS, time_major=True)
    with pytest.raises(ValueError, match=r"logits must be .*got shape \(4,\)"):
        sequence_sigmoid_cross_entropy(LENGTHS, LENGTHS, LENGTHS)
