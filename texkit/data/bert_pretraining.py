"""BERT pretraining data: next-sentence pairs and masked-LM masking (Devlin et al., 2019).

Three steps, each usable alone:

1. :func:`make_nsp_pairs` (plain Python, seeded NumPy) cuts documents of wordpiece ids into
   sentence pairs ``A``/``B`` for next-sentence prediction, with the rules of Google's
   ``create_pretraining_data.py``.
2. :func:`pack_pair` lays a pair out as ``[CLS] A [SEP] B [SEP]`` padded to ``max_seq_length``.
3. :class:`MaskedLMMasker` masks a packed sequence in the graph (stateless random ops, static
   shapes: it runs in ``tf.data``, in ``tf.function`` and under XLA).

:func:`pretraining_dataset` chains 2 and 3 into a ``tf.data.Dataset`` of feature dicts:

========================  ===========================  =========================================
feature                   shape, dtype                 meaning
========================  ===========================  =========================================
``input_ids``             [max_seq_length] int32       ``[CLS] A [SEP] B [SEP]``, masked, then
                                                       ``pad_id`` (0)
``segment_ids``           [max_seq_length] int32       0 for ``[CLS] A [SEP]``, 1 for ``B [SEP]``,
                                                       0 on padding
``sequence_length``       [] int32                     ``len(A) + len(B) + 3``
``masked_lm_positions``   [max_predictions] int32      positions predicted, ascending; 0 pads
``masked_lm_ids``         [max_predictions] int32      the original ids there; 0 pads
``masked_lm_weights``     [max_predictions] float32    1.0 for a prediction, 0.0 for padding
``next_sentence_label``   [] int32                     1: B is a random sentence ("is random
                                                       next", the original's convention);
                                                       0: B follows A in the document
========================  ===========================  =========================================

With ``batch_size`` every feature gains a leading batch dimension (``drop_remainder=True`` keeps
it static).

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

Randomness is reproducible: :func:`make_nsp_pairs` draws from ``np.random.default_rng(seed)``;
the masker from stateless ops keyed by a ``[2]`` seed, which :func:`pretraining_dataset` makes
from ``(seed, index of the instance)``. Masks are therefore static (the same every epoch, as in
the original); for new masks, build the dataset again with another seed (e.g. ``seed + epoch``).

Bad input raises at once, never part-way through training: :func:`make_nsp_pairs` skips (and
counts, in :class:`NSPInstances`) empty sentences and documents, and raises ``ValueError`` for
negative or non-integer ids, fewer than two non-empty documents, or bad arguments;
:func:`pack_pair` raises if a pair does not fit; :func:`pretraining_dataset` raises, naming the
instance, for an empty side, a pair too long, an id outside ``[0, vocab_size)`` or a label other
than 0/1. All arguments are checked with errors that name them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = [
    "NSPInstances",
    "make_nsp_pairs",
    "pack_pair",
    "MaskedLMMasker",
    "pretraining_dataset",
]


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_rate(name: str, value: Any, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not (0.0 < value <= 1.0 if low_open else 0.0 <= value <= 1.0):
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return float(value)


# -- Next-sentence pairs ----------------------------------------------------------------------


@dataclass(frozen=True)
class NSPInstances(Sequence):
    """What :func:`make_nsp_pairs` returns: a read-only list of instances plus counts.

    Each instance is ``{"tokens_a": [int], "tokens_b": [int], "next_sentence_label": 0 | 1}``
    (1 means B is random). Indexing, ``len`` and iteration go to :attr:`instances`.

    Attributes:
        instances: The instances, document by document (``dupe_factor`` passes in turn).
        num_documents: Non-empty documents used.
        num_empty_documents: Documents skipped because they had no tokens.
        num_empty_sentences: Sentences without tokens, dropped.
    """

    instances: list[dict] = field(repr=False)
    num_documents: int
    num_empty_documents: int
    num_empty_sentences: int

    def __len__(self) -> int:
        return len(self.instances)

    def __getitem__(self, index: Any) -> Any:
        return self.instances[index]

    def __iter__(self) -> Iterator[dict]:
        return iter(self.instances)


def _clean_documents(documents: Any) -> tuple[list[list[list[int]]], int, int]:
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
        raise ValueError(
            f"documents must be a list of documents (lists of sentences of int ids), got "
            f"{type(documents).__name__}"
        )
    cleaned, empty_documents, empty_sentences = [], 0, 0
    for d, document in enumerate(documents):
        sentences = []
        for s, sentence in enumerate(document):
            ids = np.asarray(sentence)
            if ids.size == 0:
                empty_sentences += 1
                continue
            if ids.ndim != 1 or ids.dtype.kind not in "iu" or ids.min() < 0:
                raise ValueError(
                    f"documents[{d}][{s}] must be a list of non-negative int token ids, got "
                    f"{str(sentence)[:80]}"
                )
            sentences.append(ids.tolist())
        if sentences:
            cleaned.append(sentences)
        else:
            empty_documents += 1
    return cleaned, empty_documents, empty_sentences


def _truncate_pair(len_a: int, len_b: int, max_num_tokens: int, rng: np.random.Generator):
    # Trim the longer side (B on ties) one token at a time, from its front or back at random, as
    # the original does. Returns the kept [start, end) of A and B.
    a_lo, a_hi, b_lo, b_hi = 0, len_a, 0, len_b
    while (a_hi - a_lo) + (b_hi - b_lo) > max_num_tokens:
        trim_a = (a_hi - a_lo) > (b_hi - b_lo)
        front = rng.random() < 0.5
        if trim_a:
            a_lo, a_hi = (a_lo + 1, a_hi) if front else (a_lo, a_hi - 1)
        else:
            b_lo, b_hi = (b_lo + 1, b_hi) if front else (b_lo, b_hi - 1)
    return a_lo, a_hi, b_lo, b_hi


def _flatten(sentences: list[list[int]]) -> list[int]:
    return [token for sentence in sentences for token in sentence]


def make_nsp_pairs(
    documents: Sequence[Sequence[Sequence[int]]],
    *,
    max_seq_length: int,
    seed: int,
    short_seq_prob: float = 0.1,
    random_next_prob: float = 0.5,
    dupe_factor: int = 1,
) -> NSPInstances:
    """Cuts documents into sentence pairs for next-sentence prediction.

    Follows Google's ``create_pretraining_data.py``: for each document a target length is
    ``max_seq_length - 3``, or, with probability ``short_seq_prob``, a length drawn uniformly
    from ``[2, max_seq_length - 3]`` (once per document, as in the original). Sentences gather
    into a chunk until it reaches the target or the document ends; the chunk splits at a random
    sentence boundary into A and B. With probability ``random_next_prob``, and always when the
    chunk is a single sentence, B is replaced by consecutive sentences from a random other
    document, starting at a random sentence, up to the remaining target length; the chunk's
    unused sentences are then put back for the next chunk. Finally the longer side is trimmed
    (one token at a time, from its front or back at random) until the pair fits
    ``max_seq_length - 3``. Unlike the original, the random document is drawn among the *other*
    documents only, so it is never the current one.

    Args:
        documents: Documents, each a list of sentences, each a list of int wordpiece ids without
            special tokens. Empty sentences are dropped and documents without tokens skipped;
            both are counted in the result.
        max_seq_length: Length of the packed sequence ``[CLS] A [SEP] B [SEP]``, at least 5.
        seed: Seed of ``np.random.default_rng``; the same seed gives the same instances.
        short_seq_prob: Probability that a document uses a shorter target length.
        random_next_prob: Probability that B is a random sentence rather than the next one.
        dupe_factor: Passes over the corpus (each with other random choices).

    Returns:
        :class:`NSPInstances`: instances ``{"tokens_a", "tokens_b", "next_sentence_label"}``,
        label 1 when B is random ("is random next"), 0 when B follows A; A and B are never empty.

    Raises:
        ValueError: for bad arguments (naming them), a malformed sentence, or fewer than two
            non-empty documents (random next sentences need another document).
    """
    max_seq_length = _check_int("max_seq_length", max_seq_length, 5)
    seed = _check_int("seed", seed, 0)
    short_seq_prob = _check_rate("short_seq_prob", short_seq_prob)
    random_next_prob = _check_rate("random_next_prob", random_next_prob)
    dupe_factor = _check_int("dupe_factor", dupe_factor, 1)
    docs, empty_documents, empty_sentences = _clean_documents(documents)
    if len(docs) < 2:
        raise ValueError(
            f"make_nsp_pairs needs at least 2 non-empty documents to draw random next sentences, "
            f"got {len(docs)} ({empty_documents} empty documents skipped)"
        )
    rng = np.random.default_rng(seed)
    max_num_tokens = max_seq_length - 3
    instances = []
    for _ in range(dupe_factor):
        for doc_index, document in enumerate(docs):
            target = max_num_tokens
            if rng.random() < short_seq_prob:
                target = int(rng.integers(2, max_num_tokens, endpoint=True))
            chunk, chunk_length, i = [], 0, 0
            while i < len(document):
                chunk.append(document[i])
                chunk_length += len(document[i])
                if i == len(document) - 1 or chunk_length >= target:
                    a_end = 1 if len(chunk) == 1 else int(rng.integers(1, len(chunk)))
                    tokens_a = _flatten(chunk[:a_end])
                    if len(chunk) == 1 or rng.random() < random_next_prob:
                        label = 1
                        other = int(rng.integers(0, len(docs) - 1))
                        other += other >= doc_index
                        random_doc = docs[other]
                        tokens_b = []
                        for sentence in random_doc[int(rng.integers(0, len(random_doc))) :]:
                            tokens_b.extend(sentence)
                            if len(tokens_b) >= target - len(tokens_a):
                                break
                        i -= len(chunk) - a_end  # put the unused sentences back
                    else:
                        label = 0
                        tokens_b = _flatten(chunk[a_end:])
                    a_lo, a_hi, b_lo, b_hi = _truncate_pair(
                        len(tokens_a), len(tokens_b), max_num_tokens, rng
                    )
                    instances.append(
                        {
                            "tokens_a": tokens_a[a_lo:a_hi],
                            "tokens_b": tokens_b[b_lo:b_hi],
                            "next_sentence_label": label,
                        }
                    )
                    chunk, chunk_length = [], 0
                i += 1
    return NSPInstances(instances, len(docs), empty_documents, empty_sentences)


# -- Packing ----------------------------------------------------------------------------------


def pack_pair(
    tokens_a: Sequence[int],
    tokens_b: Sequence[int],
    cls_id: int,
    sep_id: int,
    max_seq_length: int,
    pad_id: int = 0,
) -> dict[str, np.ndarray]:
    """Lays out ``[CLS] A [SEP] B [SEP]`` padded with ``pad_id`` to ``max_seq_length``.

    Returns:
        ``{"input_ids": [max_seq_length] int32, "segment_ids": [max_seq_length] int32 (0 for
        [CLS] A [SEP], 1 for B [SEP], 0 on padding), "sequence_length": int32 scalar}``.

    Raises:
        ValueError: if A or B is empty or the pair does not fit (nothing is truncated here;
            :func:`make_nsp_pairs` already fits pairs to ``max_seq_length - 3``).
    """
    if len(tokens_a) == 0 or len(tokens_b) == 0:
        raise ValueError(
            f"tokens_a and tokens_b must not be empty, got {len(tokens_a)} and {len(tokens_b)}"
        )
    length = len(tokens_a) + len(tokens_b) + 3
    if length > max_seq_length:
        raise ValueError(
            f"the pair needs {length} positions ({len(tokens_a)} + {len(tokens_b)} + 3 special "
            f"tokens), more than max_seq_length={max_seq_length}"
        )
    input_ids = np.full([max_seq_length], pad_id, np.int32)
    input_ids[:length] = [cls_id, *tokens_a, sep_id, *tokens_b, sep_id]
    segment_ids = np.zeros([max_seq_length], np.int32)
    segment_ids[len(tokens_a) + 2 : length] = 1
    return {
        "input_ids": input_ids,
        "segment_ids": segment_ids,
        "sequence_length": np.int32(length),
    }


# -- Masked LM --------------------------------------------------------------------------------


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
        >>> masker = MaskedLMMasker(30522, mask_id=103, special_ids=[0, 101, 102])
        >>> out = masker(ids, length, seed=tf.constant([7, 0], tf.int64))  # doctest: +SKIP
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


# -- Dataset ----------------------------------------------------------------------------------


def pretraining_dataset(
    instances: Sequence[Mapping[str, Any]],
    *,
    masker: MaskedLMMasker,
    max_seq_length: int,
    cls_id: int,
    sep_id: int,
    seed: int,
    batch_size: int | None = None,
    drop_remainder: bool = True,
    shuffle: bool = False,
    pad_id: int = 0,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of BERT pretraining features (see the module docstring's table).

    Instances (e.g. from :func:`make_nsp_pairs`) are packed with :func:`pack_pair` and checked
    on the host; the masking runs in the pipeline, keyed by ``(seed, instance index)``, so the
    same instance gets the same mask wherever ``shuffle`` puts it.

    Args:
        instances: Dicts with ``tokens_a``, ``tokens_b`` and ``next_sentence_label`` (0 or 1).
        masker: The :class:`MaskedLMMasker`; ids must lie in ``[0, masker.vocab_size)``.
        max_seq_length: Length of every sequence.
        cls_id, sep_id, pad_id: Ids of ``[CLS]``, ``[SEP]`` and padding.
        seed: Seed of the masking and of the shuffling.
        batch_size: Batch the features if given.
        drop_remainder: Drop a last smaller batch (keeps the batch dimension static).
        shuffle: Shuffle the instances (the whole set, reshuffled every epoch).

    Raises:
        ValueError: for no instances, or an instance that is malformed, does not fit, holds an
            id outside the vocabulary or a label other than 0/1 (naming its index).
    """
    if not isinstance(masker, MaskedLMMasker):
        raise ValueError(f"masker must be a MaskedLMMasker, got {type(masker).__name__}")
    max_seq_length = _check_int("max_seq_length", max_seq_length, 5)
    seed = _check_int("seed", seed, 0)
    if batch_size is not None:
        batch_size = _check_int("batch_size", batch_size, 1)
    if len(instances) == 0:
        raise ValueError("instances is empty")
    packed: dict[str, list] = {
        "input_ids": [],
        "segment_ids": [],
        "sequence_length": [],
        "next_sentence_label": [],
    }
    for index, instance in enumerate(instances):
        try:
            tokens_a, tokens_b = list(instance["tokens_a"]), list(instance["tokens_b"])
            label = instance["next_sentence_label"]
            if label not in (0, 1) or isinstance(label, bool):
                raise ValueError(f"next_sentence_label must be 0 or 1, got {label!r}")
            ids = np.asarray(tokens_a + tokens_b)
            if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0):
                raise ValueError("token ids must be non-negative ints")
            if ids.size and ids.max() >= masker.vocab_size:
                raise ValueError(
                    f"id {ids.max()} is outside the vocabulary [0, {masker.vocab_size})"
                )
            features = pack_pair(tokens_a, tokens_b, cls_id, sep_id, max_seq_length, pad_id)
        except KeyError as error:
            raise ValueError(f"instances[{index}] has no key {error}") from None
        except (TypeError, ValueError) as error:
            raise ValueError(f"instances[{index}]: {error}") from None
        for key, value in features.items():
            packed[key].append(value)
        packed["next_sentence_label"].append(label)
    arrays = {key: np.asarray(values, np.int32) for key, values in packed.items()}

    def mask(index: tf.Tensor, features: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        example_seed = tf.stack([tf.constant(seed, tf.int64), index])
        masked = masker(features["input_ids"], features["sequence_length"], example_seed)
        return {**features, **masked}

    dataset = tf.data.Dataset.from_tensor_slices(arrays).enumerate()
    if shuffle:
        dataset = dataset.shuffle(len(instances), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if batch_size is not None:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset
