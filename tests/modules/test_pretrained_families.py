"""RoBERTa, DistilBERT, ALBERT, ELECTRA and T5 modules: the module contract, and documentation.

Their numbers are checked against the reference implementation on real weights in
``tests/pretrained``; here randomly initialized tiny modules keep every module's contract
(config round trip, ``.keras`` saving, graph, XLA, ``tf.data``, bfloat16, padding invariance).
"""

import keras
import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.modules import (
    ALBERTEncoder,
    DistilBERTEncoder,
    ELECTRAEncoder,
    RoBERTaEncoder,
    T5EncoderDecoder,
)

RNG = np.random.default_rng(5)
IDS = RNG.integers(3, 40, size=(4, 6)).astype(np.int32)
SEGMENTS = (np.arange(6)[None, :] >= np.array([[3], [2], [1], [4]])).astype(np.int32)
LENGTHS = np.array([6, 3, 1, 4], np.int32)
BERT_SIZES = {"vocab_size": 40, "hidden_size": 8, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 16,
              "max_position_embeddings": 16}  # fmt: skip
TINY = {
    RoBERTaEncoder: {**BERT_SIZES, "max_position_embeddings": 18},
    ELECTRAEncoder: {**BERT_SIZES, "embedding_size": 4},
    ALBERTEncoder: {**BERT_SIZES, "embedding_size": 4},
    DistilBERTEncoder: {"vocab_size": 40, "dim": 8, "n_layers": 2, "n_heads": 2,
                        "hidden_dim": 16, "max_position_embeddings": 16},
}  # fmt: skip
T5_TINY = {"vocab_size": 40, "d_model": 8, "d_kv": 4, "d_ff": 12, "num_layers": 2,
           "num_heads": 2, "relative_attention_num_buckets": 8,
           "relative_attention_max_distance": 16}  # fmt: skip


@pytest.mark.parametrize("cls", [*TINY, T5EncoderDecoder], ids=lambda c: c.__name__)
def test_every_hparam_is_documented(cls):
    assert undocumented_hparams(cls) == ([], [])


@pytest.mark.parametrize("cls", list(TINY), ids=lambda c: c.__name__)
def test_encoder_contract(cls, tmp_path):
    segments = cls is not RoBERTaEncoder  # RoBERTa's single segment id is 0
    inputs = {"input_ids": IDS, "sequence_length": LENGTHS}
    if segments:
        inputs["segment_ids"] = SEGMENTS
    outputs, pooled = check_module_contract(
        lambda **kw: cls(TINY[cls], **kw),
        inputs,
        tmp_path,
        sequence_inputs={"input_ids": 1, **({"segment_ids": 1} if segments else {})},
        output_time_axes=(1, None),
        bf16_tolerance=5e-2,
    )
    assert outputs.shape == (4, 6, 8) and pooled.shape == (4, 8)


@pytest.mark.parametrize("tied", [True, False])
def test_t5_contract(tied, tmp_path):
    keras.utils.set_random_seed(7)  # the bfloat16 error depends on the weights: fix them
    targets = RNG.integers(3, 40, size=(4, 5)).astype(np.int32)
    outputs = check_module_contract(
        lambda **kw: T5EncoderDecoder(
            {**T5_TINY, "tie_word_embeddings": tied,
             "feed_forward_proj": "relu" if tied else "gated-gelu"}, **kw),
        {"input_ids": IDS, "sequence_length": LENGTHS, "decoder_input_ids": targets},
        tmp_path,
        sequence_inputs={"input_ids": 1},
        output_time_axes=None,
        # bfloat16 through two stacks whose attention scores are not scaled: logits of size
        # about 6 differ by up to 0.09 (0.4% of the elements beyond 0.05).
        bf16_tolerance=1e-1,
        float32_outputs=(True, False, True),  # logits, sample_id, soft_sample
    )  # fmt: skip
    assert outputs.logits.shape == (4, 5, 40)
