"""FeedForwardNetwork: contract, NumPy, given layers, Texar-PyTorch on the same weights, errors."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import FeedForwardNetwork

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "texar_torch"
RNG = np.random.default_rng(3)
INPUTS = RNG.normal(size=(4, 6)).astype(np.float32)
LAYERS = [
    {"type": "Dense", "kwargs": {"units": 8, "activation": "tanh"}},
    {"type": "Dropout", "kwargs": {"rate": 0.3}},
    {"type": "Dense", "kwargs": {"units": 3}},
]


def test_documented_and_registered():
    assert undocumented_hparams(FeedForwardNetwork) == ([], [])
    assert registry.resolve("FeedForwardNetwork") is FeedForwardNetwork


def test_equals_numpy_and_contract(tmp_path):
    network = FeedForwardNetwork(hparams={"layers": LAYERS})
    got = network(INPUTS).numpy()
    first, last = network.layers[0], network.layers[2]
    hidden = np.tanh(INPUTS.astype(np.float64) @ first.kernel.numpy() + first.bias.numpy())
    np.testing.assert_allclose(got, hidden @ last.kernel.numpy() + last.bias.numpy(), atol=1e-5)
    assert network.compute_output_shape((None, 6)) == (None, 3)
    check_module_contract(
        lambda **kw: FeedForwardNetwork(hparams={"layers": LAYERS}, **kw),
        {"inputs": INPUTS},
        tmp_path,
    )


def test_training_reaches_dropout():
    network = FeedForwardNetwork(hparams={"layers": [{"type": "Dropout", "kwargs": {"rate": 0.5}}]})
    ones = np.ones((8, 100), np.float32)
    np.testing.assert_array_equal(network(ones).numpy(), ones)
    dropped = network(ones, training=True).numpy()
    assert set(np.unique(dropped)) == {0.0, 2.0}


def test_no_layers_is_the_identity():
    np.testing.assert_array_equal(FeedForwardNetwork()(INPUTS).numpy(), INPUTS)


def test_given_layers_round_trip(tmp_path):
    def make(**kw):
        # Given layers keep their own dtype policy: the harness's mixed precision reaches them here.
        dtype = kw.get("dtype")
        layers = [
            keras.layers.Dense(5, activation="relu", dtype=dtype),
            keras.layers.Dense(2, dtype=dtype),
        ]
        return FeedForwardNetwork(layers=layers, **kw)

    network = make()
    clone = FeedForwardNetwork.from_config(network.get_config())
    assert [type(layer) for layer in clone.layers] == [keras.layers.Dense] * 2
    check_module_contract(make, {"inputs": INPUTS}, tmp_path)


def test_equals_texar_pytorch():
    with np.load(FIXTURES / "modules33_feed_forward_network.npz") as data:
        fixture = {key: data[key] for key in data.files}
    texar = json.loads(str(fixture["hparams_json"]))
    sizes = [spec["kwargs"]["out_features"] for spec in texar["layers"] if spec["type"] == "Linear"]
    network = FeedForwardNetwork(
        hparams={
            "layers": [
                {"type": "Dense", "kwargs": {"units": sizes[0], "activation": "tanh"}},
                {"type": "Dense", "kwargs": {"units": sizes[1]}},
            ]
        }
    )
    network(fixture["inputs"])
    for layer, index in zip(network.layers, (0, 2), strict=True):
        layer.kernel.assign(fixture[f"w/_layers.{index}.weight"].T)
        layer.bias.assign(fixture[f"w/_layers.{index}.bias"])
    np.testing.assert_allclose(network(fixture["inputs"]).numpy(), fixture["outputs"], atol=1e-5)


@pytest.mark.parametrize(
    "hparams, key",
    [
        ({"layers": [{"type": "Dense", "kwargs": {"unitz": 3}}]}, "layers.0.kwargs"),
        ({"layers": [{"type": "Flatten"}, {"type": "Adam"}]}, "layers.1"),
        ({"layers": [{"type": "NoSuchLayer"}]}, "layers.0.type"),
    ],
)
def test_bad_layers_name_the_key(hparams, key):
    with pytest.raises(HParamsError) as error:
        FeedForwardNetwork(hparams=hparams)
    assert error.value.path.startswith(key), error.value.path


def test_layers_and_hparams_layers_together_are_refused():
    with pytest.raises(HParamsError, match="not both"):
        FeedForwardNetwork(layers=[keras.layers.Dense(2)], hparams={"layers": LAYERS})
    with pytest.raises(ValueError, match=r"layers\[0\]"):
        FeedForwardNetwork(layers=["Dense"])
