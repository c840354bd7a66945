"""chrF and TER through sacrebleu, over a corpus and accumulated over a dataset; BLEU too.

:func:`chrf` and :func:`ter` are sacrebleu's corpus scores (``sacrebleu.metrics.CHRF`` and
``TER``, ``corpus_score``), from 0 to 100 as sacrebleu gives them, on detokenized text
(sacrebleu does its own tokenization: none for chrF's character n-grams, tercom's for TER).
Each hypothesis has one or more references, and hypotheses may have different numbers of them.

* chrF (Popović, 2015): the F-score (``beta=2`` weighs recall twice as much as precision) of the
  character n-gram precision and recall averaged over orders 1 to ``char_order``; with
  ``word_order=2``, word unigrams and bigrams join in: chrF++.
  With several references, each hypothesis counts against the one it scores best with.
* TER (Snover et al., 2006): the number of edits (insertions, deletions, substitutions and
  shifts of word blocks) over the reference length; with several references, the fewest edits
  over the average reference length. Lower is better; it can exceed 100.

:class:`CHRF` and :class:`TER` are Keras metrics that add up sacrebleu's *sufficient statistics*
(per order, the hypothesis, reference and matching n-gram counts for chrF; the edits and the
reference length for TER), and :class:`BLEU` those of BLEU (matches and totals per order, the
hypothesis and reference lengths), so their result over a dataset equals sacrebleu's corpus score
over all of it, however it is batched, not a mean of per-batch scores. The statistics come from the
two methods sacrebleu's own significance tests (paired bootstrap resampling, approximate
randomization) call, ``_extract_corpus_statistics`` and ``_compute_score_from_stats``; they are
private by name, so texkit calls each in one place only (``_statistics`` and ``_score`` here),
checked on sacrebleu 2.6; ``tests/evals/test_chrf_ter.py`` fails if a release changes them.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import sacrebleu
import tensorflow as tf

from texkit.evals._host_metric import HostMetric
from texkit.evals._texts import as_reference_lists, as_texts, check_corpus

__all__ = ["BLEU", "CHRF", "TER", "chrf", "ter"]


def _corpus(hypotheses: Any, references: Any) -> tuple[list[str], list[list[str | None]]]:
    """Hypotheses, and sacrebleu's reference streams padded with ``None``."""
    hyps = as_texts(hypotheses, "hypotheses")
    check_corpus(hyps, "hypotheses")
    refs = as_reference_lists(references, len(hyps), "references")
    num_streams = max(len(r) for r in refs)
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(num_streams)]
    return hyps, streams


def _statistics(metric: Any, hypotheses: Any, references: Any) -> np.ndarray:
    """sacrebleu's statistics of a corpus, summed over its segments (float64)."""
    hyps, streams = _corpus(hypotheses, references)
    segments = metric._extract_corpus_statistics(hyps, streams)
    return np.asarray(segments, dtype=np.float64).sum(axis=0)


def _score(metric: Any, totals: np.ndarray) -> float:
    """sacrebleu's score from summed statistics, what ``corpus_score`` computes from them."""
    return float(metric._compute_score_from_stats(totals.tolist()).score)


def _check_int(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")
    return value


def _chrf_metric(char_order, word_order, beta, lowercase, whitespace, eps_smoothing):
    _check_int(char_order, "char_order", 0)
    _check_int(word_order, "word_order", 0)
    _check_int(beta, "beta", 1)
    if char_order + word_order == 0:
        raise ValueError("char_order and word_order are both 0: chrF needs some n-gram order")
    for what, value in (
        ("lowercase", lowercase),
        ("whitespace", whitespace),
        ("eps_smoothing", eps_smoothing),
    ):
        if not isinstance(value, bool):
            raise TypeError(f"{what} must be a bool, got {value!r}")
    return sacrebleu.metrics.CHRF(
        char_order=char_order,
        word_order=word_order,
        beta=beta,
        lowercase=lowercase,
        whitespace=whitespace,
        eps_smoothing=eps_smoothing,
    )


def _ter_metric(normalized, no_punct, asian_support, case_sensitive):
    for what, value in (
        ("normalized", normalized),
        ("no_punct", no_punct),
        ("asian_support", asian_support),
        ("case_sensitive", case_sensitive),
    ):
        if not isinstance(value, bool):
            raise TypeError(f"{what} must be a bool, got {value!r}")
    return sacrebleu.metrics.TER(
        normalized=normalized,
        no_punct=no_punct,
        asian_support=asian_support,
        case_sensitive=case_sensitive,
    )


def chrf(
    hypotheses: Any,
    references: Any,
    char_order: int = 6,
    word_order: int = 0,
    beta: int = 2,
    lowercase: bool = False,
    whitespace: bool = False,
    eps_smoothing: bool = False,
) -> float:
    """sacrebleu's corpus chrF (chrF++ with ``word_order=2``), from 0 to 100.

    Args:
        hypotheses: the texts to score (``str`` or UTF-8 ``bytes``; a list, a 1-D array or an
            eager ``tf.string`` tensor).
        references: one item per hypothesis: a reference text or a non-empty list of them.
        char_order: the longest character n-gram.
        word_order: the longest word n-gram (0 for chrF, 2 for chrF++).
        beta: recall weighs ``beta`` times as much as precision.
        lowercase: compare lowercased text.
        whitespace: keep whitespace in the character n-grams.
        eps_smoothing: sacrebleu's ``eps_smoothing`` (the chrF++.py / NLTK variant) instead of
            its default effective-order averaging.

    Returns:
        The score, what ``sacrebleu.metrics.CHRF(...).corpus_score`` gives.

    Raises:
        ValueError: an empty corpus, not one reference item per hypothesis, or bad orders.
        TypeError: a hypothesis or reference that is not text.

    Example:
        >>> round(chrf(["the cat sat on the mat"], ["the cat sat on a mat"]), 2)
        72.08
    """
    metric = _chrf_metric(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
    hyps, streams = _corpus(hypotheses, references)
    return float(metric.corpus_score(hyps, streams).score)


def ter(
    hypotheses: Any,
    references: Any,
    normalized: bool = False,
    no_punct: bool = False,
    asian_support: bool = False,
    case_sensitive: bool = False,
) -> float:
    """sacrebleu's corpus TER, from 0 (lower is better; it can exceed 100).

    Args:
        hypotheses, references: as in :func:`chrf`.
        normalized: tercom's normalization (punctuation split off, some symbols replaced).
        no_punct: remove punctuation.
        asian_support: with ``normalized``, split Chinese and Japanese characters.
        case_sensitive: compare case (by default text is lowercased, as in tercom).

    Returns:
        The score, what ``sacrebleu.metrics.TER(...).corpus_score`` gives: the total of the
        fewest edits per hypothesis over the total of the average reference lengths, times 100.

    Example:
        >>> round(ter(["the cat sat on the mat"], ["the cat sat on a mat"]), 2)  # 1 edit of 6
        16.67
    """
    metric = _ter_metric(normalized, no_punct, asian_support, case_sensitive)
    hyps, streams = _corpus(hypotheses, references)
    return float(metric.corpus_score(hyps, streams).score)


class _SacrebleuMetric(HostMetric):
    """A Keras metric summing a sacrebleu metric's statistics; ``result()`` is its score."""

    def __init__(self, metric: Any, num_statistics: int, arguments: dict, name: str, dtype: Any):
        super().__init__(num_statistics, name=name, dtype=dtype)
        self._sacrebleu = metric
        self._arguments = arguments  # the subclass's constructor arguments, for get_config

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._arguments}

    def batch_statistics(self, hypotheses: Any, references: Any) -> np.ndarray:
        return _statistics(self._sacrebleu, hypotheses, references)

    def result(self) -> tf.Tensor:
        value = self.host_result(lambda totals, count: _score(self._sacrebleu, totals), 1)
        return value[0]


@keras.saving.register_keras_serializable(package="texkit")
class CHRF(_SacrebleuMetric):
    """chrF over a dataset: sacrebleu's corpus chrF of all the pairs seen, from 0 to 100.

    Call ``update_state(hypotheses, references)`` per batch: ``[batch]`` string tensors (or a
    ``[batch, num_references]`` tensor of references, all real, or a ragged ``[batch, None]``
    one), or Python lists as :func:`chrf` takes them. Hypotheses come first, as in sacrebleu
    (Keras' ``compile`` would pass references first). ``result()`` equals :func:`chrf` over all
    the pairs, however they were batched (the metric adds up sacrebleu's statistics; see
    :mod:`texkit.evals.chrf_ter`); NaN before any pair.

    The statistics are counted in Python on the host (``tf.numpy_function`` inside a
    ``tf.function``, where an error reaches the caller as a ``tf.errors.OpError`` holding its
    message): not under XLA (``jit_compile=True``) and not on TPUs.

    Args:
        char_order, word_order, beta, lowercase, whitespace, eps_smoothing: as in :func:`chrf`.
        name: the metric's name (default ``"chrf"``).
        dtype: the dtype of the result (float32 by default).

    Example:
        >>> metric = CHRF()
        >>> metric.update_state(tf.constant(["the cat sat on the mat"]),
        ...                     tf.constant(["the cat sat on a mat"]))
        >>> metric.update_state(["a dog barked"], [["the dog barked", "a dog barks"]])
        >>> round(float(metric.result()), 2) == round(chrf(
        ...     ["the cat sat on the mat", "a dog barked"],
        ...     [["the cat sat on a mat"], ["the dog barked", "a dog barks"]]), 2)
        True
    """

    def __init__(
        self,
        char_order: int = 6,
        word_order: int = 0,
        beta: int = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
        name: str = "chrf",
        dtype: Any = None,
    ):
        metric = _chrf_metric(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
        arguments = {
            "char_order": char_order,
            "word_order": word_order,
            "beta": beta,
            "lowercase": lowercase,
            "whitespace": whitespace,
            "eps_smoothing": eps_smoothing,
        }
        super().__init__(metric, 3 * (char_order + word_order), arguments, name, dtype)


@keras.saving.register_keras_serializable(package="texkit")
class TER(_SacrebleuMetric):
    """TER over a dataset: sacrebleu's corpus TER of all the pairs seen.

    Used as :class:`CHRF` is (``update_state(hypotheses, references)``); ``result()`` equals
    :func:`ter` over all the pairs, however they were batched; NaN before any pair.

    Args:
        normalized, no_punct, asian_support, case_sensitive: as in :func:`ter`.
        name: the metric's name (default ``"ter"``).
        dtype: the dtype of the result (float32 by default).
    """

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
        name: str = "ter",
        dtype: Any = None,
    ):
        metric = _ter_metric(normalized, no_punct, asian_support, case_sensitive)
        arguments = {
            "normalized": normalized,
            "no_punct": no_punct,
            "asian_support": asian_support,
            "case_sensitive": case_sensitive,
        }
        super().__init__(metric, 2, arguments, name, dtype)


@keras.saving.register_keras_serializable(package="texkit")
class BLEU(_SacrebleuMetric):
    """Corpus BLEU over a dataset: sacrebleu's ``BLEU.corpus_score`` of all the pairs seen, 0 to
    100 (the BLEU of :mod:`texkit.evals.bleu`, whose functions take a whole corpus, as a metric).

    Used as :class:`CHRF` is (``update_state(hypotheses, references)``, hypotheses first as in
    sacrebleu); ``result()`` equals the corpus score over all the pairs, however they were
    batched (the metric adds up sacrebleu's match and length counts); NaN before any pair.

    Args:
        tokenize: sacrebleu's tokenizer: ``"13a"`` (its default, for detokenized text, what
            papers report), ``"none"`` for text already tokenized (as :func:`corpus_bleu`),
            ``"intl"``, ``"zh"``, ``"char"`` ...
        lowercase: compare lowercased text.
        smooth_method: ``"exp"`` (sacrebleu's default), ``"none"``, ``"floor"``, ``"add-k"``.
        max_ngram_order: the highest n-gram order (4).
        name: the metric's name (default ``"bleu"``).
        dtype: the dtype of the result (float32 by default).

    Example:
        >>> metric = BLEU()
        >>> metric.update_state(["the cat sat on the mat ."], [["the cat sat on a mat ."]])
        >>> metric.update_state(["a dog barked"], [["the dog barked", "a dog barks"]])
        >>> expected = sacrebleu.corpus_bleu(
        ...     ["the cat sat on the mat .", "a dog barked"],
        ...     [["the cat sat on a mat .", "the dog barked"], [None, "a dog barks"]])
        >>> round(float(metric.result()), 4) == round(expected.score, 4)
        True
    """

    def __init__(
        self,
        tokenize: str = "13a",
        lowercase: bool = False,
        smooth_method: str = "exp",
        max_ngram_order: int = 4,
        name: str = "bleu",
        dtype: Any = None,
    ):
        _check_int(max_ngram_order, "max_ngram_order", 1)
        if not isinstance(lowercase, bool):
            raise TypeError(f"lowercase must be a bool, got {lowercase!r}")
        if smooth_method not in sacrebleu.metrics.BLEU.SMOOTH_DEFAULTS:
            raise ValueError(
                f"smooth_method must be one of {sorted(sacrebleu.metrics.BLEU.SMOOTH_DEFAULTS)}, "
                f"got {smooth_method!r}"
            )
        if tokenize not in sacrebleu.metrics.BLEU.TOKENIZERS:
            raise ValueError(
                f"tokenize must be one of {sorted(sacrebleu.metrics.BLEU.TOKENIZERS)}, got "
                f"{tokenize!r}"
            )
        metric = sacrebleu.metrics.BLEU(
            tokenize=tokenize,
            lowercase=lowercase,
            smooth_method=smooth_method,
            max_ngram_order=max_ngram_order,
            force=True,
        )
        arguments = {
            "tokenize": tokenize,
            "lowercase": lowercase,
            "smooth_method": smooth_method,
            "max_ngram_order": max_ngram_order,
        }
        super().__init__(metric, 2 + 2 * max_ngram_order, arguments, name, dtype)
