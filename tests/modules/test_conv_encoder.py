"""Conv1DEncoder: contract, a NumPy reference on unpadded sequences, token dropout, errors."""

import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import Conv1DEncoder

RNG = np.random.default_rng(5)
SMALL = {"kernel_sizes": [2, 3, 5], "filters": 3, "dropout_rate": 0.0}
INPUTS = RNG.normal(size=(5, 7, 4)).astype(np.float32)
# Full, partial, shorter than the largest kernel (5), a single step, empty.
LENGTHS = np.array([7, 4, 2, 1, 0], np.int32)

ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0), "tanh": np.tanh}


def numpy_conv(x, kernel, bias):
    """'same' 1-D convolution of one sequence ``x`` [time, in] with zeros outside it."""
    width = kernel.shape[0]
    left = (width - 1) // 2
    padded = np.concatenate(
        [np.zeros((left, x.shape[1])), x, np.zeros((width - 1 - left, x.shape[1]))]
    )
    out = np.zeros((x.shape[0], kernel.shape[2]))
    for t in range(x.shape[0]):
        for j in range(width):
            out[t] += padded[t + j] @ kernel[j]
    return out + bias


def numpy_conv_encoder(encoder, inputs, lengths):
    """The encoder on each sequence cut to its length (no padding at all), in float64."""
    hp = encoder.hparams
    conv_activation = ACTIVATIONS[hp.conv_activation.type]
    dense_activation = ACTIVATIONS[hp.dense_activation.type]
    branches = len(hp.kernel_sizes)
    rows = []
    for x, length in zip(inputs.astype(np.float64), lengths, strict=True):
        h = x[:length]
        for start in range(0, len(encoder.convs), branches):
            convs = encoder.convs[start : start + branches]
            h = np.concatenate(
                [conv_activation(numpy_conv(h, c.kernel.numpy(), c.bias.numpy())) for c in convs],
                axis=-1,
            )
        if length == 0:
            pooled = np.zeros(h.shape[-1])
        elif hp.pooling == "max":
            pooled = h.max(axis=0)
        else:
            pooled = h.mean(axis=0)
        for dense in encoder.dense_layers:
            pooled = dense_activation(pooled @ dense.kernel.numpy() + dense.bias.numpy())
        rows.append(pooled)
    return np.stack(rows)


def test_every_hparam_is_documented():
    assert undocumented_hparams(Conv1DEncoder) == ([], [])


@pytest.mark.parametrize(
    "hparams",
    [
        {"pooling": "max", "conv_activation": "tanh"},
        {"pooling": "max", "num_conv_layers": 2, "num_dense_layers": 1, "dense_size": 5},
        {"pooling": "mean", "conv_activation": "tanh", "num_conv_layers": 2},
        {"pooling": "mean", "num_conv_layers": 0, "num_dense_layers": 2, "dense_size": 6},
    ],
)
def test_equals_numpy_on_unpadded_sequences(hparams):
    encoder = Conv1DEncoder({**SMALL, **hparams})
    got = encoder(INPUTS, sequence_length=LENGTHS).numpy()
    want = numpy_conv_encoder(encoder, INPUTS, LENGTHS)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5)
    # Extra padding with large values changes nothing.
    padded = np.concatenate([INPUTS, 100 * np.ones((5, 4, 4), np.float32)], axis=1)
    padded[np.arange(11)[None, :] >= LENGTHS[:, None]] = 50.0
    np.testing.assert_allclose(encoder(padded, sequence_length=LENGTHS).numpy(), got, atol=1e-5)


def test_output_width_and_no_lengths():
    assert Conv1DEncoder(SMALL)(INPUTS).shape == (5, 9)
    assert Conv1DEncoder({**SMALL, "num_conv_layers": 0})(INPUTS).shape == (5, 4)
    bag = Conv1DEncoder({**SMALL, "num_conv_layers": 0, "pooling": "mean"})
    np.testing.assert_allclose(bag(INPUTS).numpy(), INPUTS.mean(axis=1), atol=1e-6)
    encoder = Conv1DEncoder({**SMALL, "num_dense_layers": 1, "dense_size": 6})
    assert encoder.compute_output_shape((None, None, 4)) == (None, 6)


@pytest.mark.parametrize("pooling", ["max", "mean"])
def test_contract(tmp_path, pooling):
    hparams = {
        **SMALL,
        "pooling": pooling,
        "num_conv_layers": 2,
        "num_dense_layers": 1,
        "dense_size": 6,
        "token_dropout": 0.2,
        "dropout_rate": 0.1,
    }
    check_module_contract(
        lambda **kw: Conv1DEncoder(hparams, **kw),
        {"inputs": INPUTS, "sequence_length": LENGTHS},
        tmp_path,
        sequence_inputs={"inputs": 1},
    )


def test_token_dropout_averages_the_kept_words():
    # One-hot step vectors: the mean over a set S of kept steps is 1/|S| at S, 0 elsewhere.
    time = 8
    inputs = np.tile(np.eye(time, dtype=np.float32)[None], (64, 1, 1))
    lengths = np.full(64, 6, np.int32)
    dan = Conv1DEncoder(
        {"num_conv_layers": 0, "pooling": "mean", "token_dropout": 0.5, "dropout_rate": 0.0}
    )
    np.testing.assert_allclose(dan(inputs, sequence_length=lengths).numpy()[:, :6], 1 / 6)
    out = dan(inputs, sequence_length=lengths, training=True).numpy()
    kept = out > 0
    assert not kept[:, 6:].any(), "a padded step was pooled"
    counts = kept.sum(axis=1)
    for row, count in zip(out, counts, strict=True):
        np.testing.assert_allclose(row[row > 0], 1 / max(count, 1), rtol=1e-6)
    assert 0.35 < counts.mean() / 6 < 0.65  # about half the words kept
    # With convolutions, dropped words are zero vectors: only the ones fed in change.
    conv = Conv1DEncoder({**SMALL, "token_dropout": 0.999})
    np.testing.assert_allclose(
        conv(INPUTS, sequence_length=LENGTHS, training=True).numpy(),
        conv(np.zeros_like(INPUTS), sequence_length=LENGTHS).numpy(),
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "hparams, key",
    [
        ({"kernel_sizes": []}, "kernel_sizes"),
        ({"kernel_sizes": [3, 0]}, "kernel_sizes.1"),
        ({"kernel_sizes": [3, 2.5]}, "kernel_sizes.1"),
        ({"pooling": "average"}, "pooling"),
        ({"num_conv_layers": -1}, "num_conv_layers"),
        ({"num_dense_layers": -2}, "num_dense_layers"),
        ({"filters": 0}, "filters"),
        ({"token_dropout": 1.0}, "token_dropout"),
        ({"dropout_rate": -0.1}, "dropout_rate"),
        ({"conv_activation": "relux"}, "conv_activation"),
        ({"initializer": {"type": "Dense"}}, "initializer"),
    ],
)
def test_bad_hparams_name_the_key(hparams, key):
    with pytest.raises(HParamsError) as error:
        Conv1DEncoder(hparams)
    assert error.value.path.startswith(key), error.value.path
