"""UnidirectionalRNNEncoder and BidirectionalRNNEncoder: contract and NumPy references."""

import keras
import numpy as np
import pytest

from tests.harness import check_module_contract
from tests.modules.test_sentence_classifiers import numpy_gru_step, numpy_lstm_step
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.core.rnn_cells import HighwayWrapper
from texkit.hparams import HParamsError
from texkit.modules import BidirectionalRNNEncoder, UnidirectionalRNNEncoder, encoders

RNG = np.random.default_rng(5)
INPUTS = RNG.normal(size=(4, 6, 5)).astype(np.float32)
LENGTHS = np.array([6, 3, 1, 0], np.int32)
FEED = {"inputs": INPUTS, "sequence_length": LENGTHS}
OUTPUT_LAYER = {
    "num_layers": 2,
    "layer_size": 3,
    "activation": "tanh",
    "dropout_layer_ids": [0, 2],
    "dropout_rate": 0.2,
}


def lstm(units=4, **entry):
    return {"type": "LSTMCell", "kwargs": {"units": units}, **entry}


def gru(units=4, **entry):
    return {"type": "GRUCell", "kwargs": {"units": units}, **entry}


def numpy_rnn(rnn, output_layers, inputs, lengths, initial_state=None, reverse=False):
    """Runs the cells on each sequence cut to its length (reversed for the backward direction),
    in float64; returns zero-padded outputs and the final states as flat lists per example."""
    cells = rnn.cell
    cells = list(cells.cells) if isinstance(cells, keras.layers.StackedRNNCells) else [cells]
    batch, time = inputs.shape[:2]
    width = output_layers[-1].units if output_layers else cells[-1].units
    outputs = np.zeros((batch, time, width))
    finals = []
    for index, (x, length) in enumerate(zip(inputs.astype(np.float64), lengths, strict=True)):
        states = []
        for depth, cell in enumerate(cells):
            lstm_cell = isinstance(cell, keras.layers.LSTMCell)
            if initial_state is None:
                states.append([np.zeros(cell.units)] * (2 if lstm_cell else 1))
            else:
                layer_state = initial_state[depth] if len(cells) > 1 else initial_state
                states.append([np.asarray(s[index], np.float64) for s in layer_state])
        steps = list(range(length))[::-1] if reverse else range(length)
        for t in steps:
            y = x[t]
            for depth, cell in enumerate(cells):
                lstm_cell = isinstance(cell, keras.layers.LSTMCell)
                step = numpy_lstm_step if lstm_cell else numpy_gru_step
                y, new_state = step(cell, y, states[depth])
                states[depth] = list(new_state)
            for depth, layer in enumerate(output_layers):
                y = y @ layer.kernel.numpy() + layer.bias.numpy()
                y = y if depth == len(output_layers) - 1 else np.tanh(y)
            outputs[index, t] = y
        finals.append([part for layer_state in states for part in layer_state])
    return outputs, finals


def assert_states(got, finals, atol=1e-5):
    flat = [np.asarray(s) for s in keras.tree.flatten(got)]
    for index, want in enumerate(finals):
        for part, expected in zip(flat, want, strict=True):
            np.testing.assert_allclose(part[index], expected, atol=atol)


@pytest.mark.parametrize("cls", [UnidirectionalRNNEncoder, BidirectionalRNNEncoder])
def test_every_hparam_is_documented_and_registered(cls):
    assert undocumented_hparams(cls) == ([], [])
    assert registry.resolve(cls.__name__) is cls
    assert getattr(encoders, cls.__name__) is cls


def test_unidirectional_contract(tmp_path):
    hparams = {
        "rnn_cell": lstm(
            num_layers=2,
            residual=True,
            dropout={"output_keep_prob": 0.7, "variational_recurrent": True},
        ),
        "output_layer": OUTPUT_LAYER,
    }
    outputs, state = check_module_contract(
        lambda **kw: UnidirectionalRNNEncoder(hparams, **kw),
        FEED,
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=[1, None, None, None, None],
    )
    assert outputs.shape == (4, 6, 3)
    assert [[tuple(s.shape) for s in layer] for layer in state] == [[(4, 4), (4, 4)]] * 2


def test_bidirectional_contract(tmp_path):
    hparams = {
        "rnn_cell_fw": gru(num_layers=2, highway=True, dropout={"input_keep_prob": 0.8}),
        "output_layer_bw": {"num_layers": 1, "layer_size": 2, "dropout_layer_ids": [1]},
        "output_layer_share_config": False,
    }
    (outputs_fw, outputs_bw), (state_fw, state_bw) = check_module_contract(
        lambda **kw: BidirectionalRNNEncoder(hparams, **kw),
        FEED,
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=[1, 1, None, None, None, None],
    )
    assert outputs_fw.shape == (4, 6, 4) and outputs_bw.shape == (4, 6, 2)
    assert len(state_fw) == len(state_bw) == 2  # one [h] per layer


@pytest.mark.parametrize(
    "rnn_cell, output_layer",
    [
        (lstm(), {}),
        (lstm(num_layers=2), OUTPUT_LAYER),
        (gru(units=3, num_layers=3), {"num_layers": 1, "layer_size": 2}),
    ],
    ids=["lstm", "lstm2-dense2", "gru3-dense1"],
)
def test_unidirectional_equals_numpy(rnn_cell, output_layer):
    encoder = UnidirectionalRNNEncoder({"rnn_cell": rnn_cell, "output_layer": output_layer})
    outputs, state = encoder(INPUTS, sequence_length=LENGTHS)
    want, finals = numpy_rnn(encoder.rnn, encoder.output_layers, INPUTS, LENGTHS)
    np.testing.assert_allclose(outputs, want, atol=1e-5)
    assert_states(state, finals)
    # Without sequence_length, every step is valid.
    outputs, _ = encoder(INPUTS)
    want, _ = numpy_rnn(encoder.rnn, encoder.output_layers, INPUTS, np.full(4, 6))
    np.testing.assert_allclose(outputs, want, atol=1e-5)


@pytest.mark.parametrize("share", [True, False])
def test_bidirectional_equals_numpy_on_reversed_valid_parts(share):
    hparams = {
        "rnn_cell_fw": lstm(num_layers=2),
        "rnn_cell_bw": gru(units=3),
        "rnn_cell_share_config": share,
        "output_layer_fw": {"num_layers": 1, "layer_size": 2},
    }
    encoder = BidirectionalRNNEncoder(hparams)
    (outputs_fw, outputs_bw), (state_fw, state_bw) = encoder(INPUTS, sequence_length=LENGTHS)
    assert describe_cells(encoder.rnn_bw) == (["LSTMCell"] * 2 if share else ["GRUCell"])
    assert len(encoder.output_layers_bw) == 1  # output_layer_share_config: True
    want_fw, finals_fw = numpy_rnn(encoder.rnn_fw, encoder.output_layers_fw, INPUTS, LENGTHS)
    want_bw, finals_bw = numpy_rnn(
        encoder.rnn_bw, encoder.output_layers_bw, INPUTS, LENGTHS, reverse=True
    )
    np.testing.assert_allclose(outputs_fw, want_fw, atol=1e-5)
    np.testing.assert_allclose(outputs_bw, want_bw, atol=1e-5)
    assert_states(state_fw, finals_fw)
    assert_states(state_bw, finals_bw)


def test_other_dense_kwargs_reach_the_dense_layers():
    encoder = UnidirectionalRNNEncoder(
        {
            "rnn_cell": gru(),
            "output_layer": {"num_layers": 2, "other_dense_kwargs": {"use_bias": False}},
        }
    )
    assert [layer.use_bias for layer in encoder.output_layers] == [False, False]
    assert encoder.output_size == 128


def describe_cells(rnn):
    cells = rnn.cell.cells if isinstance(rnn.cell, keras.layers.StackedRNNCells) else [rnn.cell]
    return [type(cell).__name__ for cell in cells]


def test_initial_state_is_honored():
    encoder = UnidirectionalRNNEncoder({"rnn_cell": lstm(num_layers=2)})
    initial = [[RNG.normal(size=(4, 4)).astype(np.float32) for _ in range(2)] for _ in range(2)]
    outputs, state = encoder(INPUTS, sequence_length=LENGTHS, initial_state=initial)
    want, finals = numpy_rnn(encoder.rnn, [], INPUTS, LENGTHS, initial_state=initial)
    np.testing.assert_allclose(outputs, want, atol=1e-5)
    assert_states(state, finals)
    np.testing.assert_allclose(state[1][0][3], initial[1][0][3])  # length 0 keeps it

    bi = BidirectionalRNNEncoder({"rnn_cell_fw": gru(), "rnn_cell_bw": lstm()})
    h_fw = RNG.normal(size=(4, 4)).astype(np.float32)
    (outputs_fw, outputs_bw), (state_fw, state_bw) = bi(
        INPUTS, sequence_length=LENGTHS, initial_state=([h_fw], None)
    )
    want_fw, finals_fw = numpy_rnn(bi.rnn_fw, [], INPUTS, LENGTHS, initial_state=[h_fw])
    want_bw, _ = numpy_rnn(bi.rnn_bw, [], INPUTS, LENGTHS, reverse=True)
    np.testing.assert_allclose(outputs_fw, want_fw, atol=1e-5)
    np.testing.assert_allclose(outputs_bw, want_bw, atol=1e-5)
    assert_states(state_fw, finals_fw)
    with pytest.raises(ValueError, match="pair"):
        bi(INPUTS, sequence_length=LENGTHS, initial_state=[h_fw])


def test_training_dropout_in_cells_and_output_layer():
    encoder = UnidirectionalRNNEncoder(
        {
            "rnn_cell": lstm(units=32, num_layers=2, highway=True),
            "output_layer": {
                "num_layers": 1,
                "layer_size": 64,
                "dropout_layer_ids": [1],
                "dropout_rate": 0.5,
                "variational_dropout": True,
            },
        }
    )
    assert isinstance(encoder.rnn.cell.cells[1], HighwayWrapper)
    inference, _ = encoder(INPUTS, sequence_length=LENGTHS)
    np.testing.assert_array_equal(encoder(INPUTS, sequence_length=LENGTHS)[0], inference)
    outputs, _ = encoder(INPUTS, sequence_length=LENGTHS, training=True)
    dropped = np.asarray(outputs)[0] == 0  # the full-length example: [time, 64]
    assert 0.3 < dropped.mean() < 0.7
    for t in range(6):  # variational: the same units dropped at every step
        np.testing.assert_array_equal(dropped[t], dropped[0])
    kept = ~dropped
    np.testing.assert_allclose(np.asarray(outputs)[0][kept], 2 * np.asarray(inference)[0][kept])
    assert np.all(np.asarray(outputs)[1, 3:] == 0)  # padding stays zero


@pytest.mark.parametrize(
    "cls, hparams, key",
    [
        (UnidirectionalRNNEncoder, {"output_layer": {"num_layers": -1}}, "output_layer.num_layers"),
        (UnidirectionalRNNEncoder, {"output_layer": {"layer_size": 0}}, "output_layer.layer_size"),
        (
            UnidirectionalRNNEncoder,
            {"output_layer": {"num_layers": 1, "dropout_layer_ids": [0, 2]}},
            "output_layer.dropout_layer_ids.1",
        ),
        (
            UnidirectionalRNNEncoder,
            {"output_layer": {"dropout_rate": 1.0}},
            "output_layer.dropout_rate",
        ),
        (
            UnidirectionalRNNEncoder,
            {"output_layer": {"num_layers": 1, "activation": "tanhh"}},
            "output_layer.activation",
        ),
        (
            UnidirectionalRNNEncoder,
            {"output_layer": {"num_layers": 1, "other_dense_kwargs": {"units": 3}}},
            "output_layer.other_dense_kwargs.units",
        ),
        (
            UnidirectionalRNNEncoder,
            {"output_layer": {"num_layers": 1, "other_dense_kwargs": {"use_biass": False}}},
            "output_layer.other_dense_kwargs",
        ),
        (UnidirectionalRNNEncoder, {"output_layer": {"num_layer": 1}}, "output_layer.num_layer"),
        (
            UnidirectionalRNNEncoder,
            {"rnn_cell": {"dropout": {"state_keep_prob": 0.0}}},
            "rnn_cell.dropout.state_keep_prob",
        ),
        (
            BidirectionalRNNEncoder,
            {"rnn_cell_fw": {"residual": True, "highway": True}},
            "rnn_cell_fw.highway",
        ),
        (
            BidirectionalRNNEncoder,
            {"rnn_cell_share_config": False, "rnn_cell_bw": {"type": "Dense"}},
            "rnn_cell_bw",
        ),
        (
            BidirectionalRNNEncoder,
            {"output_layer_share_config": False, "output_layer_bw": {"layer_size": -2}},
            "output_layer_bw.layer_size",
        ),
    ],
)
def test_bad_hparams_name_the_key(cls, hparams, key):
    with pytest.raises(HParamsError) as error:
        cls(hparams)
    assert error.value.path == key, error.value.path
