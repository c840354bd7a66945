"""The taggers of the sequence tagging example: an encoder, then a CRF or a softmax head.

Both encoders give one vector per token of the treebank:

* :class:`BiLSTMCNNTagger` (Ma & Hovy, 2016): a word embedding and a character CNN (the token's
  characters, convolved and max-pooled) side by side (``tx.modules.WordCharEmbedder``), then a
  bidirectional LSTM (``tx.modules.BidirectionalRNNEncoder``);
* :class:`BERTTagger`: a pretrained BERT (``tx.pretrained.from_pretrained``) over the WordPiece
  pieces of the tokens, read at each token's first piece (the other pieces of a token are context
  for the encoder but get no label of their own).

On top, ``head: crf`` is ``tx.modules.CRFTaggingHead`` (a dense layer giving the emission
potentials and a linear-chain CRF: the loss is the negative log-likelihood of the whole tag
sequence, the prediction its Viterbi decoding) and ``head: softmax`` is
``tx.modules.TokenTaggingHead`` (each token's tag on its own: the loss is the summed
cross-entropy of the tokens, the prediction each token's argmax). Both losses are per sentence,
averaged over the batch, so they are on one scale.
"""

from __future__ import annotations

import keras
import tensorflow as tf

import texkit as tx

HEADS = ("crf", "softmax")


class Tagger(keras.Model):
    """What both taggers share: features -> tag scores ``[batch, time, num_tags]`` (float32),
    the loss, and :meth:`predict_tags`. A subclass defines :meth:`encode`."""

    def __init__(self, num_tags: int, hparams: dict, tags: list | None = None,
                 tag_scheme: str | None = None, **kwargs):  # fmt: skip
        super().__init__(**kwargs)
        self.num_tags = num_tags
        self.hparams = dict(hparams)
        self.tags, self.tag_scheme = tags, tag_scheme
        head = self.hparams["head"]
        if head not in HEADS:
            raise tx.HParamsError(f"head must be one of {HEADS}, got {head!r}", "head")
        if head == "crf":
            # With an entity scheme, Viterbi never decodes a transition the scheme forbids.
            self.head = tx.modules.CRFTaggingHead(
                {
                    "num_tags": num_tags,
                    "dropout_rate": self.hparams["head_dropout_rate"],
                    "tags": tags if tag_scheme else None,
                    "tag_scheme": tag_scheme,
                }
            )
        else:
            self.head = tx.modules.TokenTaggingHead(
                {"num_classes": num_tags, "dropout_rate": self.hparams["head_dropout_rate"]}
            )

    def encode(self, features: dict, training=None) -> tf.Tensor:
        """``[batch, time, dim]``: one vector per token."""
        raise NotImplementedError

    def call(self, features: dict, training=None) -> tf.Tensor:
        hidden = self.encode(features, training=training)
        if self.hparams["head"] == "crf":
            scores = self.head(hidden, sequence_length=features["length"], training=training)
        else:
            scores = self.head(hidden, training=training)
        return tf.cast(scores, tf.float32)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The mean over the batch's sentences of each sentence's negative log-likelihood: the
        CRF's of the whole tag sequence, or the summed cross-entropy of its tokens."""
        if self.hparams["head"] == "crf":
            return self.head.loss(y_pred, y, x["length"])
        return tx.losses.sequence_sparse_softmax_cross_entropy(
            labels=y, logits=y_pred, sequence_length=x["length"]
        )

    def predict_tags(self, features: dict) -> tf.Tensor:
        """``[batch, time]`` int32 tag ids: the CRF's Viterbi path, or each token's argmax
        (anything at padded steps)."""
        scores = self(features, training=False)
        if self.hparams["head"] == "crf":
            tags, _ = self.head.decode(scores, features["length"])
            return tf.cast(tags, tf.int32)
        return tf.argmax(scores, axis=-1, output_type=tf.int32)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_tags": self.num_tags,
            "hparams": self.hparams,
            "tags": self.tags,
            "tag_scheme": self.tag_scheme,
        }


@keras.saving.register_keras_serializable(package="texkit_examples")
class BiLSTMCNNTagger(Tagger):
    """Word embeddings and a character CNN, concatenated, then a bidirectional LSTM.

    Features: ``word_ids [batch, time]``, ``char_ids [batch, time, max_word_length]``,
    ``length [batch]``.
    """

    def __init__(self, num_tags: int, vocab_size: int, char_vocab_size: int, hparams: dict,
                 **kwargs):  # fmt: skip
        super().__init__(num_tags, hparams, **kwargs)
        hp = self.hparams
        self.vocab_size, self.char_vocab_size = vocab_size, char_vocab_size
        self.embedder = tx.modules.WordCharEmbedder(
            vocab_size,
            char_vocab_size,
            hparams={
                "word": {
                    "dim": hp["word_dim"],
                    "dropout_rate": hp["word_dropout_rate"],
                    "dropout_strategy": "item",
                },
                "char": {
                    "dim": hp["char_dim"],
                    "cnn": {
                        "filters": hp["char_filters"],
                        "kernel_sizes": [hp["char_kernel_size"]],
                    },
                },
            },
        )
        keep = 1.0 - hp["dropout_rate"]
        self.encoder = tx.modules.BidirectionalRNNEncoder(
            {
                "rnn_cell_fw": {
                    "type": "LSTMCell",
                    "kwargs": {"units": hp["lstm_units"]},
                    "dropout": {"input_keep_prob": keep, "output_keep_prob": keep},
                }
            }
        )

    def encode(self, features: dict, training=None) -> tf.Tensor:
        inputs = self.embedder(features["word_ids"], features["char_ids"], training=training)
        (forward, backward), _ = self.encoder(
            inputs, sequence_length=features["length"], training=training
        )
        return tf.concat([forward, backward], axis=-1)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "char_vocab_size": self.char_vocab_size,
        }


@keras.saving.register_keras_serializable(package="texkit_examples")
class BERTTagger(Tagger):
    """A pretrained BERT over the tokens' WordPiece pieces, read at each token's first piece.

    Features: ``input_ids [batch, pieces]`` (``[CLS]``, the pieces, ``[SEP]``),
    ``input_length [batch]`` (pieces with ``[CLS]`` and ``[SEP]``), ``first_piece [batch,
    time]`` (the position in ``input_ids`` of each token's first piece), ``length [batch]``
    (tokens).
    """

    def __init__(self, num_tags: int, pretrained: str, hparams: dict, **kwargs):
        super().__init__(num_tags, hparams, **kwargs)
        self.pretrained = pretrained
        dropout = {
            key: value
            for key, value in (self.hparams.get("encoder") or {}).items()
            if value is not None
        }
        self.encoder = tx.pretrained.from_pretrained(pretrained, dropout or None)
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler.trainable = False  # the [CLS] pooler is not used for tagging

    def encode(self, features: dict, training=None) -> tf.Tensor:
        outputs, _ = self.encoder(
            features["input_ids"], sequence_length=features["input_length"], training=training
        )
        return tf.gather(outputs, features["first_piece"], batch_dims=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "pretrained": self.pretrained}
