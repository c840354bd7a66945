"""Whole seq2seq stacks learn a task (reversing random sequences), decoded by greedy search and
beam search under XLA: BidirectionalRNNEncoder + MLPTransformConnector + AttentionRNNDecoder (Luong
attention), and TransformerEncoder + TransformerDecoder (tied embeddings, key/value cache)."""

import keras
import numpy as np
import tensorflow as tf

import texkit as tx

PAD, BOS, EOS = 0, 1, 2
SYMBOLS = 10  # ids 3 .. 12
VOCAB = 3 + SYMBOLS
MAX_LENGTH = 7


def reversal_batch(rng, batch, vocab=VOCAB, max_length=MAX_LENGTH):
    """Random symbol sequences of 3..max_length tokens (ids 3..vocab - 1) and their reversals
    (BOS ... EOS), padded with PAD."""
    lengths = rng.integers(3, max_length + 1, size=batch)
    source = np.full((batch, max_length), PAD, np.int32)
    target = np.full((batch, max_length + 2), PAD, np.int32)  # BOS ... EOS
    for row, length in enumerate(lengths):
        tokens = rng.integers(3, vocab, size=length)
        source[row, :length] = tokens
        target[row, : length + 2] = [BOS, *tokens[::-1], EOS]
    return source, lengths.astype(np.int32), target, (lengths + 1).astype(np.int32)


class Reverser(keras.Model):
    """Embedder, bidirectional LSTM encoder (``units`` per direction), connector and attention
    LSTM decoder (``2 * units``); ``attention``: the decoder's attention hparams (default: Luong
    with a tanh attention layer)."""

    def __init__(self, attention=None, units=48, dim=24, vocab=VOCAB):
        super().__init__()
        if attention is None:
            attention = {
                "type": "LuongAttention",
                "kwargs": {"units": 2 * units},
                "attention_layer_size": 2 * units,
                "attention_layer_activation": "tanh",
            }
        self.embedder = tx.modules.WordEmbedder(vocab_size=vocab, hparams={"dim": dim})
        cell = {"type": "LSTMCell", "kwargs": {"units": units}}
        self.encoder = tx.modules.BidirectionalRNNEncoder({"rnn_cell_fw": cell})
        self.decoder = tx.modules.AttentionRNNDecoder(
            vocab,
            hparams={
                "rnn_cell": {"type": "LSTMCell", "kwargs": {"units": 2 * units}},
                "attention": attention,
            },
        )
        self.connector = tx.modules.MLPTransformConnector(self.decoder.cell.state_size)

    def encode(self, source, source_length, training=None):
        (forward, backward), (state_fw, state_bw) = self.encoder(
            self.embedder(source), sequence_length=source_length, training=training
        )
        return tf.concat([forward, backward], -1), self.connector((state_fw, state_bw))

    def call(self, source, source_length, decoder_inputs, target_length, training=None):
        memory, state = self.encode(source, source_length, training)
        outputs, _, _ = self.decoder(
            inputs=self.embedder(decoder_inputs),
            sequence_length=target_length,
            memory=memory,
            memory_sequence_length=source_length,
            initial_state=state,
            training=training,
        )
        return outputs.logits


class TransformerReverser(keras.Model):
    def __init__(self):
        super().__init__()
        dim = 64
        stack = {
            "dim": dim,
            "num_blocks": 2,
            "multihead_attention": {"num_heads": 4, "dropout_rate": 0.0},
            "poswise_feedforward": {"dim": 128},
            "embedding_dropout": 0.0,
            "residual_dropout": 0.0,
        }
        self.embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": dim})
        self.positions = tx.modules.SinusoidsPositionEmbedder(hparams={"dim": dim})
        self.encoder = tx.modules.TransformerEncoder(stack)
        self.decoder = tx.modules.TransformerDecoder(output_layer=self.embedder, hparams=stack)

    def encode(self, source, source_length, training=None):
        inputs = self.embedder(source) * 8.0 + self.positions(
            sequence_length=source_length, max_time=source.shape[1]
        )
        return self.encoder(inputs, sequence_length=source_length, training=training), None

    def call(self, source, source_length, decoder_inputs, target_length, training=None):
        memory, _ = self.encode(source, source_length, training)
        outputs, _, _ = self.decoder(
            inputs=decoder_inputs,
            sequence_length=target_length,
            embedding=self.embedder,
            memory=memory,
            memory_sequence_length=source_length,
            training=training,
        )
        return outputs.logits


def check_learns_to_reverse(model, optimizer, steps):
    rng = np.random.default_rng(0)

    @tf.function
    def train_step(source, source_length, target, target_length):
        with tf.GradientTape() as tape:
            logits = model(source, source_length, target[:, :-1], target_length, training=True)
            loss = tx.losses.sequence_sparse_softmax_cross_entropy(
                target[:, 1:], logits, target_length
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    losses = [float(train_step(*reversal_batch(rng, 64))) for _ in range(steps)]
    assert np.mean(losses[-20:]) < 0.1 * np.mean(losses[:20])

    source, source_length, target, target_length = reversal_batch(np.random.default_rng(1), 500)
    expected = [
        list(row[1 : length + 1]) for row, length in zip(target, target_length, strict=True)
    ]

    @tf.function(jit_compile=True)
    def translate(source, source_length):
        memory, state = model.encode(source, source_length)
        common = {
            "memory": memory,
            "memory_sequence_length": source_length,
            "embedding": model.embedder,
            "start_tokens": tf.fill([tf.shape(source)[0]], BOS),
            "end_token": EOS,
            "max_decoding_length": MAX_LENGTH + 3,
        }
        if state is not None:
            common["initial_state"] = state
        greedy, _, lengths = model.decoder(decoding_strategy="infer_greedy", **common)
        beam = model.decoder.beam_search(beam_width=3, length_penalty=0.6, **common)
        return greedy.sample_id, lengths, beam.ids[:, 0], beam.lengths[:, 0]

    greedy_ids, greedy_lengths, beam_ids, beam_lengths = (
        x.numpy() for x in translate(source, source_length)
    )
    greedy_hits = [
        list(ids[:length]) == want
        for ids, length, want in zip(greedy_ids, greedy_lengths, expected, strict=True)
    ]
    beam_hits = [
        list(ids[:length]) == want
        for ids, length, want in zip(beam_ids, beam_lengths, expected, strict=True)
    ]
    print(f"exact match: greedy {np.mean(greedy_hits):.3f}, beam {np.mean(beam_hits):.3f}")
    assert np.mean(greedy_hits) >= 0.95, np.mean(greedy_hits)
    assert np.mean(beam_hits) >= 0.95, np.mean(beam_hits)


def test_attention_seq2seq_learns_to_reverse_sequences():
    keras.utils.set_random_seed(0)
    check_learns_to_reverse(Reverser(), keras.optimizers.Adam(0.01, clipnorm=5.0), 300)


def test_transformer_learns_to_reverse_sequences():
    keras.utils.set_random_seed(0)
    # A peak rate of 5e-3 for 300 steps ended anywhere from 93% to 99.6% exact match depending on
    # float rounding (fused kernels); 3e-3 for 400 steps gave 98.4-99.4% over seeds 0, 1 and 2.
    schedule = tx.run.schedules.InverseSquareRootDecay(3e-3, warmup_steps=50)
    optimizer = keras.optimizers.Adam(schedule, beta_2=0.98, clipnorm=5.0)
    check_learns_to_reverse(TransformerReverser(), optimizer, 400)
