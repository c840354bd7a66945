"""The table shared by texkit's learned embedders (:class:`~texkit.modules.WordEmbedder`,
:class:`~texkit.modules.PositionEmbedder`): its size and ``init_value`` checks, its weight,
lookup by ids, and the three dropout strategies.

Ids must lie in ``[0, table size)``. Outside it, TensorFlow raises an error on CPU in eager mode
and clamps under XLA, so check data before it reaches the model.
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
from texkit.core.quantized_table import dequantize_rows, full_table, is_quantized_table
from texkit.hparams import HParams, HParamsError, check_rate, check_width
from texkit.hparams import core as limits

__all__ = ["TableEmbedder", "embedder_defaults", "check_table", "gather", "is_int"]

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


def embedder_defaults(name: str, dim: int) -> dict:
    """The default hparams of a table embedder named ``name`` with vectors of size ``dim``."""
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


def check_table(size_arg: str, rows: int, dim: int) -> None:
    """Refuses a table of more values than texkit allocates at once (naming ``size_arg``)."""
    elements = rows * dim
    if elements > limits.MAX_ELEMENTS:
        raise ValueError(
            f"{size_arg}={rows} x dim={dim}: a table of {elements:,} values, more than texkit "
            f"allocates in one table ({limits.MAX_ELEMENTS:,}; "
            "texkit.hparams.core.MAX_ELEMENTS)"
        )


def is_int(tensor: Any) -> bool:
    """Whether ``tensor`` has a (signed or unsigned) integer dtype."""
    return keras.backend.standardize_dtype(tensor.dtype).startswith(("int", "uint"))


def gather(table: Any, ids: Any) -> Any:
    """The rows of ``table`` at ``ids``: ``tf.gather`` (not ``keras.ops.take``, which wraps
    negative ids around like NumPy) with the index dtypes it supports."""
    dtype = keras.backend.standardize_dtype(ids.dtype)
    if dtype not in ("int32", "int64"):
        ids = tf.cast(ids, "int64" if dtype in ("uint32", "uint64") else "int32")
    return tf.gather(table, ids)


class TableEmbedder(ModuleBase):
    """Base of the learned embedders: a ``[rows, dim]`` table, looked up by ids, with dropout.

    A subclass names its size argument in ``_size_arg`` (``vocab_size``, ``position_size``),
    takes it and ``init_value`` in its constructor, and defines ``default_hparams`` with
    :func:`embedder_defaults`.
    """

    REGISTERED = False
    HPARAMS_DOC = {**_EMBEDDER_DOC, "name": "Layer name (numbered by Keras when repeated)."}

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
        check_table(self._size_arg, int(num_embeddings), self.hparams.dim)
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
        table = full_table(self, self.compute_dtype)
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
        if not is_int(ids):
            raise TypeError(f"{self.name}: ids must be integers, got dtype {ids.dtype}")
        if is_quantized_table(self) and self.hparams.dropout_strategy != "item_type":
            # An int8 table (texkit.tasks.quantize): only the rows looked up are dequantized.
            rows = dequantize_rows(
                gather(self.embedding, ids), gather(self.embedding_scale, ids), self.compute_dtype
            )
            return self._dropout(rows, training)
        return self._dropout(gather(self._table(training), ids), training)

    def get_config(self) -> dict:
        return {**super().get_config(), self._size_arg: self._num_embeddings}
