"""RNN cells from hparams and the dropout, residual and highway wrappers."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.core.layers import default_rnn_cell_hparams, get_rnn_cell
from texkit.core.rnn_cells import (
    DropoutWrapper,
    HighwayWrapper,
    ResidualWrapper,
    prepare_dropout_masks,
    reset_dropout_masks,
)
from texkit.hparams import HParamsError

RNG = np.random.default_rng(3)


class DelayCell(keras.layers.Layer):
    """output = previous state, new state = inputs: dropout on each part shows in the outputs."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.state_size = units
        self.output_size = units

    def call(self, inputs, states):
        return states[0], [inputs]


def layers_of(cell):
    return list(cell.cells) if isinstance(cell, keras.layers.StackedRNNCells) else [cell]


def describe(cell):
    """'Highway(Dropout(LSTMCell))' for each layer."""
    names = {DropoutWrapper: "Dropout", ResidualWrapper: "Residual", HighwayWrapper: "Highway"}
    if type(cell) in names:
        return f"{names[type(cell)]}({describe(cell.cell)})"
    return type(cell).__name__


def lstm(units=4, **entry):
    return {"type": "LSTMCell", "kwargs": {"units": units}, **entry}


# --- get_rnn_cell ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, expected",
    [
        ({}, ["LSTMCell"]),
        ({"num_layers": 2, "residual": True}, ["LSTMCell", "Residual(LSTMCell)"]),
        (
            {"num_layers": 3, "highway": True, "dropout": {"output_keep_prob": 0.5}},
            ["Dropout(LSTMCell)", "Highway(Dropout(LSTMCell))", "Highway(Dropout(LSTMCell))"],
        ),
        ({"dropout": {"state_keep_prob": 0.9}}, ["Dropout(LSTMCell)"]),
        ({"residual": True}, ["LSTMCell"]),  # one layer: nothing to add the input to
    ],
    ids=["plain", "residual", "highway-dropout", "state-dropout", "residual-one-layer"],
)
def test_get_rnn_cell_structure(entry, expected):
    cell = get_rnn_cell(lstm(**entry))
    assert isinstance(cell, keras.layers.StackedRNNCells) == (len(expected) > 1)
    assert [describe(layer) for layer in layers_of(cell)] == expected


def test_get_rnn_cell_dropout_settings_and_hparams_merging():
    # Users passing only some keys keep working: HParams merges the nested defaults.
    hp = tx.HParams(
        {"type": "GRUCell", "num_layers": 2, "dropout": {"input_keep_prob": 0.8}},
        default_rnn_cell_hparams(),
    )
    assert hp.dropout.output_keep_prob == 1.0 and hp.residual is False
    stack = get_rnn_cell(hp, dtype="mixed_bfloat16")
    for layer in stack.cells:
        assert isinstance(layer, DropoutWrapper) and isinstance(layer.cell, keras.layers.GRUCell)
        assert (layer.input_keep_prob, layer.output_keep_prob, layer.state_keep_prob) == (
            0.8,
            1.0,
            1.0,
        )
        assert not layer.variational_recurrent
        assert layer.dtype_policy.name == "mixed_bfloat16"
    assert (
        tx.HParams({"type": "LSTMCell"}, default_rnn_cell_hparams()).dropout.todict()
        == (default_rnn_cell_hparams()["dropout"])
    )
    with pytest.raises(HParamsError) as error:
        tx.HParams({"dropout": {"input_keep_probs": 0.5}}, default_rnn_cell_hparams())
    assert error.value.path == "dropout.input_keep_probs"


@pytest.mark.parametrize(
    "entry, path",
    [
        ({"dropout": {"input_keep_prob": 0.0}}, "enc.rnn_cell.dropout.input_keep_prob"),
        ({"dropout": {"output_keep_prob": 1.5}}, "enc.rnn_cell.dropout.output_keep_prob"),
        ({"dropout": {"state_keep_prob": True}}, "enc.rnn_cell.dropout.state_keep_prob"),
        ({"dropout": {"keep_prob": 0.5}}, "enc.rnn_cell.dropout.keep_prob"),
        ({"dropout": {"variational_recurrent": 1}}, "enc.rnn_cell.dropout.variational_recurrent"),
        ({"residual": "yes"}, "enc.rnn_cell.residual"),
        ({"residual": True, "highway": True}, "enc.rnn_cell.highway"),
        ({"num_layers": 0}, "enc.rnn_cell.num_layers"),
    ],
)
def test_get_rnn_cell_errors_name_the_key(entry, path):
    with pytest.raises(HParamsError) as error:
        get_rnn_cell(lstm(**entry), path="enc.rnn_cell")
    assert error.value.path == path
    if "highway" in entry:
        assert "enc.rnn_cell.residual" in str(error.value)


def test_wrapper_arguments_are_checked():
    with pytest.raises(ValueError, match="input_keep_prob"):
        DropoutWrapper(keras.layers.GRUCell(2), input_keep_prob=0)
    with pytest.raises(ValueError, match="state_size"):
        ResidualWrapper(keras.layers.Dense(2))
    with pytest.raises(ValueError, match=r"input size \(3\).*output size \(4\)"):
        ResidualWrapper(keras.layers.SimpleRNNCell(4)).build((None, 3))
    with pytest.raises(ValueError, match=r"input size \(5\).*output size \(4\)"):
        HighwayWrapper(keras.layers.SimpleRNNCell(4)).build((None, 5))


# --- DropoutWrapper --------------------------------------------------------------------------


def test_dropout_is_identity_at_inference():
    cell = DropoutWrapper(
        keras.layers.LSTMCell(4), input_keep_prob=0.5, output_keep_prob=0.5, state_keep_prob=0.5
    )
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    states = [RNG.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    for training in (False, None):
        output, new_states = cell(x, states, training=training)
        want_output, want_states = cell.cell(x, states)
        np.testing.assert_array_equal(output, want_output)
        np.testing.assert_array_equal(new_states[0], want_states[0])
    sequence = RNG.normal(size=(3, 6, 5)).astype(np.float32)
    wrapped = keras.layers.RNN(cell, return_sequences=True)
    plain = keras.layers.RNN(cell.cell, return_sequences=True)
    np.testing.assert_array_equal(wrapped(sequence), plain(sequence))


@pytest.mark.parametrize("part", ["input", "output", "state"])
def test_dropout_keeps_the_mean_and_drops_one_minus_p(part):
    keep_prob = 0.6
    cell = DropoutWrapper(DelayCell(50), **{f"{part}_keep_prob": keep_prob}, seed=1)
    ones = np.ones((400, 50), np.float32)
    # Input or state dropout shows in the new state, output dropout in the output.
    output, (new_state,) = cell(ones, [ones], training=True)
    dropped = np.asarray(output if part == "output" else new_state)
    untouched = np.asarray(new_state if part == "output" else output)
    np.testing.assert_array_equal(untouched, ones)
    np.testing.assert_allclose(np.unique(dropped), [0.0, 1 / keep_prob], rtol=1e-6)
    assert abs(np.mean(dropped == 0) - (1 - keep_prob)) < 0.01
    assert abs(dropped.mean() - 1.0) < 0.02


def test_lstm_state_dropout_touches_h_only():
    cell = DropoutWrapper(keras.layers.LSTMCell(64), state_keep_prob=0.5, seed=2)
    x = RNG.normal(size=(8, 3)).astype(np.float32)
    states = [RNG.normal(size=(8, 64)).astype(np.float32) for _ in range(2)]
    output, (h, c) = cell(x, states, training=True)
    want_output, (want_h, want_c) = cell.cell(x, states)
    np.testing.assert_allclose(output, want_output, atol=1e-6)  # the output is not dropped
    np.testing.assert_allclose(c, want_c, atol=1e-6)
    h, want_h = np.asarray(h), np.asarray(want_h)
    assert 0.3 < np.mean(h == 0) < 0.7
    np.testing.assert_allclose(h[h != 0], 2 * want_h[h != 0], rtol=1e-5)


def delay_rnn_masks(keep_probs, variational, call):
    """Outputs of a DelayCell RNN on ones: at step t >= 1 each is 0 or a scale, i.e. the masks."""
    cell = DropoutWrapper(DelayCell(16), **keep_probs, variational_recurrent=variational, seed=4)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    ones = np.ones((8, 6, 16), np.float32)
    first, second = (np.asarray(call(rnn, ones)) for _ in range(2))
    return first[:, 1:], second[:, 1:]


@pytest.mark.parametrize("part", ["input", "output", "state"])
@pytest.mark.parametrize("how", ["eager", "tf.function", "xla"])
def test_variational_dropout_same_mask_per_sequence_new_mask_per_call(part, how):
    def call(rnn, x):
        if how == "eager":
            return rnn(x, training=True)
        return tf.function(lambda y: rnn(y, training=True), jit_compile=how == "xla")(x)

    first, second = delay_rnn_masks({f"{part}_keep_prob": 0.5}, True, call)
    assert 0.3 < np.mean(first == 0) < 0.7
    for t in range(first.shape[1]):
        np.testing.assert_array_equal(first[:, t], first[:, 0])
    assert not np.array_equal(first[:, 0], second[:, 0])  # keras.layers.RNN reset the masks
    # Without variational_recurrent, every step draws a new mask.
    first, _ = delay_rnn_masks({f"{part}_keep_prob": 0.5}, False, call)
    assert not np.array_equal(first[:, 1], first[:, 0])


def test_manual_stepping_prepare_and_reset_masks():
    # The cells' seed generators take their seeds from Python's `random`: seeded, the masks (and
    # the bounds on their mean below) are the same on every run.
    keras.utils.set_random_seed(20)
    cell = get_rnn_cell(
        {
            "type": "GRUCell",
            "kwargs": {"units": 8, "dropout": 0.5},  # Keras' own mask, reached through the wrapper
            "num_layers": 2,
            "dropout": {"output_keep_prob": 0.5, "variational_recurrent": True},
        }
    )
    ones = tf.ones((4, 8))
    states = cell.get_initial_state(batch_size=4)
    cell(ones, states)  # builds

    @tf.function(jit_compile=True)
    def decode(x, states):
        prepare_dropout_masks(cell, x, states)

        def body(t, outputs, states):
            output, states = cell(x, states, training=True)
            zeros = tf.cast(tf.equal(output, 0), tf.float32)
            return t + 1, outputs.write(t, zeros), states

        _, outputs, _ = tf.while_loop(
            lambda t, *_: t < 5, body, (0, tf.TensorArray(tf.float32, 5), states)
        )
        reset_dropout_masks(cell)
        return outputs.stack()

    first = decode(ones, states).numpy()
    for t in range(5):  # the top layer's output mask, the same at every step
        np.testing.assert_array_equal(first[t], first[0])
    assert 0.2 < first.mean() < 0.8
    assert cell.cells[0]._output_mask is None and cell.cells[0].cell._dropout_mask is None
    assert not np.array_equal(decode(ones, states).numpy()[0], first[0])
    # Eagerly, the first step draws the masks; reset_dropout_masks starts a new sequence.
    step = [cell(ones, states, training=True)[0].numpy() == 0 for _ in range(2)]
    np.testing.assert_array_equal(step[0], step[1])
    reset_dropout_masks(cell)
    assert not np.array_equal(cell(ones, states, training=True)[0].numpy() == 0, step[0])
    reset_dropout_masks(cell)


# --- Residual and highway --------------------------------------------------------------------


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("wrapper", [ResidualWrapper, HighwayWrapper])
def test_residual_and_highway_equal_the_formula(wrapper):
    cell = wrapper(keras.layers.LSTMCell(4))
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    states = [RNG.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    output, new_states = cell(x, states)
    inner_output, inner_states = cell.cell(x, states)
    inner_output = np.asarray(inner_output)
    if wrapper is ResidualWrapper:
        want = inner_output + x
    else:
        np.testing.assert_array_equal(cell.gate_bias.numpy(), -np.ones(4))
        cell.gate_bias.assign(RNG.normal(size=4))
        output, _ = cell(x, states)
        t = sigmoid(x @ cell.gate_kernel.numpy() + cell.gate_bias.numpy())
        want = t * inner_output + (1 - t) * x
    np.testing.assert_allclose(output, want, atol=1e-6)
    for got, expected in zip(new_states, inner_states, strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-6)


# --- Serialization and mixed precision -------------------------------------------------------


def test_wrappers_round_trip_through_keras_saving(tmp_path):
    cell = get_rnn_cell(
        lstm(
            num_layers=3,
            highway=True,
            dropout={"input_keep_prob": 0.7, "variational_recurrent": True},
        )
    )
    cell.cells[2] = ResidualWrapper(cell.cells[2].cell)
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, keras.layers.RNN(cell, return_sequences=True)(inputs))
    x = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    path = tmp_path / "rnn.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded(x), model(x), atol=1e-6)
    loaded_cells = loaded.layers[1].cell.cells
    assert [describe(c) for c in loaded_cells] == [
        "Dropout(LSTMCell)",
        "Highway(Dropout(LSTMCell))",
        "Residual(Dropout(LSTMCell))",
    ]
    assert loaded_cells[0].input_keep_prob == 0.7 and loaded_cells[0].variational_recurrent
    config = keras.saving.serialize_keras_object(cell.cells[1])
    clone = keras.saving.deserialize_keras_object(config)
    assert keras.saving.serialize_keras_object(clone) == config


def test_mixed_bfloat16():
    cell = get_rnn_cell(
        lstm(num_layers=2, highway=True, dropout={"output_keep_prob": 0.8}),
        dtype="mixed_bfloat16",
    )
    rnn = keras.layers.RNN(cell, return_sequences=True, dtype="mixed_bfloat16")
    outputs = rnn(RNG.normal(size=(2, 5, 3)).astype(np.float32), training=True)
    assert outputs.dtype == "bfloat16"
    assert {w.dtype for w in rnn.trainable_weights} == {"float32"}
