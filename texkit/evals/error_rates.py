"""Word and character error rates, computed in the TensorFlow graph.

The error rate of a corpus is the total edit distance (the fewest substitutions, deletions and
insertions turning each reference into its hypothesis) over the total length of the references,
as ``jiwer`` (4.x) computes ``wer`` and ``cer`` by default over lists of sentences: a corpus
rate, not a mean of sentence rates. It can exceed 1.

Whitespace is what Python's ``str.isspace`` says it is (ASCII whitespace, the no-break space,
the ideographic space U+3000 and the other Unicode spaces), as in jiwer's default transforms.

* Words: split at runs of whitespace, leading and trailing whitespace ignored, as jiwer does
  (it turns every run of two or more whitespace characters into a space, then splits on the
  space). The one difference: a lone tab, newline, carriage return, vertical tab or form feed
  between two words separates them here and is part of the word in jiwer; a lone Unicode space
  (U+00A0, U+3000) is part of the word in both.
* Characters: Unicode code points (UTF-8 decoded) after leading and trailing whitespace is
  stripped; the whitespace inside counts as characters, as in jiwer.
* References without any words (or characters): jiwer divides by the total reference length
  only when it is not zero, and otherwise returns the number of insertions; here it is the
  same, ``edits / max(total reference length, 1)``.

:func:`word_error_rate` and :func:`char_error_rate` score a corpus;
:class:`WordErrorRate` and :class:`CharErrorRate` accumulate the edits and the reference lengths
over a dataset. Both run in TensorFlow (``tf.strings`` and ``tf.edit_distance``), eagerly and
inside ``tf.function``, on ``tf.string`` tensors; the string ops do not compile with XLA, so
not under ``jit_compile=True`` or on TPUs.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

__all__ = ["CharErrorRate", "WordErrorRate", "char_error_rate", "word_error_rate"]


def _as_strings(value: Any, what: str) -> tf.Tensor:
    try:
        tensor = tf.convert_to_tensor(value, dtype=tf.string)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} must be a batch of texts (str or bytes): {error}") from None
    if tensor.shape.rank != 1:
        raise ValueError(f"{what} must be a 1-D batch of texts, got shape {tuple(tensor.shape)}")
    return tensor


# The characters of Python's str.isspace(), which jiwer's re "\\s" and str.strip() use, as an RE2
# class (tf.strings.split and tf.strings.strip know ASCII whitespace only).
_SPACE = (
    "[\\t-\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}]"
)


def _units(texts: tf.Tensor, unit: str) -> tf.RaggedTensor:
    texts = tf.strings.regex_replace(texts, f"^{_SPACE}+|{_SPACE}+$", "")
    if unit == "word":
        # jiwer's RemoveMultipleSpaces: a run of two or more whitespace characters is a space.
        return tf.strings.split(tf.strings.regex_replace(texts, f"{_SPACE}{_SPACE}+", " "))
    return tf.strings.unicode_split(texts, "UTF-8")


def _edit_counts(references: Any, hypotheses: Any, unit: str) -> tuple[tf.Tensor, tf.Tensor]:
    """The total edit distance and the total reference length of a batch, float64 scalars.

    ``unit`` is ``"word"`` or ``"char"``.
    """
    references = _as_strings(references, "references")
    hypotheses = _as_strings(hypotheses, "hypotheses")
    if not references.shape.is_compatible_with(hypotheses.shape):
        raise ValueError(
            "references and hypotheses must have one text each per pair: got "
            f"{references.shape[0]} references and {hypotheses.shape[0]} hypotheses"
        )
    with tf.control_dependencies(
        [
            tf.debugging.assert_equal(
                tf.size(references),
                tf.size(hypotheses),
                message="references and hypotheses must have the same number of texts",
            )
        ]
    ):
        reference_units = _units(references, unit)
    hypothesis_units = _units(hypotheses, unit)
    distances = tf.edit_distance(
        hypothesis_units.to_sparse(), reference_units.to_sparse(), normalize=False
    )
    edits = tf.reduce_sum(tf.cast(distances, tf.float64))
    length = tf.cast(tf.reduce_sum(reference_units.row_lengths()), tf.float64)
    return edits, length


def _rate(edits: tf.Tensor, length: tf.Tensor) -> tf.Tensor:
    return edits / tf.maximum(length, 1.0)


def _corpus_rate(references: Any, hypotheses: Any, unit: str) -> float:
    references = _as_strings(references, "references")
    if references.shape[0] == 0:
        raise ValueError("references is empty: the error rate needs at least one pair")
    return float(_rate(*_edit_counts(references, hypotheses, unit)))


def word_error_rate(references: Any, hypotheses: Any) -> float:
    """The word error rate of a corpus: total word edits over total reference words.

    Args:
        references: the reference texts (a list of ``str``/``bytes`` or a ``[n]`` ``tf.string``
            tensor).
        hypotheses: one hypothesis text per reference.

    Returns:
        The rate (0 is perfect; it can exceed 1), as ``jiwer.wer(references, hypotheses)``.

    Raises:
        ValueError: an empty corpus, or not one hypothesis per reference.
        TypeError: texts that are not strings.

    Example:
        >>> word_error_rate(["the cat sat", "hello world"], ["the cat sat down", "hello"])
        0.4
    """
    return _corpus_rate(references, hypotheses, "word")


def char_error_rate(references: Any, hypotheses: Any) -> float:
    """The character error rate of a corpus: total character edits over total reference
    characters (spaces inside the texts included).

    Args:
        references, hypotheses: as in :func:`word_error_rate`.

    Returns:
        The rate, as ``jiwer.cer(references, hypotheses)``.

    Example:
        >>> char_error_rate(["abcd"], ["abed"])
        0.25
    """
    return _corpus_rate(references, hypotheses, "char")


class _ErrorRate(keras.metrics.Metric):
    _unit = "word"

    def __init__(self, name: str, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.edits = self.add_variable(shape=(), initializer="zeros", dtype="float64", name="edits")
        self.length = self.add_variable(
            shape=(), initializer="zeros", dtype="float64", name="length"
        )
        self.count = self.add_variable(shape=(), initializer="zeros", dtype="float64", name="count")

    def update_state(self, references: Any, hypotheses: Any, sample_weight: Any = None) -> None:
        if sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__} takes no sample_weight: every pair counts once"
            )
        references = _as_strings(references, "references")
        edits, length = _edit_counts(references, hypotheses, self._unit)
        self.edits.assign_add(edits)
        self.length.assign_add(length)
        self.count.assign_add(tf.cast(tf.size(references), tf.float64))

    def result(self) -> tf.Tensor:
        rate = tf.where(self.count > 0, _rate(self.edits, self.length), float("nan"))
        return tf.cast(rate, self.dtype)


@keras.saving.register_keras_serializable(package="texkit")
class WordErrorRate(_ErrorRate):
    """The word error rate over a dataset: all word edits over all reference words.

    Call ``update_state(references, hypotheses)`` per batch with ``[batch]`` string tensors (or
    lists); ``result()`` equals :func:`word_error_rate` over all the pairs, however batched;
    NaN before any pair. Runs in the graph (``tf.function``), not under XLA.

    Args:
        name: the metric's name (default ``"word_error_rate"``).
        dtype: the dtype of the result (float32 by default).

    Example:
        >>> metric = WordErrorRate()
        >>> metric.update_state(tf.constant(["the cat sat"]), tf.constant(["the cat sat down"]))
        >>> metric.update_state(["hello world"], ["hello"])
        >>> round(float(metric.result()), 4)  # (1 + 1) edits of (3 + 2) words
        0.4
    """

    _unit = "word"

    def __init__(self, name: str = "word_error_rate", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)


@keras.saving.register_keras_serializable(package="texkit")
class CharErrorRate(_ErrorRate):
    """The character error rate over a dataset: all character edits over all reference
    characters; used as :class:`WordErrorRate` is.

    Args:
        name: the metric's name (default ``"char_error_rate"``).
        dtype: the dtype of the result (float32 by default).
    """

    _unit = "char"

    def __init__(self, name: str = "char_error_rate", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
