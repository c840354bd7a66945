"""Evaluation metrics: BLEU through sacrebleu, and accuracy and perplexity over batches.

**BLEU.** The four BLEU functions keep Texar's names and arguments; the computation is sacrebleu's
(``sacrebleu.metrics.BLEU``), on text that is already tokenized: sacrebleu's own tokenizer is off
(``tokenize="none"``) and its warning about tokenized input is silenced (``force=True``), so
tokens are whatever whitespace separates. A hypothesis or a reference is either a string of
whitespace-separated tokens or a sequence of tokens (``str`` or UTF-8 ``bytes``, e.g. from
``tensor.numpy()``), and each hypothesis has one or more references; hypotheses may have
different numbers of references. Scores are on Texar's scale, 0 to 100: each a
:class:`BLEUScore`, a ``float`` that also holds the n-gram precisions (Texar's ``return_all``).

* :func:`corpus_bleu_moses`, :func:`sentence_bleu_moses`: what Moses' ``multi-bleu.perl`` computes
  (Texar ran that script): 4-gram precisions clipped by the most frequent count in any reference,
  no smoothing (a zero precision gives a BLEU of 0), and the brevity penalty over the sum of the
  reference lengths closest to each hypothesis length (the shorter on a tie). sacrebleu with
  ``tokenize="none"``, ``smooth_method="none"`` computes exactly this. Two departures: the score
  is not rounded to the two decimals the script prints, and a hypothesis with fewer references
  than another simply has fewer (Texar wrote empty lines, which the script read as empty
  references of length 0).
* :func:`corpus_bleu`, :func:`sentence_bleu`: the same, with Texar's ``max_order`` and ``smooth``.
  ``smooth=True`` is sacrebleu's ``add-k`` with k = 1, the smoothing of Lin and Och (2004): one is
  added to the matched and the total counts of the orders from 2 up. Texar's own code, unlike
  the paper, also smoothed the unigrams and measured the brevity penalty against the shortest
  reference instead of the closest; with one reference per hypothesis and no smoothing, the two
  agree.

**Accuracy and perplexity.** :func:`accuracy` and :func:`perplexity` score one batch;
:class:`Accuracy` and :class:`Perplexity` accumulate over a whole dataset. The accumulators are
Keras metrics (``update_state``, ``result``, ``reset_state``): they run eagerly and inside
``tf.function``; :class:`Perplexity`, which takes logits, also in ``model.compile(metrics=...)``
(``weighted_metrics=...`` to receive Keras' ``sample_weight``), while :class:`Accuracy` takes
predicted ids, as Texar's ``accuracy`` did. Per-token inputs follow :mod:`texkit.losses`:
``[batch, max_time]`` labels with ``sequence_length`` ``[batch]`` (steps at or past the length do
not count), or Keras' ``sample_weight`` (a weight per token, or per sequence), or both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import sacrebleu
import tensorflow as tf

from texkit import losses

__all__ = [
    "Accuracy",
    "BLEUScore",
    "Perplexity",
    "accuracy",
    "corpus_bleu",
    "corpus_bleu_moses",
    "perplexity",
    "sentence_bleu",
    "sentence_bleu_moses",
]

# -- BLEU -------------------------------------------------------------------------------------


def _as_text(token: Any, what: str) -> str:
    if isinstance(token, bytes):
        return token.decode("utf-8")
    if isinstance(token, str):
        return token
    raise TypeError(f"{what} must be a string or a sequence of string tokens, got {token!r}")


def _is_sequence(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim >= 1
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _sentence(value: Any, what: str) -> str:
    """One hypothesis or reference as whitespace-separated tokens, for sacrebleu."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (str, bytes)):
        return _as_text(value, what)
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(
            f"{what} must be a string or a 1-D sequence of tokens, got an array of shape "
            f"{value.shape}"
        )
    if not _is_sequence(value):
        raise TypeError(
            f"{what} must be a string or a sequence of string tokens, got {type(value).__name__}"
        )
    tokens = [_as_text(token, f"{what}[{i}]") for i, token in enumerate(value)]
    for i, token in enumerate(tokens):
        # The tokens are joined by spaces and sacrebleu splits on whitespace: a token that is
        # empty or holds whitespace would silently become zero or several tokens.
        if not token or token != "".join(token.split()):
            raise ValueError(
                f"{what}[{i}] is the token {token!r}: tokens must be non-empty and hold no "
                "whitespace"
            )
    return " ".join(tokens)


def _corpus(list_of_references: Any, hypotheses: Any) -> tuple[list[str], list[list[str | None]]]:
    """sacrebleu's layout: hypothesis strings, and reference streams padded with ``None``."""
    if not _is_sequence(hypotheses):
        raise TypeError(f"hypotheses must be a list of hypotheses, got {type(hypotheses).__name__}")
    if not _is_sequence(list_of_references):
        raise TypeError(
            "list_of_references must be a list with one list of references per hypothesis, got "
            f"{type(list_of_references).__name__}"
        )
    if len(hypotheses) == 0:
        raise ValueError("hypotheses is empty: BLEU needs at least one hypothesis")
    if len(list_of_references) != len(hypotheses):
        raise ValueError(
            f"list_of_references must hold one list of references per hypothesis: got "
            f"{len(list_of_references)} lists for {len(hypotheses)} hypotheses"
        )
    hyps = [_sentence(h, f"hypotheses[{i}]") for i, h in enumerate(hypotheses)]
    refs = []
    for i, references in enumerate(list_of_references):
        if not _is_sequence(references) or len(references) == 0:
            raise ValueError(
                f"list_of_references[{i}] must be a non-empty list of references for "
                f"hypotheses[{i}], got {references!r}; with one reference per hypothesis, pass "
                "[[reference] for reference in references]"
            )
        refs.append(
            [_sentence(r, f"list_of_references[{i}][{j}]") for j, r in enumerate(references)]
        )
    num_streams = max(len(r) for r in refs)
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(num_streams)]
    return hyps, streams


class BLEUScore(float):
    """A BLEU score (a ``float``, 0 to 100) that also holds its n-gram precisions.

    Texar's ``return_all=True`` gave ``[bleu, p_1, ..., p_n]``; here every BLEU function returns
    one type, and ``[score, *score.precisions]`` is that list.

    Attributes:
        precisions: the n-gram precisions ``(p_1, ..., p_max_order)``, each 0 to 100.
    """

    precisions: tuple[float, ...]

    def __new__(cls, score: float, precisions: Sequence[float]) -> BLEUScore:
        value = super().__new__(cls, score)
        value.precisions = tuple(float(p) for p in precisions)
        return value

    def __reduce__(self):
        return (BLEUScore, (float(self), self.precisions))


def _bleu(
    list_of_references: Any,
    hypotheses: Any,
    max_order: int,
    lowercase: bool,
    smooth: bool,
) -> BLEUScore:
    if isinstance(max_order, bool) or not isinstance(max_order, int) or max_order < 1:
        raise ValueError(f"max_order must be an int >= 1, got {max_order!r}")
    hyps, streams = _corpus(list_of_references, hypotheses)
    metric = sacrebleu.metrics.BLEU(
        lowercase=bool(lowercase),
        force=True,
        tokenize="none",
        smooth_method="add-k" if smooth else "none",
        max_ngram_order=max_order,
    )
    score = metric.corpus_score(hyps, streams)
    return BLEUScore(score.score, score.precisions)


def corpus_bleu(
    list_of_references: Any,
    hypotheses: Any,
    max_order: int = 4,
    lowercase: bool = False,
    smooth: bool = False,
) -> BLEUScore:
    """Corpus BLEU of tokenized hypotheses against their references, from 0 to 100.

    Args:
        list_of_references: one list of references per hypothesis; each reference a string of
            whitespace-separated tokens or a sequence of tokens (``str`` or ``bytes``).
        hypotheses: the hypotheses, each like a reference.
        max_order: the longest n-gram counted.
        lowercase: compare lowercased tokens.
        smooth: add one to the matched and total counts of the orders from 2 up (Lin and Och,
            2004; see :mod:`texkit.evals`).

    Returns:
        The BLEU score, a :class:`BLEUScore` (a ``float``; its ``precisions`` the n-gram
        precisions, also 0 to 100).

    Raises:
        ValueError: no hypotheses, not one list of references per hypothesis, a hypothesis
            without references, a token that is empty or holds whitespace, or a bad
            ``max_order``.
        TypeError: a hypothesis or reference that is neither text nor a sequence of tokens.

    Example:
        >>> refs = [["the cat sat on the mat"], ["a dog ran".split(), "the dog ran off"]]
        >>> hyps = ["the cat sat on the mat", ["the", "dog", "ran", "off"]]
        >>> round(corpus_bleu(refs, hyps), 2)
        100.0
        >>> round(corpus_bleu([["the cat sat on the mat"]], ["the cat sat on a mat"]), 2)
        53.73
    """
    return _bleu(list_of_references, hypotheses, max_order, lowercase, smooth)


def sentence_bleu(
    references: Any,
    hypothesis: Any,
    max_order: int = 4,
    lowercase: bool = False,
    smooth: bool = False,
) -> BLEUScore:
    """BLEU of one hypothesis against its references: :func:`corpus_bleu` of a corpus of one.

    Without ``smooth``, a hypothesis that shares no ``max_order``-gram with its references
    scores 0.

    Args:
        references: the references of the hypothesis, each a string or a sequence of tokens.
        hypothesis: a string of whitespace-separated tokens or a sequence of tokens.
        max_order, lowercase, smooth: as in :func:`corpus_bleu`.

    Example:
        >>> round(sentence_bleu(["the cat sat on the mat"], "the cat sat on the mat"), 2)
        100.0
        >>> sentence_bleu(["the cat sat on the mat"], "the cat sat")  # no 4-gram at all
        0.0
        >>> round(sentence_bleu(["the cat sat on the mat"], "the cat sat", smooth=True), 2)
        36.79
    """
    if not _is_sequence(references):
        raise TypeError(
            f"references must be a list of references, got {type(references).__name__}; for "
            "one reference, pass [reference]"
        )
    return _bleu([references], [hypothesis], max_order, lowercase, smooth)


def corpus_bleu_moses(
    list_of_references: Any,
    hypotheses: Any,
    lowercase: bool = False,
) -> BLEUScore:
    """Corpus BLEU as Moses' ``multi-bleu.perl`` computes it on tokenized text, from 0 to 100.

    The score of ``multi-bleu.perl [-lc] references < hypotheses``, unrounded; see
    :mod:`texkit.evals` for the equivalence.

    Args:
        list_of_references, hypotheses: as in :func:`corpus_bleu`.
        lowercase: compare lowercased text (the script's ``-lc``).

    Returns:
        The BLEU score, a :class:`BLEUScore` (its ``precisions`` the four n-gram precisions).

    Example:
        >>> round(corpus_bleu_moses([["The cat sat on the mat"]], ["the cat sat on a mat"],
        ...                         lowercase=True), 2)
        53.73
    """
    return _bleu(list_of_references, hypotheses, 4, lowercase, False)


def sentence_bleu_moses(
    references: Any,
    hypothesis: Any,
    lowercase: bool = False,
) -> BLEUScore:
    """:func:`corpus_bleu_moses` of one hypothesis and its references.

    Args:
        references, hypothesis: as in :func:`sentence_bleu`.
        lowercase: as in :func:`corpus_bleu_moses`.
    """
    if not _is_sequence(references):
        raise TypeError(
            f"references must be a list of references, got {type(references).__name__}; for "
            "one reference, pass [reference]"
        )
    return _bleu([references], [hypothesis], 4, lowercase, False)


# -- accuracy and perplexity ------------------------------------------------------------------


def _token_weights(labels: Any, sequence_length: Any, sample_weight: Any) -> Any:
    """float32 weights of the shape of ``labels``: 0 past the lengths, times ``sample_weight``."""
    weights = tf.ones_like(labels, dtype=tf.float32)
    if sequence_length is not None:
        if labels.shape.rank != 2:
            raise ValueError(
                "with sequence_length, labels must be [batch, max_time], got shape "
                f"{tuple(labels.shape)}"
            )
        sequence_length = tf.convert_to_tensor(sequence_length)
        if sequence_length.shape.rank != 1 or not sequence_length.dtype.is_integer:
            raise ValueError(
                "sequence_length must be [batch] int lengths, got shape "
                f"{tuple(sequence_length.shape)} and dtype {sequence_length.dtype.name}"
            )
        if not sequence_length.shape.is_compatible_with(labels.shape[:1]):
            raise ValueError(
                f"sequence_length must be [batch] with batch {labels.shape[0]} (labels shape "
                f"{tuple(labels.shape)}), got shape {tuple(sequence_length.shape)}"
            )
        mask = tf.sequence_mask(sequence_length, tf.shape(labels)[1], dtype=tf.float32)
        weights *= mask
    if sample_weight is not None:
        sample_weight = tf.cast(tf.convert_to_tensor(sample_weight), tf.float32)
        rank = sample_weight.shape.rank
        if rank is None or rank > labels.shape.rank:
            raise ValueError(
                f"sample_weight must be [batch] or the shape of labels {tuple(labels.shape)}, "
                f"got shape {tuple(sample_weight.shape)}"
            )
        expected = labels.shape[:rank]
        if not sample_weight.shape.is_compatible_with(expected):
            raise ValueError(
                f"sample_weight must be [batch] or the shape of labels {tuple(labels.shape)}, "
                f"got shape {tuple(sample_weight.shape)}"
            )
        weights *= sample_weight[(Ellipsis,) + (None,) * (labels.shape.rank - rank)]
    return weights


def _correct_and_weights(labels: Any, preds: Any, sequence_length: Any, sample_weight: Any):
    labels = tf.convert_to_tensor(labels)
    preds = tf.convert_to_tensor(preds)
    if labels.shape.rank is None or not labels.shape.is_compatible_with(preds.shape):
        raise ValueError(
            f"labels and preds must have the same shape, got labels shape {tuple(labels.shape)} "
            f"and preds shape {tuple(preds.shape)}"
        )
    weights = _token_weights(labels, sequence_length, sample_weight)
    correct = tf.cast(tf.equal(preds, tf.cast(labels, preds.dtype)), tf.float32)
    return tf.reduce_sum(correct * weights), tf.reduce_sum(weights)


def _nll_and_weights(labels: Any, logits: Any, sequence_length: Any, sample_weight: Any):
    labels = tf.convert_to_tensor(labels)
    logits = tf.convert_to_tensor(logits)
    if labels.shape.rank != 2 or logits.shape.rank != 3:
        raise ValueError(
            "labels must be [batch, max_time] ids and logits [batch, max_time, vocab_size], got "
            f"labels shape {tuple(labels.shape)} and logits shape {tuple(logits.shape)}"
        )
    weights = _token_weights(labels, sequence_length, sample_weight)
    nll = losses.sequence_sparse_softmax_cross_entropy(
        labels,
        logits,
        sequence_length,
        average_across_batch=False,
        sum_over_timesteps=False,
    )
    return tf.reduce_sum(nll * weights), tf.reduce_sum(weights)


def accuracy(
    labels: Any, preds: Any, sequence_length: Any = None, sample_weight: Any = None
) -> tf.Tensor:
    """The fraction of ``preds`` equal to ``labels`` in one batch, as a float32 scalar.

    Args:
        labels: the true ids (or values), any shape.
        preds: the predictions, of the shape of ``labels``; ``labels`` are cast to their dtype.
        sequence_length: for ``[batch, max_time]`` labels, the ``[batch]`` valid lengths; the
            steps past them do not count.
        sample_weight: a weight per element of ``labels``, or per row (``[batch]``).

    Returns:
        The (weighted) share of correct predictions; NaN when nothing counts.

    Example:
        >>> labels = tf.constant([[4, 5, 2], [6, 2, 0]])
        >>> preds = tf.constant([[4, 7, 2], [6, 2, 9]])
        >>> round(float(accuracy(labels, preds, sequence_length=[3, 2])), 4)  # 4 of 5 valid
        0.8
    """
    correct, count = _correct_and_weights(labels, preds, sequence_length, sample_weight)
    return correct / count


def perplexity(
    labels: Any, logits: Any, sequence_length: Any = None, sample_weight: Any = None
) -> tf.Tensor:
    """Per-token perplexity of one batch: ``exp`` of the mean cross entropy of the valid tokens.

    Args:
        labels: ``[batch, max_time]`` int target ids.
        logits: ``[batch, max_time, vocab_size]`` unnormalized log-probabilities, any float
            dtype (computed in float32).
        sequence_length: ``[batch]`` valid lengths, or ``None`` for every step.
        sample_weight: a weight per token (``[batch, max_time]``) or per sequence (``[batch]``).

    Returns:
        A float32 scalar; NaN when no token counts.

    Example:
        Uniform logits over 10 ids give a perplexity of 10, whatever the labels:

        >>> round(float(perplexity([[1, 2, 0]], tf.zeros([1, 3, 10]), sequence_length=[2])), 4)
        10.0
    """
    nll, count = _nll_and_weights(labels, logits, sequence_length, sample_weight)
    return tf.exp(nll / count)


@keras.saving.register_keras_serializable(package="texkit")
class Accuracy(keras.metrics.Metric):
    """Accuracy accumulated over batches: correct predictions over all counted elements.

    Args:
        name: the metric's name.
        dtype: the dtype of the accumulators (float32 by default).

    Call ``update_state(labels, preds, sequence_length=None, sample_weight=None)`` per batch
    (arguments as in :func:`accuracy`), then ``result()``; ``reset_state()`` starts over.
    ``result()`` is NaN before anything counted.

    Example:
        >>> metric = Accuracy()
        >>> metric.update_state([[4, 5, 2], [6, 2, 0]], [[4, 7, 2], [6, 2, 9]],
        ...                     sequence_length=[3, 2])
        >>> metric.update_state([[8, 2, 0]], [[3, 2, 5]], sequence_length=[2])
        >>> round(float(metric.result()), 4)  # (4 + 1) correct of (5 + 2) valid steps
        0.7143
    """

    def __init__(self, name: str = "accuracy", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(
        self, labels: Any, preds: Any, sequence_length: Any = None, sample_weight: Any = None
    ) -> None:
        correct, count = _correct_and_weights(labels, preds, sequence_length, sample_weight)
        self.correct.assign_add(tf.cast(correct, self.correct.dtype))
        self.count.assign_add(tf.cast(count, self.count.dtype))

    def result(self) -> Any:
        return self.correct / self.count


@keras.saving.register_keras_serializable(package="texkit")
class Perplexity(keras.metrics.Metric):
    """Per-token perplexity over a dataset: ``exp(total cross entropy / number of tokens)``.

    Unlike the mean of per-batch perplexities, this weighs every token the same, however the
    tokens fall into batches.

    Args:
        name: the metric's name.
        dtype: the dtype of the accumulators (float32 by default).

    Call ``update_state(labels, logits, sequence_length=None, sample_weight=None)`` per batch
    (arguments as in :func:`perplexity`), then ``result()``; ``reset_state()`` starts over.
    ``result()`` is NaN before any token counted.

    Example:
        A language model's perplexity over a dataset of dicts as :mod:`texkit.data` makes them,
        each step predicting the next token (here with uniform logits over 10 ids):

        >>> dataset = tf.data.Dataset.from_tensor_slices(
        ...     {"text_ids": [[1, 7, 8, 2], [1, 6, 2, 0], [1, 9, 9, 2]], "length": [4, 3, 4]}
        ... ).batch(2)
        >>> metric = Perplexity()
        >>> for batch in dataset:
        ...     labels = batch["text_ids"][:, 1:]
        ...     logits = tf.zeros(tf.concat([tf.shape(labels), [10]], 0))
        ...     metric.update_state(labels, logits, sequence_length=batch["length"] - 1)
        >>> round(float(metric.result()), 4)
        10.0
    """

    def __init__(self, name: str = "perplexity", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.total_nll = self.add_variable(shape=(), initializer="zeros", name="total_nll")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(
        self, labels: Any, logits: Any, sequence_length: Any = None, sample_weight: Any = None
    ) -> None:
        total_nll, count = _nll_and_weights(labels, logits, sequence_length, sample_weight)
        self.total_nll.assign_add(tf.cast(total_nll, self.total_nll.dtype))
        self.count.assign_add(tf.cast(count, self.count.dtype))

    def result(self) -> Any:
        return tf.exp(self.total_nll / self.count)
