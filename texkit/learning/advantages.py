"""Baselines: from the rewards of sampled sequences to their advantages.

The policy gradient ``E[(r - b) grad log p(y)]`` stays unbiased for any baseline ``b`` that does
not depend on the sample ``y`` itself, and its variance falls as ``b`` approaches the expected
reward. The baselines (``baseline.type`` of :class:`~texkit.learning.PolicyGradient`):

* ``"none"``: ``A = r`` (REINFORCE as Williams, 1992 wrote it; Texar's ``SeqPGAgent`` default).
* ``"moving_average"``: ``A = r - b`` with ``b`` an exponential moving average of the batches'
  mean reward (``b <- decay * b + (1 - decay) * mean(r)``, started at the first batch's mean),
  the mean taken over every replica.
* ``"self_critical"``: ``A = r - r_greedy``, the reward of the policy's own greedy sequence for
  the same input (Rennie et al., 2017).
* ``"group"``: the samples of one input form a group; ``A = r - mean_group(r)``, divided by
  the group's standard deviation (population, plus ``epsilon``) when ``scale`` (group-relative
  advantages, Shao et al., 2024). Each group's advantages sum to zero.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["BASELINES", "group_advantages", "moving_average_advantages"]

BASELINES = ("none", "moving_average", "self_critical", "group")


def group_advantages(
    rewards: Any, num_samples: int, scale: bool = True, epsilon: float = 1e-6
) -> Any:
    """``[n]`` group-relative advantages of ``rewards [n]``, ``n = batch * num_samples``, row
    ``i * num_samples + j`` being input ``i``'s sample ``j``.

    Raises:
        ValueError: ``num_samples`` is below 2 (a group of one has no spread), or ``rewards``
            is not ``[n]``.
    """
    if num_samples < 2:
        raise ValueError(
            f"num_samples: the group baseline needs at least 2 samples per input, got {num_samples}"
        )
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    if rewards.shape.rank != 1:
        raise ValueError(f"rewards must be [n], got shape {tuple(rewards.shape)}")
    groups = tf.reshape(rewards, [-1, num_samples])
    mean = tf.reduce_mean(groups, axis=1, keepdims=True)
    centered = groups - mean
    if scale:
        std = tf.sqrt(tf.reduce_mean(tf.square(centered), axis=1, keepdims=True))
        centered = centered / (std + epsilon)
    return tf.reshape(centered, [-1])


def moving_average_advantages(rewards: Any, average: tf.Variable, started: tf.Variable,
                              decay: float) -> Any:  # fmt: skip
    """``rewards - b`` with ``b`` the moving average held in ``average`` (read before this
    batch updates it; the first batch's own mean when ``started`` is False), then the update.
    The batch mean is the mean over every replica."""
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    local = tf.stack([tf.reduce_sum(rewards), tf.cast(tf.size(rewards), tf.float32)])
    context = tf.distribute.get_replica_context()
    total = context.all_reduce("sum", local) if context is not None else local
    mean = total[0] / tf.maximum(total[1], 1.0)
    baseline = tf.where(started, average, mean)
    average.assign(decay * baseline + (1.0 - decay) * mean)
    started.assign(True)
    return rewards - baseline
