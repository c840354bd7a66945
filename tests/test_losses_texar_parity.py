"""texkit's sequence-level losses against Texar-PyTorch 0.1.4 on the same inputs.

The reference outputs are in ``tests/fixtures/texar_torch/losses_rl.npz``, made by
``make_losses_rl_fixture.py`` there (see its docstring); nothing here imports torch or Texar. Each
recorded output names the function, its inputs and its keyword arguments; the test calls texkit's
function of the same name the same way and compares to 1e-5. Texar-PyTorch adds 1e-8 to the
probabilities inside its entropy, which moves these small cases by less than 1e-6.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from texkit import losses

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "texar_torch" / "losses_rl.npz"
with np.load(FIXTURE) as _data:
    DATA = {key: _data[key] for key in _data.files}
CASES = json.loads(str(DATA["cases"]))["cases"]
ATOL = 1e-5


def _discriminator(values):
    """The fixture's linear discriminator: its first output is the logit, returned first."""
    outputs = tf.matmul(values, DATA["in/disc_kernel"]) + DATA["in/disc_bias"]
    return outputs[:, 0], outputs


def _call(name: str):
    function, _ = name.split("/")
    case = CASES[name]
    kwargs = dict(case["kwargs"])
    args = {}
    for argument, input_name in case["inputs"].items():
        value = DATA[f"in/{input_name}"]
        if kwargs.get("time_major") and argument != "sequence_length":
            value = np.swapaxes(value, 0, 1)
        args[argument] = tf.constant(value)
    if function == "binary_adversarial_losses":
        g_loss, d_loss = losses.binary_adversarial_losses(
            discriminator_fn=_discriminator, **args, **kwargs
        )
        return g_loss if name.endswith("_g") else d_loss
    return getattr(losses, function)(**args, **kwargs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_equal_to_texar_pytorch(name):
    actual = _call(name).numpy()
    expected = DATA[f"out/{name}"]
    assert actual.dtype == np.float32
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=ATOL)


def test_the_fixture_covers_every_function_and_flag():
    functions = {name.split("/")[0] for name in CASES}
    assert functions == {
        "binary_adversarial_losses",
        "discount_reward",
        "entropy_with_logits",
        "pg_loss_with_log_probs",
        "pg_loss_with_logits",
        "sequence_entropy_with_logits",
    }
    flags = {key for case in CASES.values() for key in case["kwargs"]}
    for what in ("batch", "timesteps", "remaining"):
        assert {f"average_across_{what}", f"sum_over_{what}"} <= flags
    assert {"time_major", "batched", "discount", "mode"} <= flags
