"""texkit.core.dropout.dropout: the one dropout every module goes through."""

import ast
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.core.dropout import dropout

TEXKIT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "texkit")


def test_identity_outside_training_and_at_rate_zero():
    x = tf.random.normal([4, 5])
    seed = keras.random.SeedGenerator(0)
    for training, rate in ((False, 0.5), (None, 0.5), (True, 0.0)):
        assert dropout(x, rate, training, seed) is x


@pytest.mark.parametrize("noise_shape", [None, (200, 1)])
def test_inverted_dropout_keeps_the_expectation(noise_shape):
    x = tf.ones([200, 300])
    rate = 0.3
    y = dropout(x, rate, True, keras.random.SeedGenerator(1), noise_shape).numpy()
    kept = y != 0
    # Kept values are scaled by 1 / (1 - rate); the kept fraction is 1 - rate within 5 sigma.
    np.testing.assert_allclose(y[kept], 1 / (1 - rate), rtol=1e-6)
    draws = x.shape[0] if noise_shape else x.shape[0] * x.shape[1]
    sigma = np.sqrt(rate * (1 - rate) / draws)
    assert abs(kept.mean() - (1 - rate)) < 5 * sigma
    if noise_shape:  # one draw per row, shared along the row
        assert ((kept == kept[:, :1]).all(axis=1)).all()


def test_no_module_drops_out_any_other_way():
    # Every dropout in texkit goes through texkit.core.dropout (which uses the two below).
    calls = []
    for root, _, files in os.walk(TEXKIT):
        for name in files:
            path = os.path.normpath(os.path.join(root, name))
            if not name.endswith(".py") or path.endswith(("core/dropout.py", "core/fused.py")):
                continue
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                if isinstance(node, ast.Attribute) and node.attr == "dropout":
                    owner = node.value
                    if isinstance(owner, ast.Attribute) and owner.attr in ("random", "fused"):
                        calls.append(f"{path}:{node.lineno}")
                    if isinstance(owner, ast.Name) and owner.id in ("fused", "nn"):
                        calls.append(f"{path}:{node.lineno}")
                if isinstance(node, ast.Attribute) and node.attr == "Dropout":
                    calls.append(f"{path}:{node.lineno}")
    assert not calls, "use texkit.core.dropout.dropout instead:\n" + "\n".join(calls)
