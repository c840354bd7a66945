"""BLEU against hand-worked figures, sacrebleu's own BLEU object and its command; accuracy and
perplexity against NumPy formulas (float64 log-softmax, masked means)."""

import math
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import sacrebleu
import tensorflow as tf

import texkit as tx
from texkit.evals import (
    Accuracy,
    Perplexity,
    accuracy,
    corpus_bleu,
    corpus_bleu_moses,
    perplexity,
    sentence_bleu,
    sentence_bleu_moses,
)

# -- BLEU -------------------------------------------------------------------------------------

REF = "the cat sat on the mat"
HYP = "the cat sat on a mat"
# Clipped n-gram matches of HYP against REF: 5/6 unigrams ("a" misses), 3/5 bigrams, 2/4
# trigrams, 1/3 4-grams; both have 6 tokens, so no brevity penalty.
HAND_PRECISIONS = [5 / 6, 3 / 5, 2 / 4, 1 / 3]
HAND_BLEU = 100 * math.prod(HAND_PRECISIONS) ** 0.25


def random_corpus(seed, size=30, max_refs=3, ragged=False):
    rng = np.random.default_rng(seed)
    words = "a b c d e".split()

    def sentence():
        return " ".join(rng.choice(words, size=rng.integers(1, 16)))

    hyps = [sentence() for _ in range(size)]
    counts = rng.integers(1, max_refs + 1, size=size) if ragged else [max_refs] * size
    refs = [[sentence() for _ in range(count)] for count in counts]
    return refs, hyps


def sacrebleu_score(refs, hyps, **kwargs):
    """sacrebleu's BLEU object called directly, references as equal-count streams."""
    streams = [[r[k] for r in refs] for k in range(len(refs[0]))]
    bleu = sacrebleu.metrics.BLEU(tokenize="none", force=True, **kwargs)
    return bleu.corpus_score(hyps, streams)


def test_bleu_hand_worked():
    assert corpus_bleu([[REF]], [HYP]) == pytest.approx(HAND_BLEU, abs=1e-9)
    assert HAND_BLEU == pytest.approx(53.7285, abs=1e-4)
    score = corpus_bleu_moses([[REF]], [HYP])
    assert [score, *score.precisions] == pytest.approx(
        [HAND_BLEU] + [100 * p for p in HAND_PRECISIONS]
    )
    assert sentence_bleu([REF], HYP) == pytest.approx(HAND_BLEU)
    assert sentence_bleu_moses([REF], HYP) == pytest.approx(HAND_BLEU)


def test_bleu_max_order_smoothing_and_brevity_penalty_by_hand():
    # Orders 1 and 2 only: sqrt(5/6 * 3/5).
    assert corpus_bleu([[REF]], [HYP], max_order=2) == pytest.approx(100 * math.sqrt(0.5))
    # "the cat sat": every n-gram it has matches, but it has no 4-gram: 0 unsmoothed. Smoothed,
    # orders >= 2 get (0 + 1) / (0 + 1); the brevity penalty is exp(1 - 6 / 3).
    assert sentence_bleu([REF], "the cat sat") == 0.0
    smoothed = sentence_bleu([REF], "the cat sat", smooth=True)
    assert [smoothed, *smoothed.precisions] == pytest.approx(
        [100 * math.exp(-1.0), 100.0, 100.0, 100.0, 100.0]
    )


def test_bleu_uses_the_closest_reference_length_the_shorter_on_a_tie():
    # Hypothesis of 4 tokens; references of 5 and 3 tokens are equally close: the shorter (3)
    # counts, so there is no brevity penalty (the 5-token one would give exp(1 - 5 / 4)).
    refs = [["a b c d e", "x y z"]]
    assert corpus_bleu_moses(refs, ["a b c d"]) == pytest.approx(100.0)
    # With 4- and 6-token references the 4 is the closest.
    assert corpus_bleu_moses([["a b c d x", "a b c d x y"]], ["a b c d"]) == pytest.approx(
        100 * math.exp(1 - 5 / 4)
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bleu_equals_sacrebleu_on_a_random_corpus(seed):
    refs, hyps = random_corpus(seed)
    expected = sacrebleu_score(refs, hyps, smooth_method="none")
    assert corpus_bleu_moses(refs, hyps) == pytest.approx(expected.score, abs=1e-9)
    score = corpus_bleu(refs, hyps)
    assert [score, *score.precisions] == pytest.approx(
        [expected.score] + expected.precisions, abs=1e-9
    )
    smoothed = sacrebleu_score(refs, hyps, smooth_method="add-k", max_ngram_order=3)
    assert corpus_bleu(refs, hyps, max_order=3, smooth=True) == pytest.approx(smoothed.score)
    lower = sacrebleu_score(refs, [h.upper() for h in hyps], smooth_method="none", lowercase=True)
    assert corpus_bleu_moses(refs, [h.upper() for h in hyps], lowercase=True) == pytest.approx(
        lower.score
    )
    assert 0.0 < expected.score < 100.0


def test_bleu_equals_the_sacrebleu_command(tmp_path):
    refs, hyps = random_corpus(5, max_refs=2)
    (tmp_path / "hyp").write_text("\n".join(hyps) + "\n")
    ref_files = []
    for k in range(2):
        ref_files.append(str(tmp_path / f"ref{k}"))
        (tmp_path / f"ref{k}").write_text("\n".join(r[k] for r in refs) + "\n")
    command = [sys.executable, "-m", "sacrebleu", *ref_files, "-i", str(tmp_path / "hyp")]
    command += ["--tokenize", "none", "--force", "--smooth-method", "none", "-b", "-w", "6"]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    printed = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    assert corpus_bleu_moses(refs, hyps) == pytest.approx(float(printed), abs=1e-6)


def test_bleu_input_forms_agree():
    refs, hyps = random_corpus(7, size=10, max_refs=2)
    expected = corpus_bleu(refs, hyps)
    as_tokens = corpus_bleu([[r.split() for r in rs] for rs in refs], [h.split() for h in hyps])
    as_bytes = corpus_bleu(
        [[np.array(r.encode().split()) for r in rs] for rs in refs],
        [np.array(h.encode().split(), dtype=object) for h in hyps],
    )
    as_arrays = corpus_bleu(np.array(refs), np.array(hyps))
    assert as_tokens == expected and as_bytes == expected and as_arrays == expected


def test_bleu_accepts_different_numbers_of_references():
    refs, hyps = random_corpus(9, ragged=True)
    assert len({len(r) for r in refs}) > 1
    # A duplicated reference changes nothing, so padding each list with copies of its first
    # reference gives the plain equal-count corpus for sacrebleu.
    padded = [r + [r[0]] * (3 - len(r)) for r in refs]
    expected = sacrebleu_score(padded, hyps, smooth_method="none").score
    assert corpus_bleu_moses(refs, hyps) == pytest.approx(expected, abs=1e-9)


def test_bleu_is_case_sensitive_unless_lowercase():
    assert sentence_bleu_moses(["The Cat sat on the mat"], REF) < 100.0
    assert sentence_bleu_moses(["The Cat sat on the mat"], REF, lowercase=True) == pytest.approx(
        100.0
    )


@pytest.mark.parametrize(
    "refs, hyps, error, match",
    [
        ([[REF], [REF]], [HYP], ValueError, r"got 2 lists for 1 hypotheses"),
        (
            [REF],
            [HYP],
            ValueError,
            r"list_of_references\[0\] must be a non-empty list.*\[\[reference\]",
        ),
        ([[REF], []], [HYP, HYP], ValueError, r"list_of_references\[1\] must be a non-empty"),
        ([], [], ValueError, r"hypotheses is empty"),
        ([[REF]], [["the", "cat sat"]], ValueError, r"hypotheses\[0\]\[1\] is the token 'cat sat'"),
        ([[["the", ""]]], [HYP], ValueError, r"list_of_references\[0\]\[0\]\[1\] is the token ''"),
        ([[REF]], [[1, 2, 3]], TypeError, r"hypotheses\[0\]\[0\] must be a string"),
        ([[REF]], [np.array([["a", "b"]])], ValueError, r"hypotheses\[0\].*shape \(1, 2\)"),
        ([[REF]], HYP, TypeError, r"hypotheses must be a list"),
    ],
)
def test_bleu_bad_inputs(refs, hyps, error, match):
    with pytest.raises(error, match=match):
        corpus_bleu(refs, hyps)


def test_bleu_bad_options():
    with pytest.raises(ValueError, match=r"max_order must be an int >= 1, got 0"):
        corpus_bleu([[REF]], [HYP], max_order=0)
    with pytest.raises(TypeError, match=r"references must be a list of references.*\[reference\]"):
        sentence_bleu(REF, HYP)


def test_texkit_exposes_evals():
    assert tx.evals.corpus_bleu is corpus_bleu and tx.evals.Perplexity is Perplexity


# -- accuracy and perplexity ------------------------------------------------------------------

RNG = np.random.default_rng(23)
BATCH, TIME, VOCAB = 5, 6, 9
LOGITS = RNG.normal(scale=2.0, size=(BATCH, TIME, VOCAB)).astype(np.float32)
LABELS = RNG.integers(0, VOCAB, size=(BATCH, TIME)).astype(np.int32)
LENGTHS = np.array([6, 3, 1, 0, 4], np.int32)
MASK = np.arange(TIME)[None, :] < LENGTHS[:, None]


def numpy_nll(labels, logits):
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]


def numpy_perplexity(labels, logits, weights):
    return math.exp((numpy_nll(labels, logits) * weights).sum() / weights.sum())


def test_perplexity_of_a_batch_is_exp_of_the_mean_masked_cross_entropy():
    expected = numpy_perplexity(LABELS, LOGITS, MASK)
    assert float(perplexity(LABELS, LOGITS, LENGTHS)) == pytest.approx(expected, rel=1e-5)
    unmasked = numpy_perplexity(LABELS, LOGITS, np.ones_like(MASK))
    assert float(perplexity(LABELS, LOGITS)) == pytest.approx(unmasked, rel=1e-5)
    assert abs(expected - unmasked) > 1e-3 * unmasked  # the mask matters


def test_perplexity_ignores_padding_and_labels_there():
    labels = np.concatenate([LABELS, np.full((BATCH, 3), 10_000, np.int32)], axis=1)
    logits = np.concatenate([LOGITS, RNG.normal(size=(BATCH, 3, VOCAB)).astype(np.float32)], 1)
    assert float(perplexity(labels, logits, LENGTHS)) == pytest.approx(
        float(perplexity(LABELS, LOGITS, LENGTHS)), rel=1e-6
    )


def test_perplexity_weights():
    token_weights = RNG.uniform(size=(BATCH, TIME)).astype(np.float32)
    expected = numpy_perplexity(LABELS, LOGITS, MASK * token_weights)
    got = perplexity(LABELS, LOGITS, LENGTHS, sample_weight=token_weights)
    assert float(got) == pytest.approx(expected, rel=1e-5)
    row_weights = np.array([1.0, 2.0, 0.0, 5.0, 0.5], np.float32)
    expected = numpy_perplexity(LABELS, LOGITS, MASK * row_weights[:, None])
    got = perplexity(LABELS, LOGITS, LENGTHS, sample_weight=row_weights)
    assert float(got) == pytest.approx(expected, rel=1e-5)


def test_perplexity_metric_over_a_dataset_weighs_every_token_alike():
    expected = numpy_perplexity(LABELS, LOGITS, MASK)
    dataset = tf.data.Dataset.from_tensor_slices((LABELS, LOGITS, LENGTHS))
    for batch_size in (1, 2, 5):
        metric = Perplexity()
        for labels, logits, lengths in dataset.batch(batch_size):
            metric.update_state(labels, logits, sequence_length=lengths)
        assert float(metric.result()) == pytest.approx(expected, rel=1e-5)
    # Not the mean of per-batch perplexities, which weighs short batches up.
    per_batch = [
        numpy_perplexity(LABELS[i : i + 2], LOGITS[i : i + 2], MASK[i : i + 2]) for i in (0, 2)
    ]
    assert abs(np.mean(per_batch) - expected) > 1e-3
    metric.reset_state()
    assert math.isnan(float(metric.result()))


def test_metrics_update_inside_tf_function():
    metric = Perplexity()
    acc = Accuracy()

    @tf.function
    def update(labels, logits, lengths):
        metric.update_state(labels, logits, lengths)
        acc.update_state(labels, tf.argmax(logits, axis=-1, output_type=tf.int32), lengths)

    update(LABELS[:3], LOGITS[:3], LENGTHS[:3])
    update(LABELS[3:], LOGITS[3:], LENGTHS[3:])
    assert float(metric.result()) == pytest.approx(numpy_perplexity(LABELS, LOGITS, MASK), 1e-5)
    correct = (LOGITS.argmax(-1) == LABELS) & MASK
    assert float(acc.result()) == pytest.approx(correct.sum() / MASK.sum(), rel=1e-6)


def test_perplexity_in_keras_compile_and_config_round_trip():
    inputs = keras.Input((TIME,), dtype="int32")
    logits = keras.layers.Dense(VOCAB)(keras.layers.Embedding(VOCAB, 4)(inputs))
    model = keras.Model(inputs, logits)
    # Keras passes sample_weight to weighted_metrics only.
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[Perplexity()],
    )
    weights = MASK.astype(np.float32)
    results = model.evaluate(LABELS, LABELS, sample_weight=weights, verbose=0, return_dict=True)
    predicted = model.predict(LABELS, verbose=0)
    expected = numpy_perplexity(LABELS, predicted, weights)
    assert results["perplexity"] == pytest.approx(expected, rel=1e-4)
    config = Perplexity(name="ppl").get_config()
    assert Perplexity.from_config(config).name == "ppl"


def test_accuracy_against_numpy():
    preds = LABELS.copy()
    preds[RNG.uniform(size=preds.shape) < 0.4] = 0
    correct = preds == LABELS
    expected = (correct & MASK).sum() / MASK.sum()
    assert float(accuracy(LABELS, preds, LENGTHS)) == pytest.approx(expected, rel=1e-6)
    assert float(accuracy(LABELS, preds)) == pytest.approx(correct.mean(), rel=1e-6)
    # Classification: [batch] labels.
    assert float(accuracy([1, 0, 2, 2], [1, 1, 2, 0])) == pytest.approx(0.5)
    metric = Accuracy()
    metric.update_state(LABELS[:2], preds[:2], LENGTHS[:2])
    metric.update_state(LABELS[2:], preds[2:], LENGTHS[2:])
    assert float(metric.result()) == pytest.approx(expected, rel=1e-6)
    assert math.isnan(float(Accuracy().result()))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: perplexity(LABELS[None], LOGITS), r"labels must be \[batch, max_time\].*"),
        (lambda: perplexity(LABELS, LOGITS[..., 0]), r"logits shape \(5, 6\)"),
        (lambda: perplexity(LABELS, LOGITS, LENGTHS[:, None]), r"sequence_length.*\(5, 1\)"),
        (lambda: perplexity(LABELS, LOGITS, LENGTHS[:3]), r"batch 5.*got shape \(3,\)"),
        (lambda: perplexity(LABELS, LOGITS, [1.5] * 5), r"sequence_length.*dtype float32"),
        (
            lambda: perplexity(LABELS, LOGITS, sample_weight=np.ones((5, 2))),
            r"sample_weight must be \[batch\].*got shape \(5, 2\)",
        ),
        (lambda: accuracy(LABELS, LABELS[:, :2]), r"same shape.*\(5, 6\).*\(5, 2\)"),
        (lambda: accuracy([1, 2], [1, 2], [2, 2]), r"with sequence_length, labels must be"),
    ],
)
def test_metric_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
