"""CombinedReward: a weighted sum of rewards, e.g. BLEU on 0-1 plus a length bonus.

It runs in the graph when all its rewards do; each reward's values are checked on their own, so
an error names the reward that gave them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from texkit.rewards.base import Reward, Samples, register
from texkit.rewards.resolve import as_reward

__all__ = ["CombinedReward"]


@register
class CombinedReward(Reward):
    """``sum_i weights[i] * rewards[i](samples)``.

    Args:
        rewards: the rewards, each anything :func:`~texkit.rewards.as_reward` takes (a reward,
            a Python function over texts, a registry name or a ``{"type", "kwargs"}`` dict).
        weights: one finite number per reward (default: 1 each).
        name: the name errors and logs use.

    Example:
        >>> from texkit.rewards import ExactMatch, FunctionReward
        >>> reward = CombinedReward(
        ...     [ExactMatch("target_text"), lambda texts, features: [0.1 * len(t) for t in texts]],
        ...     weights=[1.0, -1.0])
        >>> samples = Samples(ids=tf.zeros([2, 2], tf.int32), lengths=tf.constant([2, 2]),
        ...                   texts=tf.constant(["ab", "ba"]),
        ...                   features={"target_text": tf.constant(["ab", "ab"])})
        >>> [round(float(v), 2) for v in reward(samples)]
        [0.8, -0.2]
    """

    def __init__(
        self,
        rewards: Sequence[Any],
        weights: Sequence[float] | None = None,
        name: str | None = None,
    ):
        super().__init__(name)
        if isinstance(rewards, (str, bytes)) or not isinstance(rewards, Sequence) or not rewards:
            raise ValueError(f"rewards must be a non-empty list of rewards, got {rewards!r}")
        self.rewards = [as_reward(r, f"rewards[{i}]") for i, r in enumerate(rewards)]
        if weights is None:
            weights = [1.0] * len(self.rewards)
        if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
            raise TypeError(f"weights must be a list of numbers, got {weights!r}")
        if len(weights) != len(self.rewards):
            raise ValueError(
                f"weights must hold one number per reward: {len(weights)} weights for "
                f"{len(self.rewards)} rewards"
            )
        for i, weight in enumerate(weights):
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise TypeError(f"weights[{i}] must be a number, got {weight!r}")
            if not math.isfinite(weight):
                raise ValueError(f"weights[{i}] must be finite, got {weight!r}")
        self.weights = [float(w) for w in weights]

    @property
    def in_graph(self) -> bool:  # type: ignore[override]
        """``True`` when every reward of the sum runs in the graph."""
        return all(reward.in_graph for reward in self.rewards)

    def compute(self, samples: Samples) -> tf.Tensor:
        total = None
        for weight, reward in zip(self.weights, self.rewards, strict=True):
            term = weight * reward(samples)
            total = term if total is None else total + term
        return total

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {"rewards": list(self.rewards), "weights": list(self.weights), "name": self.name}
