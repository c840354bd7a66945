"""The initial embedding table of a vocabulary from hparams (Texar's ``Embedding``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from texkit.configurable import Configurable
from texkit.data.embedding.readers import load_glove, load_word2vec
from texkit.data.embedding.table import PretrainedEmbedding, _Rows
from texkit.hparams import HParams, HParamsError, check_positive_int

__all__ = ["Embedding"]

_READ_FNS: dict[str, Callable[..., PretrainedEmbedding]] = {
    "load_word2vec": load_word2vec,
    "load_glove": load_glove,
}  # by name only: a config cannot name any other function


class Embedding(Configurable):
    """The initial embedding table of a vocabulary: pretrained vectors or random rows.

    Texar's ``Embedding``: reads ``hparams.file`` with ``hparams.read_fn``. Rows of tokens missing
    from the file are random (see :mod:`texkit.data.embedding.table`); with ``file: ""`` every row
    is, uniform in ``[-0.1, 0.1)``.

    Args:
        vocab: a :class:`texkit.data.Vocab` or a mapping of token to id (ids ``0 .. n-1``).
        hparams: see the table below.

    Example:
        A two-word GloVe file (``glove.6B.50d.txt`` has the same format), for a vocabulary of
        four tokens:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "vectors.txt")
        >>> with open(path, "w") as f:
        ...     print("the 0.1 0.2 0.3", file=f)
        ...     print("cat 0.4 0.5 0.6", file=f)
        >>> vocab = {"<PAD>": 0, "the": 1, "cat": 2, "dog": 3}
        >>> embedding = Embedding(vocab, {"file": path, "read_fn": "load_glove", "dim": 3})
        >>> embedding.word_vecs.shape, embedding.word_vecs[2]
        ((4, 3), array([0.4, 0.5, 0.6], dtype=float32))
        >>> embedding.pretrained.missing  # random rows
        ('<PAD>', 'dog')
        >>> embedder = tx.modules.WordEmbedder(init_value=embedding.word_vecs)
        >>> embedder(tf.constant([2, 1])).numpy()
        array([[0.4, 0.5, 0.6],
               [0.1, 0.2, 0.3]], dtype=float32)
    """

    HPARAMS_DOC = {
        "file": "Path of the vector file (local or tf.io.gfile); '' for a random table.",
        "dim": "Size of the vectors; a file of another size is an error.",
        "read_fn": f"How to read the file: one of {sorted(_READ_FNS)}.",
        "binary": "load_word2vec only: true (binary), false (text) or null (detect).",
        "seed": "Seed (int >= 0) of the random rows.",
        "name": "Name of the embedding.",
    }

    def __init__(self, vocab: Any, hparams: Mapping | HParams | None = None):
        self._hparams = hp = self.make_hparams(hparams)
        check_positive_int(hp, "dim")
        if hp.seed < 0:
            raise HParamsError(f"expected an int >= 0, got {hp.seed}", "seed")
        if hp.read_fn not in _READ_FNS:
            raise HParamsError(
                f"expected one of {sorted(_READ_FNS)}, got {hp.read_fn!r}", "read_fn"
            )
        word2vec = hp.read_fn == "load_word2vec"
        if hp.binary is not None and not (isinstance(hp.binary, bool) and word2vec):
            wanted = "null, or true/false with read_fn 'load_word2vec'"
            got = f"got {hp.binary!r} with read_fn {hp.read_fn!r}"
            raise HParamsError(f"expected {wanted}; {got}", "binary")
        if hp.file:
            kwargs = {"binary": hp.binary} if word2vec else {}
            read = _READ_FNS[hp.read_fn]
            self._pretrained = read(hp.file, vocab, hp.dim, seed=hp.seed, **kwargs)
        else:
            self._pretrained = _Rows(vocab, hp.dim, hp.seed, "").finish()

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "file": "",
            "dim": 50,
            "read_fn": "load_word2vec",
            "binary": None,
            "seed": 0,
            "name": "embedding",
        }

    @property
    def word_vecs(self) -> np.ndarray:
        """The ``[vocab_size, dim]`` float32 table (read-only)."""
        return self._pretrained.matrix

    @property
    def vector_size(self) -> int:
        """The size of the vectors (``hparams.dim``)."""
        return self.hparams.dim

    @property
    def pretrained(self) -> PretrainedEmbedding:
        """What was loaded, i.e. the table, the count of found tokens and the missing ones."""
        return self._pretrained
