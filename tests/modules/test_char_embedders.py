"""CharCNNEmbedder against a NumPy float64 convolution with a masked maximum (CNN) and against a
Keras LSTM run over each word's characters alone (BiLSTM); WordCharEmbedder against its parts."""

import keras
import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import CharCNNEmbedder, WordCharEmbedder, WordEmbedder

RNG = np.random.default_rng(34)
VOCAB = 12
MAX_CHARS = 6
# [batch 3, time 4, chars 6]: words of every length from 0 (a padding word) to 6 (no padding).
WORD_LENGTHS = np.array([[3, 6, 1, 0], [2, 0, 0, 0], [5, 4, 6, 2]])
CHAR_IDS = np.where(
    np.arange(MAX_CHARS) < WORD_LENGTHS[..., None], RNG.integers(1, VOCAB, (3, 4, MAX_CHARS)), 0
).astype(np.int32)
LENGTHS = np.array([3, 1, 4], np.int32)  # words per example (the padding check's time axis)
WORD_IDS = np.where(np.arange(4) < LENGTHS[:, None], RNG.integers(1, 20, (3, 4)), 0).astype(
    np.int32
)


def numpy_cnn(embedder, char_ids, activation=np.tanh):
    """Conv1D with TF's 'same' padding (the extra zero after the word for even kernels), the
    activation, then the maximum over each word's characters; zeros for an empty word."""
    table = np.asarray(embedder.embedding, np.float64)
    out = np.zeros(char_ids.shape[:-1] + (embedder.output_dim,))
    for index in np.ndindex(char_ids.shape[:-1]):
        ids = char_ids[index]
        count = int((ids != 0).sum())
        if count == 0:
            continue
        x = table[ids] * (ids != 0)[:, None]
        pieces = []
        for conv in embedder.convs:
            kernel, bias = (np.asarray(w, np.float64) for w in conv.get_weights())
            size = kernel.shape[0]
            before = (size - 1) // 2
            padded = np.pad(x, ((before, size - 1 - before), (0, 0)))
            y = np.stack(
                [np.einsum("kd,kdf->f", padded[t : t + size], kernel) for t in range(len(ids))]
            )
            pieces.append(activation(y + bias)[:count].max(axis=0))
        out[index] = np.concatenate(pieces)
    return out


def test_cnn_equals_a_float64_convolution_with_a_masked_maximum():
    embedder = CharCNNEmbedder(VOCAB, {"dim": 5, "cnn": {"filters": 4, "kernel_sizes": [2, 3]}})
    outputs = embedder(CHAR_IDS).numpy()
    assert outputs.shape == (3, 4, 8) and embedder.output_dim == 8
    np.testing.assert_allclose(outputs, numpy_cnn(embedder, CHAR_IDS), atol=1e-5)
    assert not outputs[WORD_LENGTHS == 0].any()
    # Pads never win the maximum, even where every valid window is below zero.
    negative = CharCNNEmbedder(VOCAB, {"dim": 5, "cnn": {"filters": 4, "activation": "linear"}})
    negative(CHAR_IDS)
    negative.convs[0].bias.assign(-10 * np.ones(4))
    expected = numpy_cnn(negative, CHAR_IDS, activation=lambda y: y)
    assert (expected[WORD_LENGTHS > 0] < 0).all()
    np.testing.assert_allclose(negative(CHAR_IDS).numpy(), expected, atol=1e-5)


def keras_lstm_per_word(embedder, char_ids):
    """Each word's characters alone through Keras LSTMs with the embedder's weights: forward,
    and over the characters reversed; the final outputs concatenated."""
    units = embedder.hparams.bilstm.units
    forward, backward = keras.layers.LSTM(units), keras.layers.LSTM(units)
    forward.build((None, None, embedder.hparams.dim))
    backward.build((None, None, embedder.hparams.dim))
    forward.set_weights(embedder.rnn_fw.get_weights())
    backward.set_weights(embedder.rnn_bw.get_weights())
    table = np.asarray(embedder.embedding)
    out = np.zeros(char_ids.shape[:-1] + (2 * units,), np.float32)
    for index in np.ndindex(char_ids.shape[:-1]):
        ids = char_ids[index][char_ids[index] != 0]
        if ids.size:
            x = table[ids][None]
            out[index] = np.concatenate([forward(x)[0], backward(x[:, ::-1])[0]])
    return out


def test_bilstm_equals_keras_lstms_over_each_word_alone():
    embedder = CharCNNEmbedder(VOCAB, {"dim": 5, "encoder": "bilstm", "bilstm": {"units": 3}})
    outputs = embedder(CHAR_IDS).numpy()
    assert outputs.shape == (3, 4, 6) and embedder.output_dim == 6
    np.testing.assert_allclose(outputs, keras_lstm_per_word(embedder, CHAR_IDS), atol=1e-5)
    assert not outputs[WORD_LENGTHS == 0].any()


@pytest.mark.parametrize("encoder", ["cnn", "bilstm"])
def test_more_padding_characters_change_nothing(encoder):
    embedder = CharCNNEmbedder(VOCAB, {"dim": 4, "encoder": encoder})
    outputs = embedder(CHAR_IDS)
    wider = np.concatenate([CHAR_IDS, np.zeros((3, 4, 3), np.int32)], axis=-1)
    np.testing.assert_allclose(embedder(wider), outputs, atol=1e-6)
    flat = embedder(CHAR_IDS.reshape(12, MAX_CHARS)).numpy()  # any number of leading axes
    np.testing.assert_allclose(flat.reshape(outputs.shape), outputs, atol=1e-6)


@pytest.mark.parametrize("encoder", ["cnn", "bilstm"])
def test_char_embedder_contract(tmp_path, encoder):
    hparams = {"dim": 4, "encoder": encoder, "dropout_rate": 0.2, "cnn": {"filters": 3},
               "bilstm": {"units": 2}}  # fmt: skip
    check_module_contract(  # eager, tf.function, XLA, saving, bfloat16, padded words
        lambda **kw: CharCNNEmbedder(VOCAB, hparams, **kw),
        {"char_ids": CHAR_IDS},
        tmp_path,
        sequence_inputs={"char_ids": 1},
        lengths=LENGTHS,
        output_time_axes=1,
    )


def test_dropout_acts_on_the_characters_in_training_only():
    embedder = CharCNNEmbedder(VOCAB, {"dim": 8, "dropout_rate": 0.5})
    inference = embedder(CHAR_IDS)
    np.testing.assert_array_equal(embedder(CHAR_IDS, training=False), inference)
    assert not np.allclose(embedder(CHAR_IDS, training=True), inference)


def test_word_char_embedder_concatenates_its_parts(tmp_path):
    table = RNG.normal(size=(20, 7)).astype(np.float32)
    char_hparams = {"encoder": "bilstm", "bilstm": {"units": 2}}
    embedder = WordCharEmbedder(
        char_vocab_size=VOCAB, init_value=table, hparams={"char": char_hparams}
    )
    outputs = embedder(WORD_IDS, CHAR_IDS).numpy()
    assert outputs.shape == (3, 4, 11) and embedder.output_dim == 11
    assert embedder.hparams.word.dim == 7
    np.testing.assert_array_equal(outputs[..., :7], table[WORD_IDS])
    np.testing.assert_allclose(
        outputs[..., 7:], keras_lstm_per_word(embedder.char_embedder, CHAR_IDS), atol=1e-5
    )
    check_module_contract(
        lambda **kw: WordCharEmbedder(20, VOCAB, hparams={"word": {"dim": 3}}, **kw),
        {"ids": WORD_IDS, "char_ids": CHAR_IDS},
        tmp_path,
        sequence_inputs={"ids": 1, "char_ids": 1},
        lengths=LENGTHS,
        output_time_axes=1,
    )


@pytest.mark.parametrize("cls", [CharCNNEmbedder, WordCharEmbedder])
def test_every_hparam_is_documented(cls):
    missing, stale = undocumented_hparams(cls)
    assert not missing and not stale


@pytest.mark.parametrize(
    ("hparams", "key"),
    [
        ({"encoder": "lstm"}, "'encoder': expected one of"),
        ({"cnn": {"kernel_sizes": []}}, "'cnn.kernel_sizes': expected at least one"),
        ({"cnn": {"kernel_sizes": [3, 0]}}, "'cnn.kernel_sizes.1': expected a positive int"),
        ({"cnn": {"filters": 0}}, "'cnn.filters'"),
        ({"bilstm": {"units": -1}}, "'bilstm.units'"),
        ({"dim": 0}, "'dim'"),
        ({"dropout_rate": 1.0}, "'dropout_rate'"),
        ({"cnn": {"activation": "no_such"}}, "'cnn.activation'"),
    ],
)
def test_bad_hparams_name_the_key(hparams, key):
    with pytest.raises(HParamsError, match=key):
        CharCNNEmbedder(VOCAB, hparams)


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got 0"):
        CharCNNEmbedder(0)
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got None"):
        CharCNNEmbedder()
    embedder = CharCNNEmbedder(VOCAB)
    with pytest.raises(TypeError, match="char_ids must be integers, got dtype float32"):
        embedder(CHAR_IDS.astype(np.float32))
    with pytest.raises(ValueError, match=r"char_ids must be \[..., max_word_length\]"):
        embedder(np.array([1, 2], np.int32))
    with pytest.raises(ValueError, match="give vocab_size or init_value"):
        WordCharEmbedder(char_vocab_size=VOCAB)
    with pytest.raises(ValueError, match="char_vocab_size must be a positive int, got None"):
        WordCharEmbedder(5)
    with pytest.raises(HParamsError, match="'char.cnn.kernel_sizes.0'"):
        WordCharEmbedder(5, 6, hparams={"char": {"cnn": {"kernel_sizes": [0]}}})
    with pytest.raises(HParamsError, match="'word.dim'"):
        WordCharEmbedder(5, 6, hparams={"word": {"dim": 0}})
    assert isinstance(WordCharEmbedder(5, 6).word_embedder, WordEmbedder)
