"""SentencePieceTokenizer's ``"llama"`` style on byte-fallback models, against the
``sentencepiece`` library and Hugging Face's ``LlamaTokenizer`` / ``GemmaTokenizer``.

The three folders of ``tests/fixtures/sentencepiece_byte`` (a Llama-2-like BPE model with a
dummy prefix, a Gemma-like BPE model without one, a unigram model that removes extra
whitespace; 1,000 pieces each, byte fallback) and ``reference.npz`` are made by
``tests/fixtures/sentencepiece_byte/make_fixture.py``: the library's ids of 10,202 texts (verses
of the examples' Bible corpus in English and Spanish, read here from the corpus, and random
strings over many Unicode blocks, digits, whitespace runs and ``\\r\\n``, stored), its decoded
texts, and Hugging Face's ``encode`` with special tokens on 300 texts and 300 pairs per folder.
"""

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import tokenizer_serving
from texkit.data.tokenizers import SentencePieceTokenizer
from texkit.data.tokenizers.tokenizer_config import read_tokenizer_config

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "sentencepiece_byte"
CORPUS = ROOT / "examples" / "common" / "data" / "bible-kjv-rv1909.en-es.tsv.gz"
MODELS = ("llama", "gemma", "unigram")
BATCH = 4096


def rows(values, splits):
    return [values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]


def digest(ids):
    return hashlib.blake2b(np.asarray(ids, "<i4").tobytes(), digest_size=8).digest()


@pytest.fixture(scope="module")
def reference():
    data = dict(np.load(FIXTURE / "reference.npz"))
    meta = json.loads(str(data["meta"]))
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        verses = [line.rstrip("\n").split("\t")[1:] for line in lines]
    chosen = verses[:: meta["verse_step"]]
    texts = [english for english, _ in chosen] + [spanish for _, spanish in chosen]
    assert len(texts) == meta["verse_texts"]
    texts += [row.tobytes().decode() for row in rows(data["extra_bytes"], data["extra_splits"])]
    assert len(texts) == meta["texts"] >= 10_000
    return {"data": data, "meta": meta, "texts": texts}


@pytest.fixture(scope="module")
def tokenizers():
    return {name: SentencePieceTokenizer.from_pretrained(FIXTURE / name) for name in MODELS}


@pytest.fixture(scope="module")
def tokenized(tokenizers, reference):
    """Every model's ids of every text, by texkit."""
    texts = reference["texts"]
    result = {}
    for name, tokenizer in tokenizers.items():
        ids = []
        for start in range(0, len(texts), BATCH):
            batch = tokenizer.tokenize(texts[start : start + BATCH])
            assert isinstance(batch, tf.RaggedTensor) and batch.dtype == tf.int32
            ids += batch.to_list()
        result[name] = ids
    return result


def decoded_reference(reference, name):
    """The library's decode of every text's ids: the text itself, except on the stored rows."""
    data = reference["data"]
    expected = list(reference["texts"])
    values = rows(data[f"{name}_decoded"], data[f"{name}_decoded_splits"])
    for row, value in zip(data[f"{name}_decoded_rows"], values, strict=True):
        expected[row] = value.tobytes().decode()
    return expected


@pytest.mark.parametrize("name", MODELS)
def test_ids_equal_the_sentencepiece_library_on_every_text(name, tokenized, reference):
    data, texts, ids = reference["data"], reference["texts"], tokenized[name]
    expected = data[f"{name}_digests"].reshape(-1, 8)
    mismatches = [i for i, row in enumerate(ids) if digest(row) != expected[i].tobytes()]
    subset = data["subset"].tolist()
    full = [row.tolist() for row in rows(data[f"{name}_ids"], data[f"{name}_id_splits"])]
    shown = [(texts[i], ids[i], row) for i, row in zip(subset, full, strict=True) if ids[i] != row]
    assert not shown[:3]
    assert mismatches == []
    # Byte fallback fires: about half the texts hold a byte piece, none holds <unk>.
    assert reference["meta"][name]["texts_with_byte_pieces"] > 5000
    tokenizer_unk = SentencePieceTokenizer.from_pretrained(FIXTURE / name).unk_id
    assert not any(tokenizer_unk in row for row in ids)


@pytest.mark.parametrize("name", MODELS)
def test_detokenize_equals_the_library_decode(name, tokenizers, tokenized, reference):
    tokenizer, ids = tokenizers[name], tokenized[name]
    expected = decoded_reference(reference, name)
    batch = tf.RaggedTensor.from_row_lengths(
        np.concatenate([np.asarray(row, np.int32) for row in ids]), [len(row) for row in ids]
    )
    got = [text.decode() for text in tokenizer.detokenize(batch).numpy().tolist()]
    assert [(i, got[i], expected[i]) for i in range(len(ids)) if got[i] != expected[i]][:3] == []
    # The Llama-like model round-trips every text: a dummy prefix is dropped, bytes reassembled.
    if name == "llama":
        assert sum(got[i] != text for i, text in enumerate(reference["texts"])) <= 1


@pytest.mark.parametrize("name", MODELS)
def test_detokenize_takes_apart_any_ids_as_the_library(name, tokenizers, reference):
    data = reference["data"]
    odd = [
        row.astype(np.int32) for row in rows(data[f"{name}_odd_ids"], data[f"{name}_odd_id_splits"])
    ]
    expected = [
        r.tobytes() for r in rows(data[f"{name}_odd_decoded"], data[f"{name}_odd_decoded_splits"])
    ]
    batch = tf.RaggedTensor.from_row_lengths(np.concatenate(odd), [len(row) for row in odd])
    got = tokenizers[name].detokenize(batch).numpy().tolist()
    assert [
        (odd[i].tolist(), got[i], expected[i]) for i in range(len(odd)) if got[i] != expected[i]
    ] == []
    # Bytes that are not UTF-8: one U+FFFD per byte, as the library.
    assert sum("\ufffd" in text.decode() for text in expected) > 50


@pytest.mark.parametrize("name", MODELS)
def test_encode_adds_bos_and_eos_as_hugging_face(name, tokenizers, reference):
    data, texts, tokenizer = reference["data"], reference["texts"], tokenizers[name]
    subset = data[f"{name}_hf_subset"].tolist()
    single = [
        row.tolist() for row in rows(data[f"{name}_hf_single"], data[f"{name}_hf_single_splits"])
    ]
    pair_splits = data[f"{name}_hf_pair_splits"]
    pair = [row.tolist() for row in rows(data[f"{name}_hf_pair"], pair_splits)]
    types = [row.tolist() for row in rows(data[f"{name}_hf_pair_types"], pair_splits)]
    features = tokenizer.encode([texts[i] for i in subset])
    lengths = features["sequence_length"].numpy()
    got = [row[:n].tolist() for row, n in zip(features["input_ids"].numpy(), lengths, strict=True)]
    assert [(texts[i], a, b) for i, a, b in zip(subset, got, single, strict=True) if a != b] == []
    # Padding: the pad token (Gemma's <pad>), else EOS.
    padding = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    assert all(
        (row[n:] == padding).all()
        for row, n in zip(features["input_ids"].numpy(), lengths, strict=True)
    )
    seconds = subset[1:] + subset[:1]
    features = tokenizer.encode([texts[i] for i in subset], [texts[j] for j in seconds])
    lengths = features["sequence_length"].numpy()
    got = [row[:n].tolist() for row, n in zip(features["input_ids"].numpy(), lengths, strict=True)]
    segments = [
        row[:n].tolist() for row, n in zip(features["segment_ids"].numpy(), lengths, strict=True)
    ]
    assert [(a, b) for a, b in zip(got, pair, strict=True) if a != b] == []
    assert segments == types
    facts = reference["meta"][name]
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id) == (
        facts["bos_token_id"], facts["eos_token_id"], facts["pad_token_id"],
    )  # fmt: skip


def test_tokenize_without_special_tokens_and_encode_in_a_pipeline(tokenizers):
    tokenizer = tokenizers["llama"]
    ids = tokenizer.tokenize("Hello, world")
    assert tokenizer.bos_token_id not in ids.numpy().tolist()
    texts = tf.data.Dataset.from_tensor_slices(["En el principio", "日本語 \r\n 12"])
    features = next(iter(texts.batch(2).map(lambda t: tokenizer.encode(t))))
    assert features["input_ids"].shape == (2, tokenizer.max_seq_length)
    assert features["input_ids"].numpy()[:, 0].tolist() == [tokenizer.bos_token_id] * 2
    direct = tokenizer.encode(["En el principio", "日本語 \r\n 12"])
    assert (features["input_ids"].numpy() == direct["input_ids"].numpy()).all()


# -- the folder's configuration --------------------------------------------------------------


def copy_folder(tmp_path, name="llama", config=None, tokens_map=None):
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(FIXTURE / name / "tokenizer.model", folder / "tokenizer.model")
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    if tokens_map is not None:
        (folder / "special_tokens_map.json").write_text(json.dumps(tokens_map))
    return folder


def test_a_folder_without_config_takes_the_model_and_hugging_face_defaults(tmp_path, tokenizers):
    tokenizer = SentencePieceTokenizer.from_pretrained(copy_folder(tmp_path, "gemma"))
    # Style "llama" for a tokenizer.model; BOS added, EOS not (LlamaTokenizer's defaults); the
    # special tokens are the model's own pieces (bos_piece... of its trainer_spec).
    assert (tokenizer.style, tokenizer.add_bos_token, tokenizer.add_eos_token) == (
        "llama",
        True,
        False,
    )
    gemma = tokenizers["gemma"]
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id) == (
        gemma.bos_token_id, gemma.eos_token_id, gemma.pad_token_id,
    )  # fmt: skip
    assert tokenizer.id_to_token(tokenizer.bos_token_id) == "<bos>"


def test_config_flags_and_tokens_change_encode(tmp_path, tokenizers):
    config = {"add_bos_token": False, "add_eos_token": True, "eos_token": {"content": "<s>"}}
    tokenizer = SentencePieceTokenizer.from_pretrained(copy_folder(tmp_path, config=config))
    plain = tokenizers["llama"].tokenize("In the beginning").numpy().tolist()
    features = tokenizer.encode("In the beginning")
    length = int(features["sequence_length"])
    assert features["input_ids"].numpy()[:length].tolist() == plain + [1]
    gemma = SentencePieceTokenizer.from_pretrained(
        copy_folder(tmp_path, "gemma", config={}), add_eos_token=True
    )
    plain = tokenizers["gemma"].tokenize("In the beginning").numpy().tolist()
    features = gemma.encode("In the beginning")
    length = int(features["sequence_length"])
    assert features["input_ids"].numpy()[:length].tolist() == [2, *plain, 1]


@pytest.mark.parametrize(
    ("config", "tokens_map", "message"),
    [
        ({"bos_token": 5}, None, "tokenizer_config.json'.*bos_token must be a string"),
        (
            {"add_bos_token": "yes"},
            None,
            "tokenizer_config.json'.*add_bos_token must be true or false",
        ),
        ({"eos_token": "</s>"}, {"eos_token": "<s>"}, "special_tokens_map.json' sets eos_token"),
        ({"added_tokens_decoder": {"1": {"content": "<bos>"}}}, None, "added token 1 is '<bos>'"),
        ({"added_tokens_decoder": {"x": {"content": "a"}}}, None, r"added_tokens_decoder\['x'\]"),
        ({"added_tokens_decoder": {"2000": {"content": "<x>"}}}, None, "not special"),
        ({"pad_token": "<pad>"}, None, "pad_token '<pad>'.*neither a piece"),
        ({"bos_token": None}, None, "add_bos_token is true but.*no bos token"),
    ],
)
def test_bad_configs_are_refused_naming_the_file_and_key(tmp_path, config, tokens_map, message):
    folder = copy_folder(tmp_path, config=config, tokens_map=tokens_map)
    with pytest.raises(ValueError, match=message):
        SentencePieceTokenizer.from_pretrained(folder)


def test_special_added_tokens_after_the_model_extend_the_vocabulary(tmp_path):
    config = {
        "pad_token": "<pad>",
        "added_tokens_decoder": {"1000": {"content": "<pad>", "special": True}},
    }
    tokenizer = SentencePieceTokenizer.from_pretrained(copy_folder(tmp_path, config=config))
    assert (tokenizer.pad_token_id, tokenizer.vocab_size) == (1000, 1001)
    features = tokenizer.encode("Amen")
    assert features["input_ids"].numpy()[-1] == 1000
    assert tokenizer.detokenize(features["input_ids"]).numpy() == b"Amen"


def test_read_tokenizer_config_reads_added_token_dicts_from_both_files():
    config = read_tokenizer_config(FIXTURE / "llama", "test")
    assert config.tokens == {"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": None}
    assert (config.add_bos_token, config.add_eos_token, config.tokenizer_class) == (
        True, False, "LlamaTokenizer",
    )  # fmt: skip
    assert [Path(f).name for f in config.sources] == [
        "tokenizer_config.json",
        "special_tokens_map.json",
    ]
    gemma = read_tokenizer_config(FIXTURE / "gemma", "test")
    assert {i: (t.content, t.special) for i, t in gemma.added_tokens.items()} == {
        0: ("<pad>", True), 1: ("<eos>", True), 2: ("<bos>", True), 3: ("<unk>", True),
    }  # fmt: skip


def test_llama_arguments_belong_to_the_llama_style():
    with pytest.raises(ValueError, match="add_bos_token belong to style='llama'"):
        SentencePieceTokenizer(
            FIXTURE / "llama" / "tokenizer.model", style="t5", add_bos_token=True
        )


@pytest.mark.parametrize("name", MODELS)
def test_detokenize_with_special_tokens_equals_hugging_face_decode(name, tokenizers, reference):
    data = reference["data"]
    single = rows(data[f"{name}_hf_single"], data[f"{name}_hf_single_splits"])[:50]
    batch = tf.RaggedTensor.from_row_lengths(
        np.concatenate(single).astype(np.int32), [len(row) for row in single]
    )
    got = tokenizers[name].detokenize(batch, skip_special_tokens=False).numpy().tolist()
    expected = reference["meta"][name]["decoded_with_special_tokens"]
    assert [text.decode() for text in got] == expected
    one = tokenizers[name].detokenize(single[0].astype(np.int32), skip_special_tokens=False)
    assert one.shape == () and one.numpy().decode() == expected[0]


def test_saved_model_round_trip_with_detokenize(tmp_path, reference):
    folder = copy_folder(tmp_path, "llama", config={"add_eos_token": True})
    tokenizer = SentencePieceTokenizer.from_pretrained(folder, max_seq_length=64)
    texts = reference["texts"][::97]
    expected = tokenizer.encode(texts)
    expected_text = tokenizer.detokenize(tokenizer.tokenize(texts))

    def serve(tokenizer, texts):
        features = tokenizer.encode(texts)
        return {"text": tokenizer.detokenize(tokenizer.tokenize(texts)), **features}

    module = tokenizer_serving(tokenizer, serve)
    path = str(tmp_path / "serving")
    tf.saved_model.save(module, path)
    del module, tokenizer
    (folder / "tokenizer.model").unlink()
    outputs = tf.saved_model.load(path).serve(tf.constant(texts))
    assert outputs["text"].numpy().tolist() == expected_text.numpy().tolist()
    for key in expected:
        np.testing.assert_array_equal(outputs[key].numpy(), expected[key].numpy())
