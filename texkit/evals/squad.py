"""SQuAD exact match and F1, as the official evaluation script computes them.

The official SQuAD v1.1 script (``evaluate-v1.1.py``, Rajpurkar et al., 2016) compares answers
after :func:`normalize_answer`: lowercased, ASCII punctuation (Python's ``string.punctuation``)
removed, the articles "a", "an" and "the" removed as whole words, whitespace runs collapsed.
Exact match is 1 when the normalized prediction equals a normalized ground truth; F1 is the
harmonic mean of the precision and recall of the normalized tokens (whitespace-separated, as
multisets) of the prediction against a ground truth. Each takes the best over the question's
ground truths, and :func:`squad` averages over the questions, times 100 (the script's scale).

Unanswerable questions follow SQuAD v2.0's script (``evaluate-v2.0.py``): ground truths that
normalize to the empty string do not count, and a question with none left (or no ground
truths at all) is unanswerable: its one ground truth is the empty answer, and a prediction
scores 1 (exact match and F1) when it normalizes to the empty string, else 0. This is also how
``""`` padding in a ``[batch, num_answers]`` tensor of ground truths is harmless. The v1.1
script differs only when a ground truth normalizes to empty (e.g. ``"the"``): there, an empty
prediction got exact match 1 but F1 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from texkit.evals._host_metric import HostMetric
from texkit.evals._texts import as_items, as_text, as_texts, check_corpus

__all__ = ["SQuAD", "normalize_answer", "squad", "squad_exact_match", "squad_f1"]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """An answer as SQuAD's script compares it: lowercased, no ASCII punctuation, no articles
    (a, an, the), single spaces.

    Example:
        >>> normalize_answer("  The Eiffel-Tower, in  PARIS! ")
        'eiffeltower in paris'
    """
    text = as_text(text, "text").lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _ground_truths(ground_truths: Any, what: str) -> list[str]:
    """The normalized ground truths that count: ``[""]`` for an unanswerable question."""
    if isinstance(ground_truths, (str, bytes)):
        ground_truths = [ground_truths]
    elif isinstance(ground_truths, np.ndarray) and ground_truths.ndim == 0:
        ground_truths = [ground_truths.item()]
    elif not isinstance(ground_truths, (list, tuple, np.ndarray)):
        raise TypeError(
            f"{what} must be an answer text or a list of them, got {type(ground_truths).__name__}"
        )
    normalized = [
        normalize_answer(as_text(truth, f"{what}[{i}]")) for i, truth in enumerate(ground_truths)
    ]
    return [truth for truth in normalized if truth] or [""]


def _f1(prediction: str, truth: str) -> float:
    """F1 of two normalized answers' tokens; v2's 1-or-0 when either has no tokens."""
    prediction_tokens, truth_tokens = prediction.split(), truth.split()
    if not prediction_tokens or not truth_tokens:
        return float(prediction_tokens == truth_tokens)
    same = sum((Counter(prediction_tokens) & Counter(truth_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(prediction_tokens), same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def _scores(prediction: Any, ground_truths: Any, what: str) -> tuple[float, float]:
    prediction = normalize_answer(as_text(prediction, "prediction"))
    truths = _ground_truths(ground_truths, what)
    exact = max(float(prediction == truth) for truth in truths)
    return exact, max(_f1(prediction, truth) for truth in truths)


def squad_exact_match(prediction: str, ground_truths: Any) -> float:
    """1.0 if the normalized prediction equals a normalized ground truth, else 0.0.

    Args:
        prediction: the predicted answer text.
        ground_truths: an answer text or a list of them; empty (or only answers that normalize
            to nothing) for an unanswerable question (see :mod:`texkit.evals.squad`).

    Example:
        >>> squad_exact_match("the Eiffel Tower", ["Eiffel Tower", "tower"])
        1.0
    """
    return _scores(prediction, ground_truths, "ground_truths")[0]


def squad_f1(prediction: str, ground_truths: Any) -> float:
    """The best token F1 of the normalized prediction against the ground truths, 0 to 1.

    Args:
        prediction, ground_truths: as in :func:`squad_exact_match`.

    Example:
        >>> round(squad_f1("Eiffel Tower in Paris", ["the Eiffel Tower"]), 4)  # P 2/4, R 2/2
        0.6667
    """
    return _scores(prediction, ground_truths, "ground_truths")[1]


def _sums(predictions: Any, references: Any) -> np.ndarray:
    """The sums of exact match and F1 (0 to 1) over the questions."""
    predictions = as_texts(predictions, "predictions")
    references = as_items(references, "references")
    if len(references) != len(predictions):
        raise ValueError(
            f"references must have one item per prediction: got {len(references)} for "
            f"{len(predictions)} predictions"
        )
    sums = np.zeros([2], dtype=np.float64)
    for i, (prediction, truths) in enumerate(zip(predictions, references, strict=True)):
        sums += _scores(prediction, truths, f"references[{i}]")
    return sums


def squad(predictions: Any, references: Any) -> dict[str, float]:
    """SQuAD's exact match and F1 over the questions, each 0 to 100 as the official script.

    Args:
        predictions: one predicted answer text per question (a list, a 1-D array or an eager
            ``tf.string`` tensor).
        references: one item per question: its answer text or a list of its answer texts
            (an empty list for an unanswerable question, as in SQuAD v2.0).

    Returns:
        ``{"exact_match": ..., "f1": ...}``, the means over the questions times 100.

    Raises:
        ValueError: no predictions, or not one reference item per prediction.
        TypeError: a prediction or answer that is not text.

    Example:
        >>> squad(["Denver Broncos", "1990s"], [["Denver Broncos", "The Broncos"], ["1995"]])
        {'exact_match': 50.0, 'f1': 50.0}
    """
    predictions = as_texts(predictions, "predictions")
    check_corpus(predictions, "predictions")
    exact, f1 = _sums(predictions, references) / len(predictions)
    return {"exact_match": 100 * float(exact), "f1": 100 * float(f1)}


@keras.saving.register_keras_serializable(package="texkit")
class SQuAD(HostMetric):
    """SQuAD exact match and F1 over a dataset: the means over every question seen, 0 to 100.

    Call ``update_state(predictions, references)`` per batch: a ``[batch]`` string tensor of
    predictions and a ``[batch]`` or ``[batch, num_answers]`` string tensor of answers (pad with
    ``""``: answers that normalize to nothing do not count) or a ragged ``[batch, None]`` one
    (an empty row for an unanswerable question), or Python lists as :func:`squad`
    takes them. ``result()`` is ``{"exact_match": scalar, "f1": scalar}``, equal to
    :func:`squad` over all the questions; NaN before any. Predictions come first, as in
    :func:`squad` (Keras' ``compile`` would pass the answers first). Normalization runs in
    Python on the host (``tf.numpy_function`` in a ``tf.function``): not under XLA or on TPUs.

    Args:
        name: the metric's name (default ``"squad"``).
        dtype: the dtype of the results (float32 by default).

    Example:
        >>> metric = SQuAD()
        >>> metric.update_state(tf.constant(["Denver Broncos"]),
        ...                     tf.constant([["Denver Broncos", "The Broncos"]]))
        >>> metric.update_state(["1990s"], [["1995", ""]])
        >>> {name: float(value) for name, value in metric.result().items()}
        {'exact_match': 50.0, 'f1': 50.0}
    """

    def __init__(self, name: str = "squad", dtype: Any = None):
        super().__init__(2, name=name, dtype=dtype)

    def batch_statistics(self, predictions: Any, references: Any) -> np.ndarray:
        return _sums(predictions, references)

    def result(self) -> dict[str, tf.Tensor]:
        means = tf.cast(100 * self.totals / self.count, self.dtype)
        return {"exact_match": means[0], "f1": means[1]}
