"""Training text VAEs: KL annealing, word dropout, the KL term and an importance-weighted NLL.

The pieces a VAE's training step calls (Bowman et al., 2016, "Generating Sentences from a
Continuous Space"; Texar's ``vae_text``), with the posterior a
:class:`~texkit.core.diagonal_gaussian.DiagonalGaussian` sampled by
:class:`~texkit.modules.ReparameterizedStochasticConnector`:

* :class:`KLAnnealing`: the weight of the KL term, rising linearly from ``start`` to 1 as Texar's
  ``kl_anneal_hparams`` made it, as a function of the step counter (usable in a compiled step).
* :func:`word_dropout`: decoder inputs with tokens replaced by ``<UNK>`` at a rate, the start
  token never, so that the decoder must lean on the latent code.
* :func:`gaussian_kl`: ``KL(N(mean, exp(log_variance)) || N(0, I))`` per example.
* :func:`importance_weighted_nll`: ``-log p(x)`` estimated from K posterior samples (Burda et
  al., 2016), tighter than the ELBO's bound; texkit's addition to Texar's example.

Example of a training step's loss (``reconstruction`` the summed token NLL per verse)::

    annealing = KLAnnealing(start=0.1, warm_up=10, steps_per_epoch=230)
    inputs = word_dropout(decoder_inputs, 0.5, sequence_length, seed=seed_generator)
    kl = gaussian_kl(mean, log_variance)                      # [batch]
    loss = tf.reduce_mean(reconstruction + annealing(optimizer.iterations + 1) * kl)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.core.diagonal_gaussian import DiagonalGaussian
from texkit.data import Vocab

__all__ = ["KLAnnealing", "gaussian_kl", "importance_weighted_nll", "word_dropout"]


def _number(value: Any, name: str, low: float, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not low <= value <= high:
        bounds = f"[{low}, {high}]" if high != math.inf else f">= {low}"
        raise ValueError(f"{name} must be a number in {bounds}, got {value!r}")
    return float(value)


class KLAnnealing:
    """The KL weight of Texar's ``kl_anneal_hparams``: ``min(1, start + step * rate)``.

    Texar's ``vae_text`` started the weight at ``start`` and added ``rate = 1 / (warm_up *
    steps_per_epoch)`` before each training step, so the weight of the ``step``-th step (from 1)
    is ``min(1, start + step * rate)``: a line of slope ``1 / warm_up`` per epoch, reaching 1 after
    ``(1 - start) * warm_up`` epochs, then constant. Evaluation uses weight 1.

    Args:
        start: the weight before the first step, in ``[0, 1]``.
        warm_up: the number of epochs over which the weight would rise by 1 (0: weight 1 from the
            first step).
        steps_per_epoch: training steps per epoch (Texar: the training set's size over the batch
            size).

    Call arguments:
        step: the step counter, a Python int or an int tensor (``optimizer.iterations + 1`` in a
            training step).

    Returns:
        The weight, a float32 scalar tensor.

    Example:
        >>> annealing = KLAnnealing(start=0.1, warm_up=10, steps_per_epoch=100)
        >>> [round(float(annealing(step)), 4) for step in (0, 1, 500, 900, 2000)]
        [0.1, 0.101, 0.6, 1.0, 1.0]
    """

    def __init__(self, start: float = 0.1, warm_up: float = 10, steps_per_epoch: int = 1):
        self.start = _number(start, "start", 0.0, 1.0)
        self.warm_up = _number(warm_up, "warm_up", 0.0)
        if isinstance(steps_per_epoch, bool) or not isinstance(steps_per_epoch, numbers.Integral):
            raise ValueError(f"steps_per_epoch must be a positive int, got {steps_per_epoch!r}")
        if steps_per_epoch < 1:
            raise ValueError(f"steps_per_epoch must be a positive int, got {steps_per_epoch!r}")
        self.steps_per_epoch = int(steps_per_epoch)

    @classmethod
    def from_texar(cls, kl_anneal_hparams: dict, steps_per_epoch: int) -> KLAnnealing:
        """From Texar's ``kl_anneal_hparams`` (``{"warm_up": 10, "start": 0.1}``)."""
        unknown = set(kl_anneal_hparams) - {"warm_up", "start"}
        if unknown:
            raise ValueError(
                f"kl_anneal_hparams: unknown keys {sorted(unknown)} (it has 'warm_up' and 'start')"
            )
        return cls(
            kl_anneal_hparams.get("start", 0.1), kl_anneal_hparams.get("warm_up", 10),
            steps_per_epoch,
        )  # fmt: skip

    @property
    def rate(self) -> float:
        """The weight added per step, ``1 / (warm_up * steps_per_epoch)`` (inf if ``warm_up``
        is 0)."""
        if self.warm_up == 0:
            return math.inf
        return 1.0 / (self.warm_up * self.steps_per_epoch)

    def __call__(self, step: Any) -> tf.Tensor:
        step = ops.cast(step, "float32")
        if self.warm_up == 0:
            return ops.ones_like(step)
        return ops.minimum(1.0, self.start + step * self.rate)

    def __repr__(self) -> str:
        return (
            f"KLAnnealing(start={self.start}, warm_up={self.warm_up}, "
            f"steps_per_epoch={self.steps_per_epoch})"
        )


def word_dropout(
    ids: Any,
    rate: Any,
    sequence_length: Any = None,
    unk_id: int = Vocab.unk_token_id,
    seed: Any = None,
    training: Any = True,
) -> tf.Tensor:
    """Replaces decoder input tokens by ``<UNK>`` with probability ``rate`` (Bowman et al.).

    The first token of each row (the start token, ``<BOS>``) is never replaced, nor are the
    positions at or past ``sequence_length`` (padding). Texar's configs give the keep
    probability, ``word_keep_prob``: ``rate = 1 - word_keep_prob``.

    Args:
        ids: ``[batch, time]`` int token ids, the decoder's inputs starting with the start token.
        rate: the replacement probability, a float in ``[0, 1]`` (or a float scalar tensor).
        sequence_length: ``[batch]`` lengths of the rows (``None``: every position counts).
        unk_id: the id that replaces dropped tokens (texkit's ``<UNK>`` by default).
        seed: a ``keras.random.SeedGenerator`` (a new draw each call), an int or ``None``.
        training: Keras' flag; outside training the ids are returned unchanged.

    Returns:
        The ids, same shape and dtype.
    """
    ids = ops.convert_to_tensor(ids)
    if len(ids.shape) != 2 or "int" not in keras.backend.standardize_dtype(ids.dtype):
        raise ValueError(
            f"word_dropout: ids must be [batch, time] ints, got shape {tuple(ids.shape)} and "
            f"dtype {ids.dtype}"
        )
    if isinstance(rate, numbers.Real):
        _number(rate, "word_dropout: rate", 0.0, 1.0)
        if rate == 0:
            return ids
    if not training:
        return ids
    shape = ops.shape(ids)
    positions = ops.arange(shape[1])[None, :]
    droppable = positions >= 1
    if sequence_length is not None:
        droppable = droppable & (positions < ops.cast(sequence_length, "int32")[:, None])
    draws = keras.random.uniform(shape, dtype="float32", seed=seed)
    drop = droppable & (draws < ops.cast(rate, "float32"))
    return ops.where(drop, ops.cast(unk_id, ids.dtype), ids)


def gaussian_kl(mean: Any, log_variance: Any) -> tf.Tensor:
    """``KL(N(mean, diag(exp(log_variance))) || N(0, I))`` for each example: ``0.5 *
    sum(mean**2 + exp(log_variance) - 1 - log_variance)`` over the last axis.

    Texar's ``vae_text`` averaged it over the batch (``kl_dvg``); take ``tf.reduce_mean`` of
    this for the same.

    Args:
        mean: ``[..., latent_size]`` floats.
        log_variance: the same shape.

    Returns:
        ``[...]``: the KL divergence of each example, in nats.
    """
    return DiagonalGaussian.from_log_variance(mean, log_variance).kl_to_standard_normal()


def importance_weighted_nll(log_likelihood: Any, log_prior: Any, log_posterior: Any) -> tf.Tensor:
    """``-log p(x)`` estimated from K samples ``z_k ~ q(z|x)`` (Burda et al., 2016).

    ``-log (1/K sum_k exp(log p(x|z_k) + log p(z_k) - log q(z_k|x)))``, computed with a
    log-sum-exp. With K = 1 its expectation is the negative ELBO; it decreases towards
    ``-log p(x)`` as K grows.

    Args:
        log_likelihood: ``[K, batch]`` ``log p(x | z_k)`` (the decoder's summed token
            log-probabilities of each example given each sample).
        log_prior: ``[K, batch]`` ``log p(z_k)``.
        log_posterior: ``[K, batch]`` ``log q(z_k | x)``.

    Returns:
        ``[batch]``: the estimated NLL of each example, in nats.
    """
    terms = [ops.convert_to_tensor(t) for t in (log_likelihood, log_prior, log_posterior)]
    shapes = [tuple(t.shape) for t in terms]
    if len(shapes[0]) != 2 or len(set(shapes)) != 1:
        raise ValueError(
            "importance_weighted_nll: log_likelihood, log_prior and log_posterior must all be "
            f"[num_samples, batch], got shapes {shapes}"
        )
    log_weights = terms[0] + ops.cast(terms[1], terms[0].dtype) - ops.cast(terms[2], terms[0].dtype)
    num_samples = ops.cast(ops.shape(log_weights)[0], log_weights.dtype)
    return ops.log(num_samples) - ops.logsumexp(log_weights, axis=0)
