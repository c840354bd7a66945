import keras
import numpy as np
import pytest

import texkit as tx
from texkit.core import get_activation, get_initializer, get_instance, get_layer


def test_get_initializer_builds_the_named_keras_initializer():
    initializer = get_initializer({"type": "Constant", "kwargs": {"value": 0.25}})
    assert isinstance(initializer, keras.initializers.Constant)
    np.testing.assert_array_equal(initializer((2, 3)), np.full((2, 3), 0.25, np.float32))
    truncated = get_initializer({"type": "TruncatedNormal", "kwargs": {"stddev": 0.02, "seed": 1}})
    values = np.asarray(truncated((200, 50)))
    assert np.abs(values).max() <= 2 * 0.02 + 1e-7 and 0.012 < values.std() < 0.02
    assert get_initializer(None) is None


def test_get_initializer_refuses_non_initializers():
    with pytest.raises(tx.HParamsError, match="not a keras.Initializer") as error:
        get_initializer({"type": "Dense", "kwargs": {"units": 2}}, path="encoder.initializer")
    assert error.value.path == "encoder.initializer"


def test_get_activation_by_name_and_with_kwargs():
    x = np.array([-2.0, -0.5, 0.0, 1.5], np.float32)
    np.testing.assert_allclose(get_activation("relu")(x), np.maximum(x, 0))
    from math import erf, sqrt

    exact_gelu = [v * 0.5 * (1 + erf(v / sqrt(2))) for v in x]
    np.testing.assert_allclose(get_activation("gelu")(x), exact_gelu, atol=1e-6)
    leaky = get_activation({"type": "leaky_relu", "kwargs": {"negative_slope": 0.1}})
    np.testing.assert_allclose(leaky(x), np.where(x > 0, x, 0.1 * x), atol=1e-7)
    assert get_activation(None) is None
    with pytest.raises(tx.HParamsError, match="did you mean") as error:
        get_activation("relux", path="ffn.activation")
    assert error.value.path == "ffn.activation"
    with pytest.raises(tx.HParamsError, match="not an activation function"):
        get_activation("Dense")


def test_get_layer_and_get_instance():
    layer = get_layer({"type": "Dense", "kwargs": {"units": 3, "use_bias": False}})
    assert isinstance(layer, keras.layers.Dense) and layer.units == 3 and not layer.use_bias
    hp = tx.HParams({"kwargs": {"units": 5}}, {"type": "LSTMCell", "kwargs": {"units": 2}})
    cell = get_layer(hp)
    assert isinstance(cell, keras.layers.LSTMCell) and cell.units == 5
    with pytest.raises(tx.HParamsError, match="not a keras.Layer") as error:
        get_layer({"type": "Zeros", "kwargs": {}}, path="decoder.output_layer")
    assert error.value.path == "decoder.output_layer"
    with pytest.raises(tx.HParamsError, match="refusing") as error:
        get_layer({"type": "keras.layers.Lambda", "kwargs": {}}, path="head")
    assert error.value.path == "head.type"
    with pytest.raises(tx.HParamsError, match="Dense") as error:
        get_instance({"type": "Dense", "kwargs": {"units": 2, "activation": "no_such"}}, path="out")
    assert error.value.path == "out.kwargs"


def test_activation_with_kwargs_survives_keras_saving(tmp_path):
    activation = get_activation({"type": "leaky_relu", "kwargs": {"negative_slope": 0.1}})
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, activation=activation)(inputs))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    x = np.array([[1.0, -2.0, 3.0]], np.float32)
    np.testing.assert_allclose(loaded(x), model(x), atol=1e-6)
    with pytest.raises(tx.HParamsError, match="not an activation function"):
        get_activation({"type": "Dense", "kwargs": {"units": 2}})


def test_masked_mean_pooling_averages_only_the_valid_steps(tmp_path):
    from tests.harness import check_module_contract

    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(3, 5, 4)).astype(np.float32)
    lengths = np.array([5, 2, 0], np.int32)
    outputs = check_module_contract(
        tx.core.MaskedMeanPooling,
        {"inputs": inputs, "sequence_length": lengths},
        tmp_path,
        sequence_inputs={"inputs": 1},
    )
    expected = np.stack(
        [
            inputs[i, :n].mean(axis=0) if n else np.zeros(4, np.float32)
            for i, n in enumerate(lengths)
        ]
    )
    np.testing.assert_allclose(outputs, expected, atol=1e-6)


def test_get_rnn_cell_builds_one_cell_or_a_stack():
    from texkit.core.layers import default_rnn_cell_hparams, get_rnn_cell

    cell = get_rnn_cell(default_rnn_cell_hparams())
    assert isinstance(cell, keras.layers.LSTMCell) and cell.units == 256
    # A new type keeps the default kwargs it accepts (units).
    hp = tx.HParams({"type": "GRUCell", "num_layers": 2}, default_rnn_cell_hparams())
    stack = get_rnn_cell(hp, dtype="mixed_bfloat16")
    assert isinstance(stack, keras.layers.StackedRNNCells) and len(stack.cells) == 2
    assert all(isinstance(c, keras.layers.GRUCell) and c.units == 256 for c in stack.cells)
    assert stack.cells[0] is not stack.cells[1]
    assert {c.dtype_policy.name for c in [stack, *stack.cells]} == {"mixed_bfloat16"}
    simple = get_rnn_cell({"type": "SimpleRNNCell", "kwargs": {"units": 3}})  # num_layers: 1
    outputs = keras.layers.RNN(simple)(np.ones((2, 4, 5), np.float32))
    assert outputs.shape == (2, 3)


def test_get_rnn_cell_errors_name_the_key():
    from texkit.core.layers import get_rnn_cell

    with pytest.raises(tx.HParamsError, match="not an RNN cell") as error:
        get_rnn_cell({"type": "Dense", "kwargs": {"units": 2}}, path="encoder.rnn_cell")
    assert error.value.path == "encoder.rnn_cell"
    with pytest.raises(tx.HParamsError) as error:
        get_rnn_cell({"type": "LSTMCell", "kwargs": {"units": 2}, "num_layers": 0})
    assert error.value.path == "rnn_cell.num_layers"
    with pytest.raises(tx.HParamsError) as error:
        get_rnn_cell({"type": "LSTMCel", "kwargs": {"units": 2}})
    assert error.value.path == "rnn_cell.type"


def test_masked_max_and_mean_pool_use_only_the_masked_steps():
    from texkit.core.layers import masked_max_pool, masked_mean_pool

    inputs = np.random.default_rng(1).normal(size=(3, 5, 2)).astype(np.float32) - 5.0
    mask = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], bool)
    want_max = [inputs[i][mask[i]].max(axis=0) if mask[i].any() else np.zeros(2) for i in range(3)]
    want_mean = [
        inputs[i][mask[i]].mean(axis=0) if mask[i].any() else np.zeros(2) for i in range(3)
    ]
    np.testing.assert_allclose(masked_max_pool(inputs, mask), want_max, atol=1e-6)
    np.testing.assert_allclose(masked_mean_pool(inputs, mask), want_mean, atol=1e-6)
