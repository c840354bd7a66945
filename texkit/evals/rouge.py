"""ROUGE-N, ROUGE-L and ROUGE-Lsum through Google's ``rouge-score``, over a corpus and a dataset.

:func:`rouge` scores a corpus and :class:`ROUGE` accumulates over a dataset; both give, for each
ROUGE type, the mean over hypothesis/reference pairs of the F-measure that
``rouge_score.rouge_scorer.RougeScorer`` computes for the pair, on its scale of 0 to 1 (not 0 to
100). texkit's part is the batching and the Keras metric; the counting is rouge-score's.

* ``rouge1`` ... ``rouge9``: n-gram overlap; ``rougeL``: the longest common subsequence of the
  two token sequences; ``rougeLsum``: the summary-level LCS of ROUGE-1.5.5, which splits each
  summary into sentences **on newlines** (as rouge-score does): put one sentence per line, or
  ``rougeLsum`` equals ``rougeL`` on a one-line text.
* With several references for a hypothesis, each type takes the reference with the highest F
  (rouge-score's ``score_multi``).

.. warning::
   rouge-score's default tokenizer lowercases the text and then **drops every character outside**
   ``[a-z0-9]`` (each becomes a word break): Cyrillic, Greek, Arabic or Chinese text has no
   tokens left and scores 0, and words with letters such as ``ç``, ``ı``, ``ü`` or ``ß`` are
   cut into ASCII pieces ("straße" becomes "stra", "e"), so such text is scored on that
   residue. For anything but plain English, pass ``tokenizer=UnicodeTokenizer()`` (Unicode
   letters, marks and digits; Chinese and Japanese characters one token each) or your own
   object with a ``tokenize(text) -> list[str]`` method.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from texkit.evals._host_metric import HostMetric
from texkit.evals._texts import as_reference_lists, as_texts, check_corpus

__all__ = ["ROUGE", "UnicodeTokenizer", "rouge"]

DEFAULT_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
_ROUGE_TYPE = re.compile(r"rouge[1-9]|rougeL|rougeLsum")

# Scripts written without spaces between words: Han (CJK ideographs, with the extensions and
# compatibility blocks), Hiragana and Katakana. Hangul is left out: Korean separates words.
_CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x323AF),
)


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


class UnicodeTokenizer:
    """A tokenizer for ROUGE in any script: Unicode-normalized, lowercased word tokens.

    The text is NFKC-normalized (full-width forms become plain ones) and lowercased; a token is
    a maximal run of letters, combining marks and digits (Unicode categories L, M and N), so
    punctuation, symbols and whitespace separate tokens and are dropped. With ``split_cjk``, every
    Chinese or Japanese character (Han, Hiragana, Katakana) is a token of its own, the usual
    unit for ROUGE on text written without spaces. No stemming.

    Pass it as ``tokenizer=`` to :func:`rouge` or :class:`ROUGE`.

    Args:
        split_cjk: make each Han, Hiragana or Katakana character a token.

    Example:
        >>> UnicodeTokenizer().tokenize("İstanbul'da Çay, ÇAY! 北京欢迎你")
        ['i̇stanbul', 'da', 'çay', 'çay', '北', '京', '欢', '迎', '你']
    """

    def __init__(self, split_cjk: bool = True):
        if not isinstance(split_cjk, bool):
            raise TypeError(f"split_cjk must be a bool, got {split_cjk!r}")
        self.split_cjk = split_cjk

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, in order."""
        tokens, current = [], []
        for char in unicodedata.normalize("NFKC", text).lower():
            if self.split_cjk and _is_cjk(char):
                if current:
                    tokens.append("".join(current))
                    current = []
                tokens.append(char)
            elif unicodedata.category(char)[0] in "LMN":
                current.append(char)
            elif current:
                tokens.append("".join(current))
                current = []
        if current:
            tokens.append("".join(current))
        return tokens

    def get_config(self) -> dict[str, Any]:
        return {"split_cjk": self.split_cjk}

    def __repr__(self) -> str:
        return f"UnicodeTokenizer(split_cjk={self.split_cjk})"


def _check_rouge_types(rouge_types: Any) -> tuple[str, ...]:
    if isinstance(rouge_types, str) or not isinstance(rouge_types, Sequence) or not rouge_types:
        raise ValueError(
            f"rouge_types must be a non-empty list such as {list(DEFAULT_ROUGE_TYPES)}, got "
            f"{rouge_types!r}"
        )
    for rouge_type in rouge_types:
        if not isinstance(rouge_type, str) or not _ROUGE_TYPE.fullmatch(rouge_type):
            raise ValueError(
                f"rouge_types holds {rouge_type!r}: each must be 'rouge1' ... 'rouge9', 'rougeL' "
                "or 'rougeLsum'"
            )
    if len(set(rouge_types)) != len(rouge_types):
        raise ValueError(f"rouge_types holds a type twice: {list(rouge_types)}")
    return tuple(rouge_types)


def _scorer(rouge_types: tuple[str, ...], use_stemmer: Any, tokenizer: Any) -> Any:
    if not isinstance(use_stemmer, bool):
        raise TypeError(f"use_stemmer must be a bool, got {use_stemmer!r}")
    if tokenizer is not None:
        if not callable(getattr(tokenizer, "tokenize", None)):
            raise TypeError(
                f"tokenizer must have a tokenize(text) -> list[str] method, got {tokenizer!r}"
            )
        if use_stemmer:
            raise ValueError(
                "use_stemmer=True works only with rouge-score's default tokenizer; with "
                "tokenizer=..., stem inside your tokenizer's tokenize()"
            )
    # Imported here: rouge-score loads nltk, which takes a second.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=use_stemmer, tokenizer=tokenizer)


def _f_sums(scorer: Any, rouge_types: tuple[str, ...], hypotheses: Any, references: Any) -> Any:
    """The sums over the pairs of each type's F-measure, and the number of pairs."""
    hyps = as_texts(hypotheses, "hypotheses")
    refs = as_reference_lists(references, len(hyps), "references")
    sums = np.zeros([len(rouge_types)], dtype=np.float64)
    for hypothesis, targets in zip(hyps, refs, strict=True):
        scores = scorer.score_multi(targets, hypothesis)
        sums += [scores[rouge_type].fmeasure for rouge_type in rouge_types]
    return sums, len(hyps)


def rouge(
    hypotheses: Any,
    references: Any,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    use_stemmer: bool = False,
    tokenizer: Any = None,
) -> dict[str, float]:
    """ROUGE F-measures of a corpus: for each type, the mean over the pairs, from 0 to 1.

    Args:
        hypotheses: the texts to score (``str`` or UTF-8 ``bytes``; a list, a 1-D array or an
            eager ``tf.string`` tensor).
        references: one item per hypothesis: a reference text, or a list of references (each
            type then takes the reference with the highest F).
        rouge_types: which scores, from ``rouge1`` ... ``rouge9``, ``rougeL``, ``rougeLsum``
            (sentences split on newlines; see :mod:`texkit.evals.rouge`).
        use_stemmer: apply the Porter stemmer to the tokens of rouge-score's default tokenizer
            (words longer than three letters).
        tokenizer: an object with ``tokenize(text) -> list[str]``, e.g. :class:`UnicodeTokenizer`;
            ``None`` is rouge-score's default tokenizer, **which drops every character outside
            [a-z0-9]** after lowercasing: use another one for non-English text.

    Returns:
        ``{rouge_type: mean F-measure}``, floats from 0 to 1.

    Raises:
        ValueError: an empty corpus, not one reference item per hypothesis, an unknown or
            repeated ROUGE type, or ``use_stemmer`` with a ``tokenizer``.
        TypeError: a hypothesis or reference that is not text, or a tokenizer without
            ``tokenize``.

    Example:
        >>> scores = rouge(["the cat sat on the mat"], ["the cat lay on the mat"])
        >>> {name: round(value, 4) for name, value in scores.items()}
        {'rouge1': 0.8333, 'rouge2': 0.6, 'rougeL': 0.8333, 'rougeLsum': 0.8333}
        >>> rouge(["Кошка сидит"], ["Кошка сидит"], ["rouge1"])  # default tokenizer: no tokens
        {'rouge1': 0.0}
        >>> rouge(["Кошка сидит"], ["Кошка сидит"], ["rouge1"], tokenizer=UnicodeTokenizer())
        {'rouge1': 1.0}
    """
    rouge_types = _check_rouge_types(rouge_types)
    scorer = _scorer(rouge_types, use_stemmer, tokenizer)
    hyps = as_texts(hypotheses, "hypotheses")
    check_corpus(hyps, "hypotheses")
    sums, count = _f_sums(scorer, rouge_types, hyps, references)
    return {
        rouge_type: float(total / count)
        for rouge_type, total in zip(rouge_types, sums, strict=True)
    }


@keras.saving.register_keras_serializable(package="texkit")
class ROUGE(HostMetric):
    """ROUGE F-measures accumulated over a dataset: the mean over every pair seen, per type.

    Call ``update_state(hypotheses, references)`` per batch: ``[batch]`` string tensors (or a
    ``[batch, num_references]`` tensor of references, each row's references all real, or a
    ragged ``[batch, None]`` one), or Python lists as :func:`rouge` takes them. ``result()`` is
    ``{rouge_type: float scalar}``, equal to :func:`rouge` over all the pairs however they were
    batched; NaN before any pair. Hypotheses come first, as in :func:`rouge` (Keras' ``compile``
    would pass the references first).

    The counting runs in Python on the host (``tf.numpy_function`` inside a ``tf.function``,
    where an error reaches the caller as a ``tf.errors.OpError`` holding its message): not under
    XLA (``jit_compile=True``) and not on TPUs.

    Args:
        rouge_types, use_stemmer: as in :func:`rouge`.
        tokenizer: ``None`` (rouge-score's default tokenizer, ASCII only: see
            :mod:`texkit.evals.rouge`) or a :class:`UnicodeTokenizer`; the metric is saved with
            its config. Any other tokenizer works too but cannot be saved with the metric.
        name: the metric's name (default ``"rouge"``).
        dtype: the dtype of the results (float32 by default).

    Example:
        >>> metric = ROUGE(rouge_types=["rouge1", "rougeL"])
        >>> metric.update_state(tf.constant(["the cat sat"]), tf.constant(["the cat sat down"]))
        >>> metric.update_state(["a dog"], [["the dog", "a dog barked"]])
        >>> {name: round(float(value), 4) for name, value in metric.result().items()}
        {'rouge1': 0.8286, 'rougeL': 0.8286}
    """

    def __init__(
        self,
        rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
        use_stemmer: bool = False,
        tokenizer: Any = None,
        name: str = "rouge",
        dtype: Any = None,
    ):
        if isinstance(tokenizer, dict):
            tokenizer = UnicodeTokenizer(**tokenizer)
        rouge_types = _check_rouge_types(rouge_types)
        scorer = _scorer(rouge_types, use_stemmer, tokenizer)
        super().__init__(len(rouge_types), name=name, dtype=dtype)
        self.rouge_types, self.use_stemmer, self.tokenizer = rouge_types, use_stemmer, tokenizer
        self._scorer = scorer

    def batch_statistics(self, hypotheses: Any, references: Any) -> np.ndarray:
        return _f_sums(self._scorer, self.rouge_types, hypotheses, references)[0]

    def result(self) -> dict[str, tf.Tensor]:
        means = tf.cast(self.totals / self.count, self.dtype)
        return {rouge_type: means[i] for i, rouge_type in enumerate(self.rouge_types)}

    def get_config(self) -> dict[str, Any]:
        if self.tokenizer is not None and not isinstance(self.tokenizer, UnicodeTokenizer):
            raise TypeError(
                f"ROUGE with tokenizer {self.tokenizer!r} cannot be saved: only None or a "
                "UnicodeTokenizer can"
            )
        tokenizer = None if self.tokenizer is None else self.tokenizer.get_config()
        return {
            **super().get_config(),
            "rouge_types": list(self.rouge_types),
            "use_stemmer": self.use_stemmer,
            "tokenizer": tokenizer,
        }
