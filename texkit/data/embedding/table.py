"""The embedding table of a vocabulary, filled row by row from a vector file.

A token missing from the file (special tokens such as ``<PAD>`` usually are) gets a random row,
drawn with ``numpy.random.default_rng(seed)`` in id order: normal with mean 0 and the standard
deviation of all values of the found vectors, or uniform in ``[-0.1, 0.1)`` when none is found.
The counts are logged (logger ``texkit.data.embedding``; a warning when nothing is found).

``vocab`` is a :class:`texkit.data.Vocab` (its ``token_to_id_map_py``) or any mapping of token to
id with the ids ``0 .. n-1``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["EmbeddingFileError", "PretrainedEmbedding"]

logger = logging.getLogger("texkit.data.embedding")  # the package's name, as documented


class EmbeddingFileError(ValueError):
    """A vector file that cannot be read; the message names the file and the line or entry."""


@dataclass(frozen=True, eq=False)
class PretrainedEmbedding:
    """The embedding table of a vocabulary, loaded by :func:`load_word2vec` / :func:`load_glove`.

    ``np.asarray(result)`` is the matrix, so ``WordEmbedder(init_value=result)`` works directly.

    Attributes:
        matrix: float32 ``[vocab_size, dim]``, row ``i`` for the token of id ``i``; read-only
            (``matrix.copy()`` to change it).
        found: number of vocab tokens found in the file.
        missing: the tokens not found (their rows are random), in id order.
    """

    matrix: np.ndarray
    found: int
    missing: tuple[str, ...]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) != self.matrix.dtype:
            if copy is False:
                raise ValueError(f"cannot convert the float32 matrix to {dtype} without a copy")
            return self.matrix.astype(dtype)
        return self.matrix.copy() if copy else self.matrix


# -- the rows of a vocabulary ----------------------------------------------------------------


class _Rows:
    """The matrix being filled: which tokens are wanted, which were found."""

    def __init__(self, vocab: Any, dim: int, seed: int, path: str):
        for name, value, low in (("dim", dim, 1), ("seed", seed, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.tokens = _tokens_by_id(vocab)
        self.dim, self.seed, self.path = int(dim), int(seed), path
        self.matrix = np.zeros((len(self.tokens), self.dim), np.float32)
        self.found = np.zeros(len(self.tokens), bool)
        # Looked up with .get only: a Vocab's map may be a defaultdict (unknown token -> <UNK>).
        self._ids = {token.encode("utf-8"): index for index, token in enumerate(self.tokens)}

    def error(self, message: str) -> EmbeddingFileError:
        return EmbeddingFileError(f"{self.path}: {message}")

    def wanted(self, word: bytes) -> int | None:
        """The id to fill for ``word``; None if not in the vocab or already found."""
        index = self._ids.get(word)
        return None if index is None or self.found[index] else index

    def add(self, index: int, values: np.ndarray, where: str) -> None:
        if not np.isfinite(values).all():
            raise self.error(f"{where}: the vector of {self.tokens[index]!r} is not finite")
        self.matrix[index] = values
        self.found[index] = True

    def parse(self, index: int, fields: list[bytes], where: str) -> None:
        """Parses the text values of the row of ``index``."""
        if len(fields) != self.dim:
            found = f"{len(fields)} values for {self.tokens[index]!r}"
            raise self.error(f"{where}: {found}, expected dim={self.dim}")
        try:
            values = np.array([float(field) for field in fields], np.float32)
        except ValueError as error:
            raise self.error(f"{where}: {error}") from None
        self.add(index, values, where)

    def finish(self) -> PretrainedEmbedding:
        missing_ids = np.flatnonzero(~self.found)
        found = len(self.tokens) - len(missing_ids)
        rng = np.random.default_rng(self.seed)
        std = float(self.matrix[self.found].std()) if found else 0.0
        shape = (len(missing_ids), self.dim)
        if std > 0:
            self.matrix[missing_ids] = rng.normal(0.0, std, size=shape)
            drawn = f"normal(0, {std:.4g})"
        else:
            self.matrix[missing_ids] = rng.uniform(-0.1, 0.1, size=shape)
            drawn = "uniform(-0.1, 0.1)"
        self.matrix.flags.writeable = False
        message = f"{len(missing_ids)} missing rows drawn from {drawn} (seed {self.seed})"
        if self.path:
            message = f"{self.path}: {found} of {len(self.tokens)} vocab tokens found; {message}"
        (logger.warning if self.path and not found else logger.info)(message)
        missing = tuple(self.tokens[i] for i in missing_ids)
        return PretrainedEmbedding(self.matrix, found, missing)


def _tokens_by_id(vocab: Any) -> list[str]:
    mapping = getattr(vocab, "token_to_id_map_py", vocab)
    if not isinstance(mapping, Mapping) or not mapping:
        got = "an empty one" if isinstance(mapping, Mapping) else type(vocab).__name__
        raise ValueError(
            f"vocab must be a texkit.data.Vocab or a mapping of token to id, got {got}"
        )
    tokens: list[Any] = [None] * len(mapping)
    for token, index in mapping.items():
        ok = isinstance(index, (int, np.integer)) and not isinstance(index, bool)
        if not isinstance(token, str) or not ok or not 0 <= index < len(mapping):
            raise ValueError(f"vocab ids must be 0..{len(mapping) - 1}, got {token!r}: {index!r}")
        if tokens[index] is not None:
            raise ValueError(f"vocab gives id {index} to both {tokens[index]!r} and {token!r}")
        tokens[index] = token
    return tokens
