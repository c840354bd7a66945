"""Word and position embedders.

* :class:`WordEmbedder`: a learned (or initialized) table looked up by token ids, or multiplied
  by a distribution over the vocabulary (``soft_ids``).
* :class:`~texkit.modules.position_embedders.PositionEmbedder` and
  :class:`~texkit.modules.position_embedders.SinusoidsPositionEmbedder` live in
  :mod:`texkit.modules.position_embedders` and are importable from here too.

The table, its checks and the dropout strategies the learned embedders share are in
:mod:`texkit.modules.embedding_table`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keras import ops

from texkit.hparams import HParams
from texkit.modules.embedding_table import TableEmbedder, embedder_defaults
from texkit.modules.position_embedders import (
    PositionEmbedder,
    SinusoidsPositionEmbedder,
    sinusoid_table,
)

__all__ = ["WordEmbedder", "PositionEmbedder", "SinusoidsPositionEmbedder", "sinusoid_table"]


class WordEmbedder(TableEmbedder):
    """Embeds token ids (or distributions over the vocabulary) with a table.

    Args:
        vocab_size: number of rows of the table. Optional when ``init_value`` is given.
        init_value: a [vocab_size, dim] matrix to start from (e.g. from
            ``texkit.data.load_glove``); ``dim`` is then taken from its shape.
        hparams: see the table below.

    Call arguments:
        ids: int tensor of any shape ``[...]``.
        soft_ids: float tensor ``[..., vocab_size]`` (e.g. Gumbel-softmax samples); the result is
            the weighted sum of the table's rows. Give exactly one of ``ids`` and ``soft_ids``.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``[..., dim]`` embeddings in the layer's compute dtype.

    Example:
        >>> embedder = WordEmbedder(vocab_size=1000, hparams={"dim": 64})
        >>> embedder(tf.constant([[3, 5, 0]])).shape
        TensorShape([1, 3, 64])
    """

    _size_arg = "vocab_size"

    def __init__(
        self,
        vocab_size: int | None = None,
        init_value: Any = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        super().__init__(vocab_size, init_value, hparams, **kwargs)

    @classmethod
    def default_hparams(cls) -> dict:
        return embedder_defaults("word_embedder", 100)

    @property
    def vocab_size(self) -> int:
        """Number of rows of the table."""
        return self._num_embeddings

    def call(self, ids: Any = None, soft_ids: Any = None, training: Any = None) -> Any:
        if (ids is None) == (soft_ids is None):
            raise ValueError(f"{self.name}: give exactly one of ids and soft_ids")
        if ids is not None:
            return self._lookup(ids, training)
        if soft_ids.shape[-1] is not None and soft_ids.shape[-1] != self._num_embeddings:
            raise ValueError(
                f"{self.name}: soft_ids has last dimension {soft_ids.shape[-1]}, expected "
                f"vocab_size={self._num_embeddings}"
            )
        weights = ops.cast(soft_ids, self.compute_dtype)
        return self._dropout(ops.matmul(weights, self._table(training)), training)
