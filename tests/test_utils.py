"""ids -> text and special-token stripping against strings written by hand, the same results in
the graph (tf.function, tf.data) as in NumPy and Python; get_instance through the registry only."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.utils import (
    get_instance,
    map_ids_to_strs,
    str_join,
    strip_bos,
    strip_eos,
    strip_special_tokens,
    strip_token,
)

VOCAB = tx.data.Vocab.from_tokens(["a", "cat", "sat", "on", "the", "mat"])  # ids 4 to 9
PAD, BOS, EOS, UNK = 0, 1, 2, 3
A, CAT, SAT, ON, THE, MAT = range(4, 10)
IDS = np.array(
    [
        [BOS, THE, CAT, SAT, EOS, PAD, PAD],
        [BOS, BOS, A, MAT, EOS, CAT, PAD],  # two leading BOS; a token after EOS
        [PAD, BOS, CAT, BOS, ON, PAD, MAT],  # PAD before BOS, a BOS and a PAD inside
        [THE, MAT, SAT, ON, A, CAT, THE],  # no special token, no EOS
        [EOS, CAT, PAD, PAD, PAD, PAD, PAD],  # empty after stripping
    ],
    np.int32,
)
EXPECTED_TOKENS = [
    ["the", "cat", "sat"],
    ["a", "mat"],
    ["cat", "<BOS>", "on", "mat"],
    ["the", "mat", "sat", "on", "a", "cat", "the"],
    [],
]
EXPECTED = ["the cat sat", "a mat", "cat <BOS> on mat", "the mat sat on a cat the", ""]


def decode(array):
    return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(np.asarray(array))


def test_map_ids_to_strs_numpy_and_lists():
    got = map_ids_to_strs(IDS, VOCAB)
    assert isinstance(got, np.ndarray) and got.tolist() == EXPECTED
    assert map_ids_to_strs(IDS.tolist(), VOCAB) == EXPECTED
    assert map_ids_to_strs(IDS, VOCAB, join=False) == EXPECTED_TOKENS
    assert map_ids_to_strs(IDS[0], VOCAB) == "the cat sat"
    assert map_ids_to_strs(IDS[1].tolist(), VOCAB, join=False) == ["a", "mat"]
    assert map_ids_to_strs(IDS[:2], VOCAB, sep="_").tolist() == ["the_cat_sat", "a_mat"]
    # Ragged Python lists.
    assert map_ids_to_strs([[BOS, A, EOS], [CAT], []], VOCAB) == ["a", "cat", ""]


def test_map_ids_to_strs_strip_options():
    row = [PAD, BOS, A, CAT, EOS, PAD]
    unstripped = "<PAD> <BOS> a cat <EOS> <PAD>"
    off = dict(strip_pad=False, strip_bos=None, strip_eos=False)
    assert map_ids_to_strs(row, VOCAB, **off) == unstripped
    assert map_ids_to_strs(row, VOCAB, strip_pad=False) == "<PAD> <BOS> a cat"  # BOS not leading
    assert map_ids_to_strs(row, VOCAB, strip_eos=False) == "a cat <EOS>"
    assert map_ids_to_strs(row, VOCAB, strip_bos=False) == "<BOS> a cat"
    assert map_ids_to_strs(row, VOCAB, strip_eos="cat") == "a"  # a token given by name
    graph = map_ids_to_strs(tf.constant([row]), VOCAB, **off)
    assert decode(graph).tolist() == [unstripped]


def test_map_ids_to_strs_uses_the_vocabularys_own_special_tokens():
    vocab = tx.data.Vocab.from_tokens(
        ["x", "y"], pad_token="[PAD]", bos_token="[CLS]", eos_token="[SEP]", unk_token="[UNK]"
    )
    ids = [[1, 4, 5, 2, 0], [1, 5, 2, 4, 0]]
    assert map_ids_to_strs(ids, vocab) == ["x y", "y"]
    assert decode(map_ids_to_strs(tf.constant(ids), vocab)).tolist() == ["x y", "y"]


def test_map_ids_to_strs_in_the_graph_equals_numpy():
    @tf.function
    def to_text(ids):
        return map_ids_to_strs(ids, VOCAB)

    @tf.function
    def to_tokens(ids):
        return map_ids_to_strs(ids, VOCAB, join=False)

    assert decode(to_text(tf.constant(IDS))).tolist() == EXPECTED
    tokens = to_tokens(tf.constant(IDS))
    assert isinstance(tokens, tf.RaggedTensor)
    assert [[t.decode() for t in row] for row in tokens.to_list()] == EXPECTED_TOKENS
    # One sequence: a string scalar, or [None] tokens.
    assert to_text(tf.constant(IDS[1])).numpy().decode() == "a mat"
    assert to_tokens(tf.constant(IDS[1])).numpy().tolist() == [b"a", b"mat"]
    # Eager tensors, int64 and ragged ids.
    assert decode(map_ids_to_strs(tf.constant(IDS, tf.int64), VOCAB)).tolist() == EXPECTED
    ragged = tf.ragged.constant([[BOS, A, EOS], [CAT], []])
    assert decode(map_ids_to_strs(ragged, VOCAB)).tolist() == ["a", "cat", ""]


def test_map_ids_to_strs_in_tf_data():
    dataset = tf.data.Dataset.from_tensor_slices({"text_ids": IDS}).batch(2)
    dataset = dataset.map(lambda batch: map_ids_to_strs(batch["text_ids"], VOCAB))
    texts = [text for batch in dataset.as_numpy_iterator() for text in decode(batch)]
    assert texts == EXPECTED
    unbatched = tf.data.Dataset.from_tensor_slices(IDS).map(lambda i: map_ids_to_strs(i, VOCAB))
    assert [t.decode() for t in unbatched.as_numpy_iterator()] == EXPECTED


SENTENCES = [
    "<BOS> a  cat\tsat <EOS> <PAD> <PAD>",
    "<PAD> <BOS> <BOS> on <BOS> the\u00a0mat",  # U+00A0 is not a separator: one token
    "<EOS> gone",
    "",
]
STRIPPED = ["a cat sat", "on <BOS> the\u00a0mat", "", ""]
NO_EOS = ["<BOS> a cat sat", "<PAD> <BOS> <BOS> on <BOS> the\u00a0mat", "", ""]
NO_BOS = [
    "a cat sat <EOS> <PAD> <PAD>",
    "<PAD> <BOS> <BOS> on <BOS> the\u00a0mat",
    "<EOS> gone",
    "",
]
NO_PAD = ["<BOS> a cat sat <EOS>", "<BOS> <BOS> on <BOS> the\u00a0mat", "<EOS> gone", ""]


@pytest.mark.parametrize(
    "function, expected",
    [
        (strip_special_tokens, STRIPPED),
        (strip_eos, NO_EOS),
        (strip_bos, NO_BOS),
        (lambda text, **kw: strip_token(text, "<PAD>", **kw), NO_PAD),
    ],
)
def test_strip_sentences_python_numpy_and_graph_agree(function, expected):
    assert [function(s) for s in SENTENCES] == expected
    assert function(SENTENCES) == expected
    assert function([SENTENCES[:2], SENTENCES[2:]]) == [expected[:2], expected[2:]]
    as_bytes = np.array([s.encode() for s in SENTENCES], dtype=object).reshape(2, 2)
    got = function(as_bytes)
    assert got.shape == (2, 2) and got.ravel().tolist() == expected
    graph = tf.function(lambda text: function(text))(tf.constant(SENTENCES))
    assert decode(graph).tolist() == expected
    scalar = function(tf.constant(SENTENCES[1]))
    assert scalar.shape == () and scalar.numpy().decode() == expected[1]


def test_strip_token_lists_python_and_graph_agree():
    token_lists = [s.replace("\t", " ").split(" ") for s in SENTENCES]  # "" in the double space
    expected = [s.split(" ") if s else [] for s in STRIPPED]
    assert strip_special_tokens(token_lists, is_token_list=True) == expected
    ragged = tf.ragged.constant(token_lists)
    got = tf.function(lambda t: strip_special_tokens(t, is_token_list=True))(ragged)
    assert [[t.decode() for t in row] for row in got.to_list()] == expected
    dense = ragged.to_tensor(default_value="")  # dense padding "" is dropped too
    got = strip_special_tokens(dense, is_token_list=True)
    assert [[t.decode() for t in row] for row in got.to_list()] == expected
    assert strip_eos(np.array(["x", "<EOS>", "y"]), is_token_list=True) == ["x"]
    assert strip_bos(tf.constant(["<BOS>", "x"]), is_token_list=True).numpy().tolist() == [b"x"]


def test_str_join():
    tokens = [["a", "cat"], ["sat"], []]
    assert str_join(tokens) == ["a cat", "sat", ""]
    assert str_join(["a", "cat"], sep="-") == "a-cat"
    array = np.array([[["a", "b"], ["c", "d"]], [["e", "f"], ["g", "h"]]])
    got = str_join(array, sep="+")
    assert got.shape == (2, 2) and got.tolist() == [["a+b", "c+d"], ["e+f", "g+h"]]
    graph = tf.function(lambda t: str_join(t, sep="+"))(tf.constant(array))
    assert decode(graph).tolist() == got.tolist()
    assert decode(str_join(tf.ragged.constant(tokens))).tolist() == ["a cat", "sat", ""]
    assert str_join([[b"a", b"cat"]]) == ["a cat"]  # bytes decoded


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: map_ids_to_strs(np.zeros((2, 3, 4), np.int32), VOCAB),
            ValueError,
            r"ids must be \[max_time\] or \[batch, max_time\], got shape \(2, 3, 4\)",
        ),
        (
            lambda: map_ids_to_strs(tf.zeros((2, 3, 4), tf.int32), VOCAB),
            ValueError,
            r"ids must be \[max_time\] or \[batch, max_time\], got shape \(2, 3, 4\)",
        ),
        (lambda: map_ids_to_strs([[[1, 2]]], VOCAB), ValueError, r"ids\[0\] is not a sequence"),
        (lambda: map_ids_to_strs(np.ones((2, 3)), VOCAB), TypeError, r"integer ids.*float64"),
        (lambda: map_ids_to_strs(tf.ones((2, 3)), VOCAB), TypeError, r"integer ids.*float32"),
        (lambda: map_ids_to_strs("1 2", VOCAB), TypeError, r"ids must be a tensor.*got str"),
        (lambda: map_ids_to_strs(IDS, {0: "<PAD>"}), TypeError, r"vocab must be.*got dict"),
        (lambda: map_ids_to_strs(IDS, VOCAB.tokens), TypeError, r"vocab must be.*got list"),
        (lambda: map_ids_to_strs(IDS, VOCAB, strip_pad=""), ValueError, r"strip_pad must be"),
        (lambda: map_ids_to_strs(IDS, VOCAB, sep=None), TypeError, r"sep must be a str"),
        (lambda: map_ids_to_strs([[99]], VOCAB), ValueError, r"id 99 is outside"),
        (lambda: strip_eos(tf.constant([1, 2])), TypeError, r"text must be a string tensor.*int32"),
        (lambda: strip_eos(["a", 3]), TypeError, r"text\[1\] must be a string.*got int"),
        (lambda: strip_eos("a", eos_token=None), ValueError, r"eos_token must be a non-empty"),
        (lambda: strip_token("a", ""), ValueError, r"token must be a non-empty"),
        (
            lambda: strip_bos(tf.constant("a"), is_token_list=True),
            ValueError,
            r"text \(token lists\) must have rank >= 1.*scalar",
        ),
        (lambda: str_join(tf.constant("a")), ValueError, r"tokens must have rank >= 1"),
    ],
)
def test_utils_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_map_ids_to_strs_out_of_vocabulary_in_the_graph_is_unk():
    got = map_ids_to_strs(tf.constant([[A, 99]]), VOCAB)
    assert decode(got).tolist() == ["a <UNK>"]


# -- get_instance -----------------------------------------------------------------------------


def test_get_instance_by_class_name_path_and_module_paths():
    layer = get_instance(keras.layers.Dense, {"units": 3})
    assert isinstance(layer, keras.layers.Dense) and layer.units == 3
    assert get_instance("LSTMCell", {"units": 4}).units == 4  # a registered name
    assert isinstance(get_instance("keras.layers.Dropout", {"rate": 0.5}), keras.layers.Dropout)
    found = get_instance("Dense", {"units": 2}, module_paths=["texkit.modules", "keras.layers"])
    assert isinstance(found, keras.layers.Dense) and found.units == 2
    embedder = get_instance("WordEmbedder", {"vocab_size": 7}, ["texkit.modules"])
    assert isinstance(embedder, tx.modules.WordEmbedder) and embedder.vocab_size == 7
    hparams = tx.HParams({"units": 5}, {"units": 1})
    assert get_instance("Dense", hparams, ["keras.layers"]).units == 5
    assert isinstance(get_instance("Zeros", None), keras.initializers.Zeros)


def test_get_instance_refuses_what_the_registry_refuses():
    with pytest.raises(ValueError, match=r"cannot find class 'system'.*'os.system'.*refusing"):
        get_instance("system", {}, module_paths=["os"])
    with pytest.raises(ValueError, match=r"'json.JSONDecoder'.*refusing"):
        get_instance("json.JSONDecoder", {})
    with pytest.raises(ValueError, match=r"unknown type 'Dens'; did you mean 'Dense'"):
        get_instance("Dens", {"units": 2})


def test_get_instance_bad_arguments():
    with pytest.raises(ValueError, match=r"Constant takes no argument 'valeu'; it takes value$"):
        get_instance("Constant", {"valeu": 3})
    with pytest.raises(TypeError, match=r"'relu' is a function, not a class"):
        get_instance("relu", {})
    with pytest.raises(TypeError, match=r"kwargs must be a mapping or None, got list"):
        get_instance("Zeros", [1])
    with pytest.raises(TypeError, match=r"module_paths must be a list of dotted paths"):
        get_instance("Dense", {}, module_paths="keras.layers")
    with pytest.raises(TypeError, match=r"class_or_name must be a class or a name, got 3"):
        get_instance(3, {})


def test_texkit_exposes_utils():
    assert tx.utils.map_ids_to_strs is map_ids_to_strs
