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

A layer removed on purpose since then (``DROPPED``) is checked to be absent, its saved values
unused; the Trainer checkpoint of such a kind is checked to be refused.
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
            # Recorded on another machine: float32 rounding of values of this scale (1.4e-6
            # seen on T5 logits of scale 1.7 between CPUs with and without AVX-512).
            atol = 1e-6 * max(1.0, float(np.abs(value).max()))
            np.testing.assert_allclose(results[name], value, rtol=1e-6, atol=atol, err_msg=message)
        else:
            np.testing.assert_array_equal(results[name], value, err_msg=message)


def checkpoint_keys(model, layout, folder):
    """The keys and shapes of the ``layout`` checkpoint of ``model`` written today."""
    checkpoint, _ = saved.checkpoint_of(model, layout)
    path = checkpoint.write(os.path.join(folder, layout))
    return {name: list(shape) for name, shape in tf.train.list_variables(path)}


def without_save_counter(keys):
    return {k: v for k, v in keys.items() if not k.startswith("save_counter/")}


# Layers that today's code no longer creates, on purpose, by kind. A BERTClassifier whose
# clas_strategy does not read the pooled output has no pooler (no weight goes untrained): its
# .keras file and model-only checkpoint load and compute the same, the pooler's values unused; a
# Trainer checkpoint, whose optimizer lists the variables by position, no longer restores.
DROPPED = {"bert_classifier": "pooler"}


def without(keys, layer):
    return {k: v for k, v in keys.items() if layer is None or f"/{layer}/" not in k}


@pytest.mark.parametrize("kind", list(saved.KINDS))
def test_saved_module_loads_and_computes_the_same(kind, tmp_path):
    folder = os.path.join(FIXTURES, kind)
    with open(os.path.join(folder, "hparams.json")) as f:
        record = json.load(f)
    with np.load(os.path.join(folder, "expected.npz")) as data:
        expected = dict(data)

    # The .keras file: classes by registered name, weight paths, outputs.
    keras.backend.clear_session(free_memory=False)  # a full gc.collect() takes seconds here
    loaded = keras.saving.load_model(os.path.join(folder, "model.keras"))
    classes = {layer.name: keras.saving.get_registered_name(type(layer)) for layer in loaded.layers}
    assert classes == record["classes"]
    dropped = DROPPED.get(kind)
    weights = without(record["weights"], dropped)
    assert {w.path: list(w.shape) for w in loaded.weights} == weights
    check_results(kind, loaded, expected, ".keras")

    # Fresh modules from the hparams, restored from each checkpoint.
    restored = saved.build_model(kind, record["modules"], seed=0)
    assert {w.path: list(w.shape) for w in restored.weights} == weights
    for layout in ("model_only", "trainer"):
        saved_layout = record["checkpoints"][layout]
        if dropped and layout == "trainer":
            with pytest.raises(ValueError, match="incompatible tensor"):
                saved.restore(restored, folder, layout)
            restore_model_only(restored, loaded, folder, saved_layout)
            break
        optimizer, status = saved.restore(restored, folder, layout)
        status.assert_existing_objects_matched()
        if dropped:
            status.expect_partial()  # the dropped layer's values
        else:
            status.assert_consumed()
        keys = without(checkpoint_keys(restored, layout, tmp_path), dropped)
        saved_keys = without(saved_layout["keys"], dropped)
        assert without_save_counter(keys) == without_save_counter(saved_keys), layout
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
    assert not_restored == [] or dropped
    check_results(kind, restored, expected, "checkpoint")


def restore_model_only(model, loaded, folder, trainer_layout):
    """Restores the model-only checkpoint into ``model`` and takes the weights it lacks from
    ``loaded`` (what the Trainer's checkpoint would have given)."""
    saved.restore(model, folder, "model_only")[1].assert_existing_objects_matched().expect_partial()
    values = {w.path: w for w in loaded.weights}
    for weight in model.weights:
        if weight.path not in trainer_layout["not_restored"]:
            weight.assign(values[weight.path])
