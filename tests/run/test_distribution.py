import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.configurable import hparams_paths
from texkit.run.distribution import DISTRIBUTION_HPARAMS_DOC


def test_every_distribution_hparam_is_documented():
    assert set(hparams_paths(tx.run.default_distribution_hparams())) == set(
        DISTRIBUTION_HPARAMS_DOC
    )


def test_strategy_types():
    assert tx.run.strategy_from_hparams(None) is tf.distribute.get_strategy()
    one = tx.run.strategy_from_hparams({"type": "one_device", "devices": ["/cpu:1"]})
    assert isinstance(one, tf.distribute.OneDeviceStrategy)
    mirrored = tx.run.strategy_from_hparams({"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]})
    assert isinstance(mirrored, tf.distribute.MirroredStrategy)
    assert mirrored.num_replicas_in_sync == 2


@pytest.mark.parametrize(
    "hparams, path",
    [
        ({"type": "mirrorred"}, "type"),
        ({"type": "mirrored", "devices": ["/cpu:0", "/gpu:7"]}, "devices.1"),
        ({"type": "one_device", "devices": ["/cpu:0", "/cpu:1"]}, "devices"),
        ({"type": "multi_worker", "cluster": {"worker": []}}, "cluster"),
        (
            {"type": "multi_worker", "cluster": {"worker": ["127.0.0.1:1"]}, "task_index": 3},
            "task_index",
        ),
        ({"type": "multi_worker", "communication": "carrier_pigeon"}, "communication"),
        ({"typ": "default"}, "typ"),
    ],
)
def test_bad_distribution_hparams_name_the_key(hparams, path):
    with pytest.raises(tx.HParamsError) as error:
        tx.run.strategy_from_hparams(hparams)
    assert error.value.path == path, str(error.value)


def test_multi_worker_without_a_cluster_says_how_to_give_one(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(tx.HParamsError, match="TF_CONFIG") as error:
        tx.run.strategy_from_hparams({"type": "multi_worker"})
    assert error.value.path == "cluster"


@pytest.mark.parametrize("tpu, where", [("", "on this machine"), ("local", "at 'local'")])
def test_tpu_without_a_tpu_fails_at_once_with_a_clear_error(tpu, where):
    with pytest.raises(tx.HParamsError, match=f"no TPU found {where}") as error:
        tx.run.strategy_from_hparams({"type": "tpu", "tpu": tpu})
    assert error.value.path == "type" and "\n" not in str(error.value)


def _train(strategy, steps=20):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, size=(8 * steps, 6)).astype(np.int32)
    labels = (ids.sum(axis=1) % 2).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((ids, labels)).batch(8)
    with strategy.scope():
        inputs = keras.Input((6,), dtype="int32")
        embedded = tx.modules.WordEmbedder(vocab_size=50, hparams={"dim": 8})(inputs)
        logits = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(embedded))
        model = keras.Model(inputs, logits)
        model.compile(
            optimizer=tx.run.optimizer_from_hparams(
                {
                    "optimizer": {"type": "SGD"},
                    "learning_rate": 0.5,
                }
            ),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    initial = [w.numpy() for w in model.weights]
    model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # a dataset: Keras cannot shuffle it
    return initial, [w.numpy() for w in model.weights]


def test_mirrored_training_equals_single_device_training():
    start_default, end_default = _train(tx.run.strategy_from_hparams({"type": "default"}))
    start_mirrored, end_mirrored = _train(
        tx.run.strategy_from_hparams({"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]})
    )
    for a, b in zip(start_default, start_mirrored, strict=True):
        np.testing.assert_array_equal(a, b)
    moved = max(np.abs(a - b).max() for a, b in zip(start_default, end_default, strict=True))
    assert moved > 1e-3, "training should change the weights"
    for a, b in zip(end_default, end_mirrored, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
