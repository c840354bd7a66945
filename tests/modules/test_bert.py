"""BERTEncoder, BERTClassifier and the BERT heads: contract, formulas, strategies."""

import math

import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import (
    BERTClassifier,
    BERTEncoder,
    BERTMaskedLMHead,
    BERTNextSentenceHead,
    BERTPretrainer,
    SpanHead,
    TokenTaggingHead,
)

RNG = np.random.default_rng(11)
TINY = {
    "vocab_size": 40,
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "max_position_embeddings": 16,
}
IDS = RNG.integers(1, 40, size=(4, 6)).astype(np.int32)
SEGMENTS = (np.arange(6)[None, :] >= np.array([[3], [2], [1], [4]])).astype(np.int32)
LENGTHS = np.array([6, 3, 1, 4], np.int32)
INPUTS = {"input_ids": IDS, "sequence_length": LENGTHS, "segment_ids": SEGMENTS}


@pytest.mark.parametrize(
    "cls",
    [BERTEncoder, BERTClassifier, BERTPretrainer, BERTMaskedLMHead, BERTNextSentenceHead,
     TokenTaggingHead, SpanHead],
)  # fmt: skip
def test_every_hparam_is_documented(cls):
    assert undocumented_hparams(cls) == ([], [])


def test_encoder_contract(tmp_path):
    outputs, pooled = check_module_contract(
        lambda **kw: BERTEncoder(TINY, **kw),
        INPUTS,
        tmp_path,
        sequence_inputs={"input_ids": 1, "segment_ids": 1},
        output_time_axes=(1, None),
        bf16_tolerance=5e-2,
    )
    assert outputs.shape == (4, 6, 8) and pooled.shape == (4, 8)


def test_encoder_embeddings_are_the_sum_of_three_tables():
    encoder = BERTEncoder({**TINY, "num_hidden_layers": 1})
    encoder(IDS)
    norm = encoder.embedding_norm
    captured = {}
    original = norm.call

    def spy(inputs, **kwargs):
        captured["inputs"] = inputs.numpy()
        return original(inputs, **kwargs)

    norm.call = spy
    encoder(IDS, segment_ids=SEGMENTS)
    word = encoder.word_embedder.embedding.numpy()[IDS]
    segment = encoder.segment_embedder.embedding.numpy()[SEGMENTS]
    position = encoder.position_embedder.embedding.numpy()[:6][None]
    np.testing.assert_allclose(captured["inputs"], word + segment + position, atol=1e-6)


def test_pooler_is_tanh_dense_of_the_first_token():
    encoder = BERTEncoder(TINY)
    outputs, pooled = encoder(IDS, sequence_length=LENGTHS)
    dense = encoder.pooler
    want = np.tanh(outputs.numpy()[:, 0] @ dense.kernel.numpy() + dense.bias.numpy())
    np.testing.assert_allclose(pooled.numpy(), want, atol=1e-6)


def test_gelu_new_is_the_tanh_approximation():
    exact = BERTEncoder(TINY)
    approximate = BERTEncoder({**TINY, "hidden_act": "gelu_new"})
    block = approximate.blocks[0]
    x = np.linspace(-3, 3, 7).astype(np.float32)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(block.ffn_activation(x), want, atol=1e-6)
    # Training applies the fused form of the same function.
    np.testing.assert_allclose(block.ffn_training_activation(x), want, atol=1e-6)
    exact_block = exact.blocks[0]
    for activation in (exact_block.ffn_activation, exact_block.ffn_training_activation):
        assert not np.allclose(activation(x), want, atol=1e-4)


def test_errors_inside_a_classifier_name_the_key_as_written():
    with pytest.raises(HParamsError) as info:
        BERTClassifier({"encoder": {**TINY, "num_attention_heads": 3}})
    assert info.value.path == "encoder.num_attention_heads"
    with pytest.raises(HParamsError) as info:
        BERTPretrainer({"encoder": {**TINY, "hidden_dropout_prob": 1.5}})
    assert info.value.path == "encoder.hidden_dropout_prob"
    with pytest.raises(HParamsError) as info:
        BERTClassifier({"encoder": TINY, "clas_strategy": "all_time", "max_seq_length": -3})
    assert info.value.path == "max_seq_length"


def test_inputs_longer_than_the_position_table_are_refused():
    with pytest.raises(ValueError, match="17 steps, more than the 16 positions"):
        BERTEncoder(TINY)(np.zeros((1, 17), np.int32))


def test_bad_hparams_name_the_key():
    with pytest.raises(HParamsError, match="num_attention_heads"):
        BERTEncoder({**TINY, "num_attention_heads": 3})
    with pytest.raises(HParamsError, match="hidden_act"):
        BERTEncoder({**TINY, "hidden_act": "gelu_fast_and_loose"})
    with pytest.raises(HParamsError, match="clas_strategy"):
        BERTClassifier({"encoder": TINY, "clas_strategy": "last_time"})
    with pytest.raises(HParamsError, match="max_seq_length"):
        BERTClassifier({"encoder": TINY, "clas_strategy": "all_time"})


@pytest.mark.parametrize(
    "strategy,extra", [("cls_time", {}), ("mean_time", {}), ("all_time", {"max_seq_length": 10}),
                       ("time_wise", {})]
)  # fmt: skip
def test_classifier_contract(tmp_path, strategy, extra):
    hparams = {"encoder": TINY, "num_classes": 3, "clas_strategy": strategy, **extra}
    logits, preds = check_module_contract(
        lambda **kw: BERTClassifier(hparams, **kw),
        INPUTS,
        tmp_path,
        sequence_inputs={"input_ids": 1, "segment_ids": 1},
        output_time_axes=(1, 1) if strategy == "time_wise" else (None, None),
        bf16_tolerance=5e-2,
    )
    np.testing.assert_array_equal(preds, np.argmax(logits, -1))


def test_classifier_strategies_use_the_features_they_name():
    classifier = BERTClassifier({"encoder": TINY, "num_classes": 3, "clas_strategy": "mean_time"})
    logits, _ = classifier(IDS, sequence_length=LENGTHS)
    outputs, _ = classifier.encoder(IDS, sequence_length=LENGTHS)
    outputs = outputs.numpy()
    dense = classifier.logits_layer
    means = np.stack([outputs[b, : LENGTHS[b]].mean(0) for b in range(4)])
    np.testing.assert_allclose(logits, means @ dense.kernel.numpy() + dense.bias.numpy(), atol=1e-5)

    binary = BERTClassifier({"encoder": TINY, "num_classes": 1})
    logits, preds = binary(IDS, sequence_length=LENGTHS)
    assert logits.shape == (4,)
    np.testing.assert_array_equal(preds, (logits.numpy() > 0).astype(np.int32))


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_masked_lm_head_equals_formula_with_tied_embeddings():
    model = BERTPretrainer({"encoder": TINY})
    positions = np.array([[1, 2], [0, 2], [0, 0], [3, 1]], np.int32)
    mlm, nsp = model(IDS, masked_lm_positions=positions, sequence_length=LENGTHS)
    outputs, pooled = model.encoder(IDS, sequence_length=LENGTHS)
    head = model.mlm_head
    picked = np.take_along_axis(outputs.numpy(), positions[:, :, None], axis=1)
    h = gelu(picked @ head.transform.kernel.numpy() + head.transform.bias.numpy())
    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    gamma, beta = head.layer_norm.gamma.numpy(), head.layer_norm.beta.numpy()
    h = (h - mean) / np.sqrt(var + 1e-12) * gamma + beta
    table = model.encoder.word_embedder.embedding.numpy()
    np.testing.assert_allclose(mlm, h @ table.T + head.output_bias.numpy(), atol=1e-5)
    dense = model.nsp_head.dense
    np.testing.assert_allclose(
        nsp, pooled.numpy() @ dense.kernel.numpy() + dense.bias.numpy(), atol=1e-5
    )
    # Tied: the head owns no table of its own.
    assert all("embedding" not in w.path for w in head.weights)


def test_pretrainer_contract(tmp_path):
    positions = np.array([[1, 2], [0, 2], [0, 0], [3, 1]], np.int32)
    check_module_contract(
        lambda **kw: BERTPretrainer({"encoder": TINY}, **kw),
        {**INPUTS, "masked_lm_positions": positions},
        tmp_path,
        bf16_tolerance=1e-1,  # logits over the vocabulary, after two bfloat16 blocks
    )


def test_span_head_masks_padding_and_tagging_head_is_per_token():
    hidden = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    span = SpanHead()
    start, end = span(hidden, sequence_length=np.array([5, 2]))
    raw = hidden @ span.dense.kernel.numpy() + span.dense.bias.numpy()
    np.testing.assert_allclose(start.numpy()[0], raw[0, :, 0], atol=1e-5)
    np.testing.assert_allclose(end.numpy()[1, :2], raw[1, :2, 1], atol=1e-5)
    assert (start.numpy()[1, 2:] == -1e9).all() and (end.numpy()[1, 2:] == -1e9).all()
    tagger = TokenTaggingHead({"num_classes": 4})
    tags = tagger(hidden)
    want = hidden @ tagger.dense.kernel.numpy() + tagger.dense.bias.numpy()
    np.testing.assert_allclose(tags, want, atol=1e-5)
