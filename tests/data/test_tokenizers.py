"""BERTTokenizer against the reference BERT tokenizer, on the real all-MiniLM-L6-v2 vocabulary.

The reference ids are in ``tests/fixtures/minilm/reference.json``, made by
``tests/fixtures/minilm/make_reference.py`` with Hugging Face's pure-Python port of Google's
tokenizer. The small handmade vocabularies check what the fixture does not: cased mode, the
final sigma, the word-length limit, and the errors.
"""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tests.real_data import minilm_folder
from texkit.data import BERTTokenizer
from texkit.data.tokenizers import TemplateTokenizer
from texkit.data.tokenizers.fast_path import _fast_safe_ranges
from texkit.data.tokenizers.normalization import (
    _BLOCK_BITS,
    _FAST_CANDIDATES,
    _NO_VALUE,
    _deleted,
    _lookup_tables,
    _unicode_tables,
)
from texkit.data.tokenizers.packing import _longest_first
from texkit.pretrained import CheckpointError

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "minilm" / "reference.json"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def minilm_dir():
    return minilm_folder()  # skipped without the package, failed under CI


@pytest.fixture(scope="module")
def reference():
    with open(FIXTURE, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def tokenizer():
    return BERTTokenizer(os.path.join(minilm_dir(), "vocab.txt"), lowercase=True)


def write_vocab(tmp_path, tokens, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
    return str(path)


def pieces(tok, text):
    return [tok.id_to_token(i) for i in tok.tokenize(text).numpy()]


# -- the reference ------------------------------------------------------------------------------


def test_tokenize_matches_reference_cases(tokenizer, reference):
    cases = reference["tokenizer_cases"]
    ids = tokenizer.tokenize([case["text"] for case in cases])
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    for case, got in zip(cases, ids.to_list(), strict=True):
        assert got == case["ids"], case["text"]
        assert [tokenizer.id_to_token(i) for i in got] == case["tokens"]


def test_tokenize_one_string_gives_a_dense_vector(tokenizer, reference):
    case = reference["tokenizer_cases"][0]
    for text in (case["text"], tf.constant(case["text"])):
        ids = tokenizer.tokenize(text)
        assert isinstance(ids, tf.Tensor) and ids.shape.rank == 1
        assert ids.numpy().tolist() == case["ids"]


def check_packed(features, expected, max_seq_length, pad_id):
    """Equal to the reference on the valid positions, padding after them."""
    lengths = [sum(mask) for mask in expected["attention_mask"]]
    assert features["sequence_length"].numpy().tolist() == lengths
    input_ids = features["input_ids"].numpy()
    segment_ids = features["segment_ids"].numpy()
    assert input_ids.shape == segment_ids.shape == (len(lengths), max_seq_length)
    for row, n in enumerate(lengths):
        assert input_ids[row, :n].tolist() == expected["input_ids"][row][:n]
        assert segment_ids[row, :n].tolist() == expected["token_type_ids"][row][:n]
        assert (input_ids[row, n:] == pad_id).all() and (segment_ids[row, n:] == 0).all()


def test_encode_single_texts_matches_reference(tokenizer, reference):
    expected = reference["single"]
    features = tokenizer.encode(expected["texts"])
    check_packed(features, expected, 128, tokenizer.pad_id)
    assert features["sequence_length"].numpy().tolist() == expected["sequence_length"]


def test_encode_pairs_matches_reference(tokenizer, reference):
    expected = reference["pairs"]
    features = tokenizer.encode(expected["first"], expected["second"])
    check_packed(features, expected, 128, tokenizer.pad_id)
    assert features["sequence_length"].numpy().tolist() == expected["sequence_length"]


def test_encode_truncates_pairs_longest_first_as_reference(reference):
    expected = reference["truncated_pairs"]
    tok = BERTTokenizer(
        os.path.join(minilm_dir(), "vocab.txt"), max_seq_length=expected["max_length"]
    )
    features = tok.encode(expected["first"], expected["second"])
    assert features["input_ids"].numpy().tolist() == expected["input_ids"]
    assert features["segment_ids"].numpy().tolist() == expected["token_type_ids"]
    check_packed(features, expected, expected["max_length"], tok.pad_id)


def test_longest_first_closed_form_equals_the_loop():
    def loop(first, second, budget):  # BERT's _truncate_seq_pair
        while first + second > budget:
            if first > second:
                first -= 1
            else:
                second -= 1
        return first, second

    grid = [(a, b, m) for a in range(13) for b in range(13) for m in range(11)]
    first, second, budget = (np.array(column, np.int32) for column in zip(*grid, strict=True))
    keep_first, keep_second = _longest_first(first, second, budget)
    expected = np.array([loop(a, b, m) for a, b, m in grid])
    np.testing.assert_array_equal(np.stack([keep_first, keep_second], axis=1), expected)


def test_encode_truncates_single_texts(tokenizer):
    text = "one two three four five six"
    tok = BERTTokenizer(tokenizer.vocab_file, max_seq_length=5)
    features = tok.encode([text])
    full = tokenizer.tokenize(text).numpy().tolist()
    assert features["input_ids"].numpy().tolist() == [[101, *full[:3], 102]]
    assert features["sequence_length"].numpy().tolist() == [5]


# -- graph use ----------------------------------------------------------------------------------


def test_encode_in_tf_data_has_static_shapes(tokenizer, reference):
    expected = reference["pairs"]
    batched = tokenizer.encode(expected["first"], expected["second"])
    dataset = tf.data.Dataset.from_tensor_slices((expected["first"], expected["second"]))
    dataset = dataset.map(tokenizer.encode)
    spec = dataset.element_spec
    assert spec["input_ids"].shape == spec["segment_ids"].shape == [128]
    assert spec["sequence_length"].shape == []
    assert all(spec[key].dtype == tf.int32 for key in spec)
    for row, features in enumerate(dataset):
        for key, value in features.items():
            np.testing.assert_array_equal(value, batched[key][row])

    singles = tf.data.Dataset.from_tensor_slices(expected["first"]).map(tokenizer.encode)
    assert singles.element_spec["input_ids"].shape == [128]
    first = next(iter(singles))
    np.testing.assert_array_equal(
        first["input_ids"], tokenizer.encode(expected["first"][0])["input_ids"]
    )


def test_tokenize_and_encode_in_tf_function(tokenizer, reference):
    texts = [case["text"] for case in reference["tokenizer_cases"]]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def encode(batch):
        return tokenizer.encode(batch), tokenizer.tokenize(batch)

    features, ids = encode(tf.constant(texts))
    assert features["input_ids"].shape == [len(texts), 128]
    assert ids.to_list() == [case["ids"] for case in reference["tokenizer_cases"]]
    for key, value in tokenizer.encode(texts).items():
        np.testing.assert_array_equal(features[key], value)


# -- the Python side ----------------------------------------------------------------------------


def test_special_ids_and_vocab_helpers(tokenizer):
    assert tokenizer.vocab_size == 30522
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id) == (0, 100, 101)
    assert (tokenizer.sep_id, tokenizer.mask_id) == (102, 103)
    assert tokenizer.id_to_token(7592) == "hello" and tokenizer.token_to_id("hello") == 7592
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tokenizer.token_to_id("no such token")
    with pytest.raises(IndexError, match="30522"):
        tokenizer.id_to_token(30522)


def test_detokenize_joins_wordpieces_and_drops_padding(tokenizer):
    features = tokenizer.encode(["Hello, TimeWarner!", "Café"])
    text = tokenizer.detokenize(features["input_ids"]).numpy().tolist()
    assert text == [b"hello, timewarner!", b"cafe"]  # as Hugging Face's WordPiece decoder
    single = tokenizer.detokenize(features["input_ids"][0], skip_special_tokens=False)
    assert single.numpy().decode().startswith("[CLS] hello, timewarner! [SEP] [PAD]")


def test_from_pretrained_reads_do_lower_case(tokenizer, tmp_path):
    tok = BERTTokenizer.from_pretrained(minilm_dir(), max_seq_length=32)
    assert tok.lowercase and tok.max_seq_length == 32 and tok.vocab == tokenizer.vocab
    write_vocab(tmp_path, SPECIALS)
    with pytest.raises(ValueError, match="pass lowercase"):
        BERTTokenizer.from_pretrained(tmp_path)
    assert not BERTTokenizer.from_pretrained(tmp_path, lowercase=False).lowercase


def test_from_pretrained_resolves_packaged_names_like_the_encoder(tokenizer, tmp_path):
    # The name the encoder accepts gives the same folder's vocabulary.
    tok = BERTTokenizer.from_pretrained("all-MiniLM-L6-v2")
    assert tok.vocab == tokenizer.vocab and tok.lowercase
    with pytest.raises(CheckpointError, match="no-such-model"):
        BERTTokenizer.from_pretrained("no-such-model")


# -- handmade vocabularies ----------------------------------------------------------------------

SMALL = SPECIALS + [
    "Café", "cafe", "Ha", "##llo", "hallo", "É", "##cole", "e", "Straße", "straße", "strasse",
    "ΟΔΟΣ", "οδος", "οδοσ", ",", "!", ".",
]  # fmt: skip


def test_cased_keeps_case_and_accents(tmp_path):
    tok = BERTTokenizer(write_vocab(tmp_path, SMALL), lowercase=False)
    assert pieces(tok, "Café Hallo, École!") == ["Café", "Ha", "##llo", ",", "É", "##cole", "!"]
    assert pieces(tok, "Cafe\u0301") == ["Café"]  # NFC first, as the reference
    assert pieces(tok, "Straße ΟΔΟΣ cafe") == ["Straße", "ΟΔΟΣ", "cafe"]
    assert pieces(tok, "CAFÉ") == ["[UNK]"]


def test_uncased_lowercases_strips_accents_and_keeps_python_lower(tmp_path):
    tok = BERTTokenizer(write_vocab(tmp_path, SMALL), lowercase=True)
    assert pieces(tok, "Café Hallo, École!") == ["cafe", "hallo", ",", "e", "##cole", "!"]
    # str.lower keeps ß and writes a word-final capital sigma as ς (ICU's case folding would
    # give "strasse" and "οδοσ").
    assert pieces(tok, "STRAßE Straße") == ["straße", "straße"]
    assert pieces(tok, "ΟΔΟΣ. ΟΔΟΣ\u200b ΟΔΟΣΟΔΟΣ") == ["οδος", ".", "οδος", "[UNK]"]


def test_control_format_and_private_use_characters_are_deleted(tmp_path):
    tok = BERTTokenizer(write_vocab(tmp_path, SMALL), lowercase=True)
    assert pieces(tok, "ca\x07f\u200be\ue000 h\x00a\ufffdllo") == ["cafe", "hallo"]
    assert pieces(tok, b"caf\xffe") == ["cafe"]  # bytes that are not UTF-8, read as U+FFFD


def test_words_longer_than_the_limit_become_unk(tmp_path):
    tok = BERTTokenizer(write_vocab(tmp_path, SPECIALS + ["a", "##a", "ж", "##ж"]))
    assert pieces(tok, "a" * 100) == ["a"] + ["##a"] * 99
    assert pieces(tok, "a" * 101 + " a") == ["[UNK]", "a"]
    # The limit counts characters, not UTF-8 bytes: 60 Cyrillic letters are 120 bytes.
    assert pieces(tok, "ж" * 60) == ["ж"] + ["##ж"] * 59
    short = BERTTokenizer(tok.vocab_file, max_chars_per_word=3)
    assert pieces(short, "aaa aaaa") == ["a", "##a", "##a", "[UNK]"]


# -- errors -------------------------------------------------------------------------------------


def test_missing_vocab_file_names_the_path(tmp_path):
    missing = str(tmp_path / "nope" / "vocab.txt")
    with pytest.raises(FileNotFoundError, match="nope"):
        BERTTokenizer(missing)
    with pytest.raises(IsADirectoryError, match="from_pretrained"):
        BERTTokenizer(str(tmp_path))


@pytest.mark.parametrize("token", SPECIALS)
def test_vocab_without_a_special_token_names_it(tmp_path, token):
    path = write_vocab(tmp_path, [t for t in SPECIALS if t != token] + ["a"])
    with pytest.raises(ValueError, match=re.escape(path) + ".*has no " + re.escape(token)):
        BERTTokenizer(path)


def test_bad_vocab_lines_are_named(tmp_path):
    path = write_vocab(tmp_path, SPECIALS + ["a", "b", "a"])
    with pytest.raises(ValueError, match="line 8 repeats the token 'a' of line 6"):
        BERTTokenizer(path)
    path = write_vocab(tmp_path, SPECIALS + ["a", "", "b"])
    with pytest.raises(ValueError, match="line 7 is empty"):
        BERTTokenizer(path)


def test_bad_arguments_are_named(tmp_path):
    path = write_vocab(tmp_path, SPECIALS + ["a"])
    with pytest.raises(ValueError, match="max_seq_length must be an int >= 2, got 1"):
        BERTTokenizer(path, max_seq_length=1)
    with pytest.raises(ValueError, match="max_chars_per_word"):
        BERTTokenizer(path, max_chars_per_word=0)
    with pytest.raises(TypeError, match="lowercase"):
        BERTTokenizer(path, lowercase="yes")
    two = BERTTokenizer(path, max_seq_length=2)
    assert two.encode("a")["input_ids"].numpy().tolist() == [2, 3]
    with pytest.raises(ValueError, match="max_seq_length=2"):
        two.encode("a", "a")
    small = BERTTokenizer(path)
    with pytest.raises(ValueError, match="texts must be a string or a"):
        small.tokenize([["a"]])
    with pytest.raises(ValueError, match="same shape"):
        small.encode(["a", "b"], "c")
    encode = tf.function(small.encode, input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="differ in batch size"):
        encode(tf.constant(["a", "b"]), tf.constant(["c", "d", "e"]))


# -- the FastBertTokenizer shortcut ---------------------------------------------------------------

# Every character the shortcut may see, as a word and as a continuation, so the ids spell the
# words and where they split.
SPELLING = [
    chr(cp)
    for cp in range(0x21, _FAST_CANDIDATES)
    if not _deleted()[cp] and not chr(cp).isspace() and not 0xD800 <= cp < 0xE000
]
FAST_VOCAB = SPECIALS + SPELLING + ["##" + c for c in SPELLING]
FAST_VOCAB += ["ab", "##ab", "Ab", "word", "##word"]
# Tokens no word matches: with punctuation (the shortcut's wordpiece model leaves them out) and
# with whitespace (which it must not see: "a b" made it give [UNK] for "a" before a space).
FAST_VOCAB += ["a.b", "...", "[unused0]", "##a.", "a b", "##b\ta", "Ab\u00a0"]
FAST_VOCAB.append("\x80" + str(FAST_VOCAB.index("a b")))  # what the shortcut puts for "a b"


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def fast_tokenizer(request, tmp_path_factory):
    path = write_vocab(tmp_path_factory.mktemp("fast"), FAST_VOCAB)
    return BERTTokenizer(path, lowercase=request.param)


def safe_code_points(tok):
    return [cp for first, last in _fast_safe_ranges(tok.lowercase) for cp in range(first, last + 1)]


def both_paths(tok, texts):
    """The ids of the FastBertTokenizer shortcut and of the per-code-point table, as lists."""
    texts = tf.constant(texts)
    return tok._tokenize_fast(texts).to_list(), tok._tokenize_table(texts).to_list()


def contexts(c):
    return [c, c * 3, f"a{c}b", f"Ab{c}", f"{c}ab", f"A {c} B", f"word{c}{c}Word", f"x{c}\ty"]


def test_the_shortcut_equals_the_table_on_every_character_it_takes(fast_tokenizer):
    tok = fast_tokenizer
    texts = [text for cp in safe_code_points(tok) for text in contexts(chr(cp))]
    taken = tok._takes_fast_path(tf.constant(texts)).numpy()
    fast, table = both_paths(tok, texts)
    for text, got, expected, took in zip(texts, fast, table, taken, strict=True):
        assert got == expected, repr(text)
        # Every row is taken but those with an [UNK] (uncased, U+2329 decomposes to U+3008,
        # which this vocabulary cannot spell).
        assert took == (tok.unk_id not in expected), repr(text)
    assert taken.mean() > 0.99


def test_the_shortcut_takes_common_text_and_leaves_out_what_differs(fast_tokenizer):
    tok = fast_tokenizer
    safe = {chr(cp) for cp in safe_code_points(tok)}
    for c in "aZ09 \t\n\r.,;!?'\"-éèàçñÑüÖ¿¡“”‘’—–…«»€£жЖщαβω":
        assert c in safe or (tok.lowercase and c == "…"), repr(c)
    unsafe = "\x00\x07\x0b\x0c\x7f\x80\ufffd\ue000Ａ一"  # controls, private use; past U+3000
    # Uncased: what NFKC_Casefold folds, the final sigma; cased: a character NFC composes.
    unsafe += "ßΣ…ﬁ①½Ⅻ" if tok.lowercase else "\u0301"
    for c in unsafe:
        assert c not in safe, repr(c)
    # Rows with them take the table, and every row gives the table's ids through tokenize.
    texts = [text for c in unsafe + "ΣßéЖ" for text in contexts(c)]
    routed = tok._takes_fast_path(tf.constant(texts)).numpy()
    assert not any(routed[i] for i, text in enumerate(texts) if any(c in text for c in unsafe))
    # The word limit: FastBertTokenizer counts (normalized) bytes, the table characters. A word
    # within the byte limit is taken; one past it is [UNK] there and redone by the table.
    long_words = ["ж" * 50, "ж" * 33 + " " + "ж" * 33, "ж" * 51, "ж" * 60 + " ab", "a" * 150]
    texts += long_words + ["é" * 60, b"caf\xffe ab"]
    routed = tok._takes_fast_path(tf.constant(texts)).numpy()
    # 60 "é" are 60 bytes once accents are stripped (uncased), 120 when cased; bad UTF-8.
    assert list(routed[-7:]) == [True, True, False, False, False, tok.lowercase, False]
    assert tok.unk_id not in tok.tokenize("ж" * 60).numpy()
    assert tok.tokenize(texts).to_list() == tok._tokenize_table(tf.constant(texts)).to_list()


def test_the_shortcut_equals_the_table_on_random_text(fast_tokenizer):
    tok = fast_tokenizer
    rng = np.random.default_rng(0)
    # ASCII, the characters the shortcut takes and some it does not; letters and spaces often.
    safe = [chr(cp) for cp in safe_code_points(tok)]
    alphabet = [chr(cp) for cp in range(128)] + list(rng.choice(safe, 200))
    alphabet += list("ßΣﬁ①\u0301\u00ad\ufffdＡ") + list("abcABC  ") * 8
    texts = ["".join(rng.choice(alphabet, size=rng.integers(0, 40))) for _ in range(3000)]
    table = tok._tokenize_table(tf.constant(texts)).to_list()
    assert tok.tokenize(texts).to_list() == table
    taken = tok._takes_fast_path(tf.constant(texts)).numpy()
    assert 300 < taken.sum() < 2900
    fast = tok._tokenize_fast(
        tf.constant([t for t, x in zip(texts, taken, strict=True) if x])
    ).to_list()
    assert fast == [ids for ids, x in zip(table, taken, strict=True) if x]
    # The word limit, hit often: FastBertTokenizer counts bytes, the table characters.
    for limit in (3, 2, 1):
        short = BERTTokenizer(tok.vocab_file, lowercase=tok.lowercase, max_chars_per_word=limit)
        table = short._tokenize_table(tf.constant(texts)).to_list()
        assert short.tokenize(texts).to_list() == table
        graph = tf.function(short.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        assert graph(tf.constant(texts)).to_list() == table
        assert any(short.unk_id in ids for ids in table)


def test_routing_in_tf_data_equals_the_table(fast_tokenizer):
    # Batches that take the shortcut whole, that fail the character check, that hold an [UNK]
    # (a word past FastBertTokenizer's byte limit) or both.
    tok = fast_tokenizer
    texts = ["Hello, world!", "Café ж", "ß ab", "ж" * 60, "", "ab", "ж" * 60 + " ß", "ok"]
    expected = tok._tokenize_table(tf.constant(texts)).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(tok.tokenize)
    assert [row for batch in dataset for row in batch.to_list()] == expected
    # The table path is a branch TensorFlow keeps as a function (not lowered into the graph,
    # where every batch would walk its nodes).
    graph = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    ops = graph.get_concrete_function().graph.get_operations()
    kept = [
        op
        for op in ops
        if op.type in ("If", "StatelessIf") and not op.get_attr("_lower_using_switch_merge")
    ]
    assert len(kept) == 1
    assert graph(tf.constant(texts)).to_list() == expected


def test_saved_model_serves_raw_text(fast_tokenizer, tmp_path):
    # Exported with the routing's functions and reloaded without the tokenizer's Python.
    tok = fast_tokenizer
    module = tf.Module()
    module.tokenizer = tok
    module.serve = tf.function(
        lambda texts: tok.encode(texts)["input_ids"],
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    texts = ["Hello, world!", "ß ab", "ж" * 60, ""]
    expected = tok.encode(texts)["input_ids"].numpy()
    tf.saved_model.save(module, str(tmp_path / "served"))
    loaded = tf.saved_model.load(str(tmp_path / "served"))
    assert (loaded.serve(tf.constant(texts)).numpy() == expected).all()


def test_mixed_batches_keep_their_order_and_equal_one_row_at_a_time(fast_tokenizer):
    tok = fast_tokenizer
    rows = [
        "Hello, world!",
        "Café, école",
        "",
        b"caf\xffe ab",  # not UTF-8: the table path
        "plain ASCII\x07 text\n",
        "жж ab",
        "\u3000ab\u00a0Ab",
        "ab" * 60 + " ab",
        "é" + "a" * 120,
    ]
    one_by_one = [tok.tokenize(row).numpy().tolist() for row in rows]
    graph = tf.function(tok.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    for order in ([*range(len(rows))], [*reversed(range(len(rows)))], [1, 3, 0, 5, 2, 4, 8, 6, 7]):
        batch = [rows[i] for i in order]
        expected = [one_by_one[i] for i in order]
        assert tok.tokenize(batch).to_list() == expected
        assert graph(tf.constant(batch)).to_list() == expected
        assert tok._tokenize_table(tf.constant(batch)).to_list() == expected
    for batch in ([r for r in rows if isinstance(r, str) and r.isascii()], rows[1:2], []):
        ids = tok.tokenize(tf.constant(batch, tf.string, shape=[len(batch)]))
        expected = tok._tokenize_table(tf.constant(batch, tf.string)).to_list()
        assert ids.to_list() == expected
        assert graph(tf.constant(batch, tf.string, shape=[len(batch)])).to_list() == expected
        assert ids.shape[0] == len(batch)


def test_words_longer_than_the_limit_become_unk_on_the_table_path(tmp_path):
    tok = BERTTokenizer(write_vocab(tmp_path, SPECIALS + ["a", "##a", "ж", "##ж"]))
    # Not ASCII, so these take the table; the limit counts characters there too.
    assert pieces(tok, "ж" + "a" * 99) == ["ж"] + ["##a"] * 99
    assert pieces(tok, "ж" + "a" * 100 + " ж") == ["[UNK]", "ж"]
    assert pieces(tok, "ж" * 101) == ["[UNK]"]


def test_pack_equals_tf_text_combine_segments_and_pad_model_inputs(tmp_path):
    # pack builds the inputs densely; tf_text's ragged packing of the same rows, cut as BERT
    # does, is the reference.
    tok = BERTTokenizer(write_vocab(tmp_path, SMALL), max_seq_length=9)
    rng = np.random.default_rng(0)
    lengths = [0, 1, 3, 7, 8, 12, 0, 5]
    first = tf.ragged.constant([list(rng.integers(5, 40, n)) for n in lengths], tf.int32)
    second = tf.ragged.constant([list(rng.integers(5, 40, n)) for n in lengths[::-1]], tf.int32)
    row_lengths = [tf.cast(x.row_lengths(), tf.int32) for x in (first, second)]

    def reference(segments):
        ids, segment_ids = tf_text.combine_segments(
            segments, start_of_sequence_id=tok.cls_id, end_of_segment_id=tok.sep_id
        )
        padded, _ = tf_text.pad_model_inputs(ids, 9, pad_value=tok.pad_id)
        segment_ids, _ = tf_text.pad_model_inputs(segment_ids, 9, pad_value=0)
        return padded, segment_ids, ids.row_lengths()

    got = tok.pack(first)
    want = reference([first[:, :7]])
    keep_first, keep_second = _longest_first(*row_lengths, 6)
    got_pair = tok.pack(first, second)
    want_pair = reference(
        [
            tf.ragged.constant([r[:k] for r, k in zip(x.to_list(), kept.numpy(), strict=True)])
            for x, kept in ((first, keep_first), (second, keep_second))
        ]
    )
    for features, (ids, segment_ids, total) in ((got, want), (got_pair, want_pair)):
        assert features["input_ids"].dtype == features["segment_ids"].dtype == tf.int32
        assert features["input_ids"].numpy().tolist() == ids.numpy().tolist()
        assert features["segment_ids"].numpy().tolist() == segment_ids.numpy().tolist()
        assert features["sequence_length"].numpy().tolist() == total.numpy().tolist()
    assert max(got_pair["sequence_length"].numpy()) == 9
    # int64 ids (tf.ragged.constant's default) are taken; a dense tensor or a mismatch is named.
    assert tok.pack(tf.cast(first, tf.int64))["input_ids"].dtype == tf.int32
    with pytest.raises(TypeError, match="ids must be a"):
        tok.pack(first.to_tensor())
    with pytest.raises(TypeError, match="second_ids must be a"):
        tok.pack(first, [[1, 2]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="differ in rows"):
        tok.pack(first, second[:3])
    short = BERTTokenizer(tok.vocab_file, max_seq_length=2)
    assert short.pack(first)["input_ids"].numpy().tolist()[3] == [tok.cls_id, tok.sep_id]
    with pytest.raises(ValueError, match="max_seq_length=2"):
        short.pack(first, second)


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_lookup_tables_give_every_code_point_its_table_row(lowercase):
    tables, lookup = _unicode_tables(lowercase), _lookup_tables(lowercase)
    cp = np.arange(0x110000)
    expected = tables.range_rows[np.searchsorted(tables.range_starts, cp, side="right") - 1]
    block = lookup.block_index[cp >> _BLOCK_BITS]
    rows = lookup.block_rows[block + (cp & (2**_BLOCK_BITS - 1))]
    np.testing.assert_array_equal(rows, expected)
    for row, length in enumerate(lookup.row_lengths):
        values = tables.row_values[tables.row_splits[row] : tables.row_splits[row + 1]]
        assert lookup.row_values[row, :length].tolist() == values.tolist()
        assert (lookup.row_values[row, length:] == _NO_VALUE).all()


def test_the_tokenizers_share_one_base(tokenizer):
    # BERTTokenizer packs and answers through TemplateTokenizer, as the subword tokenizers do.
    assert isinstance(tokenizer, TemplateTokenizer)
    assert BERTTokenizer.pack is TemplateTokenizer.pack
    assert BERTTokenizer.token_to_id is TemplateTokenizer.token_to_id
    assert tokenizer.special_ids == (0, 101, 102)
    assert repr(tokenizer).startswith("BERTTokenizer(") and "lowercase=True" in repr(tokenizer)
