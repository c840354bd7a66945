"""A linear-chain conditional random field (CRF) over per-step tag potentials.

For potentials ``U [batch, time, num_tags]`` (e.g. a tagger's logits), a sequence of length
``L`` and tags ``y_0 .. y_{L-1}`` score::

    score(y) = start_transitions[y_0] + U[0, y_0]
               + sum over t = 1 .. L-1 of (transitions[y_{t-1}, y_t] + U[t, y_t])
               + end_transitions[y_{L-1}]

and the CRF's probability of ``y`` is ``exp(score(y)) / Z`` with ``Z`` the sum over every tag
sequence of that length (computed by the forward algorithm). Viterbi decoding finds the sequence
of highest score. Both run one ``tf.while_loop`` over time, so they work eagerly, in
``tf.function`` and under XLA, with static or dynamic shapes.

Conventions:

* ``transitions`` is indexed ``[from, to]``, as in ``pytorch-crf`` and AllenNLP.
* Steps at or after a sequence's length are ignored: their potentials and tags change nothing.
  A sequence of length 0 has log-likelihood 0 (its one empty tagging has probability 1), Viterbi
  score 0 and only pad tags.
* Decoded tags at padded steps are :data:`PAD_TAG` (0).
* Everything is computed in float32, whatever the potentials' dtype (mixed precision).

Constraints (``tags`` and ``tag_scheme``) forbid the transitions, first tags and last tags that
the scheme does not allow (BIO: never ``O -> I-X``, never start with ``I-X``; see
:func:`texkit.core.tag_schemes.allowed_transitions`). They apply in decoding: the decoded tags
never break them. The log-likelihood ignores them, as AllenNLP's CRF does: the forward algorithm
sums over every sequence and the learned transition weights make the forbidden ones unlikely.
Applying them in training too would give a gold sequence that breaks the scheme (an annotation
error, which real corpora have) probability 0, an infinite loss and NaN gradients. Every tag must
then be a tag of the scheme (``O`` or a prefix, a hyphen and a type): give extra labels (padding,
``[CLS]``) no tag id, or tag them ``O``.

:class:`~texkit.modules.crf_heads.CRFTaggingHead` puts dropout, a dense layer and a CRF on any
encoder's outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.tag_schemes import allowed_transitions, normalize_scheme
from texkit.hparams import HParams, HParamsError, check_positive_int

__all__ = ["CRF", "PAD_TAG"]

PAD_TAG = 0
"""The tag :meth:`CRF.viterbi_decode` puts at the steps at or after a sequence's length."""

# The largest number of tags: the transition table has num_tags ** 2 entries.
_MAX_TAGS = 1 << 14


def _check_tag_hparams(hp: HParams) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Checks ``num_tags``, ``tags`` and ``tag_scheme``; returns the allowed-transition masks
    ``(start, transitions, end)``, or ``None`` without a scheme."""
    check_positive_int(hp, "num_tags", maximum=_MAX_TAGS)
    tags = hp.tags
    if tags is not None:
        if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
            raise HParamsError(f"expected None or a list of tag strings, got {tags!r}", "tags")
        if len(tags) != hp.num_tags:
            raise HParamsError(
                f"tags has {len(tags)} entries, num_tags is {hp.num_tags}: give one tag per id",
                "num_tags",
            )
    if hp.tag_scheme is None:
        return None
    try:
        normalize_scheme(hp.tag_scheme, "tag_scheme")
    except ValueError as error:
        raise HParamsError(str(error), "tag_scheme") from None
    if tags is None:
        raise HParamsError(f"tag_scheme {hp.tag_scheme!r} needs the tags (in id order)", "tags")
    try:
        return allowed_transitions(list(tags), hp.tag_scheme)
    except (TypeError, ValueError) as error:
        raise HParamsError(str(error), "tags") from None


class CRF(ModuleBase):
    """A linear-chain CRF: log-likelihood of tag sequences and Viterbi decoding.

    Args:
        num_tags: the number of tags, a shortcut for ``hparams={"num_tags": num_tags}``
            (``CRF(9)``). A mapping here is taken as ``hparams`` (``CRF({"num_tags": 9})``).
        hparams: see the table below.

    Weights (created when first used): ``transitions [num_tags, num_tags]`` indexed
    ``[from, to]``, ``start_transitions [num_tags]`` and ``end_transitions [num_tags]``, all
    starting at zero.

    Call arguments:
        potentials: ``[batch, time, num_tags]`` float per-step tag scores.
        sequence_length: ``[batch]`` int valid lengths in ``[0, time]``; ``None``: all ``time``.

    Returns:
        The Viterbi tags, ``[batch, time]`` int32 (see :meth:`viterbi_decode`).

    Example:
        >>> crf = CRF(hparams={"num_tags": 3, "tags": ["O", "B-PER", "I-PER"],
        ...                    "tag_scheme": "BIO"})
        >>> potentials = tf.random.normal([2, 5, 3])
        >>> log_likelihood = crf.log_likelihood(potentials, tf.zeros([2, 5], "int32"), [5, 2])
        >>> tags, scores = crf.viterbi_decode(potentials, [5, 2])
    """

    HPARAMS_DOC = {
        "num_tags": "Number of tags (ids 0 .. num_tags - 1).",
        "tags": "None, or the tag strings in id order (e.g. ['O', 'B-PER', 'I-PER']).",
        "tag_scheme": "None (no constraints), or 'IOB1', 'IOB2' / 'BIO', 'IOBES', 'BILOU': "
        "decoding never breaks the scheme (needs tags).",
        "name": "Layer name.",
    }

    def __init__(self, num_tags: Any = None, hparams: Any = None, **kwargs: Any):
        if isinstance(num_tags, (Mapping, HParams)) and hparams is None:
            num_tags, hparams = None, num_tags
        if num_tags is not None:
            if isinstance(num_tags, bool) or not isinstance(num_tags, int):
                raise TypeError(f"CRF: num_tags must be an int, got {num_tags!r}")
            given = hparams.todict() if isinstance(hparams, HParams) else dict(hparams or {})
            if given.get("num_tags", num_tags) != num_tags:
                raise ValueError(
                    f"CRF: num_tags={num_tags} but hparams num_tags={given['num_tags']!r}"
                )
            hparams = {**given, "num_tags": num_tags}
        super().__init__(hparams, **kwargs)
        # Potentials reach the CRF as given, not cast to a mixed policy's compute dtype first.
        self.autocast = False
        self._allowed = _check_tag_hparams(self.hparams)

    @classmethod
    def default_hparams(cls) -> dict:
        return {"num_tags": 2, "tags": None, "tag_scheme": None, "name": "crf"}

    @property
    def num_tags(self) -> int:
        """The number of tags."""
        return self.hparams.num_tags

    @property
    def allowed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The allowed ``(start [n], transitions [n, n], end [n])`` booleans of the tag scheme,
        or ``None`` without one."""
        return self._allowed

    def build(self, potentials_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        n = self.num_tags
        for name, shape in (
            ("transitions", (n, n)),
            ("start_transitions", (n,)),
            ("end_transitions", (n,)),
        ):
            setattr(self, name, self.add_weight(name=name, shape=shape, initializer="zeros"))
        self.built = True

    def call(self, potentials: Any, sequence_length: Any = None, training: Any = None) -> Any:
        return self.viterbi_decode(potentials, sequence_length)[0]

    def log_likelihood(self, potentials: Any, tags: Any, sequence_length: Any = None) -> Any:
        """The log-probability of each tag sequence under the CRF (unconstrained; see above).

        Args:
            potentials: ``[batch, time, num_tags]`` float.
            tags: ``[batch, time]`` int gold tags in ``[0, num_tags)`` (any value at padded
                steps).
            sequence_length: ``[batch]`` int in ``[0, time]``; ``None``: all ``time``.

        Returns:
            ``[batch]`` float32 log-likelihoods (0 for a sequence of length 0).
        """
        potentials, tags, length, mask = self._inputs(
            "log_likelihood", potentials, sequence_length, tags
        )
        weights = self._weights(constrained=False)
        return _gold_score(potentials, tags, length, mask, *weights) - _log_partition(
            potentials, length, mask, *weights
        )

    def viterbi_decode(self, potentials: Any, sequence_length: Any = None) -> tuple[Any, Any]:
        """The highest-scoring tag sequences, within the scheme's constraints if any.

        Args:
            potentials: ``[batch, time, num_tags]`` float.
            sequence_length: ``[batch]`` int in ``[0, time]``; ``None``: all ``time``.

        Returns:
            ``(tags, scores)``: ``[batch, time]`` int32 tags (:data:`PAD_TAG` at or after each
            length) and ``[batch]`` float32 scores of those sequences (unnormalized; 0 for
            length 0; ``-inf`` when the constraints allow no sequence of that length).
        """
        potentials, _, length, mask = self._inputs("viterbi_decode", potentials, sequence_length)
        return _viterbi(potentials, length, mask, *self._weights(constrained=True))

    def _weights(self, constrained: bool) -> tuple[Any, Any, Any]:
        weights = (self.transitions, self.start_transitions, self.end_transitions)
        weights = tuple(tf.cast(w, tf.float32) for w in weights)
        if not constrained or self._allowed is None:
            return weights
        start, transitions, end = self._allowed
        order = (transitions, start, end)
        return tuple(
            tf.where(tf.constant(a), w, tf.constant(-np.inf, tf.float32))
            for a, w in zip(order, weights, strict=True)
        )

    def _inputs(
        self, method: str, potentials: Any, sequence_length: Any, tags: Any = None
    ) -> tuple[Any, Any, Any, Any]:
        """Checks and converts the arguments: float32 potentials (0 at padded steps, so that
        whatever they held there, even inf or NaN, reaches neither results nor gradients), int32
        tags and lengths, and the ``[batch, time]`` mask of valid steps."""
        where = f"{self.name}.{method}"
        potentials = tf.convert_to_tensor(potentials)
        shape = potentials.shape
        if shape.rank != 3 or shape[-1] != self.num_tags:
            raise ValueError(
                f"{where}: potentials must be [batch, time, num_tags={self.num_tags}], got "
                f"shape {shape}"
            )
        if shape[1] == 0:
            raise ValueError(f"{where}: potentials has 0 steps (shape {shape})")
        if not potentials.dtype.is_floating:
            raise ValueError(f"{where}: potentials must be float, got {potentials.dtype.name}")
        potentials = tf.cast(potentials, tf.float32)
        length = _int_argument(where, "sequence_length", sequence_length, 1, shape[:1])
        if length is None:
            length = tf.fill(tf.shape(potentials)[:1], tf.shape(potentials)[1])
        time = tf.shape(potentials)[1]
        length = _check_values(where, "sequence_length", length, 0, time, "[0, time]")
        mask = sequence_mask(length, time)
        if tags is not None:
            tags = _int_argument(where, "tags", tags, 2, shape[:2])
            tags = tf.where(mask, tags, 0)  # padded steps may hold anything (e.g. -1)
            tags = _check_values(where, "tags", tags, 0, self.num_tags - 1, "[0, num_tags)")
        if not self.built:
            self.build()
        potentials = tf.where(mask[:, :, None], potentials, tf.zeros_like(potentials))
        return potentials, tags, length, mask


def _int_argument(where: str, name: str, value: Any, rank: int, expected: Any) -> Any:
    """``value`` as an int32 tensor of ``rank`` whose static shape agrees with ``expected``."""
    if value is None:
        return None
    value = tf.convert_to_tensor(value)
    if not value.dtype.is_integer:
        raise ValueError(f"{where}: {name} must be int, got {value.dtype.name}")
    if value.shape.rank != rank or not value.shape.is_compatible_with(expected):
        layout = "[batch]" if rank == 1 else "[batch, time]"
        raise ValueError(
            f"{where}: {name} must be {layout} = {list(expected)} as potentials, got shape "
            f"{value.shape}"
        )
    return tf.cast(value, tf.int32)


def _check_values(where: str, name: str, value: Any, low: Any, high: Any, what: str) -> Any:
    """``value``, checked to be in ``[low, high]``: a ValueError when eager, an assertion that the
    result depends on in a graph (XLA drops assertions)."""
    message = f"{where}: {name} must be in {what}"
    if tf.executing_eagerly():
        array = value.numpy()
        if array.size and (array.min() < low or array.max() > int(high)):
            bad = array[(array < low) | (array > int(high))]
            raise ValueError(f"{message}, got {bad[:5].tolist()} (shape {list(value.shape)})")
        return value
    checks = [
        tf.debugging.assert_greater_equal(value, low, message=message),
        tf.debugging.assert_less_equal(value, high, message=message),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(value)


def _gold_score(potentials, tags, length, mask, transitions, start, end) -> Any:
    """The score of the given tags, ``[batch]``."""
    num_tags = tf.shape(transitions)[0]
    maskf = tf.cast(mask, tf.float32)
    unary = tf.gather(potentials, tags, axis=2, batch_dims=2)
    pairs = tf.gather(tf.reshape(transitions, [-1]), tags[:, :-1] * num_tags + tags[:, 1:])
    last = tf.gather(tags, tf.maximum(length - 1, 0), axis=1, batch_dims=1)
    edges = tf.gather(start, tags[:, 0]) + tf.gather(end, last)
    return (
        tf.reduce_sum(unary * maskf, 1)
        + tf.reduce_sum(pairs * maskf[:, 1:], 1)
        + edges * maskf[:, 0]
    )


def _log_partition(potentials, length, mask, transitions, start, end) -> Any:
    """``log Z`` by the forward algorithm, ``[batch]`` (0 for length 0)."""
    time = tf.shape(potentials)[1]

    def step(t, alpha):
        scores = alpha[:, :, None] + transitions[None]
        alpha_t = tf.reduce_logsumexp(scores, axis=1) + potentials[:, t]
        return t + 1, tf.where(mask[:, t, None], alpha_t, alpha)

    alpha = start[None] + potentials[:, 0]
    # maximum_iterations: XLA needs a bound to keep the loop's values for the gradient.
    _, alpha = tf.while_loop(
        lambda t, _: t < time, step, (tf.constant(1), alpha), maximum_iterations=time
    )
    log_z = tf.reduce_logsumexp(alpha + end[None], axis=1)
    return tf.where(length > 0, log_z, 0.0)


def _viterbi(potentials, length, mask, transitions, start, end) -> tuple[Any, Any]:
    """Viterbi tags ``[batch, time]`` and their scores ``[batch]``.

    At a padded step the best score is carried over and each tag points back to itself, so the
    backtrace from the last step passes the padding unchanged and enters the sequence at its
    last valid step.
    """
    batch, time = tf.shape(potentials)[0], tf.shape(potentials)[1]
    num_tags = potentials.shape[-1]
    identity = tf.broadcast_to(tf.range(num_tags)[None], [batch, num_tags])
    pointers = tf.TensorArray(tf.int32, size=time, element_shape=[None, num_tags])
    pointers = pointers.write(0, identity)

    def forward(t, delta, pointers):
        scores = delta[:, :, None] + transitions[None]
        best_from = tf.argmax(scores, axis=1, output_type=tf.int32)
        delta_t = tf.reduce_max(scores, axis=1) + potentials[:, t]
        valid = mask[:, t, None]
        pointers = pointers.write(t, tf.where(valid, best_from, identity))
        return t + 1, tf.where(valid, delta_t, delta), pointers

    delta = start[None] + potentials[:, 0]
    _, delta, pointers = tf.while_loop(
        lambda t, *_: t < time, forward, (tf.constant(1), delta, pointers), maximum_iterations=time
    )
    final = delta + end[None]
    best_last = tf.argmax(final, axis=1, output_type=tf.int32)
    pointers = pointers.stack()  # [time, batch, num_tags]
    path = tf.TensorArray(tf.int32, size=time, element_shape=[None]).write(time - 1, best_last)

    def backward(t, tag, path):
        previous = tf.gather(pointers[t], tag, axis=1, batch_dims=1)
        return t - 1, previous, path.write(t - 1, previous)

    _, _, path = tf.while_loop(
        lambda t, *_: t > 0, backward, (time - 1, best_last, path), maximum_iterations=time
    )
    tags = tf.where(mask, tf.transpose(path.stack()), PAD_TAG)
    scores = tf.where(length > 0, tf.reduce_max(final, axis=1), 0.0)
    return tags, scores
