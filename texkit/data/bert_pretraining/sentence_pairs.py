"""Next-sentence prediction: documents cut into sentence pairs, and a pair packed for BERT.

:func:`make_nsp_pairs` follows Google's ``create_pretraining_data.py`` (its docstring gives the
rules and the one deliberate difference); :func:`pack_pair` lays a pair out as
``[CLS] A [SEP] B [SEP]``. Both run on the host, in plain Python and seeded NumPy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from texkit.data.bert_pretraining._checks import _check_int, _check_rate

__all__ = ["NSPInstances", "make_nsp_pairs", "pack_pair"]


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


def _document_pairs(
    docs: list[list[list[int]]],
    doc_index: int,
    max_num_tokens: int,
    short_seq_prob: float,
    random_next_prob: float,
    rng: np.random.Generator,
) -> list[dict]:
    """The instances of one pass over ``docs[doc_index]`` (the rules: :func:`make_nsp_pairs`)."""
    document = docs[doc_index]
    target = max_num_tokens
    if rng.random() < short_seq_prob:
        target = int(rng.integers(2, max_num_tokens, endpoint=True))
    instances = []
    chunk, chunk_length, i = [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target:
            a_end = 1 if len(chunk) == 1 else int(rng.integers(1, len(chunk)))
            tokens_a = _flatten(chunk[:a_end])
            if len(chunk) == 1 or rng.random() < random_next_prob:
                label = 1
                tokens_b = _random_next(docs, doc_index, target - len(tokens_a), rng)
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
    return instances


def _random_next(
    docs: list[list[list[int]]], doc_index: int, wanted: int, rng: np.random.Generator
) -> list[int]:
    """Consecutive sentences of a random document other than ``docs[doc_index]``, from a random
    sentence on, until they hold ``wanted`` tokens or the document ends."""
    other = int(rng.integers(0, len(docs) - 1))
    other += other >= doc_index
    random_doc = docs[other]
    tokens_b: list[int] = []
    for sentence in random_doc[int(rng.integers(0, len(random_doc))) :]:
        tokens_b.extend(sentence)
        if len(tokens_b) >= wanted:
            break
    return tokens_b


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
    instances = []
    for _ in range(dupe_factor):
        for doc_index in range(len(docs)):
            instances.extend(
                _document_pairs(
                    docs, doc_index, max_seq_length - 3, short_seq_prob, random_next_prob, rng
                )
            )
    return NSPInstances(instances, len(docs), empty_documents, empty_sentences)


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
