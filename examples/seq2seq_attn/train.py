"""Translates Spanish Bible verses into English with an attention RNN (Luong et al., 2015).

The data are the Reina-Valera 1909 / King James verse pairs of ``examples/common/data`` with
their fixed split by book: the test books are never seen in training. Verses are lowercased, split
into words and punctuation and read by ``tx.data.PairedTextData``; the data, the translation of
the test books and BLEU are shared with ``examples/transformer``
(``examples/common/bible_translation.py``).
The model is Texar's ``seq2seq_attn``:

* ``WordEmbedder`` for each language,
* ``BidirectionalRNNEncoder`` (LSTM) over the Spanish verse,
* ``MLPTransformConnector`` from the encoder's final states to the decoder's initial state,
* ``AttentionRNNDecoder`` (LSTM, Luong attention, input feeding, a linear attention layer: with
  Luong's tanh there the loss stayed near a unigram model's for two epochs) trained with teacher
  forcing and ``tx.losses.sequence_sparse_softmax_cross_entropy``,

trained through ``tx.run.Trainer`` (checkpoints, resume, distribution strategies). It then
translates the test books with beam search, reports BLEU with sacrebleu against the original
English verses (lowercased; the hypotheses are the decoded tokens joined by spaces, which
sacrebleu's 13a tokenizer splits like the references), and prints a few translations.

From the repository root:

    python -m examples.seq2seq_attn.train --config examples/seq2seq_attn/config.yaml
    python -m examples.seq2seq_attn.train --config examples/seq2seq_attn/config.yaml --quick
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

import texkit as tx
from examples.common import bible_translation  # also registers the data builder

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: bible_translation's few hundred verses and few steps, with a tiny model.
QUICK = [
    "model.hparams.embedding_dim=16",
    "model.hparams.encoder_units=16",
    "model.hparams.decoder_units=32",
    *bible_translation.QUICK,
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "test BLEU 21.87"


@keras.saving.register_keras_serializable(package="texkit_examples")
class Seq2SeqAttn(keras.Model):
    """Embedders, a bidirectional LSTM encoder, a connector and an attention LSTM decoder."""

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        hparams: dict,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hparams = dict(hparams)
        hp = self.hparams
        if "embedder" in hp:  # module hparams, as Texar's config_model.py has them
            self._from_modules(source_vocab_size, target_vocab_size, hp)
            return
        self.source_embedder = tx.modules.WordEmbedder(
            vocab_size=source_vocab_size, hparams={"dim": hp["embedding_dim"]}
        )
        self.target_embedder = tx.modules.WordEmbedder(
            vocab_size=target_vocab_size, hparams={"dim": hp["embedding_dim"]}
        )
        encoder_cell = {
            "type": "LSTMCell",
            "kwargs": {"units": hp["encoder_units"]},
            "dropout": {"input_keep_prob": 1.0 - hp["dropout_rate"]},
        }
        self.encoder = tx.modules.BidirectionalRNNEncoder({"rnn_cell_fw": encoder_cell})
        units = hp["decoder_units"]
        self.decoder = tx.modules.AttentionRNNDecoder(
            target_vocab_size,
            hparams={
                "rnn_cell": {
                    "type": "LSTMCell",
                    "kwargs": {"units": units},
                    "dropout": {"input_keep_prob": 1.0 - hp["dropout_rate"]},
                },
                "attention": {
                    "type": "LuongAttention",
                    "kwargs": {"units": units},
                    "attention_layer_size": units,
                },
            },
        )
        self.connector = tx.modules.MLPTransformConnector(self.decoder.cell.state_size)

    def _from_modules(self, source_vocab_size: int, target_vocab_size: int, hp: dict) -> None:
        """The modules of Texar's seq2seq_attn from their own hparams: one embedder config for
        both languages, the encoder and the decoder; the decoder starts from a zero state (no
        connector), as in Texar's example."""
        self.source_embedder = tx.modules.WordEmbedder(
            vocab_size=source_vocab_size, hparams={**hp["embedder"], "name": "source_embedder"}
        )
        self.target_embedder = tx.modules.WordEmbedder(
            vocab_size=target_vocab_size, hparams={**hp["embedder"], "name": "target_embedder"}
        )
        self.encoder = tx.modules.BidirectionalRNNEncoder(hp["encoder"])
        self.decoder = tx.modules.AttentionRNNDecoder(target_vocab_size, hparams=hp["decoder"])
        self.connector = None

    def encode(self, source: tf.Tensor, source_length: tf.Tensor, training=None) -> tuple:
        """(memory [batch, time, 2 * encoder_units], the decoder's initial cell state: ``None``
        for a zero state)."""
        (forward, backward), final_states = self.encoder(
            self.source_embedder(source, training=training),
            sequence_length=source_length,
            training=training,
        )
        state = None if self.connector is None else self.connector(final_states)
        return tf.concat([forward, backward], axis=-1), state

    def call(self, features: dict, training=None) -> tf.Tensor:
        memory, state = self.encode(features["source"], features["source_length"], training)
        outputs, _, _ = self.decoder(
            inputs=self.target_embedder(features["decoder_inputs"], training=training),
            sequence_length=features["target_length"],
            memory=memory,
            memory_sequence_length=features["source_length"],
            initial_state=state,
            training=training,
        )
        return outputs.logits

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Cross-entropy summed over each verse's tokens, averaged over the verses (Texar's
        ``seq2seq_attn``); padding never counts."""
        return tx.losses.sequence_sparse_softmax_cross_entropy(
            labels=y, logits=y_pred, sequence_length=x["target_length"]
        )

    def beam_search(
        self,
        source: tf.Tensor,
        source_length: tf.Tensor,
        beam_width: int,
        length_penalty: float,
        max_decoding_length: int,
    ) -> tx.modules.decoders.BeamSearchOutput:
        memory, state = self.encode(source, source_length, training=False)
        return self.decoder.beam_search(
            beam_width=beam_width,
            length_penalty=length_penalty,
            start_tokens=tf.fill([tf.shape(source)[0]], tx.data.Vocab.bos_token_id),
            end_token=tx.data.Vocab.eos_token_id,
            max_decoding_length=max_decoding_length,
            embedding=self.target_embedder,
            memory=memory,
            memory_sequence_length=source_length,
            initial_state=state,
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "source_vocab_size": self.source_embedder.vocab_size,
            "target_vocab_size": self.target_embedder.vocab_size,
            "hparams": self.hparams,
        }


@tx.run.model_builder(
    {
        "embedding_dim": 128,
        "encoder_units": 128,
        "decoder_units": 256,
        "dropout_rate": 0.2,
        "name": "seq2seq_attn",
    }
)
def seq2seq_attn(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """The attention seq2seq model of this example (see :class:`Seq2SeqAttn`)."""
    return Seq2SeqAttn(
        data.source_vocab.size, data.target_vocab.size, hparams.todict(), name=hparams.name
    )


@tx.run.model_builder(
    {"embedder": {}, "encoder": {}, "decoder": {}, "name": "seq2seq_attn_modules"},
    texar_sections={
        "embedder": ("embedder", tx.modules.WordEmbedder),
        "encoder": ("encoder", tx.modules.BidirectionalRNNEncoder),
        "decoder": ("decoder", tx.modules.AttentionRNNDecoder),
    },
)
def seq2seq_attn_modules(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """This example's model from the hparams of each module, in the layout of Texar's
    ``config_model.py`` (what ``texkit migrate`` writes from it)."""
    return Seq2SeqAttn(
        data.source_vocab.size, data.target_vocab.size, hparams.todict(), name=hparams.name
    )


def main(argv: list[str] | None = None) -> dict:
    """Trains, translates the test books and returns BLEU, the dev loss and the translations."""
    return bible_translation.main(argv, __doc__, CONFIG, QUICK, FULL_RUN)


if __name__ == "__main__":
    main()
