import keras
import numpy as np
import pytest

import texkit as tx
from texkit.configurable import hparams_paths, undocumented_hparams
from texkit.modules import ModuleBase, WordEmbedder


class ScaledDense(ModuleBase):
    """A user module: a dense layer whose output is scaled.

    Call arguments:
        inputs: ``[..., features]``.
    """

    HPARAMS_DOC = {
        "units": "Output size.",
        "scale": "Multiplier of the output.",
        "activation": "Activation name.",
        "initializer": "Kernel initializer.",
        "name": "Layer name.",
    }

    @classmethod
    def default_hparams(cls):
        return {
            "units": 4,
            "scale": 1.0,
            "activation": "relu",
            "initializer": {"type": "GlorotUniform", "kwargs": {"seed": None}},
            "name": "scaled_dense",
        }

    def __init__(self, hparams=None, **kwargs):
        super().__init__(hparams, **kwargs)
        self.dense = keras.layers.Dense(
            self.hparams.units,
            activation=tx.core.get_activation(self.hparams.activation),
            kernel_initializer=tx.core.get_initializer(self.hparams.initializer),
        )

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, inputs, training=None):
        return self.dense(inputs) * self.hparams.scale


def test_hparams_are_merged_validated_and_read_only():
    layer = ScaledDense({"units": 3, "scale": 2})
    assert layer.hparams.units == 3 and layer.hparams.scale == 2.0
    assert isinstance(layer.hparams.scale, float)
    assert layer.hparams.activation == "relu"
    with pytest.raises(AttributeError):
        layer.hparams.units = 5
    with pytest.raises(tx.HParamsError) as error:
        ScaledDense({"unit": 3})
    assert error.value.path == "unit" and "units" in str(error.value)
    with pytest.raises(tx.HParamsError) as error:
        ScaledDense({"initializer": {"type": "GlorotUniform", "kwargs": {"stddev": 1.0}}})
    assert error.value.path == "initializer.kwargs.stddev"


def test_name_comes_from_hparams_and_keras_kwarg_wins():
    assert ScaledDense({"name": "head"}).name == "head"
    layer = ScaledDense(name="other")
    assert layer.name == "other" and layer.hparams.name == "other"


def test_docstring_table_is_generated_from_the_defaults():
    for path in hparams_paths(ScaledDense.default_hparams()):
        assert f"{path} = " in ScaledDense.__doc__
    assert "Multiplier of the output." in ScaledDense.__doc__
    assert undocumented_hparams(ScaledDense) == ([], [])

    class Undocumented(ScaledDense):
        """No docs for the new key."""

        @classmethod
        def default_hparams(cls):
            return {**super().default_hparams(), "extra": 1}

    assert undocumented_hparams(Undocumented) == (["extra"], [])
    assert "(undocumented)" in Undocumented.__doc__


def test_model_of_modules_saves_and_loads(tmp_path):
    ids = keras.Input((5,), dtype="int32")
    embedded = WordEmbedder(vocab_size=11, hparams={"dim": 6})(ids)
    outputs = ScaledDense({"units": 2, "scale": 3.0})(embedded)
    model = keras.Model(ids, outputs)
    batch = np.arange(10, dtype=np.int32).reshape(2, 5)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded(batch), model(batch), atol=1e-6)
    dense = next(layer for layer in loaded.layers if isinstance(layer, ScaledDense))
    assert dense.hparams.scale == 3.0 and dense.hparams.units == 2


def test_config_is_plain_data_for_json():
    import json

    config = ScaledDense({"units": 2}).get_config()
    assert json.loads(json.dumps(config))["hparams"]["units"] == 2


def test_model_of_modules_exports_a_saved_model(tmp_path):
    import tensorflow as tf

    ids = keras.Input((5,), dtype="int32")
    lengths = keras.Input((), dtype="int32")
    embedded = WordEmbedder(vocab_size=11, hparams={"dim": 6})(ids)
    positions = tx.modules.SinusoidsPositionEmbedder(hparams={"dim": 6})(
        sequence_length=lengths, max_time=5
    )
    model = keras.Model([ids, lengths], ScaledDense({"units": 2})(embedded + positions))
    batch = [np.arange(10, dtype=np.int32).reshape(2, 5), np.array([5, 2], np.int32)]
    model.export(str(tmp_path / "serving"), verbose=False)
    restored = tf.saved_model.load(str(tmp_path / "serving"))
    np.testing.assert_allclose(restored.serve(batch), model(batch), atol=1e-6)


def test_same_named_user_classes_in_two_modules_do_not_overwrite_each_other():
    def make(module_name):
        namespace = {
            "__module__": module_name,
            "default_hparams": classmethod(lambda cls: {"name": "enc"}),
        }
        return type("Encoder", (ModuleBase,), namespace)

    first, second = make("userpkg.a"), make("userpkg.b")
    assert keras.saving.get_registered_object("userpkg.a>Encoder") is first
    assert keras.saving.get_registered_object("userpkg.b>Encoder") is second
