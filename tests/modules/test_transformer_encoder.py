import math

import numpy as np
import pytest
import tensorflow as tf

from tests.core.test_attention import numpy_attention
from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import TransformerEncoder

RNG = np.random.default_rng(3)
HPARAMS = {
    "dim": 8,
    "num_blocks": 2,
    "multihead_attention": {"num_heads": 2, "dropout_rate": 0.0},
    "poswise_feedforward": {"dim": 16, "activation": "gelu"},
    "embedding_dropout": 0.0,
    "residual_dropout": 0.0,
}


def layer_norm(x, layer, eps):
    gamma, beta = (w.numpy() for w in layer.weights)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def numpy_encoder(encoder, x, lengths):
    eps = encoder.hparams.layer_norm_epsilon
    post = encoder.hparams.norm == "post"
    if post:
        x = layer_norm(x, encoder.input_norm, eps)
    for block in encoder.blocks:

        def ffn(h, block=block):
            inner = gelu(h @ block.ffn_inner.kernel.numpy() + block.ffn_inner.bias.numpy())
            return inner @ block.ffn_output.kernel.numpy() + block.ffn_output.bias.numpy()

        def attend(h, block=block):
            return numpy_attention(block.self_attention, h, h, lengths)

        if post:
            x = layer_norm(x + attend(x), block.attention_norm, eps)
            x = layer_norm(x + ffn(x), block.ffn_norm, eps)
        else:
            x = x + attend(layer_norm(x, block.attention_norm, eps))
            x = x + ffn(layer_norm(x, block.ffn_norm, eps))
    if not post:
        x = layer_norm(x, encoder.output_norm, eps)
    return x


def test_every_hparam_is_documented():
    assert undocumented_hparams(TransformerEncoder) == ([], [])


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_equals_the_block_formulas(norm):
    encoder = TransformerEncoder({**HPARAMS, "norm": norm})
    x = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    lengths = np.array([5, 2, 4])
    got = encoder(x, sequence_length=lengths).numpy()
    mask = np.arange(5)[None, :] < lengths[:, None]
    want = numpy_encoder(encoder, x.astype(np.float64), lengths)
    np.testing.assert_allclose(got[mask], want[mask], atol=2e-5)


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("activation", ["gelu", {"type": "gelu", "kwargs": {"approximate": True}}])
def test_training_without_dropout_equals_inference_values_and_gradients(norm, activation):
    # training=True runs the fused GELU (texkit.core.fused); training=False Keras' own.
    ffn = {"dim": 16, "activation": activation}
    encoder = TransformerEncoder({**HPARAMS, "norm": norm, "poswise_feedforward": ffn})
    x = tf.constant(RNG.normal(size=(3, 5, 8)).astype(np.float32))
    lengths = tf.constant([5, 2, 4])
    weights = tf.constant(RNG.normal(size=(3, 5, 8)).astype(np.float32))
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = encoder(x, sequence_length=lengths, training=training)
            loss = tf.reduce_sum(y * weights)
        grads = tape.gradient(loss, [x, *encoder.trainable_variables])
        results.append([y, *grads])
    assert len(results[0]) == 2 + 2 * 16 + 2  # y, x; 16 weights a block; the extra norm
    for fast, plain in zip(*results, strict=True):
        np.testing.assert_allclose(fast.numpy(), plain.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_contract(tmp_path, norm):
    hparams = {**HPARAMS, "norm": norm, "embedding_dropout": 0.1, "residual_dropout": 0.1}
    hparams["multihead_attention"] = {"num_heads": 2, "dropout_rate": 0.1}
    check_module_contract(
        lambda **kw: TransformerEncoder(hparams, **kw),
        {
            "inputs": RNG.normal(size=(4, 6, 8)).astype(np.float32),
            "sequence_length": np.array([6, 3, 1, 4], np.int32),
        },
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=1,
        bf16_tolerance=5e-2,  # two blocks of bfloat16 (8 bits of mantissa) matrix products
    )


def test_bad_hparams_name_the_key():
    with pytest.raises(HParamsError, match="norm"):
        TransformerEncoder({"norm": "middle"})
    with pytest.raises(HParamsError, match="residual_dropout"):
        TransformerEncoder({"residual_dropout": -0.1})
    with pytest.raises(ValueError, match="dim=8"):
        TransformerEncoder(HPARAMS)(np.zeros((1, 2, 4), np.float32))
