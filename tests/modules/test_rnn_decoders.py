"""RNN decoders: a NumPy reference, the module contract, the decoding strategies agreeing with
each other and with teacher forcing, memory padding, XLA, and errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.modules.decoders import (
    AttentionDecoderOutput,
    AttentionRNNDecoder,
    AttentionState,
    BasicRNNDecoder,
    DecoderOutput,
)

RNG = np.random.default_rng(21)
VOCAB, DIM, UNITS = 9, 5, 6
BOS, EOS = 1, 2
INPUTS = RNG.normal(size=(4, 5, DIM)).astype(np.float32)
LENGTHS = np.array([5, 3, 1, 0], np.int32)
MEMORY = RNG.normal(size=(4, 6, 7)).astype(np.float32)
MEMORY_LENGTHS = np.array([6, 2, 4, 1], np.int32)
EMBEDDING = RNG.normal(size=(VOCAB, DIM)).astype(np.float32)

SIMPLE = {"rnn_cell": {"type": "SimpleRNNCell", "kwargs": {"units": UNITS}}}
LSTM = {"rnn_cell": {"type": "LSTMCell", "kwargs": {"units": UNITS}, "num_layers": 2}}


def attention_hparams(**attention):
    return {
        "attention": {
            "type": "LuongAttention",
            "kwargs": {"units": UNITS},
            "attention_layer_size": 4,
            "attention_layer_activation": "tanh",
            **attention,
        }
    }


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def numpy_attention_decoder(decoder, inputs, lengths, memory, memory_lengths):
    """The attention decoder's recurrence on each example's valid steps, in float64.

    SimpleRNNCell: h = tanh(x K + h R + b); Luong 'general': score = (m W) . h.
    """
    cell, mechanism = decoder.cell, decoder.attention_mechanism
    kernel, recurrent, bias = (w.numpy().astype(np.float64) for w in cell.weights)
    memory_kernel = mechanism.memory_kernel.numpy().astype(np.float64)
    output_kernel = decoder.output_layer.kernel.numpy().astype(np.float64)
    output_bias = decoder.output_layer.bias.numpy().astype(np.float64)
    layer = decoder.attention_layer
    logits = np.zeros((*inputs.shape[:2], VOCAB))
    scores = np.zeros((*inputs.shape[:2], memory.shape[1]))
    hp = decoder.hparams.attention
    for b in range(inputs.shape[0]):
        values = memory[b, : memory_lengths[b]].astype(np.float64)
        h = np.zeros(UNITS)
        attention = np.zeros(layer.units if layer is not None else memory.shape[-1])
        for t in range(lengths[b]):
            x = np.concatenate([inputs[b, t], attention])
            h = np.tanh(x @ kernel + h @ recurrent + bias)
            alpha = softmax((values @ memory_kernel) @ h)
            context = alpha @ values
            attention = context
            if layer is not None:
                attention = np.tanh(np.concatenate([h, context]) @ layer.kernel.numpy())
            output = attention if hp.output_attention else h
            logits[b, t] = output @ output_kernel + output_bias
            scores[b, t, : memory_lengths[b]] = alpha
    return logits, scores


@pytest.mark.parametrize("output_attention", [True, False])
@pytest.mark.parametrize(
    "layer",
    [
        {"attention_layer_size": 4},
        {"attention_layer_size": None},  # the default: a layer of the cell's size
        {"attention_layer_size": None, "use_attention_layer": False},  # Texar's: the context
    ],
)
def test_attention_decoder_matches_numpy(output_attention, layer):
    decoder = AttentionRNNDecoder(
        VOCAB,
        hparams={**SIMPLE, **attention_hparams(output_attention=output_attention, **layer)},
    )
    expected_size = {4: 4, None: UNITS}[layer["attention_layer_size"]]
    if layer.get("use_attention_layer") is False:
        assert decoder.attention_layer is None
    else:
        assert decoder.attention_layer.units == expected_size
    outputs, state, lengths = decoder(
        inputs=INPUTS,
        sequence_length=LENGTHS,
        memory=MEMORY,
        memory_sequence_length=MEMORY_LENGTHS,
    )
    assert isinstance(outputs, AttentionDecoderOutput) and isinstance(state, AttentionState)
    logits, scores = numpy_attention_decoder(decoder, INPUTS, LENGTHS, MEMORY, MEMORY_LENGTHS)
    np.testing.assert_allclose(outputs.logits, logits, atol=1e-5)
    np.testing.assert_allclose(outputs.attention_scores, scores, atol=1e-6)
    np.testing.assert_array_equal(outputs.sample_id, np.argmax(outputs.logits, -1))
    np.testing.assert_array_equal(lengths, LENGTHS)


def test_basic_decoder_matches_keras_rnn_and_keeps_the_last_valid_state():
    decoder = BasicRNNDecoder(VOCAB, hparams=LSTM)
    outputs, state, _ = decoder(inputs=INPUTS, sequence_length=LENGTHS)
    # keras.layers.RNN over the same (stacked) cell, with a mask, is an independent loop.
    rnn = tf.keras.layers.RNN(decoder.cell, return_sequences=True, return_state=True)
    mask = np.arange(INPUTS.shape[1])[None] < LENGTHS[:, None]
    sequences, *states = rnn(INPUTS, mask=tf.constant(mask))
    expected = decoder.output_layer(sequences).numpy() * mask[..., None]
    np.testing.assert_allclose(outputs.logits * mask[..., None], expected, atol=1e-5)
    np.testing.assert_allclose(
        np.concatenate([np.ravel(s) for s in tf.nest.flatten(state)]),
        np.concatenate([np.ravel(s) for s in tf.nest.flatten(states)]),
        atol=1e-5,
    )


def make(cls, hparams):
    return lambda **kwargs: cls(VOCAB, hparams=hparams, **kwargs)


def test_basic_decoder_contract(tmp_path):
    check_module_contract(
        make(BasicRNNDecoder, LSTM),
        {"inputs": INPUTS, "sequence_length": LENGTHS},
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=(DecoderOutput(1, 1, 1), [[None, None], [None, None]], None),
        float32_outputs=(DecoderOutput(True, False, True), [[False, False], [False, False]], False),
    )


def test_attention_decoder_contract(tmp_path):
    check_module_contract(
        make(AttentionRNNDecoder, {**LSTM, **attention_hparams()}),
        {
            "inputs": INPUTS,
            "sequence_length": LENGTHS,
            "memory": MEMORY,
            "memory_sequence_length": MEMORY_LENGTHS,
        },
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=(
            AttentionDecoderOutput(1, 1, 1, 1),
            AttentionState([[None, None], [None, None]], None, None, ()),
            None,
        ),
        float32_outputs=(
            AttentionDecoderOutput(True, False, True, True),
            AttentionState([[False, False], [False, False]], False, True, ()),
            False,
        ),
    )


def test_extra_memory_padding_changes_nothing():
    decoder = AttentionRNNDecoder(VOCAB, hparams={**LSTM, **attention_hparams()})
    garbage = RNG.normal(size=(4, 3, 7)).astype(np.float32) * 100
    padded = np.concatenate([MEMORY, garbage], axis=1)
    for b, length in enumerate(MEMORY_LENGTHS):
        padded[b, length:] = RNG.normal(size=padded[b, length:].shape) * 100
    kwargs = {"inputs": INPUTS, "sequence_length": LENGTHS}
    plain, _, _ = decoder(memory=MEMORY, memory_sequence_length=MEMORY_LENGTHS, **kwargs)
    grown, _, _ = decoder(memory=padded, memory_sequence_length=MEMORY_LENGTHS, **kwargs)
    np.testing.assert_allclose(grown.logits, plain.logits, atol=1e-5)
    np.testing.assert_allclose(grown.attention_scores[:, :, :6], plain.attention_scores, atol=1e-6)
    assert not grown.attention_scores[:, :, 6:].numpy().any()
    greedy = {
        "decoding_strategy": "infer_greedy",
        "embedding": EMBEDDING,
        "start_tokens": [BOS] * 4,
        "end_token": EOS,
        "max_decoding_length": 6,
    }
    plain, _, _ = decoder(memory=MEMORY, memory_sequence_length=MEMORY_LENGTHS, **greedy)
    grown, _, _ = decoder(memory=padded, memory_sequence_length=MEMORY_LENGTHS, **greedy)
    np.testing.assert_array_equal(grown.sample_id, plain.sample_id)


DECODERS = {
    "basic": (BasicRNNDecoder, LSTM, {}),
    "attention": (
        AttentionRNNDecoder,
        {**LSTM, **attention_hparams(alignment_history=True)},
        {"memory": MEMORY, "memory_sequence_length": MEMORY_LENGTHS},
    ),
}


def decoder_that_ends(cls, hparams):
    """A seeded decoder whose EOS logit is raised just enough that greedy sequences end at
    different steps (random weights alone rarely pick EOS, or pick it everywhere).

    Raising EOS changes no other choice, so a row ends at its first step whose EOS gap (the best
    other logit minus EOS's) is below the raise; the raise is picked from the gaps themselves.
    """
    keras.utils.set_random_seed(7)
    decoder = cls(VOCAB, hparams=hparams)
    memory = DECODERS["attention"][2] if cls is AttentionRNNDecoder else {}
    outputs, _, _ = decoder(decoding_strategy="infer_greedy", **memory, **inference_kwargs())
    logits = outputs.logits.numpy()
    gaps = np.delete(logits, EOS, axis=-1).max(-1) - logits[..., EOS]  # [batch, time]
    for raise_by in np.sort(gaps[:, :4].ravel()) + 1e-3:
        ends = [np.flatnonzero(row < raise_by) for row in gaps]
        lengths = [end[0] + 1 if len(end) else 7 for end in ends]
        if len(set(lengths)) >= 3:
            break
    bias = decoder.output_layer.bias.numpy()
    bias[EOS] += raise_by
    decoder.output_layer.bias.assign(bias)
    return decoder


def inference_kwargs(**extra):
    return {
        "embedding": EMBEDDING,
        "start_tokens": np.array([BOS, 3, 4, 5], np.int32),
        "end_token": EOS,
        "max_decoding_length": 7,
        **extra,
    }


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_decoding_equals_teacher_forcing_on_its_own_output(name):
    cls, hparams, memory = DECODERS[name]
    decoder = decoder_that_ends(cls, hparams)
    outputs, state, lengths = decoder(
        decoding_strategy="infer_greedy", **memory, **inference_kwargs()
    )
    ids = outputs.sample_id.numpy()
    assert ids.shape == (4, 7) and outputs.logits.shape == (4, 7, VOCAB)
    assert 1 < len(set(lengths.numpy())) and min(lengths.numpy()) < 7  # sequences end apart
    # Feeding the start tokens and the greedy tokens back with teacher forcing gives the same
    # logits.
    start = inference_kwargs()["start_tokens"]
    fed = np.concatenate([start[:, None], ids[:, :-1]], axis=1)
    forced, forced_state, _ = decoder(inputs=EMBEDDING[fed], sequence_length=lengths, **memory)
    valid = np.arange(7)[None] < lengths.numpy()[:, None]
    np.testing.assert_allclose(
        outputs.logits.numpy()[valid], forced.logits.numpy()[valid], atol=1e-5
    )
    assert not outputs.logits.numpy()[~valid].any()
    for got, want in zip(tf.nest.flatten(state), tf.nest.flatten(forced_state), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)
    if name == "attention":
        np.testing.assert_allclose(
            outputs.attention_scores.numpy()[valid],
            forced.attention_scores.numpy()[valid],
            atol=1e-6,
        )
        np.testing.assert_allclose(state.alignment_history, outputs.attention_scores)


@pytest.mark.parametrize("name", DECODERS)
def test_beam_width_one_and_top_k_one_equal_greedy(name):
    cls, hparams, memory = DECODERS[name]
    decoder = decoder_that_ends(cls, hparams)
    greedy, _, lengths = decoder(decoding_strategy="infer_greedy", **memory, **inference_kwargs())
    assert min(lengths.numpy()) < 7
    sampled, _, sampled_lengths = decoder(
        decoding_strategy="infer_sample", **memory, **inference_kwargs(top_k=1, seed=3)
    )
    np.testing.assert_array_equal(sampled.sample_id, greedy.sample_id)
    np.testing.assert_array_equal(sampled_lengths, lengths)
    beam = decoder.beam_search(1, length_penalty=0.0, **memory, **inference_kwargs())
    np.testing.assert_array_equal(beam.ids[:, 0], greedy.sample_id)
    np.testing.assert_array_equal(beam.lengths[:, 0], lengths)


@pytest.mark.parametrize("name", DECODERS)
def test_decoding_compiles_with_xla(name):
    cls, hparams, memory = DECODERS[name]
    decoder = decoder_that_ends(cls, hparams)
    kwargs = inference_kwargs()
    greedy = lambda: decoder(decoding_strategy="infer_greedy", **memory, **kwargs)  # noqa: E731
    beam = lambda: decoder.beam_search(3, length_penalty=0.6, **memory, **kwargs)  # noqa: E731
    for run in (greedy, beam):
        eager = run()
        compiled = tf.function(run, jit_compile=True)()
        for got, want in zip(tf.nest.flatten(compiled), tf.nest.flatten(eager), strict=True):
            np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("name", DECODERS)
def test_inference_under_mixed_bfloat16_with_a_float32_state(name):
    cls, hparams, memory = DECODERS[name]
    keras.utils.set_random_seed(3)
    decoder = cls(VOCAB, hparams=hparams, dtype="mixed_bfloat16")
    state = [[tf.random.normal([4, UNITS]), tf.random.normal([4, UNITS])] for _ in range(2)]
    kwargs = {**memory, **inference_kwargs(), "initial_state": state}
    greedy = tf.function(lambda: decoder(decoding_strategy="infer_greedy", **kwargs))
    beam = tf.function(lambda: decoder.beam_search(3, **kwargs))
    outputs, _, lengths = greedy()
    assert outputs.logits.dtype == tf.float32 and outputs.sample_id.shape == (4, 7)
    assert beam().ids.shape == (4, 3, 7)


def test_beam_search_of_a_decoder_is_sorted_and_scored():
    cls, hparams, memory = DECODERS["attention"]
    decoder = decoder_that_ends(cls, hparams)
    beam = decoder.beam_search(4, length_penalty=0.0, **memory, **inference_kwargs())
    assert beam.lengths.numpy().min() < 7
    assert beam.ids.shape == (4, 4, 7)
    # Each hypothesis' score is its log-probability under teacher forcing.
    for k in range(4):
        ids = beam.ids[:, k].numpy()
        lengths = beam.lengths[:, k].numpy()
        start = inference_kwargs()["start_tokens"]
        fed = np.concatenate([start[:, None], ids[:, :-1]], axis=1)
        forced, _, _ = decoder(inputs=EMBEDDING[fed], sequence_length=lengths, **memory)
        log_probs = tf.nn.log_softmax(forced.logits).numpy()
        picked = np.take_along_axis(log_probs, ids[..., None], axis=-1)[..., 0]
        valid = np.arange(7)[None] < lengths[:, None]
        np.testing.assert_allclose(beam.scores[:, k], (picked * valid).sum(1), rtol=1e-4)
    assert (np.diff(beam.scores.numpy(), axis=1) <= 1e-6).all()


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="vocab_size"):
        BasicRNNDecoder(0)
    decoder = AttentionRNNDecoder(VOCAB, hparams={**SIMPLE, **attention_hparams()})
    with pytest.raises(ValueError, match="needs `memory`"):
        decoder(inputs=INPUTS)
    with pytest.raises(ValueError, match="decoding_strategy"):
        decoder(inputs=INPUTS, memory=MEMORY, decoding_strategy="beam")
    with pytest.raises(ValueError, match="needs start_tokens"):
        decoder(memory=MEMORY, decoding_strategy="infer_greedy", embedding=EMBEDDING)
    with pytest.raises(ValueError, match="embedding"):
        decoder(memory=MEMORY, decoding_strategy="infer_greedy", start_tokens=[1] * 4, end_token=2)
    with pytest.raises(ValueError, match="beam_search needs start_tokens"):
        decoder.beam_search(2, 0.6, memory=MEMORY, embedding=EMBEDDING)
    with pytest.raises(ValueError, match="takes no memory"):
        BasicRNNDecoder(VOCAB)(inputs=INPUTS, memory=MEMORY)
    with pytest.raises(Exception, match="attention.kwargs.unit"):
        AttentionRNNDecoder(VOCAB, hparams={"attention": {"kwargs": {"unit": 3}}})
    with pytest.raises(Exception, match="attention.attention_layer_size.*use_attention_layer"):
        AttentionRNNDecoder(VOCAB, hparams=attention_hparams(use_attention_layer=False))


@pytest.mark.parametrize("cls", [BasicRNNDecoder, AttentionRNNDecoder])
def test_every_hparam_is_documented(cls):
    assert undocumented_hparams(cls) == ([], [])


@pytest.mark.parametrize(
    "attention",
    [
        {"type": "BahdanauAttention", "kwargs": {"units": 5, "normalize": True}},
        {"type": "CosineAttention", "kwargs": {"units": 4}},
        {"type": "LocationAttention", "kwargs": {"max_memory_length": 8}},
        {"type": "LuongAttention", "kwargs": {"units": None, "score": "scaled_dot"}},
    ],
    ids=["bahdanau", "cosine", "location", "luong-scaled-dot"],
)
def test_every_mechanism_drives_the_decoder(attention):
    # scaled_dot compares the cell output with the memory directly: the sizes must match.
    units = MEMORY.shape[-1] if attention["kwargs"].get("score") == "scaled_dot" else UNITS
    decoder = AttentionRNNDecoder(
        VOCAB,
        hparams={
            "rnn_cell": {"type": "GRUCell", "kwargs": {"units": units}},
            "attention": {**attention, "attention_layer_size": 4},
        },
    )
    memory = {"memory": MEMORY, "memory_sequence_length": MEMORY_LENGTHS}
    outputs, _, _ = decoder(inputs=INPUTS, sequence_length=LENGTHS, **memory)
    scores = outputs.attention_scores.numpy()
    valid = np.arange(5)[None, :] < LENGTHS[:, None]
    np.testing.assert_allclose(scores.sum(-1)[valid], 1.0, rtol=1e-5)
    padded_memory = np.arange(6)[None, None, :] >= MEMORY_LENGTHS[:, None, None]
    assert not scores[np.broadcast_to(padded_memory, scores.shape)].any()
    kwargs = {**memory, **inference_kwargs()}
    greedy = tf.function(
        lambda: decoder(decoding_strategy="infer_greedy", **kwargs)[0].sample_id,
        jit_compile=True,
    )
    beam = tf.function(lambda: decoder.beam_search(1, **kwargs).ids[:, 0], jit_compile=True)
    np.testing.assert_array_equal(beam(), greedy())
