"""HierarchicalRNNEncoder against its two encoders run turn by turn on unpadded sequences; orders,
keyword arguments to each encoder, medium, padding, contract, errors."""

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import HierarchicalRNNEncoder

RNG = np.random.default_rng(21)
BATCH, TURNS, TOKENS, DIM = 3, 4, 5, 3
INPUTS = RNG.normal(size=(BATCH, TURNS, TOKENS, DIM)).astype(np.float32)
TURN_LENGTHS = np.array([4, 2, 3], np.int32)
# Padded turns (past TURN_LENGTHS) have length 0; one valid turn is empty too.
TOKEN_LENGTHS = np.array([[5, 2, 1, 3], [4, 0, 0, 0], [1, 5, 0, 0]], np.int32)
HPARAMS = {
    "encoder_minor_hparams": {"rnn_cell": {"kwargs": {"units": 4}}},
    "encoder_major_hparams": {"rnn_cell": {"type": "GRUCell", "kwargs": {"units": 5}}},
}
BIDIRECTIONAL_MINOR = {
    "encoder_minor_type": "BidirectionalRNNEncoder",
    "encoder_minor_hparams": {"rnn_cell_fw": {"kwargs": {"units": 2}}},
    "encoder_major_hparams": {"rnn_cell": {"kwargs": {"units": 3}, "num_layers": 2}},
}


def flat_h(state):
    """The h parts of a state, concatenated (cells, layers and directions in order)."""
    if isinstance(state, (list, tuple)) and all(not isinstance(s, (list, tuple)) for s in state):
        return np.asarray(state[0])
    return np.concatenate([flat_h(part) for part in state], axis=-1)


def turn_by_turn(encoder, inputs, token_lengths, turn_lengths, initial_minor=None):
    """Each turn alone through the minor encoder, each example's turns through the major one,
    nothing padded: ``(outputs [batch, turns, width] zero past a length, final states)``."""
    outputs, finals = [], []
    for b in range(len(inputs)):
        features = []
        for t in range(turn_lengths[b]):
            tokens = inputs[b, t, : token_lengths[b, t]][None]
            initial = None if initial_minor is None else [s[b, t][None] for s in initial_minor]
            if tokens.shape[1] == 0:  # an empty turn: the initial (zero) state
                state = initial or [np.zeros((1, 4), np.float32)] * 2
            else:
                _, state = encoder.encoder_minor(tokens, initial_state=initial)
            features.append(flat_h(state)[0])
        out, final = encoder.encoder_major(np.stack(features)[None])
        padded = np.zeros((TURNS, out.shape[-1]), np.float32)
        padded[: turn_lengths[b]] = out[0]
        outputs.append(padded)
        finals.append(flat_h(final)[0])
    return np.stack(outputs), np.stack(finals)


def test_documented_and_registered():
    assert undocumented_hparams(HierarchicalRNNEncoder) == ([], [])
    assert registry.resolve("HierarchicalRNNEncoder") is HierarchicalRNNEncoder


def test_equals_the_encoders_turn_by_turn():
    encoder = HierarchicalRNNEncoder(HPARAMS)
    outputs, final = encoder(
        INPUTS, sequence_length_major=TURN_LENGTHS, sequence_length_minor=TOKEN_LENGTHS
    )
    want_outputs, want_final = turn_by_turn(encoder, INPUTS, TOKEN_LENGTHS, TURN_LENGTHS)
    np.testing.assert_allclose(outputs, want_outputs, atol=1e-5)
    np.testing.assert_allclose(flat_h(final), want_final, atol=1e-5)
    # Padding: other values in padded tokens and turns, more tokens and turns: the same.
    padded = RNG.normal(size=(BATCH, TURNS + 2, TOKENS + 3, DIM)).astype(np.float32) * 9
    padded[:, :TURNS, :TOKENS] = INPUTS
    for b in range(BATCH):
        for t in range(TURNS):
            padded[b, t, TOKEN_LENGTHS[b, t] :] = 5.0
    lengths = np.pad(TOKEN_LENGTHS, [(0, 0), (0, 2)])
    again, final_again = encoder(
        padded, sequence_length_major=TURN_LENGTHS, sequence_length_minor=lengths
    )
    np.testing.assert_allclose(again[:, :TURNS], outputs, atol=1e-5)
    np.testing.assert_allclose(flat_h(final_again), flat_h(final), atol=1e-5)


def test_bidirectional_minor_flattens_both_directions():
    encoder = HierarchicalRNNEncoder(BIDIRECTIONAL_MINOR)
    lengths = np.maximum(TOKEN_LENGTHS, 1)
    outputs, _ = encoder(INPUTS, sequence_length_minor=lengths)
    features = []
    for b in range(BATCH):
        for t in range(TURNS):
            _, state = encoder.encoder_minor(INPUTS[b, t, : lengths[b, t]][None])
            features.append(flat_h(state)[0])
    major, _ = encoder.encoder_major(np.stack(features).reshape(BATCH, TURNS, -1))
    np.testing.assert_allclose(outputs, major, atol=1e-5)
    assert np.stack(features).shape[-1] == 4  # h of the forward and the backward cell


@pytest.mark.parametrize("order", ["utb", "tbu", "ubt"])
def test_orders_are_transposes_of_btu(order):
    encoder = HierarchicalRNNEncoder(HPARAMS)
    reference, final = encoder(
        INPUTS, sequence_length_major=TURN_LENGTHS, sequence_length_minor=TOKEN_LENGTHS
    )
    axes = {"b": 0, "t": 1, "u": 2}
    inputs = INPUTS.transpose([axes[c] for c in order] + [3])
    turn_major = order in ("utb", "tbu")
    minor_lengths = TOKEN_LENGTHS.T if turn_major else TOKEN_LENGTHS
    for lengths in (minor_lengths, minor_lengths.reshape(-1)):  # 2-D, or flat in that order
        outputs, final_order = encoder(
            inputs, order=order, sequence_length_major=TURN_LENGTHS, sequence_length_minor=lengths
        )
        expected = np.swapaxes(reference, 0, 1) if turn_major else reference
        np.testing.assert_allclose(outputs, expected, atol=1e-5)
        np.testing.assert_allclose(flat_h(final_order), flat_h(final), atol=1e-5)


def test_minor_and_major_keyword_arguments_reach_their_encoder():
    # Texar's split compared a string with a list and sent them nowhere.
    encoder = HierarchicalRNNEncoder(HPARAMS)
    minor_state = [RNG.normal(size=(BATCH, TURNS, 4)).astype(np.float32) for _ in range(2)]
    flat_minor = [s.reshape(BATCH * TURNS, 4) for s in minor_state]
    major_state = [RNG.normal(size=(BATCH, 5)).astype(np.float32)]
    kwargs = {"sequence_length_major": TURN_LENGTHS, "sequence_length_minor": TOKEN_LENGTHS}
    plain, _ = encoder(INPUTS, **kwargs)
    with_minor, _ = encoder(INPUTS, initial_state_minor=flat_minor, **kwargs)
    want, _ = turn_by_turn(encoder, INPUTS, TOKEN_LENGTHS, TURN_LENGTHS, initial_minor=minor_state)
    np.testing.assert_allclose(with_minor, want, atol=1e-5)
    assert not np.allclose(with_minor, plain, atol=1e-3)
    # The initial state of the major encoder reaches it alone.
    with_major, final = encoder(INPUTS, initial_state_major=major_state, **kwargs)
    features = encoder._apply_medium(
        encoder.encoder_minor(
            INPUTS.reshape(-1, TOKENS, DIM), sequence_length=TOKEN_LENGTHS.reshape(-1)
        )[1],
        None,
    )
    want_major, want_final = encoder.encoder_major(
        tf.reshape(features, (BATCH, TURNS, -1)),
        sequence_length=TURN_LENGTHS,
        initial_state=major_state,
    )
    np.testing.assert_allclose(with_major, want_major, atol=1e-5)
    np.testing.assert_allclose(flat_h(final), flat_h(want_final), atol=1e-5)
    # In a turn-major order the minor state is flat turn-major too.
    turn_major = [s.transpose(1, 0, 2).reshape(-1, 4) for s in minor_state]
    outputs, _ = encoder(
        INPUTS.transpose(1, 0, 2, 3),
        order="tbu",
        initial_state_minor=turn_major,
        sequence_length_major=TURN_LENGTHS,
        sequence_length_minor=TOKEN_LENGTHS.T,
    )
    np.testing.assert_allclose(np.swapaxes(outputs, 0, 1), with_minor, atol=1e-5)


def test_unsuffixed_keyword_arguments_reach_both():
    same = {"rnn_cell": {"type": "GRUCell", "kwargs": {"units": 4}}}
    encoder = HierarchicalRNNEncoder({"encoder_major_hparams": same, "config_share": True})
    state = [RNG.normal(size=(BATCH * TURNS, 4)).astype(np.float32)]
    major_state = [state[0][:BATCH]]
    both, _ = encoder(INPUTS, initial_state_minor=state, initial_state_major=major_state)
    # One value for both is what the suffixed pair gives when the two values are the same.
    shared_state = [state[0][:BATCH]]
    small = INPUTS[:, :1]  # one turn: the minor batch equals the major batch
    one, _ = encoder(small, initial_state=shared_state)
    two, _ = encoder(small, initial_state_minor=shared_state, initial_state_major=shared_state)
    np.testing.assert_allclose(one, two, atol=1e-6)
    assert both.shape == (BATCH, TURNS, 4)
    assert encoder.encoder_minor.hparams.rnn_cell.type == "GRUCell"  # config_share


@pytest.mark.parametrize("order", ["btu", "ubt", "utb", "tbu"])
def test_tile_initial_state_minor(order):
    state = RNG.normal(size=(TURNS, 2)).astype(np.float32)
    axes = {"b": 0, "t": 1, "u": 2}
    shape = tuple(INPUTS.shape[axes[c]] for c in order) + (DIM,)
    tiled = np.asarray(HierarchicalRNNEncoder.tile_initial_state_minor(state, order, shape))
    if order in ("utb", "tbu"):  # flat index turn * batch + example
        want = np.stack([state[t] for t in range(TURNS) for _ in range(BATCH)])
    else:  # example * turns + turn
        want = np.stack([state[t] for _ in range(BATCH) for t in range(TURNS)])
    np.testing.assert_array_equal(tiled, want)


def test_medium():
    encoder = HierarchicalRNNEncoder(HPARAMS)
    c_part, _ = encoder(INPUTS, medium=lambda state: state[1])  # the LSTM's c instead of h
    features = encoder.encoder_minor(INPUTS.reshape(-1, TOKENS, DIM))[1][1]
    want, _ = encoder.encoder_major(tf.reshape(features, (BATCH, TURNS, 4)))
    np.testing.assert_allclose(c_part, want, atol=1e-5)
    listed, _ = encoder(INPUTS, medium=["flatten", lambda h: 2.0 * h])
    features = encoder.encoder_minor(INPUTS.reshape(-1, TOKENS, DIM))[1][0]
    want, _ = encoder.encoder_major(tf.reshape(2.0 * features, (BATCH, TURNS, 4)))
    np.testing.assert_allclose(listed, want, atol=1e-5)


def test_contract(tmp_path):
    check_module_contract(
        lambda **kw: HierarchicalRNNEncoder(HPARAMS, **kw),
        {
            "inputs": INPUTS,
            "sequence_length_major": TURN_LENGTHS,
            "sequence_length_minor": TOKEN_LENGTHS,
        },
        tmp_path,
    )


def test_bad_arguments():
    with pytest.raises(HParamsError) as error:
        HierarchicalRNNEncoder({"encoder_minor_type": "Conv1DEncoder"})
    assert error.value.path == "encoder_minor_type"
    with pytest.raises(HParamsError) as error:
        HierarchicalRNNEncoder({"encoder_major_hparams": {"rnn_cell": {"kwargs": {"unitz": 3}}}})
    assert error.value.path.startswith("encoder_major_hparams.rnn_cell.kwargs")
    encoder = HierarchicalRNNEncoder(HPARAMS)
    with pytest.raises(ValueError, match="order"):
        encoder(INPUTS, order="bt")
    with pytest.raises(ValueError, match="sequence_length_minor"):
        encoder(INPUTS, sequence_length=TURN_LENGTHS)
    with pytest.raises(ValueError, match="time_major_minor"):
        encoder(INPUTS, time_major_minor=True)
    with pytest.raises(ValueError, match=r"\[batch, turns, tokens, dim\]"):
        encoder(INPUTS[0])
    with pytest.raises(ValueError, match="medium"):
        encoder(INPUTS, medium=[3])
