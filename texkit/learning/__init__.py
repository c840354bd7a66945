"""Learning beyond likelihood: policy gradient, adversarial training and VAEs over texkit's
decoders (see ``docs/guide/sequence_learning.md``)."""

from texkit.learning.advantages import group_advantages, moving_average_advantages
from texkit.learning.adversarial import AdversarialLanguageModel
from texkit.learning.discriminator import TextDiscriminator, check_vocab_sizes
from texkit.learning.gumbel_gan import GumbelSoftmaxGAN
from texkit.learning.policies import DecoderPolicy, Rollout, vocab_detokenizer
from texkit.learning.policy_gradient import PolicyGradient
from texkit.learning.row_sampling import row_choice, row_keys
from texkit.learning.seqgan import (
    SeqGAN,
    prefix_discriminator_loss,
    seqgan_advantages,
    step_rewards,
)
from texkit.learning.vae import (
    KLAnnealing,
    gaussian_kl,
    importance_weighted_nll,
    word_dropout,
)

__all__: list[str] = [
    "AdversarialLanguageModel",
    "GumbelSoftmaxGAN",
    "SeqGAN",
    "TextDiscriminator",
    "check_vocab_sizes",
    "prefix_discriminator_loss",
    "seqgan_advantages",
    "step_rewards",
    "DecoderPolicy",
    "PolicyGradient",
    "Rollout",
    "group_advantages",
    "moving_average_advantages",
    "row_choice",
    "row_keys",
    "vocab_detokenizer",
    "KLAnnealing",
    "gaussian_kl",
    "importance_weighted_nll",
    "word_dropout",
]
