"""Models saved by an older texkit still load and compute the same outputs.

``tests/fixtures/saved_modules/<kind>/`` holds what commit 7e4ada6 saved for each kind of module
(``make_saved_modules.py`` there says how): a ``.keras`` file, a TensorFlow object checkpoint
written as the Trainer writes one, the hparams, the weight paths and the outputs. For each kind
this test, with today's code:

* loads the ``.keras`` file (its config names classes by their registered names, so moving a
  class to another file must not matter), checks the classes and weight paths, and that the
  outputs, the ``infer_greedy`` ids and the ``beam_search`` result equal the saved ones;
* builds the modules afresh from the saved hparams, checks that the weight paths are the saved
  ones, restores the checkpoint (every checkpointed value matched and consumed, the same keys a
  checkpoint written today has) and checks the outputs again.

The checkpoints of 7e4ada6 lack the weights of the layers a module keeps in a list (Keras 3
tracks them in a ``TrackedList``, which TensorFlow's object graph skips): ``not_in_checkpoint``
in ``hparams.json`` names them, the test checks that exactly those are missing and takes them
from the ``.keras`` model before comparing outputs.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit.modules  # noqa: F401 - registers texkit's classes with Keras before loading
from tests.fixtures.saved_modules import make_saved_modules as saved

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "saved_modules")


def check_results(kind, model, expected, where):
    for name, value in saved.KINDS[kind]["inputs"].items():
        np.testing.assert_array_equal(value, expected[f"input/{name}"])
    results = saved.compute(kind, model)
    wanted = {k: v for k, v in expected.items() if not k.startswith("input/")}
    assert sorted(results) == sorted(wanted), f"{kind} ({where}): results differ in names"
    for name, value in wanted.items():
        message = f"{kind} ({where}): {name}"
        if np.issubdtype(value.dtype, np.floating):
            np.testing.assert_allclose(results[name], value, rtol=1e-6, atol=1e-6, err_msg=message)
        else:
            np.testing.assert_array_equal(results[name], value, err_msg=message)


def checkpoint_keys(model, layout, folder):
    """The keys and shapes of the ``layout`` checkpoint of ``model`` written today."""
    checkpoint, _ = saved.checkpoint_of(model, layout)
    path = checkpoint.write(os.path.join(folder, layout))
    return {name: list(shape) for name, shape in tf.train.list_variables(path)}


def without_save_counter(keys):
    return {k: v for k, v in keys.items() if not k.startswith("save_counter/")}


@pytest.mark.parametrize("kind", list(saved.KINDS))
def test_saved_module_loads_and_computes_the_same(kind, tmp_path):
    folder = os.path.join(FIXTURES, kind)
    with open(os.path.join(folder, "hparams.json")) as f:
        record = json.load(f)
    with np.load(os.path.join(folder, "expected.npz")) as data:
        expected = dict(data)

    # The .keras file: classes by registered name, weight paths, outputs.
    keras.backend.clear_session()
    loaded = keras.saving.load_model(os.path.join(folder, "model.keras"))
    classes = {layer.name: keras.saving.get_registered_name(type(layer)) for layer in loaded.layers}
    assert classes == record["classes"]
    assert {w.path: list(w.shape) for w in loaded.weights} == record["weights"]
    check_results(kind, loaded, expected, ".keras")

    # Fresh modules from the hparams, restored from each checkpoint.
    restored = saved.build_model(kind, record["modules"], seed=0)
    assert {w.path: list(w.shape) for w in restored.weights} == record["weights"]
    for layout in ("model_only", "trainer"):
        saved_layout = record["checkpoints"][layout]
        optimizer, status = saved.restore(restored, folder, layout)
        status.assert_existing_objects_matched()
        status.assert_consumed()
        keys = checkpoint_keys(restored, layout, tmp_path)
        assert without_save_counter(keys) == without_save_counter(saved_layout["keys"]), layout
        not_restored = saved.weights_differing(restored, loaded)
        assert not_restored == saved_layout["not_restored"], f"{layout}: other weights restored"
        if optimizer is not None:
            sums = saved.optimizer_sums(optimizer)
            assert sorted(sums) == sorted(record["optimizer_sums"]), "optimizer variables"
            np.testing.assert_allclose(
                [sums[k] for k in sorted(sums)],
                [record["optimizer_sums"][k] for k in sorted(sums)],
                rtol=1e-6,
                err_msg="the optimizer's restored state",
            )
    # The Trainer's checkpoint (the last restored) holds every weight.
    assert not_restored == []
    check_results(kind, restored, expected, "checkpoint")
