"""BLEU through sacrebleu, with Texar's four BLEU functions.

The four BLEU functions keep Texar's names and arguments; the computation is sacrebleu's
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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import sacrebleu

__all__ = [
    "BLEUScore",
    "corpus_bleu",
    "corpus_bleu_moses",
    "sentence_bleu",
    "sentence_bleu_moses",
]


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


def _sentence_bleu(
    references: Any, hypothesis: Any, max_order: int, lowercase: bool, smooth: bool
) -> BLEUScore:
    """:func:`_bleu` of a corpus of one hypothesis and its references."""
    if not _is_sequence(references):
        raise TypeError(
            f"references must be a list of references, got {type(references).__name__}; for "
            "one reference, pass [reference]"
        )
    return _bleu([references], [hypothesis], max_order, lowercase, smooth)


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
            2004; see :mod:`texkit.evals.bleu`).

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
    return _sentence_bleu(references, hypothesis, max_order, lowercase, smooth)


def corpus_bleu_moses(
    list_of_references: Any,
    hypotheses: Any,
    lowercase: bool = False,
) -> BLEUScore:
    """Corpus BLEU as Moses' ``multi-bleu.perl`` computes it on tokenized text, from 0 to 100.

    The score of ``multi-bleu.perl [-lc] references < hypotheses``, unrounded; see
    :mod:`texkit.evals.bleu` for the equivalence.

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
    return _sentence_bleu(references, hypothesis, 4, lowercase, False)
