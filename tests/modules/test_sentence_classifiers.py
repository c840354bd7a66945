"""Conv1DClassifier and UnidirectionalRNNClassifier: contract, NumPy references, learning."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from tests.modules.test_conv_encoder import numpy_conv_encoder
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import Conv1DClassifier, UnidirectionalRNNClassifier, classifiers

RNG = np.random.default_rng(17)
INPUTS = RNG.normal(size=(4, 6, 5)).astype(np.float32)
LENGTHS = np.array([6, 3, 1, 0], np.int32)
FEED = {"inputs": INPUTS, "sequence_length": LENGTHS}
CNN = {"kernel_sizes": [2, 3], "filters": 4, "num_classes": 3}
DAN = {
    "num_conv_layers": 0,
    "pooling": "mean",
    "num_dense_layers": 2,
    "dense_size": 6,
    "token_dropout": 0.3,
    "num_classes": 1,
}
LSTM = {"rnn_cell": {"type": "LSTMCell", "kwargs": {"units": 4}}, "num_classes": 3}
GRU = {"rnn_cell": {"type": "GRUCell", "kwargs": {"units": 4}}, "clas_strategy": "mean_time"}


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstm_step(cell, x, state):
    h, c = state
    z = x @ cell.kernel.numpy() + h @ cell.recurrent_kernel.numpy() + cell.bias.numpy()
    i, f, g, o = np.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, (h, c)


def numpy_gru_step(cell, x, state):
    (h,) = state
    input_bias, recurrent_bias = cell.bias.numpy()  # reset_after: two biases
    x_z, x_r, x_h = np.split(x @ cell.kernel.numpy() + input_bias, 3, axis=-1)
    r_z, r_r, r_h = np.split(h @ cell.recurrent_kernel.numpy() + recurrent_bias, 3, axis=-1)
    z, r = sigmoid(x_z + r_z), sigmoid(x_r + r_r)
    h = z * h + (1 - z) * np.tanh(x_h + r * r_h)
    return h, (h,)


def numpy_rnn_classifier(classifier, inputs, lengths, initial_h=None, initial_c=None):
    """Runs the cells step by step on each sequence cut to its length, in float64."""
    cells = classifier.rnn.cell
    cells = list(cells.cells) if isinstance(cells, keras.layers.StackedRNNCells) else [cells]
    step = numpy_lstm_step if isinstance(cells[0], keras.layers.LSTMCell) else numpy_gru_step
    units = cells[0].units
    rows = []
    for index, (x, length) in enumerate(zip(inputs.astype(np.float64), lengths, strict=True)):
        h0 = np.zeros(units) if initial_h is None else initial_h[index]
        c0 = np.zeros(units) if initial_c is None else initial_c[index]
        states = [(h0, c0) if step is numpy_lstm_step else (h0,) for _ in cells]
        outputs = []
        for t in range(length):
            y = x[t]
            for depth, cell in enumerate(cells):
                y, states[depth] = step(cell, y, states[depth])
            outputs.append(y)
        strategy = classifier.hparams.clas_strategy
        if strategy == "final_state":
            features = states[-1][0]
        elif length == 0:
            features = np.zeros(units)
        elif strategy == "mean_time":
            features = np.mean(outputs, axis=0)
        else:
            features = np.max(outputs, axis=0)
        for dense in classifier.dense_layers:
            features = np.maximum(features @ dense.kernel.numpy() + dense.bias.numpy(), 0)
        layer = classifier.logits_layer
        rows.append(features @ layer.kernel.numpy() + layer.bias.numpy())
    return np.stack(rows)


@pytest.mark.parametrize("cls", [Conv1DClassifier, UnidirectionalRNNClassifier])
def test_every_hparam_is_documented_and_registered(cls):
    assert undocumented_hparams(cls) == ([], [])
    assert registry.resolve(cls.__name__) is cls
    assert getattr(classifiers, cls.__name__) is cls


@pytest.mark.parametrize(
    "hparams",
    [
        {**CNN, "dropout_rate": 0.2},
        {**CNN, "pooling": "mean", "num_conv_layers": 2, "num_dense_layers": 1, "dense_size": 5},
        DAN,
    ],
    ids=["max", "mean", "dan"],
)
def test_conv_contract(tmp_path, hparams):
    check_module_contract(
        lambda **kw: Conv1DClassifier(hparams, **kw), FEED, tmp_path, sequence_inputs={"inputs": 1}
    )


@pytest.mark.parametrize(
    "hparams",
    [{**LSTM, "dropout_rate": 0.2, "num_dense_layers": 1, "dense_size": 5}, GRU],
    ids=["lstm-final-state", "gru-mean-time"],
)
def test_rnn_contract(tmp_path, hparams):
    check_module_contract(
        lambda **kw: UnidirectionalRNNClassifier(hparams, **kw),
        FEED,
        tmp_path,
        sequence_inputs={"inputs": 1},
    )


@pytest.mark.parametrize("hparams", [CNN, DAN], ids=["max", "dan"])
def test_conv_logits_equal_numpy(hparams):
    classifier = Conv1DClassifier(hparams)
    logits, preds = classifier(INPUTS, sequence_length=LENGTHS)
    features = numpy_conv_encoder(classifier.encoder, INPUTS, LENGTHS)
    layer = classifier.logits_layer
    want = features @ layer.kernel.numpy() + layer.bias.numpy()
    if hparams["num_classes"] == 1:
        want = want[:, 0]
        np.testing.assert_array_equal(preds.numpy(), (logits.numpy() > 0).astype(np.int32))
    else:
        np.testing.assert_array_equal(preds.numpy(), logits.numpy().argmax(-1))
    np.testing.assert_allclose(logits.numpy(), want, atol=1e-5)


@pytest.mark.parametrize(
    "hparams",
    [
        LSTM,
        {**LSTM, "rnn_cell": {**LSTM["rnn_cell"], "num_layers": 2}, "num_dense_layers": 1},
        GRU,
        {**GRU, "clas_strategy": "max_time", "num_classes": 1},
        {**GRU, "clas_strategy": "final_state"},
    ],
    ids=["lstm-final", "lstm2-final-dense", "gru-mean", "gru-max-binary", "gru-final"],
)
def test_rnn_logits_equal_numpy_on_unpadded_sequences(hparams):
    classifier = UnidirectionalRNNClassifier(hparams)
    logits, preds = classifier(INPUTS, sequence_length=LENGTHS)
    want = numpy_rnn_classifier(classifier, INPUTS, LENGTHS)
    if hparams.get("num_classes") == 1:
        want = want[:, 0]
        assert preds.shape == (4,)
    np.testing.assert_allclose(logits.numpy(), want, atol=1e-5)
    # Extra padding (with large values) changes nothing; also under XLA.
    padded = np.concatenate([INPUTS, np.full((4, 3, 5), 9.0, np.float32)], axis=1)
    padded[np.arange(9)[None, :] >= LENGTHS[:, None]] = -7.0
    xla = tf.function(lambda x, n: classifier(x, sequence_length=n)[0], jit_compile=True)
    np.testing.assert_allclose(xla(padded, LENGTHS).numpy(), want, atol=1e-5)


def test_rnn_initial_state():
    classifier = UnidirectionalRNNClassifier(LSTM)
    h0, c0 = (RNG.normal(size=(4, 4)).astype(np.float32) for _ in range(2))
    logits, _ = classifier(INPUTS, sequence_length=LENGTHS, initial_state=[h0, c0])
    want = numpy_rnn_classifier(classifier, INPUTS, LENGTHS, initial_h=h0, initial_c=c0)
    np.testing.assert_allclose(logits.numpy(), want, atol=1e-5)
    # The empty sequence keeps the initial state: its logits classify h0.
    layer = classifier.logits_layer
    np.testing.assert_allclose(
        logits.numpy()[3], h0[3] @ layer.kernel.numpy() + layer.bias.numpy(), atol=1e-5
    )


def test_cnn_learns_whether_a_token_occurs():
    """The class is whether token 3 occurs among the valid steps; padding holds 3s too."""
    vocab, time = 12, 10
    rng = np.random.default_rng(0)

    def batch(size):
        ids = rng.integers(4, vocab, size=(size, time))
        lengths = rng.integers(2, time + 1, size=size)
        labels = rng.integers(0, 2, size=size)
        for row, (length, label) in enumerate(zip(lengths, labels, strict=True)):
            if label:
                ids[row, rng.integers(0, length)] = 3
            ids[row, length:] = rng.choice([0, 3], size=time - length)  # padding: misleading 3s
        return ids.astype(np.int32), lengths.astype(np.int32), labels

    keras.utils.set_random_seed(1)
    ids_in = keras.Input((time,), dtype="int32")
    lengths_in = keras.Input((), dtype="int32")
    embedded = keras.layers.Embedding(vocab, 8)(ids_in)
    classifier = Conv1DClassifier(
        {"kernel_sizes": [1, 2], "filters": 8, "dropout_rate": 0.1, "num_classes": 2}
    )
    logits, _ = classifier(embedded, sequence_length=lengths_in)
    model = keras.Model([ids_in, lengths_in], logits)
    model.compile(
        optimizer=keras.optimizers.Adam(0.02),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    ids, lengths, labels = batch(1024)
    model.fit([ids, lengths], labels, batch_size=64, epochs=8, verbose=0)
    ids, lengths, labels = batch(512)
    _, accuracy = model.evaluate([ids, lengths], labels, verbose=0)
    assert accuracy > 0.95


@pytest.mark.parametrize(
    "cls, hparams, key",
    [
        (Conv1DClassifier, {"kernel_sizes": []}, "kernel_sizes"),
        (Conv1DClassifier, {"pooling": "median"}, "pooling"),
        (Conv1DClassifier, {"num_classes": 0}, "num_classes"),
        (Conv1DClassifier, {"token_dropout": 1.5}, "token_dropout"),
        (UnidirectionalRNNClassifier, {"clas_strategy": "last_time"}, "clas_strategy"),
        (UnidirectionalRNNClassifier, {"num_classes": 0}, "num_classes"),
        (UnidirectionalRNNClassifier, {"num_dense_layers": -1}, "num_dense_layers"),
        (UnidirectionalRNNClassifier, {"dropout_rate": 1.0}, "dropout_rate"),
        (UnidirectionalRNNClassifier, {"rnn_cell": {"num_layers": 0}}, "rnn_cell.num_layers"),
        (UnidirectionalRNNClassifier, {"rnn_cell": {"type": "Dense"}}, "rnn_cell"),
        (UnidirectionalRNNClassifier, {"rnn_cell": {"type": "LSTMCel"}}, "rnn_cell.type"),
        (UnidirectionalRNNClassifier, {"rnn_cell": {"kwargs": {"unit": 3}}}, "rnn_cell.kwargs"),
    ],
)
def test_bad_hparams_name_the_key(cls, hparams, key):
    with pytest.raises(HParamsError) as error:
        cls(hparams)
    assert error.value.path.startswith(key), error.value.path
