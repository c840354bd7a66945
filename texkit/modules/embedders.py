"""Word and position embedders.

* :class:`WordEmbedder`: a learned (or initialized) table looked up by token ids, or multiplied
  by a distribution over the vocabulary (``soft_ids``).
* :class:`PositionEmbedder`: a learned table of position embeddings.
* :class:`SinusoidsPositionEmbedder`: the fixed sinusoids of the Transformer,
  ``PE[pos, 2i] = sin(pos / max_timescale^(2i/dim))`` and
  ``PE[pos, 2i+1] = cos(pos / max_timescale^(2i/dim))``.

Position embedders take explicit ``positions`` ([batch, time] ints), or ``sequence_length`` alone
to number each sequence ``0, 1, ...``; with ``sequence_length`` the embeddings of padded steps are
zero. For static shapes (XLA, TPUs) give ``positions`` or ``max_time``; otherwise the time
dimension is ``max(sequence_length)``.

Ids and positions must lie in ``[0, table size)``. Outside it, TensorFlow raises an error on CPU
in eager mode and clamps under XLA, so check data before it reaches the model; a static
``max_time`` beyond a table is refused at once.

(About 450 lines: the three embedders share the table, lookup, dropout and position code.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.dropout import dropout
from texkit.core.layers import get_initializer
from texkit.hparams import HParams, HParamsError, check_rate, check_width
from texkit.hparams import core as limits

__all__ = ["WordEmbedder", "PositionEmbedder", "SinusoidsPositionEmbedder"]

_DROPOUT_STRATEGIES = ("element", "item", "item_type")

_EMBEDDER_DOC = {
    "dim": "Size of each embedding vector.",
    "initializer": "Initializer of the table ({type, kwargs}; any registered Keras initializer).",
    "dropout_rate": "Dropout rate in [0, 1), applied in training only.",
    "dropout_strategy": (
        "What dropout removes: 'element' (single numbers), 'item' (the whole vector of one "
        "occurrence) or 'item_type' (a whole row of the table, i.e. every occurrence of an id)."
    ),
    "trainable": "Whether the table is trained.",
}


def _embedder_defaults(name: str, dim: int) -> dict:
    return {
        "dim": dim,
        "initializer": {
            "type": "RandomUniform",
            "kwargs": {"minval": -0.1, "maxval": 0.1, "seed": None},
        },
        "dropout_rate": 0.0,
        "dropout_strategy": "element",
        "trainable": True,
        "name": name,
    }


def _check_common(hp: HParams) -> None:
    check_width(hp, "dim")
    check_rate(hp, "dropout_rate")
    if hp.dropout_strategy not in _DROPOUT_STRATEGIES:
        raise HParamsError(
            f"expected one of {_DROPOUT_STRATEGIES}, got {hp.dropout_strategy!r}",
            "dropout_strategy",
        )


def _check_table(size_arg: str, rows: int, dim: int) -> None:
    elements = rows * dim
    if elements > limits.MAX_ELEMENTS:
        raise ValueError(
            f"{size_arg}={rows} x dim={dim}: a table of {elements:,} values, more than texkit "
            f"allocates in one table ({limits.MAX_ELEMENTS:,}; "
            "texkit.hparams.core.MAX_ELEMENTS)"
        )


def _is_int(tensor: Any) -> bool:
    return keras.backend.standardize_dtype(tensor.dtype).startswith(("int", "uint"))


def _gather(table: Any, ids: Any) -> Any:
    # tf.gather (not keras.ops.take, which wraps negative ids around like NumPy) with the index
    # dtypes it supports.
    dtype = keras.backend.standardize_dtype(ids.dtype)
    if dtype not in ("int32", "int64"):
        ids = tf.cast(ids, "int64" if dtype in ("uint32", "uint64") else "int32")
    return tf.gather(table, ids)


def _sequence_mask(sequence_length: Any, max_time: Any, dtype: Any) -> Any:
    steps = ops.arange(max_time, dtype="int32")
    lengths = ops.cast(sequence_length, "int32")
    return ops.cast(ops.expand_dims(steps, 0) < ops.expand_dims(lengths, 1), dtype)


class _TableEmbedder(ModuleBase):
    """Shared parts of the table embedders: the table, lookup and the dropout strategies."""

    def __init__(self, num_embeddings: int | None, init_value: Any, hparams: Any, **kwargs: Any):
        user_dim = None
        if isinstance(hparams, Mapping) and "dim" in hparams:
            user_dim = hparams["dim"]
        if init_value is not None:
            init_value = np.asarray(init_value)
            if init_value.ndim != 2:
                raise ValueError(
                    f"init_value must be a [{self._size_arg}, dim] matrix, got shape "
                    f"{init_value.shape}"
                )
            if num_embeddings is not None and num_embeddings != init_value.shape[0]:
                raise ValueError(
                    f"{self._size_arg}={num_embeddings} disagrees with init_value of shape "
                    f"{init_value.shape}"
                )
            default_dim = self.default_hparams()["dim"]
            if user_dim not in (None, default_dim, init_value.shape[1]):
                raise HParamsError(
                    f"dim={user_dim} disagrees with init_value of shape {init_value.shape}", "dim"
                )
            num_embeddings = int(init_value.shape[0])
            hparams = dict(hparams.todict() if isinstance(hparams, HParams) else hparams or {})
            hparams["dim"] = int(init_value.shape[1])
        if num_embeddings is None:
            raise ValueError(f"give {self._size_arg} or init_value")
        if isinstance(num_embeddings, bool) or not isinstance(num_embeddings, (int, np.integer)):
            raise ValueError(f"{self._size_arg} must be an int, got {num_embeddings!r}")
        if num_embeddings < 1:
            raise ValueError(f"{self._size_arg} must be positive, got {num_embeddings}")
        super().__init__(hparams, **kwargs)
        _check_common(self.hparams)
        _check_table(self._size_arg, int(num_embeddings), self.hparams.dim)
        self._num_embeddings = int(num_embeddings)
        self._init_value = init_value
        self._initializer = get_initializer(self.hparams.initializer)
        self.seed_generator = None
        if self.hparams.dropout_rate > 0:
            self.seed_generator = keras.random.SeedGenerator()

    _size_arg = "num_embeddings"

    @property
    def dim(self) -> int:
        """The embedding size."""
        return self.hparams.dim

    def build(self, *args: Any, **kwargs: Any) -> None:
        shape = (self._num_embeddings, self.hparams.dim)
        if self._init_value is not None:
            value = self._init_value

            def initializer(shape: Any, dtype: Any = None) -> Any:
                return ops.cast(value, dtype or "float32")

        else:
            initializer = self._initializer
        self.embedding = self.add_weight(
            name="embedding",
            shape=shape,
            initializer=initializer,
            trainable=self.hparams.trainable,
        )
        self._init_value = None
        self.built = True

    def _table(self, training: Any) -> Any:
        table = ops.cast(self.embedding, self.compute_dtype)
        if self.hparams.dropout_strategy == "item_type":
            table = dropout(
                table,
                self.hparams.dropout_rate,
                training,
                self.seed_generator,
                noise_shape=(self._num_embeddings, 1),
            )
        return table

    def _dropout(self, outputs: Any, training: Any) -> Any:
        rate, strategy = self.hparams.dropout_rate, self.hparams.dropout_strategy
        if strategy == "item_type":
            return outputs
        noise_shape = None
        if strategy == "item":
            shape = ops.shape(outputs)
            noise_shape = tuple(shape[:-1]) + (1,)
        return dropout(outputs, rate, training, self.seed_generator, noise_shape)

    def _lookup(self, ids: Any, training: Any) -> Any:
        if not _is_int(ids):
            raise TypeError(f"{self.name}: ids must be integers, got dtype {ids.dtype}")
        return self._dropout(_gather(self._table(training), ids), training)


class WordEmbedder(_TableEmbedder):
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
    HPARAMS_DOC = {**_EMBEDDER_DOC, "name": "Layer name (numbered by Keras when repeated)."}

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
        return _embedder_defaults("word_embedder", 100)

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

    def get_config(self) -> dict:
        return {**super().get_config(), "vocab_size": self._num_embeddings}


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
    mask = _sequence_mask(sequence_length, ops.shape(outputs)[1], dtype)
    return outputs * ops.expand_dims(mask, -1)


class PositionEmbedder(_TableEmbedder):
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
    HPARAMS_DOC = {**_EMBEDDER_DOC, "name": "Layer name (numbered by Keras when repeated)."}

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
        return _embedder_defaults("position_embedder", 100)

    @property
    def position_size(self) -> int:
        """Number of positions in the table."""
        return self._num_embeddings

    def call(
        self,
        positions: Any = None,
        sequence_length: Any = None,
        max_time: int | None = None,
        training: Any = None,
    ) -> Any:
        positions = _positions(self, positions, sequence_length, max_time, self._num_embeddings)
        outputs = self._lookup(positions, training)
        return _mask_padding(outputs, sequence_length, outputs.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "position_size": self._num_embeddings}


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


class SinusoidsPositionEmbedder(ModuleBase):
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
            _check_table("position_size", int(position_size), self.hparams.dim)
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

    def call(
        self,
        positions: Any = None,
        sequence_length: Any = None,
        max_time: int | None = None,
        training: Any = None,
    ) -> Any:
        positions = _positions(self, positions, sequence_length, max_time, self._position_size)
        if not _is_int(positions):
            raise TypeError(f"{self.name}: positions must be integers, got {positions.dtype}")
        if self._table is not None:
            outputs = _gather(self._table, positions)
        else:
            angles = ops.expand_dims(ops.cast(positions, "float32"), -1) * self._inv_timescales
            outputs = ops.where(self._is_cos, ops.cos(angles), ops.sin(angles))
        outputs = ops.cast(outputs, self.compute_dtype)
        return _mask_padding(outputs, sequence_length, outputs.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "position_size": self._position_size}
