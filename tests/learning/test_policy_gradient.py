"""The policy-gradient trainer: policies, row sampling, baselines, the KL penalty, strategies.

The toy task has a known optimum: a tiny GPT-2-style language model continues prompts with six
tokens, and the reward is the fraction of them that are token 7 (an in-graph function of the
ids), so the best policy writes 7 six times, reward 1.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.learning import DecoderPolicy, PolicyGradient, group_advantages, row_choice, row_keys

VOCAB, BOS, EOS, TARGET, STEPS = 12, 1, 2, 7, 6
PROMPTS = {
    "prompt_ids": np.array([[BOS, 3, 4], [BOS, 5, 0], [BOS, 6, 3], [BOS, 0, 0]], np.int32),
    "prompt_length": np.array([3, 2, 3, 1], np.int32),
}

# One MirroredStrategy per device set and process (see texkit.run.distribution).
MIRRORED = {"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}


def tiny_lm(seed=0):
    keras.utils.set_random_seed(seed)
    lm = tx.modules.GPT2Decoder({
        "vocab_size": VOCAB, "dim": 16,
        "decoder": {"num_blocks": 1, "multihead_attention": {"num_heads": 2, "dropout_rate": 0.0},
                    "poswise_feedforward": {"dim": 32}, "position_embedder": {"position_size": 32},
                    "embedding_dropout": 0.0, "residual_dropout": 0.0},
    })  # fmt: skip
    lm(inputs=np.ones((1, 4), np.int32))
    return lm


def lm_policy(lm):
    return DecoderPolicy(lm, max_new_tokens=STEPS, end_token=EOS,
                         prompt=("prompt_ids", "prompt_length"))  # fmt: skip


def target_fraction(samples):
    mask = tf.sequence_mask(samples.lengths, samples.ids.shape[1], tf.float32)
    return tf.reduce_sum(tf.cast(tf.equal(samples.ids, TARGET), tf.float32) * mask, 1) / STEPS


REWARD = tx.rewards.FunctionReward(target_fraction, over="ids", python=False)


def dataset():
    return tf.data.Dataset.from_tensors(PROMPTS).repeat()


def train(hparams, steps=40, lr=3e-2, reference=None, optimizer=None, lm=None):
    lm = tiny_lm() if lm is None else lm
    model = PolicyGradient(lm_policy(lm), REWARD, hparams, reference=reference)
    model.compile(optimizer=optimizer or keras.optimizers.Adam(lr))
    history = model.fit(dataset(), steps_per_epoch=steps, epochs=1, verbose=0).history
    return model, history


def copy_of(lm):
    copy = tiny_lm(seed=1)
    copy.set_weights(lm.get_weights())
    return copy


@pytest.mark.parametrize(
    "baseline, samples",
    [("none", 4), ("moving_average", 4), ("self_critical", 2), ("group", 4)],
)
def test_reward_rises_to_the_optimum_with_each_baseline(baseline, samples):
    model, history = train({"num_samples": samples, "baseline": {"type": baseline}}, steps=40)
    rewards = history["reward"]
    start = float(np.mean(REWARD(_greedy_samples(tiny_lm()))))
    assert rewards[-1] > 0.45 > start  # the epoch's running mean, from about 1/12 at start
    greedy = model.predict(dataset().take(1), verbose=0)
    assert np.mean(greedy == TARGET) >= 0.9


def _greedy_samples(lm):
    policy = lm_policy(lm)
    rollout = policy.rollout(PROMPTS, 1, tx.learning.policies.greedy_choice)
    return tx.rewards.Samples(rollout.ids, rollout.lengths, None, {})


def test_group_advantages_center_and_scale_each_input_s_samples():
    rewards = np.random.default_rng(0).random(12).astype(np.float32)
    advantages = group_advantages(rewards, 4).numpy().reshape(3, 4)
    groups = rewards.astype(np.float64).reshape(3, 4)
    expected = (groups - groups.mean(1, keepdims=True)) / (groups.std(1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(advantages, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(advantages.sum(1), 0.0, atol=1e-5)
    centered = group_advantages(rewards, 4, scale=False).numpy().reshape(3, 4)
    np.testing.assert_allclose(centered, groups - groups.mean(1, keepdims=True), atol=1e-6)


def test_row_sampling_draws_exact_softmax_samples_that_belong_to_the_row():
    logits = tf.constant(np.log([[0.5, 0.3, 0.15, 0.05]] * 4000), tf.float32)
    keys = row_keys({"x": np.arange(4000)[:, None]}, 1)
    ids = row_choice(keys, seed=3)(logits, tf.constant(0)).numpy()
    frequencies = np.bincount(ids, minlength=4) / 4000
    # 4 standard errors of a proportion near 0.5 over 4,000 draws: 0.032.
    np.testing.assert_allclose(frequencies, [0.5, 0.3, 0.15, 0.05], atol=0.032)
    top2 = row_choice(keys, seed=3, top_k=2)(logits, tf.constant(0)).numpy()
    assert set(top2) == {0, 1}
    # A row's draws depend on its input, not on its place in the batch.
    swapped = row_choice(row_keys({"x": np.arange(4000)[::-1, None]}, 1), seed=3)
    np.testing.assert_array_equal(swapped(logits, tf.constant(0)).numpy()[::-1], ids)
    other_step = row_choice(keys, seed=3)(logits, tf.constant(1)).numpy()
    assert np.mean(other_step != ids) > 0.3


def test_rollouts_do_not_depend_on_the_batch_they_are_in():
    policy = lm_policy(tiny_lm())
    features = {k: tf.constant(v) for k, v in PROMPTS.items()}
    half = {k: v[2:] for k, v in features.items()}
    whole = policy.rollout(features, 3, row_choice(row_keys(features, 3), seed=9))
    part = policy.rollout(half, 3, row_choice(row_keys(half, 3), seed=9))
    np.testing.assert_array_equal(whole.ids.numpy()[6:], part.ids.numpy())
    np.testing.assert_array_equal(whole.lengths.numpy()[6:], part.lengths.numpy())


def test_policy_logits_are_the_logits_decoding_saw():
    lm = tiny_lm()
    policy = lm_policy(lm)
    rollout = policy.rollout(PROMPTS, 1, tx.learning.policies.greedy_choice)
    logits = policy.logits(PROMPTS, 1, rollout).numpy()
    outputs, _, lengths = lm(
        decoding_strategy="infer_greedy", context=PROMPTS["prompt_ids"],
        context_sequence_length=PROMPTS["prompt_length"], end_token=EOS, max_decoding_length=8,
    )  # fmt: skip
    for row, prompt_length in enumerate(PROMPTS["prompt_length"]):
        count = int(rollout.lengths[row])
        steps = slice(prompt_length - 1, prompt_length - 1 + count)
        np.testing.assert_allclose(logits[row, :count], outputs.logits.numpy()[row, steps],
                                   atol=1e-4)  # fmt: skip
        np.testing.assert_array_equal(rollout.ids[row, :count], outputs.sample_id[row, steps])


def test_a_seq2seq_policy_conditions_on_its_memory_and_initial_state():
    keras.utils.set_random_seed(0)
    embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": 8})
    decoder = tx.modules.AttentionRNNDecoder(VOCAB, hparams={
        "rnn_cell": {"type": "LSTMCell", "kwargs": {"units": 8}},
        "attention": {"type": "LuongAttention", "kwargs": {"units": 8}},
    })  # fmt: skip
    memory = tf.random.normal([2, 5, 8])
    state = [tf.random.normal([2, 8]), tf.random.normal([2, 8])]
    features = {"source_length": tf.constant([5, 3])}

    def condition(f, training):
        return {"memory": memory, "memory_sequence_length": f["source_length"],
                "initial_state": state}  # fmt: skip

    policy = DecoderPolicy(decoder, max_new_tokens=5, end_token=EOS, start_token=BOS,
                           embedding=embedder, condition=condition)  # fmt: skip
    rollout = policy.rollout(features, 2, tx.learning.policies.greedy_choice)
    logits = policy.logits(features, 2, rollout).numpy()
    outputs, _, _ = decoder(
        decoding_strategy="infer_greedy", start_tokens=[BOS, BOS], end_token=EOS,
        max_decoding_length=5, embedding=embedder, memory=memory,
        memory_sequence_length=[5, 3], initial_state=state,
    )  # fmt: skip
    for row in range(4):  # two samples per input, both greedy
        count = int(rollout.lengths[row])
        np.testing.assert_allclose(logits[row, :count], outputs.logits[row // 2, :count], atol=1e-4)


def test_the_kl_penalty_keeps_the_policy_near_its_reference():
    def kl_after(coefficient):
        lm = tiny_lm()
        reference = lm_policy(copy_of(lm))
        hparams = {"num_samples": 4, "kl": {"coefficient": coefficient}}
        model, history = train(hparams, steps=30, reference=reference, lm=lm)
        # Measured apart from the trainer: the exact KL of the trained policy's next-token
        # distributions from the reference's, summed over its greedy sequences' tokens.
        rollout = model.policy.rollout(PROMPTS, 1, tx.learning.policies.greedy_choice)
        p = tf.nn.log_softmax(model.policy.logits(PROMPTS, 1, rollout)).numpy().astype(np.float64)
        q = tf.nn.log_softmax(reference.logits(PROMPTS, 1, rollout)).numpy().astype(np.float64)
        kl = (np.exp(p) * (p - q)).sum(-1)
        mask = np.arange(STEPS)[None, :] < rollout.lengths.numpy()[:, None]
        return float((kl * mask).sum(1).mean()), history

    free, free_history = kl_after(0.0)
    held, held_history = kl_after(2.0)
    assert free > 5.0 and held < 2.0, (free, held)
    assert free_history["kl"][-1] == 0.0 and held_history["kl"][-1] > 0.0
    assert free_history["reward"][-1] > held_history["reward"][-1]


def test_ppo_epochs_reuse_samples_and_the_mle_term_is_the_cross_entropy():
    model, history = train({"num_samples": 4, "ppo": {"epochs": 3}}, steps=12)
    assert history["reward"][-1] > 0.3
    assert int(model.optimizer.iterations) == 36  # three updates per batch
    # Rewards equal within each group: no policy gradient, the loss is the MLE term alone.
    flat = tx.rewards.FunctionReward(lambda s: tf.zeros(tf.shape(s.lengths)), over="ids",
                                     python=False)  # fmt: skip
    lm = tiny_lm()
    targets = {**PROMPTS, "target_ids": np.array([[7, 8, 2, 0, 0, 0]] * 4, np.int32),
               "target_length": np.array([3, 3, 3, 3], np.int32)}  # fmt: skip
    model = PolicyGradient(lm_policy(lm), flat, {"mle": {"weight": 1.0}})
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    logged = model.train_on_batch(targets, return_dict=True)["loss"]
    policy = lm_policy(lm)
    rollout = tx.learning.Rollout(targets["target_ids"], targets["target_length"],
                                  PROMPTS["prompt_ids"], PROMPTS["prompt_length"])  # fmt: skip
    expected = tx.losses.sequence_sparse_softmax_cross_entropy(
        targets["target_ids"], policy.logits(targets, 1, rollout), targets["target_length"]
    )
    np.testing.assert_allclose(logged, float(expected), rtol=1e-5)


def test_mirrored_and_default_strategies_train_the_same_weights():
    def run(strategy):
        with strategy.scope():
            lm = tiny_lm()
            model = PolicyGradient(lm_policy(lm), REWARD, {"num_samples": 2})
            model.compile(optimizer=keras.optimizers.SGD(0.5))
        history = model.fit(dataset(), steps_per_epoch=4, epochs=1, verbose=0).history
        return [w.numpy() for w in lm.weights], history

    start = [w.numpy() for w in tiny_lm().weights]
    default, default_history = run(tf.distribute.get_strategy())
    mirrored, mirrored_history = run(tx.run.strategy_from_hparams(MIRRORED))
    moved = max(float(np.abs(a - b).max()) for a, b in zip(start, default, strict=True))
    gap = max(float(np.abs(a - b).max()) for a, b in zip(default, mirrored, strict=True))
    assert moved > 1e-2 and gap < 1e-4 * max(moved, 1.0), (moved, gap)
    np.testing.assert_allclose(default_history["reward"], mirrored_history["reward"], rtol=1e-5)


def test_a_python_reward_runs_on_the_host_under_mirrored():
    calls = []

    def count_sevens(texts, features):
        calls.append(len(texts))
        return [text.split().count("7") / STEPS for text in texts]

    def detokenize(ids, lengths):
        words = tf.strings.as_string(ids)
        return tf.strings.reduce_join(tf.RaggedTensor.from_tensor(words, lengths=lengths), 1,
                                      separator=" ")  # fmt: skip

    strategy = tx.run.strategy_from_hparams(MIRRORED)
    with strategy.scope():
        lm = tiny_lm()
        policy = DecoderPolicy(lm, max_new_tokens=STEPS, end_token=EOS, detokenize=detokenize,
                               prompt=("prompt_ids", "prompt_length"))  # fmt: skip
        model = PolicyGradient(policy, count_sevens, {"num_samples": 2})
        model.compile(optimizer=keras.optimizers.Adam(3e-2))
    history = model.fit(dataset(), steps_per_epoch=3, epochs=1, verbose=0).history
    assert calls and set(calls) == {4}  # each replica scores its 2 inputs x 2 samples
    assert 0.0 <= history["reward"][-1] <= 1.0
    with pytest.raises(ValueError, match="runs Python on the host"):
        model.compile(optimizer="sgd", jit_compile=True)


def test_bad_settings_and_rewards_are_refused_naming_the_argument():
    lm = tiny_lm()
    with pytest.raises(ValueError, match="num_samples must be a positive int, got 0"):
        PolicyGradient(lm_policy(lm), REWARD, {"num_samples": 0})
    with pytest.raises(ValueError, match="group baseline needs at least 2"):
        PolicyGradient(lm_policy(lm), REWARD, {"num_samples": 1})
    with pytest.raises(ValueError, match="kl.coefficient > 0 needs a reference"):
        PolicyGradient(lm_policy(lm), REWARD, {"kl": {"coefficient": 0.1}})
    other = tx.modules.GPT2Decoder(
        {
            "vocab_size": VOCAB + 3,
            "dim": 16,
            "decoder": {
                "num_blocks": 1,
                "multihead_attention": {"num_heads": 2},
                "poswise_feedforward": {"dim": 32},
                "position_embedder": {"position_size": 32},
            },
        }
    )
    with pytest.raises(
        ValueError, match="reference: its vocabulary has 15 tokens, the policy's 12"
    ):
        PolicyGradient(lm_policy(lm), REWARD, {"kl": {"coefficient": 0.1}},
                       reference=lm_policy(other))  # fmt: skip
    with pytest.raises(ValueError, match="shares its model"):
        PolicyGradient(lm_policy(lm), REWARD, reference=lm_policy(lm))

    def train_with(reward_fn):
        reward = tx.rewards.FunctionReward(reward_fn, over="ids", python=False, name="mine")
        model = PolicyGradient(lm_policy(lm), reward, {"num_samples": 2})
        model.compile(optimizer="sgd")
        model.fit(dataset(), steps_per_epoch=1, epochs=1, verbose=0)

    with pytest.raises(ValueError, match="mine"):
        train_with(lambda s: tf.zeros([tf.shape(s.ids)[0], 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="mine"):
        train_with(lambda s: tf.fill(tf.shape(s.lengths), np.nan))
    with pytest.raises(KeyError, match="prompt: no feature 'prompt_ids'"):
        lm_policy(lm).rollout({"other": np.zeros((2, 3))}, 1, tx.learning.policies.greedy_choice)


def test_the_mle_term_takes_targets_of_any_width():
    lm = tiny_lm()
    model = PolicyGradient(lm_policy(lm), REWARD, {"mle": {"weight": 1.0}})
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    batch = {**PROMPTS, "target_ids": np.array([[7, 2]] * 4, np.int32),
             "target_length": np.array([2, 1, 2, 2], np.int32)}  # fmt: skip
    signature = {k: tf.TensorSpec([4, None] if k == "target_ids" else v.shape, tf.int32)
                 for k, v in batch.items()}  # fmt: skip
    ragged = tf.data.Dataset.from_generator(lambda: iter([batch]), output_signature=signature)
    assert ragged.element_spec["target_ids"].shape[1] is None
    logged = model.evaluate(ragged, verbose=0, return_dict=True)
    assert set(logged) >= {"reward"}
    history = model.fit(ragged.repeat(), steps_per_epoch=1, epochs=1, verbose=0).history
    assert np.isfinite(history["loss"][-1])


def _llama():
    lm = tx.modules.LlamaDecoder({
        "vocab_size": VOCAB, "dim": 16, "num_blocks": 1, "feed_forward": {"dim": 24},
        "attention": {"num_heads": 4, "num_kv_heads": 2}, "max_position_embeddings": 32,
    })  # fmt: skip
    return lm_policy(lm), PROMPTS, {}


def _transformer():
    embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": 8})
    decoder = tx.modules.TransformerDecoder(output_layer=embedder, hparams={
        "dim": 8, "num_blocks": 1, "multihead_attention": {"num_heads": 2, "dropout_rate": 0.0},
        "poswise_feedforward": {"dim": 16}, "embedding_dropout": 0.0, "residual_dropout": 0.0,
    })  # fmt: skip
    memory = tf.random.stateless_normal([4, 5, 8], seed=[1, 2])
    return _conditioned(decoder, embedder, {"memory": memory})


def _t5():
    t5 = tx.modules.T5EncoderDecoder({
        "vocab_size": VOCAB, "d_model": 8, "d_kv": 4, "d_ff": 16, "num_layers": 1,
        "num_heads": 2, "dropout_rate": 0.0,
    })  # fmt: skip
    source = np.array([[3, 4, 5, 6, 2], [5, 6, 2, 0, 0], [7, 2, 0, 0, 0], [8, 9, 2, 0, 0]])
    memory = t5.encode(source, [5, 3, 2, 3])
    return _conditioned(t5.decoder, None, {"memory": memory}, start=0, model=t5)


def _conditioned(decoder, embedder, given, start=BOS, model=None):
    lengths = tf.constant([5, 3, 2, 3])
    features = {"source_length": lengths}

    def condition(f, training):
        return {**given, "memory_sequence_length": f["source_length"]}

    policy = DecoderPolicy(decoder, max_new_tokens=STEPS, end_token=EOS, start_token=start,
                           embedding=embedder, condition=condition, model=model)  # fmt: skip
    call = {"start_tokens": [start] * 4, "embedding": embedder, **condition(features, False)}
    return policy, features, call


@pytest.mark.parametrize("make", [_llama, _transformer, _t5], ids=["llama", "transformer", "t5"])
def test_every_kind_of_decoder_is_a_policy_whose_logits_are_those_of_decoding(make):
    keras.utils.set_random_seed(0)
    policy, features, call = make()
    rollout = policy.rollout(features, 2, tx.learning.policies.greedy_choice)
    logits = policy.logits(features, 2, rollout).numpy()
    if call:
        outputs, _, _ = policy.decoder(decoding_strategy="infer_greedy", end_token=EOS,
                                       max_decoding_length=STEPS, **call)  # fmt: skip
        starts = [0] * 4
    else:  # prompts
        outputs, _, _ = policy.decoder(
            decoding_strategy="infer_greedy", context=PROMPTS["prompt_ids"],
            context_sequence_length=PROMPTS["prompt_length"], end_token=EOS,
            max_decoding_length=2 + STEPS,
        )  # fmt: skip
        starts = PROMPTS["prompt_length"] - 1
    for row in range(8):  # two (greedy, equal) samples per input
        count, start = int(rollout.lengths[row]), starts[row // 2]
        expected = outputs.logits.numpy()[row // 2, start : start + count]
        np.testing.assert_allclose(logits[row, :count], expected, atol=1e-4)
        np.testing.assert_array_equal(
            rollout.ids[row, :count], outputs.sample_id[row // 2, start : start + count]
        )
