"""CharVocab: its file format (round trips of awkward characters, hand-written files, errors),
counting characters, and words -> character ids in the graph against a Python loop."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from texkit.data import CharVocab

SPECIALS = ["<PAD>", "<BOS>", "<EOS>", "<UNK>"]
# Whitespace, control and format characters, a backslash, a combining accent, an emoji outside
# the BMP, a byte-order mark and characters that look like escapes or special tokens.
AWKWARD = [" ", "\t", "\n", "\r", "\\", "\u00a0", "\u0301", "😀", "\ufeff", "\x00", "\x7f", "u",
           "<", "é", "\u2028", "a"]  # fmt: skip


def test_awkward_characters_round_trip_through_the_file(tmp_path):
    vocab = CharVocab.from_tokens(AWKWARD)
    path = tmp_path / "chars.txt"
    vocab.save(str(path))
    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(AWKWARD)  # one entry per line
    assert all(line and line == line.strip() for line in lines[:-1])  # nothing an editor strips
    again = CharVocab(str(path))
    assert again.tokens == SPECIALS + AWKWARD
    assert again.token_to_id_map_py == vocab.token_to_id_map_py


def test_a_hand_written_file(tmp_path):
    path = tmp_path / "chars.txt"
    lines = ["a", " ", "\t", "\\n", "\\u00e9", "\\U0001F600", "<UNK>", "\\\\", "\\r", "\\"]
    # A byte-order mark, CRLF line ends and no newline after the last line.
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines[:-1]).encode())
    expected = ["a", " ", "\t", "\n", "é", "😀", "\\", "\r"]
    assert CharVocab(str(path)).tokens == SPECIALS + expected
    # A lone backslash is a backslash too; an escape and its character are the same entry.
    path.write_bytes("\n".join(lines[-3:]).encode())
    with pytest.raises(ValueError, match=r"chars.txt:3: token '\\\\' is already on line 1"):
        CharVocab(str(path))
    path.write_bytes("é\n\\u00e9\n".encode())
    with pytest.raises(ValueError, match=r"chars.txt:2: token 'é' is already on line 1"):
        CharVocab(str(path))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a\n\nb\n", r"chars.txt:2: empty line; write a space as \\u0020"),
        (b"a\nab\n", r"chars.txt:2: 'ab' is not one character; expected one character"),
        (b"\\x41\n", r"chars.txt:1: '\\\\x41' is an unknown escape"),
        (b"\\ud800\n", r"chars.txt:1: \\ud800 is not a Unicode character"),
        (b"\\U00110000\n", r"chars.txt:1: \\U00110000 is not a Unicode character"),
        (b"a\n\xff\n", r"chars.txt:2: the line is not valid UTF-8"),
        (b"", r"chars.txt: the character vocabulary file holds no characters"),
        (b"a\nb\na\n", r"chars.txt:3: token 'a' is already on line 1"),
    ],
)
def test_bad_files_name_the_file_and_line(tmp_path, data, message):
    path = tmp_path / "chars.txt"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        CharVocab(str(path))


def test_missing_files_and_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.txt' does not exist"):
        CharVocab(str(tmp_path / "nothing.txt"))
    with pytest.raises(ValueError, match="is a folder"):
        CharVocab(str(tmp_path))
    with pytest.raises(ValueError, match=r"<tokens>:2: 'ab' is not one character"):
        CharVocab.from_tokens(["a", "ab"])


def test_from_texts_ranks_characters_by_count():
    rng = np.random.default_rng(0)
    alphabet = list("abcdé 😀\t\n")
    texts = ["".join(rng.choice(alphabet, size=rng.integers(0, 30))) for _ in range(50)]
    counts = collections.Counter("".join(texts))
    order = {char: index for index, char in enumerate(dict.fromkeys("".join(texts)))}
    ranked = sorted(counts, key=lambda c: (-counts[c], order[c]))
    assert CharVocab.from_texts(texts).tokens == SPECIALS + ranked
    least = sorted(counts.values())[3]
    kept = [c for c in ranked if counts[c] >= least]
    assert CharVocab.from_texts(texts, min_count=least).tokens == SPECIALS + kept
    assert CharVocab.from_texts(texts, max_size=3).tokens == SPECIALS + ranked[:3]
    custom = CharVocab.from_texts(texts, unk_token="?")
    assert custom.unk_token == "?" and custom.tokens[3] == "?"


def test_from_texts_refuses_what_is_not_a_list_of_strings():
    with pytest.raises(TypeError, match="not one string"):
        CharVocab.from_texts("abc")
    with pytest.raises(TypeError, match=r"texts\[1\] is a bytes"):
        CharVocab.from_texts(["a", b"b"])
    with pytest.raises(ValueError, match="min_count must be an int >= 1"):
        CharVocab.from_texts(["a"], min_count=0)
    with pytest.raises(ValueError, match="max_size must be None or an int >= 0"):
        CharVocab.from_texts(["a"], max_size=-1)


def test_from_files_reads_lines_as_the_datasets_do(tmp_path):
    path = tmp_path / "text.txt"
    path.write_bytes("héllo wörld\r\n\tnaïve 😀\n".encode() + b"a\xffb\n")
    lines = ["héllo wörld", "\tnaïve 😀", "a\ufffdb"]
    assert CharVocab.from_files(str(path)).tokens == CharVocab.from_texts(lines).tokens
    with pytest.raises(FileNotFoundError, match="missing.txt' does not exist"):
        CharVocab.from_files([str(tmp_path / "missing.txt")])


def test_map_ids_to_text_py_leaves_out_pad_bos_and_eos():
    vocab = CharVocab.from_tokens(list("ab c"))
    ids = [1, 4, 7, 6, 3, 5, 2, 0, 0]
    assert vocab.map_ids_to_text_py(ids) == "ac <UNK>b"
    assert vocab.map_ids_to_text_py([]) == ""
    with pytest.raises(ValueError, match="ids must be 1-D"):
        vocab.map_ids_to_text_py([[4]])
    with pytest.raises(ValueError, match="id 9 is outside"):
        vocab.map_ids_to_text_py([9])
    with pytest.raises(ValueError, match="id -1 is outside"):
        vocab.map_ids_to_text_py([4, -1])


def python_char_ids(vocab, words, max_word_length, bow_eow):
    """The expected ids of an array of words, one word at a time."""
    ids_of = vocab.token_to_id_map_py
    out = np.zeros(words.shape + (max_word_length,), np.int32)
    for index, word in np.ndenumerate(words):
        if word in ("", vocab.pad_token):
            continue
        if word in (vocab.bos_token, vocab.eos_token, vocab.unk_token):
            out[index][0] = ids_of[word]
            continue
        chars = [ids_of.get(c, vocab.unk_token_id) for c in word]
        if bow_eow and word:
            chars = [vocab.bos_token_id, *chars[: max_word_length - 2], vocab.eos_token_id]
        chars = chars[:max_word_length]
        out[index][: len(chars)] = chars
    return out


@pytest.mark.parametrize("bow_eow", [False, True])
def test_words_to_char_ids_equals_a_python_loop(bow_eow):
    vocab = CharVocab.from_texts(["abcdé😀"])
    rng = np.random.default_rng(1)
    alphabet = list("abcdé😀xÿ")  # x and ÿ are not in the vocabulary
    words = np.array(
        [["".join(rng.choice(alphabet, size=rng.integers(1, 9))) for _ in range(6)]
         for _ in range(3)],
        dtype=object,
    )  # fmt: skip
    words[0, 4:] = ""  # padding
    words[1, 3:] = ["<BOS>", "<PAD>", "<EOS>"]  # as the datasets give them
    words[2, 0] = "<UNK>"
    expected = python_char_ids(vocab, words, 5, bow_eow)
    eager = vocab.words_to_char_ids(tf.constant(words.astype(str)), 5, bow_eow=bow_eow)
    assert eager.dtype == tf.int32 and eager.shape == (3, 6, 5)
    np.testing.assert_array_equal(eager.numpy(), expected)

    graph = tf.function(lambda w: vocab.words_to_char_ids(w, 5, bow_eow=bow_eow))
    np.testing.assert_array_equal(graph(tf.constant(words.astype(str))).numpy(), expected)
    dataset = tf.data.Dataset.from_tensor_slices(words.astype(str)).batch(2)
    mapped = dataset.map(lambda w: vocab.words_to_char_ids(w, 5, bow_eow=bow_eow))
    assert mapped.element_spec.shape.as_list() == [None, 6, 5]
    np.testing.assert_array_equal(np.concatenate(list(mapped.as_numpy_iterator())), expected)
    one = vocab.words_to_char_ids(tf.constant("abcdé😀"), 3, bow_eow=bow_eow)
    np.testing.assert_array_equal(one.numpy(), python_char_ids(vocab, np.array("abcdé😀"), 3,
                                                               bow_eow))  # fmt: skip


def test_words_to_char_ids_refuses_bad_arguments():
    vocab = CharVocab.from_texts(["ab"])
    with pytest.raises(ValueError, match="max_word_length must be an int >= 1, got 0"):
        vocab.words_to_char_ids(tf.constant(["a"]), 0)
    with pytest.raises(ValueError, match="max_word_length must be an int >= 3 with bow_eow"):
        vocab.words_to_char_ids(tf.constant(["a"]), 2, bow_eow=True)
    with pytest.raises(ValueError, match="got True"):
        vocab.words_to_char_ids(tf.constant(["a"]), True)
    with pytest.raises(TypeError, match="words must be a string tensor, got dtype int32"):
        vocab.words_to_char_ids(tf.constant([1]), 4)
