"""Rewards: scores of sampled sequences for sequence-level learning (see
``docs/guide/sequence_learning.md``).

A reward maps :class:`Samples` (the sampled ids, lengths, texts and the batch's features
repeated per sample) to float32 ``[n]``, one score per sample, checked (see
:mod:`texkit.rewards.base`). In the graph: :class:`ExactMatch`, :class:`ClassifierProbability`,
:class:`FunctionReward` with ``python=False``; in Python on the host: :class:`SentenceBLEU`,
:class:`FunctionReward`. :class:`CombinedReward` sums them with weights; :func:`as_reward` makes
one from a function or from hparams.
"""

from texkit.rewards.base import MissingFeatureError, Reward, Samples, check_reward_runs_on
from texkit.rewards.bleu import SentenceBLEU
from texkit.rewards.classifier import ClassifierProbability
from texkit.rewards.combined import CombinedReward
from texkit.rewards.exact_match import ExactMatch
from texkit.rewards.function import FunctionReward
from texkit.rewards.host import HostReward
from texkit.rewards.resolve import as_reward

__all__ = [
    "ClassifierProbability",
    "CombinedReward",
    "ExactMatch",
    "FunctionReward",
    "HostReward",
    "MissingFeatureError",
    "Reward",
    "Samples",
    "SentenceBLEU",
    "as_reward",
    "check_reward_runs_on",
]
