"""AdversarialLanguageModel: a texkit decoder trained as a generator against a discriminator.

The generator is a language model made of a :class:`~texkit.modules.WordEmbedder` and a texkit
decoder called on embedded inputs (e.g. :class:`~texkit.modules.BasicRNNDecoder`), which
generates from ``<BOS>``; the discriminator is a
:class:`~texkit.learning.TextDiscriminator`. Two ways of passing the discriminator's judgement
to the generator subclass this base:

* :class:`~texkit.learning.GumbelSoftmaxGAN`: the generator decodes with the
  ``gumbel_softmax`` strategy, straight through, and the discriminator reads ``y E``, so the
  adversarial loss (``tx.losses.binary_adversarial_losses``) is differentiated through the
  samples;
* :class:`~texkit.learning.SeqGAN`: the generator samples tokens and is trained by policy
  gradient with the discriminator's per-step rewards minus a learned baseline (Yu et al., 2017,
  in the form of Texar's SeqGAN example).

The form: a ``keras.Model`` whose ``train_step`` alternates the two updates (the discriminator's
first, then the generator's against the updated discriminator), so that ``tx.run.Trainer`` runs
it like any model. Its ``stage`` says what a step does: ``"mle"`` pre-trains the generator by
maximum likelihood, ``"discriminator"`` pre-trains the discriminator against the generator's
samples, ``"adversarial"`` (the default) trains both; a run of three stages is three Trainers
over the same model, one ``model_dir`` each (the later ones given the first one's strategy).
In every stage the Trainer compiles it with the generator's optimizer (``model.optimizer``,
from the experiment's ``optimization`` section), and the discriminator's optimizer is an
attribute of the model, built when the model is (as is :class:`~texkit.learning.SeqGAN`'s
baseline's); the optimizers, the models' weights and the sampling seed's state are in the
model's checkpoints, so a resumed run goes on
exactly as an uninterrupted one. A model's ``call`` is the generator's teacher-forced pass and
its ``compute_loss`` the mean NLL per token, so ``evaluate`` reports the NLL of held-out text.

The batches are texkit's text batches: features ``{"text_ids": [batch, time], "length":
[batch]}`` starting with ``<BOS>`` (``MonoTextData``'s; other keys are ignored). The real
sequences the discriminator sees are ``text_ids[:, 1:]`` of length ``length - 1`` (``<EOS>``
included), as the generated ones end with ``<EOS>`` when they draw it.

Under a strategy with several replicas each replica computes the losses of its part of the batch,
divided by the replicas in sync (the optimizers sum the replicas' gradients), and draws its own
samples (the seed is folded with the replica's id).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from texkit.learning.discriminator import TextDiscriminator, check_vocab_sizes
from texkit.losses.sequence_losses import sequence_sparse_softmax_cross_entropy
from texkit.modules.embedders import WordEmbedder
from texkit.utils.fit_output import KerasFitDefaults

__all__ = ["STAGES", "AdversarialLanguageModel"]

# What a training step does: pre-train the generator by maximum likelihood, pre-train the
# discriminator against the generator's samples, or train both adversarially.
STAGES = ("mle", "discriminator", "adversarial")


def _check_token(value: Any, name: str, vocab_size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab_size:
        raise ValueError(f"{name} must be a token id in [0, {vocab_size}), got {value!r}")
    return value


class AdversarialLanguageModel(KerasFitDefaults, keras.Model):
    """The generator, the discriminator and their two optimizers; subclasses define
    :meth:`adversarial_step`.

    Args:
        embedder: the generator's word embedder (its ``vocab_size`` is the vocabulary's).
        decoder: a texkit decoder over the same vocabulary, called on embedded inputs.
        discriminator: a :class:`~texkit.learning.TextDiscriminator` over the same vocabulary.
        discriminator_optimizer: a Keras optimizer for the discriminator's weights (the
            generator's is the one the model is compiled with).
        bos_token_id: the token generation starts from.
        eos_token_id: the token that ends a generated sequence.
        max_decoding_length: the most tokens generated per sequence.
        mle_weight: the weight of the generator's MLE loss on the real batch, added to its
            adversarial loss (0: none).
        seed: the seed of the generator's sampling (``None``: a random one).
        stage: what a training step does (:attr:`stage`, which may be set between ``fit``
            calls): ``"mle"`` updates the generator on its NLL of the real batch;
            ``"discriminator"`` updates the discriminator only; ``"adversarial"`` both.
        **kwargs: Keras model arguments (``name``).

    Raises:
        ValueError: the discriminator's, decoder's or embedder's vocabulary sizes differ (the
            message names both), a token id outside the vocabulary, a ``max_decoding_length``
            below 1, a negative ``mle_weight`` or an unknown ``stage``.
        TypeError: an argument of the wrong kind.
    """

    def __init__(
        self,
        embedder: WordEmbedder,
        decoder: keras.layers.Layer,
        discriminator: TextDiscriminator,
        discriminator_optimizer: keras.optimizers.Optimizer,
        *,
        bos_token_id: int,
        eos_token_id: int,
        max_decoding_length: int,
        mle_weight: float = 0.0,
        seed: int | None = None,
        stage: str = "adversarial",
        **kwargs: Any,
    ):
        for value, name, kind in (
            (embedder, "embedder", WordEmbedder),
            (discriminator, "discriminator", TextDiscriminator),
            (discriminator_optimizer, "discriminator_optimizer", keras.optimizers.Optimizer),
        ):
            if not isinstance(value, kind):
                raise TypeError(f"{name}: expected a {kind.__name__}, got {type(value).__name__}")
        vocab_size = embedder.vocab_size
        decoder_vocab = getattr(decoder, "vocab_size", None)
        if decoder_vocab is not None and decoder_vocab != vocab_size:
            raise ValueError(
                f"decoder {decoder.name!r} predicts {decoder_vocab} tokens, but the embedder "
                f"{embedder.name!r} embeds {vocab_size}"
            )
        check_vocab_sizes(discriminator, vocab_size)
        if isinstance(max_decoding_length, bool) or not isinstance(max_decoding_length, int):
            raise TypeError(f"max_decoding_length must be an int, got {max_decoding_length!r}")
        if max_decoding_length < 1:
            raise ValueError(f"max_decoding_length must be >= 1, got {max_decoding_length}")
        if not isinstance(mle_weight, (int, float)) or mle_weight < 0:
            raise ValueError(f"mle_weight must be a number >= 0, got {mle_weight!r}")
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.bos_token_id = _check_token(bos_token_id, "bos_token_id", vocab_size)
        self.eos_token_id = _check_token(eos_token_id, "eos_token_id", vocab_size)
        self.max_decoding_length = max_decoding_length
        self.mle_weight = float(mle_weight)
        self.embedder = embedder
        self.decoder = decoder
        self.discriminator = discriminator
        self.discriminator_optimizer = discriminator_optimizer
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.stage = stage
        self._build_parts()

    def _build_parts(self) -> None:
        """Creates every weight, and the discriminator optimizer's, now: a checkpoint restored
        before the first step then finds them all."""
        if not self.embedder.built:
            self.embedder.build()
        if not self.decoder.built:
            self.decoder.build((None, None, self.embedder.dim))
        if not self.discriminator.built:
            self.discriminator.build()
        self.discriminator_optimizer.build(self.discriminator.trainable_variables)

    @property
    def generator_variables(self) -> list:
        """The generator's trainable weights (embedder and decoder)."""
        return self.embedder.trainable_variables + self.decoder.trainable_variables

    # -- the generator as a language model -------------------------------------------------------

    def call(self, features: dict, training: Any = None) -> Any:
        """The generator's teacher-forced logits ``[batch, time - 1, vocab_size]`` predicting
        ``text_ids[:, 1:]``."""
        ids = features["text_ids"]
        outputs, _, _ = self.decoder(
            inputs=self.embedder(ids[:, :-1], training=training),
            sequence_length=features["length"] - 1,
            training=training,
        )
        return outputs.logits

    def compute_loss(
        self, x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None,
        training: bool = True,
    ) -> Any:  # fmt: skip
        """The generator's mean NLL per target token of the batch (padding never counts)."""
        return mean_token_nll(x["text_ids"][:, 1:], y_pred, x["length"] - 1)

    # -- the adversarial step --------------------------------------------------------------------

    @property
    def stage(self) -> str:
        """What a training step does: ``"mle"``, ``"discriminator"`` or ``"adversarial"``."""
        return self._stage

    @stage.setter
    def stage(self, stage: str) -> None:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
        self._stage = stage
        # The compiled step is the old stage's: the next fit traces the new one.
        self.train_function = None

    def train_step(self, data: Any) -> dict:
        """One training step of the model's :attr:`stage` on a batch of real text."""
        features = data[0] if isinstance(data, tuple) else data
        if self.stage == "mle":
            logs = self.mle_step(features)
        elif self.stage == "discriminator":
            logs = self.discriminator_step(features)
        else:
            logs = self.adversarial_step(features)
        return {name: tf.convert_to_tensor(value) for name, value in logs.items()}

    def mle_step(self, features: dict) -> dict:
        """Updates the generator (with the compiled optimizer) on its mean NLL per token; logs
        it as ``loss`` and ``nll``."""
        with tf.GradientTape() as tape:
            ids, length = self.real_sequences(features)
            loss = mean_token_nll(ids, self(features, training=True), length)
        self.apply_update(self.optimizer, tape, loss, self.generator_variables)
        return {"loss": loss, "nll": loss}

    def discriminator_loss(self, real: tuple, fake: tuple) -> Any:
        """The discriminator's loss on ``(inputs, lengths)`` pairs ``real`` and ``fake``."""
        raise NotImplementedError

    def fake_sequences(self, batch_size: Any) -> tuple[Any, Any]:
        """``batch_size`` generated ``(inputs, lengths)``, as the discriminator reads them."""
        raise NotImplementedError

    def update_discriminator(self, real: tuple, fake: tuple) -> Any:
        """One update of the discriminator on ``real`` and ``fake`` (their gradient stopped:
        only the discriminator changes); returns its loss."""
        fake = (tf.stop_gradient(fake[0]), fake[1])
        with tf.GradientTape() as tape:
            d_loss = self.discriminator_loss(real, fake)
        variables = self.discriminator.trainable_variables
        self.apply_update(self.discriminator_optimizer, tape, d_loss, variables)
        return d_loss

    def discriminator_step(self, features: dict) -> dict:
        """Updates the discriminator on the real batch and as many generated sequences; returns
        the logs, ``"loss"`` the discriminator's loss."""
        real = self.real_sequences(features)
        d_loss = self.update_discriminator(real, self.fake_sequences(tf.shape(real[0])[0]))
        return {"loss": d_loss, "d_loss": d_loss}

    def adversarial_step(self, features: dict) -> dict:
        """Updates the discriminator, then the generator; returns the logs, ``"loss"`` the
        generator's loss."""
        raise NotImplementedError

    def sample_seed(self) -> Any:
        """A ``[2]`` int32 seed for one sampling call: the model's generator state, folded with
        the replica's id."""
        seed = tf.cast(self.seed_generator.next(), tf.int32)
        replica = tf.distribute.get_replica_context()
        replica_id = 0 if replica is None else replica.replica_id_in_sync_group
        return seed + tf.constant([0, 1], tf.int32) * tf.cast(replica_id, tf.int32)

    def start_tokens(self, batch_size: Any) -> Any:
        """``[batch_size]`` int32 ``<BOS>`` ids."""
        return tf.fill([batch_size], tf.constant(self.bos_token_id, tf.int32))

    def real_sequences(self, features: dict) -> tuple[Any, Any]:
        """The real text as the discriminator sees it: ``(text_ids[:, 1:], length - 1)``."""
        return features["text_ids"][:, 1:], tf.cast(features["length"] - 1, tf.int32)

    def mle_loss(self, features: dict) -> Any:
        """``mle_weight`` times the generator's mean NLL per token on ``features`` (a zero
        scalar when ``mle_weight`` is 0)."""
        if not self.mle_weight:
            return tf.zeros([], tf.float32)
        logits = self(features, training=True)
        ids, length = self.real_sequences(features)
        return self.mle_weight * mean_token_nll(ids, logits, length)

    def apply_update(
        self, optimizer: keras.optimizers.Optimizer, tape: tf.GradientTape, loss: Any,
        variables: list,
    ) -> None:  # fmt: skip
        """Applies ``optimizer`` to the gradients of ``loss / replicas`` on ``variables``."""
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        gradients = tape.gradient(loss, variables)
        if replicas > 1:
            # scalar_mul also scales IndexedSlices (the gradients of embedding lookups).
            scale = 1.0 / replicas
            gradients = [None if g is None else tf.math.scalar_mul(scale, g) for g in gradients]
        optimizer.apply(gradients, variables)


def mean_token_nll(labels: Any, logits: Any, sequence_length: Any) -> Any:
    """The NLL summed over the valid tokens of the batch and divided by their number."""
    total = sequence_sparse_softmax_cross_entropy(
        labels=labels,
        logits=logits,
        sequence_length=sequence_length,
        average_across_batch=False,
        sum_over_batch=True,
    )
    tokens = tf.maximum(tf.reduce_sum(tf.cast(sequence_length, tf.float32)), 1.0)
    return total / tokens
