"""Values that a config may not hold, refused with the key's path before anything is built:
non-finite rates, layer counts and sizes no model has, nesting no config has."""

import math

import pytest

import texkit as tx
from texkit.cli import main
from texkit.errors import MAX_DEPTH
from texkit.hparams import HParams, HParamsError
from texkit.hparams.core import MAX_LAYERS, MAX_SIZE
from texkit.hparams.yaml_format import safe_load

from .run.toy_experiment import toy_experiment


def nested(depth):
    config = node = {}
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return config


def test_nesting_deeper_than_any_config_is_one_error_not_a_crash():
    with pytest.raises(HParamsError, match=f"deeper than {MAX_DEPTH} levels"):
        HParams(nested(3000), {"a": {}, "name": "x"})
    HParams(nested(MAX_DEPTH - 1), {"a": {}, "name": "x"})  # as deep as allowed
    deep_yaml = "{a: " * 3000 + "1" + "}" * 3000
    with pytest.raises(Exception, match=f"nested deeper than {MAX_DEPTH} levels"):
        safe_load(deep_yaml)
    lists = "[" * 3000 + "]" * 3000
    with pytest.raises(Exception, match="nested deeper"):
        safe_load(lists)


def test_the_cli_reports_a_deep_yaml_file_in_one_line(tmp_path, capsys):
    config = tmp_path / "deep.yaml"
    config.write_text("{a: " * 3000 + "1" + "}" * 3000)
    assert main(["train", str(config)]) == 2
    err = capsys.readouterr().err
    assert "nested deeper" in err and "Traceback" not in err and str(config) in err


def experiment_with(section, key, value):
    hparams = toy_experiment()
    hparams.setdefault(section, {})[key] = value
    return hparams


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("optimization", "learning_rate", math.nan),
        ("optimization", "learning_rate", math.inf),
        ("optimization", "learning_rate", -0.1),
        ("optimization", "gradient_accumulation_steps", 10**12),
        ("optimization", "gradient_accumulation_steps", 0),
        ("distribution", "type", "bogus"),
        ("distribution", "communication", "carrier_pigeon"),
    ],
)
def test_experiment_values_are_checked_before_anything_runs(section, key, value):
    with pytest.raises(HParamsError) as caught:
        tx.run.validate_experiment(experiment_with(section, key, value))
    assert caught.value.path == f"{section}.{key}"


def test_gradient_clip_value_must_be_finite():
    hparams = toy_experiment()
    hparams["optimization"]["gradient_clip"] = {"mode": "global_norm", "value": math.inf}
    with pytest.raises(HParamsError, match="finite"):
        tx.run.validate_experiment(hparams)


def test_paths_keep_their_prefix_once():
    hparams = experiment_with("run", "metrics", [{"type": "builtins.eval"}])
    with pytest.raises(HParamsError) as caught:
        tx.run.validate_experiment(hparams)
    assert caught.value.path == "run.metrics.0.type"
    hparams = {**toy_experiment(), "model": {"type": "no_such_builder"}}
    with pytest.raises(HParamsError) as caught:
        tx.run.validate_experiment(hparams)
    assert str(caught.value).count("hparams") == 1 and caught.value.path == "model.type"


def test_non_finite_epsilons_are_refused():
    with pytest.raises(HParamsError, match="layer_norm_epsilon"):
        tx.modules.TransformerEncoder({"layer_norm_epsilon": math.inf})
    with pytest.raises(HParamsError, match="layer_norm_epsilon"):
        tx.modules.TransformerEncoder({"layer_norm_epsilon": math.nan})


@pytest.mark.parametrize(
    "make, path",
    [
        (lambda n: tx.modules.TransformerEncoder({"num_blocks": n}), "num_blocks"),
        (lambda n: tx.modules.UnidirectionalRNNEncoder({"rnn_cell": {"num_layers": n}}),
         "rnn_cell.num_layers"),
        (lambda n: tx.modules.Conv1DClassifier({"num_conv_layers": n}), "num_conv_layers"),
    ],
)  # fmt: skip
def test_layer_counts_no_model_has_are_refused_at_once(make, path):
    """A million layers would build for minutes; the bound still admits 48-layer models."""
    with pytest.raises(HParamsError) as caught:
        make(10**6)
    assert caught.value.path == path
    message = str(caught.value)
    assert f"at most {MAX_LAYERS}" in message or f"[0, {MAX_LAYERS}]" in message
    make(48)


def test_tables_larger_than_one_allocation_are_refused_before_building():
    with pytest.raises(ValueError, match="vocab_size=1000000000000"):
        tx.modules.WordEmbedder(vocab_size=10**12, hparams={"dim": 8})
    with pytest.raises(ValueError, match="a table of"):
        tx.modules.WordEmbedder(vocab_size=MAX_SIZE, hparams={"dim": 2})
    embedder = tx.modules.WordEmbedder(vocab_size=250_000, hparams={"dim": 1024})
    assert embedder.vocab_size == 250_000  # a real multilingual vocabulary is fine (not built)


def test_rnn_units_beyond_any_allocation_are_refused_naming_the_key():
    with pytest.raises(HParamsError) as caught:
        tx.modules.UnidirectionalRNNEncoder({"rnn_cell": {"kwargs": {"units": 10**12}}})
    assert caught.value.path == "rnn_cell.kwargs.units"
