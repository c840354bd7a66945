"""Masked-LM masking of packed sequences, in the graph, with static shapes.

Masking (per sequence): the eligible positions are those before ``sequence_length`` whose id is
neither in ``special_ids`` nor ``mask_id``. ``min(max_predictions_per_seq, max(1,
round(n * mask_rate)))`` of the ``n`` eligible positions are picked uniformly without replacement
(none if ``n == 0``); each is replaced by ``mask_id`` with probability ``mask_token_rate``, by a
random id with probability ``random_token_rate``, and kept otherwise. Two deliberate differences
from the original script: ``n`` counts only eligible tokens (the original also counted ``[CLS]``
and ``[SEP]``), and random ids are drawn uniformly from the vocabulary *without* the special ids
and ``mask_id`` (the original drew from the whole vocabulary, ``[CLS]`` and ``[unused]`` ids
included). A random id may equal the original one (probability ``1 / (vocab_size - #specials)``),
as in the original.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.data.bert_pretraining._checks import _check_int, _check_rate

__all__ = ["MaskedLMMasker"]


# Randomness is drawn as int32 with a pinned algorithm: then eager, graph and XLA runs draw the
# same numbers ("auto_select" differs under XLA, and so does XLA's int-to-float conversion of
# stateless_uniform floats). Rates are compared in steps of 2**-24.
_RNG_ALG = "philox"
_ACTION_RESOLUTION = 1 << 24


def _random_ints(shape: Any, seed: tf.Tensor, maxval: int | None = None) -> tf.Tensor:
    """Uniform int32 in ``[0, maxval)``, or over the whole int32 range if ``maxval`` is None."""
    return tf.random.stateless_uniform(
        shape,
        seed,
        minval=None if maxval is None else 0,
        maxval=maxval,
        dtype=tf.int32,
        alg=_RNG_ALG,
    )


class MaskedLMMasker:
    """Masks a packed sequence for the masked-LM task, in the graph, with static shapes.

    Args:
        vocab_size: Size of the vocabulary; random replacements are ids in ``[0, vocab_size)``.
        mask_id: Id of ``[MASK]``. Never selected itself.
        special_ids: Ids never selected and never drawn as random replacements (``[CLS]``,
            ``[SEP]``, ``[PAD]``, ...).
        mask_rate: Fraction of the eligible tokens to predict, in (0, 1].
        mask_token_rate: Of the predicted tokens, the fraction replaced by ``mask_id``.
        random_token_rate: Of the predicted tokens, the fraction replaced by a random id; the
            rest (``1 - mask_token_rate - random_token_rate``) is kept.
        max_predictions_per_seq: Most predictions per sequence (the size of the outputs).

    Call arguments:
        input_ids: ``[max_seq_length]`` or ``[batch, max_seq_length]`` ints; the length must be
            static.
        sequence_length: ``[]`` or ``[batch]`` ints; positions from it on are padding.
        seed: ``[2]`` int tensor keying the stateless random ops (one seed for a whole batch).

    Returns:
        ``{"input_ids" (masked, int32), "masked_lm_positions" (int32), "masked_lm_ids" (int32),
        "masked_lm_weights" (float32)}``, the last three ``[..., max_predictions_per_seq]``;
        positions ascending, padding entries 0 with weight 0.

    Example:
        BERT's ids of ``[CLS] hello, world! how are you [SEP]``, padded to 12; a fraction of 0.3
        of the 7 eligible tokens gives 2 predictions:

        >>> masker = MaskedLMMasker(
        ...     30522, mask_id=103, special_ids=[0, 101, 102], mask_rate=0.3,
        ...     max_predictions_per_seq=4)
        >>> ids = tf.constant([101, 7592, 1010, 2088, 999, 2129, 2024, 2017, 102, 0, 0, 0])
        >>> out = masker(ids, sequence_length=9, seed=tf.constant([7, 0], tf.int64))
        >>> out["masked_lm_positions"].numpy(), out["masked_lm_weights"].numpy()
        (array([1, 6, 0, 0], dtype=int32), array([1., 1., 0., 0.], dtype=float32))
        >>> out["masked_lm_ids"].numpy()  # the original ids, the labels to predict
        array([7592, 2024,    0,    0], dtype=int32)
        >>> out["input_ids"].numpy()[:9]
        array([ 101,  103, 1010, 2088,  999, 2129,  103, 2017,  102], dtype=int32)
    """

    def __init__(
        self,
        vocab_size: int,
        mask_id: int,
        special_ids: Sequence[int],
        *,
        mask_rate: float = 0.15,
        mask_token_rate: float = 0.8,
        random_token_rate: float = 0.1,
        max_predictions_per_seq: int = 20,
    ):
        self.vocab_size = _check_int("vocab_size", vocab_size, 1)
        self.mask_id = _check_int("mask_id", mask_id, 0)
        if self.mask_id >= self.vocab_size:
            raise ValueError(f"mask_id={mask_id} is outside the vocabulary [0, {vocab_size})")
        self.special_ids = [_check_int("special_ids[...]", i, 0) for i in special_ids]
        outside = [i for i in self.special_ids if i >= self.vocab_size]
        if outside:
            raise ValueError(f"special_ids {outside} are outside the vocabulary [0, {vocab_size})")
        self.mask_rate = _check_rate("mask_rate", mask_rate, low_open=True)
        self.mask_token_rate = _check_rate("mask_token_rate", mask_token_rate)
        self.random_token_rate = _check_rate("random_token_rate", random_token_rate)
        if self.mask_token_rate + self.random_token_rate > 1.0 + 1e-9:
            raise ValueError(
                f"mask_token_rate + random_token_rate must be <= 1, got {mask_token_rate} + "
                f"{random_token_rate}"
            )
        self.max_predictions_per_seq = _check_int(
            "max_predictions_per_seq", max_predictions_per_seq, 1
        )
        self._never = np.unique([self.mask_id, *self.special_ids]).astype(np.int32)
        self._random_ids = np.setdiff1d(np.arange(self.vocab_size, dtype=np.int32), self._never)
        if self.random_token_rate > 0 and self._random_ids.size == 0:
            raise ValueError(
                "random_token_rate > 0 but every id of the vocabulary is special: no random "
                "replacement can be drawn"
            )

    def get_config(self) -> dict:
        """The constructor arguments."""
        return {
            "vocab_size": self.vocab_size,
            "mask_id": self.mask_id,
            "special_ids": list(self.special_ids),
            "mask_rate": self.mask_rate,
            "mask_token_rate": self.mask_token_rate,
            "random_token_rate": self.random_token_rate,
            "max_predictions_per_seq": self.max_predictions_per_seq,
        }

    def num_predictions(self, num_eligible: int) -> int:
        """Predictions made in a sequence of ``num_eligible`` eligible tokens (host side)."""
        if num_eligible <= 0:
            return 0
        rounded = max(1, int(round(num_eligible * self.mask_rate)))
        return min(self.max_predictions_per_seq, rounded, num_eligible)

    def __call__(self, input_ids: Any, sequence_length: Any, seed: Any) -> dict[str, tf.Tensor]:
        input_ids = tf.cast(tf.convert_to_tensor(input_ids), tf.int32)
        sequence_length = tf.cast(tf.convert_to_tensor(sequence_length), tf.int32)
        seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
        rank = input_ids.shape.rank
        max_len = input_ids.shape[-1] if rank in (1, 2) else None
        if max_len is None:
            raise ValueError(
                f"input_ids must be [max_seq_length] or [batch, max_seq_length] with a static "
                f"length, got shape {input_ids.shape}"
            )
        if sequence_length.shape.rank != rank - 1:
            raise ValueError(
                f"sequence_length must have rank {rank - 1} for input_ids of shape "
                f"{input_ids.shape}, got shape {sequence_length.shape}"
            )
        if seed.shape != (2,):
            raise ValueError(f"seed must be a [2] int tensor, got shape {seed.shape}")
        num_kept = min(self.max_predictions_per_seq, max_len)
        # A host-side table gives exact Python rounding of num_eligible * mask_rate (float32 in
        # the graph would round some halves the other way).
        counts = [self.num_predictions(n) for n in range(max_len + 1)]
        select_seed, action_seed, random_seed = [
            tf.random.experimental.stateless_fold_in(seed, i, alg=_RNG_ALG) for i in range(3)
        ]

        in_sequence = tf.range(max_len) < sequence_length[..., None]
        special = tf.reduce_any(input_ids[..., None] == self._never, axis=-1)
        eligible = in_sequence & ~special
        num_to_predict = tf.gather(counts, tf.reduce_sum(tf.cast(eligible, tf.int32), axis=-1))

        # The top-k of uniform scores among the eligible positions is a uniform sample without
        # replacement; ineligible positions score lowest and fall past the first num_to_predict.
        scores = _random_ints(tf.shape(input_ids), select_seed)
        lowest = tf.int32.min
        scores = tf.where(eligible, tf.maximum(scores, lowest + 1), lowest)
        _, picked = tf.math.top_k(scores, k=num_kept)
        real = tf.range(num_kept) < num_to_predict[..., None]
        positions = tf.sort(tf.where(real, picked, max_len), axis=-1)
        positions = tf.where(real, positions, 0)
        selected = tf.reduce_any(
            tf.one_hot(tf.where(real, positions, -1), max_len, dtype=tf.int32) > 0, axis=-2
        )

        action = _random_ints(tf.shape(input_ids), action_seed, _ACTION_RESOLUTION)
        mask_below = round(self.mask_token_rate * _ACTION_RESOLUTION)
        random_below = round((self.mask_token_rate + self.random_token_rate) * _ACTION_RESOLUTION)
        masked_ids = input_ids
        if self.random_token_rate > 0:
            draw = _random_ints(tf.shape(input_ids), random_seed, len(self._random_ids))
            to_random = selected & (action >= mask_below) & (action < random_below)
            masked_ids = tf.where(to_random, tf.gather(self._random_ids, draw), masked_ids)
        to_mask = selected & (action < mask_below)
        masked_ids = tf.where(to_mask, self.mask_id, masked_ids)

        masked_lm_ids = tf.gather(input_ids, positions, batch_dims=rank - 1)
        padding = [[0, 0]] * (rank - 1) + [[0, self.max_predictions_per_seq - num_kept]]
        return {
            "input_ids": masked_ids,
            "masked_lm_positions": tf.pad(positions, padding),
            "masked_lm_ids": tf.pad(tf.where(real, masked_lm_ids, 0), padding),
            "masked_lm_weights": tf.pad(tf.cast(real, tf.float32), padding),
        }
