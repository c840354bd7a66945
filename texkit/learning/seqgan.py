"""SeqGAN: a generator trained by policy gradient on a discriminator's per-step rewards.

The form of Texar's SeqGAN example (Yu et al., 2017, https://arxiv.org/abs/1609.05473, without
its Monte Carlo roll-outs): each step of a generated sequence ``x`` is rewarded by the
discriminator's judgement of the prefix ending there, ``r_t = f(D(x_1..x_t))`` (``f`` the logit
as in Texar, or its probability or log-probability); a learned per-position baseline ``b_t``
is subtracted, and the advantage of step ``t`` is the discounted sum of what follows,

    A_t = sum_{s >= t, s < length} discount^(s - t) (r_s - b_s)

(``tx.losses.discount_reward`` of ``r - b`` with ``tensor_rank=2``). The generator's loss is
``tx.losses.pg_loss_with_logits(x, logits, A, batched=True, sequence_length=length)`` (each
sequence's sum over its steps of ``-A_t log p(x_t | x_<t)``, averaged over the batch) and the
baseline's the sum over positions of the mean over the samples that reach position ``t`` of
``(r_t - b_t)^2``: its least-squares fit, the expected reward at each position. The baseline
has an optimizer of its own (plain gradient descent, ``baseline_learning_rate``), so that it
follows the rewards at its own pace whatever the generator's learning rate: a step moves
``b_t`` by ``2 baseline_learning_rate`` times the mean gap ``r_t - b_t``. Texar's example
fitted its baseline with the generator's optimizer by minimizing ``-mean |r - b|``, which pushes
the baseline away from the rewards. The discriminator is trained on every prefix, real ones
labeled 1 and generated ones 0, with ``tx.losses.sequence_sigmoid_cross_entropy`` (each
sequence's sum over its prefixes, averaged over the batch, real plus generated), as in Texar.

A training step samples a batch of sequences (``infer_sample``, without dropout), updates the
discriminator on them and the real batch, then scores them with the updated discriminator and
updates the generator; the log-probabilities are those of a teacher-forced pass over the samples,
which equals the sampling pass's.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from texkit.core.attention import sequence_mask
from texkit.learning.adversarial import AdversarialLanguageModel
from texkit.learning.discriminator import TextDiscriminator
from texkit.losses import discount_reward, pg_loss_with_logits
from texkit.losses.sequence_losses import sequence_sigmoid_cross_entropy

__all__ = ["SeqGAN", "prefix_discriminator_loss", "seqgan_advantages", "step_rewards"]

REWARDS = ("logit", "probability", "log_probability")


def step_rewards(prefix_logits: Any, reward: str = "logit") -> Any:
    """Per-step rewards from the discriminator's prefix logits ``[batch, time]``: the logits
    (``"logit"``, Texar's), ``sigmoid`` of them (``"probability"``, the SeqGAN paper's) or
    ``log sigmoid`` (``"log_probability"``)."""
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
    prefix_logits = tf.cast(prefix_logits, tf.float32)
    if reward == "probability":
        return tf.sigmoid(prefix_logits)
    if reward == "log_probability":
        return tf.math.log_sigmoid(prefix_logits)
    return prefix_logits


def seqgan_advantages(
    rewards: Any, baseline: Any, sequence_length: Any, discount: float = 1.0
) -> tuple[Any, Any]:
    """The advantages of the sampled steps and the baseline's loss.

    Args:
        rewards: ``[batch, time]`` per-step rewards (no gradient flows into them).
        baseline: ``[>= time]`` the learned baseline of each position.
        sequence_length: ``[batch]`` int valid lengths.
        discount: the discount of later steps' rewards.

    Returns:
        ``(advantages, baseline_loss)``: ``[batch, time]`` float32 ``A_t`` (zero past each
        length; no gradient), and the sum over positions ``t`` of the mean of ``(r_t - b_t)^2``
        over the sequences valid at ``t`` (a position no sequence reaches adds 0).
    """
    rewards = tf.stop_gradient(tf.cast(rewards, tf.float32))
    time = tf.shape(rewards)[1]
    baseline = tf.cast(baseline, tf.float32)
    difference = rewards - baseline[None, :time]
    valid = tf.cast(sequence_mask(sequence_length, time), tf.float32)
    squares = tf.reduce_sum(valid * tf.square(difference), axis=0)
    baseline_loss = tf.reduce_sum(squares / tf.maximum(tf.reduce_sum(valid, axis=0), 1.0))
    advantages = discount_reward(
        tf.stop_gradient(difference), sequence_length=sequence_length, discount=discount,
        tensor_rank=2,
    )  # fmt: skip
    return tf.stop_gradient(advantages), baseline_loss


def prefix_discriminator_loss(
    discriminator: TextDiscriminator, real: tuple, fake: tuple, training: Any = True
) -> Any:
    """The discriminator's loss on every prefix: ``(ids, lengths)`` pairs ``real`` (label 1)
    and ``fake`` (label 0); each sequence's sigmoid cross entropies summed over its prefixes,
    averaged over the batch, real plus fake."""
    total = tf.zeros([], tf.float32)
    for (ids, length), label in ((real, 1.0), (fake, 0.0)):
        logits = discriminator.prefix_logits(ids, length, training=training)
        total += sequence_sigmoid_cross_entropy(
            labels=tf.fill(tf.shape(logits), label), logits=logits, sequence_length=length
        )
    return total


class SeqGAN(AdversarialLanguageModel):
    """A generator trained by policy gradient on a discriminator's per-step rewards minus a
    learned baseline (see :mod:`texkit.learning.seqgan`).

    Args:
        embedder, decoder, discriminator, discriminator_optimizer: as in
            :class:`~texkit.learning.AdversarialLanguageModel`.
        reward: ``"logit"`` (Texar's), ``"probability"`` or ``"log_probability"`` of the
            discriminator's prefix judgement.
        discount: the discount of later steps' rewards in the advantages.
        baseline_learning_rate: the learning rate of the baseline's gradient descent.
        softmax_temperature, top_k, top_p: the generator's sampling (``infer_sample``).
        **kwargs: the other arguments of
            :class:`~texkit.learning.AdversarialLanguageModel` (``bos_token_id``,
            ``eos_token_id``, ``max_decoding_length``, ``mle_weight``, ``seed``, ``name``).

    The model's ``baseline`` is a ``[max_decoding_length]`` weight, trained by its own
    ``baseline_optimizer`` (``keras.optimizers.SGD(baseline_learning_rate)``).
    A step's logs: ``loss`` (the generator's total), ``pg_loss``, ``baseline_loss``, ``d_loss``,
    ``reward`` (the mean reward of the valid steps) and ``length`` (the samples' mean).
    """

    def __init__(
        self,
        embedder: Any,
        decoder: Any,
        discriminator: TextDiscriminator,
        discriminator_optimizer: Any,
        *,
        reward: str = "logit",
        discount: float = 1.0,
        baseline_learning_rate: float = 0.05,
        softmax_temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        **kwargs: Any,
    ):
        step_rewards(tf.zeros([1, 1]), reward)  # checks the name
        if not isinstance(discount, (int, float)) or not 0.0 <= discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {discount!r}")
        if not isinstance(baseline_learning_rate, (int, float)) or baseline_learning_rate <= 0:
            raise ValueError(
                f"baseline_learning_rate must be positive, got {baseline_learning_rate!r}"
            )
        super().__init__(embedder, decoder, discriminator, discriminator_optimizer, **kwargs)
        self.reward = reward
        self.discount = float(discount)
        self.sampling = {"softmax_temperature": softmax_temperature, "top_k": top_k}
        self.sampling["top_p"] = top_p
        self.baseline = self.add_weight(
            shape=(self.max_decoding_length,), initializer="zeros", name="baseline"
        )
        self.baseline_optimizer = keras.optimizers.SGD(baseline_learning_rate)
        self.baseline_optimizer.build([self.baseline])

    def sample(self, batch_size: Any, training: Any = False) -> tuple[Any, Any]:
        """``(ids [batch_size, max_decoding_length], lengths [batch_size])`` drawn from the
        generator with the model's sampling settings and seed."""
        outputs, _, lengths = self.decoder(
            decoding_strategy="infer_sample",
            embedding=self.embedder,
            start_tokens=self.start_tokens(batch_size),
            end_token=self.eos_token_id,
            max_decoding_length=self.max_decoding_length,
            seed=self.sample_seed(),
            training=training,
            **self.sampling,
        )
        return outputs.sample_id, lengths

    def sequence_logits(self, ids: Any, lengths: Any) -> Any:
        """The generator's ``[batch, time, vocab_size]`` logits of each token of ``ids`` given
        ``<BOS>`` and the tokens before it (teacher forcing, no dropout)."""
        batch = tf.shape(ids)[0]
        inputs = tf.concat([self.start_tokens(batch)[:, None], ids[:, :-1]], axis=1)
        outputs, _, _ = self.decoder(
            inputs=self.embedder(inputs, training=False), sequence_length=lengths, training=False
        )
        return outputs.logits

    def discriminator_loss(self, real: tuple, fake: tuple) -> Any:
        """The prefix loss of ``real`` and ``fake`` ids (:func:`prefix_discriminator_loss`)."""
        return prefix_discriminator_loss(self.discriminator, real, fake)

    def fake_sequences(self, batch_size: Any) -> tuple[Any, Any]:
        """Sampled ``(ids, lengths)`` (:meth:`sample`)."""
        return self.sample(batch_size)

    def adversarial_step(self, features: dict) -> dict:
        real = self.real_sequences(features)
        ids, lengths = self.sample(tf.shape(real[0])[0])
        d_loss = self.update_discriminator(real, (ids, lengths))
        prefix_logits = self.discriminator.prefix_logits(ids, lengths, training=False)
        rewards = step_rewards(prefix_logits, self.reward)
        with tf.GradientTape(persistent=True) as tape:
            advantages, baseline_loss = seqgan_advantages(
                rewards, self.baseline, lengths, self.discount
            )
            logits = self.sequence_logits(ids, lengths)
            pg_loss = pg_loss_with_logits(
                ids, logits, advantages, batched=True, sequence_length=lengths
            )
            loss = pg_loss + self.mle_loss(features)
        self.apply_update(self.optimizer, tape, loss, self.generator_variables)
        self.apply_update(self.baseline_optimizer, tape, baseline_loss, [self.baseline])
        valid = tf.cast(sequence_mask(lengths, tf.shape(ids)[1]), tf.float32)
        return {
            "loss": loss,
            "pg_loss": pg_loss,
            "baseline_loss": baseline_loss,
            "d_loss": d_loss,
            "reward": tf.reduce_sum(valid * rewards) / tf.maximum(tf.reduce_sum(valid), 1.0),
            "length": tf.reduce_mean(tf.cast(lengths, tf.float32)),
        }
