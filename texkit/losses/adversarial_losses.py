"""The losses of a binary real/fake game between a generator and a discriminator (Texar's
``adv_losses``).

The discriminator's loss is the sigmoid cross entropy of its logits against "real" (1) on real
data plus against "fake" (0) on generated data, each averaged over all its logits. The generator's
loss takes one of the two forms of Goodfellow et al. (2014): ``"max_real"`` (the non-saturating
form, the default) makes its data look real, ``"min_fake"`` (the minimax form) makes the
discriminator's loss on its data large. Logits of any float dtype are computed in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from texkit.losses.reduction import _float32

__all__ = ["binary_adversarial_losses"]

_MODES = ("max_real", "min_fake")


def _logits_of(discriminator_fn: Callable[[Any], Any], data: Any, name: str) -> Any:
    logits = discriminator_fn(data)
    if isinstance(logits, (list, tuple)):
        if not logits:
            raise ValueError(f"discriminator_fn returned an empty {type(logits).__name__}")
        logits = logits[0]
    return _float32(logits, f"the logits of discriminator_fn({name})")


def _sigmoid_cross_entropy(logits: Any, label: float) -> Any:
    labels = tf.fill(tf.shape(logits), label)
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))


def binary_adversarial_losses(
    real_data: Any,
    fake_data: Any,
    discriminator_fn: Callable[[Any], Any],
    mode: str = "max_real",
) -> tuple[Any, Any]:
    """The generator's and the discriminator's losses of a real/fake game.

    Args:
        real_data: real examples, ``[num_real, ...]``, in whatever form ``discriminator_fn``
            takes.
        fake_data: generated examples, ``[num_fake, ...]`` (``num_fake`` may differ from
            ``num_real``).
        discriminator_fn: a callable from data to the logits of being real (any shape, e.g.
            ``[num_examples]``, or one per step), or to a tuple or list whose first element
            they are (e.g. a classifier's ``(logits, preds)``). It is called on ``real_data``,
            then on ``fake_data``.
        mode: the generator's loss: ``"max_real"``, the cross entropy of its data's logits
            against "real"; or ``"min_fake"``, minus the discriminator's loss on its data.

    Returns:
        ``(g_loss, d_loss)``: two float32 scalars to minimize, the generator's and the
        discriminator's.

    Example:
        >>> discriminator = lambda x: tf.reduce_sum(x, axis=-1)  # one logit per example
        >>> g_loss, d_loss = binary_adversarial_losses(
        ...     tf.ones([2, 3]), tf.zeros([4, 3]), discriminator)
        >>> round(float(g_loss), 4), round(float(d_loss), 4)  # log 2; softplus(-3) + log 2
        (0.6931, 0.7417)
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    if not callable(discriminator_fn):
        raise TypeError(f"discriminator_fn must be callable, got {type(discriminator_fn).__name__}")
    real_logits = _logits_of(discriminator_fn, real_data, "real_data")
    fake_logits = _logits_of(discriminator_fn, fake_data, "fake_data")
    real_loss = _sigmoid_cross_entropy(real_logits, 1.0)
    fake_loss = _sigmoid_cross_entropy(fake_logits, 0.0)
    d_loss = real_loss + fake_loss
    if mode == "min_fake":
        return -fake_loss, d_loss
    return _sigmoid_cross_entropy(fake_logits, 1.0), d_loss
