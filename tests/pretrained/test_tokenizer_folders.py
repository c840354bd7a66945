"""Folders that hold only a tokenizer: ``tx.pretrained.tokenizer_from_pretrained`` and
``FolderTokenizer`` choose the tokenizer by the files (``tokenizer.model``, ``spiece.model``,
``vocab.txt``, ``tokenizer.json``, ``vocab.json`` + ``merges.txt``) and make it from the
folder's files (for the SentencePiece ones, the ids are those of the class made directly; each
class's own tests compare it with its reference).

The files come from the fixtures of the tokenizers' own tests.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

import texkit as tx
from texkit.data.tokenizers import BERTTokenizer, GPT2BPETokenizer, SentencePieceTokenizer
from texkit.pretrained import CheckpointError
from texkit.pretrained.tokenizers import TOKENIZER_FILES, FolderTokenizer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TEXTS = ["In the beginning God created the heaven and the earth.", "¿Qué tal? 日本語 \r\n 42"]


def folder_of(tmp_path, files, config=None, name="tokenizer"):
    """A folder holding copies of ``files`` ({name in the folder: fixture path}) and, if given,
    a ``tokenizer_config.json``."""
    folder = tmp_path / name
    folder.mkdir()
    for target, source in files.items():
        shutil.copy(FIXTURES / source, folder / target)
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def same_ids(tokenizer, reference):
    assert tokenizer.tokenize(TEXTS).to_list() == reference.tokenize(TEXTS).to_list()


def byte_level_bpe():
    try:
        from texkit.data.tokenizers.byte_level_bpe import ByteLevelBPETokenizer
    except ImportError:
        pytest.skip("ByteLevelBPETokenizer is not there")
    return ByteLevelBPETokenizer


def test_a_sentencepiece_tokenizer_model_opens_before_its_tokenizer_json(tmp_path):
    model = "sentencepiece_byte/llama/tokenizer.model"
    folder = folder_of(
        tmp_path,
        {"tokenizer.model": model, "tokenizer.json": "tokenizer_json/llama3/tokenizer.json"},
        config={"add_bos_token": True, "add_eos_token": True},
    )
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder, max_seq_length=32)
    assert isinstance(tokenizer, SentencePieceTokenizer)
    assert (tokenizer.style, tokenizer.add_eos_token, tokenizer.max_seq_length) == (
        "llama",
        True,
        32,
    )
    same_ids(tokenizer, SentencePieceTokenizer(FIXTURES / model, style="llama"))


def test_a_spiece_model_opens_with_the_folders_style(tmp_path):
    model = "sentencepiece/t5/spiece.model"
    folder = folder_of(tmp_path, {"spiece.model": model}, config={"tokenizer_class": "T5Tokenizer"})
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder)
    assert isinstance(tokenizer, SentencePieceTokenizer) and tokenizer.style == "t5"
    same_ids(tokenizer, SentencePieceTokenizer(FIXTURES / model, style="t5"))


def test_a_vocab_txt_opens_as_bert(tmp_path):
    files = {"vocab.txt": "bert_vocabs/cased/vocab.txt"}
    folder = folder_of(tmp_path, files, config={"do_lower_case": False})
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder)
    assert isinstance(tokenizer, BERTTokenizer) and tokenizer.lowercase is False
    assert tokenizer.vocab_file == str(folder / "vocab.txt")


@pytest.mark.parametrize(
    ("tokenizer_class", "style"), [(None, "gpt2"), ("RobertaTokenizer", "roberta")]
)
def test_vocab_json_and_merges_open_as_gpt2_bpe(tmp_path, tokenizer_class, style):
    files = {"vocab.json": "bpe/vocab.json", "merges.txt": "bpe/merges.txt"}
    config = None if tokenizer_class is None else {"tokenizer_class": tokenizer_class}
    tokenizer = FolderTokenizer.from_pretrained(folder_of(tmp_path, files, config=config))
    assert isinstance(tokenizer, GPT2BPETokenizer) and tokenizer.style == style
    assert Path(tokenizer.vocab_file).parent == tmp_path / "tokenizer"


def test_a_byte_level_tokenizer_json_opens(tmp_path):
    cls = byte_level_bpe()
    source = FIXTURES / "tokenizer_json" / "llama3"
    folder = tmp_path / "llama3"
    shutil.copytree(source, folder)
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder)
    assert isinstance(tokenizer, cls)
    assert tokenizer.tokenizer_file == str(folder / "tokenizer.json")


def test_gpt2_and_roberta_folders_with_a_tokenizer_json_keep_their_vocab_and_merges(tmp_path):
    cls = byte_level_bpe()
    files = {
        "vocab.json": "bpe/vocab.json",
        "merges.txt": "bpe/merges.txt",
        "tokenizer.json": "tokenizer_json/gpt2/tokenizer.json",
    }
    roberta = folder_of(tmp_path, files, config={"tokenizer_class": "RobertaTokenizerFast"})
    assert FolderTokenizer.from_pretrained(roberta).style == "roberta"
    other = folder_of(tmp_path, files, config={"tokenizer_class": "Qwen2Tokenizer"}, name="qwen")
    assert isinstance(FolderTokenizer.from_pretrained(other), cls)


def test_a_model_folder_without_weights_opens_its_tokenizer(tmp_path):
    # config.json without weights is no checkpoint texkit loads; its tokenizer still opens.
    folder = folder_of(tmp_path, {"tokenizer.model": "sentencepiece_byte/gemma/tokenizer.model"})
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma"}))
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder)
    assert (tokenizer.style, tokenizer.bos_token_id, tokenizer.pad_token_id) == ("llama", 2, 0)


def test_a_tokenizer_model_that_is_not_sentencepiece_is_passed_over(tmp_path):
    folder = folder_of(tmp_path, {})
    (folder / "tokenizer.model").write_text("IQ== 0\nIg== 1\n")  # tiktoken's format
    with pytest.raises(CheckpointError, match="no tokenizer file"):
        FolderTokenizer.from_pretrained(folder)


def test_an_empty_folder_is_refused_naming_the_files_looked_for(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(CheckpointError) as error:
        tx.pretrained.tokenizer_from_pretrained(folder)
    message = str(error.value)
    assert "not a checkpoint folder" in message and "nor a tokenizer folder" in message
    assert all(name in message for name in TOKENIZER_FILES)
    with pytest.raises(CheckpointError, match=r"no tokenizer file in the folder \(looked for"):
        FolderTokenizer.from_pretrained(folder)


def test_folder_tokenizer_is_not_made():
    with pytest.raises(TypeError, match="FolderTokenizer.from_pretrained"):
        FolderTokenizer()


def test_a_tokenizer_model_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    folder = folder_of(tmp_path, {})
    os.mkfifo(folder / "tokenizer.model")
    with pytest.raises(CheckpointError, match="tokenizer.model"):
        FolderTokenizer.from_pretrained(folder)
