"""Conv1DNetwork: NumPy per sequence, padding, contract, Texar-PyTorch, dropout, errors."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.hparams.texar_migration import from_texar
from texkit.modules import Conv1DClassifier, Conv1DNetwork

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "texar_torch"
RNG = np.random.default_rng(11)
INPUTS = RNG.normal(size=(4, 9, 5)).astype(np.float32)
LENGTHS = np.array([9, 6, 4, 3], np.int32)
SMALL = {"filters": 3, "kernel_sizes": [2, 3], "dense_size": 4, "dropout_rate": 0.0}
ACTIVATIONS = {None: lambda x: x, "relu": lambda x: np.maximum(x, 0), "tanh": np.tanh}


def numpy_conv(x, kernel, bias, padding):
    """1-D convolution of one sequence ``x`` [time, in]; 'same' pads with zeros as Keras."""
    width = kernel.shape[0]
    if padding == "same":
        left = (width - 1) // 2
        x = np.concatenate(
            [np.zeros((left, x.shape[1])), x, np.zeros((width - 1 - left, x.shape[1]))]
        )
    steps = max(x.shape[0] - width + 1, 0)
    out = [sum(x[t + j] @ kernel[j] for j in range(width)) + bias for t in range(steps)]
    return np.stack(out) if out else np.zeros((0, kernel.shape[2]))


def numpy_network(network, sequence):
    """The network on one unpadded sequence [time, dim], in float64."""
    hp = network.hparams
    activation = ACTIVATIONS[hp.conv_activation.type]
    pool = np.max if hp.pooling == "max" else np.mean
    h = sequence.astype(np.float64)
    branches = len(hp.kernel_sizes)
    for depth in range(hp.num_conv_layers):
        outputs = []
        for conv in network.convs[depth * branches : (depth + 1) * branches]:
            y = activation(numpy_conv(h, conv.kernel.numpy(), conv.bias.numpy(), hp.padding))
            if hp.pool_size is None:
                outputs.append(pool(y, axis=0) if len(y) else np.zeros(y.shape[1]))
            else:
                starts = range(0, len(y) - hp.pool_size + 1, hp.pool_strides)
                pooled = [pool(y[s : s + hp.pool_size], axis=0) for s in starts]
                outputs.append(np.stack(pooled) if pooled else np.zeros((0, y.shape[1])))
        h = np.concatenate(outputs, axis=-1)
    h = h.reshape(-1)
    for index, dense in enumerate(network.dense_layers):
        last = index == len(network.dense_layers) - 1
        name = hp.final_dense_activation if last else hp.dense_activation
        h = ACTIVATIONS[name](h @ dense.kernel.numpy() + dense.bias.numpy())
    return h


def test_documented_and_registered():
    assert undocumented_hparams(Conv1DNetwork) == ([], [])
    assert registry.resolve("Conv1DNetwork") is Conv1DNetwork


@pytest.mark.parametrize(
    "hparams",
    [
        {},
        {"padding": "same", "pooling": "mean", "num_dense_layers": 0},
        {"num_dense_layers": 2, "dense_activation": "relu", "final_dense_activation": "tanh"},
    ],
)
def test_global_pooling_equals_numpy_on_each_sequence_alone(hparams):
    network = Conv1DNetwork({**SMALL, **hparams})
    got = network(INPUTS, sequence_length=LENGTHS).numpy()
    want = np.stack([numpy_network(network, x[:n]) for x, n in zip(INPUTS, LENGTHS, strict=True)])
    np.testing.assert_allclose(got, want, atol=1e-5)
    # Other values at the padded steps, and more of them, change nothing.
    padded = np.concatenate([INPUTS, 100 * np.ones((4, 3, 5), np.float32)], axis=1)
    padded[np.arange(12)[None, :] >= LENGTHS[:, None]] = -50.0
    np.testing.assert_allclose(network(padded, sequence_length=LENGTHS).numpy(), got, atol=1e-5)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_windowed_pooling_equals_numpy_at_the_valid_windows(padding):
    hparams = {
        **SMALL,
        "kernel_sizes": [2],
        "num_conv_layers": 2,
        "pool_size": 2,
        "pool_strides": 2 if padding == "same" else 1,
        "padding": padding,
        "pooling": "mean",
        "num_dense_layers": 0,
    }
    network = Conv1DNetwork(hparams)
    got = network(INPUTS, sequence_length=LENGTHS).numpy()
    padded = np.concatenate([INPUTS, RNG.normal(size=(4, 3, 5)).astype(np.float32)], axis=1)
    padded[np.arange(12)[None, :] >= LENGTHS[:, None]] = 7.0
    got_padded = network(padded, sequence_length=LENGTHS).numpy()
    for row, (x, n) in enumerate(zip(INPUTS, LENGTHS, strict=True)):
        want = numpy_network(network, x[:n]).reshape(-1, 3)
        np.testing.assert_allclose(got[row, : len(want)], want, atol=1e-5)
        np.testing.assert_array_equal(got[row, len(want) :], 0.0)
        np.testing.assert_allclose(got_padded[row, : len(want)], want, atol=1e-5)


def test_contract(tmp_path):
    hparams = {**SMALL, "num_dense_layers": 2, "dropout_rate": 0.2, "dropout_dense": [1]}
    check_module_contract(
        lambda **kw: Conv1DNetwork(hparams, **kw),
        {"inputs": INPUTS, "sequence_length": LENGTHS},
        tmp_path,
        sequence_inputs={"inputs": 1},
    )


def test_windowed_contract(tmp_path):
    hparams = {**SMALL, "kernel_sizes": [2], "pool_size": 3, "pool_strides": 2}
    network = Conv1DNetwork(hparams)
    assert network.compute_output_shape((4, 9, 5)) == (4, 4)
    check_module_contract(
        lambda **kw: Conv1DNetwork(hparams, **kw),
        {"inputs": INPUTS, "sequence_length": LENGTHS},
        tmp_path,
    )


def test_dropout_where_the_indices_say():
    ones = np.ones((64, 9, 5), np.float32)
    hparams = {**SMALL, "dropout_rate": 0.5, "num_dense_layers": 1}
    # Dropout only after the last dense layer: outputs are 0 or twice the inference ones.
    # Seeded: with other draws, the three ReLU filters can all be 0 on this input, and so every
    # output; only outputs that are not 0 without dropout tell whether dropout kept them.
    keras.utils.set_random_seed(3)
    network = Conv1DNetwork({**hparams, "dropout_conv": [], "dropout_dense": [1]})
    clean = network(ones).numpy()
    dropped = network(ones, training=True).numpy()
    live = clean != 0
    assert live.sum() >= 64
    kept = live & (dropped != 0)
    np.testing.assert_allclose(dropped[kept], 2 * clean[kept], rtol=1e-5)
    assert np.all(dropped[~live] == 0)
    assert 0.3 < kept.sum() / live.sum() < 0.7
    # No dropout index: training changes nothing.
    quiet = Conv1DNetwork({**hparams, "dropout_conv": [], "dropout_dense": []})
    np.testing.assert_array_equal(quiet(ones, training=True).numpy(), quiet(ones).numpy())


def load(case):
    with np.load(FIXTURES / f"modules33_{case}.npz") as data:
        fixture = {key: data[key] for key in data.files}
    return fixture, json.loads(str(fixture["hparams_json"]))


def test_global_pooling_equals_texar_pytorch():
    fixture, texar = load("conv1d_network_global")
    network = Conv1DNetwork({
        "filters": texar["out_channels"],
        "kernel_sizes": texar["kernel_size"],
        "num_dense_layers": texar["num_dense_layers"],
        "dense_size": texar["out_features"],
        "dense_activation": "relu",
        "final_dense_activation": "tanh",
        "dropout_rate": texar["dropout_rate"],
    })  # fmt: skip
    network(fixture["inputs"])
    for branch, conv in enumerate(network.convs):
        name = f"w/_layers.0._layers.{branch}.Conv1d"
        conv.kernel.assign(fixture[f"{name}.weight"].transpose(2, 1, 0))  # [out,in,k]->[k,in,out]
        conv.bias.assign(fixture[f"{name}.bias"])
    for dense, index in zip(network.dense_layers, (3, 4), strict=True):
        dense.kernel.assign(fixture[f"w/_layers.{index}.Linear.weight"].T)
        dense.bias.assign(fixture[f"w/_layers.{index}.Linear.bias"])
    np.testing.assert_allclose(network(fixture["inputs"]).numpy(), fixture["outputs"], atol=1e-5)
    # Padded, texkit gives what Texar gives each sequence alone (Texar itself pools padded steps).
    padded = network(fixture["inputs"], sequence_length=fixture["lengths"]).numpy()
    np.testing.assert_allclose(padded, fixture["alone_outputs"], atol=1e-5)


def test_windowed_pooling_equals_texar_pytorch():
    fixture, texar = load("conv1d_network_windows")
    network = Conv1DNetwork({
        "num_conv_layers": texar["num_conv_layers"],
        "filters": texar["out_channels"],
        "kernel_sizes": texar["kernel_size"][:1],
        "pooling": "mean",
        "pool_size": texar["pool_size"],
        "pool_strides": texar["pool_stride"],
        "num_dense_layers": 1,
        "dense_size": texar["out_features"],
        "dropout_rate": texar["dropout_rate"],
    })  # fmt: skip
    network(fixture["inputs"])
    for conv, index in zip(network.convs, (0, 3), strict=True):
        conv.kernel.assign(fixture[f"w/_layers.{index}.Conv1d.weight"].transpose(2, 1, 0))
        conv.bias.assign(fixture[f"w/_layers.{index}.Conv1d.bias"])
    # torch flattens [batch, channels, steps] channel-major, texkit [batch, steps, channels]
    # step-major (as Texar-TF): the dense kernel's rows are permuted to match.
    weight = fixture["w/_layers.6.weight"]  # [out, channels * steps]
    channels = texar["out_channels"]
    steps = weight.shape[1] // channels
    kernel = weight.T.reshape(channels, steps, -1).transpose(1, 0, 2).reshape(steps * channels, -1)
    network.dense_layers[0].kernel.assign(kernel)
    network.dense_layers[0].bias.assign(fixture["w/_layers.6.bias"])
    np.testing.assert_allclose(network(fixture["inputs"]).numpy(), fixture["outputs"], atol=1e-5)


@pytest.mark.parametrize(
    "hparams, key",
    [
        ({"padding": "causal"}, "padding"),
        ({"pooling": "MaxPooling1D"}, "pooling"),
        ({"pool_size": 0}, "pool_size"),
        ({"num_conv_layers": 2}, "pool_size"),
        ({"pool_size": 2}, "kernel_sizes"),
        ({"dropout_conv": [2]}, "dropout_conv.0"),
        ({"dropout_dense": [0, 5]}, "dropout_dense.1"),
        ({"dropout_rate": 1.0}, "dropout_rate"),
        ({"kernel_sizes": [0]}, "kernel_sizes.0"),
        ({"final_dense_activation": "relux"}, "final_dense_activation"),
    ],
)
def test_bad_hparams_name_the_key(hparams, key):
    with pytest.raises(HParamsError) as error:
        Conv1DNetwork(hparams)
    assert error.value.path.startswith(key), error.value.path


def test_windowed_pooling_before_dense_layers_needs_a_known_time():
    network = Conv1DNetwork({**SMALL, "kernel_sizes": [2], "pool_size": 2})
    with pytest.raises(ValueError, match="known time"):
        network.build((None, None, 5))


def test_from_texar_keeps_texar_dropout_and_pooling_keys():
    texar = {
        "num_conv_layers": 2,
        "filters": 8,
        "kernel_size": 3,
        "pooling": "AveragePooling1D",
        "pool_size": 2,
        "dropout_conv": [0, 2],
        "dropout_dense": [1],
        "num_dense_layers": 1,
    }
    hparams, changes = from_texar(texar, Conv1DNetwork)
    assert hparams["dropout_conv"] == [0, 2] and hparams["dropout_dense"] == [1]
    assert hparams["pool_size"] == 2 and hparams["pooling"] == "mean"
    assert hparams["kernel_sizes"] == [3]
    assert {change.path for change in changes} == {"kernel_size", "pooling"}
    Conv1DNetwork(hparams)
    # Conv1DClassifier has none of these keys: they are still translated or refused there.
    with pytest.raises(HParamsError, match="has no equivalent"):
        from_texar(texar, Conv1DClassifier)
    # Texar's 'identity' activation: the error says texkit's name.
    with pytest.raises(HParamsError, match="linear"):
        Conv1DNetwork({"dense_activation": "identity"})
