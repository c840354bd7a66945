"""Connectors: values against NumPy, structures of real Keras cells' states, contract, errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import ConstantConnector, ForwardConnector, MLPTransformConnector
from texkit.modules.connectors import normalize_output_size

RNG = np.random.default_rng(3)
BATCH = 3


def lstm_cell():
    return keras.layers.LSTMCell(4)


def stacked_cells():
    return keras.layers.StackedRNNCells(
        [keras.layers.LSTMCell(4), keras.layers.GRUCell(3), keras.layers.SimpleRNNCell(2)]
    )


def shapes(structure):
    return tf.nest.map_structure(lambda x: tuple(x.shape), structure)


def run_cell(cell, state, input_dim=5):
    """Feeds ``state`` to ``cell`` for one step; returns the new state."""
    if not cell.built:
        cell.build((None, input_dim))
    _, new_state = cell(tf.ones([BATCH, input_dim]), state)
    return new_state


@pytest.mark.parametrize("cls", [ConstantConnector, ForwardConnector, MLPTransformConnector])
def test_every_hparam_is_documented(cls):
    assert undocumented_hparams(cls) == ([], [])


def test_output_size_forms():
    assert normalize_output_size(5) == 5
    assert normalize_output_size(np.int64(5)) == 5
    assert normalize_output_size((2, (3, [4]))) == [2, [3, [4]]]
    # Keras 3 cells: LSTMCell has [units, units], StackedRNNCells one entry per cell.
    assert normalize_output_size(lstm_cell()) == [4, 4]
    assert normalize_output_size(lstm_cell().state_size) == [4, 4]
    assert normalize_output_size(keras.layers.GRUCell(3)) == 3
    assert normalize_output_size(stacked_cells()) == [[4, 4], 3, 2]
    assert type(normalize_output_size(lstm_cell().state_size)) is list  # not Keras' TrackedList


@pytest.mark.parametrize(
    "bad", [0, -2, 2.5, True, "4", [], [3, 0], [3, None], None, {"a": 3}, np.array([3, 4])]
)
@pytest.mark.parametrize("cls", [ConstantConnector, ForwardConnector, MLPTransformConnector])
def test_bad_output_size_is_named(cls, bad):
    with pytest.raises(ValueError, match="output_size"):
        cls(bad)


def test_config_keeps_output_size_and_round_trips():
    for cls in (ConstantConnector, ForwardConnector, MLPTransformConnector):
        connector = cls((4, (3, 2)))
        config = connector.get_config()
        assert config["output_size"] == [4, [3, 2]]
        clone = cls.from_config(config)
        assert clone.output_size == connector.output_size
        assert clone.get_config() == config


# ConstantConnector


def test_constant_values_and_structure_of_real_cells():
    for cell in (lstm_cell(), stacked_cells()):
        connector = ConstantConnector(cell, {"value": 0.5})
        state = connector(BATCH)
        # The structure of the cell's state_size, and the shapes of its zero initial state (whose
        # structure differs: Keras wraps a single-tensor GRU state in a list there).
        tf.nest.assert_same_structure(state, cell.state_size)
        initial = cell.get_initial_state(batch_size=BATCH)
        assert shapes(tf.nest.flatten(state)) == shapes(tf.nest.flatten(initial))
        for tensor in tf.nest.flatten(state):
            assert tensor.dtype == tf.float32
            np.testing.assert_array_equal(tensor.numpy(), 0.5)
        # The call's value wins; zeros equal Keras' zero initial state; the state feeds the cell.
        for got, want in zip(
            tf.nest.flatten(connector(BATCH, value=0.0)), tf.nest.flatten(initial), strict=True
        ):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert shapes(run_cell(cell, state)) == shapes(state)


def test_constant_under_tf_function_xla_and_mixed_precision():
    connector = ConstantConnector([2, [3]], {"value": -1.0})

    def fn(inputs, value):
        return connector(tf.shape(inputs)[0], value=value)

    for jit in (False, True):
        out = tf.function(fn, jit_compile=jit)(tf.zeros([BATCH, 7]), tf.constant(2.0))
        assert shapes(out) == [(BATCH, 2), [(BATCH, 3)]]
        for tensor in tf.nest.flatten(out):
            np.testing.assert_array_equal(tensor.numpy(), 2.0)
    mixed = ConstantConnector(4, dtype="mixed_bfloat16")
    assert mixed(2).dtype == tf.bfloat16
    clone = ConstantConnector.from_config(connector.get_config())
    np.testing.assert_array_equal(clone(2)[1][0].numpy(), -1.0)


# ForwardConnector


def test_forward_repacks_the_same_tensors():
    cell = stacked_cells()
    flat = [RNG.normal(size=(BATCH, size)).astype(np.float32) for size in (4, 4, 3, 2)]
    connector = ForwardConnector(cell)
    for inputs in (flat, tuple(flat), [tuple(flat[:2]), flat[2:]], {"a": flat[:3], "b": flat[3]}):
        state = connector(inputs)
        tf.nest.assert_same_structure(state, cell.state_size)
        for got, want in zip(tf.nest.flatten(state), flat, strict=True):
            np.testing.assert_array_equal(got.numpy(), want)
        assert shapes(run_cell(cell, state)) == shapes(state)
    # An LSTM's [h, c] from an encoder, forwarded to a decoder cell of the same size.
    encoder = keras.layers.RNN(lstm_cell(), return_state=True)
    _, h, c = encoder(tf.ones([BATCH, 6, 5]))
    state = ForwardConnector(lstm_cell())([h, c])
    assert shapes(run_cell(lstm_cell(), state)) == [(BATCH, 4), (BATCH, 4)]


def test_forward_contract(tmp_path):
    inputs = RNG.normal(size=(4, 5)).astype(np.float32)
    out = check_module_contract(
        lambda **kw: ForwardConnector(5, **kw), {"inputs": inputs}, tmp_path
    )
    np.testing.assert_array_equal(out.numpy(), inputs)
    jit = tf.function(ForwardConnector([5, [5]]), jit_compile=True)
    assert shapes(jit([inputs, inputs])) == [(4, 5), [(4, 5)]]


@pytest.mark.parametrize(
    "inputs",
    [
        [np.zeros((2, 4), np.float32)] * 3,  # one tensor too many
        [np.zeros((2, 4), np.float32)],  # one too few
        [np.zeros((2, 4), np.float32), np.zeros((2, 3), np.float32)],  # wrong size
        [np.zeros((2, 4), np.float32), np.zeros((2, 2, 2), np.float32)],  # wrong rank
    ],
)
def test_forward_mismatch_names_both_structures(inputs):
    with pytest.raises(ValueError, match=r"output_size \[4, 4\], got inputs of shapes \[\(2, 4\)"):
        ForwardConnector(lstm_cell())(inputs)


# MLPTransformConnector


def numpy_mlp(connector, inputs, activation=lambda x: x):
    """Flatten, concatenate, dense with the layer's own weights, activation, split: float64."""
    flat = [np.asarray(x, np.float64).reshape(len(x), -1) for x in tf.nest.flatten(inputs)]
    kernel, bias = (np.asarray(w, np.float64) for w in connector.dense.get_weights())
    outputs = activation(np.concatenate(flat, axis=1) @ kernel + bias)
    sizes = tf.nest.flatten(connector.output_size)
    pieces = np.split(outputs, np.cumsum(sizes)[:-1], axis=1)
    return tf.nest.pack_sequence_as(connector.output_size, pieces)


ENCODER_STATE = [
    RNG.normal(size=(BATCH, 4)).astype(np.float32),
    (RNG.normal(size=(BATCH, 2, 3)).astype(np.float32), RNG.normal(size=(BATCH,)).astype("f")),
]


@pytest.mark.parametrize(
    "activation, reference",
    [
        (None, lambda x: x),
        ("identity", lambda x: x),
        ("tanh", np.tanh),
        (
            {"type": "leaky_relu", "kwargs": {"negative_slope": 0.1}},
            lambda x: np.where(x > 0, x, 0.1 * x),
        ),
    ],
)
def test_mlp_equals_numpy(activation, reference):
    cell = stacked_cells()
    connector = MLPTransformConnector(cell, {"activation_fn": activation})
    state = connector(ENCODER_STATE)
    assert connector.dense.kernel.shape == (4 + 6 + 1, 4 + 4 + 3 + 2)
    want = numpy_mlp(connector, ENCODER_STATE, reference)
    tf.nest.assert_same_structure(state, cell.state_size)
    for got, expected in zip(tf.nest.flatten(state), tf.nest.flatten(want), strict=True):
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)
    assert shapes(run_cell(cell, state)) == shapes(state)


def test_mlp_from_a_real_encoder_state_to_an_lstm_decoder_cell():
    encoder = keras.layers.RNN(keras.layers.GRUCell(6), return_state=True)
    _, final_state = encoder(tf.ones([BATCH, 5, 2]))
    decoder_cell = lstm_cell()
    connector = MLPTransformConnector(decoder_cell)
    state = connector(final_state)
    assert shapes(state) == [(BATCH, 4), (BATCH, 4)]
    assert shapes(run_cell(decoder_cell, state)) == shapes(state)
    xla = tf.function(lambda s: connector(s), jit_compile=True)
    for got, want in zip(xla(final_state), state, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)


@pytest.mark.parametrize("output_size", [[[4, 4], 3], 6])
def test_mlp_contract(tmp_path, output_size):
    inputs = RNG.normal(size=(4, 3, 2)).astype(np.float32)
    out = check_module_contract(
        lambda **kw: MLPTransformConnector(output_size, {"activation_fn": "tanh"}, **kw),
        {"inputs": inputs},
        tmp_path,
    )
    assert shapes(out) == tf.nest.map_structure(lambda size: (4, size), output_size)


def test_mlp_errors():
    with pytest.raises(HParamsError) as error:
        MLPTransformConnector(3, {"activation_fn": "tanhh"})
    assert error.value.path == "activation_fn"
    with pytest.raises(HParamsError) as error:
        MLPTransformConnector(3, {"activation_fn": 3})
    assert error.value.path == "activation_fn"
    with pytest.raises(HParamsError):
        MLPTransformConnector(3, {"activation_fnn": "tanh"})
    connector = MLPTransformConnector(3)
    with pytest.raises(ValueError, match=r"known non-batch dimensions, got input shapes"):
        connector.build([(None, 4), (None, None)])
