import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.configurable import hparams_paths
from texkit.run.optimization import OPTIMIZATION_HPARAMS_DOC


def bert_learning_rate(step, peak, decay_steps, warmup_steps, end=0.0, power=1.0):
    """The original BERT optimizer's rate, written out for one step."""
    decayed = (peak - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end
    if step < warmup_steps:
        return peak * step / warmup_steps
    return decayed


def transformer_learning_rate(step, d_model, warmup_steps):
    """Vaswani et al. (2017), eq. 3."""
    step = max(step, 1)
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def test_every_optimization_hparam_is_documented():
    assert set(hparams_paths(tx.run.default_optimization_hparams())) == set(
        OPTIMIZATION_HPARAMS_DOC
    )


@pytest.mark.parametrize("power", [1.0, 2.0])
def test_warmup_polynomial_decay_equals_the_bert_formula(power):
    optimizer = tx.run.optimizer_from_hparams(
        {
            "optimizer": {"type": "AdamW", "kwargs": {"weight_decay": 0.01}},
            "learning_rate": 5e-5,
            "learning_rate_schedule": {
                "type": "WarmupPolynomialDecay",
                "kwargs": {"warmup_steps": 10, "decay_steps": 100, "power": power},
            },
        }
    )
    schedule = optimizer._learning_rate
    for step in range(0, 120, 3):
        want = bert_learning_rate(step, 5e-5, 100, 10, power=power)
        np.testing.assert_allclose(float(schedule(step)), want, rtol=1e-5, atol=1e-12)


def test_inverse_square_root_equals_the_transformer_formula():
    d_model, warmup = 512, 4000
    optimizer = tx.run.optimizer_from_hparams(
        {
            "learning_rate": (d_model * warmup) ** -0.5,
            "learning_rate_schedule": {
                "type": "InverseSquareRootDecay",
                "kwargs": {"warmup_steps": warmup},
            },
        }
    )
    for step in [1, 10, 1000, 3999, 4000, 4001, 10000, 100000]:
        want = transformer_learning_rate(step, d_model, warmup)
        np.testing.assert_allclose(float(optimizer._learning_rate(step)), want, rtol=1e-5)


def test_keras_schedule_gets_the_learning_rate_as_its_initial_rate():
    optimizer = tx.run.optimizer_from_hparams(
        {
            "optimizer": {"type": "SGD", "kwargs": {"momentum": 0.9}},
            "learning_rate": 0.1,
            "learning_rate_schedule": {
                "type": "ExponentialDecay",
                "kwargs": {"decay_steps": 10, "decay_rate": 0.5},
            },
        }
    )
    assert isinstance(optimizer, keras.optimizers.SGD) and optimizer.momentum == 0.9
    np.testing.assert_allclose(float(optimizer._learning_rate(20)), 0.1 * 0.5**2, rtol=1e-6)


def test_schedules_survive_serialization():
    schedule = tx.run.WarmupPolynomialDecay(1e-3, decay_steps=50, warmup_steps=5)
    optimizer = keras.optimizers.Adam(learning_rate=schedule)
    clone = keras.optimizers.Adam.from_config(optimizer.get_config())
    for step in (0, 3, 5, 20, 60):
        assert float(clone._learning_rate(step)) == pytest.approx(float(schedule(step)))


def _one_sgd_step(gradient_clip, gradients):
    optimizer = tx.run.optimizer_from_hparams(
        {"optimizer": {"type": "SGD"}, "learning_rate": 1.0, "gradient_clip": gradient_clip}
    )
    variables = [keras.Variable(np.zeros_like(g)) for g in gradients]
    optimizer.apply_gradients(zip([tf.constant(g) for g in gradients], variables, strict=True))
    return [-v.numpy() for v in variables]  # with lr 1 from 0, the update is the gradient used


GRADIENTS = [np.array([3.0, 4.0], np.float32), np.array([[12.0]], np.float32)]  # norms 5, 12


def test_clipping_by_global_norm_equals_the_formula():
    applied = _one_sgd_step({"mode": "global_norm", "value": 6.5}, GRADIENTS)
    scale = 6.5 / np.sqrt(5.0**2 + 12.0**2)  # global norm 13
    for got, gradient in zip(applied, GRADIENTS, strict=True):
        np.testing.assert_allclose(got, gradient * scale, rtol=1e-6)


def test_clipping_by_norm_clips_each_gradient_alone():
    applied = _one_sgd_step({"mode": "norm", "value": 6.0}, GRADIENTS)
    np.testing.assert_allclose(applied[0], GRADIENTS[0], rtol=1e-6)  # norm 5 < 6: unchanged
    np.testing.assert_allclose(applied[1], GRADIENTS[1] * 6.0 / 12.0, rtol=1e-6)


def test_clipping_by_value_clips_each_element():
    applied = _one_sgd_step({"mode": "value", "value": 3.5}, GRADIENTS)
    np.testing.assert_allclose(applied[0], [3.0, 3.5])
    np.testing.assert_allclose(applied[1], [[3.5]])


def _regression_model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, kernel_initializer="ones")(inputs))
    return model


@pytest.mark.parametrize("optimizer_type", ["SGD", "Adam"])
def test_accumulating_two_steps_equals_one_step_of_twice_the_batch(optimizer_type):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = rng.normal(size=(16, 2)).astype(np.float32)
    results = []
    for accumulation, batch in [(2, 4), (1, 8)]:
        keras.utils.set_random_seed(0)
        model = _regression_model()
        model.compile(
            optimizer=tx.run.optimizer_from_hparams(
                {
                    "optimizer": {"type": optimizer_type},
                    "learning_rate": 0.05,
                    "gradient_accumulation_steps": accumulation,
                }
            ),
            loss="mse",
        )
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        results.append([w.numpy() for w in model.weights])
    for accumulated, large_batch in zip(*results, strict=True):
        np.testing.assert_allclose(accumulated, large_batch, atol=1e-6)


@pytest.mark.parametrize(
    "hparams, path",
    [
        (
            {"optimizer": {"type": "Adam", "kwargs": {"learning_rate": 0.1}}},
            "optimizer.kwargs.learning_rate",
        ),
        ({"optimizer": {"type": "Adam", "kwargs": {"clipnorm": 1.0}}}, "optimizer.kwargs.clipnorm"),
        ({"optimizer": {"type": "Adam", "kwargs": {"betta_1": 0.8}}}, "optimizer.kwargs.betta_1"),
        ({"optimizer": {"type": "Dense"}}, "optimizer.type"),
        ({"optimizer": {"type": "Adamm"}}, "optimizer.type"),
        ({"gradient_clip": {"mode": "l2"}}, "gradient_clip.mode"),
        ({"gradient_clip": {"mode": "norm", "value": 0}}, "gradient_clip.value"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps"),
        ({"learning_rate": -1}, "learning_rate"),
        ({"learning_rate_schedule": {"type": "Adam"}}, "learning_rate_schedule.type"),
        (
            {
                "learning_rate_schedule": {
                    "type": "InverseSquareRootDecay",
                    "kwargs": {"warmup_steps": 0},
                }
            },
            "learning_rate_schedule.kwargs",
        ),
        (
            {
                "learning_rate_schedule": {
                    "type": "CosineDecay",
                    "kwargs": {"initial_learning_rate": 1.0},
                }
            },
            "learning_rate_schedule.kwargs.initial_learning_rate",
        ),
        (
            {"learning_rate_schedule": {"kwargs": {"warmup_steps": 3}}},
            "learning_rate_schedule.kwargs",
        ),
    ],
)
def test_bad_optimization_hparams_name_the_key(hparams, path):
    with pytest.raises(tx.HParamsError) as error:
        tx.run.optimizer_from_hparams(hparams)
    assert error.value.path == path, str(error.value)
