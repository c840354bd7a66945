"""Losses: sequence cross entropies (:mod:`texkit.losses.sequence_losses`), policy-gradient losses
(:mod:`texkit.losses.pg_losses`) and discounted rewards (:mod:`texkit.losses.discounted_rewards`),
adversarial losses (:mod:`texkit.losses.adversarial_losses`) and entropies
(:mod:`texkit.losses.entropy`), all masked and reduced by Texar's flags
(:mod:`texkit.losses.reduction`)."""

from texkit.losses.adversarial_losses import binary_adversarial_losses
from texkit.losses.discounted_rewards import discount_reward
from texkit.losses.entropy import entropy_with_logits, sequence_entropy_with_logits
from texkit.losses.pg_losses import pg_loss_with_log_probs, pg_loss_with_logits
from texkit.losses.reduction import mask_and_reduce
from texkit.losses.sequence_losses import (
    sequence_sigmoid_cross_entropy,
    sequence_softmax_cross_entropy,
    sequence_sparse_softmax_cross_entropy,
)

__all__ = [
    "binary_adversarial_losses",
    "discount_reward",
    "entropy_with_logits",
    "mask_and_reduce",
    "pg_loss_with_log_probs",
    "pg_loss_with_logits",
    "sequence_entropy_with_logits",
    "sequence_sigmoid_cross_entropy",
    "sequence_softmax_cross_entropy",
    "sequence_sparse_softmax_cross_entropy",
]
