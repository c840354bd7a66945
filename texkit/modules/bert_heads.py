"""BERT's heads, and heads for tagging and span question answering on any encoder.

* :class:`BERTMaskedLMHead`: ``logits = LayerNorm(act(dense(h))) E^T + b`` at the masked
  positions, with ``E`` the encoder's word embedding table (tied weights).
* :class:`BERTNextSentenceHead`: two logits from the pooled output (0: B follows A, 1: B is a
  random sentence, BERT's convention).
* :class:`BERTPretrainer`: an encoder with both heads, for pretraining; checkpoints with
  ``cls/...`` entries load into it whole.
* :class:`TokenTaggingHead`: a label per token (dropout + dense on every step).
* :class:`SpanHead`: start and end logits per step for extractive question answering; padded
  steps get ``-1e9`` so they are never predicted.
"""

from __future__ import annotations

import os
from typing import Any

import keras
from keras import ops

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.core.layers import get_activation
from texkit.hparams import check_positive_int, check_rate, hparams_scope
from texkit.modules.encoders.bert_encoder import BERTEncoder, bert_activation

__all__ = [
    "BERTMaskedLMHead",
    "BERTNextSentenceHead",
    "BERTPretrainer",
    "SpanHead",
    "TokenTaggingHead",
    "gather_positions",
]


def gather_positions(sequence: Any, positions: Any) -> Any:
    """Rows of ``sequence`` [batch, time, dim] at ``positions`` [batch, P]: [batch, P, dim]."""
    return ops.take_along_axis(sequence, ops.cast(positions, "int32")[:, :, None], axis=1)


def _dense(head: ModuleBase, units: int, name: str, activation: Any = None) -> keras.layers.Dense:
    """A dense layer of ``head``, initialized as BERT does: truncated normal with stddev
    ``head.hparams.initializer_range``."""
    return keras.layers.Dense(
        units,
        activation=activation,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=head.hparams.initializer_range
        ),
        name=name,
        dtype=head.dtype_policy,
    )


class BERTMaskedLMHead(ModuleBase):
    """BERT's masked-LM head, its output layer tied to the word embeddings.

    Call arguments:
        hidden_states: ``[batch, time, hidden_size]`` encoder outputs.
        positions: ``[batch, P]`` int positions to predict (e.g. ``masked_lm_positions``).
        embedding_table: ``[vocab_size, hidden_size]``, the encoder's word embeddings.

    Returns:
        ``[batch, P, vocab_size]`` logits in the layer's compute dtype.
    """

    HPARAMS_DOC = {
        "vocab_size": "Number of wordpiece ids (rows of the tied embedding table).",
        "hidden_size": "Size of the encoder outputs.",
        "hidden_act": "Activation of the transform (BERT config names: 'gelu', 'gelu_new', ...).",
        "layer_norm_eps": "Epsilon of the layer norm.",
        "initializer_range": "Stddev of the truncated-normal initializer.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        activation = get_activation(bert_activation(hp.hidden_act))
        self.transform = _dense(self, hp.hidden_size, "transform", activation)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=hp.layer_norm_eps, name="layer_norm", dtype=self.dtype_policy
        )

    @classmethod
    def default_hparams(cls) -> dict:
        keys = ("vocab_size", "hidden_size", "hidden_act", "layer_norm_eps", "initializer_range")
        defaults = BERTEncoder.default_hparams()
        return {**{k: defaults[k] for k in keys}, "name": "mlm_head"}

    def build(self, hidden_shape: Any, *args: Any, **kwargs: Any) -> None:
        hidden = (None, None, self.hparams.hidden_size)
        self.transform.build(hidden)
        self.layer_norm.build(hidden)
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.hparams.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, hidden_states: Any, positions: Any, embedding_table: Any) -> Any:
        selected = gather_positions(hidden_states, positions)
        selected = self.layer_norm(self.transform(selected))
        table = ops.cast(embedding_table, self.compute_dtype)
        logits = ops.einsum("bpd,vd->bpv", selected, table)
        return logits + ops.cast(self.output_bias, self.compute_dtype)


class _TwoLogits(ModuleBase):
    """A dense layer to two logits over the last axis (shared by the heads below)."""

    HPARAMS_DOC = {
        "initializer_range": "Stddev of the truncated-normal initializer.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        self.dense = _dense(self, 2, "dense")

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        self.dense.build((*[None] * (len(shape) - 1), shape[-1]))
        self.built = True


class BERTNextSentenceHead(_TwoLogits):
    """BERT's next-sentence head: ``dense(pooled_output)`` with two classes.

    Class 0 means sentence B follows A in the corpus, 1 means B is a random sentence.

    Call arguments:
        pooled_output: ``[batch, hidden_size]``.

    Returns:
        ``[batch, 2]`` logits in the layer's compute dtype.
    """

    @classmethod
    def default_hparams(cls) -> dict:
        return {"initializer_range": 0.02, "name": "nsp_head"}

    def call(self, pooled_output: Any) -> Any:
        return self.dense(pooled_output)


class BERTPretrainer(ModuleBase):
    """A BERT encoder with its masked-LM and next-sentence heads.

    Call arguments:
        input_ids, sequence_length, segment_ids, training: as for
            :class:`~texkit.modules.BERTEncoder`.
        masked_lm_positions: ``[batch, P]`` positions whose tokens are predicted.

    Returns:
        ``(mlm_logits [batch, P, vocab_size], nsp_logits [batch, 2])`` in the compute dtype.

    :meth:`from_pretrained` loads the encoder and, when the checkpoint has them, the heads
    (``cls/predictions``, ``cls/seq_relationship``); heads it lacks keep their initial weights.
    """

    HPARAMS_DOC = {
        **{f"encoder.{k}": v for k, v in BERTEncoder.HPARAMS_DOC.items()},
        "name": "Layer name.",
    }
    # The encoder classes whose checkpoints it loads: the heads are BERT's.
    ENCODER_TYPES = ("BERTEncoder",)

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams.encoder
        policy = self.dtype_policy
        with hparams_scope("encoder"):
            self.encoder = BERTEncoder(hp, dtype=policy)
        head = {k: hp[k] for k in BERTMaskedLMHead.default_hparams() if k != "name"}
        self.mlm_head = BERTMaskedLMHead(head, dtype=policy)
        self.nsp_head = BERTNextSentenceHead(
            {"initializer_range": hp.initializer_range}, dtype=policy
        )

    @classmethod
    def default_hparams(cls) -> dict:
        return {"encoder": BERTEncoder.default_hparams(), "name": "bert_pretrainer"}

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> BERTPretrainer:
        """Builds from a checkpoint folder's config; loads the encoder and the heads it has."""
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    def build(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> None:
        hidden = (None, None, self.encoder.output_size)
        self.encoder.build(input_ids_shape)
        self.mlm_head.build(hidden)
        self.nsp_head.build(hidden[::2])
        self.built = True

    def call(
        self,
        input_ids: Any,
        masked_lm_positions: Any,
        sequence_length: Any = None,
        segment_ids: Any = None,
        training: Any = None,
    ) -> tuple[Any, Any]:
        outputs, pooled = self.encoder(
            input_ids, sequence_length=sequence_length, segment_ids=segment_ids, training=training
        )
        mlm_logits = self.mlm_head(outputs, masked_lm_positions, self.encoder.embedding_table)
        return mlm_logits, self.nsp_head(pooled)


class TokenTaggingHead(ModuleBase):
    """A label per token: ``dense(dropout(h))`` at every step (e.g. named-entity tags).

    Call arguments:
        hidden_states: ``[batch, time, dim]``; training: Keras' flag.

    Returns:
        ``[batch, time, num_classes]`` logits in the layer's compute dtype.
    """

    HPARAMS_DOC = {
        "num_classes": "Number of tags.",
        "dropout_rate": "Dropout rate before the dense layer.",
        "initializer_range": "Stddev of the truncated-normal initializer.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_positive_int(hp, "num_classes")
        check_rate(hp, "dropout_rate")
        self.dense = _dense(self, hp.num_classes, "dense")
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout_rate > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_classes": 2,
            "dropout_rate": 0.1,
            "initializer_range": 0.02,
            "name": "tagging_head",
        }

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        self.dense.build((None, None, shape[-1]))
        self.built = True

    def call(self, hidden_states: Any, training: Any = None) -> Any:
        hidden_states = dropout(
            hidden_states, self.hparams.dropout_rate, training, self.seed_generator
        )
        return self.dense(hidden_states)


class SpanHead(_TwoLogits):
    """Start and end logits of an answer span (extractive QA, as BERT does SQuAD).

    Call arguments:
        hidden_states: ``[batch, time, dim]``.
        sequence_length: ``[batch]``; steps at or past it get logit ``-1e9``. ``None``: none.

    Returns:
        ``(start_logits, end_logits)``, each ``[batch, time]``, in the layer's compute dtype.
    """

    @classmethod
    def default_hparams(cls) -> dict:
        return {"initializer_range": 0.02, "name": "span_head"}

    def call(self, hidden_states: Any, sequence_length: Any = None) -> tuple[Any, Any]:
        logits = self.dense(hidden_states)
        if sequence_length is not None:
            valid = sequence_mask(sequence_length, ops.shape(logits)[1])
            logits = ops.where(valid[:, :, None], logits, ops.cast(-1e9, logits.dtype))
        return logits[..., 0], logits[..., 1]
