"""examples/text_vae: its --quick mode on the Bible verses, and ``texkit migrate`` of Texar's
``vae_text`` configs onto it.

The two configs below hold the values of Texar's ``examples/vae_text/config_lstm_ptb.py`` and
``config_trans_ptb.py`` (Python modules of dicts, as Texar's are; the PTB file paths are kept and
reported as not carried: the example's data, the Bible verses, replace PTB).
"""

import os

import numpy as np
import yaml

from examples.common import bible_corpus
from examples.common.bible_translation import tokenize
from examples.text_vae import train as text_vae
from texkit.cli import main as texkit_command

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
CONFIG = os.path.join(ROOT, "examples", "text_vae", "config.yaml")

COMMON = """
dataset = "ptb"
num_epochs = 100
hidden_size = 256
enc_dropout_in = 0.
enc_dropout_out = 0.
batch_size = 32
embed_dim = 256
latent_dims = 32
lr_decay_hparams = {"init_lr": 0.001, "threshold": 2, "decay_factor": 0.5, "max_decay": 5}
enc_cell_hparams = {
    "type": "LSTMBlockCell",
    "kwargs": {"num_units": hidden_size, "forget_bias": 0.},
    "dropout": {"output_keep_prob": 1. - enc_dropout_out},
    "num_layers": 1,
}
enc_emb_hparams = {
    'name': 'lookup_table',
    "dim": embed_dim,
    "dropout_rate": enc_dropout_in,
    'initializer': {'type': 'random_normal_initializer',
                    'kwargs': {'mean': 0.0, 'stddev': embed_dim**-0.5}},
}
kl_anneal_hparams = {"warm_up": 10, "start": 0.1}
train_data_hparams = {
    "num_epochs": 1, "batch_size": batch_size, "seed": 123,
    "dataset": {"files": './simple-examples/data/ptb.train.txt',
                "vocab_file": './simple-examples/data/vocab.txt'},
}
opt_hparams = {
    "optimizer": {"type": "AdamOptimizer", "kwargs": {"learning_rate": 0.001}},
    "gradient_clip": {"type": "clip_by_global_norm", "kwargs": {"clip_norm": 5.}},
}
"""

LSTM = """
dec_dropout_in = 0.5
dec_dropout_out = 0.5
word_keep_prob = 0.5
decoder_type = 'lstm'
dec_cell_hparams = {
    "type": "LSTMBlockCell",
    "kwargs": {"num_units": hidden_size, "forget_bias": 0.},
    "dropout": {"output_keep_prob": 1. - dec_dropout_out},
    "num_layers": 1,
}
dec_emb_hparams = {
    'name': 'lookup_table',
    "dim": embed_dim,
    "dropout_rate": dec_dropout_in,
    'initializer': {'type': 'random_normal_initializer',
                    'kwargs': {'mean': 0.0, 'stddev': embed_dim**-0.5}},
}
"""

TRANS = """
dec_dropout_in = 0.
relu_dropout = 0.2
embedding_dropout = 0.2
attention_dropout = 0.2
residual_dropout = 0.2
num_blocks = 3
decoder_type = 'transformer'
dec_emb_hparams = {
    'name': 'lookup_table',
    'dim': embed_dim,
    'dropout_rate': dec_dropout_in,
    'initializer': {'type': 'random_normal_initializer',
                    'kwargs': {'mean': 0.0, 'stddev': embed_dim**-0.5}},
}
max_pos = 200
dec_pos_emb_hparams = {'dim': hidden_size}
trans_hparams = {
    'output_layer_bias': False,
    'embedding_dropout': embedding_dropout,
    'residual_dropout': residual_dropout,
    'num_blocks': num_blocks,
    'dim': hidden_size,
    'initializer': {'type': 'variance_scaling_initializer',
                    'kwargs': {'scale': 1.0, 'mode': 'fan_avg', 'distribution': 'uniform'}},
    'multihead_attention': {'dropout_rate': attention_dropout, 'num_heads': 8,
                            'num_units': hidden_size, 'output_dim': hidden_size},
    'poswise_feedforward': {
        'name': 'fnn',
        'layers': [
            {'type': 'Dense', 'kwargs': {'name': 'conv1', 'units': hidden_size * 4,
                                         'activation': 'relu', 'use_bias': True}},
            {'type': 'Dropout', 'kwargs': {'rate': relu_dropout}},
            {'type': 'Dense', 'kwargs': {'name': 'conv2', 'units': hidden_size,
                                         'use_bias': True}},
        ],
    },
}
"""
LSTM_PTB, TRANS_PTB = COMMON + LSTM, COMMON + TRANS


def test_quick_mode_trains_and_reports_exact_counts(tmp_path):
    result = text_vae.main(
        ["--config", CONFIG, "--quick", f"run.model_dir={tmp_path / 'run'}", "run.verbose=0"]
    )
    losses = result["history"]["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    test = result["test"]
    # Every word of the first 24 test verses, and each verse's <EOS>, is predicted once.
    verses = bible_corpus.load_bible()["test"][:24]
    assert test["verses"] == 24
    assert test["tokens"] == sum(len(tokenize(v.english).split()) + 1 for v in verses)
    assert test["kl"] >= 0
    assert np.isclose(test["nll"], test["reconstruction"] + test["kl"])
    assert np.isclose(test["perplexity"], np.exp(test["nll"] * 24 / test["tokens"]))
    assert np.isclose(test["iw_perplexity"], np.exp(test["iw_nll"] * 24 / test["tokens"]))
    assert len(result["samples"]) == 2 and all(isinstance(s, str) for s in result["samples"])
    line = result["interpolation"]
    assert line["verses"] == [tokenize(v.english) for v in verses[:2]]
    assert len(line["decoded"]) == 3 and not any("<EOS>" in s for s in line["decoded"])
    assert (tmp_path / "run" / "hparams.yaml").exists()


def migrate(tmp_path, source, capsys):
    config = tmp_path / "config_ptb.py"
    config.write_text(source)
    output = tmp_path / "experiment.yaml"
    args = ["migrate", str(config), "--model", "text_vae", "--base", CONFIG,
            "--output", str(output)]  # fmt: skip
    assert texkit_command(args) == 0, capsys.readouterr().err
    text = output.read_text()
    return str(output), yaml.safe_load(text), text


def test_texar_lstm_config_migrates_and_trains(tmp_path, capsys):
    path, experiment, text = migrate(tmp_path, LSTM_PTB, capsys)
    model = experiment["model"]["hparams"]
    assert model["decoder_type"] == "lstm" and model["latent_dims"] == 32
    assert model["word_keep_prob"] == 0.5
    assert model["kl_anneal_hparams"] == {"warm_up": 10, "start": 0.1}
    cell = model["dec_cell_hparams"]
    assert cell["type"] == "LSTMCell"
    assert cell["kwargs"] == {"units": 256, "unit_forget_bias": False}  # forget_bias 0
    assert cell["dropout"] == {"output_keep_prob": 0.5}
    embedder = model["dec_emb_hparams"]
    assert embedder["dropout_rate"] == 0.5 and embedder["dim"] == 256
    assert embedder["initializer"] == {"type": "RandomNormal",
                                       "kwargs": {"mean": 0.0, "stddev": 256**-0.5}}  # fmt: skip
    assert experiment["optimization"] == {
        "optimizer": {"type": "Adam", "kwargs": {}},
        "learning_rate": 0.001,
        "gradient_clip": {"mode": "global_norm", "value": 5.0},
    }
    assert experiment["data"]["type"] == "bible_verses"  # the base's data
    assert "lr_decay_hparams: " in text and "not carried" in text
    result = text_vae.main([
        "--config", path, "--quick", "run.verbose=0", "run.train_steps=4", "report.iw_samples=2"
    ])  # fmt: skip
    assert np.isfinite(result["history"]["loss"]).all()
    assert np.isfinite(result["test"]["iw_nll"])


def test_texar_transformer_config_migrates_and_trains(tmp_path, capsys):
    path, experiment, text = migrate(tmp_path, TRANS_PTB, capsys)
    model = experiment["model"]["hparams"]
    assert model["decoder_type"] == "transformer"
    decoder = model["trans_hparams"]
    assert decoder["poswise_feedforward"] == {"dim": 1024, "activation": "relu"}
    assert "output_dim" not in decoder["multihead_attention"]
    assert decoder["num_blocks"] == 3 and decoder["output_layer_bias"] is False
    assert "max_pos: 200 -> None (not carried" in text
    # The tiny run: Texar's attention projection (num_units) follows the tiny dim.
    result = text_vae.main(
        ["--config", path, "--quick", "run.verbose=0", "run.train_steps=4",
         "report.iw_samples=2", "model.hparams.trans_hparams.multihead_attention.num_units=32"]
    )  # fmt: skip
    assert np.isfinite(result["history"]["loss"]).all()
