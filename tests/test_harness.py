"""The harness must be able to fail: modules that break the contract are caught."""

import keras
import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit.modules import WordEmbedder

IDS = np.arange(10, dtype=np.int32).reshape(2, 5)


class PeeksAtPadding(WordEmbedder):
    def call(self, ids=None, soft_ids=None, training=None):
        outputs = super().call(ids, soft_ids, training)
        return outputs + keras.ops.mean(outputs, axis=1, keepdims=True)


class ForgetsItsConfig(WordEmbedder):
    def get_config(self):
        config = super().get_config()
        config["hparams"] = {**config["hparams"], "dim": 3}
        return config


class IgnoresMixedPrecision(WordEmbedder):
    def call(self, ids=None, soft_ids=None, training=None):
        return keras.ops.cast(super().call(ids, soft_ids, training), "float32")


def test_catches_a_module_that_reads_padding(tmp_path):
    with pytest.raises(AssertionError, match="padding"):
        check_module_contract(
            lambda **kw: PeeksAtPadding(20, hparams={"dim": 4}, **kw),
            {"ids": IDS},
            tmp_path,
            sequence_inputs={"ids": 1},
            lengths=np.array([2, 5]),
            output_time_axes=1,
        )


def test_catches_a_config_that_does_not_round_trip(tmp_path):
    with pytest.raises(AssertionError, match="changed the hparams"):
        check_module_contract(
            lambda **kw: ForgetsItsConfig(20, hparams={"dim": 4}, **kw), {"ids": IDS}, tmp_path
        )


def test_catches_outputs_outside_the_mixed_precision_policy(tmp_path):
    with pytest.raises(AssertionError, match="bfloat16"):
        check_module_contract(
            lambda **kw: IgnoresMixedPrecision(20, hparams={"dim": 4}, **kw), {"ids": IDS}, tmp_path
        )


class BreaksInTraining(WordEmbedder):
    def call(self, ids=None, soft_ids=None, training=None):
        outputs = super().call(ids, soft_ids, training)
        if training:
            return keras.ops.log(outputs * 0.0 - 1.0)  # NaN
        return outputs


def test_catches_a_module_that_fails_in_training_mode(tmp_path):
    with pytest.raises(AssertionError, match="training"):
        check_module_contract(
            lambda **kw: BreaksInTraining(20, hparams={"dim": 4}, **kw), {"ids": IDS}, tmp_path
        )
