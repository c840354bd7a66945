"""GumbelSoftmaxGAN: a generator trained through straight-through Gumbel-softmax samples.

The generator decodes with texkit's ``gumbel_softmax`` strategy with ``straight_through=True``
(Jang et al., 2017, https://arxiv.org/abs/1611.01144): each step feeds back the one-hot of its
token, drawn as ``argmax(logits + g)`` (an exact sample of the softmax), while gradients flow as
if it had fed ``y = softmax((logits + g) / softmax_temperature)``. ``outputs.soft_sample`` is
``y [batch, time, vocab_size]`` (the one-hot in the forward pass), which the discriminator
embeds as ``y E`` with its own table ``E``; the adversarial losses are
``tx.losses.binary_adversarial_losses`` (Texar's, ``mode="max_real"``: the generator maximizes
the discriminator's log-probability that its samples are real; ``"min_fake"``: it minimizes
the discriminator's loss on them), with the discriminator's sequence logits.

A training step draws one batch of samples, updates the discriminator on them (their gradient
stopped) and the real batch, then computes the generator's loss against the updated
discriminator and updates the generator through the samples.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.learning.adversarial import AdversarialLanguageModel
from texkit.learning.discriminator import TextDiscriminator
from texkit.losses import binary_adversarial_losses

__all__ = ["GumbelSoftmaxGAN"]

MODES = ("max_real", "min_fake")


class GumbelSoftmaxGAN(AdversarialLanguageModel):
    """A generator trained against a discriminator through straight-through Gumbel-softmax
    samples (see :mod:`texkit.learning.gumbel_gan`).

    Args:
        embedder, decoder, discriminator, discriminator_optimizer: as in
            :class:`~texkit.learning.AdversarialLanguageModel`.
        mode: ``"max_real"`` or ``"min_fake"``, the generator's loss in
            ``tx.losses.binary_adversarial_losses``.
        softmax_temperature: the Gumbel-softmax temperature ``tau`` of the gradients' soft
            sample.
        **kwargs: the other arguments of
            :class:`~texkit.learning.AdversarialLanguageModel` (``bos_token_id``,
            ``eos_token_id``, ``max_decoding_length``, ``mle_weight``, ``seed``, ``name``).

    A step's logs: ``loss`` (the generator's total), ``g_loss`` (its adversarial part),
    ``d_loss`` and ``length`` (the samples' mean).
    """

    def __init__(
        self,
        embedder: Any,
        decoder: Any,
        discriminator: TextDiscriminator,
        discriminator_optimizer: Any,
        *,
        mode: str = "max_real",
        softmax_temperature: float = 1.0,
        **kwargs: Any,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(softmax_temperature, (int, float)) or softmax_temperature <= 0:
            raise ValueError(f"softmax_temperature must be positive, got {softmax_temperature!r}")
        super().__init__(embedder, decoder, discriminator, discriminator_optimizer, **kwargs)
        self.mode = mode
        self.softmax_temperature = float(softmax_temperature)

    def soft_sample(self, batch_size: Any) -> tuple[Any, Any]:
        """``(y [batch_size, max_decoding_length, vocab_size], lengths [batch_size])``: the
        generator's straight-through Gumbel-softmax samples, differentiable with respect to its
        weights."""
        outputs, _, lengths = self.decoder(
            decoding_strategy="gumbel_softmax",
            straight_through=True,
            embedding=self.embedder,
            start_tokens=self.start_tokens(batch_size),
            end_token=self.eos_token_id,
            max_decoding_length=self.max_decoding_length,
            softmax_temperature=self.softmax_temperature,
            seed=self.sample_seed(),
            training=False,
        )
        return outputs.soft_sample, lengths

    def discriminate(self, data: tuple) -> Any:
        """The discriminator's ``[batch]`` logits of ``(inputs, lengths)``."""
        inputs, lengths = data
        return self.discriminator(inputs, lengths, training=True)

    def discriminator_loss(self, real: tuple, fake: tuple) -> Any:
        """``binary_adversarial_losses``' discriminator loss of ``real`` and ``fake``."""
        return binary_adversarial_losses(real, fake, self.discriminate, self.mode)[1]

    def fake_sequences(self, batch_size: Any) -> tuple[Any, Any]:
        """Straight-through Gumbel-softmax samples (:meth:`soft_sample`)."""
        return self.soft_sample(batch_size)

    def adversarial_step(self, features: dict) -> dict:
        real = self.real_sequences(features)
        with tf.GradientTape() as generator_tape:
            soft, lengths = self.soft_sample(tf.shape(real[0])[0])
            with generator_tape.stop_recording():
                d_loss = self.update_discriminator(real, (soft, lengths))
            g_loss, _ = binary_adversarial_losses(
                real, (soft, lengths), self.discriminate, self.mode
            )
            loss = g_loss + self.mle_loss(features)
        self.apply_update(self.optimizer, generator_tape, loss, self.generator_variables)
        return {
            "loss": loss,
            "g_loss": g_loss,
            "d_loss": d_loss,
            "length": tf.reduce_mean(tf.cast(lengths, tf.float32)),
        }
