"""The names of earlier releases warn, naming the call that replaces them, and still work."""

import os

import pytest

import texkit as tx
from tests.real_data import minilm_folder
from texkit.modules import BERTEncoder, GPT2Decoder
from texkit.pretrained import loading

FAMILIES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")


def folder(name: str) -> str:
    return minilm_folder() if name == "bert" else os.path.join(FAMILIES, name)


def warns(new: str):
    return pytest.warns(DeprecationWarning, match=f"use {new.replace('[', '.').replace(']', '.')}")


def test_bert_helpers_warn_and_give_what_the_general_calls_give():
    path = folder("bert")
    with warns("tx.pretrained.read_config"):
        assert tx.pretrained.read_bert_config(path) == tx.pretrained.read_config(path)[1]
    with warns("tx.pretrained.checkpoint_format"):
        assert tx.pretrained.detect_format(path) == tx.pretrained.checkpoint_format(path)
    config = {"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
              "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu",
              "max_position_embeddings": 8, "type_vocab_size": 2}  # fmt: skip
    general = tx.pretrained.hparams_from_config(tx.pretrained.FAMILIES["bert"], config)
    with warns("tx.pretrained.hparams_from_config"):
        assert tx.pretrained.bert_hparams_from_config(config) == general
    with warns("tx.pretrained.tokenizer_from_pretrained"):
        assert tx.pretrained.vocab_file(path) == os.path.join(path, "vocab.txt")
    rows = tx.pretrained.FAMILIES["bert"].name_table(
        {"num_hidden_layers": 1, "num_attention_heads": 2}, "module"
    )
    with warns("tx.pretrained.FAMILIES['bert'].name_table"):
        table = tx.pretrained.bert_name_table(1)
    assert [r[0] for r in table] == [r.attribute for r in rows]


def test_a_bert_helper_still_refuses_another_family():
    with warns("tx.pretrained.read_config"), pytest.raises(tx.pretrained.CheckpointError):
        tx.pretrained.read_bert_config(folder("roberta"))


def test_loaders_of_earlier_releases_warn_and_load():
    encoder = BERTEncoder.from_pretrained(folder("bert"))
    with warns("tx.pretrained.load_checkpoint"):
        report = tx.pretrained.load_bert_checkpoint(encoder, folder("bert"))
    assert report.family == "bert" and report.loaded
    with warns("tx.pretrained.module_from_pretrained"):
        decoder = loading.encoder_from_pretrained(GPT2Decoder, folder("gpt2"))
    assert decoder.load_report.family == "gpt2"
    with warns("tx.pretrained.module_from_pretrained"):
        classifier = loading.model_from_pretrained(tx.modules.BERTClassifier, folder("bert"))
    assert classifier.load_report.family == "bert"


def test_family_helpers_of_the_package_warn():
    t5 = tx.pretrained.FAMILIES["t5"]
    hparams = tx.pretrained.read_config(folder("t5"))[1]
    with warns("tx.pretrained.FAMILIES['t5'].name_table"):
        assert tx.pretrained.t5_name_table(hparams) == t5.name_table(hparams, "module")
    config = {"vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2, "n_positions": 8}
    with warns("tx.pretrained.hparams_from_config"):
        assert tx.pretrained.gpt2_hparams_from_config(config)["dim"] == 8


def test_the_old_bert_tokenizer_loader_warns():
    from texkit.pretrained import bert

    with warns("tx.data.BERTTokenizer.from_pretrained"):
        tokenizer = bert.tokenizer_from_pretrained(tx.data.BERTTokenizer, folder("bert"),
                                                   lowercase=True)  # fmt: skip
    assert isinstance(tokenizer, tx.data.BERTTokenizer)


def test_weights_file_warns_and_names_the_one_file():
    from texkit.pretrained import folders

    family, fmt, _ = folders.inspect_folder(folder("bert"))
    with warns("texkit.pretrained.folders.weight_files"):
        assert (
            folders.weights_file(folder("bert"), fmt)
            == folders.weight_files(folder("bert"), fmt)[0]
        )


def test_a_family_s_rows_of_earlier_releases_warn():
    gpt2 = tx.pretrained.FAMILIES["gpt2"]
    hparams = tx.pretrained.read_config(folder("gpt2"))[1]
    with warns("Family.name_table"):
        assert gpt2.rows(hparams, "encoder") == gpt2.name_table(hparams, "module")
