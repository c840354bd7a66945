"""Every problem of a config in one error, and the hints for Texar's names.

A config is checked in full before it fails: the one ``HParamsError`` lists every problem with
its key path (the first 20 shown), so a user coming from Texar fixes a config in one run.
"""

import random

import pytest

import texkit as tx
from texkit.cli import main
from texkit.errors import MAX_LISTED, HParamsError
from texkit.hparams import HParams
from texkit.hparams.texar_names import TEXAR_KEYS, TEXAR_TYPES
from texkit.modules import AttentionRNNDecoder, Conv1DClassifier, TransformerDecoder

from .run.toy_experiment import toy_experiment  # (importing it registers the toy builders)


def problems_of(call):
    with pytest.raises(HParamsError) as caught:
        call()
    error = caught.value
    assert error.path == error.problems[0][0]
    return dict(error.problems), str(error)


def test_every_problem_of_a_module_config_at_once():
    found, text = problems_of(
        lambda: AttentionRNNDecoder(
            vocab_size=10,
            hparams={
                "rnn_cell": {"type": "LSTMCell", "kwargs": {"num_units": 8}, "num_layrs": 2},
                "attention": {"type": "LuongAttention", "kwargs": {"units": "eight"}},
                "output_layer_bias": "yes",
                "max_decoding_length_train": 20,
            },
        )
    )
    assert set(found) == {
        "rnn_cell.kwargs.num_units",
        "rnn_cell.num_layrs",
        "output_layer_bias",
        "max_decoding_length_train",
    }
    assert text.startswith("4 problems:\n")
    assert text.count("\n  hparams '") == 4
    assert "is 'units' in texkit" in found["rnn_cell.kwargs.num_units"]
    assert "did you mean 'num_layers'" in found["rnn_cell.num_layrs"]
    assert "expected bool" in found["output_layer_bias"]
    assert "max_decoding_length_infer" in found["max_decoding_length_train"]


def test_one_problem_reads_as_before():
    with pytest.raises(HParamsError) as caught:
        HParams({"dimm": 3}, {"dim": 1, "name": "x"})
    assert str(caught.value) == "hparams 'dimm': unknown key; did you mean 'dim'?"
    assert caught.value.problems == [("dimm", "unknown key; did you mean 'dim'?")]


def test_problems_in_list_items_and_nested_dicts_are_all_listed():
    defaults = {"layers": [{"dim": 1, "name": "layer"}], "inner": {"rate": 0.1}, "name": "m"}
    found, _ = problems_of(
        lambda: HParams(
            {"layers": [{"dim": "a"}, {"dim": 2}, {"dimm": 3}], "inner": {"rate": "x"}}, defaults
        )
    )
    assert set(found) == {"layers.0.dim", "layers.2.dimm", "inner.rate"}


def test_the_list_is_capped_and_counts_the_rest():
    defaults = {"dim": 1, "name": "x"}
    user = {f"unknown_{i:02d}": i for i in range(MAX_LISTED + 7)}
    with pytest.raises(HParamsError) as caught:
        HParams(user, defaults)
    text = str(caught.value)
    assert len(caught.value.problems) == MAX_LISTED + 7
    assert text.startswith(f"{MAX_LISTED + 7} problems:")
    assert text.count("hparams 'unknown_") == MAX_LISTED and text.endswith("... and 7 more")


def test_an_experiment_lists_the_problems_of_every_section():
    hparams = toy_experiment()
    hparams["model"]["hparams"] = {"embeder": {"dim": 8}}
    hparams["data"]["hparams"] = {"batch_size": "16", "allow_smaller_final_batch": True}
    hparams["optimization"]["optimizer"] = {
        "type": "AdamOptimizer",
        "kwargs": {"learning_rate": 0.1},
    }
    hparams["run"]["train_stpes"] = 3
    found, _ = problems_of(lambda: tx.run.validate_experiment(hparams))
    assert set(found) == {
        "model.hparams.embeder",
        "data.hparams.batch_size",
        "data.hparams.allow_smaller_final_batch",
        "optimization.optimizer.type",
        "run.train_stpes",
    }
    optimizer = found["optimization.optimizer.type"]
    assert "'Adam'" in optimizer and "optimization.learning_rate" in optimizer
    assert "LossScaleOptimizer" not in optimizer  # the nearest spelling, which misleads
    assert "drop_remainder" in found["data.hparams.allow_smaller_final_batch"]
    assert "did you mean 'embedder'" in found["model.hparams.embeder"]


@pytest.mark.parametrize(
    "module, hparams, path, hint",
    [
        (AttentionRNNDecoder, {"rnn_cell": {"dropout": {"input_size": [8]}}},
         "rnn_cell.dropout.input_size", "not needed: remove it"),
        (AttentionRNNDecoder, {"helper_train": {"type": "TrainingHelper"}}, "helper_train",
         "decoding_strategy="),
        (AttentionRNNDecoder, {"helper_infer": {}}, "helper_infer", "decoding_strategy="),
        (TransformerDecoder, {"use_bert_config": True}, "use_bert_config", "'norm: post'"),
        (TransformerDecoder, {"pretrained_model_name": "bert-base-uncased"},
         "pretrained_model_name", "from_pretrained"),
        (TransformerDecoder, {"loss_label_confidence": 0.9}, "loss_label_confidence",
         "label_smoothing = 1 - c"),
        (Conv1DClassifier, {"kernel_size": [3, 4, 5]}, "kernel_size", "'kernel_sizes'"),
        (AttentionRNNDecoder, {"attention": {"type": "LuongAttention",
                                             "kwargs": {"num_units": 8}}},
         "attention.kwargs.num_units", "is 'units' in texkit"),
        (AttentionRNNDecoder, {"rnn_cell": {"type": "BasicLSTMCell"}}, "rnn_cell.type",
         "'LSTMCell'"),
        (Conv1DClassifier, {"conv": {"kernel_initializer": {"type": "glorot_uniform_initializer"}}},
         None, None),
    ],
)  # fmt: skip
def test_texar_names_get_texkit_hints(module, hparams, path, hint):
    kwargs = {"vocab_size": 10} if module is not Conv1DClassifier else {}
    with pytest.raises(HParamsError) as caught:
        module(hparams=hparams, **kwargs)
    found = dict(caught.value.problems)
    if path is None:  # the key itself is unknown: one problem, wherever it sits
        assert len(found) == 1
        return
    assert path in found, found
    if hint is not None:
        assert hint in found[path], found[path]


def test_texar_initializer_and_schedule_names_point_to_keras():
    for texar, keras_name in [("truncated_normal_initializer", "TruncatedNormal"),
                              ("exponential_decay", "ExponentialDecay")]:  # fmt: skip
        defaults = {"init": {"type": "Zeros", "kwargs": {}}, "name": "x"}
        with pytest.raises(HParamsError, match=f"'{keras_name}' in texkit"):
            HParams({"init": {"type": texar}}, defaults)
        assert TEXAR_TYPES[texar] == keras_name
        assert tx.registry.resolve(keras_name) is not None


def test_every_texar_type_hint_names_something_texkit_resolves():
    for texar, texkit_name in TEXAR_TYPES.items():
        name = texkit_name.split(" ")[0]
        if name.startswith("gradient_clip"):
            continue
        assert tx.registry.resolve(name) is not None, texar
    assert all(hint for hint in TEXAR_KEYS.values())


def test_cli_prints_every_problem_in_one_message(capsys):
    assert main(["hparams", "WordEmbedder", "dimm=3", "dropout_rate=high", "nme=x"]) == 2
    err = capsys.readouterr().err
    assert "3 problems" in err and "'dimm'" in err and "'dropout_rate'" in err and "'nme'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"minval": "a"}, "Cast string to float"),
        ({"stddev": "x"}, "Cannot convert 'x'"),
        ({"mode": "bogus"}, "Invalid `mode` argument: bogus"),
    ],
)
def test_initializer_values_are_tried_when_validated_not_when_the_layer_is_built(kwargs, says):
    initializer = {"type": "TruncatedNormal" if "stddev" in kwargs else "RandomUniform"}
    if "mode" in kwargs:
        initializer = {"type": "VarianceScaling"}
    with pytest.raises(HParamsError, match=f"initializer.kwargs.*{says}") as error:
        tx.modules.WordEmbedder(
            vocab_size=10, hparams={"initializer": {**initializer, "kwargs": kwargs}}
        )
    assert error.value.path == "initializer.kwargs"
    # Values that work are kept as given (the trial's seed is not added), and the trial drew
    # nothing from Python's random state (from which Keras seeds unseeded initializers).
    state = random.getstate()
    good = {"type": "RandomUniform", "kwargs": {"minval": -0.5, "maxval": 0.5}}
    merged = HParams({"initializer": good}, tx.modules.WordEmbedder.default_hparams())
    assert random.getstate() == state
    assert merged.initializer.kwargs.todict() == {"minval": -0.5, "maxval": 0.5, "seed": None}
