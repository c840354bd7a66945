import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from tests.modules.test_transformer_decoder import numpy_decoder, randomize
from texkit.configurable import undocumented_hparams
from texkit.modules import GPT2Decoder
from texkit.modules.decoders import DecoderOutput

RNG = np.random.default_rng(11)
VOCAB, EOS = 17, 2
SMALL = {
    "vocab_size": VOCAB,
    "dim": 16,
    "decoder": {
        "num_blocks": 2,
        "multihead_attention": {"num_heads": 4},
        "poswise_feedforward": {"dim": 32},
        "position_embedder": {"position_size": 12},
        "embedding_dropout": 0.0,
        "residual_dropout": 0.0,
    },
}


def make(**kwargs):
    lm = GPT2Decoder(SMALL, **kwargs)
    lm.build(None)
    randomize(lm, 3)
    return lm


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def test_gpt2_small_has_gpt2_smalls_parameter_count():
    """124,439,808 parameters, the count published for GPT-2 small (tied embeddings)."""
    lm = GPT2Decoder()
    lm.build(None)
    assert sum(int(np.prod(w.shape)) for w in lm.weights) == 124_439_808
    assert lm.decoder.hparams.norm == "pre" and not lm.decoder.hparams.cross_attention


def test_forward_equals_numpy_gpt2():
    """Learned positions, no embedding scaling, pre-norm, tanh-approximated GELU, tied output."""
    lm = make()
    ids = RNG.integers(0, VOCAB, size=(3, 7)).astype(np.int32)
    outputs, state, lengths = lm(inputs=ids, sequence_length=[7, 7, 7])
    table = lm.word_embedder.embedding.numpy().astype(np.float64)
    want = numpy_decoder(lm.decoder, table, ids, activation=gelu_tanh)
    np.testing.assert_allclose(outputs.logits.numpy(), want, atol=1e-4, rtol=1e-4)
    assert state == () and lengths.numpy().tolist() == [7, 7, 7]


def test_contract(tmp_path):
    check_module_contract(
        lambda **kw: GPT2Decoder(SMALL, **kw),
        {
            "inputs": RNG.integers(0, VOCAB, size=(4, 6)).astype(np.int32),
            "sequence_length": np.array([6, 4, 1, 3], np.int32),
        },
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=(DecoderOutput(1, 1, 1), (), None),
        float32_outputs=(DecoderOutput(True, False, True), (), False),
    )


def test_prompted_generation_with_the_cache_equals_recomputing():
    lm = make()
    prompt = np.array([[5, 6, 7], [8, 9, 0]], np.int32)
    outputs, _, lengths = lm(
        decoding_strategy="infer_greedy", context=prompt, context_sequence_length=[3, 2],
        end_token=EOS, max_decoding_length=10,
    )  # fmt: skip
    ids = outputs.sample_id.numpy()
    assert ids[0, :2].tolist() == [6, 7] and ids[1, 0] == 9
    tokens = np.concatenate([prompt[:, :1], ids], axis=1)
    recomputed, _, _ = lm(inputs=tokens[:, :-1])
    for row, start in enumerate([2, 1]):
        free = slice(start, lengths[row])
        np.testing.assert_allclose(
            outputs.logits.numpy()[row, free], recomputed.logits.numpy()[row, free], atol=1e-5
        )
    sampled = tf.function(
        lambda: lm(decoding_strategy="infer_sample", context=prompt, end_token=EOS,
                   max_decoding_length=10, top_p=0.9, seed=5)[0].sample_id,
        jit_compile=True,
    )  # fmt: skip
    np.testing.assert_array_equal(sampled(), sampled())  # seeded: reproducible
    search = lm.beam_search(3, 0.6, end_token=EOS, max_decoding_length=10, context=prompt)
    assert search.ids.shape == (2, 3, 10) and np.all(np.isfinite(search.scores))


def test_every_hparam_is_documented_and_sizes_are_checked():
    assert undocumented_hparams(GPT2Decoder) == ([], [])
    with pytest.raises(ValueError, match="exceed position_embedder.position_size=12"):
        make()(inputs=np.ones((1, 13), np.int32))
