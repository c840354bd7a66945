"""SentenceBLEU: each sample's sentence BLEU against its reference text, as Texar's seq2seq_rl.

Texar's policy-gradient example scored each sample with ``sentence_bleu([reference], sample,
smooth=True)`` in Python; this reward does the same with texkit's
:func:`texkit.evals.sentence_bleu` (sacrebleu's BLEU on whitespace-separated tokens, ``smooth``
its add-one smoothing of the orders from 2 up), on the host (``in_graph`` is ``False``). Scores
are on BLEU's scale, 0 to 100, as Texar's were; weight the reward (e.g. by 0.01 in a
:class:`~texkit.rewards.CombinedReward`) for another scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.evals.bleu import sentence_bleu
from texkit.rewards.base import Samples, feature, register
from texkit.rewards.host import HostReward

__all__ = ["SentenceBLEU"]


@register
class SentenceBLEU(HostReward):
    """Sentence BLEU (0 to 100) of each sample's text against its reference text.

    Args:
        reference_key: the feature holding the references: tf.string ``[n]`` (one reference per
            sample) or ``[n, r]`` (up to ``r`` references each; empty strings are padding and
            skipped, but each sample needs one non-empty reference).
        max_order: the longest n-gram counted.
        lowercase: compare lowercased tokens.
        smooth: add-one smoothing of the orders from 2 up (Texar's ``smooth=True``), so that a
            sample sharing no 4-gram with its reference still scores above 0.
        name: the name errors and logs use.

    Needs ``samples.texts`` (whitespace-separated tokens: the policy's detokenized samples).

    Example:
        >>> reward = SentenceBLEU(reference_key="target_text")
        >>> samples = Samples(
        ...     ids=tf.zeros([2, 4], tf.int32), lengths=tf.constant([3, 2]),
        ...     texts=tf.constant(["the cat sat", "a dog"]),
        ...     features={"target_text": tf.constant(["the cat sat", "the cat sat"])})
        >>> [round(float(v), 2) for v in reward(samples)]
        [100.0, 0.0]
    """

    def __init__(
        self,
        reference_key: str = "target_text",
        max_order: int = 4,
        lowercase: bool = False,
        smooth: bool = True,
        name: str | None = None,
    ):
        super().__init__(name)
        if not isinstance(reference_key, str) or not reference_key:
            raise ValueError(f"reference_key must be a feature name, got {reference_key!r}")
        if isinstance(max_order, bool) or not isinstance(max_order, int) or max_order < 1:
            raise ValueError(f"max_order must be an int >= 1, got {max_order!r}")
        for arg, value in [("lowercase", lowercase), ("smooth", smooth)]:
            if not isinstance(value, bool):
                raise TypeError(f"{arg} must be a bool, got {value!r}")
        self.reference_key = reference_key
        self.max_order = max_order
        self.lowercase = lowercase
        self.smooth = smooth

    def host_inputs(self, samples: Samples) -> dict[str, tf.Tensor]:
        if samples.texts is None:
            raise ValueError(
                f"{self.display_name} scores texts, but samples.texts is None: the policy must "
                "detokenize its samples (give it a tokenizer or vocabulary)"
            )
        references = feature(samples, self.reference_key, self.display_name)
        if references.dtype != tf.string or references.shape.rank not in (None, 1, 2):
            raise TypeError(
                f"{self.display_name}: the references features[{self.reference_key!r}] must be "
                f"tf.string [n] or [n, r], got {references.dtype.name} of shape "
                f"{references.shape.as_list() if references.shape.rank is not None else '?'}"
            )
        return {"texts": samples.texts, "references": references}

    def score(self, arrays: Mapping[str, np.ndarray], n: int) -> list[float]:
        texts, references = arrays["texts"], arrays["references"]
        if references.ndim == 1:
            references = references[:, None]
        values = []
        for i in range(n):
            refs = [r for r in references[i].tolist() if r != ""]
            if not refs:
                raise ValueError(
                    f"{self.display_name}: sample {i} has no reference (features"
                    f"[{self.reference_key!r}] holds only empty strings there)"
                )
            bleu = sentence_bleu(refs, texts[i], self.max_order, self.lowercase, self.smooth)
            values.append(float(bleu))
        return values

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {
            "reference_key": self.reference_key,
            "max_order": self.max_order,
            "lowercase": self.lowercase,
            "smooth": self.smooth,
            "name": self.name,
        }
