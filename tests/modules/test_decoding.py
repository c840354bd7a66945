"""Decoding algorithms against exhaustive search, the formulas and each other, eager and XLA."""

import functools
import itertools

import numpy as np
import pytest
import tensorflow as tf

from texkit.modules.decoders import (
    beam_search,
    filter_top_k,
    filter_top_p,
    forced_logits,
    gnmt_length_penalty,
    greedy_decode,
    sample_decode,
    tile_batch,
)

START, END = 0, 1


def markov_step(table):
    """A step function whose next-token logits depend only on the previous token.

    The state counts the steps taken, so the final state tells where each sequence stopped.
    """
    table = tf.constant(table, tf.float32)

    def step(tokens, time, state):
        return tf.gather(table, tokens), {"steps": state["steps"] + 1}

    return step


def random_table(rng, vocab_size, sharpness=3.0):
    table = rng.normal(size=(vocab_size, vocab_size)) * sharpness
    table[:, START] = -1e4  # the start token is never produced
    return table.astype(np.float32)


def log_softmax(x):
    x = np.asarray(x, np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def sequence_log_prob(table, ids):
    log_probs = log_softmax(table)
    previous, total = START, 0.0
    for token in ids:
        total += log_probs[previous, token]
        previous = token
    return total


def all_hypotheses(table, max_length):
    """Every sequence the search space holds: ended by END, or cut at max_length."""
    vocab = range(1, table.shape[0])
    for length in range(1, max_length + 1):
        for ids in itertools.product(vocab, repeat=length):
            ended = ids[-1] == END
            if END in ids[:-1] or (not ended and length < max_length):
                continue
            yield ids


def numpy_greedy(table, max_length):
    ids, previous = [], START
    for _ in range(max_length):
        previous = int(np.argmax(table[previous]))
        ids.append(previous)
        if previous == END:
            break
    return ids


def run(decode, *args, **kwargs):
    """The decoding function's output as NumPy arrays."""
    return tf.nest.map_structure(lambda t: t.numpy(), decode(*args, **kwargs))


def initial_state(batch):
    return {"steps": tf.zeros([batch], tf.int32)}


def test_greedy_follows_the_argmax_chain_and_freezes_finished_state():
    rng = np.random.default_rng(0)
    table = random_table(rng, 6)
    out = run(greedy_decode, markov_step(table), [START, START], END, 7, initial_state(2))
    expected = numpy_greedy(table, 7)
    ids, lengths = out.sample_id, out.lengths
    assert ids.shape == (2, 7) and out.logits.shape == (2, 7, 6)
    np.testing.assert_array_equal(lengths, [len(expected)] * 2)
    np.testing.assert_array_equal(ids[0, : len(expected)], expected)
    assert (ids[0, len(expected) :] == END).all()
    # The state is the one after each sequence's own last step.
    np.testing.assert_array_equal(out.final_state["steps"], lengths)
    # Logits are the step's own, zeros after the end.
    previous = [START, *expected[:-1]]
    np.testing.assert_allclose(out.logits[0, : len(expected)], table[previous])
    assert not out.logits[0, len(expected) :].any()


def test_sequences_end_independently():
    # From START: token 2 for example 0 (start token 0) ... use different start tokens.
    table = np.full((5, 5), -5.0, np.float32)
    table[0, 2] = table[2, 3] = table[3, END] = 5.0  # 0 -> 2 -> 3 -> END
    table[4, END] = 5.0  # 4 -> END
    out = run(greedy_decode, markov_step(table), [0, 4], END, 6, initial_state(2), vocab_size=5)
    np.testing.assert_array_equal(out.lengths, [3, 1])
    np.testing.assert_array_equal(out.sample_id, [[2, 3, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    np.testing.assert_array_equal(out.final_state["steps"], [3, 1])


@pytest.mark.parametrize("decode", ["greedy", "sample"])
def test_unfrozen_state_decodes_the_same_and_keeps_stepping(decode):
    # Without freezing, the outputs are unchanged; only the state goes on past each end.
    table = np.full((5, 5), -5.0, np.float32)
    table[0, 2] = table[2, 3] = table[3, END] = 5.0
    table[4, END] = 5.0
    if decode == "greedy":
        args = (greedy_decode, markov_step(table), [0, 4], END, 6, initial_state(2))
        kwargs = {}
    else:
        args = (sample_decode, markov_step(table), [0, 4], END, 6, initial_state(2))
        kwargs = {"top_k": 2, "seed": 3}
    frozen = run(*args, **kwargs)
    unfrozen = run(*args, **kwargs, freeze_state=False)
    for field in ("sample_id", "logits", "lengths"):
        np.testing.assert_array_equal(getattr(unfrozen, field), getattr(frozen, field))
    np.testing.assert_array_equal(frozen.final_state["steps"], frozen.lengths)
    # The loop ran until the longest sequence ended, and every row's state took every step.
    assert frozen.lengths.min() < frozen.lengths.max()
    np.testing.assert_array_equal(unfrozen.final_state["steps"], [frozen.lengths.max()] * 2)


def test_no_end_token_stops_at_max_length():
    table = np.zeros((4, 4), np.float32)
    table[:, 2] = 9.0
    out = run(greedy_decode, markov_step(table), [START], END, 5, initial_state(1))
    np.testing.assert_array_equal(out.sample_id, [[2] * 5])
    np.testing.assert_array_equal(out.lengths, [5])


@pytest.mark.parametrize("seed", range(8))
def test_beam_width_one_equals_greedy(seed):
    rng = np.random.default_rng(seed)
    table = random_table(rng, 7, sharpness=1.0)
    batch = 3
    greedy = run(greedy_decode, markov_step(table), [START] * batch, END, 9, initial_state(batch))
    beam = run(
        beam_search, markov_step(table), [START] * batch, END, 9, initial_state(batch), beam_width=1
    )
    np.testing.assert_array_equal(beam.ids[:, 0], greedy.sample_id)
    np.testing.assert_array_equal(beam.lengths[:, 0], greedy.lengths)
    expected = [sequence_log_prob(table, greedy.sample_id[0, : greedy.lengths[0]])] * batch
    np.testing.assert_allclose(beam.scores[:, 0], expected, rtol=1e-5)


def test_beam_search_finds_the_best_sequence_greedy_misses():
    # From START: 'a' (2) is likelier than 'b' (3), but after 'a' every continuation is unsure,
    # while 'b' is almost always followed by END: P(a END) = 0.6 * 0.4 < P(b END) = 0.4 * 0.95.
    probs = np.full((4, 4), 1e-6)
    probs[START, [2, 3]] = [0.6, 0.4]
    probs[2, [END, 2, 3]] = [0.4, 0.3, 0.3]
    probs[3, [END, 2, 3]] = [0.95, 0.025, 0.025]
    probs[END, END] = 1.0
    table = np.log(probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
    greedy = run(greedy_decode, markov_step(table), [START], END, 4, initial_state(1))
    np.testing.assert_array_equal(greedy.sample_id[0, :2], [2, END])
    beam = run(beam_search, markov_step(table), [START], END, 4, initial_state(1), beam_width=2)
    np.testing.assert_array_equal(beam.ids[0, 0, :2], [3, END])
    np.testing.assert_allclose(beam.scores[0, 0], np.log(0.4 * 0.95), rtol=1e-4)
    assert beam.scores[0, 0] > beam.scores[0, 1]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_wide_beam_equals_exhaustive_search_with_length_penalty(alpha):
    rng = np.random.default_rng(int(alpha * 10))
    table = random_table(rng, 4, sharpness=1.5)
    max_length = 4
    beam = run(
        beam_search,
        markov_step(table),
        [START],
        END,
        max_length,
        initial_state(1),
        beam_width=27,  # every live hypothesis fits: 3 tokens, 3 steps before the last
        length_penalty=alpha,
    )

    def score(ids):
        return sequence_log_prob(table, ids) / ((5 + len(ids)) / 6) ** alpha

    ranked = sorted(all_hypotheses(table, max_length), key=score, reverse=True)
    for rank in range(5):
        length = beam.lengths[0, rank]
        np.testing.assert_array_equal(beam.ids[0, rank, :length], ranked[rank])
        np.testing.assert_allclose(beam.scores[0, rank], score(ranked[rank]), rtol=1e-4)
        assert (beam.ids[0, rank, length:] == END).all()


def test_scores_are_log_probs_over_the_gnmt_penalty():
    rng = np.random.default_rng(3)
    table = random_table(rng, 6, sharpness=1.0)
    alpha = 0.8
    beam = run(
        beam_search,
        markov_step(table),
        [START] * 2,
        END,
        6,
        initial_state(2),
        beam_width=4,
        length_penalty=alpha,
    )
    for b, k in itertools.product(range(2), range(4)):
        length = int(beam.lengths[b, k])
        ids = beam.ids[b, k, :length]
        penalty = ((5 + length) / 6) ** alpha
        np.testing.assert_allclose(
            beam.scores[b, k], sequence_log_prob(table, ids) / penalty, rtol=1e-4
        )
    assert (np.diff(beam.scores, axis=1) <= 1e-6).all()  # sorted best first
    np.testing.assert_allclose(gnmt_length_penalty(7, alpha), (12 / 6) ** alpha, rtol=1e-6)


def test_beam_search_tiles_and_reorders_nested_state():
    """A second-order model whose step reads the token before last, and a per-example bias,
    from its state: only a state that is tiled and follows its hypothesis gives the exhaustive
    search's best sequences."""
    rng = np.random.default_rng(4)
    vocab, max_length = 4, 4
    table = rng.normal(size=(vocab, vocab, vocab)).astype(np.float32) * 2
    table[..., START] = -1e4
    bias = rng.normal(size=(2, vocab)).astype(np.float32) * 2
    bias[:, START] = 0.0
    constant = tf.constant(table)

    def step(tokens, time, state):
        logits = tf.gather_nd(constant, tf.stack([state["previous"], tokens], axis=1))
        return logits + state["bias"], {"previous": tokens, "bias": state["bias"]}

    state = {"previous": tf.fill([2], START), "bias": tf.constant(bias)}
    np.testing.assert_array_equal(tile_batch(state, 3)["bias"], np.repeat(bias, 3, axis=0))
    out = run(beam_search, step, [START, START], END, max_length, state, beam_width=27)

    for example in range(2):
        log_probs = log_softmax(table + bias[example])

        def log_prob(ids, log_probs=log_probs):
            history = [START, START, *ids]
            return sum(
                log_probs[history[i], history[i + 1], history[i + 2]] for i in range(len(ids))
            )

        best = sorted(all_hypotheses(table[0], max_length), key=log_prob, reverse=True)[:3]
        for rank, ids in enumerate(best):
            length = int(out.lengths[example, rank])
            np.testing.assert_array_equal(out.ids[example, rank, :length], ids)
            np.testing.assert_allclose(out.scores[example, rank], log_prob(ids), rtol=1e-4)


def constant_step(probs):
    """A step function that gives the same distribution at every step."""
    logits = tf.constant(np.log(np.maximum(probs, 1e-30)), tf.float32)

    def step(tokens, time, state):
        return tf.tile(logits[None], [tf.shape(tokens)[0], 1]), state

    return step


@pytest.mark.parametrize("seed", range(4))
def test_sampling_with_top_k_one_equals_greedy(seed):
    rng = np.random.default_rng(seed)
    table = random_table(rng, 7, sharpness=1.0)
    greedy = run(greedy_decode, markov_step(table), [START] * 4, END, 8, initial_state(4))
    sampled = run(
        sample_decode, markov_step(table), [START] * 4, END, 8, initial_state(4), top_k=1, seed=seed
    )
    np.testing.assert_array_equal(sampled.sample_id, greedy.sample_id)
    np.testing.assert_array_equal(sampled.lengths, greedy.lengths)


def numpy_top_p_support(logits, top_p):
    """The smallest set of most likely tokens whose probability mass reaches top_p."""
    probs = np.exp(log_softmax(logits))
    order = np.argsort(-probs)
    mass = np.cumsum(probs[order])
    count = int(np.searchsorted(mass, top_p - 1e-12)) + 1  # first prefix whose mass >= top_p
    return set(order[:count].tolist())


def test_filter_top_p_keeps_the_smallest_set_reaching_p():
    rng = np.random.default_rng(6)
    logits = rng.normal(size=(50, 12)).astype(np.float32) * 2
    for top_p in (0.1, 0.5, 0.9, 0.99):
        filtered = filter_top_p(tf.constant(logits), top_p).numpy()
        for row, kept in zip(logits, filtered, strict=True):
            assert set(np.flatnonzero(np.isfinite(kept)).tolist()) == numpy_top_p_support(
                row, top_p
            )
            np.testing.assert_array_equal(kept[np.isfinite(kept)], row[np.isfinite(kept)])
    np.testing.assert_array_equal(filter_top_p(tf.constant(logits), 1.0), logits)


def test_filter_top_k():
    logits = tf.constant([[1.0, 5.0, 3.0, 4.0], [0.0, -1.0, 2.0, 2.0]])
    filtered = filter_top_k(logits, 2).numpy()
    np.testing.assert_array_equal(np.isfinite(filtered), [[0, 1, 0, 1], [0, 0, 1, 1]])
    np.testing.assert_array_equal(filter_top_k(logits, 0), logits)


def draw(probs, draws=6000, **kwargs):
    out = run(
        sample_decode,
        constant_step(np.asarray(probs)),
        np.full([draws], START),
        END,
        1,
        {},
        seed=11,
        **kwargs,
    )
    return np.bincount(out.sample_id[:, 0], minlength=len(probs)) / draws


def assert_frequencies(frequencies, expected, draws=6000):
    expected = np.asarray(expected, np.float64)
    sigma = np.sqrt(expected * (1 - expected) / draws)
    np.testing.assert_array_less(np.abs(frequencies - expected), 4 * sigma + 1e-12)


@pytest.mark.parametrize(
    "top_p, support", [(0.3, [2]), (0.55, [2, 3]), (0.7, [2, 3, 4]), (1.0, [1, 2, 3, 4, 5])]
)
def test_top_p_sampling_draws_from_exactly_the_nucleus(top_p, support):
    probs = np.array([0.0, 0.1, 0.35, 0.25, 0.2, 0.1])
    frequencies = draw(probs, top_p=top_p)
    expected = np.zeros_like(probs)
    expected[support] = probs[support] / probs[support].sum()
    assert set(np.flatnonzero(frequencies).tolist()) == set(support)
    assert_frequencies(frequencies, expected)


def test_temperature_and_top_k_sampling_frequencies():
    probs = np.array([0.0, 0.1, 0.4, 0.3, 0.2])
    sharpened = probs**2 / (probs**2).sum()  # temperature 0.5 squares the probabilities
    assert_frequencies(draw(probs, softmax_temperature=0.5), sharpened)
    top2 = np.where(probs >= 0.3, probs, 0.0)
    assert_frequencies(draw(probs, top_k=2), top2 / top2.sum())


def test_sampling_is_reproducible_with_a_seed():
    rng = np.random.default_rng(8)
    table = random_table(rng, 9, sharpness=0.5)
    args = (markov_step(table), [START] * 5, END, 10, initial_state(5))
    first = run(sample_decode, *args, seed=3)
    again = run(sample_decode, *args, seed=3)
    other = run(sample_decode, *args, seed=4)
    np.testing.assert_array_equal(first.sample_id, again.sample_id)
    assert (first.sample_id != other.sample_id).any()


def test_all_algorithms_compile_with_xla():
    rng = np.random.default_rng(9)
    table = random_table(rng, 8, sharpness=1.0)
    args = (markov_step(table), tf.constant([START] * 3), END, 7, initial_state(3))
    algorithms = {
        "greedy": lambda: greedy_decode(*args),
        # top_k=1 makes sampling deterministic: XLA's random numbers differ from TF's kernels.
        "sample": lambda: sample_decode(*args, top_k=1, top_p=0.9, seed=5),
        "beam": lambda: beam_search(*args, beam_width=3, length_penalty=0.6),
    }
    for name, algorithm in algorithms.items():
        eager = tf.nest.map_structure(lambda t: t.numpy(), algorithm())
        compiled = tf.function(algorithm, jit_compile=True)
        xla = tf.nest.map_structure(lambda t: t.numpy(), compiled())
        for e, x in zip(tf.nest.flatten(eager), tf.nest.flatten(xla), strict=True):
            np.testing.assert_allclose(x, e, rtol=1e-5, err_msg=name)


def test_xla_sampling_is_reproducible_and_follows_the_distribution():
    probs = np.array([0.0, 0.1, 0.4, 0.3, 0.2])
    compiled = tf.function(
        lambda seed: (
            sample_decode(
                constant_step(probs), tf.fill([6000], START), END, 1, {}, top_p=0.85, seed=seed
            ).sample_id
        ),
        jit_compile=True,
    )
    first = compiled(tf.constant([2, 0])).numpy()
    np.testing.assert_array_equal(compiled(tf.constant([2, 0])), first)
    expected = np.where(probs >= 0.2, probs, 0.0)
    assert_frequencies(np.bincount(first[:, 0], minlength=5) / 6000, expected / expected.sum())


def test_bad_arguments_are_named():
    step = markov_step(np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="max_decoding_length must be a Python int"):
        greedy_decode(step, [START], END, tf.constant(4), initial_state(1))
    with pytest.raises(ValueError, match="max_decoding_length must be positive"):
        greedy_decode(step, [START], END, 0, initial_state(1))
    with pytest.raises(ValueError, match="beam_width"):
        beam_search(step, [START], END, 3, initial_state(1), beam_width=0)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(step, [START], END, 3, initial_state(1), beam_width=2, length_penalty=-1.0)
    with pytest.raises(ValueError, match="top_p"):
        sample_decode(step, [START], END, 3, initial_state(1), top_p=0.0)
    with pytest.raises(ValueError, match="top_k"):
        sample_decode(step, [START], END, 3, initial_state(1), top_k=-1)
    with pytest.raises(ValueError, match="softmax_temperature"):
        sample_decode(step, [START], END, 3, initial_state(1), softmax_temperature=0.0)


def counting(step):
    """``step`` that also counts its calls (eagerly, the loop runs step by step in Python)."""
    calls = []

    def counted(tokens, time, state):
        calls.append(int(time))
        return step(tokens, time, state)

    return counted, calls


def test_decoding_stops_once_every_sequence_has_ended():
    table = np.zeros((5, 5), np.float32)
    table[START, 3] = table[3, END] = table[END, END] = 6.0  # START -> 3 -> END
    step, calls = counting(markov_step(table))
    out = run(greedy_decode, step, [START] * 2, END, 20, initial_state(2), vocab_size=5)
    np.testing.assert_array_equal(out.lengths, [2, 2])
    assert calls == [0, 1]
    step, calls = counting(markov_step(table))
    beam = run(beam_search, step, [START] * 2, END, 20, initial_state(2), beam_width=2)
    np.testing.assert_array_equal(beam.ids[:, 0, :2], [[3, END]] * 2)
    # Stops once the set of 2 finished hypotheses can no longer be beaten, long before 20 steps.
    assert len(calls) < 6, calls


def test_an_unknown_batch_size_in_a_graph():
    table = random_table(np.random.default_rng(12), 6, sharpness=1.0)
    step = markov_step(table)
    spec = [tf.TensorSpec([None], tf.int32)]

    @tf.function(input_signature=spec)
    def greedy(start):
        return greedy_decode(step, start, END, 6, initial_state(tf.shape(start)[0])).sample_id

    @tf.function(input_signature=spec)
    def beam(start):
        return beam_search(step, start, END, 6, initial_state(tf.shape(start)[0]), 3).ids

    start = np.full([3], START, np.int32)
    np.testing.assert_array_equal(
        greedy(start), run(greedy_decode, step, start, END, 6, initial_state(3)).sample_id
    )
    np.testing.assert_array_equal(
        beam(start), run(beam_search, step, start, END, 6, initial_state(3), 3).ids
    )


@pytest.mark.parametrize("algorithm", ["greedy", "sample", "beam"])
def test_steps_before_start_time_equal_forcing_them_inside_the_loop(algorithm):
    """A caller that computed the first steps itself (start_time, forced_ids) gets what the loop
    gives when its step forces those tokens (forced_logits): the same ids, logits, lengths and
    beam scores; the forced steps add nothing to a hypothesis' log-probability."""
    vocab, max_length, start = 6, 7, 3
    table = random_table(np.random.default_rng(13), vocab, sharpness=1.5)
    prefix = np.array([[3, 4, 2, 5], [5, 5, 3, 2]], np.int32)  # neither START nor END
    step = markov_step(table)

    def forcing(tokens, time, state):
        logits, state = step(tokens, time, state)
        rows = tf.repeat(prefix, tf.shape(tokens)[0] // 2, axis=0)  # beams: copies per example
        forced = forced_logits(tf.gather(rows, tf.minimum(time, 3), axis=1), vocab)
        return tf.where(time < start, forced, logits), state

    decode = {
        "greedy": greedy_decode,
        "sample": functools.partial(sample_decode, seed=5, softmax_temperature=2.0),
        "beam": functools.partial(beam_search, beam_width=3, length_penalty=0.6),
    }[algorithm]
    want = run(decode, forcing, [START] * 2, END, max_length, initial_state(2))
    got = run(
        decode, step, prefix[:, start - 1], END, max_length, initial_state(2),
        start_time=tf.constant(start), forced_ids=prefix,
    )  # fmt: skip
    if algorithm == "beam":
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_array_equal(got.lengths, want.lengths)
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6)
        assert (got.ids[:, :, :start] == prefix[:, None, :start]).all()
        return
    np.testing.assert_array_equal(got.sample_id, want.sample_id)
    np.testing.assert_array_equal(got.lengths, want.lengths)
    np.testing.assert_array_equal(got.logits, want.logits)
    assert (got.sample_id[:, :start] == prefix[:, :start]).all()
    assert (got.logits[:, :start].max(-1) == 0).all()


def test_start_time_arguments_are_checked():
    step = markov_step(random_table(np.random.default_rng(14), 5))
    with pytest.raises(ValueError, match="start_time needs the forced_ids"):
        greedy_decode(step, [START], END, 4, initial_state(1), start_time=2)
    with pytest.raises(ValueError, match="start_time must be in"):
        greedy_decode(step, [START], END, 4, initial_state(1), start_time=4, forced_ids=[[2] * 4])
    with pytest.raises(ValueError, match="forced_ids must be"):
        beam_search(step, [START], END, 4, initial_state(1), 2, start_time=1, forced_ids=[2])
