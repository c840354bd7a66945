"""Word and character error rates against jiwer's recorded numbers
(tests/fixtures/evals/error_rates.json, made by make_error_rate_fixture.py with jiwer 4.0.0)."""

import json
from pathlib import Path

import keras
import pytest
import tensorflow as tf

from texkit.evals import CharErrorRate, WordErrorRate, char_error_rate, word_error_rate

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evals" / "error_rates.json"
RECORDED = json.loads(FIXTURE.read_text("utf-8"))
CORPORA = RECORDED["corpora"]


@pytest.mark.parametrize("index", range(len(CORPORA)))
def test_corpus_rates_equal_jiwer(index):
    corpus = CORPORA[index]
    refs, hyps = corpus["references"], corpus["hypotheses"]
    assert word_error_rate(refs, hyps) == pytest.approx(corpus["wer"], rel=1e-12)
    assert char_error_rate(refs, hyps) == pytest.approx(corpus["cer"], rel=1e-12)
    # Byte strings and tensors are the same texts.
    encoded = [text.encode("utf-8") for text in refs]
    assert word_error_rate(encoded, tf.constant(hyps)) == pytest.approx(corpus["wer"], rel=1e-12)


def test_the_corpora_cover_the_edge_cases():
    texts = [t for c in CORPORA for t in c["references"] + c["hypotheses"]]
    assert any("  " in t for t in texts) and any(t != t.strip() for t in texts)
    assert "" in texts
    assert any(not any(r.strip() for r in c["references"]) for c in CORPORA)
    assert any(ord(ch) > 0x3000 for t in texts for ch in t)


def test_unicode_whitespace_is_whitespace_as_in_jiwer():
    case = RECORDED["unicode_whitespace"]
    refs, hyps = case["references"], case["hypotheses"]
    assert word_error_rate(refs, hyps) == pytest.approx(case["wer"], abs=1e-12)
    assert char_error_rate(refs, hyps) == pytest.approx(case["cer"], rel=1e-12)


def test_a_lone_tab_or_newline_separates_words_here_not_in_jiwer():
    case = RECORDED["lone_tab_and_newline"]
    # jiwer: "a\tb" and "one\ntwo" are one word each, so 2 + 2 edits over 2 + 1 words.
    assert case["wer"] == pytest.approx(4 / 3)
    assert word_error_rate(case["references"], case["hypotheses"]) == 0.0


def test_metrics_over_a_batched_dataset_in_a_tf_function_equal_jiwer():
    corpus = CORPORA[3]
    dataset = tf.data.Dataset.from_tensor_slices(
        (corpus["references"], corpus["hypotheses"])
    ).batch(7)
    words, chars = WordErrorRate(), CharErrorRate()

    @tf.function
    def update(refs, hyps):
        words.update_state(refs, hyps)
        chars.update_state(refs, hyps)

    for refs, hyps in dataset:
        update(refs, hyps)
    assert float(words.result()) == pytest.approx(corpus["wer"], rel=1e-6)
    assert float(chars.result()) == pytest.approx(corpus["cer"], rel=1e-6)
    words.reset_state()
    assert tf.math.is_nan(words.result())


def test_metric_eagerly_on_lists_accumulates_the_corpus_rate():
    corpus = CORPORA[2]
    refs, hyps = corpus["references"], corpus["hypotheses"]
    metric = WordErrorRate()
    for start in range(0, len(refs), 5):
        metric.update_state(refs[start : start + 5], hyps[start : start + 5])
    assert float(metric.result()) == pytest.approx(corpus["wer"], rel=1e-6)
    clone = keras.metrics.deserialize(keras.metrics.serialize(CharErrorRate(name="cer")))
    assert isinstance(clone, CharErrorRate) and clone.name == "cer"


def test_bad_input_is_refused_naming_the_argument_and_changes_nothing():
    with pytest.raises(ValueError, match="references and hypotheses"):
        word_error_rate(["a b", "c"], ["a b"])
    with pytest.raises(ValueError, match="references is empty"):
        char_error_rate([], [])
    with pytest.raises(TypeError, match="references must be a batch of texts"):
        word_error_rate([3, 4], ["a", "b"])
    with pytest.raises(ValueError, match="hypotheses must be a 1-D batch"):
        word_error_rate(["a"], [["a"]])
    metric = WordErrorRate()
    metric.update_state(["a b c"], ["a c"])
    with pytest.raises(ValueError, match="references and hypotheses"):
        metric.update_state(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="sample_weight"):
        metric.update_state(["a"], ["a"], sample_weight=[2.0])
    assert float(metric.result()) == pytest.approx(1 / 3)


def test_mismatched_batches_in_a_tf_function_fail_at_run_time():
    metric = WordErrorRate()
    update = tf.function(
        metric.update_state,
        input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of texts"):
        update(tf.constant(["a", "b"]), tf.constant(["a"]))
