"""chrF, TER and BLEU against sacrebleu's objects called directly (corpus_score) on seeded
random corpora; the Keras metrics over any batching against one corpus_score."""

import keras
import numpy as np
import pytest
import sacrebleu
import tensorflow as tf

import texkit as tx
from texkit.evals import CHRF, TER, chrf, ter
from texkit.evals.chrf_ter import _score, _statistics

WORDS = ["the", "cat", "Cat", "sat", "on", "a", "mat.", "(dog)", "ran,", "çay", "кошка", "北京"]


def random_corpus(seed, size, max_refs=1):
    rng = np.random.default_rng(seed)

    def text():
        return " ".join(rng.choice(WORDS, size=rng.integers(0, 12)))

    hyps = [text() for _ in range(size)]
    refs = [[text() for _ in range(rng.integers(1, max_refs + 1))] for _ in range(size)]
    return hyps, refs


def sacrebleu_corpus_score(metric, hyps, refs):
    """sacrebleu's layout: one stream per reference position, None where a hypothesis has fewer."""
    streams = [
        [r[k] if k < len(r) else None for r in refs] for k in range(max(len(r) for r in refs))
    ]
    return metric.corpus_score(hyps, streams).score


CHRF_SETTINGS = [
    {},
    {"word_order": 2},
    {"char_order": 4, "beta": 1, "lowercase": True},
    {"whitespace": True, "eps_smoothing": True},
]
TER_SETTINGS = [{}, {"normalized": True, "no_punct": True}, {"case_sensitive": True}]


@pytest.mark.parametrize("kwargs", CHRF_SETTINGS)
@pytest.mark.parametrize("seed,max_refs", [(0, 1), (1, 3)])
def test_chrf_equals_sacrebleu(kwargs, seed, max_refs):
    hyps, refs = random_corpus(seed, 25, max_refs)
    expected = sacrebleu_corpus_score(sacrebleu.metrics.CHRF(**kwargs), hyps, refs)
    assert chrf(hyps, refs, **kwargs) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("kwargs", TER_SETTINGS)
@pytest.mark.parametrize("seed,max_refs", [(2, 1), (3, 3)])
def test_ter_equals_sacrebleu(kwargs, seed, max_refs):
    hyps, refs = random_corpus(seed, 25, max_refs)
    expected = sacrebleu_corpus_score(sacrebleu.metrics.TER(**kwargs), hyps, refs)
    assert ter(hyps, refs, **kwargs) == pytest.approx(expected, abs=1e-10)


def test_plain_reference_texts_are_one_reference_each():
    hyps, refs = random_corpus(4, 10)
    assert chrf(hyps, [r[0] for r in refs]) == chrf(hyps, refs)
    assert ter(hyps, [r[0].encode("utf-8") for r in refs]) == ter(hyps, refs)


def test_summed_statistics_give_sacrebleus_score():
    # The two sacrebleu methods the metrics rely on: if a sacrebleu release changes them, this
    # fails first.
    hyps, refs = random_corpus(5, 20, 2)
    for metric in (sacrebleu.metrics.CHRF(word_order=2), sacrebleu.metrics.TER()):
        halves = _statistics(metric, hyps[:7], refs[:7]) + _statistics(metric, hyps[7:], refs[7:])
        expected = sacrebleu_corpus_score(metric, hyps, refs)
        assert _score(metric, halves) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("batch_size", [1, 4, 30])
def test_metrics_over_batches_equal_one_corpus_score(batch_size):
    hyps, refs = random_corpus(6, 30, 2)
    refs = [r * 2 if len(r) == 1 else r for r in refs]  # two each, for a [batch, 2] tensor
    chrf_metric, ter_metric = CHRF(word_order=2), TER(normalized=True)

    @tf.function
    def update(hyp, ref):
        chrf_metric.update_state(hyp, ref)
        ter_metric.update_state(hyp, ref)

    for hyp, ref in tf.data.Dataset.from_tensor_slices((hyps, refs)).batch(batch_size):
        update(hyp, ref)
    expected_chrf = sacrebleu_corpus_score(sacrebleu.metrics.CHRF(word_order=2), hyps, refs)
    expected_ter = sacrebleu_corpus_score(sacrebleu.metrics.TER(normalized=True), hyps, refs)
    assert float(chrf_metric.result()) == pytest.approx(expected_chrf, rel=1e-6)
    assert float(tf.function(ter_metric.result)()) == pytest.approx(expected_ter, rel=1e-6)


def test_metrics_over_a_ragged_batched_dataset_equal_one_corpus_score():
    hyps, refs = random_corpus(8, 17, 3)  # one to three references each
    dataset = tf.data.Dataset.from_tensor_slices((hyps, tf.ragged.constant(refs))).ragged_batch(5)
    chrf_metric, ter_metric = CHRF(), TER()

    @tf.function
    def update(hyp, ref):
        chrf_metric.update_state(hyp, ref)
        ter_metric.update_state(hyp, ref)

    for hyp, ref in dataset:
        assert isinstance(ref, tf.RaggedTensor)
        update(hyp, ref)
    expected_chrf = sacrebleu_corpus_score(sacrebleu.metrics.CHRF(), hyps, refs)
    assert float(chrf_metric.result()) == pytest.approx(expected_chrf, rel=1e-6)
    assert float(ter_metric.result()) == pytest.approx(ter(hyps, refs), rel=1e-6)
    # Eagerly, a ragged tensor is its rows.
    eager = CHRF()
    eager.update_state(tf.constant(hyps), tf.ragged.constant(refs))
    assert float(eager.result()) == pytest.approx(expected_chrf, rel=1e-6)


def test_metric_eagerly_with_ragged_python_references():
    hyps, refs = random_corpus(7, 11, 3)
    metric = TER()
    for start in range(0, 11, 3):
        metric.update_state(hyps[start : start + 3], refs[start : start + 3])
    assert float(metric.result()) == pytest.approx(ter(hyps, refs), rel=1e-6)
    metric.reset_state()
    assert np.isnan(float(metric.result()))
    clone = keras.metrics.deserialize(keras.metrics.serialize(CHRF(char_order=3, word_order=1)))
    assert isinstance(clone, CHRF) and clone.get_config()["char_order"] == 3
    assert clone.get_config()["word_order"] == 1


def test_bad_input_is_refused_naming_the_argument_and_changes_nothing():
    with pytest.raises(ValueError, match="references must have one item per hypothesis"):
        chrf(["a b", "c"], ["a b"])
    with pytest.raises(ValueError, match="hypotheses is empty"):
        ter([], [])
    with pytest.raises(TypeError, match=r"references\[0\] must be a text or a non-empty list"):
        chrf(["a"], [[]])
    with pytest.raises(TypeError, match=r"hypotheses\[0\] must be a string"):
        ter([["a"]], ["a"])
    with pytest.raises(ValueError, match="char_order must be an int"):
        chrf(["a"], ["a"], char_order=-1)
    with pytest.raises(ValueError, match="both 0"):
        CHRF(char_order=0)
    with pytest.raises(TypeError, match="case_sensitive must be a bool"):
        TER(case_sensitive="yes")
    metric = CHRF()
    metric.update_state(["the cat"], ["the cat"])
    with pytest.raises(TypeError, match=r"hypotheses\[1\]"):
        metric.update_state(["a", None], ["a", "b"])
    with pytest.raises(ValueError, match="sample_weight"):
        metric.update_state(["a"], ["a"], sample_weight=[1.0])
    assert float(metric.result()) == pytest.approx(100.0)


def test_bad_input_in_a_tf_function_reaches_the_caller_with_its_message():
    metric = TER()
    update = tf.function(metric.update_state)
    with pytest.raises(tf.errors.OpError, match="references must have one item per hypothesis"):
        update(tf.constant(["a", "b"]), tf.constant(["a"]))
    assert np.isnan(float(metric.result()))


@pytest.mark.parametrize("tokenize,smooth", [("13a", "exp"), ("none", "add-k")])
def test_bleu_metric_over_batches_equals_one_corpus_score(tokenize, smooth):
    hyps, refs = random_corpus(9, 23, 3)
    metric = tx.evals.BLEU(tokenize=tokenize, smooth_method=smooth)
    update = tf.function(metric.update_state)
    for start in range(0, len(hyps), 5):
        update(tf.constant(hyps[start : start + 5]), tf.ragged.constant(refs[start : start + 5]))
    reference = sacrebleu.metrics.BLEU(tokenize=tokenize, smooth_method=smooth, force=True)
    expected = sacrebleu_corpus_score(reference, hyps, refs)
    assert float(metric.result()) == pytest.approx(expected, rel=1e-6)
    restored = tx.evals.BLEU.from_config(metric.get_config())
    assert restored.get_config() == metric.get_config()
    with pytest.raises(ValueError, match="tokenize"):
        tx.evals.BLEU(tokenize="moses")
