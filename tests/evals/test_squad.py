"""SQuAD exact match and F1 against a re-implementation, written here, of the official scripts'
definitions (evaluate-v1.1.py and evaluate-v2.0.py), on seeded random answers."""

import re
import string
from collections import Counter

import numpy as np
import pytest
import tensorflow as tf

from texkit.evals import SQuAD, normalize_answer, squad, squad_exact_match, squad_f1

# -- the official scripts' definitions, step by step -------------------------------------------


def official_normalize(text):
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def v1_f1(prediction, truth):
    pred_tokens = official_normalize(prediction).split()
    truth_tokens = official_normalize(truth).split()
    common = Counter(pred_tokens) & Counter(truth_tokens)
    same = sum(common.values())
    if same == 0:
        return 0
    precision = same / len(pred_tokens)
    recall = same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def v1_exact(prediction, truth):
    return official_normalize(prediction) == official_normalize(truth)


def v1_evaluate(predictions, answer_lists):
    exact = f1 = 0.0
    for prediction, answers in zip(predictions, answer_lists, strict=True):
        exact += max(v1_exact(prediction, a) for a in answers)
        f1 += max(v1_f1(prediction, a) for a in answers)
    return {"exact_match": 100 * exact / len(predictions), "f1": 100 * f1 / len(predictions)}


def v2_scores(prediction, answers):
    """evaluate-v2.0.py: answers that normalize to nothing dropped; none left means ['']."""
    golds = [a for a in answers if official_normalize(a)] or [""]
    pred_tokens = official_normalize(prediction).split()
    exact, f1 = 0, 0.0
    for gold in golds:
        exact = max(exact, int(official_normalize(gold) == official_normalize(prediction)))
        gold_tokens = official_normalize(gold).split()
        if not gold_tokens or not pred_tokens:
            f1 = max(f1, float(gold_tokens == pred_tokens))
            continue
        same = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
        if same:
            precision, recall = same / len(pred_tokens), same / len(gold_tokens)
            f1 = max(f1, 2 * precision * recall / (precision + recall))
    return exact, f1


# -- seeded random questions --------------------------------------------------------------------

WORDS = ["The", "the", "a", "An", "Denver", "broncos", "1995", "Paris", "tower", "théâtre", "an"]
PUNCT = ["", ",", ".", "!", "'s", "-", "  ", "(", ")"]


def random_answer(rng, min_words=1):
    words = rng.choice(WORDS, size=rng.integers(min_words, 5))
    return "".join(str(w) + str(rng.choice(PUNCT)) + " " for w in words).strip()


def random_questions(seed, size, answerable=True):
    rng = np.random.default_rng(seed)
    answers, predictions = [], []
    for _ in range(size):
        golds = [random_answer(rng) for _ in range(rng.integers(1, 4))]
        if answerable:
            golds = [g for g in golds if official_normalize(g)] or ["Denver"]
        elif rng.random() < 0.3:
            golds = []
        answers.append(golds)
        if golds and rng.random() < 0.3:
            predictions.append(str(rng.choice(golds)).upper() + " .")
        else:
            predictions.append(random_answer(rng, min_words=0))
    return predictions, answers


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_answerable_questions_equal_the_v1_1_script(seed):
    predictions, answers = random_questions(seed, 200)
    expected = v1_evaluate(predictions, answers)
    assert 0 < expected["exact_match"] < expected["f1"] < 100  # the draws hit every case
    assert squad(predictions, answers) == pytest.approx(expected, abs=1e-10)
    for prediction, golds in zip(predictions[:50], answers[:50], strict=True):
        assert squad_exact_match(prediction, golds) == max(v1_exact(prediction, g) for g in golds)
        assert squad_f1(prediction, golds) == pytest.approx(
            max(v1_f1(prediction, g) for g in golds)
        )
        assert normalize_answer(prediction) == official_normalize(prediction)


def test_unanswerable_questions_follow_the_v2_script():
    predictions, answers = random_questions(3, 300, answerable=False)
    scores = np.array([v2_scores(p, a) for p, a in zip(predictions, answers, strict=True)])
    assert (scores[[not official_normalize(" ".join(a)) for a in answers]] == 1).any()
    expected = {"exact_match": 100 * scores[:, 0].mean(), "f1": 100 * scores[:, 1].mean()}
    assert squad(predictions, answers) == pytest.approx(expected, abs=1e-10)
    assert squad_f1("", []) == squad_exact_match("The.", "a") == 1.0
    assert squad_f1("Denver", [""]) == 0.0


def test_metric_over_a_batched_padded_tensor_equals_the_function():
    predictions, answers = random_questions(4, 37, answerable=False)
    padded = [a + [""] * (3 - len(a)) for a in answers]  # "" pads: it never counts
    metric = SQuAD()

    @tf.function
    def update(prediction, golds):
        metric.update_state(prediction, golds)

    for prediction, golds in tf.data.Dataset.from_tensor_slices((predictions, padded)).batch(8):
        update(prediction, golds)
    expected = squad(predictions, answers)
    assert {k: float(v) for k, v in metric.result().items()} == pytest.approx(expected, rel=1e-6)
    # Eagerly: Python lists, and a [batch] tensor of one answer each.
    metric = SQuAD()
    metric.update_state(predictions[:20], answers[:20])
    metric.update_state(tf.constant(predictions[20:]), tf.constant([p[0] for p in padded[20:]]))
    expected = squad(predictions, answers[:20] + [p[:1] for p in padded[20:]])
    assert {k: float(v) for k, v in metric.result().items()} == pytest.approx(expected, rel=1e-6)


def test_metric_with_ragged_answers_counts_empty_rows_as_unanswerable():
    predictions, answers = random_questions(5, 23, answerable=False)
    assert any(not a for a in answers)
    ragged = tf.ragged.constant(answers, dtype=tf.string, ragged_rank=1)
    dataset = tf.data.Dataset.from_tensor_slices((predictions, ragged)).ragged_batch(6)
    metric = SQuAD()
    update = tf.function(metric.update_state)
    for prediction, golds in dataset:
        update(prediction, golds)
    expected = squad(predictions, answers)
    assert {k: float(v) for k, v in metric.result().items()} == pytest.approx(expected, rel=1e-6)
    eager = SQuAD()
    eager.update_state(predictions, ragged)
    assert {k: float(v) for k, v in eager.result().items()} == pytest.approx(expected, rel=1e-6)


def test_bad_input_is_refused_naming_the_argument_and_changes_nothing():
    with pytest.raises(ValueError, match="references must have one item per prediction"):
        squad(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="predictions is empty"):
        squad([], [])
    with pytest.raises(TypeError, match=r"references\[1\]\[0\] must be a string"):
        squad(["a", "b"], [["a"], [2]])
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        squad([None], [["a"]])
    with pytest.raises(TypeError, match="ground_truths must be an answer text"):
        squad_f1("a", 3)
    metric = SQuAD()
    metric.update_state(["Denver"], [["denver"]])
    with pytest.raises(TypeError, match=r"references\[1\]"):
        metric.update_state(["a", "b"], [["a"], {"b"}])
    assert {k: float(v) for k, v in metric.result().items()} == {"exact_match": 100, "f1": 100}
