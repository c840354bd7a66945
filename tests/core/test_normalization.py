"""RMSNorm against its formula, in float32 under mixed precision, and Gemma's 1 + scale."""

import keras
import numpy as np
import pytest

from texkit.core.normalization import RMSNorm

RNG = np.random.default_rng(3)


def numpy_rms_norm(x, scale, epsilon):
    x = x.astype(np.float64)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + epsilon) * scale


@pytest.mark.parametrize("epsilon", [1e-6, 0.5])
def test_rms_norm_equals_its_formula(epsilon):
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    norm = RMSNorm(epsilon=epsilon)
    norm.build(x.shape)
    scale = RNG.normal(size=(8,)).astype("float32")
    norm.scale.assign(scale)
    assert [w.path.split("/")[-1] for w in norm.weights] == ["scale"]
    np.testing.assert_allclose(norm(x).numpy(), numpy_rms_norm(x, scale, epsilon), rtol=1e-5)


def test_unit_offset_starts_at_zero_and_scales_by_one_plus_the_weight():
    x = RNG.normal(size=(4, 6)).astype("float32")
    norm = RMSNorm(epsilon=1e-6, unit_offset=True)
    norm.build(x.shape)
    np.testing.assert_array_equal(norm.scale.numpy(), np.zeros(6))
    np.testing.assert_allclose(norm(x).numpy(), numpy_rms_norm(x, 1.0, 1e-6), rtol=1e-5)
    weight = RNG.normal(size=(6,)).astype("float32")
    norm.scale.assign(weight)
    np.testing.assert_allclose(norm(x).numpy(), numpy_rms_norm(x, 1.0 + weight, 1e-6), rtol=1e-5)


def test_mixed_precision_computes_in_float32():
    # Squares of 300 overflow float16 (max 65504); the norm must still be exact.
    x = (300.0 * np.sign(RNG.normal(size=(2, 8)))).astype("float16")
    norm = RMSNorm(dtype="mixed_float16")
    y = norm(x)
    assert norm.scale.dtype == "float32"
    assert y.dtype == "float16"
    np.testing.assert_allclose(y.numpy().astype("float32"), numpy_rms_norm(x, 1.0, 1e-6), rtol=1e-3)


def test_config_round_trip_keeps_the_options():
    norm = RMSNorm(epsilon=1e-5, unit_offset=True, name="norm")
    clone = RMSNorm.from_config(norm.get_config())
    assert (clone.epsilon, clone.unit_offset, clone.name) == (1e-5, True, "norm")


def test_saved_in_a_keras_file(tmp_path):
    inputs = keras.Input((5,))
    norm = RMSNorm(unit_offset=True)
    model = keras.Model(inputs, norm(inputs))
    norm.scale.assign(np.arange(5, dtype="float32"))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    x = RNG.normal(size=(3, 5)).astype("float32")
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)
