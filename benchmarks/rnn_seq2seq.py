"""Speed of texkit's RNN decoders: a training step next to Keras' own LSTM, and decoding.

Measured in the same run, on random token ids of the sizes of ``examples/seq2seq_attn/config.yaml``
(batch 128, source 28 and target 31 tokens, target vocabulary 5,004, 128-dim embeddings):

* one training step (forward, backward, Adam) of teacher forcing through
  ``tx.modules.BasicRNNDecoder`` (an LSTM cell stepped in texkit's ``tf.while_loop``) and through
  ``keras.layers.LSTM`` + ``Dense`` doing the same computation: their ratio shows what texkit's
  loop costs over Keras' own;
* one training step of the example's whole model (bidirectional LSTM encoder, Luong-attention
  LSTM decoder);
* greedy decoding and beam search (width 5) of 31 steps with the attention decoder, in a
  ``tf.function`` and with ``jit_compile=True`` (XLA).

    python benchmarks/rnn_seq2seq.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import texkit as tx  # noqa: E402

BATCH, SOURCE, TARGET, VOCAB, SOURCE_VOCAB, DIM = 128, 28, 31, 5004, 10004, 128


def timed(function, repeats: int) -> float:
    """Seconds per call, after two warm-up calls (tracing, compiling)."""
    function()
    function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats


def training_step(loss_fn):
    """A compiled step of ``loss_fn``: gradients of every variable it touches, then Adam."""
    optimizer = keras.optimizers.Adam(1e-3)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        variables = tape.watched_variables()
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    source = tf.constant(rng.integers(4, SOURCE_VOCAB, (BATCH, SOURCE)), tf.int32)
    target = tf.constant(rng.integers(4, VOCAB, (BATCH, TARGET)), tf.int32)
    source_length, target_length = tf.fill([BATCH], SOURCE), tf.fill([BATCH], TARGET)
    source_embedder = tx.modules.WordEmbedder(vocab_size=SOURCE_VOCAB, hparams={"dim": DIM})
    embedder = tx.modules.WordEmbedder(vocab_size=VOCAB, hparams={"dim": DIM})
    lstm = {"type": "LSTMCell", "kwargs": {"units": 256}}
    basic = tx.modules.BasicRNNDecoder(VOCAB, hparams={"rnn_cell": lstm})
    keras_lstm = keras.layers.LSTM(256, return_sequences=True)
    keras_dense = keras.layers.Dense(VOCAB)
    encoder = tx.modules.BidirectionalRNNEncoder(
        {"rnn_cell_fw": {"type": "LSTMCell", "kwargs": {"units": 128}}}
    )
    attention = {
        "type": "LuongAttention",
        "kwargs": {"units": 256},
        "attention_layer_size": 256,
        "attention_layer_activation": "tanh",
    }
    decoder = tx.modules.AttentionRNNDecoder(
        VOCAB, hparams={"rnn_cell": lstm, "attention": attention}
    )
    loss = tx.losses.sequence_sparse_softmax_cross_entropy

    def texkit_basic():
        outputs, _, _ = basic(inputs=embedder(target), sequence_length=target_length)
        return loss(target, outputs.logits, target_length)

    def keras_basic():
        return loss(target, keras_dense(keras_lstm(embedder(target))), target_length)

    def encode():
        (forward, backward), _ = encoder(source_embedder(source), sequence_length=source_length)
        return tf.concat([forward, backward], -1)

    def whole_model():
        outputs, _, _ = decoder(
            inputs=embedder(target),
            sequence_length=target_length,
            memory=encode(),
            memory_sequence_length=source_length,
            training=True,
        )
        return loss(target, outputs.logits, target_length)

    inference = {
        "embedding": embedder,
        "start_tokens": tf.fill([BATCH], 1),
        "end_token": -1,  # never produced: every run decodes all TARGET steps
        "max_decoding_length": TARGET,
        "memory_sequence_length": source_length,
    }

    def greedy():
        return decoder(decoding_strategy="infer_greedy", memory=encode(), **inference)[0].sample_id

    def beam():
        return decoder.beam_search(5, 0.6, memory=encode(), **inference).ids

    figures = {
        "train step, BasicRNNDecoder (texkit loop)": timed(
            training_step(texkit_basic), args.repeats
        ),
        "train step, keras.layers.LSTM + Dense": timed(training_step(keras_basic), args.repeats),
        "train step, whole seq2seq_attn model": timed(training_step(whole_model), args.repeats),
    }
    for name, function in (("greedy", greedy), ("beam search (width 5)", beam)):
        figures[f"{name}, tf.function"] = timed(tf.function(function), args.repeats)
        figures[f"{name}, jit_compile=True"] = timed(
            tf.function(function, jit_compile=True), args.repeats
        )

    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, TensorFlow {tf.__version__}, "
        f"batch {BATCH}, source {SOURCE} / target {TARGET} tokens, vocabulary {VOCAB}"
    )
    for name, seconds in figures.items():
        print(f"{name:48s} {seconds * 1000:8.1f} ms")
    ratio = (
        figures["train step, BasicRNNDecoder (texkit loop)"]
        / figures["train step, keras.layers.LSTM + Dense"]
    )
    print(f"{'texkit loop / keras.layers.LSTM (train step)':48s} {ratio:8.2f}")
    for name in ("greedy", "beam search (width 5)"):
        speedup = figures[f"{name}, tf.function"] / figures[f"{name}, jit_compile=True"]
        print(f"{name + ': XLA speed-up':48s} {speedup:8.2f}")
    print("command: python benchmarks/rnn_seq2seq.py --repeats", args.repeats)


if __name__ == "__main__":
    main()
