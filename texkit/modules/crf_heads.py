"""A tagging head with a CRF: per-token potentials from any encoder, a linear-chain CRF on top.

:class:`CRFTaggingHead` is :class:`~texkit.modules.TokenTaggingHead` (dropout and a dense layer at
every step) followed by a :class:`~texkit.modules.CRF`: trained with the CRF's negative
log-likelihood, decoded by Viterbi (within a tag scheme's constraints if given).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.hparams import check_rate
from texkit.modules.crf import CRF

__all__ = ["CRFTaggingHead"]


class CRFTaggingHead(ModuleBase):
    """A tag per token with a CRF on top: ``potentials = dense(dropout(h))``, trained by the
    CRF's negative log-likelihood and decoded by Viterbi. Works on any encoder's outputs (a
    BERT-family encoder, a bidirectional RNN).

    ``num_tags`` is called so after the CRF (:class:`TokenTaggingHead` says ``num_classes``).

    Call arguments:
        hidden_states: ``[batch, time, dim]`` encoder outputs.
        sequence_length: ``[batch]`` int valid lengths; padded steps get potentials 0.
            ``None``: nothing is padded.
        training: Keras' flag (dropout).

    Returns:
        ``[batch, time, num_tags]`` potentials in the layer's compute dtype; give them to
        :meth:`loss` (training) or :meth:`decode` (prediction).

    Example:
        >>> head = CRFTaggingHead({"num_tags": 5, "tags": ["O", "B-PER", "I-PER", "B-LOC",
        ...                        "I-LOC"], "tag_scheme": "BIO"})
        >>> encoder_outputs = tf.random.normal([2, 6, 16])  # e.g. a BiLSTM's or BERT's
        >>> sequence_length = tf.constant([6, 3])
        >>> gold_tags = tf.constant([[1, 2, 0, 3, 4, 0], [0, 1, 2, 0, 0, 0]])
        >>> potentials = head(encoder_outputs, sequence_length, training=True)
        >>> loss = head.loss(potentials, gold_tags, sequence_length)  # mean NLL, a scalar
        >>> tags, scores = head.decode(potentials, sequence_length)
        >>> tags.shape, scores.shape
        (TensorShape([2, 6]), TensorShape([2]))
    """

    HPARAMS_DOC = {
        "num_tags": "Number of tags.",
        "dropout_rate": "Dropout rate before the dense layer.",
        "initializer_range": "Stddev of the dense layer's truncated-normal initializer.",
        "tags": CRF.HPARAMS_DOC["tags"],
        "tag_scheme": CRF.HPARAMS_DOC["tag_scheme"],
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_rate(hp, "dropout_rate")
        crf_keys = ("num_tags", "tags", "tag_scheme")
        self.crf = CRF(hparams={k: hp[k] for k in crf_keys}, name="crf", dtype=self.dtype_policy)
        self.dense = keras.layers.Dense(
            hp.num_tags,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=hp.initializer_range),
            name="dense",
            dtype=self.dtype_policy,
        )
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout_rate > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_tags": 2,
            "dropout_rate": 0.1,
            "initializer_range": 0.02,
            "tags": None,
            "tag_scheme": None,
            "name": "crf_tagging_head",
        }

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        self.dense.build((None, None, shape[-1]))
        self.crf.build()
        self.built = True

    def call(self, hidden_states: Any, sequence_length: Any = None, training: Any = None) -> Any:
        hidden_states = dropout(
            hidden_states, self.hparams.dropout_rate, training, self.seed_generator
        )
        potentials = self.dense(hidden_states)
        if sequence_length is not None:
            valid = sequence_mask(sequence_length, tf.shape(potentials)[1])
            potentials = tf.where(valid[:, :, None], potentials, tf.zeros_like(potentials))
        return potentials

    def loss(self, potentials: Any, tags: Any, sequence_length: Any = None) -> Any:
        """The CRF's negative log-likelihood, averaged over the sequences of the batch (not over
        tokens; a sequence of length 0 adds 0).

        Returns:
            A float32 scalar.
        """
        return -tf.reduce_mean(self.crf.log_likelihood(potentials, tags, sequence_length))

    def decode(self, potentials: Any, sequence_length: Any = None) -> tuple[Any, Any]:
        """Viterbi tags ``[batch, time]`` int32 and scores ``[batch]``: see
        :meth:`~texkit.modules.CRF.viterbi_decode`."""
        return self.crf.viterbi_decode(potentials, sequence_length)
