"""Texar configs to texkit: the model sections of Texar's three example configs.

The configs are those of ``tests/test_texar_configs.py`` (the values of Texar's example config
modules), read as ``texkit migrate`` reads them; here each module's part is translated alone,
as Texar's scripts pass them to its modules. Each migrates with no edits,
validates against texkit's class, builds and runs; the changes that alter meaning are reported.
"""

import pathlib
import tempfile

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.hparams import HParams, HParamsError, from_texar, optimization_from_texar
from texkit.modules import (
    AttentionRNNDecoder,
    BidirectionalRNNEncoder,
    Conv1DClassifier,
    TransformerDecoder,
    TransformerEncoder,
    WordEmbedder,
)
from texkit.run.optimization import default_optimization_hparams
from texkit.run.texar_configs import load_texar_config

from .test_texar_configs import KIM as KIM_SOURCE
from .test_texar_configs import SEQ2SEQ_ATTN as SEQ2SEQ_ATTN_SOURCE
from .test_texar_configs import TRANSFORMER as TRANSFORMER_SOURCE


def variables_of(source):
    """The variables of a Texar config file holding ``source``."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "config_model.py"
        path.write_text(source)
        return load_texar_config(path)


NUM_UNITS, HIDDEN = 256, 512
SEQ2SEQ = variables_of(SEQ2SEQ_ATTN_SOURCE)
TRANSFORMER = variables_of(TRANSFORMER_SOURCE)
KIM = variables_of(KIM_SOURCE)


def notes(changes):
    return {change.path: change for change in changes}


def test_seq2seq_attn_config_migrates_and_runs():
    embedder = WordEmbedder(vocab_size=20, hparams=from_texar(SEQ2SEQ["embedder"], WordEmbedder)[0])
    encoder_hp, encoder_changes = from_texar(SEQ2SEQ["encoder"], BidirectionalRNNEncoder)
    assert encoder_hp["rnn_cell_fw"]["kwargs"] == {"units": NUM_UNITS}
    decoder_hp, decoder_changes = from_texar(SEQ2SEQ["decoder"], AttentionRNNDecoder)
    assert decoder_hp["attention"]["kwargs"] == {"units": NUM_UNITS}
    assert "use_attention_layer" not in decoder_hp["attention"]  # a layer size: Texar had one
    assert "units" in notes(decoder_changes)["rnn_cell.kwargs.num_units"].note
    encoder = BidirectionalRNNEncoder(hparams=encoder_hp)
    decoder = AttentionRNNDecoder(vocab_size=20, hparams=decoder_hp)
    ids = tf.constant([[3, 4, 5, 0], [6, 7, 8, 9]])
    lengths = tf.constant([3, 4])
    outputs, _ = encoder(embedder(ids), sequence_length=lengths)
    memory = tf.concat(outputs, -1)
    result, _, _ = decoder(
        inputs=embedder(ids), sequence_length=lengths, memory=memory,
        memory_sequence_length=lengths,
    )  # fmt: skip
    assert result.logits.shape == (2, 4, 20)
    opt, opt_changes = optimization_from_texar(SEQ2SEQ["opt"])
    assert opt == {"optimizer": {"type": "Adam", "kwargs": {}}, "learning_rate": 0.001}
    HParams(opt, default_optimization_hparams())
    assert "optimization.learning_rate" in notes(opt_changes)["optimizer.kwargs.learning_rate"].note


def test_transformer_config_migrates_and_runs():
    emb_hp, emb_changes = from_texar(TRANSFORMER["emb"], WordEmbedder)
    assert emb_hp["initializer"] == {
        "type": "RandomNormal",
        "kwargs": {"mean": 0.0, "stddev": HIDDEN**-0.5},
    }
    encoder_hp, changes = from_texar(TRANSFORMER["encoder"], TransformerEncoder)
    assert encoder_hp["poswise_feedforward"] == {"dim": 2048, "activation": "relu"}
    assert encoder_hp["initializer"]["type"] == "VarianceScaling"
    assert "output_dim" not in encoder_hp["multihead_attention"]
    assert set(notes(changes)) >= {
        "initializer.type",
        "multihead_attention.output_dim",
        "poswise_feedforward",
    }
    decoder_hp, _ = from_texar(TRANSFORMER["decoder"], TransformerDecoder)
    small = {"dim": 16, "num_blocks": 1, "poswise_feedforward": {"dim": 32}}
    small["multihead_attention"] = {"num_heads": 2}
    encoder = TransformerEncoder(hparams={**encoder_hp, **small})
    decoder = TransformerDecoder(vocab_size=11, hparams={**decoder_hp, **small})
    x = tf.random.stateless_normal((2, 5, 16), seed=(1, 2))
    memory = encoder(x, sequence_length=tf.constant([5, 3]))
    logits = decoder(inputs=x, sequence_length=tf.constant([5, 4]), memory=memory,
                     memory_sequence_length=tf.constant([5, 3]))[0].logits  # fmt: skip
    assert logits.shape == (2, 5, 11) and np.isfinite(logits.numpy()).all()
    opt, _ = optimization_from_texar(TRANSFORMER["opt"])
    assert opt["optimizer"] == {
        "type": "Adam",
        "kwargs": {"epsilon": 1e-9, "beta_1": 0.9, "beta_2": 0.997},
    }
    HParams(opt, default_optimization_hparams())


def test_kim_config_migrates_and_runs():
    hparams, changes = from_texar(KIM["clas"], Conv1DClassifier)
    assert hparams["kernel_sizes"] == [3, 4, 5] and hparams["pooling"] == "max"
    assert "dropout_conv" not in hparams and hparams["dropout_rate"] == 0.5
    assert "pooled features" in notes(changes)["dropout_conv"].note
    embedder = WordEmbedder(vocab_size=30, hparams=from_texar(KIM["emb"], WordEmbedder)[0])
    classifier = Conv1DClassifier(hparams=hparams)
    logits, _ = classifier(embedder(tf.constant([[1, 2, 3, 4, 5, 6]])))
    assert logits.shape == (1, 2)
    opt, _ = optimization_from_texar(KIM["opt"])  # Texar's defaults: Adam at 0.001
    assert opt["optimizer"]["type"] == "Adam" and opt["learning_rate"] == 0.001


def test_texar_defaults_texkit_does_not_share_are_made_explicit():
    hparams, changes = from_texar({"attention": {"kwargs": {"num_units": 8}}}, AttentionRNNDecoder)
    assert hparams["attention"]["use_attention_layer"] is False
    assert "learns far better" in notes(changes)["attention.attention_layer_size"].note


def test_semantic_changes_are_reported():
    _, changes = from_texar(
        {"loss_label_confidence": 0.9, "allow_smaller_final_batch": True, "files": "a.txt",
         "rnn_cell": {"dropout": {"input_size": [8]}}, "use_bert_config": True,
         "init": {"type": "variance_scaling_initializer", "kwargs": {"distribution": "normal"}}}
    )  # fmt: skip
    found = notes(changes)
    assert "label_smoothing=0.1" in found["loss_label_confidence"].note
    assert "V - 1" in found["loss_label_confidence"].note
    assert found["allow_smaller_final_batch"].texkit is False
    assert found["files"].texkit == ["a.txt"]
    assert found["rnn_cell.dropout.input_size"].texkit is None
    assert found["use_bert_config"].texkit == "post"
    assert found["init.kwargs.distribution"].texkit == "truncated_normal"


def test_what_texkit_cannot_express_is_an_error_naming_the_key():
    with pytest.raises(HParamsError, match="'dropout_conv'"):
        from_texar({"num_conv_layers": 2, "dropout_conv": [0]}, Conv1DClassifier)
    bad_poswise = {"poswise_feedforward": {"layers": [{"type": "Dense", "kwargs": {}}]}}
    with pytest.raises(HParamsError, match="'poswise_feedforward'"):
        from_texar(bad_poswise, TransformerEncoder)
    with pytest.raises(HParamsError, match="gradient_noise_scale"):
        optimization_from_texar({"gradient_noise_scale": 0.1})
    # What is left after translation is validated, every problem at once.
    with pytest.raises(HParamsError, match="2 problems"):
        from_texar({"dimm": 3, "dropout_rat": 0.1}, WordEmbedder)


def test_from_texar_is_reachable_as_documented():
    assert tx.hparams.from_texar is from_texar
