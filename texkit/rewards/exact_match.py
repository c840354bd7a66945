"""ExactMatch: 1 when a sample equals its reference, else 0; in the graph.

Over ``texts``, the sample's text is compared with a reference string (by default each stripped
of surrounding whitespace); over ``ids``, the sample's ids up to its length with the reference's
ids up to the reference's length: equal lengths and equal tokens. Over ids the reward compiles
with XLA; over texts it uses TensorFlow's string ops, which run in ``tf.function`` but do not
compile with XLA.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.rewards.base import Reward, Samples, describe, feature, register

__all__ = ["ExactMatch"]

_OVER = ("texts", "ids")


@register
class ExactMatch(Reward):
    """1.0 for each sample equal to its reference, 0.0 otherwise.

    Args:
        reference_key: the feature holding the references: tf.string ``[n]`` over texts, integer
            ``[n, T']`` ids over ids.
        over: ``"texts"`` (``samples.texts``) or ``"ids"`` (``samples.ids`` up to
            ``samples.lengths``).
        reference_length_key: over ids, the feature holding the references' lengths, integer
            ``[n]``.
        reference_start: over ids, the reference positions to skip at the start: 1 when the
            references begin with a start token the samples do not have (texkit's
            ``target_text_ids`` begin with ``<BOS>``; their ``target_length`` counts it, and is
            reduced by it too). The end token compares like any token: a reference that ends
            with it matches only a sample that sampled it.
        lowercase: over texts, compare lowercased texts (Unicode-aware).
        strip: over texts, strip surrounding whitespace first.
        name: the name errors and logs use.

    Example:
        >>> reward = ExactMatch("target_ids", over="ids", reference_length_key="target_length")
        >>> samples = Samples(
        ...     ids=tf.constant([[4, 5, 2, 0], [4, 6, 2, 0]]), lengths=tf.constant([3, 3]),
        ...     features={"target_ids": tf.constant([[4, 5, 2], [4, 5, 2]]),
        ...               "target_length": tf.constant([3, 3])})
        >>> reward(samples).numpy().tolist()
        [1.0, 0.0]
    """

    def __init__(
        self,
        reference_key: str = "target_text",
        over: str = "texts",
        reference_length_key: str = "target_length",
        reference_start: int = 0,
        lowercase: bool = False,
        strip: bool = True,
        name: str | None = None,
    ):
        super().__init__(name)
        for arg, value in [
            ("reference_key", reference_key),
            ("reference_length_key", reference_length_key),
        ]:
            if not isinstance(value, str) or not value:
                raise ValueError(f"{arg} must be a feature name, got {value!r}")
        if over not in _OVER:
            raise ValueError(f"over must be one of {_OVER}, got {over!r}")
        if isinstance(reference_start, bool) or not isinstance(reference_start, int):
            raise TypeError(f"reference_start must be an int >= 0, got {reference_start!r}")
        if reference_start < 0:
            raise ValueError(f"reference_start must be an int >= 0, got {reference_start!r}")
        for arg, value in [("lowercase", lowercase), ("strip", strip)]:
            if not isinstance(value, bool):
                raise TypeError(f"{arg} must be a bool, got {value!r}")
        self.reference_key = reference_key
        self.over = over
        self.reference_length_key = reference_length_key
        self.reference_start = reference_start
        self.lowercase = lowercase
        self.strip = strip

    def compute(self, samples: Samples) -> tf.Tensor:
        if self.over == "texts":
            return tf.cast(self._texts_match(samples), tf.float32)
        return tf.cast(self._ids_match(samples), tf.float32)

    def _texts_match(self, samples: Samples) -> tf.Tensor:
        if samples.texts is None:
            raise ValueError(
                f"{self.display_name}: over='texts', but samples.texts is None: the policy must "
                "detokenize its samples, or compare ids (over='ids')"
            )
        references = feature(samples, self.reference_key, self.display_name)
        if references.dtype != tf.string or references.shape.rank not in (None, 1):
            raise TypeError(
                f"{self.display_name}: over='texts' compares with tf.string [n] references, but "
                f"features[{self.reference_key!r}] is {describe(references)}"
            )
        texts = samples.texts
        if self.strip:
            texts, references = tf.strings.strip(texts), tf.strings.strip(references)
        if self.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
            references = tf.strings.lower(references, encoding="utf-8")
        return tf.equal(texts, references)

    def _ids_match(self, samples: Samples) -> tf.Tensor:
        references = feature(samples, self.reference_key, self.display_name)
        reference_lengths = feature(
            samples, self.reference_length_key, self.display_name, "reference_length_key"
        )
        if not references.dtype.is_integer or references.shape.rank not in (None, 2):
            raise TypeError(
                f"{self.display_name}: over='ids' compares with integer [n, T'] references, but "
                f"features[{self.reference_key!r}] is {describe(references)}"
            )
        if not reference_lengths.dtype.is_integer or reference_lengths.shape.rank not in (None, 1):
            raise TypeError(
                f"{self.display_name}: reference_length_key={self.reference_length_key!r} must "
                f"name integer [n] lengths, got {describe(reference_lengths)}"
            )
        start = self.reference_start
        references = tf.cast(references[:, start:], tf.int32)
        reference_lengths = tf.cast(reference_lengths, tf.int32) - start
        ids = tf.cast(samples.ids, tf.int32)
        lengths = tf.cast(samples.lengths, tf.int32)
        width = _common_width(ids, references)
        positions = tf.range(width)[None, :]
        same = tf.equal(ids[:, :width], references[:, :width]) | (positions >= lengths[:, None])
        return (
            tf.equal(lengths, reference_lengths) & tf.reduce_all(same, axis=1) & (lengths <= width)
        )

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {
            "reference_key": self.reference_key,
            "over": self.over,
            "reference_length_key": self.reference_length_key,
            "reference_start": self.reference_start,
            "lowercase": self.lowercase,
            "strip": self.strip,
            "name": self.name,
        }


def _common_width(ids: tf.Tensor, references: tf.Tensor) -> Any:
    """The positions both hold: a Python int when the shapes are static (XLA needs that)."""
    a, b = ids.shape[1], references.shape[1]
    if a is not None and b is not None:
        return min(a, b)
    return tf.minimum(tf.shape(ids)[1], tf.shape(references)[1])
