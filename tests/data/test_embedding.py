"""load_word2vec / load_glove / Embedding against gensim, on files gensim writes and its own.

The references are independent of texkit: gensim's ``KeyedVectors`` writes the word2vec files
(binary and text) and reads them back, gensim's test data supplies real GloVe and word2vec files,
and the C tool's binary layout (a newline after each vector) is written here byte by byte.
"""

import collections
import logging
import os
import re
import struct

import gensim
import numpy as np
import pytest
import tensorflow as tf
from gensim.models import KeyedVectors

import texkit.data.embedding.readers as embedding_module
from texkit.configurable import undocumented_hparams
from texkit.data.embedding import (
    Embedding,
    EmbeddingFileError,
    PretrainedEmbedding,
    load_glove,
    load_word2vec,
)
from texkit.data.vocab import Vocab
from texkit.hparams import HParamsError
from texkit.modules import WordEmbedder

GENSIM_DATA = os.path.join(os.path.dirname(gensim.__file__), "test", "test_data")
WORDS = ["the", "naïve", "日本語", "Россия", "café", "über", "x", "ß", "emoji🙂", "end"]
DIM = 6


class VocabLike:
    """What texkit.data.Vocab exposes to the loaders (a defaultdict map, as in Texar)."""

    def __init__(self, tokens):
        self.token_to_id_map_py = collections.defaultdict(lambda: 1)
        self.token_to_id_map_py.update((token, i) for i, token in enumerate(tokens))
        self.size = len(tokens)


@pytest.fixture(scope="module")
def keyed_vectors():
    vectors = np.random.default_rng(7).normal(size=(len(WORDS), DIM)).astype(np.float32)
    kv = KeyedVectors(DIM)
    kv.add_vectors(WORDS, vectors)
    return kv


@pytest.fixture(scope="module")
def word2vec_files(keyed_vectors, tmp_path_factory):
    folder = tmp_path_factory.mktemp("word2vec")
    paths = {}
    for binary in (True, False):
        path = str(folder / ("vectors.bin" if binary else "vectors.txt"))
        keyed_vectors.save_word2vec_format(path, binary=binary)
        paths[binary] = path
    return paths


def vocab_for(words):
    """Special tokens, a word the files lack, then ``words`` in reverse order."""
    tokens = ["<PAD>", "<UNK>", "not-in-file", *reversed(words)]
    return {token: i for i, token in enumerate(tokens)}


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_every_hparam_is_documented():
    missing, stale = undocumented_hparams(Embedding)
    assert not missing and not stale
    assert "read_fn = 'load_word2vec'" in Embedding.__doc__


# -- against gensim ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written_binary, binary", [(True, True), (True, None), (False, False), (False, None)]
)
def test_word2vec_written_by_gensim(keyed_vectors, word2vec_files, written_binary, binary):
    path = word2vec_files[written_binary]
    # The fixture itself: gensim reads back what it wrote.
    again = KeyedVectors.load_word2vec_format(path, binary=written_binary)
    assert again.index_to_key == WORDS
    vocab = vocab_for(WORDS)
    loaded = load_word2vec(path, vocab, DIM, binary=binary)
    assert loaded.matrix.shape == (len(vocab), DIM) and loaded.matrix.dtype == np.float32
    assert loaded.found == len(WORDS)
    assert loaded.missing == ("<PAD>", "<UNK>", "not-in-file")
    rows = loaded.matrix[[vocab[w] for w in WORDS]]
    if written_binary:
        np.testing.assert_array_equal(rows, keyed_vectors.vectors)
    else:
        np.testing.assert_array_equal(rows, again.vectors)  # same text, same parse
        np.testing.assert_allclose(rows, keyed_vectors.vectors, rtol=1e-6)


def test_gensim_glove_test_file():
    path = os.path.join(GENSIM_DATA, "test_glove.txt")
    reference = KeyedVectors.load_word2vec_format(path, binary=False, no_header=True)
    vocab = {w: i for i, w in enumerate(reference.index_to_key)}
    loaded = load_glove(path, vocab, reference.vector_size)
    assert loaded.found == len(vocab) and loaded.missing == ()
    np.testing.assert_array_equal(loaded.matrix, reference.vectors)


@pytest.mark.parametrize("name", ["euclidean_vectors.bin", "crime-and-punishment.vec"])
def test_gensim_word2vec_test_files(name):
    path = os.path.join(GENSIM_DATA, name)
    reference = KeyedVectors.load_word2vec_format(path, binary=name.endswith(".bin"))
    keys = reference.index_to_key[::3]  # crime-and-punishment.vec has Cyrillic words
    vocab = {"<UNK>": 0, **{w: i + 1 for i, w in enumerate(keys)}}
    loaded = load_word2vec(path, vocab, reference.vector_size)  # layout detected
    assert loaded.found == len(keys) and loaded.missing == ("<UNK>",)
    np.testing.assert_array_equal(loaded.matrix[1:], reference.vectors[::3])


def test_gensim_truncated_test_file():
    path = os.path.join(GENSIM_DATA, "pretrained.vec")  # header "3 5", one vector
    with pytest.raises(EmbeddingFileError, match=r"pretrained\.vec: the header announces 3"):
        load_word2vec(path, {"dummy": 0}, 5)


def test_c_tool_binary_layout(tmp_path, keyed_vectors):
    data = f"{len(WORDS)} {DIM}\n".encode()
    for word, vector in zip(WORDS, keyed_vectors.vectors, strict=True):
        data += word.encode() + b" " + struct.pack(f"<{DIM}f", *vector) + b"\n"
    path = write(tmp_path / "c.bin", data)
    vocab = vocab_for(WORDS)
    for binary in (None, True):
        loaded = load_word2vec(path, vocab, DIM, binary=binary)
        assert loaded.found == len(WORDS)
        np.testing.assert_array_equal(loaded.matrix[3:], keyed_vectors.vectors[::-1])
    np.testing.assert_array_equal(
        KeyedVectors.load_word2vec_format(path, binary=True).vectors, keyed_vectors.vectors
    )


def test_small_chunks_and_tf_gfile_paths(monkeypatch, word2vec_files, keyed_vectors):
    """Entries and lines split across reads; a non-local tf.io.gfile file system."""
    monkeypatch.setattr(embedding_module, "_CHUNK_SIZE", 5)
    vocab = vocab_for(WORDS)
    for path in word2vec_files.values():
        with open(path, "rb") as f:
            ram = f"ram://texkit-embedding/{os.path.basename(path)}"
            with tf.io.gfile.GFile(ram, "wb") as out:
                out.write(f.read())
        loaded = load_word2vec(ram, vocab, DIM)
        np.testing.assert_allclose(loaded.matrix[3:], keyed_vectors.vectors[::-1], rtol=1e-6)
        np.testing.assert_array_equal(loaded.matrix, load_word2vec(path, vocab, DIM).matrix)


# -- policies ------------------------------------------------------------------------------------


def test_missing_rows_are_seeded_and_counted(word2vec_files, keyed_vectors, caplog):
    vocab = vocab_for(WORDS[:4]) | {f"absent{i}": 7 + i for i in range(300)}
    with caplog.at_level(logging.INFO, logger="texkit"):
        first = load_word2vec(word2vec_files[True], vocab, DIM, seed=3)
    assert "4 of 307 vocab tokens found; 303 missing rows drawn from normal" in caplog.text
    assert first.found == 4 and len(first.missing) == 303
    assert first.missing[:3] == ("<PAD>", "<UNK>", "not-in-file")
    np.testing.assert_array_equal(first.matrix[3:7], keyed_vectors.vectors[3::-1])
    again = load_word2vec(word2vec_files[True], vocab, DIM, seed=3)
    other = load_word2vec(word2vec_files[True], vocab, DIM, seed=4)
    np.testing.assert_array_equal(again.matrix, first.matrix)
    np.testing.assert_array_equal(other.matrix[3:7], first.matrix[3:7])
    assert not np.any(other.matrix[7:] == first.matrix[7:])
    found_std = keyed_vectors.vectors[:4].std()
    assert abs(first.matrix[7:].std() / found_std - 1) < 0.1
    assert abs(first.matrix[7:].mean()) < 0.1 * found_std


def test_nothing_found_is_uniform_and_warned(word2vec_files, caplog):
    with caplog.at_level(logging.INFO, logger="texkit"):
        loaded = load_word2vec(word2vec_files[False], {f"t{i}": i for i in range(200)}, DIM)
    assert loaded.found == 0 and len(loaded.missing) == 200
    assert loaded.matrix.min() >= -0.1 and loaded.matrix.max() < 0.1
    assert loaded.matrix.std() > 0.05
    assert any(r.levelno == logging.WARNING and "0 of 200" in r.message for r in caplog.records)


def test_vocab_object_with_special_tokens(word2vec_files, keyed_vectors):
    vocab = VocabLike(["<PAD>", "<UNK>", "<BOS>", "<EOS>", "the", "日本語"])
    loaded = load_word2vec(word2vec_files[True], vocab, DIM)
    assert loaded.missing == ("<PAD>", "<UNK>", "<BOS>", "<EOS>") and loaded.found == 2
    np.testing.assert_array_equal(loaded.matrix[4:], keyed_vectors.vectors[[0, 2]])
    assert len(vocab.token_to_id_map_py) == vocab.size  # the defaultdict did not grow


def test_texkit_vocab(word2vec_files, keyed_vectors):
    vocab = Vocab.from_tokens(["the", "日本語", "absent"])
    loaded = load_word2vec(word2vec_files[False], vocab, DIM)
    assert loaded.missing == ("<PAD>", "<BOS>", "<EOS>", "<UNK>", "absent")
    np.testing.assert_allclose(loaded.matrix[4:6], keyed_vectors.vectors[[0, 2]], atol=1e-6)
    assert np.asarray(loaded).shape == (vocab.size, DIM)


def test_duplicates_first_wins_and_glove_words_with_spaces(tmp_path):
    glove = write(
        tmp_path / "g.txt", b"new 3 4\nnew york 1 2\n\nnew york 5 6\r\nyork 7 8 \nnew 9 9\n"
    )
    loaded = load_glove(glove, {"new york": 0, "new": 1, "york": 2}, 2)
    np.testing.assert_array_equal(loaded.matrix, [[1, 2], [3, 4], [7, 8]])
    vectors = [b"dup " + struct.pack("<2f", value, value) for value in (1.0, 2.0)]
    binary = write(tmp_path / "d.bin", b"2 2\n" + b"".join(vectors))
    np.testing.assert_array_equal(load_word2vec(binary, {"dup": 0}, 2).matrix, [[1, 1]])


def test_layout_detection_on_short_rows(tmp_path):
    text = write(tmp_path / "t.txt", b"2 1\nx 0.5\ny -2\n")
    np.testing.assert_array_equal(load_word2vec(text, {"y": 0, "x": 1}, 1).matrix, [[-2], [0.5]])
    # 0.5 is 00 00 00 3f: the NUL bytes give the binary layout away.
    binary = write(tmp_path / "b.bin", b"1 1\nx " + struct.pack("<f", 0.5))
    np.testing.assert_array_equal(load_word2vec(binary, {"x": 0}, 1).matrix, [[0.5]])


def test_pretrained_embedding_is_an_array(word2vec_files):
    loaded = load_word2vec(word2vec_files[True], vocab_for(WORDS), DIM)
    assert isinstance(loaded, PretrainedEmbedding)
    assert np.asarray(loaded) is loaded.matrix
    assert np.asarray(loaded, dtype=np.float64).dtype == np.float64
    copy = np.array(loaded)
    copy[0] = 0  # a copy is writable; the matrix itself is not
    with pytest.raises(ValueError, match="read-only"):
        loaded.matrix[0] = 0


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False])
def test_word2vec_wrong_dim(word2vec_files, binary):
    path = word2vec_files[binary]
    with pytest.raises(
        EmbeddingFileError,
        match=f"{re.escape(path)}: line 1: the header gives dim 6, expected dim=5",
    ):
        load_word2vec(path, vocab_for(WORDS), 5)


def test_glove_wrong_dim(tmp_path):
    path = write(tmp_path / "g.txt", b"a 1 2 3\nb 4 5 6\n")
    for dim in (2, 4):
        with pytest.raises(
            EmbeddingFileError, match=f"{re.escape(path)}: line 1: expected a word and dim="
        ):
            load_glove(path, {"a": 0}, dim)
    short_row = write(tmp_path / "short.txt", b"a 1 2 3\nb 4 5\n")
    with pytest.raises(EmbeddingFileError, match=f"{re.escape(short_row)}: line 2: "):
        load_glove(short_row, {"b": 0}, 3)


def test_malformed_rows(tmp_path):
    text = write(tmp_path / "w.txt", b"3 2\nok 1 2\n\nbad 1 x2\nzz 1\n")
    with pytest.raises(EmbeddingFileError, match=f"{re.escape(text)}: line 4: .*'x2'"):
        load_word2vec(text, {"bad": 0}, 2)
    with pytest.raises(
        EmbeddingFileError, match=f"{re.escape(text)}: line 5: 1 values for 'zz', expected"
    ):
        load_word2vec(text, {"zz": 0}, 2)
    glove = write(tmp_path / "g.txt", b"a 1 2\nb 3 nan\n")
    with pytest.raises(
        EmbeddingFileError, match=f"{re.escape(glove)}: line 2: .* 'b' is not finite"
    ):
        load_glove(glove, {"b": 0}, 2)
    with pytest.raises(EmbeddingFileError, match=f"{re.escape(glove)}: line 1: .* use load_glove"):
        load_word2vec(glove, {"a": 0}, 2)


def test_truncated_binary(tmp_path, word2vec_files):
    with open(word2vec_files[True], "rb") as f:
        data = f.read()
    path = write(tmp_path / "cut.bin", data[:-3])
    with pytest.raises(
        EmbeddingFileError, match=f"{re.escape(path)}: entry 10 of 10 .* ends inside"
    ):
        load_word2vec(path, vocab_for(WORDS), DIM)


def test_missing_file_and_bad_arguments(tmp_path, word2vec_files):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match=f"not found: {re.escape(missing)}"):
        load_glove(missing, {"a": 0}, 2)
    with pytest.raises(EmbeddingFileError, match="is a folder"):
        load_word2vec(str(tmp_path), {"a": 0}, 2)
    with pytest.raises(ValueError, match="vocab ids must be 0..1"):
        load_word2vec(word2vec_files[True], {"a": 0, "b": 2}, DIM)
    with pytest.raises(ValueError, match="id 0 to both"):
        load_word2vec(word2vec_files[True], {"a": 0, "b": 0}, DIM)
    with pytest.raises(ValueError, match="mapping of token to id, got list"):
        load_word2vec(word2vec_files[True], ["a"], DIM)
    with pytest.raises(ValueError, match="dim must be an int >= 1"):
        load_word2vec(word2vec_files[True], {"a": 0}, 0)


# -- Embedding -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "read_fn, binary", [("load_word2vec", None), ("load_word2vec", True), ("load_glove", None)]
)
def test_embedding_from_hparams(tmp_path, word2vec_files, keyed_vectors, read_fn, binary):
    path = word2vec_files[True]
    if read_fn == "load_glove":  # the text file without its header
        with open(word2vec_files[False], "rb") as f:
            path = write(tmp_path / "g.txt", f.read().split(b"\n", 1)[1])
    vocab = vocab_for(WORDS)
    hparams = {"file": path, "dim": DIM, "read_fn": read_fn, "binary": binary, "seed": 5}
    embedding = Embedding(vocab, hparams)
    assert embedding.vector_size == DIM and embedding.word_vecs.shape == (len(vocab), DIM)
    np.testing.assert_allclose(embedding.word_vecs[3:], keyed_vectors.vectors[::-1], rtol=1e-6)
    assert embedding.pretrained.missing == ("<PAD>", "<UNK>", "not-in-file")
    embedder = WordEmbedder(init_value=embedding.pretrained)
    embedder.build()
    np.testing.assert_array_equal(embedder.embedding.numpy(), embedding.word_vecs)
    assert embedder.vocab_size == len(vocab) and embedder.dim == DIM


def test_embedding_without_file_is_random():
    embedding = Embedding({f"t{i}": i for i in range(100)}, {"dim": 8})
    vectors = embedding.word_vecs
    assert vectors.shape == (100, 8) and vectors.min() >= -0.1 and vectors.max() < 0.1
    np.testing.assert_array_equal(
        vectors, Embedding({f"t{i}": i for i in range(100)}, {"dim": 8}).word_vecs
    )
    assert embedding.hparams.name == "embedding" and embedding.pretrained.found == 0


@pytest.mark.parametrize(
    "hparams, key, message",
    [
        ({"read_fn": "texkit.data.embedding.load_glove"}, "read_fn", "load_glove', 'load_word2vec"),
        ({"read_fn": "load_glove", "binary": True}, "binary", "read_fn 'load_word2vec'"),
        ({"binary": 1}, "binary", "got 1"),
        ({"dim": 0}, "dim", "positive int"),
        ({"seed": -1}, "seed", ">= 0"),
        ({"fiel": "x"}, "fiel", "file"),
    ],
)
def test_embedding_bad_hparams(hparams, key, message):
    with pytest.raises(HParamsError, match=f"hparams '{key}': .*{message}"):
        Embedding({"a": 0}, hparams)


def read_glove(path, vocab_path):
    """A sandbox case: load_glove of ``path`` for the vocabulary at ``vocab_path``."""
    return load_glove(path, Vocab(vocab_path), dim=4).shape[0]


def test_a_fifo_or_device_as_vector_file_is_refused_without_blocking(sandbox, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the\ncat\n")
    fifo = tmp_path / "vectors.txt"
    os.mkfifo(fifo)
    for path, said in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a device")):
        sandbox.expect_error(
            read_glove, str(path), str(vocab), error="EmbeddingFileError", contains=(said,)
        )
