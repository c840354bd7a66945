"""GPT2BPETokenizer against GPT-2's byte-level BPE algorithm, on a small vocabulary of the tests.

The vocabulary (``tests/fixtures/bpe/vocab.json`` + ``merges.txt``: 2,000 tokens trained on the
Bible corpus of the examples) and the reference pieces and ids of 10,784 texts
(``reference.npz``: verses in English and Spanish, edge cases, random strings of many scripts)
are made by ``tests/fixtures/bpe/make_fixture.py``, with a Python implementation of OpenAI's
``encoder.py`` algorithm checked against Hugging Face's ``tokenizers``. Handmade files check the
merge loop, both file layouts and the errors.
"""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import tokenizer_serving
from texkit.data.tokenizers import GPT2BPETokenizer
from texkit.data.tokenizers.byte_bpe import byte_symbols
from texkit.data.tokenizers.split_patterns import SPLIT_PATTERNS, split_pieces

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "bpe"
BATCH = 1024
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<|endoftext|>"]


def rows(values, splits):
    return [values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]


@pytest.fixture(scope="module")
def reference():
    data = np.load(FIXTURE / "reference.npz")
    text_bytes = data["text_bytes"].tobytes()
    splits = data["text_splits"]
    texts = [text_bytes[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]
    ids = [row.astype(np.int32).tolist() for row in rows(data["ids"], data["id_splits"])]
    pieces = [row.tolist() for row in rows(data["piece_lengths"], data["piece_splits"])]
    assert len(texts) == len(ids) == len(pieces) >= 10_000
    return {"texts": texts, "ids": ids, "piece_lengths": pieces}


@pytest.fixture(scope="module")
def tokenizer():
    return GPT2BPETokenizer.from_pretrained(str(FIXTURE))


@pytest.fixture(scope="module")
def roberta():
    return GPT2BPETokenizer.from_pretrained(str(FIXTURE), style="roberta", max_seq_length=24)


def batches(items, size=BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def first_differences(texts, got, expected, limit=5):
    return [(texts[i], got[i], expected[i]) for i in range(len(texts)) if got[i] != expected[i]][
        :limit
    ]


def fixture_vocab():
    return json.loads((FIXTURE / "vocab.json").read_text("utf-8"))


def write_files(tmp_path, vocab, merges, vocab_name="vocab.json", merges_name="merges.txt"):
    vocab_file = tmp_path / vocab_name
    merges_file = tmp_path / merges_name
    vocab_file.write_text(vocab if isinstance(vocab, str) else json.dumps(vocab), "utf-8")
    merges_file.write_text(merges, "utf-8")
    return str(vocab_file), str(merges_file)


def byte_vocab(*extra):
    """The 256 byte symbols, then ``extra``, ids in that order."""
    return {token: i for i, token in enumerate([*byte_symbols(), *extra])}


# -- the reference ------------------------------------------------------------------------------


def test_ids_match_the_reference_on_every_text(tokenizer, reference):
    texts, expected = reference["texts"], reference["ids"]
    got = []
    for batch in batches(texts):
        ids = tokenizer.tokenize(batch)
        assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
        got += ids.to_list()
    assert not first_differences(texts, got, expected)


def test_pieces_match_the_reference_on_every_text(reference):
    # The ids hardly see where pieces of scripts without merges are cut; the pieces do.
    texts, expected = reference["texts"], reference["piece_lengths"]
    got = []
    for batch in batches(texts):
        got += [
            [len(p) for p in row]
            for row in split_pieces(tf.constant(batch), SPLIT_PATTERNS["gpt2"]).to_list()
        ]
    assert not first_differences(texts, got, expected)


def test_detokenize_round_trips_every_text(tokenizer, reference):
    texts = reference["texts"]
    for batch in batches(texts):
        back = tokenizer.detokenize(tokenizer.tokenize(batch)).numpy().tolist()
        assert back == batch, next(t for t, b in zip(batch, back, strict=True) if t != b)


def test_one_string_gives_a_vector(tokenizer, reference):
    text, ids = reference["texts"][0], reference["ids"][0]
    for value in (text, text.decode("utf-8"), tf.constant(text)):
        got = tokenizer.tokenize(value)
        assert isinstance(got, tf.Tensor) and got.shape.rank == 1
        assert got.numpy().tolist() == ids
    assert tokenizer.detokenize(ids).numpy() == text
    assert tokenizer.tokenize("").numpy().tolist() == []
    assert tokenizer.tokenize(tf.zeros([0], tf.string)).to_list() == []


def test_tokens_of_a_verse(tokenizer):
    ids = tokenizer.tokenize("In the beginning God created the heaven and the earth.")
    tokens = [tokenizer.id_to_token(i) for i in ids.numpy()]
    assert "".join(tokens) == "InĠtheĠbeginningĠGodĠcreatedĠtheĠheavenĠandĠtheĠearth."
    assert "ĠGod" in tokens and "Ġthe" in tokens


def test_byte_symbols_are_gpt2s_table():
    symbols = byte_symbols()
    assert len(set(symbols)) == 256
    # Printable Latin-1 stands for itself; the 68 others take U+0100 on, in byte order.
    assert symbols[ord("A")] == "A" and symbols[0xE9] == "é" and symbols[0xAE] == "®"
    assert [symbols[b] for b in (0, 1, 0x20, 0x7F, 0x80, 0xA0, 0xAD)] == [
        "Ā",
        "ā",
        "Ġ",
        "ġ",
        "Ģ",
        "ł",
        "Ń",
    ]
    assert symbols[ord("\n")] == "Ċ"
    assert max(map(ord, symbols)) == 0x143


# -- the merge loop, on handmade merges ---------------------------------------------------------


def test_merges_by_rank_every_occurrence_left_first(tmp_path):
    vocab = byte_vocab("aa", "aaaa", "ab", "bc", "abc", "<|endoftext|>")
    files = write_files(tmp_path, vocab, "#version: 0.2\na a\naa aa\nb c\na b\na bc\n")
    tok = GPT2BPETokenizer(*files)

    def pieces(text):
        return [tok.id_to_token(i) for i in tok.tokenize(text).numpy()]

    # "a a" has the lowest rank: all its occurrences merge at once, overlapping ones from the
    # left; then "aa aa".
    assert pieces("aaa") == ["aa", "a"]
    assert pieces("aaaaa") == ["aaaa", "a"]
    assert pieces("aaaaaaa") == ["aaaa", "aa", "a"]
    # "b c" (rank 2) comes before "a b" (rank 3): abc is a + bc, then a + bc (rank 4).
    assert pieces("abc") == ["abc"]
    assert pieces("ab") == ["ab"]
    assert pieces("abab abc") == ["ab", "ab", "Ġ", "abc"]
    # Words of one batch finish in different rounds.
    got = tok.tokenize(["a", "aaaaaaa", "", "abc ab"]).to_list()
    names = [[tok.id_to_token(i) for i in row] for row in got]
    assert names == [["a"], ["aaaa", "aa", "a"], [], ["abc", "Ġ", "ab"]]


def test_pre_tokenization_cases(tokenizer):
    cases = {
        "a  b": [b"a", b" ", b" b"],
        "a  's": [b"a", b" ", b" '", b"s"],
        "a\t\tb": [b"a", b"\t", b"\t", b"b"],
        "x \n y": [b"x", b" \n", b" y"],
        "end  ": [b"end", b"  "],
        "don't 'S": [b"don", b"'t", b" '", b"S"],
        "\x00\x00 ok": [b"\x00\x00", b" ok"],
        "1\u00a0\u00a0x": [b"1", "\u00a0".encode(), "\u00a0".encode(), b"x"],
    }
    got = split_pieces(tf.constant(list(cases)), SPLIT_PATTERNS["gpt2"]).to_list()
    assert got == list(cases.values())


def test_noncharacters_and_controls_round_trip(tokenizer):
    texts = ["\uffff\ufffe\U0010ffff\ufdd0 \ufeffx\x00", "a\r\nb", "\U000e0001tag\x7f"]
    back = tokenizer.detokenize(tokenizer.tokenize(texts)).numpy().tolist()
    assert back == [text.encode() for text in texts]


def test_text_that_is_not_utf8_is_read_as_replacement_characters(tokenizer):
    ids = tokenizer.tokenize([b"ok\xff!"])
    assert tokenizer.detokenize(ids).numpy()[0] == "ok\ufffd!".encode()


# -- in graphs ---------------------------------------------------------------------------------


def test_in_tf_data_map(tokenizer, roberta, reference):
    texts, expected = reference["texts"][:600], reference["ids"][:600]
    dataset = tf.data.Dataset.from_tensor_slices(texts)
    batched = dataset.batch(64).map(tokenizer.tokenize, num_parallel_calls=tf.data.AUTOTUNE)
    got = [row for ids in batched for row in ids.to_list()]
    assert got == expected
    # One string at a time: encode gives [max_seq_length] vectors.
    features = next(iter(dataset.map(roberta.encode).batch(600)))
    direct = roberta.encode(texts)
    for key in ("input_ids", "segment_ids", "sequence_length"):
        np.testing.assert_array_equal(features[key].numpy(), direct[key].numpy())
    assert features["input_ids"].shape == (600, 24)


def test_in_tf_function(tokenizer, roberta, reference):
    texts, expected = reference["texts"][:300], reference["ids"][:300]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(batch):
        return tokenizer.tokenize(batch)

    @tf.function
    def encode(first, second):
        return roberta.encode(first, second)

    assert tokenize(tf.constant(texts)).to_list() == expected
    got = encode(tf.constant(texts[:50]), tf.constant(texts[50:100]))
    direct = roberta.encode(texts[:50], texts[50:100])
    for key, value in direct.items():
        np.testing.assert_array_equal(got[key].numpy(), value.numpy())


def graph_op_types(concrete):
    graph_def = concrete.graph.as_graph_def()
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types |= {node.op for node in function.node_def}
    return types


def test_saved_model_round_trip(roberta, reference, tmp_path):
    texts, expected = reference["texts"][:400], reference["ids"][:400]

    def serve(tokenizer, texts):
        ids = tokenizer.tokenize(texts)
        features = tokenizer.encode(texts)
        return {
            "ids": ids.to_tensor(-1),
            "lengths": ids.row_lengths(),
            "input_ids": features["input_ids"],
        }

    module = tokenizer_serving(roberta, serve)
    types = graph_op_types(module.serve.get_concrete_function())
    assert not types & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    path = str(tmp_path / "serving")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    del module
    loaded = tf.saved_model.load(path)
    for outputs in (
        loaded.signatures["serving_default"](texts=tf.constant(texts)),
        loaded.serve(tf.constant(texts)),
    ):
        ids = tf.RaggedTensor.from_tensor(outputs["ids"], lengths=outputs["lengths"])
        assert ids.to_list() == expected
        np.testing.assert_array_equal(
            outputs["input_ids"].numpy(), roberta.encode(texts)["input_ids"].numpy()
        )


# -- files -------------------------------------------------------------------------------------


def test_openai_file_names(tmp_path, tokenizer, reference):
    shutil.copy(FIXTURE / "vocab.json", tmp_path / "encoder.json")
    shutil.copy(FIXTURE / "merges.txt", tmp_path / "vocab.bpe")
    assert (tmp_path / "vocab.bpe").read_text("utf-8").startswith("#version")
    texts, expected = reference["texts"][-500:], reference["ids"][-500:]
    for tok in (
        GPT2BPETokenizer.from_pretrained(tmp_path),
        GPT2BPETokenizer(str(tmp_path / "encoder.json"), str(tmp_path / "vocab.bpe")),
    ):
        assert tok.vocab_file.endswith("encoder.json") and tok.merges_file.endswith("vocab.bpe")
        assert tok.tokenize(texts).to_list() == expected


def test_from_pretrained_prefers_the_hugging_face_names(tmp_path):
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    (tmp_path / "encoder.json").write_text("[]", "utf-8")
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\n", "utf-8")
    assert GPT2BPETokenizer.from_pretrained(str(tmp_path)).vocab_file.endswith("vocab.json")


def test_from_pretrained_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        GPT2BPETokenizer.from_pretrained(str(tmp_path / "absent"))
    shutil.copy(FIXTURE / "vocab.json", tmp_path / "vocab.json")  # no merges.txt
    with pytest.raises(FileNotFoundError) as error:
        GPT2BPETokenizer.from_pretrained(str(tmp_path))
    message = str(error.value)
    assert str(tmp_path) in message
    for name in ("vocab.json", "merges.txt", "encoder.json", "vocab.bpe"):
        assert name in message


def test_missing_files(tmp_path):
    merges = str(FIXTURE / "merges.txt")
    with pytest.raises(FileNotFoundError, match="vocab_file .*nope.json"):
        GPT2BPETokenizer(str(tmp_path / "nope.json"), merges)
    with pytest.raises(FileNotFoundError, match="merges_file .*nope.txt"):
        GPT2BPETokenizer(str(FIXTURE / "vocab.json"), str(tmp_path / "nope.txt"))
    with pytest.raises(IsADirectoryError, match="from_pretrained"):
        GPT2BPETokenizer(str(FIXTURE), merges)


@pytest.mark.parametrize(
    "merges, line, pattern",
    [
        ("#version: 0.2\nĠ t\nh e x\n", 3, "two tokens separated by one space"),
        ("Ġ t\n\nh e\n", 2, "two tokens separated by one space"),
        ("#version: 0.2\nĠ  t\n", 2, "two tokens separated by one space"),
        ("#version: 0.2\nĠt\n", 2, "two tokens separated by one space"),
        ("#version: 0.2\nĠ t\nĠ t\n", 3, "repeats the merge of line 2"),
        ("#version: 0.2\nĠ t\nq <zz>\n", 3, "'<zz>' is not in the vocabulary"),
        ("#version: 0.2\nĠ t\nq z\n", 3, "'qz' is not in the vocabulary"),
    ],
)
def test_malformed_merges(tmp_path, merges, line, pattern):
    files = write_files(tmp_path, fixture_vocab(), merges)
    with pytest.raises(ValueError, match=f"merges.txt' line {line}.*{pattern}"):
        GPT2BPETokenizer(*files)


@pytest.mark.parametrize(
    "vocab, pattern",
    [
        ("[1, 2]", "must hold a JSON object .* got a list"),
        ('"text"', "must hold a JSON object .* got a str"),
        ("{}", "empty object"),
        ('{"a": 1,', "is not JSON: .* at line 1 column"),
        ('{"a": "1"}', "gives the token 'a' the id '1'; ids must be ints >= 0"),
        ('{"a": 1.0}', "gives the token 'a' the id 1.0"),
        ('{"a": true}', "gives the token 'a' the id True"),
        ('{"a": -1}', "the id -1"),
        ('{"a": 0, "b": 0}', "gives the id 0 to both 'a' and 'b'"),
        ('{"a": 0, "a": 1}', "repeats the token 'a'"),
    ],
)
def test_malformed_vocab(tmp_path, vocab, pattern):
    files = write_files(tmp_path, vocab, "#version: 0.2\n")
    with pytest.raises(ValueError, match=f"vocab.json'? .*{pattern}"):
        GPT2BPETokenizer(*files)


def test_a_byte_symbol_missing_from_the_vocab(tmp_path):
    vocab = byte_vocab("<|endoftext|>")
    del vocab["Ġ"]
    files = write_files(tmp_path, vocab, "#version: 0.2\n")
    with pytest.raises(ValueError, match=r"lacks 1 of the 256 byte symbols .*'Ġ', byte 0x20"):
        GPT2BPETokenizer(*files)


def test_special_tokens_the_style_needs(tmp_path):
    files = write_files(tmp_path, byte_vocab("<pad>"), "#version: 0.2\n")
    with pytest.raises(ValueError, match="no '<s>' token, which style='roberta' needs"):
        GPT2BPETokenizer(*files, style="roberta")
    with pytest.raises(
        ValueError, match=re.escape("no '<|endoftext|>' token, which style='gpt2' adds")
    ):
        GPT2BPETokenizer(*files, add_special_tokens=True)
    with pytest.raises(ValueError, match=r"pads style='gpt2' \(or give pad_token\)"):
        GPT2BPETokenizer(*files)
    assert GPT2BPETokenizer(*files, pad_token="<pad>").pad_id == 256
    with pytest.raises(ValueError, match="no '<nope>' token, which is the pad_token"):
        GPT2BPETokenizer(*files, pad_token="<nope>")


def test_argument_errors(tokenizer):
    files = (str(FIXTURE / "vocab.json"), str(FIXTURE / "merges.txt"))
    with pytest.raises(ValueError, match="style must be one of"):
        GPT2BPETokenizer(*files, style="bert")
    with pytest.raises(TypeError, match="add_special_tokens"):
        GPT2BPETokenizer(*files, add_special_tokens="yes")
    with pytest.raises(ValueError, match="max_seq_length must be >= 2"):
        GPT2BPETokenizer(*files, style="roberta", max_seq_length=1)
    with pytest.raises(ValueError, match="max_seq_length must be an int"):
        GPT2BPETokenizer(*files, max_seq_length=8.0)
    with pytest.raises(ValueError, match="no room for the 4 special tokens of a pair"):
        GPT2BPETokenizer(*files, style="roberta", max_seq_length=3).encode(["a"], ["b"])
    with pytest.raises(ValueError, match="must be a string or a \\[batch\\] of strings"):
        tokenizer.tokenize([["a"]])
    with pytest.raises(ValueError, match="same shape"):
        tokenizer.encode("a", ["b"])
    with pytest.raises(ValueError, match="same shape"):
        tokenizer.encode(["a", "b"], ["c"])
    encode = tf.function(tokenizer.encode, input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="differ in batch size"):
        encode(tf.constant(["a", "b"]), tf.constant(["c"]))
    with pytest.raises(TypeError, match="RaggedTensor"):
        tokenizer.pack(tf.constant([[1, 2]]))


# -- encode ------------------------------------------------------------------------------------


def expected_pack(first, second, length, prefix, suffix, second_prefix, pad, second_segment=1):
    """The packed ids and segments, with BERT's pop-from-the-longer loop for pairs."""
    first, second = list(first), None if second is None else list(second)
    if second is None:
        first = first[: length - len(prefix) - len(suffix)]
        ids = prefix + first + suffix
        segments = [0] * len(ids)
    else:
        budget = length - len(prefix) - 2 * len(suffix) - len(second_prefix)
        while len(first) + len(second) > budget:
            (first if len(first) > len(second) else second).pop()
        ids = prefix + first + suffix + second_prefix + second + suffix
        segments = [0] * (len(prefix) + len(first) + len(suffix))
        segments += [second_segment] * (len(ids) - len(segments))
    used = len(ids)
    return ids + [pad] * (length - used), segments + [0] * (length - used), used


def check_encode(tok, texts, second, prefix, suffix, second_prefix):
    features = tok.encode(texts, second)
    first_ids = tok.tokenize(texts).to_list()
    second_ids = [None] * len(texts) if second is None else tok.tokenize(second).to_list()
    length = tok.max_seq_length
    assert features["input_ids"].shape == (len(texts), length)
    for i, (a, b) in enumerate(zip(first_ids, second_ids, strict=True)):
        ids, segments, used = expected_pack(
            a, b, length, prefix, suffix, second_prefix, tok.pad_id, int(tok.style == "gpt2")
        )
        assert features["input_ids"][i].numpy().tolist() == ids, (i, a, b)
        assert features["segment_ids"][i].numpy().tolist() == segments, (i, a, b)
        assert int(features["sequence_length"][i]) == used
    for value in features.values():
        assert value.dtype == tf.int32


@pytest.mark.parametrize("length", [4, 5, 9, 24, 80])
def test_encode_roberta_pairs_truncate_longest_first(reference, length):
    tok = GPT2BPETokenizer.from_pretrained(str(FIXTURE), style="roberta", max_seq_length=length)
    texts = reference["texts"]
    first = [b"", b"a", *texts[:40], b"x" * 3]
    second = [b"b", b"", *texts[6000:6040], b"In the beginning God created the heaven."]
    s, e = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    assert (s, e, tok.pad_id) == (0, 2, 1)
    check_encode(tok, first, second, [s], [e], [e])
    check_encode(tok, first, None, [s], [e], [])


@pytest.mark.parametrize("length", [1, 3, 16, 100])
def test_encode_gpt2_without_special_tokens(reference, length):
    tok = GPT2BPETokenizer.from_pretrained(str(FIXTURE), max_seq_length=length)
    assert tok.pad_id == tok.token_to_id("<|endoftext|>") == 4
    texts = reference["texts"]
    check_encode(tok, texts[:50], None, [], [], [])
    check_encode(tok, texts[:50], texts[100:150], [], [], [])


def test_encode_gpt2_with_endoftext(reference):
    tok = GPT2BPETokenizer.from_pretrained(
        str(FIXTURE), add_special_tokens=True, max_seq_length=30, pad_token="<pad>"
    )
    assert tok.pad_id == 1 and tok.eos_id == tok.bos_id == 4
    texts = reference["texts"]
    check_encode(tok, texts[:50], None, [], [4], [])
    check_encode(tok, texts[:50], texts[100:150], [], [4], [])


def test_encode_one_string(roberta):
    features = roberta.encode("Let there be light", "and there was light.")
    assert features["input_ids"].shape == (24,) and features["sequence_length"].shape == ()
    batch = roberta.encode(["Let there be light"], ["and there was light."])
    for key, value in features.items():
        np.testing.assert_array_equal(value.numpy(), batch[key][0].numpy())


def test_pack_takes_tokenize_output(roberta):
    texts = ["Hello, world!", "¿Qué tal?"]
    packed = roberta.pack(roberta.tokenize(texts))
    encoded = roberta.encode(texts)
    for key, value in encoded.items():
        np.testing.assert_array_equal(packed[key].numpy(), value.numpy())


# -- detokenize and the vocabulary -------------------------------------------------------------


def test_detokenize_skips_special_tokens(roberta):
    texts = ["Let there be light", "¿Qué tal?  "]
    features = roberta.encode(texts, ["and there was light.", ""])
    assert roberta.detokenize(features["input_ids"]).numpy().tolist() == [
        b"Let there be lightand there was light.",
        "¿Qué tal?  ".encode(),
    ]
    kept = roberta.detokenize(features["input_ids"][0], skip_special_tokens=False).numpy()
    assert kept.startswith(b"<s>Let there be light</s></s>and there was light.</s><pad>")
    assert set(roberta.special_ids) == {0, 1, 2, 3}  # <s> <pad> </s> <unk>; no <mask>
    ragged = tf.ragged.constant([[0, 48, 2], []])
    assert roberta.detokenize(ragged).numpy().tolist() == [roberta.detokenize([48]).numpy(), b""]
    with pytest.raises(ValueError, match=r"\[time\] or \[batch, time\]"):
        roberta.detokenize(tf.zeros([1, 1, 1], tf.int32))


def test_vocabulary_facts(tokenizer):
    vocab = fixture_vocab()
    assert tokenizer.vocab_size == len(vocab) == 2000
    assert tokenizer.num_merges == len(vocab) - 256 - len(SPECIALS)
    assert [tokenizer.token_to_id(t) for t in SPECIALS] == [0, 1, 2, 3, 4]
    assert tokenizer.id_to_token(266) == "Ġthe"
    assert tokenizer.special_ids == (4,)
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tokenizer.token_to_id("<mask>")
    with pytest.raises(IndexError, match="has the id 5000"):
        tokenizer.id_to_token(5000)
    assert "style='gpt2'" in repr(tokenizer)


def test_the_split_pattern_is_a_named_entry_of_the_table(tokenizer):
    assert tokenizer.split_pattern == "gpt2" and "gpt2" in SPLIT_PATTERNS
    named = GPT2BPETokenizer(tokenizer.vocab_file, tokenizer.merges_file, split_pattern="gpt2")
    text = "Hello,  world!\n\n  It's 2024."
    assert named.tokenize(text).numpy().tolist() == tokenizer.tokenize(text).numpy().tolist()
    with pytest.raises(ValueError, match="split_pattern must be one of"):
        GPT2BPETokenizer(tokenizer.vocab_file, tokenizer.merges_file, split_pattern="llama-3")
