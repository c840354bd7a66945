"""ByteLevelBPETokenizer against Hugging Face's ``tokenizers`` on four small ``tokenizer.json``
folders, one for each split pattern texkit knows (Llama 3's, Qwen2's, Tekken's, GPT-2's).

The folders and the references (``tests/fixtures/tokenizer_json/``: the ids of 10,900 texts,
verses in English and Spanish, random strings of many scripts, digit runs, whitespace runs with
``\\r\\n``, texts holding added tokens) are made by
``tests/fixtures/tokenizer_json/make_fixture.py`` with the ``tokenizers`` library. The ids of
every text are compared by a digest (the fixture keeps 8 bytes a text); ``encode``'s special
tokens, pairs and the ``ignore_merges`` cases by their ids.
"""

import copy
import gzip
import hashlib
import json
import random
import re
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import tokenizer_serving
from texkit.data import ByteLevelBPETokenizer
from texkit.data.tokenizers.byte_bpe import byte_symbols

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tokenizer_json"
CORPUS = ROOT / "examples" / "common" / "data" / "bible-kjv-rv1909.en-es.tsv.gz"
NAMES = ("llama3", "qwen2", "tekken", "gpt2")
WHITESPACE_BEFORE_MASK = re.compile(
    "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+<mask>"
)
PATTERNS = {"llama3": "llama3", "qwen2": "qwen2", "tekken": "tekken", "gpt2": "gpt2"}


def rows(values, splits):
    return [values[splits[i] : splits[i + 1]].tolist() for i in range(len(splits) - 1)]


def digest(ids):
    data = np.asarray(ids, "<i4").tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


@pytest.fixture(scope="module")
def reference():
    data = dict(np.load(FIXTURE / "reference.npz"))
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        corpus = [line.rstrip("\n").split("\t") for line in lines]
    texts = [
        corpus[line][1 + spanish]
        for line, spanish in zip(data["verse_lines"], data["verse_spanish"], strict=True)
    ]
    text_bytes = data["text_bytes"].tobytes()
    texts += [piece.decode("utf-8") for piece in rows_of_bytes(text_bytes, data["text_splits"])]
    assert len(texts) >= 10_000
    return {"texts": texts, **data}


def rows_of_bytes(data, splits):
    return [data[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]


# One tokenizer of each folder for the module (each traces its graph once), and its ids of
# every text.
LENGTH = 256
_made = {}
_ids = {}


def tokenizer_of(name):
    if name not in _made:
        _made[name] = ByteLevelBPETokenizer.from_pretrained(
            str(FIXTURE / name), max_seq_length=LENGTH
        )
    return _made[name]


def ids_of(name, reference):
    if name not in _ids:
        _ids[name] = tokenizer_of(name).tokenize(reference["texts"])
    return _ids[name]


def id_rows(ragged):
    return rows(ragged.flat_values.numpy(), ragged.row_splits.numpy())


@pytest.mark.parametrize("name", NAMES)
def test_ids_equal_the_tokenizers_library_on_every_text(name, reference):
    tokenizer = tokenizer_of(name)
    assert tokenizer.split_pattern == PATTERNS[name]
    got = id_rows(ids_of(name, reference))
    lengths = reference[f"{name}_lengths"]
    digests = reference[f"{name}_digests"]
    wrong = [i for i, ids in enumerate(got) if digest(ids) != int(digests[i])]
    shown = [(reference["texts"][i], got[i], int(lengths[i])) for i in wrong[:5]]
    assert not wrong, f"{len(wrong)} of {len(got)} texts differ, e.g. (text, ids, length): {shown}"


@pytest.mark.parametrize("name", NAMES)
def test_encode_adds_the_special_tokens_of_the_post_processor(name, reference):
    expected = rows(reference[f"{name}_special"], reference[f"{name}_special_splits"])
    texts = reference["texts"][: len(expected)]
    assert max(map(len, expected)) < LENGTH
    features = tokenizer_of(name).encode(texts)
    lengths = features["sequence_length"].numpy()
    got = [row[:n].tolist() for row, n in zip(features["input_ids"].numpy(), lengths, strict=True)]
    assert got == expected
    assert not features["segment_ids"].numpy().any()
    added = {"llama3": 1, "qwen2": 0, "tekken": 1, "gpt2": 1}[name]
    plain = id_rows(ids_of(name, reference))[: len(texts)]
    assert [len(row) for row in got] == [len(row) + added for row in plain]


@pytest.mark.parametrize("name", NAMES)
def test_encode_pairs_as_the_post_processor(name, reference):
    expected = rows(reference[f"{name}_pair"], reference[f"{name}_pair_splits"])
    types = rows(reference[f"{name}_pair_types"], reference[f"{name}_pair_splits"])
    texts = reference["texts"]
    first = texts[: len(expected)]
    second = [texts[-1 - i] for i in range(len(expected))]
    assert max(map(len, expected)) < LENGTH
    features = tokenizer_of(name).encode(first, second)
    lengths = features["sequence_length"].numpy()
    for key, want in (("input_ids", expected), ("segment_ids", types)):
        got = [row[:n].tolist() for row, n in zip(features[key].numpy(), lengths, strict=True)]
        assert got == want, key


@pytest.mark.parametrize("name", NAMES)
def test_detokenize_gives_the_text_back(name, reference):
    tokenizer = tokenizer_of(name)
    texts = reference["texts"]
    ids = ids_of(name, reference)
    got = [text.decode("utf-8") for text in tokenizer.detokenize(ids).numpy()]
    if name == "qwen2":  # the NFC normalizer's text, as the library's decode gives it
        texts = [unicodedata.normalize("NFC", text) for text in texts]
    if name == "gpt2":  # <mask> takes the whitespace before it (lstrip), as in the library
        texts = [WHITESPACE_BEFORE_MASK.sub("<mask>", text) for text in texts]
    wrong = [(t, g) for t, g in zip(texts, got, strict=True) if t != g]
    assert not wrong, f"{len(wrong)} texts, e.g. {wrong[:3]}"


def test_added_tokens_of_other_flags(reference):
    # lstrip + rstrip, normalized tokens found after NFC and after the tokens that are not
    # normalized (<|im inside <|im_start|>), a normalized token that NFC composes (Å).
    texts = [
        text.decode("utf-8")
        for text in rows_of_bytes(
            reference["flags_text_bytes"].tobytes(), reference["flags_text_splits"]
        )
    ]
    decoded = rows_of_bytes(
        reference["added_flags_decoded_bytes"].tobytes(), reference["added_flags_decoded_splits"]
    )
    tokenizer = ByteLevelBPETokenizer(str(FIXTURE / "added_flags" / "tokenizer.json"))
    ids = tokenizer.tokenize(texts)
    got = id_rows(ids)
    digests = reference["added_flags_digests"]
    wrong = [(texts[i], got[i]) for i in range(len(got)) if digest(got[i]) != int(digests[i])]
    assert not wrong, f"{len(wrong)} of {len(got)} texts differ, e.g. {wrong[:3]}"
    text = tokenizer.detokenize(ids, skip_special_tokens=True).numpy()
    # The library's decode replaces bytes that are not UTF-8 by U+FFFD (here: Å, a byte symbol).
    assert [t.decode("utf-8", "replace").encode("utf-8") for t in text] == decoded


def test_tekkens_second_word_alternative_as_written_gives_the_same_pieces():
    # split_patterns writes Tekken's L?[Lu Lt Lm Lo M]+[Ll Lm Lo M]* as L?[Lu Lt]+ (see there):
    # the pattern as Mistral writes it, less the lookahead, marks the same pieces.
    from texkit.data.tokenizers import split_patterns as patterns

    upper, lower = patterns._UPPER_OR_CASELESS, patterns._LOWER_OR_CASELESS
    lead = patterns._WORD_LEAD
    written = patterns.SPLIT_PATTERNS["tekken"].pieces.replace(
        rf"|{lead}?[\p{{Lu}}\p{{Lt}}]+|", f"|{lead}?{upper}+{lower}*|"
    )
    assert written != patterns.SPLIT_PATTERNS["tekken"].pieces
    rng = random.Random(7)
    chars = ["A", "a", "É", "é", "ǅ", "ʰ", "中", "\u0301", " ", "1", "!", "\n", "'", "ᾈ", "Ⅰ", "ⅰ"]
    texts = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    marked = [
        tf.strings.regex_replace(texts, pattern, b"\\0\xff").numpy().tolist()
        for pattern in (written, patterns.SPLIT_PATTERNS["tekken"].pieces)
    ]
    assert marked[0] == marked[1]


def test_ignore_merges_keeps_a_word_of_the_vocabulary_whole(reference, tmp_path):
    which = reference["llama3_merged_texts"]
    merged = rows(reference["llama3_merged_ids"], reference["llama3_merged_splits"])
    assert len(which) >= 10  # the fixture holds texts where ignore_merges changes the ids
    texts = [reference["texts"][i] for i in which]
    tokenizer = tokenizer_of("llama3")
    assert tokenizer.ignore_merges
    got = id_rows(tokenizer.tokenize(texts))
    digests = reference["llama3_digests"][which]
    assert [digest(row) for row in got] == [int(d) for d in digests]
    assert all(a != b for a, b in zip(got, merged, strict=True))
    # The same file without ignore_merges gives the library's ids without it.
    folder = tmp_path / "merged"
    shutil.copytree(FIXTURE / "llama3", folder)
    data = json.loads((folder / "tokenizer.json").read_text("utf-8"))
    data["model"]["ignore_merges"] = False
    (folder / "tokenizer.json").write_text(json.dumps(data), "utf-8")
    plain = ByteLevelBPETokenizer.from_pretrained(str(folder))
    assert not plain.ignore_merges
    assert id_rows(plain.tokenize(texts)) == merged
    word = "".join(byte_symbols()[b] for b in b" Nebuchadnezzar")
    assert tokenizer.tokenize(" Nebuchadnezzar").numpy().tolist() == [tokenizer.token_to_id(word)]
    assert len(plain.tokenize(" Nebuchadnezzar").numpy()) > 1


def test_special_token_ids_of_the_config():
    llama3 = tokenizer_of("llama3")
    assert llama3.bos_id == llama3.token_to_id("<|begin_of_text|>")
    assert llama3.eos_id == llama3.pad_id == llama3.token_to_id("<|end_of_text|>")
    qwen2 = tokenizer_of("qwen2")
    assert qwen2.bos_id is None
    assert qwen2.eos_id == qwen2.pad_id == qwen2.token_to_id("<|endoftext|>")
    assert qwen2.normalizer == "NFC" and llama3.normalizer is None
    tekken = tokenizer_of("tekken")
    assert (tekken.bos_id, tekken.eos_id, tekken.unk_id) == (1, 2, 0)
    assert tekken.special_ids == (0, 1, 2, 3, 4)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert qwen2.special_ids == tuple(sorted(qwen2.token_to_id(t) for t in specials))


def test_special_tokens_and_pad_token_given_as_arguments():
    path = str(FIXTURE / "tekken" / "tokenizer.json")
    tokenizer = ByteLevelBPETokenizer(path, special_tokens={"bos": "[INST]"}, pad_token="</s>")
    assert (tokenizer.bos_id, tokenizer.eos_id, tokenizer.pad_id) == (3, None, 2)
    bare = ByteLevelBPETokenizer(path)  # no roles named: padding with id 0
    assert (bare.bos_id, bare.eos_id, bare.pad_id) == (None, None, 0)
    with pytest.raises(ValueError, match=r"special_tokens has the roles \['cls'\]"):
        ByteLevelBPETokenizer(path, special_tokens={"cls": "<s>"})
    with pytest.raises(ValueError, match=r"'<pad>'.*pad_token"):
        ByteLevelBPETokenizer(path, pad_token="<pad>")
    with pytest.raises(ValueError, match="max_chars_per_word"):
        ByteLevelBPETokenizer(path, max_chars_per_word=0)


def test_detokenize_keeps_or_skips_the_special_tokens():
    qwen2 = tokenizer_of("qwen2")
    text = "<|im_start|>user\nHello there<|im_end|>\n"
    ids = qwen2.tokenize(text)
    assert ids.numpy()[0] == qwen2.token_to_id("<|im_start|>")
    assert qwen2.detokenize(ids).numpy().decode() == text
    assert qwen2.detokenize(ids, skip_special_tokens=True).numpy().decode() == "user\nHello there\n"


def test_in_tf_data(reference):
    tokenizer = tokenizer_of("llama3")
    texts = reference["texts"][:64]
    eager = tokenizer.encode(texts)
    mapped = next(iter(tf.data.Dataset.from_tensor_slices(texts).batch(64).map(tokenizer.encode)))
    for key in eager:
        np.testing.assert_array_equal(mapped[key], eager[key])


@pytest.mark.parametrize("name", ["llama3", "qwen2"])
def test_saved_model_round_trip(name, reference, tmp_path):
    # The tables of the added tokens and of ignore_merges, and the normalizer, in a SavedModel.
    tokenizer = tokenizer_of(name)
    texts = reference["texts"][-300:]
    expected = id_rows(ids_of(name, reference))[-300:]

    def serve(tokenizer, texts):
        ids = tokenizer.tokenize(texts)
        return {"ids": ids.to_tensor(-1), "lengths": ids.row_lengths()}

    path = str(tmp_path / "serving")
    tf.saved_model.save(tokenizer_serving(tokenizer, serve), path)
    outputs = tf.saved_model.load(path).serve(tf.constant(texts))
    ids = tf.RaggedTensor.from_tensor(outputs["ids"], lengths=outputs["lengths"])
    assert ids.to_list() == expected


def test_merges_written_as_strings_read_the_same(reference, tmp_path):
    folder = tmp_path / "strings"
    shutil.copytree(FIXTURE / "tekken", folder)
    data = json.loads((folder / "tokenizer.json").read_text("utf-8"))
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
    (folder / "tokenizer.json").write_text(json.dumps(data), "utf-8")
    texts = reference["texts"][::20]
    got = ByteLevelBPETokenizer.from_pretrained(str(folder)).tokenize(texts)
    assert id_rows(got) == id_rows(ids_of("tekken", reference))[::20]


def edited(tmp_path, name, change):
    data = json.loads((FIXTURE / name / "tokenizer.json").read_text("utf-8"))
    change(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), "utf-8")
    return str(path)


def split_of(data):
    return data["pre_tokenizer"]["pretokenizers"][0]


def set_in(keys, value):
    def change(data):
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


REFUSED = [
    (
        "llama3",
        lambda d: split_of(d).update(pattern={"Regex": r"\p{L}+|\s+|[^\s\p{L}]+"}),
        r"pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex.*not a pattern texkit knows",
    ),
    ("qwen2", set_in(["model", "type"], "Unigram"), r"'model\.type' is 'Unigram'"),
    ("qwen2", set_in(["model", "type"], "WordPiece"), r"'model\.type' is 'WordPiece'"),
    ("qwen2", set_in(["normalizer"], {"type": "Lowercase"}), r"'normalizer\.type' is 'Lowercase'"),
    ("gpt2", set_in(["pre_tokenizer", "add_prefix_space"], True), r"add_prefix_space' is true"),
    ("gpt2", set_in(["pre_tokenizer"], {"type": "Whitespace"}), r"'pre_tokenizer\.type' is"),
    ("llama3", lambda d: split_of(d).update(behavior="Removed"), r"behavior' is 'Removed'"),
    ("llama3", set_in(["model", "byte_fallback"], True), r"model\.byte_fallback"),
    ("llama3", set_in(["model", "dropout"], 0.1), r"'model\.dropout' is 0\.1"),
    ("llama3", set_in(["decoder"], {"type": "Metaspace"}), r"'decoder\.type' is 'Metaspace'"),
    ("llama3", lambda d: d["added_tokens"][0].update(single_word=True), r"single_word"),
    ("tekken", lambda d: d["model"]["merges"].append(["x", "#q"]), r"model\.merges\[\d+\]"),
    (
        "tekken",
        lambda d: d["post_processor"].update(pair=d["post_processor"]["single"][1:]),
        r"post_processor\.pair",
    ),
]


@pytest.mark.parametrize("name, change, pattern", REFUSED)
def test_what_texkit_does_not_implement_is_refused_naming_the_file(tmp_path, name, change, pattern):
    path = edited(tmp_path, name, change)
    with pytest.raises(ValueError, match=pattern) as raised:
        ByteLevelBPETokenizer(path)
    assert path in str(raised.value)


def test_folder_and_config_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no tokenizer.json"):
        ByteLevelBPETokenizer.from_pretrained(str(tmp_path))
    folder = tmp_path / "folder"
    shutil.copytree(FIXTURE / "qwen2", folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|nope|>"}), "utf-8")
    with pytest.raises(ValueError, match=r"'<\|nope\|>'.*eos token.*tokenizer_config\.json"):
        ByteLevelBPETokenizer.from_pretrained(str(folder))
    data = json.loads((FIXTURE / "qwen2" / "tokenizer.json").read_text("utf-8"))
    missing = copy.deepcopy(data)
    del missing["model"]["vocab"]["Ġ"]
    (folder / "tokenizer.json").write_text(json.dumps(missing), "utf-8")
    with pytest.raises(ValueError, match=r"model\.(vocab|merges)"):
        ByteLevelBPETokenizer(str(folder / "tokenizer.json"))
