"""Every TPU config of the examples passes the full pre-flight, so that none of them rots.

No TPU is reachable here: each ``examples/*/config_tpu.yaml`` runs under ``mirrored`` on the 2
logical CPUs of tests/conftest.py as a stand-in, with its ``gs://`` paths replaced by local ones
(the real MiniLM checkpoint for a pretrained folder, a temporary folder for the rest). The
pre-flight is what ``texkit train`` does before its first step (validation, data, model and
optimizer built under the strategy, the writable model_dir) plus ``check_static_shapes``, which
compiles each replica's step with XLA as the TPU would.
"""

import glob
import os

import pytest

import texkit as tx
from texkit.run.trainer import check_writable_folder

from ..real_data import BBC_NEWS, MINILM, minilm_folder, require_package

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "examples", "*", "config_tpu.yaml")))
INCLUDES = {"bert_classifier": "examples.bert_classifier.train"}


def _localize(value, path, tmp_path):
    """``value`` with every gs:// path replaced by a local one."""
    if isinstance(value, dict):
        return {k: _localize(v, f"{path}.{k}", tmp_path) for k, v in value.items()}
    if isinstance(value, list):
        return [_localize(v, f"{path}.{i}", tmp_path) for i, v in enumerate(value)]
    if isinstance(value, str) and value.startswith("gs://"):
        if path.endswith("pretrained"):
            return minilm_folder()
        return str(tmp_path / path.strip(".").replace(".", "_"))
    return value


def test_there_is_a_tpu_config():
    assert CONFIGS, "examples/*/config_tpu.yaml"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: os.path.basename(os.path.dirname(c)))
def test_a_tpu_config_passes_the_pre_flight_under_a_stand_in_strategy(config, tmp_path):
    require_package(MINILM)
    require_package(BBC_NEWS)
    example = os.path.basename(os.path.dirname(config))
    __import__(INCLUDES[example])  # registers the example's builders, as --include does
    # Read as texkit train reads it (YAML 1.2 numbers such as 5e-5 included).
    hparams = _localize(tx.HParams.from_yaml(config, None).todict(), "", tmp_path)
    assert hparams["distribution"]["type"] == "tpu"
    assert hparams["run"]["model_dir"].startswith(str(tmp_path))
    # The stand-in: mirrored on 2 CPUs. Keras' own XLA flag is left to Keras there (it cannot
    # compile a step over 2 devices; a TPU compiles the step itself); check_static_shapes
    # compiles each replica's step with XLA regardless.
    hparams["distribution"] = {"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}
    hparams["run"]["jit_compile"] = None
    trainer = tx.run.Trainer.from_hparams(hparams)
    check_writable_folder(trainer.hparams.run.model_dir, "run.model_dir")
    hlo = trainer.check_static_shapes()
    data = trainer.hparams.data.hparams
    per_replica = data.batch_size // 2
    assert f"s32[{per_replica},{data.max_seq_length}]" in hlo
    assert trainer.hparams.run.precision == "mixed_bfloat16"
    assert "bf16[" in hlo  # the step computes in bfloat16
