"""The BERT family's encoder: what BERT, RoBERTa, DistilBERT, ALBERT and ELECTRA share.

Each of them is word (+ segment) + position embeddings, a layer norm and dropout, optionally a
projection from the embedding size to the hidden size (ALBERT, ELECTRA), a stack of post-norm
Transformer blocks (ALBERT: one block applied ``num_hidden_layers`` times) and optionally the
pooler ``tanh(dense(outputs[:, 0]))``. A family class keeps its checkpoint config's key names as
hparams (so a config translates one to one) and says in :meth:`BERTFamilyEncoder.architecture`
what they mean; this class builds and runs the network.

Every family returns ``(outputs, pooled)``. A family without a pooler (DistilBERT, ELECTRA)
returns the first token's hidden state as ``pooled``, so the heads and classifiers that read it
(``clas_strategy: cls_time``) work with every family.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import keras
from keras import ops

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.core.dropout import dropout
from texkit.core.quantized_table import full_table, is_quantized_table
from texkit.core.transformer import (
    TransformerBlock,
    check_stack_hparams,
    default_stack_hparams,
    layer_norm,
)
from texkit.hparams import HParams, HParamsError, hparams_scope
from texkit.hparams.rules import short
from texkit.modules.embedders import PositionEmbedder, WordEmbedder

__all__ = ["ACTIVATIONS", "BERTFamilyEncoder", "EncoderArchitecture", "family_activation"]

# Activation names of the families' configs (hidden_act, activation), as texkit activations.
ACTIVATIONS = {
    "gelu": "gelu",  # exact: x * Phi(x), with erf
    "gelu_new": {"type": "gelu", "kwargs": {"approximate": True}},  # tanh approximation
    "gelu_pytorch_tanh": {"type": "gelu", "kwargs": {"approximate": True}},
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}


def family_activation(name: Any, key: str = "hidden_act") -> Any:
    """The texkit activation hparams for a config's activation name (an error naming ``key``)."""
    try:
        return ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise HParamsError(
            f"unknown activation {short(name)}; expected one of {sorted(ACTIVATIONS)}", key
        ) from None


def _family_classes() -> list[str]:
    """The names of the BERT family's encoder classes (those that define an architecture)."""
    found, pending = set(), [BERTFamilyEncoder]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            if subclass.architecture is not BERTFamilyEncoder.architecture:
                found.add(subclass.__name__)
    return sorted(found)


@dataclass(frozen=True)
class EncoderArchitecture:
    """What a family's hparams mean, in one vocabulary.

    Attributes:
        vocab_size: rows of the word table.
        hidden_size: size of every layer and of the outputs.
        num_layers: number of blocks applied.
        num_heads: number of attention heads.
        intermediate_size: inner size of the feed-forward networks.
        activation: the config's activation name (a key of :data:`ACTIVATIONS`).
        hidden_dropout: dropout on the embeddings and on each sub-layer's output.
        attention_dropout: dropout on the attention weights.
        max_positions: rows of the position table.
        type_vocab_size: rows of the segment table; 0: no segment embeddings.
        layer_norm_eps, initializer_range: as in BERT's config.
        embedding_size: size of the embeddings; ``None``: ``hidden_size`` (no projection).
        position_offset: the position of the first token (RoBERTa: ``pad_token_id + 1``).
        pooler: whether there is a pooler.
        shared_layers: one block applied ``num_layers`` times (ALBERT).
    """

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    activation: str
    hidden_dropout: float
    attention_dropout: float
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    initializer_range: float
    embedding_size: int | None = None
    position_offset: int = 0
    pooler: bool = True
    shared_layers: bool = False


class BERTFamilyEncoder(ModuleBase):
    """Base class of the BERT family's encoders; a subclass defines :meth:`architecture`.

    Args:
        hparams: the family's hparams (its config's keys).
        add_pooling_layer: create the family's pooler (as transformers' ``add_pooling_layer``).
            ``False`` for a model that never reads ``pooled`` (a tagger, a classifier on the
            mean of the outputs): the pooler's weights then do not exist, ``pooled`` is the
            first token's hidden state as in a family without a pooler, and a checkpoint's
            pooler weights are reported unused (:attr:`~texkit.pretrained.LoadReport.unused`).
        **kwargs: Keras layer arguments.

    Call arguments:
        input_ids: ``[batch, time]`` int token ids; ``time`` plus the family's position offset
            must not exceed the position table.
        sequence_length: ``[batch]`` valid lengths; padded steps are masked out of attention.
            ``None``: every step is valid.
        segment_ids: ``[batch, time]`` int segment ids; ``None``: all 0. A family without
            segment embeddings (DistilBERT) ignores them, so one input pipeline serves every
            family.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``(outputs, pooled)``: ``[batch, time, hidden]`` and ``[batch, hidden]`` (the pooler's
        output, or the first token's hidden state in a family without a pooler), in the
        layer's compute dtype.
    """

    REGISTERED = False  # an abstract base

    def architecture(self) -> EncoderArchitecture:
        """The architecture the hparams describe (checked by the subclass)."""
        raise NotImplementedError

    def __init__(self, hparams: Any = None, *, add_pooling_layer: bool = True, **kwargs: Any):
        if type(self).architecture is BERTFamilyEncoder.architecture:
            raise TypeError(
                f"{type(self).__name__} is the base of the BERT family's encoders and builds no "
                f"network itself; use a family's class: {', '.join(_family_classes())}"
            )
        super().__init__(hparams, **kwargs)
        arch = self.arch = self.architecture()
        activation = family_activation(arch.activation, self._activation_key)
        self._check_heads(arch)
        if not 0 < arch.layer_norm_eps < 1:
            raise HParamsError(
                f"expected an epsilon between 0 and 1, got {short(arch.layer_norm_eps)}",
                self._epsilon_key,
            )
        initializer = {
            "type": "TruncatedNormal",
            "kwargs": {"mean": 0.0, "stddev": arch.initializer_range, "seed": None},
        }
        embedding_size = arch.embedding_size or arch.hidden_size
        table = {"dim": embedding_size, "initializer": initializer}
        policy = self.dtype_policy
        self.word_embedder = WordEmbedder(
            arch.vocab_size, hparams={**table, "name": "word_embeddings"}, dtype=policy
        )
        self.segment_embedder = None
        if arch.type_vocab_size:
            self.segment_embedder = WordEmbedder(
                arch.type_vocab_size,
                hparams={**table, "name": "token_type_embeddings"},
                dtype=policy,
            )
        self.position_embedder = PositionEmbedder(
            arch.max_positions, hparams={**table, "name": "position_embeddings"}, dtype=policy
        )
        self.embedding_norm = layer_norm(arch.layer_norm_eps, "embedding_norm", policy)
        kernel_initializer = keras.initializers.TruncatedNormal(stddev=arch.initializer_range)
        self.embedding_projection = None
        if arch.embedding_size is not None:
            self.embedding_projection = keras.layers.Dense(
                arch.hidden_size,
                kernel_initializer=kernel_initializer,
                name="embedding_projection",
                dtype=policy,
            )
        stack = HParams(
            {
                "dim": arch.hidden_size,
                "num_blocks": arch.num_layers,
                "multihead_attention": {
                    "num_heads": arch.num_heads,
                    "dropout_rate": arch.attention_dropout,
                },
                "poswise_feedforward": {"dim": arch.intermediate_size, "activation": activation},
                "embedding_dropout": arch.hidden_dropout,
                "residual_dropout": arch.hidden_dropout,
                "norm": "post",
                "layer_norm_epsilon": arch.layer_norm_eps,
                "initializer": initializer,
            },
            default_stack_hparams(),
        )
        check_stack_hparams(stack)
        num_blocks = 1 if arch.shared_layers else arch.num_layers
        with hparams_scope("transformer"):
            self.blocks = [
                TransformerBlock(stack, kernel_initializer, "post", name=f"block_{i}", dtype=policy)
                for i in range(num_blocks)
            ]
        self.add_pooling_layer = bool(add_pooling_layer)
        self.pooler = None
        if arch.pooler and self.add_pooling_layer:
            self.pooler = keras.layers.Dense(
                arch.hidden_size,
                activation="tanh",
                kernel_initializer=kernel_initializer,
                name="pooler",
                dtype=policy,
            )
        self.seed_generator = keras.random.SeedGenerator() if arch.hidden_dropout > 0 else None

    # The hparams that name the activation and the layer norms' epsilon, for errors.
    _activation_key = "hidden_act"
    _epsilon_key = "layer_norm_eps"
    # The hparams that name the heads and hidden sizes, for errors.
    _heads_keys = ("num_attention_heads", "hidden_size")

    def _check_heads(self, arch: EncoderArchitecture) -> None:
        if arch.hidden_size % arch.num_heads:
            heads, hidden = self._heads_keys
            raise HParamsError(
                f"{heads}={arch.num_heads} must divide {hidden}={arch.hidden_size}", heads
            )

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> BERTFamilyEncoder:
        """Builds an encoder from a checkpoint folder's config and loads its weights.

        Args:
            path: a checkpoint folder in one of the family's formats (a Hugging Face folder:
                ``config.json`` and ``model.safetensors``; BERT also Google's TF release), or
                the name of a packaged checkpoint (:func:`texkit.pretrained.resolve_checkpoint`).
            hparams: optional overrides, e.g. dropout rates or ``name``. A value that contradicts
                the checkpoint's config (a size, the number of layers) is an error.
            **kwargs: Keras layer arguments (e.g. ``dtype="mixed_bfloat16"``), and
                ``allow_non_finite=True`` to load weights holding NaN or infinite values (an
                error by default).

        The config's sizes are checked against the weights' shapes before anything is built;
        loading is all or nothing (:func:`texkit.pretrained.load_checkpoint`).
        """
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        if not self.add_pooling_layer:
            config["add_pooling_layer"] = False
        return config

    @property
    def output_size(self) -> int:
        """Size of each output vector (the hidden size).

        Heads and classifiers read this, so that they need no family's config names.
        """
        return self.arch.hidden_size

    @property
    def embedding_table(self) -> Any:
        """The word embedding matrix ``[vocab_size, embedding size]`` (output heads tie to it)."""
        if is_quantized_table(self.word_embedder):
            return full_table(self.word_embedder, "float32")
        return self.word_embedder.embedding

    @property
    def max_length(self) -> int:
        """The longest input: the position table's rows less the position offset."""
        return self.arch.max_positions - self.arch.position_offset

    def build(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> None:
        arch = self.arch
        embedded = (*input_ids_shape, arch.embedding_size or arch.hidden_size)
        hidden = (*input_ids_shape, arch.hidden_size)
        self.word_embedder.build(input_ids_shape)
        if self.segment_embedder is not None:
            self.segment_embedder.build(input_ids_shape)
        self.position_embedder.build(input_ids_shape)
        self.embedding_norm.build(embedded)
        if self.embedding_projection is not None:
            self.embedding_projection.build(embedded)
        for block in self.blocks:
            block.build(hidden)
        if self.pooler is not None:
            self.pooler.build((input_ids_shape[0], arch.hidden_size))
        self.built = True

    def call(
        self,
        input_ids: Any,
        sequence_length: Any = None,
        segment_ids: Any = None,
        training: Any = None,
    ) -> tuple[Any, Any]:
        arch = self.arch
        time = input_ids.shape[1]
        if time is not None and time > self.max_length:
            raise ValueError(
                f"{self.name}: input_ids has {time} steps, more than the {self.max_length} "
                "positions the model has"
            )
        positions = ops.arange(ops.shape(input_ids)[1], dtype="int32") + arch.position_offset
        embedded = self.word_embedder(input_ids) + self.position_embedder(
            positions=ops.expand_dims(positions, 0)
        )
        if self.segment_embedder is not None:
            if segment_ids is None:
                segment_ids = ops.zeros_like(input_ids)
            embedded = embedded + self.segment_embedder(segment_ids)
        x = self.embedding_norm(embedded)
        x = dropout(x, arch.hidden_dropout, training, self.seed_generator)
        if self.embedding_projection is not None:
            x = self.embedding_projection(x)
        for i in range(arch.num_layers):
            block = self.blocks[0 if arch.shared_layers else i]
            x = block(x, sequence_length=sequence_length, training=training)
        first = x[:, 0]
        pooled = self.pooler(first) if self.pooler is not None else first
        return x, pooled

    def compute_output_shape(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> Any:
        hidden = self.arch.hidden_size
        return (*input_ids_shape, hidden), (input_ids_shape[0], hidden)
