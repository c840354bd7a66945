"""Position embedders: a learned table of positions, and the fixed sinusoids of the Transformer.

* :class:`PositionEmbedder`: a learned table of position embeddings.
* :class:`SinusoidsPositionEmbedder`: the fixed sinusoids of the Transformer,
  ``PE[pos, 2i] = sin(pos / max_timescale^(2i/dim))`` and
  ``PE[pos, 2i+1] = cos(pos / max_timescale^(2i/dim))``.

Both take explicit ``positions`` ([batch, time] ints), or ``sequence_length`` alone to number
each sequence ``0, 1, ...``; with ``sequence_length`` the embeddings of padded steps are zero. For
static shapes (XLA, TPUs) give ``positions`` or ``max_time``; otherwise the time dimension is
``max(sequence_length)``. Positions must lie in ``[0, table size)``; a static ``max_time`` beyond
a table is refused at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from keras import ops

from texkit.configurable import ModuleBase
from texkit.hparams import HParams, HParamsError, check_width
from texkit.modules.embedding_table import (
    TableEmbedder,
    check_table,
    embedder_defaults,
    gather,
    is_int,
)

__all__ = ["PositionEmbedder", "SinusoidsPositionEmbedder", "sinusoid_table"]


def _positions(
    layer: ModuleBase, positions: Any, sequence_length: Any, max_time: Any, size: int | None
) -> Any:
    """The [batch, time] positions to embed, checked; built from the lengths when not given."""
    if positions is not None:
        if sequence_length is not None and len(positions.shape) != 2:
            raise ValueError(
                f"{layer.name}: with sequence_length, positions must be [batch, time], got shape "
                f"{tuple(positions.shape)}"
            )
        return positions
    if size is not None and max_time is not None and max_time > size:
        raise ValueError(
            f"{layer.name}: max_time={max_time} exceeds position_size={size}; positions must stay "
            "below position_size"
        )
    return _positions_from_lengths(layer, sequence_length, max_time)


def _positions_from_lengths(layer: ModuleBase, sequence_length: Any, max_time: Any) -> Any:
    if sequence_length is None:
        raise ValueError(
            f"{layer.name}: give positions, or sequence_length to number the steps of each sequence"
        )
    lengths = ops.cast(sequence_length, "int32")
    if max_time is None:
        max_time = ops.max(lengths, initial=0)
    steps = ops.arange(max_time, dtype="int32")
    return ops.broadcast_to(ops.expand_dims(steps, 0), (ops.shape(lengths)[0], max_time))


def _mask_padding(outputs: Any, sequence_length: Any, dtype: Any) -> Any:
    if sequence_length is None:
        return outputs
    steps = ops.arange(ops.shape(outputs)[1], dtype="int32")
    lengths = ops.cast(sequence_length, "int32")
    mask = ops.cast(ops.expand_dims(steps, 0) < ops.expand_dims(lengths, 1), dtype)
    return outputs * ops.expand_dims(mask, -1)


class _PositionsCall:
    """The call of a position embedder: the positions checked (or numbered from the lengths),
    embedded by the class's ``_embed``, and zero at padded steps."""

    position_size: int | None

    def call(
        self,
        positions: Any = None,
        sequence_length: Any = None,
        max_time: int | None = None,
        training: Any = None,
    ) -> Any:
        positions = _positions(self, positions, sequence_length, max_time, self.position_size)
        outputs = self._embed(positions, training)
        return _mask_padding(outputs, sequence_length, outputs.dtype)


class PositionEmbedder(_PositionsCall, TableEmbedder):
    """Learned position embeddings.

    Args:
        position_size: number of positions in the table (positions must be below it).
        init_value: a [position_size, dim] matrix to start from.
        hparams: see the table below.

    Call arguments:
        positions: int tensor ``[batch, time]`` of positions. When ``None``, ``sequence_length``
            is required and each sequence is numbered ``0, 1, ...`` up to ``max_time`` (or
            ``max(sequence_length)``).
        sequence_length: int tensor ``[batch]``; embeddings at steps ``>= sequence_length`` are
            zero.
        max_time: python int; the time dimension when ``positions`` is not given (static shapes).
        training: Keras' training flag.

    Returns:
        ``[batch, time, dim]`` embeddings.
    """

    _size_arg = "position_size"

    def __init__(
        self,
        position_size: int | None = None,
        init_value: Any = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        super().__init__(position_size, init_value, hparams, **kwargs)

    @classmethod
    def default_hparams(cls) -> dict:
        return embedder_defaults("position_embedder", 100)

    @property
    def position_size(self) -> int:
        """Number of positions in the table."""
        return self._num_embeddings

    def _embed(self, positions: Any, training: Any) -> Any:
        return self._lookup(positions, training)


def sinusoid_table(positions: np.ndarray, dim: int, max_timescale: float) -> np.ndarray:
    """The sinusoids for ``positions`` (any shape), computed in float64 with NumPy."""
    exponents = 2.0 * (np.arange(dim) // 2) / dim
    angles = np.asarray(positions, np.float64)[..., None] / np.power(max_timescale, exponents)
    return np.where(np.arange(dim) % 2 == 0, np.sin(angles), np.cos(angles))


# Rows of the precomputed table computed at a time: its float64 intermediates stay small (the
# float32 table itself is the only large allocation).
_TABLE_ROWS_PER_CHUNK = 1 << 12


def _float32_sinusoid_table(position_size: int, dim: int, max_timescale: float) -> np.ndarray:
    table = np.empty((position_size, dim), np.float32)
    rows = max(1, min(_TABLE_ROWS_PER_CHUNK, (1 << 22) // dim))
    for begin in range(0, position_size, rows):
        end = min(begin + rows, position_size)
        table[begin:end] = sinusoid_table(np.arange(begin, end), dim, max_timescale)
    return table


class SinusoidsPositionEmbedder(_PositionsCall, ModuleBase):
    """Fixed sinusoid position embeddings (Vaswani et al., 2017); no weights.

    ``PE[pos, 2i] = sin(pos / max_timescale^(2i/dim))``, ``PE[pos, 2i+1] = cos(...)`` of the same
    angle: the paper's table. Texar (and tensor2tensor) compute another one, all the sines and
    then all the cosines, with wavelengths ``max_timescale^(i/(dim/2 - 1))``; it is not a
    reordering of this one, so a model trained with Texar's table gets it back only as learned
    positions (``PositionEmbedder`` with the table loaded, as ``tests/modules/
    test_texar_parity.py`` does).

    Args:
        position_size: when given, the embeddings of positions ``0 .. position_size - 1`` are
            computed once (in float64) and looked up, and positions must stay below it. When
            ``None`` (the default), they are computed on the fly in float32 for any position.
        hparams: see the table below.

    Call arguments: as :class:`PositionEmbedder` (``positions``, ``sequence_length``,
    ``max_time``, ``training``).

    Returns:
        ``[batch, time, dim]`` embeddings in the layer's compute dtype.
    """

    HPARAMS_DOC = {
        "dim": "Size of each embedding vector.",
        "max_timescale": "The base of the wavelengths: sin(pos / max_timescale^(2i/dim)).",
        "name": "Layer name (numbered by Keras when repeated).",
    }

    def __init__(
        self,
        position_size: int | None = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        super().__init__(hparams, **kwargs)
        check_width(self.hparams, "dim")
        # Written so that NaN fails too.
        if not 1.0 < self.hparams.max_timescale < np.inf:
            raise HParamsError(
                f"expected a finite value above 1, got {self.hparams.max_timescale}",
                "max_timescale",
            )
        if position_size is not None and (
            isinstance(position_size, bool)
            or not isinstance(position_size, (int, np.integer))
            or position_size < 1
        ):
            raise ValueError(f"position_size must be a positive int or None, got {position_size!r}")
        self._position_size = None if position_size is None else int(position_size)
        self._table = None
        if position_size is not None:
            check_table("position_size", int(position_size), self.hparams.dim)
            self._table = _float32_sinusoid_table(
                int(position_size), self.hparams.dim, self.hparams.max_timescale
            )
        exponents = 2.0 * (np.arange(self.hparams.dim) // 2) / self.hparams.dim
        self._inv_timescales = np.power(self.hparams.max_timescale, -exponents).astype(np.float32)
        self._is_cos = np.arange(self.hparams.dim) % 2 == 1

    @classmethod
    def default_hparams(cls) -> dict:
        return {"dim": 512, "max_timescale": 10000.0, "name": "sinusoids_position_embedder"}

    @property
    def dim(self) -> int:
        """The embedding size."""
        return self.hparams.dim

    @property
    def position_size(self) -> int | None:
        """Number of precomputed positions, or ``None``."""
        return self._position_size

    def _embed(self, positions: Any, training: Any) -> Any:
        if not is_int(positions):
            raise TypeError(f"{self.name}: positions must be integers, got {positions.dtype}")
        if self._table is not None:
            outputs = gather(self._table, positions)
        else:
            angles = ops.expand_dims(ops.cast(positions, "float32"), -1) * self._inv_timescales
            outputs = ops.where(self._is_cos, ops.cos(angles), ops.sin(angles))
        return ops.cast(outputs, self.compute_dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "position_size": self._position_size}
