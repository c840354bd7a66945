"""Malformed configs for every registered texkit module: validation and construction fail only
with an ``HParamsError`` naming the key (derandomized, a capped number of examples each).

A config is malformed as a user would malform it (an unknown key, a value of any type anywhere,
a ``type`` of any name, an unknown kwarg: ``tests/test_hparams.py``'s ``malformed_configs``);
each is merged and, when the merge accepts it, the class is constructed as ``texkit hparams``
constructs it, so that its own range checks run. No other exception may escape.
"""

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from texkit import registry
from texkit.cli import _check_by_constructing
from texkit.hparams import HParams, HParamsError

from .test_hparams import malformed_configs

MODULES = sorted(
    name
    for name in registry.registered_names()
    if hasattr(registry.resolve(name), "HPARAMS_DOC")
    and registry.resolve(name).__module__.startswith("texkit.")
)


def test_every_module_is_fuzzed():
    assert len(MODULES) >= 25 and "BERTClassifier" in MODULES and "T5EncoderDecoder" in MODULES


@pytest.mark.parametrize("name", MODULES)
@settings(
    max_examples=50, deadline=None, derandomize=True, phases=[Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
@given(data=st.data())
def test_malformed_configs_of_every_module_fail_only_with_hparams_error(name, data):
    cls = registry.resolve(name)
    config, error_path = data.draw(malformed_configs(cls.default_hparams()))
    try:
        hparams = HParams(config, cls.default_hparams())
    except HParamsError as error:
        if error_path is not None:
            assert error_path in dict(error.problems), str(error)
        return
    assert error_path is None, f"accepted a config with an error at {error_path}"
    try:
        _check_by_constructing(cls, hparams)
    except HParamsError:
        pass
