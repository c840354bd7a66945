"""Policy-gradient losses, discounted rewards, adversarial losses and entropies against their
formulas written out in NumPy float64, with masking and the reduction flags; their gradients,
dtypes, compiled runs and errors. (Texar-PyTorch's outputs: test_losses_texar_parity.py.)"""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from texkit import losses

RNG = np.random.default_rng(33)
BATCH, TIME, DEPTH, VOCAB = 4, 6, 3, 7
LOGITS = RNG.normal(scale=2.0, size=(BATCH, TIME, VOCAB)).astype(np.float32)
LOGITS_DEEP = RNG.normal(scale=2.0, size=(BATCH, TIME, DEPTH, VOCAB)).astype(np.float32)
ACTIONS = RNG.integers(0, VOCAB, size=(BATCH, TIME)).astype(np.int32)
ACTIONS_DEEP = RNG.integers(0, VOCAB, size=(BATCH, TIME, DEPTH)).astype(np.int32)
ADVANTAGES = RNG.normal(size=(BATCH, TIME)).astype(np.float32)
ADVANTAGES_DEEP = RNG.normal(size=(BATCH, TIME, DEPTH)).astype(np.float32)
LOG_PROBS = -RNG.exponential(size=(BATCH, TIME)).astype(np.float32)
LOG_PROBS_DEEP = -RNG.exponential(size=(BATCH, TIME, DEPTH)).astype(np.float32)
# Full, partial, a single step and empty.
LENGTHS = np.array([6, 3, 1, 0], np.int32)

PAIRS = [(False, False), (True, False), (False, True)]  # (average, sum), at most one set
# Texar's defaults: sum over time (and the remaining dimensions), mean over the batch.
DEFAULTS = {
    "average_across_batch": True,
    "sum_over_batch": False,
    "average_across_timesteps": False,
    "sum_over_timesteps": True,
    "average_across_remaining": False,
    "sum_over_remaining": True,
}


def flag_sets(dimensions):
    """Every combination of the flags of ``dimensions`` that sets at most one per dimension."""
    for choice in itertools.product(PAIRS, repeat=len(dimensions)):
        flags = {}
        for what, (average, total) in zip(dimensions, choice, strict=True):
            flags[f"average_across_{what}"] = average
            flags[f"sum_over_{what}"] = total
        yield flags


def flag_id(flags):
    names = [k.replace("_across", "").replace("_over", "") for k, v in flags.items() if v]
    return "-".join(names) or "none"


BATCHED_FLAGS = list(flag_sets(["batch", "timesteps", "remaining"]))


def log_softmax(logits):
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def reduce_rest(values, first, flags, what):
    """Reduces dimensions ``first..`` as the ``remaining`` flags say."""
    axes = tuple(range(first, values.ndim))
    if axes and flags.get(f"average_across_{what}"):
        return values.mean(axis=axes)
    if axes and flags.get(f"sum_over_{what}"):
        return values.sum(axis=axes)
    return values


def reference_reduce(values, lengths, flags):
    """Masks ``[batch, time, ...]`` values, reduces remaining, time, batch: float64, by loops."""
    values = values.astype(np.float64).copy()
    batch, time = values.shape[:2]
    counts = np.full(batch, time) if lengths is None else lengths
    for b in range(batch):
        values[b, counts[b] :] = 0.0
    values = reduce_rest(values, 2, flags, "remaining")
    if flags["sum_over_timesteps"]:
        values = values.sum(axis=1)
    elif flags["average_across_timesteps"]:
        values = np.stack(
            [row.sum(axis=0) / max(n, 1) for row, n in zip(values, counts, strict=True)]
        )
    if flags["sum_over_batch"]:
        values = values.sum(axis=0)
    elif flags["average_across_batch"]:
        values = values.mean(axis=0)
    return values


def reference_pg(log_probs, advantages, lengths, flags):
    return reference_reduce(-log_probs.astype(np.float64) * advantages, lengths, flags)


def to_time_major(value):
    return np.swapaxes(value, 0, 1)


# --- policy gradient -----------------------------------------------------------------------------


@pytest.mark.parametrize("flags", BATCHED_FLAGS, ids=flag_id)
@pytest.mark.parametrize("deep", [False, True], ids=["rank2", "rank3"])
def test_pg_loss_with_log_probs_batched(flags, deep):
    log_probs, advantages = (LOG_PROBS_DEEP, ADVANTAGES_DEEP) if deep else (LOG_PROBS, ADVANTAGES)
    expected = reference_pg(log_probs, advantages, LENGTHS, flags)
    actual = losses.pg_loss_with_log_probs(
        log_probs, advantages, batched=True, sequence_length=LENGTHS, **flags
    )
    assert actual.dtype == tf.float32
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5, atol=1e-5)
    # Time major: the same numbers; a result that keeps batch and time keeps them time major.
    actual = losses.pg_loss_with_log_probs(
        to_time_major(log_probs),
        to_time_major(advantages),
        batched=True,
        sequence_length=LENGTHS,
        time_major=True,
        **flags,
    )
    reduced = any(flags[k] for k in flags if k.endswith(("_batch", "_timesteps")))
    np.testing.assert_allclose(
        actual.numpy(), expected if reduced else to_time_major(expected), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("flags", list(flag_sets(["timesteps", "remaining"])), ids=flag_id)
def test_pg_loss_of_one_sequence(flags):
    """batched=False (Texar's default): [max_time, ...], remaining then time; no batch."""
    log_probs, advantages = LOG_PROBS_DEEP[0], ADVANTAGES_DEEP[0]
    values = reduce_rest(-log_probs.astype(np.float64) * advantages, 1, flags, "remaining")
    if flags["average_across_timesteps"]:
        values = values.mean(axis=0)
    elif flags["sum_over_timesteps"]:
        values = values.sum(axis=0)
    for batch_flags in ({}, {"average_across_batch": False, "sum_over_batch": True}):
        actual = losses.pg_loss_with_log_probs(log_probs, advantages, **flags, **batch_flags)
        np.testing.assert_allclose(actual.numpy(), values, rtol=1e-5, atol=1e-5)
    actual = losses.pg_loss_with_log_probs(LOG_PROBS[0], ADVANTAGES[0], rank=1, **flags)
    expected = -LOG_PROBS[0].astype(np.float64) * ADVANTAGES[0]
    if flags["average_across_timesteps"]:
        expected = expected.mean()
    elif flags["sum_over_timesteps"]:
        expected = expected.sum()
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5, atol=1e-5)


def pick(log_probs, actions):
    return np.take_along_axis(log_probs, actions[..., None], axis=-1)[..., 0]


@pytest.mark.parametrize("flags", BATCHED_FLAGS[::4], ids=flag_id)
def test_pg_loss_with_logits(flags):
    # Ids at padded steps are ignored, even out of range.
    actions = np.where(np.arange(TIME) < LENGTHS[:, None], ACTIONS, VOCAB + 5)
    expected = reference_pg(pick(log_softmax(LOGITS), ACTIONS), ADVANTAGES, LENGTHS, flags)
    actual = losses.pg_loss_with_logits(
        actions, LOGITS, ADVANTAGES, batched=True, sequence_length=LENGTHS, **flags
    )
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5, atol=1e-5)
    actual = losses.pg_loss_with_logits(
        to_time_major(actions),
        to_time_major(LOGITS),
        to_time_major(ADVANTAGES),
        batched=True,
        sequence_length=LENGTHS,
        time_major=True,
        **flags,
    )
    reduced = any(flags[k] for k in flags if k.endswith(("_batch", "_timesteps")))
    np.testing.assert_allclose(
        actual.numpy(), expected if reduced else to_time_major(expected), rtol=1e-5, atol=1e-5
    )


def test_pg_loss_with_logits_of_deeper_actions_and_one_sequence():
    log_probs = pick(log_softmax(LOGITS_DEEP), ACTIONS_DEEP)
    flags = {"average_across_remaining": True, "sum_over_remaining": False}
    actual = losses.pg_loss_with_logits(
        ACTIONS_DEEP, LOGITS_DEEP, ADVANTAGES_DEEP, 3, True, LENGTHS, **flags
    )
    expected = reference_reduce(
        -log_probs * ADVANTAGES_DEEP,
        LENGTHS,
        DEFAULTS | flags,
    )
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5)
    actual = losses.pg_loss_with_logits(ACTIONS[0], LOGITS[0], ADVANTAGES[0])
    expected = (-pick(log_softmax(LOGITS[0]), ACTIONS[0]) * ADVANTAGES[0]).sum()
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5)


def test_padding_changes_nothing():
    """Longer padding holding any finite values (and any ids) gives the same loss."""
    pad = 3
    logits = np.concatenate([LOGITS, RNG.normal(size=(BATCH, pad, VOCAB))], axis=1)
    actions = np.concatenate([ACTIONS, np.full((BATCH, pad), 99)], axis=1)
    advantages = np.concatenate([ADVANTAGES, RNG.normal(size=(BATCH, pad))], axis=1)
    kwargs = {"batched": True, "sequence_length": LENGTHS}
    short = losses.pg_loss_with_logits(ACTIONS, LOGITS, ADVANTAGES, **kwargs)
    longer = losses.pg_loss_with_logits(
        actions, logits.astype(np.float32), advantages.astype(np.float32), **kwargs
    )
    np.testing.assert_allclose(longer.numpy(), short.numpy(), rtol=1e-6)


def test_average_over_time_of_an_empty_sequence_is_zero():
    """Texar divides 0 by a length of 0 (NaN); texkit counts such a sequence as 0."""
    flags = {"average_across_timesteps": True, "sum_over_timesteps": False}
    actual = losses.pg_loss_with_log_probs(
        LOG_PROBS,
        ADVANTAGES,
        batched=True,
        sequence_length=LENGTHS,
        average_across_batch=False,
        **flags,
    )
    assert actual.numpy()[3] == 0.0 and np.all(np.isfinite(actual.numpy()))


def test_pg_gradients_reach_the_policy_and_not_the_advantages():
    logits = tf.Variable(LOGITS)
    advantages = tf.Variable(ADVANTAGES)
    with tf.GradientTape(persistent=True) as tape:
        loss = losses.pg_loss_with_logits(
            ACTIONS, logits, advantages, batched=True, sequence_length=LENGTHS
        )
        log_probs = tf.Variable(LOG_PROBS)
        loss_lp = losses.pg_loss_with_log_probs(
            log_probs, advantages, batched=True, sequence_length=LENGTHS
        )
    assert tape.gradient(loss, advantages) is None
    assert tape.gradient(loss_lp, advantages) is None
    # d loss / d log p[b, t] = -advantage[b, t] / batch on valid steps, 0 on padded ones.
    valid = np.arange(TIME) < LENGTHS[:, None]
    expected = np.where(valid, -ADVANTAGES / BATCH, 0.0)
    np.testing.assert_allclose(tape.gradient(loss_lp, log_probs).numpy(), expected, rtol=1e-6)
    # Through the softmax: d/dz = -(onehot(action) - softmax(z)) * advantage / batch.
    probs = np.exp(log_softmax(LOGITS))
    onehot = np.eye(VOCAB)[ACTIONS]
    expected = np.where(valid[..., None], (probs - onehot) * ADVANTAGES[..., None] / BATCH, 0.0)
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), expected, atol=1e-6)


# --- discounted rewards --------------------------------------------------------------------------


def reference_discount(reward, lengths, discount, max_time=None):
    """Rewards-to-go by the backward recursion R[t] = r[t] + discount * R[t + 1], float64."""
    reward = np.asarray(reward, np.float64)
    if reward.ndim == 1:
        steps = max_time or int(max(lengths))
        per_step = np.zeros((len(reward), steps))
        for b, n in enumerate(lengths):
            if n > 0:
                per_step[b, n - 1] = reward[b]
    else:
        per_step = reward.copy()
        if lengths is not None:
            for b, n in enumerate(lengths):
                per_step[b, n:] = 0.0
    out = np.zeros_like(per_step)
    running = np.zeros(len(per_step))
    for t in reversed(range(per_step.shape[1])):
        running = per_step[:, t] + discount * running
        out[:, t] = running
    return out


@pytest.mark.parametrize("discount", [1.0, 0.9, 0.5, 0.0])
def test_discount_reward_per_sequence(discount):
    reward = RNG.normal(size=BATCH).astype(np.float32)
    actual = losses.discount_reward(reward, LENGTHS, discount)
    assert actual.shape == (BATCH, LENGTHS.max()) and actual.dtype == tf.float32
    np.testing.assert_allclose(
        actual.numpy(), reference_discount(reward, LENGTHS, discount), rtol=1e-5, atol=1e-7
    )
    actual = losses.discount_reward(reward, LENGTHS, discount, max_time=9)
    np.testing.assert_allclose(
        actual.numpy(), reference_discount(reward, LENGTHS, discount, 9), rtol=1e-5, atol=1e-7
    )


@pytest.mark.parametrize("discount", [1.0, 0.9, 0.0])
@pytest.mark.parametrize("masked", [True, False])
def test_discount_reward_per_step(discount, masked):
    reward = RNG.normal(size=(BATCH, TIME)).astype(np.float32)
    lengths = LENGTHS if masked else None
    actual = losses.discount_reward(reward, lengths, discount, tensor_rank=2)
    np.testing.assert_allclose(
        actual.numpy(), reference_discount(reward, lengths, discount), rtol=1e-5, atol=1e-6
    )
    # A known shape decides the rank: the default tensor_rank=1 does not misread it.
    np.testing.assert_allclose(
        losses.discount_reward(reward, lengths, discount).numpy(), actual.numpy()
    )


@pytest.mark.parametrize("rank", [1, 2])
def test_discount_reward_normalized_over_every_entry_padding_included(rank):
    reward = RNG.normal(size=(BATCH,) if rank == 1 else (BATCH, TIME))
    raw = reference_discount(reward, LENGTHS, 0.9)
    # Texar-TF: mean and population std over the whole [batch, max_time] tensor, zeros included.
    expected = (raw - raw.mean()) / (raw.std() + 1e-8)
    actual = losses.discount_reward(reward, LENGTHS, 0.9, normalize=True, dtype=tf.float64)
    assert actual.dtype == tf.float64
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-10)
    padded = np.arange(raw.shape[1]) >= LENGTHS[:, None]
    np.testing.assert_allclose(actual.numpy()[padded], -raw.mean() / (raw.std() + 1e-8))


def test_discount_reward_dtypes():
    assert losses.discount_reward([1, 0, 1], [2, 1, 3]).dtype == tf.float32  # int rewards
    reward64 = np.array([1.0, 2.0])
    assert losses.discount_reward(reward64, [1, 2]).dtype == tf.float64
    assert losses.discount_reward(reward64, [1, 2], dtype="float32").dtype == tf.float32
    half = tf.constant([1.0, 2.0], tf.bfloat16)
    assert losses.discount_reward(half, [1, 2]).dtype == tf.float32


# --- entropy -------------------------------------------------------------------------------------


def reference_entropy(logits):
    log_probs = log_softmax(logits)
    return -(np.exp(log_probs) * log_probs).sum(axis=-1)


@pytest.mark.parametrize("flags", list(flag_sets(["batch", "remaining"])), ids=flag_id)
@pytest.mark.parametrize("logits", [LOGITS[:, 0], LOGITS, LOGITS_DEEP], ids=["r2", "r3", "r4"])
def test_entropy_with_logits(flags, logits):
    entropy = reduce_rest(reference_entropy(logits), 1, flags, "remaining")
    if flags["average_across_batch"]:
        entropy = entropy.mean(axis=0)
    elif flags["sum_over_batch"]:
        entropy = entropy.sum(axis=0)
    actual = losses.entropy_with_logits(logits, **flags)
    assert actual.dtype == tf.float32
    np.testing.assert_allclose(actual.numpy(), entropy, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("flags", BATCHED_FLAGS[::2], ids=flag_id)
@pytest.mark.parametrize("deep", [False, True], ids=["rank3", "rank4"])
def test_sequence_entropy_with_logits(flags, deep):
    logits = LOGITS_DEEP if deep else LOGITS
    expected = reference_reduce(reference_entropy(logits), LENGTHS, flags)
    actual = losses.sequence_entropy_with_logits(logits, sequence_length=LENGTHS, **flags)
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5, atol=1e-6)
    actual = losses.sequence_entropy_with_logits(
        to_time_major(logits), sequence_length=LENGTHS, time_major=True, **flags
    )
    reduced = any(flags[k] for k in flags if k.endswith(("_batch", "_timesteps")))
    np.testing.assert_allclose(
        actual.numpy(), expected if reduced else to_time_major(expected), rtol=1e-5, atol=1e-6
    )


def test_entropy_of_filtered_logits_is_finite_with_finite_gradients():
    """-inf logits (top-k filtering) have probability 0: entropy over the others only."""
    logits = np.where(np.arange(VOCAB) < 3, LOGITS, -np.inf).astype(np.float32)
    variable = tf.Variable(logits)
    with tf.GradientTape() as tape:
        entropy = losses.sequence_entropy_with_logits(variable, sequence_length=LENGTHS)
    expected = reference_reduce(
        reference_entropy(LOGITS[..., :3]),
        LENGTHS,
        DEFAULTS,
    )
    np.testing.assert_allclose(entropy.numpy(), expected, rtol=1e-5)
    assert np.all(np.isfinite(tape.gradient(entropy, variable).numpy()))


# --- adversarial ---------------------------------------------------------------------------------


def softplus(x):
    return np.logaddexp(0.0, x)


@pytest.mark.parametrize("mode", ["max_real", "min_fake"])
@pytest.mark.parametrize("as_tuple", [False, True])
def test_binary_adversarial_losses(mode, as_tuple):
    kernel = RNG.normal(size=(3, 1))
    real = RNG.normal(size=(4, 3)).astype(np.float32)
    fake = RNG.normal(size=(6, 3)).astype(np.float32)  # not as many as real

    def discriminator(data):
        logits = tf.matmul(data, kernel.astype(np.float32))  # [n, 1]
        return (logits, "other outputs") if as_tuple else logits

    real_logits, fake_logits = real @ kernel, fake @ kernel
    # Cross entropy of sigmoid(z) against 1 is softplus(-z), against 0 softplus(z).
    d_loss = softplus(-real_logits).mean() + softplus(fake_logits).mean()
    g_loss = softplus(-fake_logits).mean() if mode == "max_real" else -softplus(fake_logits).mean()
    actual_g, actual_d = losses.binary_adversarial_losses(real, fake, discriminator, mode)
    assert actual_g.dtype == actual_d.dtype == tf.float32 and actual_g.shape == ()
    np.testing.assert_allclose([actual_g.numpy(), actual_d.numpy()], [g_loss, d_loss], rtol=1e-5)


def test_mixed_precision_inputs_give_float32():
    half = tf.constant(LOGITS, tf.bfloat16)
    cast = tf.cast(half, tf.float32)
    for function, args in (
        (losses.pg_loss_with_logits, (ACTIONS, half, ADVANTAGES)),
        (losses.sequence_entropy_with_logits, (half,)),
        (losses.entropy_with_logits, (half,)),
    ):
        low = function(*args)
        full = function(*[cast if a is half else a for a in args])
        assert low.dtype == tf.float32
        np.testing.assert_allclose(low.numpy(), full.numpy(), rtol=1e-6)


# --- mask_and_reduce -----------------------------------------------------------------------------


@pytest.mark.parametrize("flags", BATCHED_FLAGS[::3], ids=flag_id)
def test_mask_and_reduce(flags):
    values = ADVANTAGES_DEEP
    expected = reference_reduce(values, LENGTHS, flags)
    actual = losses.mask_and_reduce(values, LENGTHS, rank=3, **flags)
    np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-5, atol=1e-6)
    actual = losses.mask_and_reduce(values, LENGTHS, 3, dtype=tf.float64, **flags)
    assert actual.dtype == tf.float64


# --- compiled ------------------------------------------------------------------------------------


def all_losses(logits, actions, advantages, lengths, reward):
    batched = {"batched": True, "sequence_length": lengths}
    return (
        losses.pg_loss_with_logits(actions, logits, advantages, **batched),
        losses.pg_loss_with_log_probs(
            tf.transpose(-logits[..., 0]),
            tf.transpose(advantages),
            time_major=True,
            sum_over_timesteps=False,
            **batched,
        ),
        losses.pg_loss_with_log_probs(-logits[0, :, 0], advantages[0]),
        losses.discount_reward(reward, lengths, 0.9, max_time=TIME),
        losses.discount_reward(reward, lengths, 0.5),
        losses.discount_reward(advantages, lengths, 0.9, normalize=True),
        losses.sequence_entropy_with_logits(logits, sequence_length=lengths),
        losses.entropy_with_logits(logits, average_across_remaining=True, sum_over_remaining=False),
        *losses.binary_adversarial_losses(logits[:2], logits[2:], lambda x: x[..., 0]),
        losses.mask_and_reduce(
            advantages, lengths, average_across_timesteps=True, sum_over_timesteps=False
        ),
    )


@pytest.mark.parametrize("jit", [False, True], ids=["function", "xla"])
def test_compiled_equals_eager(jit):
    args = (LOGITS, ACTIONS, ADVANTAGES, LENGTHS, RNG.normal(size=BATCH).astype(np.float32))
    eager = all_losses(*[tf.constant(a) for a in args])
    compiled = tf.function(all_losses, jit_compile=jit)(*[tf.constant(a) for a in args])
    for e, c in zip(eager, compiled, strict=True):
        assert e.shape == c.shape and e.dtype == c.dtype
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


# --- errors --------------------------------------------------------------------------------------

PG = {
    "actions": ACTIONS,
    "logits": LOGITS,
    "advantages": ADVANTAGES,
    "batched": True,
    "sequence_length": LENGTHS,
}
BAD_PG = [
    ({"advantages": ADVANTAGES[:, 0]}, ValueError, "advantages must have the shape of log_probs"),
    ({"advantages": ADVANTAGES[:, :1]}, ValueError, r"advantages shape \(4, 1\)"),
    ({"advantages": ADVANTAGES > 0}, TypeError, "advantages must have a float or int dtype"),
    ({"sequence_length": LENGTHS[None]}, ValueError, r"sequence_length must be \[batch\]"),
    ({"sequence_length": LENGTHS[:2]}, ValueError, "sequence_length must be .batch. with batch 4"),
    ({"sequence_length": LENGTHS * 1.0}, TypeError, "sequence_length must be int"),
    ({"sum_over_batch": True}, ValueError, "average_across_batch and sum_over_batch"),
    ({"average_across_timesteps": True}, ValueError, "average_across_timesteps and sum_over_t"),
    ({"average_across_remaining": True}, ValueError, "average_across_remaining and sum_over_r"),
    ({"sum_over_timesteps": "False"}, TypeError, "sum_over_timesteps must be True or False"),
    ({"batched": False}, ValueError, "sequence_length masks batched inputs only"),
    ({"actions": ACTIONS * 1.0}, TypeError, "actions must be int ids"),
    ({"logits": LOGITS[:, :-1]}, ValueError, "logits must have the shape of actions"),
    ({"logits": LOGITS[..., 0]}, ValueError, "logits must have the shape of actions"),
    ({"rank": 3}, ValueError, r"rank is 3 but actions has shape \(4, 6\)"),
    (
        {"actions": ACTIONS[0], "logits": LOGITS[0], "advantages": ADVANTAGES[0]},
        ValueError,
        r"actions must be \[batch, max_time, ...\]",
    ),
]


@pytest.mark.parametrize(("change", "error", "match"), BAD_PG)
def test_pg_loss_errors_name_the_argument(change, error, match):
    with pytest.raises(error, match=match):
        losses.pg_loss_with_logits(**{**PG, **change})


def test_pg_loss_with_log_probs_errors():
    with pytest.raises(TypeError, match="log_probs must have a float dtype"):
        losses.pg_loss_with_log_probs(ACTIONS, ADVANTAGES)
    with pytest.raises(ValueError, match="advantages must have the shape of log_probs"):
        losses.pg_loss_with_log_probs(LOG_PROBS, ADVANTAGES.T)

    @tf.function(input_signature=[tf.TensorSpec([None, None]), tf.TensorSpec([None, None])])
    def dynamic(log_probs, advantages):
        return losses.pg_loss_with_log_probs(log_probs, advantages, batched=True)

    with pytest.raises(tf.errors.InvalidArgumentError, match="advantages must have the shape"):
        dynamic(LOG_PROBS, ADVANTAGES[:, :1])


BAD_DISCOUNT = [
    (([1.0, 2.0],), {}, ValueError, "sequence_length is required"),
    (([1.0, 2.0], [1, 2]), {"discount": 1.5}, ValueError, r"discount must be in \[0, 1\]"),
    (([1.0, 2.0], [1, 2]), {"discount": "0.9"}, TypeError, "discount must be a float"),
    (([1.0, 2.0], [1, 2]), {"tensor_rank": 3}, ValueError, "tensor_rank must be 1 or 2"),
    (([1.0, 2.0], [1, 2]), {"tensor_rank": 2}, ValueError, "tensor_rank is 2 but reward"),
    (([[[1.0]]], [1]), {}, ValueError, r"reward must be \[batch\] or"),
    (([1.0, 2.0], [1, 2, 3]), {}, ValueError, "sequence_length must be .batch. with batch 2"),
    (([1.0, 2.0], [[1, 2]]), {}, ValueError, r"sequence_length must be \[batch\]"),
    (([True, False], [1, 2]), {}, TypeError, "reward must have a float or int dtype"),
    (([1.0, 2.0], [1, 2]), {"dtype": tf.int32}, TypeError, "dtype must be a float dtype"),
    (([1.0, 2.0], [1, 2]), {"normalize": 1}, TypeError, "normalize must be True or False"),
    (([1.0, 2.0], [1, 2]), {"max_time": 0}, ValueError, "max_time must be a positive int"),
    (([[1.0, 2.0]], [1]), {"max_time": 4}, ValueError, "max_time applies to a reward per seq"),
    (
        ([1.0, 2.0], [1, 5]),
        {"max_time": 4},
        tf.errors.InvalidArgumentError,
        "sequence_length must not exceed max_time",
    ),
]


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), BAD_DISCOUNT)
def test_discount_reward_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        losses.discount_reward(*args, **kwargs)


def test_entropy_and_adversarial_errors():
    with pytest.raises(ValueError, match=r"logits must be \[batch, max_time, ..., num_classes\]"):
        losses.sequence_entropy_with_logits(LOGITS[0])
    with pytest.raises(ValueError, match=r"logits must be \[batch, ..., num_classes\]"):
        losses.entropy_with_logits(LOGITS[0, 0])
    with pytest.raises(ValueError, match="rank is 4 but logits"):
        losses.entropy_with_logits(LOGITS, rank=4)
    with pytest.raises(ValueError, match="only one of average_across_remaining"):
        losses.entropy_with_logits(LOGITS, average_across_remaining=True)
    with pytest.raises(ValueError, match="sequence_length must be .batch. with batch 6"):
        losses.sequence_entropy_with_logits(LOGITS, sequence_length=LENGTHS, time_major=True)
    with pytest.raises(TypeError, match="logits must have a float dtype"):
        losses.sequence_entropy_with_logits(ACTIONS[..., None])
    calls = []

    def discriminator(data):
        calls.append(data)
        return tf.reduce_sum(data, axis=-1)

    with pytest.raises(ValueError, match=r"mode must be one of \['max_real', 'min_fake'\]"):
        losses.binary_adversarial_losses(LOGITS, LOGITS, discriminator, mode="min_real")
    assert not calls  # refused before the discriminator runs
    with pytest.raises(TypeError, match="discriminator_fn must be callable"):
        losses.binary_adversarial_losses(LOGITS, LOGITS, None)
    with pytest.raises(TypeError, match=r"discriminator_fn\(real_data\) must have a float"):
        losses.binary_adversarial_losses(ACTIONS, ACTIONS, lambda x: x)
    with pytest.raises(ValueError, match="rank must be at least 2"):
        losses.mask_and_reduce(LENGTHS, LENGTHS, rank=1)
    with pytest.raises(ValueError, match=r"rank is 2 but sequence has shape \(4, 6, 3\)"):
        losses.mask_and_reduce(ADVANTAGES_DEEP, LENGTHS)


def test_rank_arguments_apply_when_the_shape_does_not_say_it():
    """Texar's ``rank`` and ``tensor_rank`` give the rank of an input of unknown shape."""
    unknown = tf.TensorSpec(shape=None, dtype=tf.float32)

    @tf.function(input_signature=[unknown, unknown, tf.TensorSpec([None], tf.int32)])
    def pg(log_probs, advantages, lengths):
        return losses.pg_loss_with_log_probs(
            log_probs, advantages, rank=2, batched=True, sequence_length=lengths
        )

    expected = reference_pg(
        LOG_PROBS,
        ADVANTAGES,
        LENGTHS,
        DEFAULTS,
    )
    np.testing.assert_allclose(pg(LOG_PROBS, ADVANTAGES, LENGTHS).numpy(), expected, rtol=1e-5)

    @tf.function(input_signature=[unknown, tf.TensorSpec([None], tf.int32)])
    def discounted(reward, lengths):
        return losses.discount_reward(reward, lengths, 0.9, tensor_rank=2)

    reward = RNG.normal(size=(BATCH, TIME)).astype(np.float32)
    np.testing.assert_allclose(
        discounted(reward, LENGTHS).numpy(), reference_discount(reward, LENGTHS, 0.9), rtol=1e-5
    )
    with pytest.raises(ValueError, match="the rank of log_probs is unknown; pass rank"):
        tf.function(
            lambda x: losses.pg_loss_with_log_probs(x, x), input_signature=[unknown]
        ).get_concrete_function()
