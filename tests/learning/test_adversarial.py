"""Adversarial training: TextDiscriminator, GumbelSoftmaxGAN and SeqGAN (texkit.learning)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from tests.harness import check_module_contract
from texkit.hparams import HParamsError
from texkit.learning import (
    GumbelSoftmaxGAN,
    SeqGAN,
    TextDiscriminator,
    prefix_discriminator_loss,
    seqgan_advantages,
    step_rewards,
)

VOCAB, BOS, EOS = 12, 1, 2
RNN = {"embedder": {"dim": 6}, "classifier": {"rnn_cell": {"kwargs": {"units": 5}}}}
CONV = {
    "embedder": {"dim": 6},
    "classifier_type": "Conv1DClassifier",
    "classifier": {"filters": 4, "kernel_sizes": [2], "num_dense_layers": 0},
}
IDS = np.array([[4, 5, 6, 2, 0], [7, 8, 2, 0, 0], [3, 3, 3, 3, 3]], np.int32)
LENGTHS = np.array([4, 3, 5], np.int32)


def features(ids=IDS, lengths=LENGTHS):
    """Text batches as MonoTextData gives them: <BOS> first, length counting it."""
    bos = np.full((len(ids), 1), BOS, np.int32)
    return {"text_ids": np.concatenate([bos, ids], 1), "length": lengths + 1}


def make_gan(cls, discriminator_vocab=VOCAB, generator_lr=1e-2, discriminator_lr=1e-2, **kwargs):
    embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": 6})
    decoder = tx.modules.BasicRNNDecoder(VOCAB, hparams={"rnn_cell": {"kwargs": {"units": 6}}})
    discriminator = TextDiscriminator(discriminator_vocab, RNN)
    model = cls(
        embedder, decoder, discriminator, keras.optimizers.Adam(discriminator_lr),
        bos_token_id=BOS, eos_token_id=EOS, max_decoding_length=5, seed=7, **kwargs,
    )  # fmt: skip
    model.compile(optimizer=keras.optimizers.Adam(generator_lr), jit_compile=False)
    return model


# -- the discriminator ---------------------------------------------------------------------------


@pytest.mark.parametrize("hparams", [RNN, CONV], ids=["rnn", "conv"])
def test_discriminator_contract(tmp_path, hparams):
    check_module_contract(
        lambda **kw: TextDiscriminator(VOCAB, hparams, **kw),
        {"inputs": IDS, "sequence_length": LENGTHS},
        tmp_path,
        sequence_inputs={"inputs": 1},
        float32_outputs=True,
    )


@pytest.mark.parametrize("hparams", [RNN, CONV], ids=["rnn", "conv"])
def test_discriminator_is_its_embedding_and_classifier(hparams):
    discriminator = TextDiscriminator(VOCAB, hparams)
    logits = discriminator(IDS, LENGTHS)
    assert isinstance(discriminator.classifier, tx.modules.UnidirectionalRNNClassifier) == (
        hparams is RNN
    )
    table = discriminator.embedder.embedding.numpy()
    expected, _ = discriminator.classifier(table[IDS], sequence_length=LENGTHS)
    np.testing.assert_allclose(logits.numpy(), expected.numpy(), atol=1e-6)
    # Distributions over the vocabulary are embedded as y E: a one-hot is its token.
    one_hot = np.eye(VOCAB, dtype=np.float32)[IDS]
    np.testing.assert_allclose(discriminator(one_hot, LENGTHS).numpy(), logits.numpy(), atol=1e-6)
    soft = np.random.default_rng(0).dirichlet(np.ones(VOCAB), size=IDS.shape).astype(np.float32)
    expected, _ = discriminator.classifier(soft @ table, sequence_length=LENGTHS)
    np.testing.assert_allclose(discriminator(soft, LENGTHS).numpy(), expected.numpy(), atol=1e-5)


@pytest.mark.parametrize("hparams", [RNN, CONV], ids=["rnn", "conv"])
def test_prefix_logits_are_the_logits_of_each_prefix(hparams):
    discriminator = TextDiscriminator(VOCAB, hparams)
    prefix = discriminator.prefix_logits(IDS, LENGTHS).numpy()
    assert prefix.shape == IDS.shape
    for t in range(IDS.shape[1]):
        cut = np.minimum(LENGTHS, t + 1)
        expected = discriminator(IDS[:, : t + 1], cut).numpy()
        np.testing.assert_allclose(prefix[:, t], expected, atol=1e-5)


def test_discriminator_bad_input_errors():
    with pytest.raises(HParamsError, match="classifier_type") as caught:
        TextDiscriminator(VOCAB, {"classifier_type": "BERTClassifier"})
    assert "Conv1DClassifier" in str(caught.value)
    with pytest.raises(HParamsError, match="classifier.num_classes"):
        TextDiscriminator(VOCAB, {"classifier": {"num_classes": 2}})
    with pytest.raises(ValueError, match="vocab_size"):
        TextDiscriminator(0)
    discriminator = TextDiscriminator(VOCAB, RNN)
    with pytest.raises(ValueError, match=rf"\[batch, time, {VOCAB}\].*\(3, 5, 9\)"):
        discriminator(np.zeros((3, 5, 9), np.float32), LENGTHS)


def test_a_discriminator_of_another_vocabulary_is_refused_naming_both_sizes():
    for cls in (SeqGAN, GumbelSoftmaxGAN):
        with pytest.raises(ValueError, match=rf"{VOCAB + 3} tokens.*generator's has {VOCAB}"):
            make_gan(cls, discriminator_vocab=VOCAB + 3)
    embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": 6})
    decoder = tx.modules.BasicRNNDecoder(VOCAB + 1)
    with pytest.raises(ValueError, match=rf"predicts {VOCAB + 1} tokens.*embeds {VOCAB}"):
        SeqGAN(embedder, decoder, TextDiscriminator(VOCAB), keras.optimizers.Adam(),
               bos_token_id=BOS, eos_token_id=EOS, max_decoding_length=4)  # fmt: skip
    with pytest.raises(ValueError, match="eos_token_id"):
        SeqGAN(
            tx.modules.WordEmbedder(vocab_size=VOCAB), tx.modules.BasicRNNDecoder(VOCAB),
            TextDiscriminator(VOCAB), keras.optimizers.Adam(), bos_token_id=BOS,
            eos_token_id=VOCAB, max_decoding_length=4,
        )  # fmt: skip
    with pytest.raises(ValueError, match="reward"):
        make_gan(SeqGAN, reward="score")
    with pytest.raises(ValueError, match="mode"):
        make_gan(GumbelSoftmaxGAN, mode="max_fake")


# -- straight-through Gumbel-softmax -------------------------------------------------------------


def test_straight_through_gradients_reach_every_generator_weight():
    model = make_gan(GumbelSoftmaxGAN)
    real = model.real_sequences(features())
    with tf.GradientTape() as tape:
        soft, lengths = model.soft_sample(3)
        g_loss, _ = tx.losses.binary_adversarial_losses(
            real, (soft, lengths), model.discriminate, "max_real"
        )
    # The forward pass fed one-hots: the samples are exact tokens.
    values = soft.numpy()
    assert np.all((values == 0) | (values == 1)) and np.all(values.sum(-1) <= 1)
    gradients = tape.gradient(g_loss, model.generator_variables)
    for variable, gradient in zip(model.generator_variables, gradients, strict=True):
        assert gradient is not None, variable.path
        assert float(tf.reduce_max(tf.abs(tf.convert_to_tensor(gradient)))) > 0, variable.path


def test_a_gumbel_step_updates_both_and_the_discriminator_learns_separable_text():
    # Real text: "3 3 3 3 <EOS>"; the untrained generator's samples are anything else.
    model = make_gan(GumbelSoftmaxGAN, generator_lr=1e-4, discriminator_lr=3e-2)
    real = features(np.array([[3, 3, 3, 3, 2]] * 8, np.int32), np.full(8, 5, np.int32))
    before = [v.numpy().copy() for v in model.generator_variables]
    history = model.fit(
        tf.data.Dataset.from_tensors(real).repeat(),
        steps_per_epoch=30,
        epochs=1,
        verbose=0,
        shuffle=False,
    )
    after = [v.numpy() for v in model.generator_variables]
    assert all(not np.array_equal(b, a) for b, a in zip(before, after, strict=True))
    real_logits = model.discriminator(real["text_ids"][:, 1:], real["length"] - 1).numpy()
    fake, lengths = model.soft_sample(8)
    fake_logits = model.discriminator(fake, lengths).numpy()
    assert real_logits.min() > 0 > fake_logits.max()
    # The last step's loss (after the discriminator learnt) is far below the untrained 2 log 2.
    assert history.history["d_loss"][-1] < 0.5 * 2 * np.log(2)


# -- SeqGAN --------------------------------------------------------------------------------------


def numpy_advantages(rewards, baseline, lengths, discount):
    """A_t = sum_{t <= s < length} discount^(s - t) (r_s - b_s), step by step in float64, and
    the sum over positions of the mean squared gap of the sequences that reach them."""
    rewards, baseline = rewards.astype(np.float64), baseline.astype(np.float64)
    advantages = np.zeros_like(rewards)
    for row, length in enumerate(lengths):
        for t in range(length):
            advantages[row, t] = sum(
                discount ** (s - t) * (rewards[row, s] - baseline[s]) for s in range(t, length)
            )
    loss = 0.0
    for t in range(rewards.shape[1]):
        gaps = [
            (rewards[row, t] - baseline[t]) ** 2 for row in range(len(lengths)) if t < lengths[row]
        ]
        loss += np.mean(gaps) if gaps else 0.0
    return advantages, loss


@pytest.mark.parametrize("discount", [1.0, 0.8])
def test_seqgan_advantages_and_baseline_loss_equal_their_formulas(discount):
    rng = np.random.default_rng(3)
    rewards = rng.normal(size=(3, 5)).astype(np.float32)
    baseline = rng.normal(size=7).astype(np.float32)
    advantages, baseline_loss = seqgan_advantages(rewards, baseline, LENGTHS, discount)
    expected, expected_loss = numpy_advantages(rewards, baseline, LENGTHS, discount)
    np.testing.assert_allclose(advantages.numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(baseline_loss), expected_loss, rtol=1e-5)
    # Its gradient moves each position's baseline toward the mean reward there.
    variable = tf.Variable(baseline)
    with tf.GradientTape() as tape:
        _, loss = seqgan_advantages(rewards, variable, LENGTHS, discount)
    gradient = tape.gradient(loss, variable).numpy()
    valid = np.arange(5)[None, :] < LENGTHS[:, None]
    expected_gradient = np.zeros(7)
    expected_gradient[:5] = (-2 * (rewards - baseline[:5]) * valid).sum(0) / valid.sum(0)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-5, atol=1e-6)


def test_step_rewards_equal_their_formulas():
    logits = np.random.default_rng(4).normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(step_rewards(logits, "logit").numpy(), logits)
    probability = 1 / (1 + np.exp(-logits.astype(np.float64)))
    np.testing.assert_allclose(step_rewards(logits, "probability").numpy(), probability, rtol=1e-6)
    np.testing.assert_allclose(
        step_rewards(logits, "log_probability").numpy(), np.log(probability), rtol=1e-5
    )
    with pytest.raises(ValueError, match="reward must be one of"):
        step_rewards(logits, "logits")


def test_prefix_discriminator_loss_is_the_masked_sum_of_sigmoid_cross_entropies():
    discriminator = TextDiscriminator(VOCAB, RNN)
    fake_ids, fake_lengths = IDS[::-1].copy(), np.array([2, 5, 1], np.int32)
    loss = prefix_discriminator_loss(discriminator, (IDS, LENGTHS), (fake_ids, fake_lengths))
    expected = 0.0
    for ids, lengths, label in ((IDS, LENGTHS, 1), (fake_ids, fake_lengths, 0)):
        logits = discriminator.prefix_logits(ids, lengths).numpy().astype(np.float64)
        probability = 1 / (1 + np.exp(-logits))
        entropy = -np.log(probability if label else 1 - probability)
        valid = np.arange(ids.shape[1])[None, :] < lengths[:, None]
        expected += (entropy * valid).sum() / len(ids)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_a_seqgan_step_rewards_each_step_and_fits_the_baseline():
    model = make_gan(SeqGAN, reward="probability")
    model.fit(tf.data.Dataset.from_tensors(features()), epochs=1, verbose=0, shuffle=False)
    baseline = model.baseline.numpy()
    # One gradient-descent step from 0 moves each position reached by a sample to
    # 2 * 0.05 * its mean reward, a probability: into (0, 0.1).
    assert baseline[0] > 0 and np.all(baseline >= 0) and np.all(baseline < 0.1)
    assert int(model.baseline_optimizer.iterations.numpy()) == 1
    ids, lengths = model.sample(4)
    assert ids.shape == (4, 5)
    logits = model.sequence_logits(ids, lengths)
    assert logits.shape == (4, 5, VOCAB)


def test_seqgan_sampling_logits_equal_the_teacher_forced_rescoring():
    model = make_gan(SeqGAN)
    seed = tf.constant([5, 9], tf.int32)
    outputs, _, lengths = model.decoder(
        decoding_strategy="infer_sample", embedding=model.embedder,
        start_tokens=model.start_tokens(3), end_token=EOS, max_decoding_length=5, seed=seed,
    )  # fmt: skip
    rescored = model.sequence_logits(outputs.sample_id, lengths).numpy()
    valid = np.arange(5)[None, :] < lengths.numpy()[:, None]
    np.testing.assert_allclose(rescored[valid], outputs.logits.numpy()[valid], atol=1e-5)


# -- the run: tx.run.Trainer, evaluation and resume ----------------------------------------------


def _trainer(cls, model_dir, train_steps):
    data = tx.run.Data(
        train=tf.data.Dataset.from_tensor_slices(features()).batch(2, drop_remainder=True)
        .repeat(),
        eval=tf.data.Dataset.from_tensor_slices(features()).batch(3),
    )  # fmt: skip

    def build():
        embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": 6})
        decoder = tx.modules.BasicRNNDecoder(VOCAB, hparams={"rnn_cell": {"kwargs": {"units": 6}}})
        return cls(
            embedder, decoder, TextDiscriminator(VOCAB, RNN), keras.optimizers.Adam(1e-2),
            bos_token_id=BOS, eos_token_id=EOS, max_decoding_length=5, seed=1,
        )  # fmt: skip

    hparams = {
        "optimization": {"optimizer": {"type": "Adam"}, "learning_rate": 1e-2},
        "run": {
            "model_dir": str(model_dir), "train_steps": train_steps, "checkpoint_every_steps": 2,
            "eval_every_steps": 0, "jit_compile": False, "tensorboard": False, "verbose": 0,
            "seed": 0,
        },
    }  # fmt: skip
    return tx.run.Trainer(build, data, hparams)


def test_a_resumed_run_goes_on_as_an_uninterrupted_one(tmp_path):
    # SeqGAN holds the most state: both optimizers, the baseline and the sampling seed.
    cls = SeqGAN
    whole = _trainer(cls, tmp_path / "whole", 4)
    whole.train()
    _trainer(cls, tmp_path / "split", 2).train()
    resumed = _trainer(cls, tmp_path / "split", 4)
    resumed.train()
    assert resumed.step == 4
    for a, b in zip(whole.model.weights, resumed.model.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    # Both optimizers' states are restored, the discriminator's included.
    moments = resumed.model.discriminator_optimizer.variables
    for a, b in zip(whole.model.discriminator_optimizer.variables, moments, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    assert int(resumed.model.discriminator_optimizer.iterations.numpy()) == 4
    # evaluate reports the generator's NLL per token of the held-out text.
    nll = resumed.evaluate("eval")["loss"]
    logits = resumed.model(features(), training=False).numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = IDS
    picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    valid = np.arange(5)[None, :] < LENGTHS[:, None]
    np.testing.assert_allclose(nll, -(picked * valid).sum() / valid.sum(), rtol=1e-5)


def test_each_stage_updates_only_its_part():
    model = make_gan(SeqGAN)
    batch = tf.data.Dataset.from_tensors(features())
    generator, discriminator = model.generator_variables, model.discriminator.trainable_variables

    def snapshot():
        return [v.numpy().copy() for v in generator], [v.numpy().copy() for v in discriminator]

    for stage, moves_generator, moves_discriminator in (
        ("mle", True, False),
        ("discriminator", False, True),
    ):
        model.stage = stage
        before = snapshot()
        history = model.fit(batch, epochs=1, verbose=0, shuffle=False)
        after = snapshot()
        for part, moved in zip((0, 1), (moves_generator, moves_discriminator), strict=True):
            pairs = zip(before[part], after[part], strict=True)
            changed = [not np.array_equal(b, a) for b, a in pairs]
            assert all(changed) if moved else not any(changed), (stage, part)
        assert np.isfinite(history.history["loss"][0]) and history.history["loss"][0] > 0
    with pytest.raises(ValueError, match="stage must be one of"):
        model.stage = "pretrain"
    assert model.stage == "discriminator"


def test_under_mirrored_the_mle_stage_equals_one_device_and_adversarial_steps_run():
    mirrored = tx.run.strategy_from_hparams({"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]})
    ids = np.array([[4, 5, 6, 2, 0], [7, 8, 2, 0, 0], [3, 9, 2, 0, 0], [5, 5, 5, 2, 0]], np.int32)
    batch = tf.data.Dataset.from_tensors(features(ids, np.array([4, 3, 3, 4], np.int32)))

    def run(strategy, cls, stage):
        with strategy.scope():
            keras.utils.set_random_seed(3)
            model = make_gan(cls)
            model.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=False)
            model.stage = stage
            model(next(iter(batch)))  # built in the strategy's scope, as the Trainer does
        history = model.fit(batch.repeat(), steps_per_epoch=3, epochs=1, verbose=0).history
        return model, history

    one, _ = run(tf.distribute.get_strategy(), SeqGAN, "mle")
    two, _ = run(mirrored, SeqGAN, "mle")  # each replica: half the rows, 7 tokens each
    for a, b in zip(one.generator_variables, two.generator_variables, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=a.path)
    for cls in (SeqGAN, GumbelSoftmaxGAN):
        _, history = run(mirrored, cls, "adversarial")
        assert all(np.isfinite(v[-1]) for v in history.values()), history
