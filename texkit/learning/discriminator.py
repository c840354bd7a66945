"""TextDiscriminator: a real-vs-generated text classifier made of texkit's sentence classifiers.

The discriminator owns a word embedding table ``E`` (``[vocab_size, dim]``, a
:class:`~texkit.modules.WordEmbedder`) and one of texkit's classifiers on embedded inputs
(:class:`~texkit.modules.UnidirectionalRNNClassifier` or :class:`~texkit.modules.Conv1DClassifier`)
with a single binary logit. It reads either token ids ``[batch, time]`` (looked up in ``E``) or
distributions over the vocabulary ``y [batch, time, vocab_size]`` such as a decoder's
Gumbel-softmax ``soft_sample`` (embedded as ``y E``, so gradients reach the generator through
``y``). A positive logit says "real".

:meth:`TextDiscriminator.prefix_logits` scores every prefix ``x_1..x_t`` of a sequence: the
per-step rewards of SeqGAN. Texar's SeqGAN example got them from an RNN classifier's
``time_wise`` outputs; here every prefix is scored by the classifier itself (the batch tiled once
per step, each copy with its own length), so any classifier whose result ignores padding serves,
at ``time`` times the cost of one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.hparams import HParams, HParamsError, hparams_scope
from texkit.modules.embedders import WordEmbedder
from texkit.modules.sentence_classifiers import Conv1DClassifier, UnidirectionalRNNClassifier

__all__ = ["TextDiscriminator", "check_vocab_sizes"]

# The classifiers that read embedded inputs [batch, time, dim] with sequence_length.
CLASSIFIERS = (UnidirectionalRNNClassifier, Conv1DClassifier)


def _classifier_class(name: Any) -> type:
    """The classifier class ``classifier_type`` names (an error naming the key)."""
    try:
        cls = registry.resolve(name) if isinstance(name, str) else None
    except HParamsError:
        cls = None
    if cls not in CLASSIFIERS:
        known = ", ".join(c.__name__ for c in CLASSIFIERS)
        raise HParamsError(f"expected one of {known}, got {name!r}", "classifier_type")
    return cls


def _classifier_defaults(cls: type) -> dict:
    return {**cls.default_hparams(), "num_classes": 1, "name": "classifier"}


def check_vocab_sizes(discriminator: TextDiscriminator, generator_vocab_size: int) -> None:
    """Raises ``ValueError`` naming both sizes unless the discriminator reads the generator's
    vocabulary (its table has one row per generator token).

    Args:
        discriminator: the discriminator.
        generator_vocab_size: the number of tokens the generator's softmax is over.
    """
    if discriminator.vocab_size != generator_vocab_size:
        raise ValueError(
            f"discriminator {discriminator.name!r} embeds a vocabulary of "
            f"{discriminator.vocab_size} tokens, but the generator's has {generator_vocab_size}: "
            "give the discriminator the generator's vocab_size"
        )


class TextDiscriminator(ModuleBase):
    """A discriminator of texts: its own embedding table and a sentence classifier, one logit.

    Args:
        vocab_size: the number of tokens (the generator's vocabulary).
        hparams: see the table below: ``embedder`` the discriminator's own
            :class:`~texkit.modules.WordEmbedder` (its table ``E``); ``classifier`` the hparams
            of the class ``classifier_type`` names (the table shows the default's,
            :class:`~texkit.modules.UnidirectionalRNNClassifier`), whose ``num_classes`` must
            stay 1.

    Call arguments:
        inputs: ``[batch, time]`` int token ids, or ``[batch, time, vocab_size]`` float
            distributions over the vocabulary (e.g. ``outputs.soft_sample`` of a decoder's
            ``gumbel_softmax`` strategy), embedded as ``y E``.
        sequence_length: ``[batch]`` int valid lengths (``None``: nothing is padded).
        training: Keras' training flag.

    Returns:
        ``[batch]`` float32 logits, positive for "real".

    Raises:
        HParamsError: an unknown ``classifier_type``, or ``classifier.num_classes`` other than 1.
        ValueError: (at call) distributions over another number of tokens than ``vocab_size``.

    Example:
        >>> discriminator = TextDiscriminator(1000, {"embedder": {"dim": 32}})
        >>> discriminator(tf.constant([[4, 8, 2]]), tf.constant([3])).shape
        TensorShape([1])
    """

    HPARAMS_DOC = {
        **{f"embedder.{k}": v for k, v in WordEmbedder.HPARAMS_DOC.items()},
        "classifier_type": "UnidirectionalRNNClassifier or Conv1DClassifier.",
        **{f"classifier.{k}": v for k, v in UnidirectionalRNNClassifier.HPARAMS_DOC.items()},
        "name": "Layer name.",
    }

    def __init__(self, vocab_size: int, hparams: Mapping | HParams | None = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
        hp = self.hparams
        if hp.classifier.num_classes != 1:
            raise HParamsError(
                f"a discriminator has one logit, got num_classes={hp.classifier.num_classes}",
                "classifier.num_classes",
            )
        self.vocab_size = vocab_size
        with hparams_scope("embedder"):
            self.embedder = WordEmbedder(
                vocab_size=vocab_size, hparams=hp.embedder, dtype=self.dtype_policy
            )
        with hparams_scope("classifier"):
            cls = _classifier_class(hp.classifier_type)
            self.classifier = cls(hp.classifier, dtype=self.dtype_policy)

    @classmethod
    def make_hparams(cls, hparams: Any) -> HParams:
        """Validates ``classifier`` against the defaults of the class ``classifier_type``
        names."""
        defaults = cls.default_hparams()
        if isinstance(hparams, Mapping) and "classifier_type" in hparams:
            chosen = _classifier_class(hparams["classifier_type"])
            defaults["classifier_type"] = hparams["classifier_type"]
            defaults["classifier"] = _classifier_defaults(chosen)
        return HParams(hparams, defaults)

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "embedder": {**WordEmbedder.default_hparams(), "dim": 64, "name": "embedder"},
            "classifier_type": "UnidirectionalRNNClassifier",
            "classifier": _classifier_defaults(UnidirectionalRNNClassifier),
            "name": "text_discriminator",
        }

    def get_config(self) -> dict:
        return {**super().get_config(), "vocab_size": self.vocab_size}

    def build(self, inputs_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        if not self.embedder.built:
            self.embedder.build()
        if not self.classifier.built:
            self.classifier.build((None, None, self.embedder.dim))
        self.built = True

    def embed(self, inputs: Any, training: Any = None) -> Any:
        """``[batch, time, dim]``: ids looked up in ``E``, or distributions times ``E``."""
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype.is_integer:
            return self.embedder(inputs, training=training)
        if inputs.shape.rank != 3 or inputs.shape[-1] != self.vocab_size:
            raise ValueError(
                f"{self.name}: inputs must be [batch, time] token ids or [batch, time, "
                f"{self.vocab_size}] distributions over its {self.vocab_size} tokens, got shape "
                f"{inputs.shape}"
            )
        return self.embedder(soft_ids=inputs, training=training)

    def call(self, inputs: Any, sequence_length: Any = None, training: Any = None) -> Any:
        embedded = self.embed(inputs, training=training)
        logits, _ = self.classifier(embedded, sequence_length=sequence_length, training=training)
        return tf.cast(logits, tf.float32)

    def prefix_logits(self, inputs: Any, sequence_length: Any, training: Any = None) -> Any:
        """``[batch, time]`` float32: entry ``t`` is the logit of the prefix of ``t + 1`` tokens
        (a shorter sequence's entries past its end repeat its whole logit; mask them).

        Args:
            inputs, training: as for the call.
            sequence_length: ``[batch]`` int valid lengths.
        """
        if not self.built:
            self.build()
        embedded = self.embed(inputs, training=training)
        batch, time = tf.shape(embedded)[0], tf.shape(embedded)[1]
        steps = tf.range(1, time + 1, dtype=tf.int32)
        # Row (t, b) of the tiled batch is sequence b cut after t + 1 tokens.
        lengths = tf.minimum(steps[:, None], tf.cast(sequence_length, tf.int32)[None, :])
        tiled = tf.tile(embedded[None], [time, 1, 1, 1])
        tiled = tf.reshape(tiled, [time * batch, time, embedded.shape[-1]])
        logits, _ = self.classifier(
            tiled, sequence_length=tf.reshape(lengths, [-1]), training=training
        )
        return tf.transpose(tf.reshape(tf.cast(logits, tf.float32), [time, batch]))

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return (inputs_shape[0],)
