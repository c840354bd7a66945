import collections
import re

import numpy as np
import pytest
import tensorflow as tf

from texkit.data import Vocab, make_vocab

ASCII_WHITESPACE = re.compile(rb"[ \t\n\r\v\f]+")


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def test_special_tokens_have_fixed_ids_and_file_tokens_follow(tmp_path):
    vocab = Vocab(write(tmp_path / "v.txt", "the\ncat\nnaïve\n".encode()))
    assert vocab.tokens == ["<PAD>", "<BOS>", "<EOS>", "<UNK>", "the", "cat", "naïve"]
    assert (vocab.pad_token_id, vocab.bos_token_id, vocab.eos_token_id, vocab.unk_token_id) == (
        0,
        1,
        2,
        3,
    )
    assert vocab.size == len(vocab) == 7
    assert vocab.token_to_id_map_py["cat"] == 5
    assert vocab.id_to_token_map_py[6] == "naïve"


def test_a_file_that_lists_the_special_tokens_gets_no_duplicates(tmp_path):
    path = write(tmp_path / "v.txt", b"<PAD>\n<UNK>\nthe\n<EOS>\n<BOS>\ncat\n")
    vocab = Vocab(path)
    assert vocab.tokens == ["<PAD>", "<BOS>", "<EOS>", "<UNK>", "the", "cat"]


def test_custom_special_tokens_and_counts_after_a_tab_and_crlf(tmp_path):
    path = write(tmp_path / "v.txt", b"[PAD]\t0\r\nthe\t120\r\ncat\t7\r\n")
    vocab = Vocab(path, pad_token="[PAD]", unk_token="[UNK]")
    assert vocab.tokens == ["[PAD]", "<BOS>", "<EOS>", "[UNK]", "the", "cat"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"a\nb\na\n", r"v.txt:3: token 'a' is already on line 1"),
        (b"a\n\nb\n", r"v.txt:2: empty vocabulary entry"),
        (b"a\n\xffb\n", r"v.txt:2: the vocabulary entry is not valid UTF-8"),
        (b"a\nNew York \n", r"v.txt:2: the vocabulary entry 'New York ' begins or ends with"),
        (b"", r"v.txt: the vocabulary file holds no tokens"),
    ],
)
def test_bad_vocabulary_files_name_the_line(tmp_path, content, message):
    with pytest.raises(ValueError, match=message):
        Vocab(write(tmp_path / "v.txt", content))


def test_a_byte_order_mark_is_not_part_of_the_first_token(tmp_path):
    vocab = Vocab(write(tmp_path / "v.txt", b"\xef\xbb\xbfthe\r\ncat\r\n"))
    assert vocab.tokens[4:] == ["the", "cat"]
    assert vocab.map_tokens_to_ids_py(["the"]).tolist() == [4]


def test_missing_file_and_bad_special_tokens(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        Vocab(str(tmp_path / "nope.txt"))
    with pytest.raises(ValueError, match="four distinct"):
        Vocab.from_tokens(["a"], bos_token="<PAD>")


def test_graph_and_python_lookups_agree(tmp_path):
    vocab = Vocab.from_tokens(["the", "cat", "sat"])
    tokens = np.array([["the", "dog", "sat"], ["<EOS>", "cat", "cat"]])
    ids = vocab.map_tokens_to_ids_py(tokens)
    np.testing.assert_array_equal(ids, [[4, 3, 6], [2, 5, 5]])
    np.testing.assert_array_equal(vocab.map_tokens_to_ids(tf.constant(tokens)).numpy(), ids)

    @tf.function
    def in_graph(t):
        return vocab.map_tokens_to_ids(t), vocab.map_ids_to_tokens(vocab.map_tokens_to_ids(t))

    graph_ids, back = in_graph(tf.constant(tokens))
    np.testing.assert_array_equal(graph_ids.numpy(), ids)
    assert back.numpy().astype(str).tolist() == [["the", "<UNK>", "sat"], ["<EOS>", "cat", "cat"]]
    assert vocab.map_ids_to_tokens_py(ids).tolist() == back.numpy().astype(str).tolist()
    ragged = vocab.map_tokens_to_ids(tf.ragged.constant([["cat"], ["sat", "x"]]))
    assert ragged.to_list() == [[5], [6, 3]]
    with pytest.raises(ValueError, match="id 9 is outside the vocabulary"):
        vocab.map_ids_to_tokens_py([1, 9])


def test_lookups_work_inside_tf_data(tmp_path):
    vocab = Vocab.from_tokens(["a", "b"])
    dataset = tf.data.Dataset.from_tensor_slices(["a", "b", "c"]).map(vocab.map_tokens_to_ids)
    assert list(dataset.as_numpy_iterator()) == [4, 5, 3]


def test_make_vocab_counts_like_python(tmp_path):
    text = "the cat  sat\r\non the mat\n\nthe end\t x\xa0y\n".encode() + b"bad \xff byte\n"
    path = write(tmp_path / "corpus.txt", text)
    # Independent count: split on ASCII whitespace, decode with Python's replacement.
    expected = collections.Counter(
        token.decode("utf-8", "replace")
        for line in text.split(b"\n")
        for token in ASCII_WHITESPACE.split(line)
        if token
    )
    tokens = make_vocab(path)
    assert collections.Counter(tokens) == collections.Counter(set(expected))
    counts = [expected[t] for t in tokens]
    assert counts == sorted(counts, reverse=True)
    assert tokens[0] == "the" and "x\xa0y" in tokens and "\ufffd" in tokens
    assert make_vocab([path], max_size=2) == tokens[:2]
    assert make_vocab(path, min_count=2) == ["the"]


def test_make_vocab_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        make_vocab(str(tmp_path / "missing.txt"))
