"""SentencePieceTokenizer against ALBERT's and T5's reference tokenizers, on two small models.

The models (``tests/fixtures/sentencepiece/albert/spiece.model`` and ``t5/spiece.model``: 1,000
unigram pieces trained on the Bible corpus of the examples, with ALBERT's and T5's special
pieces) and the reference ids of 10,257 texts (``reference.npz``: verses in English and Spanish,
edge cases, random strings of many scripts) are made by
``tests/fixtures/sentencepiece/make_fixture.py`` with the ``sentencepiece`` library (T5) and
Hugging Face's slow ``AlbertTokenizer`` (ALBERT, with its three preprocessing options). Neither
is needed here: the tests read the models with TensorFlow only.
"""

import json
import re
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import tokenizer_serving
from texkit.data.tokenizers import SentencePieceTokenizer
from texkit.data.tokenizers.albert_text import _COMBINING, _RECENT_CAPITALS, _WHITESPACE
from texkit.data.tokenizers.sentencepiece_files import _read_model

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sentencepiece"
BATCH = 1024
STYLES = ("albert", "t5")


def rows(values, splits):
    return [values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]


@pytest.fixture(scope="module")
def reference():
    data = np.load(FIXTURE / "reference.npz")
    texts = [row.tobytes() for row in rows(data["text_bytes"], data["text_splits"])]
    subset = data["subset"].tolist()
    result = {"texts": texts, "subset": subset, "meta": json.loads(str(data["meta"]))}
    for style in STYLES:
        result[f"{style}_ids"] = [
            row.tolist() for row in rows(data[f"{style}_ids"], data[f"{style}_id_splits"])
        ]
        decoded = rows(data[f"{style}_decoded"], data[f"{style}_decoded_splits"])
        result[f"{style}_decoded"] = [row.tobytes() for row in decoded]
        assert len(result[f"{style}_ids"]) == len(texts) >= 10_000
        assert len(result[f"{style}_decoded"]) == len(subset)
    option_ids = rows(data["albert_option_ids"], data["albert_option_id_splits"])
    options = [tuple(bool(flag) for flag in row) for row in data["albert_options"]]
    result["albert_options"] = {
        option: [row.tolist() for row in option_ids[k * len(subset) : (k + 1) * len(subset)]]
        for k, option in enumerate(options)
    }
    assert len(options) == 7
    return result


@pytest.fixture(scope="module")
def albert():
    return SentencePieceTokenizer.from_pretrained(FIXTURE / "albert", style="albert")


@pytest.fixture(scope="module")
def t5():
    return SentencePieceTokenizer.from_pretrained(FIXTURE / "t5", style="t5")


@pytest.fixture(scope="module")
def tokenizers(albert, t5):
    return {"albert": albert, "t5": t5}


def batches(items, size=BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def tokenize_all(tokenizer, texts):
    got = []
    for batch in batches(texts):
        ids = tokenizer.tokenize(batch)
        assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
        got += ids.to_list()
    return got


def differences(texts, got, expected):
    return [(i, texts[i], got[i], expected[i]) for i in range(len(texts)) if got[i] != expected[i]]


def reference_preprocess(text, do_lower_case=True, keep_accents=False, remove_space=True):
    """The slow AlbertTokenizer's text before SentencePiece (transformers 4.57.6): the lowercasing
    of ``PreTrainedTokenizer.tokenize`` (``re.sub("(.+?)", lower)``: one character at a time),
    then ``AlbertTokenizer.preprocess_text``."""
    if do_lower_case:
        text = re.sub(r"(.+?)", lambda m: m.group(1).lower(), text)
    outputs = " ".join(text.strip().split()) if remove_space else text
    outputs = outputs.replace("``", '"').replace("''", '"')
    if not keep_accents:
        outputs = unicodedata.normalize("NFKD", outputs)
        outputs = "".join([c for c in outputs if not unicodedata.combining(c)])
    if do_lower_case:
        outputs = outputs.lower()
    return outputs


def class_code_points(character_class):
    """The code points of an RE2 character class body written with \\x{..}, \\t, ... and ranges."""
    escapes = {"t": 9, "n": 10, "r": 13}
    items = []
    for escape, hex_value, char in re.findall(
        r"\\x\{([0-9A-F]+)\}|\\x([0-9A-F]{2})|(\\[tnr]|[^\\])", character_class
    ):
        if escape or hex_value:
            items.append(int(escape or hex_value, 16))
        elif char.startswith("\\"):
            items.append(escapes[char[1]])
        else:
            items.append(char)
    code_points, i = set(), 0
    while i < len(items):
        if i + 2 < len(items) and items[i + 1] == "-":
            low, high = items[i], items[i + 2]
            code_points |= set(range(ord(low) if isinstance(low, str) else low, high + 1))
            i += 3
        else:
            code_points.add(ord(items[i]) if isinstance(items[i], str) else items[i])
            i += 1
    return code_points


# -- the references ----------------------------------------------------------------------------


def test_albert_ids_match_the_slow_albert_tokenizer_on_every_text(albert, reference):
    texts = reference["texts"]
    got = tokenize_all(albert, texts)
    assert not differences(texts, got, reference["albert_ids"])[:5]


def test_t5_ids_match_sentencepiece_on_every_text_but_exact_ties(t5, reference):
    texts = reference["texts"]
    got = tokenize_all(t5, texts)
    scores = [score for _, score, _ in _read_model(str(FIXTURE / "t5" / "spiece.model"))[1]]
    disagreements = differences(texts, got, reference["t5_ids"])
    # tensorflow_text's older SentencePiece breaks ties of equal score otherwise (see the
    # module): the same pieces in another order ("l" "ll" for "ll" "l"), nothing else.
    for _, text, ours, theirs in disagreements:
        assert sorted(ours) == sorted(theirs), (text, ours, theirs)
        assert sum(scores[i] for i in ours) == pytest.approx(sum(scores[i] for i in theirs))
    assert len(disagreements) <= 1
    assert "differs from sentencepiece on 0 texts" in reference["meta"]["t5_hf"]


@pytest.mark.parametrize(
    "option",
    [
        (True, False, False),
        (True, True, True),
        (True, True, False),
        (False, False, True),
        (False, False, False),
        (False, True, True),
        (False, True, False),
    ],
)
def test_albert_options_match_the_slow_albert_tokenizer(reference, option):
    do_lower_case, keep_accents, remove_space = option
    tokenizer = SentencePieceTokenizer(
        FIXTURE / "albert" / "spiece.model",
        "albert",
        do_lower_case=do_lower_case,
        keep_accents=keep_accents,
        remove_space=remove_space,
    )
    texts = [reference["texts"][i] for i in reference["subset"]]
    got = tokenize_all(tokenizer, texts)
    assert not differences(texts, got, reference["albert_options"][option])[:5]


def test_albert_preprocessing_is_the_slow_tokenizers_on_every_text(albert, reference):
    # The ids hardly see the preprocessing of characters the small model does not know (Greek's
    # final sigma, Vithkuqi capitals): the preprocessed text does.
    texts = reference["texts"]
    for batch in batches(texts):
        got = albert._albert_preprocess(tf.constant(batch)).numpy().tolist()
        expected = [reference_preprocess(text.decode("utf-8")).encode("utf-8") for text in batch]
        assert got == expected, next(
            (t, g, e) for t, g, e in zip(batch, got, expected, strict=True) if g != e
        )


@pytest.mark.skipif(
    unicodedata.unidata_version != "14.0.0",
    reason="the tables are Python 3.11's Unicode 14.0; another unicodedata differs by design",
)
def test_albert_preprocessing_of_every_code_point(albert):
    chars = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"
    ]
    # Alone, after a letter and before a space (a final sigma's context), and doubled.
    for template in ("{}", "a{}", "\u03b1{} x", "{}{}"):
        texts = [template.format(c, c) for c in chars]
        got = albert._albert_preprocess(tf.constant(texts)).numpy().tolist()
        expected = [reference_preprocess(text).encode("utf-8") for text in texts]
        bad = [(t, g, e) for t, g, e in zip(texts, got, expected, strict=True) if g != e]
        assert not bad[:5], template


@pytest.mark.skipif(
    unicodedata.unidata_version != "14.0.0",
    reason="the tables are Python 3.11's Unicode 14.0; another unicodedata differs by design",
)
def test_tables_are_pythons():
    assert class_code_points(_COMBINING) == {
        c for c in range(0x110000) if unicodedata.combining(chr(c))
    }
    assert class_code_points(_WHITESPACE) == {c for c in range(0x110000) if chr(c).isspace()}
    recent = {
        c: c + offset for first, last, offset in _RECENT_CAPITALS for c in range(first, last + 1)
    }
    assert all(chr(c).lower() == chr(lower) for c, lower in recent.items())
    chars = [
        chr(c)
        for c in range(1, 0x110000)
        if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"
    ]
    lowered = tf.strings.lower(tf.constant(chars), encoding="utf-8").numpy().tolist()
    unknown_to_icu = {
        ord(c) for c, low in zip(chars, lowered, strict=True) if c.lower().encode() != low
    }
    assert unknown_to_icu == set(recent)


def test_detokenize_is_sentencepieces_decode(tokenizers, reference):
    subset = reference["subset"]
    for style, tokenizer in tokenizers.items():
        ids = tf.ragged.constant([reference[f"{style}_ids"][i] for i in subset], tf.int32)
        got = tokenizer.detokenize(ids).numpy().tolist()
        expected = reference[f"{style}_decoded"]
        assert got == expected, next((g, e) for g, e in zip(got, expected, strict=True) if g != e)


def test_detokenize_skips_or_writes_the_special_tokens(albert, t5):
    features = albert.encode(["Let there be light"], ["and there was light."])
    ids = features["input_ids"]
    assert albert.detokenize(ids).numpy().tolist() == [b"let there be light and there was light."]
    assert albert.detokenize(ids, skip_special_tokens=False).numpy().tolist() == [
        b"[CLS] let there be light[SEP] and there was light.[SEP]" + b"<pad>" * (512 - 12)
    ]
    text = t5.detokenize(t5.encode("Let there be light")["input_ids"])
    assert text.shape == () and text.numpy() == b"Let there be light"
    unknown = t5.tokenize("a \u4e00")
    assert t5.unk_id in unknown.numpy().tolist()
    assert t5.detokenize(unknown).numpy() == "a  \u2047 ".encode()  # "a", "▁", " ⁇ "
    assert t5.detokenize(unknown, skip_special_tokens=False).numpy() == b"a <unk>"
    assert albert.detokenize(tf.zeros([2, 0], tf.int32)).numpy().tolist() == [b"", b""]
    with pytest.raises(ValueError, match=r"\[time\] or \[batch, time\]"):
        albert.detokenize(tf.zeros([1, 1, 1], tf.int32))


def test_one_string_gives_a_vector(tokenizers, reference):
    text = reference["texts"][0]
    for style, tokenizer in tokenizers.items():
        for value in (text, text.decode("utf-8"), tf.constant(text)):
            got = tokenizer.tokenize(value)
            assert isinstance(got, tf.Tensor) and got.shape.rank == 1
            assert got.numpy().tolist() == reference[f"{style}_ids"][0]
        assert tokenizer.tokenize("").numpy().tolist() == []
        assert tokenizer.tokenize(tf.zeros([0], tf.string)).to_list() == []
        features = tokenizer.encode(text)
        assert features["input_ids"].shape == [512] and features["sequence_length"].shape == []


def test_text_that_is_not_utf8_is_read_as_replacement_characters(tokenizers):
    for tokenizer in tokenizers.values():
        got = tokenizer.tokenize([b"caf\xe9 \xff ok", "caf\ufffd \ufffd ok".encode()]).to_list()
        assert got[0] == got[1]


# -- packing -----------------------------------------------------------------------------------


def expected_features(tokenizer, first, second, length):
    """``encode``'s features written out: BERT's truncation as its loop, the style's template."""
    if tokenizer.style == "albert":
        parts = ([tokenizer.cls_id], [tokenizer.sep_id], [], [tokenizer.sep_id])
        second_segment = 1
    else:
        parts = ([], [tokenizer.eos_id], [], [tokenizer.eos_id])
        second_segment = 0
    first = list(first)
    if second is None:
        first = first[: length - 2 if tokenizer.style == "albert" else length - 1]
        ids = parts[0] + first + parts[1]
        segments = [0] * len(ids)
    else:
        second = list(second)
        budget = length - sum(map(len, parts))
        while len(first) + len(second) > budget:
            (first if len(first) > len(second) else second).pop()
        head = parts[0] + first + parts[1]
        tail = parts[2] + second + parts[3]
        ids = head + tail
        segments = [0] * len(head) + [second_segment] * len(tail)
    padding = length - len(ids)
    return ids + [tokenizer.pad_id] * padding, segments + [0] * padding, len(ids)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("length", [3, 4, 5, 8, 13, 24, 64])
def test_encode_pairs_truncation_and_padding(style, length, reference):
    tokenizer = SentencePieceTokenizer(FIXTURE / style / "spiece.model", style, length)
    texts = reference["texts"]
    first = ["", "a", "In the beginning", "", *texts[:30:3], *texts[4000:4020:2]]
    second = ["", "", "", "God created the heaven", *texts[1:31:3], *texts[9000:9020:2]]
    first_ids = tokenizer.tokenize(first).to_list()
    second_ids = tokenizer.tokenize(second).to_list()
    for pair in (False, True):
        features = tokenizer.encode(first, second if pair else None)
        for i in range(len(first)):
            ids, segments, total = expected_features(
                tokenizer, first_ids[i], second_ids[i] if pair else None, length
            )
            assert features["input_ids"][i].numpy().tolist() == ids
            assert features["segment_ids"][i].numpy().tolist() == segments
            assert features["sequence_length"][i].numpy() == total
        packed = tokenizer.pack(
            tokenizer.tokenize(first), tokenizer.tokenize(second) if pair else None
        )
        for key, value in packed.items():
            np.testing.assert_array_equal(value.numpy(), features[key].numpy())
            assert value.dtype == tf.int32


def test_encode_pair_errors(albert, t5):
    with pytest.raises(ValueError, match="same shape"):
        albert.encode(["a", "b"], "c")
    with pytest.raises(ValueError, match="same shape"):
        albert.encode(["a", "b"], ["c"])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def pair(first, second):
        return albert.encode(first, second)

    with pytest.raises(tf.errors.InvalidArgumentError, match="differ in batch size"):
        pair(tf.constant(["a", "b"]), tf.constant(["c"]))
    with pytest.raises(ValueError, match=r"a string or a \[batch\] of strings"):
        albert.tokenize([["a"]])
    with pytest.raises(TypeError, match="tf.RaggedTensor"):
        albert.pack(tf.constant([[1, 2]]))
    short = SentencePieceTokenizer(FIXTURE / "albert" / "spiece.model", "albert", 2)
    assert short.encode("hello")["input_ids"].numpy().tolist() == [short.cls_id, short.sep_id]
    with pytest.raises(ValueError, match="max_seq_length=2 leaves no room for the 3 special"):
        short.encode("a", "b")
    t5_short = SentencePieceTokenizer(FIXTURE / "t5" / "spiece.model", "t5", 1)
    with pytest.raises(ValueError, match="max_seq_length=1 leaves no room for the 2 special"):
        t5_short.encode("a", "b")


# -- in graphs -----------------------------------------------------------------------------------


def test_in_tf_data_map(tokenizers, reference):
    texts = reference["texts"][5000:5100]
    for tokenizer in tokenizers.values():
        expected = tokenizer.encode(texts)
        one_by_one = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer.encode)
        got = list(one_by_one.batch(100))[0]
        batched = next(
            iter(tf.data.Dataset.from_tensor_slices(texts).batch(50).map(tokenizer.encode))
        )
        for key in expected:
            np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy())
            np.testing.assert_array_equal(batched[key].numpy(), expected[key].numpy()[:50])
        pairs = tf.data.Dataset.from_tensor_slices((texts[:50], texts[50:])).map(tokenizer.encode)
        pair_features = list(pairs.batch(50))[0]
        np.testing.assert_array_equal(
            pair_features["input_ids"].numpy(),
            tokenizer.encode(texts[:50], texts[50:])["input_ids"].numpy(),
        )


def test_in_tf_function(tokenizers, reference):
    texts = reference["texts"][::97]
    for style, tokenizer in tokenizers.items():

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def run(batch, tokenizer=tokenizer):
            return tokenizer.tokenize(batch), tokenizer.encode(batch, batch)

        ids, features = run(tf.constant(texts))
        assert ids.to_list() == reference[f"{style}_ids"][::97]
        expected = tokenizer.encode(texts, texts)
        for key in expected:
            np.testing.assert_array_equal(features[key].numpy(), expected[key].numpy())


def graph_op_types(concrete):
    graph_def = concrete.graph.as_graph_def()
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types |= {node.op for node in function.node_def}
    return types


@pytest.mark.parametrize("style", STYLES)
def test_saved_model_round_trip(style, reference, tmp_path):
    # The model's bytes travel in the SavedModel: the file is gone when it is loaded.
    shutil.copy(FIXTURE / style / "spiece.model", tmp_path / "spiece.model")
    tokenizer = SentencePieceTokenizer.from_pretrained(tmp_path, style=style, max_seq_length=32)
    texts = reference["texts"][::41]
    expected_ids = reference[f"{style}_ids"][::41]
    expected = tokenizer.encode(texts, texts[::-1])

    def serve(tokenizer, texts):
        ids = tokenizer.tokenize(texts)
        features = tokenizer.encode(texts, tf.reverse(texts, [0]))
        return {"ids": ids.to_tensor(-1), "lengths": ids.row_lengths(), **features}

    module = tokenizer_serving(tokenizer, serve)
    types = graph_op_types(module.serve.get_concrete_function())
    assert not types & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    path = str(tmp_path / "serving")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    del module, tokenizer
    (tmp_path / "spiece.model").unlink()
    loaded = tf.saved_model.load(path)
    for outputs in (
        loaded.signatures["serving_default"](texts=tf.constant(texts)),
        loaded.serve(tf.constant(texts)),
    ):
        ids = tf.RaggedTensor.from_tensor(outputs["ids"], lengths=outputs["lengths"])
        assert ids.to_list() == expected_ids
        for key in expected:
            np.testing.assert_array_equal(outputs[key].numpy(), expected[key].numpy())


# -- files and options ---------------------------------------------------------------------------


def albert_folder(tmp_path, config=None, name="spiece.model"):
    tmp_path.mkdir(exist_ok=True)
    shutil.copy(FIXTURE / "albert" / "spiece.model", tmp_path / name)
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config)
        (tmp_path / "tokenizer_config.json").write_text(text, "utf-8")
    return tmp_path


def test_from_pretrained_reads_albert_options_from_tokenizer_config(tmp_path, reference):
    config = {
        "tokenizer_class": "AlbertTokenizer",
        "do_lower_case": False,
        "keep_accents": True,
        "remove_space": False,
        "model_max_length": 512,
    }
    tokenizer = SentencePieceTokenizer.from_pretrained(albert_folder(tmp_path, config))
    assert tokenizer.style == "albert"
    assert (tokenizer.do_lower_case, tokenizer.keep_accents, tokenizer.remove_space) == (
        False,
        True,
        False,
    )
    texts = [reference["texts"][i] for i in reference["subset"]]
    assert tokenize_all(tokenizer, texts) == reference["albert_options"][(False, True, False)]
    # Arguments win over the file.
    tokenizer = SentencePieceTokenizer.from_pretrained(tmp_path, do_lower_case=True)
    assert (tokenizer.do_lower_case, tokenizer.keep_accents) == (True, True)
    assert "do_lower_case=True, keep_accents=True, remove_space=False" in repr(tokenizer)


def test_from_pretrained_finds_the_style_and_the_model(tmp_path):
    folder = albert_folder(tmp_path / "a", {"tokenizer_class": "AlbertTokenizerFast"})
    assert SentencePieceTokenizer.from_pretrained(folder).style == "albert"
    folder = tmp_path / "t"
    folder.mkdir()
    shutil.copy(FIXTURE / "t5" / "spiece.model", folder / "sentencepiece.bpe.model")
    (folder / "config.json").write_text(json.dumps({"model_type": "mt5"}), "utf-8")
    tokenizer = SentencePieceTokenizer.from_pretrained(str(folder))
    assert tokenizer.style == "t5" and tokenizer.model_file.endswith("sentencepiece.bpe.model")
    assert tokenizer.do_lower_case is None and tokenizer.cls_id is None
    # A T5 folder's tokenizer_config (legacy, extra_ids) has nothing ALBERT's options read.
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "T5Tokenizer", "legacy": True, "extra_ids": 100}), "utf-8"
    )
    assert SentencePieceTokenizer.from_pretrained(folder).style == "t5"
    with pytest.raises(ValueError, match="give style='albert', style='t5' or style='llama'"):
        SentencePieceTokenizer.from_pretrained(albert_folder(tmp_path / "plain"))
    assert SentencePieceTokenizer.from_pretrained(tmp_path / "plain", style="albert").eos_id is None


def test_from_pretrained_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        SentencePieceTokenizer.from_pretrained(tmp_path / "absent", style="albert")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "vocab.txt").write_text("a\n", "utf-8")
    with pytest.raises(
        FileNotFoundError, match="no spiece.model, no tokenizer.model and no \\*.model"
    ) as e:
        SentencePieceTokenizer.from_pretrained(empty, style="albert")
    assert str(empty) in str(e.value)
    two = albert_folder(tmp_path / "two", name="a.model")
    shutil.copy(two / "a.model", two / "b.model")
    with pytest.raises(FileNotFoundError, match=r"several \*.model files \['a.model', 'b.model'\]"):
        SentencePieceTokenizer.from_pretrained(two, style="albert")


@pytest.mark.parametrize(
    "config, pattern",
    [
        ({"do_lower_case": "yes"}, "sets do_lower_case='yes'; it must be true or false"),
        ({"keep_accents": 1}, "sets keep_accents=1; it must be true or false"),
        ({"remove_space": None}, "sets remove_space=None; it must be true or false"),
        ({"sp_model_kwargs": {"enable_sampling": True}}, "sp_model_kwargs=.*no sampling"),
        ({"add_prefix_space": False}, "add_prefix_space=false"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object, got a list"),
    ],
)
def test_unsupported_tokenizer_config(tmp_path, config, pattern):
    folder = albert_folder(tmp_path, config)
    with pytest.raises(ValueError, match=pattern) as e:
        SentencePieceTokenizer.from_pretrained(folder, style="albert")
    assert "tokenizer_config.json" in str(e.value)


def test_model_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist") as e:
        SentencePieceTokenizer(tmp_path / "nope.model", "albert")
    assert "nope.model" in str(e.value)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        SentencePieceTokenizer(tmp_path, "albert")
    for name, data in (
        ("text.model", b"hello world\nthis is text\n"),
        ("json.model", json.dumps({"model": {"type": "Unigram"}}).encode()),
        ("empty.model", b""),
        ("random.model", bytes(np.random.default_rng(0).integers(0, 256, 4096, np.uint8))),
        ("vocab.model", (FIXTURE.parent / "bpe" / "merges.txt").read_bytes()),
    ):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match="is not a SentencePiece model") as e:
            SentencePieceTokenizer(tmp_path / name, "t5")
        assert name in str(e.value)


def test_special_pieces_the_style_needs():
    with pytest.raises(ValueError, match=r"has no '\[CLS\]' piece, which style='albert' needs"):
        SentencePieceTokenizer(FIXTURE / "t5" / "spiece.model", "albert")
    with pytest.raises(ValueError, match="has no '</s>' piece, which style='t5' needs"):
        SentencePieceTokenizer(FIXTURE / "albert" / "spiece.model", "t5")


def test_argument_errors():
    model = FIXTURE / "albert" / "spiece.model"
    with pytest.raises(ValueError, match="style must be one of"):
        SentencePieceTokenizer(model, "bert")
    with pytest.raises(ValueError, match="do_lower_case is ALBERT's preprocessing"):
        SentencePieceTokenizer(FIXTURE / "t5" / "spiece.model", "t5", do_lower_case=True)
    with pytest.raises(TypeError, match="keep_accents must be a bool"):
        SentencePieceTokenizer(model, "albert", keep_accents="no")
    with pytest.raises(ValueError, match="max_seq_length must be >= 2"):
        SentencePieceTokenizer(model, "albert", max_seq_length=1)
    with pytest.raises(ValueError, match="max_seq_length must be an int"):
        SentencePieceTokenizer(model, "albert", max_seq_length=8.0)


def test_vocabulary_and_special_ids(albert, t5):
    assert (albert.pad_id, albert.unk_id, albert.cls_id, albert.sep_id, albert.mask_id) == (
        0,
        1,
        2,
        3,
        4,
    )
    assert albert.eos_id is None and albert.special_ids == (0, 2, 3, 4)
    assert (t5.pad_id, t5.eos_id, t5.unk_id, t5.special_ids) == (0, 1, 2, (0, 1))
    assert t5.mask_id is None and t5.cls_id is None
    for tokenizer in (albert, t5):
        assert tokenizer.vocab_size == 1000 and tokenizer.max_seq_length == 512
        for token_id in (0, 5, 999):
            assert tokenizer.token_to_id(tokenizer.id_to_token(token_id)) == token_id
        assert tokenizer.id_to_token(tokenizer.unk_id) == "<unk>"
        with pytest.raises(KeyError, match="is not a piece of"):
            tokenizer.token_to_id("no such piece")
        with pytest.raises(IndexError, match="outside the vocabulary"):
            tokenizer.id_to_token(1000)
    assert albert.token_to_id("\u2581the") in albert.tokenize("the").numpy().tolist()
    assert repr(t5) == (
        f"SentencePieceTokenizer({str(FIXTURE / 't5' / 'spiece.model')!r}, style='t5', "
        "max_seq_length=512, vocab_size=1000)"
    )
