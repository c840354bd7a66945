"""LlamaDecoder as a module: cached decoding against full passes, its config, its checks.

Equality with transformers on real checkpoints of each family is in
``tests/pretrained/test_llama_line.py``; here the independent check is the decoder itself
without its cache: each greedy token is the argmax of a teacher-forced pass over the sequence so
far (for LongRoPE too, whose frequencies change once a call passes the original length: the
cached decoder recomputes its keys there).
"""

import numpy as np
import pytest
import tensorflow as tf

from texkit.hparams import HParamsError
from texkit.modules import LlamaDecoder

VOCAB = 40
BASE = {
    "vocab_size": VOCAB, "dim": 16, "num_blocks": 2, "feed_forward": {"dim": 24},
    "attention": {"num_heads": 4, "num_kv_heads": 2}, "max_position_embeddings": 32,
    "initializer": {"type": "RandomNormal", "kwargs": {"stddev": 0.3}},
}  # fmt: skip
VARIANTS = {
    "plain": {},
    "gemma2_like": {
        "attention": {"sliding_window": 3, "layer_types": ["sliding_attention", "full_attention"],
                      "softcap": 5.0, "query_pre_attn_scalar": 6, "head_dim": 6},
        "norm": {"unit_offset": True, "sandwich": True}, "scale_embeddings": True,
        "tie_embeddings": True, "final_logit_softcap": 3.0,
        "feed_forward": {"activation": {"type": "gelu", "kwargs": {"approximate": True}}},
    },
    "longrope": {
        "attention": {"num_kv_heads": 1, "qkv_bias": True, "query_key_norm": True},
        "rotary": {"partial_rotary_factor": 0.5,
                   "scaling": {"rope_type": "longrope", "short_factor": [1.0],
                               "long_factor": [5.0], "original_max_position_embeddings": 6}},
    },
}  # fmt: skip
PROMPTS = np.array([[3, 7, 9, 4], [5, 6, 8, 2]], np.int32)
STEPS = 12


def make(variant):
    tf.random.set_seed(1)
    hparams = {**BASE, **VARIANTS[variant]}
    for key in ("attention", "feed_forward"):
        hparams[key] = {**BASE[key], **VARIANTS[variant].get(key, {})}
    return LlamaDecoder(hparams)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_greedy_token_is_the_argmax_of_a_full_pass(variant):
    lm = make(variant)
    outputs, _, lengths = lm(decoding_strategy="infer_greedy", context=PROMPTS, end_token=None,
                             max_decoding_length=STEPS)  # fmt: skip
    ids = np.concatenate([PROMPTS[:, :1], outputs.sample_id.numpy()], axis=1)
    np.testing.assert_array_equal(lengths, [STEPS, STEPS])
    np.testing.assert_array_equal(ids[:, : PROMPTS.shape[1]], PROMPTS)
    for t in range(PROMPTS.shape[1] - 1, STEPS):
        full, _, _ = lm(inputs=ids[:, : t + 1])
        np.testing.assert_array_equal(ids[:, t + 1], np.argmax(full.logits[:, t], axis=-1))
    search = lm.beam_search(1, 0.0, context=PROMPTS, end_token=None, max_decoding_length=STEPS)
    np.testing.assert_array_equal(search.ids.numpy()[:, 0], outputs.sample_id.numpy())


def test_longrope_switches_frequencies_past_the_original_length():
    lm = make("longrope")
    assert lm.recompute_at == 6
    ids = np.tile(np.arange(1, 11, dtype=np.int32), [1, 1])
    full, _, _ = lm(inputs=ids)
    short, _, _ = lm(inputs=ids[:, :6])  # within the original length: the short factors
    assert np.abs(full.logits[:, :6] - short.logits).max() > 1e-3
    assert make("plain").recompute_at is None


def test_config_round_trip_rebuilds_the_same_model():
    lm = make("gemma2_like")
    outputs, _, _ = lm(inputs=PROMPTS)
    again = LlamaDecoder.from_config(lm.get_config())
    again(inputs=PROMPTS)
    again.set_weights(lm.get_weights())
    np.testing.assert_allclose(again(inputs=PROMPTS)[0].logits, outputs.logits, atol=1e-6)
    assert again.layer_types == ["sliding_attention", "full_attention"]


@pytest.mark.parametrize(
    "change, key",
    [
        ({"attention": {"num_heads": 4, "num_kv_heads": 3}}, "attention.num_kv_heads"),
        ({"attention": {"num_heads": 4, "layer_types": ["full_attention"]}},
         "attention.layer_types"),
        ({"attention": {"num_heads": 4, "layer_types": ["sliding_attention"] * 2}},
         "attention.sliding_window"),
        ({"attention": {"num_heads": 4, "layer_types": ["local", "full_attention"],
                        "sliding_window": 2}}, "attention.layer_types"),
        ({"rotary": {"scaling": {"rope_type": "fancy"}}}, "rotary.scaling.rope_type"),
        ({"rotary": {"scaling": {"rope_type": "linear"}}}, "rotary.scaling.factor"),
        ({"dim": 18}, "attention.head_dim"),
        ({"norm": {"epsilon": 2.0}}, "norm.epsilon"),
        ({"final_logit_softcap": -1.0}, "final_logit_softcap"),
    ],
)  # fmt: skip
def test_bad_hparams_name_their_key(change, key):
    with pytest.raises(HParamsError) as error:
        LlamaDecoder({**BASE, **change})
    assert error.value.path == key
