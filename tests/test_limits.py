"""Values that a config may not hold, refused with the key's path before anything is built:
non-finite rates, layer counts and sizes no model has, nesting no config has."""

import math

import numpy as np
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


def test_the_depth_error_names_the_path_where_the_limit_was_passed():
    with pytest.raises(HParamsError) as caught:
        HParams({"encoder": {"layers": [nested(500)]}}, None)
    # The path starts where the user's keys do and elides the middle: it is MAX_DEPTH keys long.
    assert caught.value.path.startswith("encoder.layers.0.a")
    assert "more levels" in caught.value.path and len(str(caught.value)) < 200
    parts = caught.value.path.split(".")
    elided = int(caught.value.path.split("(")[1].split()[0])
    assert len([p for p in parts if "more levels" not in p and p]) + elided == MAX_DEPTH


def test_a_module_refuses_deep_hparams_before_keras_walks_them():
    # Keras' Layer.__new__ flattens the constructor's arguments recursively; 1,000 levels would
    # end there in a RecursionError.
    with pytest.raises(HParamsError) as caught:
        tx.modules.WordEmbedder(vocab_size=10, hparams={"dim": 4, "extra": nested(1000)})
    assert caught.value.path.startswith("extra.a.a")
    with pytest.raises(ValueError, match="the argument init_value nests deeper than 64 levels"):
        tx.modules.WordEmbedder(vocab_size=10, init_value=nested(1000))


# (module constructor, the key named, a value past the bound, a real model's value)
WIDTHS = [
    (lambda v: tx.modules.WordEmbedder(vocab_size=8, hparams={"dim": v}), "dim", 10**9, 12288),
    (lambda v: tx.modules.SinusoidsPositionEmbedder(hparams={"dim": v}), "dim", 10**9, 12288),
    (lambda v: tx.modules.TransformerEncoder({"dim": v}), "dim", 10**7, 12288),
    (lambda v: tx.modules.TransformerEncoder({"poswise_feedforward": {"dim": v}}),
     "poswise_feedforward.dim", 10**7, 73728),
    (lambda v: tx.core.attention.MultiHeadAttention({"num_units": v, "output_dim": 8}), "num_units",
     10**7, 8192),
    (lambda v: tx.modules.Conv1DClassifier({"filters": v}), "filters", 10**7, 4096),
    # An RNN cell's recurrent kernel is units x units.
    (lambda v: tx.modules.UnidirectionalRNNEncoder({"rnn_cell": {"kwargs": {"units": v}}}),
     "rnn_cell.kwargs.units", 50_000, 8192),
    # Tables and buffers: rows x dim values.
    (lambda v: tx.modules.TransformerDecoder(vocab_size=8, hparams={
        "dim": 1024, "position_embedder": {"type": "sinusoids", "position_size": v}}),
     "position_embedder.position_size", 2**22, 8192),
    (lambda v: tx.modules.TransformerDecoder(vocab_size=8, hparams={
        "dim": 1024, "max_decoding_length_infer": v}), "max_decoding_length_infer", 2**22, 32768),
]  # fmt: skip


@pytest.mark.parametrize("make, path, too_big, real", WIDTHS, ids=[w[1] for w in WIDTHS])
def test_sizes_that_allocate_are_bounded_naming_the_key(make, path, too_big, real):
    """Widths past MAX_DIM and tables past MAX_ELEMENTS values are refused at construction; the
    sizes of released models are not (nothing is built here)."""
    from texkit.hparams.core import MAX_DIM, MAX_ELEMENTS

    with pytest.raises(HParamsError) as caught:
        make(too_big)
    assert caught.value.path.endswith(path), str(caught.value)
    message = str(caught.value)
    assert f"at most {MAX_DIM}" in message or f"{MAX_ELEMENTS:,}" in message, message
    make(real)


def test_a_precomputed_sinusoid_table_is_bounded_and_computed_exactly():
    from texkit.modules.embedders import sinusoid_table

    with pytest.raises(ValueError, match="position_size=4194304 x dim=1024: a table of"):
        tx.modules.SinusoidsPositionEmbedder(2**22, hparams={"dim": 1024})
    # Computed piecewise (bounded float64 intermediates), equal to the whole formula.
    embedder = tx.modules.SinusoidsPositionEmbedder(5000, hparams={"dim": 1023})
    expected = sinusoid_table(np.arange(5000), 1023, 10000.0).astype(np.float32)
    np.testing.assert_array_equal(embedder._table, expected)


def test_the_size_limits_can_be_raised(monkeypatch):
    from texkit.hparams import core

    monkeypatch.setattr(core, "MAX_ELEMENTS", 1000)
    with pytest.raises(ValueError, match="1,000; texkit.hparams.core.MAX_ELEMENTS"):
        tx.modules.SinusoidsPositionEmbedder(100, hparams={"dim": 16})
    monkeypatch.setattr(core, "MAX_DIM", 1 << 21)
    monkeypatch.setattr(core, "MAX_ELEMENTS", 1 << 22)
    assert tx.modules.WordEmbedder(vocab_size=1, hparams={"dim": 1 << 21}).dim == 1 << 21


@pytest.mark.parametrize("name", ["a." * 100_000 + "b", "Word" * 100_000, "keras." + "x" * 10**6])
def test_a_type_name_no_code_has_is_one_short_error(name):
    from texkit.registry import MAX_NAME_LENGTH

    with pytest.raises(HParamsError) as caught:
        HParams({"initializer": {"type": name}}, tx.modules.WordEmbedder.default_hparams())
    assert caught.value.path == "initializer.type"
    assert f"at most {MAX_NAME_LENGTH}" in str(caught.value) and len(str(caught.value)) < 300
