"""ClassifierProbability: a classifier's probability of one class for each sample; in the graph.

The reward of SeqGAN-style training (a discriminator's probability that a sample is real) and of
attribute rewards (a sentiment classifier's probability of "positive"). The classifier is any
callable giving logits: a texkit classifier (``BERTClassifier`` returns ``(logits, preds)``, the
logits are taken), a Keras model, a :class:`texkit.tasks.TextClassifier` over texts, or a plain
function. Its logits are ``[n, num_classes]`` (softmax) or, for a binary classifier with one
sigmoid output, ``[n]`` or ``[n, 1]`` (class 1's probability is the sigmoid, class 0's its
complement).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import keras
import tensorflow as tf

from texkit.rewards.base import Reward, Samples, describe, register

__all__ = ["ClassifierProbability"]

_OVER = ("ids", "texts")


@register
class ClassifierProbability(Reward):
    """The probability the classifier gives class ``label``, for each sample.

    The classifier is not trained by the reward (its values are under ``tf.stop_gradient``);
    build it before training (call it once) so that it creates no variables in the step.

    Args:
        classifier: called as ``classifier(samples.ids, samples.lengths)`` over ids, or
            ``classifier(samples.texts)`` over texts (Keras layers and models also get
            ``training=False``); returns logits, or a tuple or list whose first element is
            the logits. Wrap other signatures in a function, e.g. ``lambda ids, lengths:
            conv_classifier(embedder(ids), lengths)``.
        label: the class whose probability is the reward, an int in ``[0, num_classes)``
            (0 or 1 for a one-output binary classifier).
        over: ``"ids"`` or ``"texts"``.
        name: the name errors and logs use.

    Example:
        >>> logits = lambda ids, lengths: tf.one_hot(ids[:, 0], 3) * 2.0
        >>> reward = ClassifierProbability(logits, label=1)
        >>> samples = Samples(ids=tf.constant([[1, 0], [2, 0]]), lengths=tf.constant([1, 1]))
        >>> [round(float(v), 3) for v in reward(samples)]
        [0.787, 0.107]
    """

    def __init__(
        self,
        classifier: Callable[..., Any],
        label: int,
        over: str = "ids",
        name: str | None = None,
    ):
        super().__init__(name)
        if not callable(classifier):
            raise TypeError(
                f"classifier must be callable (a Keras model or layer, or a function giving "
                f"logits), got {type(classifier).__name__}"
            )
        if isinstance(label, bool) or not isinstance(label, int) or label < 0:
            raise ValueError(f"label must be a class index, an int >= 0, got {label!r}")
        if over not in _OVER:
            raise ValueError(f"over must be one of {_OVER}, got {over!r}")
        self.classifier = classifier
        self.label = label
        self.over = over

    def compute(self, samples: Samples) -> tf.Tensor:
        logits = self._logits(samples)
        if logits.shape.rank == 2 and logits.shape[1] == 1:
            logits = logits[:, 0]
        if logits.shape.rank == 1:
            return self._binary(logits)
        num_classes = logits.shape[1]
        if num_classes is not None and self.label >= num_classes:
            raise ValueError(
                f"{self.display_name}: label={self.label} is out of range for a classifier of "
                f"{num_classes} classes (logits {logits.shape.as_list()}); labels are 0 to "
                f"{num_classes - 1}"
            )
        checks = []
        if num_classes is None:
            checks.append(
                tf.debugging.assert_less(
                    self.label,
                    tf.shape(logits)[1],
                    message=f"{self.display_name}: label={self.label} is out of range for the "
                    "classifier's number of classes",
                )
            )
        with tf.control_dependencies(checks):
            return tf.nn.softmax(logits, axis=-1)[:, self.label]

    def _binary(self, logits: tf.Tensor) -> tf.Tensor:
        if self.label > 1:
            raise ValueError(
                f"{self.display_name}: label={self.label} is out of range for a binary classifier "
                f"with one sigmoid output (logits {logits.shape.as_list()}); labels are 0 and 1"
            )
        positive = tf.sigmoid(logits)
        return positive if self.label == 1 else 1.0 - positive

    def _logits(self, samples: Samples) -> tf.Tensor:
        kwargs = {"training": False} if isinstance(self.classifier, keras.layers.Layer) else {}
        if self.over == "texts":
            if samples.texts is None:
                raise ValueError(
                    f"{self.display_name}: over='texts', but samples.texts is None: the policy "
                    "must detokenize its samples, or classify ids (over='ids')"
                )
            outputs = self.classifier(samples.texts, **kwargs)
        else:
            outputs = self.classifier(samples.ids, samples.lengths, **kwargs)
        if isinstance(outputs, (tuple, list)) and outputs:
            outputs = outputs[0]
        if isinstance(outputs, Mapping) or outputs is None:
            raise TypeError(
                f"{self.display_name}: the classifier must return logits (or a tuple whose first "
                f"element is the logits), got {type(outputs).__name__}"
            )
        logits = tf.convert_to_tensor(outputs)
        if not logits.dtype.is_floating:
            raise TypeError(
                f"{self.display_name}: the classifier's logits must be floats, got "
                f"{describe(logits)}"
            )
        if logits.shape.rank not in (1, 2):
            raise ValueError(
                f"{self.display_name}: the classifier's logits must be [n, num_classes], or [n] / "
                f"[n, 1] for a binary sigmoid classifier, got {describe(logits)}"
            )
        return tf.cast(logits, tf.float32)

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments (the classifier as itself)."""
        return {
            "classifier": self.classifier,
            "label": self.label,
            "over": self.over,
            "name": self.name,
        }
