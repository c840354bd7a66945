"""MemNetRNNLike: the end-to-end memory network with RNN-like weight tying (Sukhbaatar et al.,
2015), as Texar had it, and :class:`MemNetEmbedder`, its default embedding function.

Each hop attends over the memory with the current controller state ``u``: ``p = softmax(m u)``
over the memory slots, ``o = sum_i p_i c_i``, ``u <- H u + o`` (``H`` shared by the hops, the
"RNN-like" tying), a ReLU on the last ``relu_dim`` features and dropout; the logits are ``W u``
over the raw memory dimension (the vocabulary of a language model). ``m`` and ``c`` are the
memory embedded by ``A`` and ``C``; the query is embedded by ``B`` when ``use_B``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import keras
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.hparams import HParams, HParamsError, check_positive_int, check_rate, hparams_scope
from texkit.modules.embedders import PositionEmbedder, WordEmbedder

__all__ = ["MemNetEmbedder", "MemNetRNNLike", "default_memnet_embed_fn_hparams"]

_COMBINE = ("add", "concat")


def default_memnet_embed_fn_hparams() -> dict:
    """The hparams of :class:`MemNetEmbedder` (Texar's ``default_memnet_embed_fn_hparams``)."""
    embedding = {**WordEmbedder.default_hparams(), "dim": 100, "name": "embedding"}
    temporal = {**PositionEmbedder.default_hparams(), "dim": 100, "name": "temporal_embedding"}
    return {"embedding": embedding, "temporal_embedding": temporal, "combine_mode": "add"}


class MemNetEmbedder(ModuleBase):
    """A memory network's default embedding function: a word embedding of each memory entry plus
    (or concatenated with) a learned embedding of its slot (the temporal embedding).

    Args:
        raw_memory_dim: the number of raw entries (the vocabulary size).
        memory_size: the number of memory slots (1 for the query embedding ``B``).
        hparams: see the table below.

    Call arguments:
        memory: ``[batch, memory_size]`` int entry ids, or
        soft_memory: ``[batch, memory_size, raw_memory_dim]`` float weights of the entries (give
            exactly one of the two).
        training: Keras' training flag (the embedders' dropout).

    Returns:
        ``[batch, memory_size, memory_dim]``: ``memory_dim`` is the embedding's ``dim``
        (``combine_mode: add``) or the sum of both dims (``concat``).
    """

    HPARAMS_DOC = {
        **{f"embedding.{k}": v for k, v in WordEmbedder.HPARAMS_DOC.items()},
        **{f"temporal_embedding.{k}": v for k, v in PositionEmbedder.HPARAMS_DOC.items()},
        "combine_mode": "'add' (the two dims must agree) or 'concat'.",
        "name": "Layer name.",
    }

    def __init__(self, raw_memory_dim: int, memory_size: int, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        if hp.combine_mode not in _COMBINE:
            raise HParamsError(
                f"expected one of {_COMBINE}, got {hp.combine_mode!r}", "combine_mode"
            )
        self.raw_memory_dim = raw_memory_dim
        self.memory_size = memory_size
        dtype = self.dtype_policy
        with hparams_scope("embedding"):
            self.embedder = WordEmbedder(raw_memory_dim, hparams=hp.embedding.todict(), dtype=dtype)
        with hparams_scope("temporal_embedding"):
            self.temporal_embedder = PositionEmbedder(
                memory_size, hparams=hp.temporal_embedding.todict(), dtype=dtype
            )
        if hp.combine_mode == "add" and hp.embedding.dim != hp.temporal_embedding.dim:
            raise HParamsError(
                f"combine_mode 'add' needs equal dims, got embedding.dim {hp.embedding.dim} and "
                f"temporal_embedding.dim {hp.temporal_embedding.dim}",
                "combine_mode",
            )

    @classmethod
    def default_hparams(cls) -> dict:
        return {**default_memnet_embed_fn_hparams(), "name": "memnet_embedder"}

    @property
    def memory_dim(self) -> int:
        """The last axis of the embeddings."""
        hp = self.hparams
        if hp.combine_mode == "add":
            return hp.embedding.dim
        return hp.embedding.dim + hp.temporal_embedding.dim

    def build(self, *args: Any, **kwargs: Any) -> None:
        self.embedder.build()
        self.temporal_embedder.build()

    def call(self, memory: Any = None, soft_memory: Any = None, training: Any = None) -> Any:
        if (memory is None) == (soft_memory is None):
            raise ValueError(f"{self.name}: give exactly one of memory and soft_memory")
        given = memory if memory is not None else soft_memory
        if given.shape[1] is not None and given.shape[1] != self.memory_size:
            raise ValueError(
                f"{self.name}: the memory has {given.shape[1]} slots, expected memory_size="
                f"{self.memory_size}"
            )
        embedded = self.embedder(ids=memory, soft_ids=soft_memory, training=training)
        positions = ops.arange(self.memory_size, dtype="int32")[None, :]
        temporal = self.temporal_embedder(positions=positions, training=training)
        temporal = ops.broadcast_to(temporal, (ops.shape(embedded)[0], *temporal.shape[1:]))
        if self.hparams.combine_mode == "add":
            return embedded + temporal
        return ops.concatenate([embedded, temporal], axis=-1)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "raw_memory_dim": self.raw_memory_dim,
            "memory_size": self.memory_size,
        }


def _embed_fn_doc(key: str) -> dict:
    return {f"{key}.{k}": v for k, v in MemNetEmbedder.HPARAMS_DOC.items() if k != "name"}


class MemNetRNNLike(ModuleBase):
    """An end-to-end memory network with RNN-like weight tying (Texar's ``MemNetRNNLike``).

    Args:
        raw_memory_dim: the number of raw memory entries, e.g. the vocabulary size of a
            language model whose memory is the previous words; also the number of logits.
        input_embed_fn: ``A``, a callable ``fn(memory, soft_memory, training=...)`` ->
            ``[batch, memory_size, memory_dim]``; ``None``: a :class:`MemNetEmbedder` configured
            by ``A``.
        output_embed_fn: ``C``, the same; ``None``: a :class:`MemNetEmbedder` configured by ``C``.
        query_embed_fn: ``B``, the same over one slot (``[batch, 1]`` ids or ``[batch, 1,
            raw_memory_dim]`` weights); ``None`` with ``use_B``: a :class:`MemNetEmbedder` of one
            slot configured by ``B``; ``None`` without: the query is used as it is.
        hparams: see the table below.

    The embedding functions given as Keras layers are saved in the config; a plain function
    cannot be, and :meth:`get_config` refuses.

    Call arguments:
        memory: ``[batch, memory_size]`` int entry ids (for the default embeddings), or
        soft_memory: ``[batch, memory_size, raw_memory_dim]`` float weights of the entries.
        query: with ``B``, ``[batch]`` int ids; without, the initial state ``[batch,
            memory_dim]`` float.
        soft_query: with ``B``, ``[batch, raw_memory_dim]`` weights instead of ``query``.
        memory_sequence_length: ``[batch]`` int numbers of valid slots (the first ones); the
            others get no attention. ``None``: every slot counts (as in Texar).
        training: Keras' training flag (dropout).

    Returns:
        ``[batch, raw_memory_dim]`` logits.

    Example:
        >>> memnet = MemNetRNNLike(raw_memory_dim=1000, hparams={"n_hops": 3, "memory_size": 20})
        >>> memnet(memory=tf.zeros([8, 20], "int32"), query=tf.ones([8, 100])).shape
        TensorShape([8, 1000])
    """

    HPARAMS_DOC = {
        "n_hops": "Number of hops over the memory.",
        "memory_dim": (
            "Size of the embedded memory entries and of u; used only when A and C are both "
            "given, otherwise it is the default embedding's size."
        ),
        "relu_dim": "Number of the last features of u that go through a ReLU after every hop.",
        "memory_size": "Number of memory slots (of the default embeddings' temporal table).",
        **_embed_fn_doc("A"),
        **_embed_fn_doc("C"),
        **_embed_fn_doc("B"),
        "use_B": "Embed the query with B (a default one unless query_embed_fn is given).",
        "use_H": "Multiply u by a learned H (shared by the hops) before adding o.",
        "dropout_rate": "Dropout on u after every hop.",
        "variational": "One dropout mask for all the hops (variational dropout).",
        "name": "Layer name.",
    }

    def __init__(
        self,
        raw_memory_dim: int,
        input_embed_fn: Callable | None = None,
        output_embed_fn: Callable | None = None,
        query_embed_fn: Callable | None = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        if isinstance(raw_memory_dim, bool) or not isinstance(raw_memory_dim, int):
            raise ValueError(f"{self.name}: raw_memory_dim must be an int, got {raw_memory_dim!r}")
        if raw_memory_dim < 1:
            raise ValueError(f"{self.name}: raw_memory_dim must be positive, got {raw_memory_dim}")
        check_positive_int(hp, "n_hops", "memory_dim", "memory_size")
        check_rate(hp, "dropout_rate")
        self.raw_memory_dim = raw_memory_dim
        self._given = {"A": input_embed_fn, "C": output_embed_fn, "B": query_embed_fn}
        dims = {}
        fns = {}
        for key, fn in self._given.items():
            if fn is None and (key != "B" or hp.use_B):
                size = 1 if key == "B" else hp.memory_size
                fn, dims[key] = self.get_default_embed_fn(size, hp[key], key)
            elif fn is not None and not callable(fn):
                raise ValueError(f"{self.name}: the {key} embedding function is not callable")
            fns[key] = fn
        if len(set(dims.values())) > 1:
            raise HParamsError(f"the default embeddings' sizes differ: {dims}", sorted(dims)[0])
        self._memory_dim = next(iter(dims.values())) if dims else hp.memory_dim
        if not 0 <= hp.relu_dim <= self._memory_dim:
            raise HParamsError(
                f"expected an int in [0, memory_dim={self._memory_dim}], got {hp.relu_dim!r}",
                "relu_dim",
            )
        self.input_embed_fn, self.output_embed_fn = fns["A"], fns["C"]
        self.query_embed_fn = fns["B"]
        self.W = keras.layers.Dense(
            raw_memory_dim, use_bias=False, name="W", dtype=self.dtype_policy
        )
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout_rate > 0 else None

    def get_default_embed_fn(
        self, memory_size: int, embed_fn_hparams: Any, key: str = "A"
    ) -> tuple[MemNetEmbedder, int]:
        """A :class:`MemNetEmbedder` over ``memory_size`` slots and its output size, as Texar's
        ``get_default_embed_fn`` (``key``: its name and the hparams key errors name)."""
        if isinstance(embed_fn_hparams, HParams):
            embed_fn_hparams = embed_fn_hparams.todict()
        with hparams_scope(key):
            embedder = MemNetEmbedder(
                self.raw_memory_dim,
                memory_size,
                {**embed_fn_hparams, "name": key},
                dtype=self.dtype_policy,
            )
        return embedder, embedder.memory_dim

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "n_hops": 1,
            "memory_dim": 100,
            "relu_dim": 50,
            "memory_size": 100,
            "A": default_memnet_embed_fn_hparams(),
            "C": default_memnet_embed_fn_hparams(),
            "B": default_memnet_embed_fn_hparams(),
            "use_B": False,
            "use_H": True,
            "dropout_rate": 0.0,
            "variational": False,
            "name": "memnet_rnnlike",
        }

    @property
    def memory_dim(self) -> int:
        """The size of the embedded memory entries and of the controller state ``u``."""
        return self._memory_dim

    @property
    def memory_size(self) -> int:
        """The number of memory slots."""
        return self.hparams.memory_size

    def build(self, *args: Any, **kwargs: Any) -> None:
        if self.hparams.use_H:
            self.H = self.add_weight(
                name="H", shape=(self._memory_dim, self._memory_dim), initializer="glorot_uniform"
            )
        self.W.build((None, self._memory_dim))

    def _hop(self, u: Any, m: Any, c: Any, valid: Any) -> Any:
        scores = ops.einsum("bmd,bd->bm", ops.cast(m, "float32"), ops.cast(u, "float32"))
        if valid is not None:
            scores = ops.where(valid, scores, ops.full_like(scores, -1e9))
        p = ops.cast(ops.softmax(scores, axis=-1), c.dtype)
        o = ops.einsum("bm,bmd->bd", p, c)
        if self.hparams.use_H:
            u = ops.matmul(u, ops.cast(self.H, u.dtype))
        u = u + o
        relu_dim = self.hparams.relu_dim
        if relu_dim == self._memory_dim:
            return ops.relu(u)
        if relu_dim > 0:
            split = self._memory_dim - relu_dim
            u = ops.concatenate([u[:, :split], ops.relu(u[:, split:])], axis=-1)
        return u

    def call(
        self,
        memory: Any = None,
        query: Any = None,
        soft_memory: Any = None,
        soft_query: Any = None,
        memory_sequence_length: Any = None,
        training: Any = None,
    ) -> Any:
        hp = self.hparams
        if self.query_embed_fn is not None:
            if (query is None) == (soft_query is None):
                raise ValueError(f"{self.name}: with B give exactly one of query and soft_query")
            query = self.query_embed_fn(
                None if query is None else query[:, None],
                None if soft_query is None else soft_query[:, None],
                training=training,
            )[:, 0]
        elif query is None:
            raise ValueError(f"{self.name}: query is required (the initial state [batch, dim])")
        u = ops.cast(query, self.compute_dtype)
        m = self.input_embed_fn(memory, soft_memory, training=training)
        c = self.output_embed_fn(memory, soft_memory, training=training)
        valid = None
        if memory_sequence_length is not None:
            valid = sequence_mask(memory_sequence_length, ops.shape(m)[1])
        mask = None
        if hp.variational and training and hp.dropout_rate > 0:
            keep = keras.random.uniform(ops.shape(u), seed=self.seed_generator) >= hp.dropout_rate
            mask = ops.cast(keep, u.dtype) / (1.0 - hp.dropout_rate)
        for _ in range(hp.n_hops):
            u = self._hop(u, m, c, valid)
            if mask is not None:
                u = u * mask
            elif not hp.variational:
                u = dropout(u, hp.dropout_rate, training, self.seed_generator)
        return self.W(u)

    def get_config(self) -> dict:
        config = {**super().get_config(), "raw_memory_dim": self.raw_memory_dim}
        names = {"A": "input_embed_fn", "C": "output_embed_fn", "B": "query_embed_fn"}
        for key, fn in self._given.items():
            if fn is None:
                continue
            if not isinstance(fn, keras.layers.Layer):
                raise ValueError(
                    f"{self.name}: {names[key]} is a plain function, which a config cannot hold; "
                    "give a Keras layer to save the network"
                )
            config[names[key]] = keras.saving.serialize_keras_object(fn)
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> MemNetRNNLike:
        config = dict(config)
        for name in ("input_embed_fn", "output_embed_fn", "query_embed_fn"):
            if config.get(name) is not None:
                config[name] = keras.saving.deserialize_keras_object(config[name])
        return super().from_config(config)
