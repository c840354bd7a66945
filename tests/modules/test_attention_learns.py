"""The default AttentionRNNDecoder learns with every attention mechanism texkit offers.

Texar's default (``attention_layer_size: None``: the attention output is the context alone)
learns badly; texkit's default adds a linear attention layer of the cell's size. Each mechanism,
with the decoder's defaults otherwise, must learn to reverse 3-8 random tokens to at least 90%
greedy exact match in a few hundred small steps.

The train step is a ``tf.function`` without XLA: compiling the gradients of the encoder's and
decoder's loops takes about 12 s per model on 2 CPU cores, more than the steps themselves; the
decoders' XLA paths are tested in ``test_seq2seq_learning.py``.
"""

import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx

from . import test_seq2seq_learning as seq2seq_learning

BOS, EOS = 1, 2  # PAD is 0
SYMBOLS = 8  # ids 3 .. 10
VOCAB = 3 + SYMBOLS
MAX_LENGTH = 8  # sequences of 3..8 tokens
UNITS = 32  # per encoder direction; the decoder's cell has 2 * UNITS, the memory's size
BATCH = 64
# Scaled dot scores are divided by sqrt(64): the attention starts flatter and sharpens later
# (74-94% exact match after 250 steps, 98% after 400).
STEPS = {"luong_scaled_dot": 400}
DEFAULT_STEPS = 200

MECHANISMS = {
    "luong_general": {"type": "LuongAttention", "kwargs": {"units": 2 * UNITS}},
    "luong_general_scaled": {
        "type": "LuongAttention",
        "kwargs": {"units": 2 * UNITS, "scale": True},
    },
    "luong_dot": {"type": "LuongAttention", "kwargs": {"units": None, "score": "dot"}},
    "luong_scaled_dot": {
        "type": "LuongAttention",
        "kwargs": {"units": None, "score": "scaled_dot"},
    },
    "bahdanau": {"type": "BahdanauAttention", "kwargs": {"units": UNITS}},
    "bahdanau_normalized": {
        "type": "BahdanauAttention",
        "kwargs": {"units": UNITS, "normalize": True},
    },
    "cosine": {"type": "CosineAttention", "kwargs": {"units": UNITS}},
    "location": {"type": "LocationAttention", "kwargs": {"max_memory_length": MAX_LENGTH}},
}


def reversal_batch(rng, batch):
    """Random symbol sequences of 3..8 tokens and their reversals (BOS ... EOS), PAD-padded."""
    return seq2seq_learning.reversal_batch(rng, batch, VOCAB, MAX_LENGTH)


def Reverser(attention):  # noqa: N802 - the model class, at this test's sizes
    """The RNN reverser of ``test_seq2seq_learning`` with the decoder's defaults but the sizes
    and the mechanism."""
    return seq2seq_learning.Reverser(attention, units=UNITS, dim=16, vocab=VOCAB)


def greedy_exact_match(model, rows=500):
    """Greedy decoding (eagerly: the loop is short, tracing it is not) of unseen sequences."""
    source, source_length, target, target_length = reversal_batch(np.random.default_rng(1), rows)

    def translate(source, source_length):
        memory, state = model.encode(source, source_length)
        outputs, _, lengths = model.decoder(
            decoding_strategy="infer_greedy",
            memory=memory,
            memory_sequence_length=source_length,
            initial_state=state,
            embedding=model.embedder,
            start_tokens=tf.fill([tf.shape(source)[0]], BOS),
            end_token=EOS,
            max_decoding_length=MAX_LENGTH + 2,
        )
        return outputs.sample_id, lengths

    ids, lengths = (x.numpy() for x in translate(source, source_length))
    hits = [
        list(row[:length]) == list(want[1 : want_length + 1])
        for row, length, want, want_length in zip(ids, lengths, target, target_length, strict=True)
    ]
    return float(np.mean(hits))


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_default_decoder_learns_to_reverse(mechanism):
    began = time.perf_counter()
    keras.utils.set_random_seed(0)
    steps = STEPS.get(mechanism, DEFAULT_STEPS)
    model = Reverser(MECHANISMS[mechanism])
    schedule = keras.optimizers.schedules.CosineDecay(0.01, steps, alpha=0.05)
    optimizer = keras.optimizers.Adam(schedule, clipnorm=5.0)
    # Weights built eagerly, so that the train step is traced once.
    source, source_length, target, target_length = reversal_batch(np.random.default_rng(2), 2)
    model(source, source_length, target[:, :-1], target_length)
    optimizer.build(model.trainable_variables)

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

    rng = np.random.default_rng(0)
    for _ in range(steps):
        train_step(*reversal_batch(rng, BATCH))
    accuracy = greedy_exact_match(model)
    print(f"{mechanism}: greedy exact match {accuracy:.3f} in {time.perf_counter() - began:.1f} s")
    assert accuracy >= 0.9, (mechanism, accuracy)
