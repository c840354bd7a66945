"""MCC, F1, Pearson and Spearman against scikit-learn's and SciPy's numbers recorded by
tests/fixtures/evals/make_classification_fixture.py (and SciPy itself where installed); the Keras
metrics over batches, under XLA and a 2-replica MirroredStrategy against the same numbers."""

import json
import math
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.evals import (
    CorpusF1Score,
    CorpusPearsonCorrelation,
    CorpusSpearmanCorrelation,
    MatthewsCorrelation,
    f1_score,
    matthews_corrcoef,
    pearson_correlation,
    spearman_correlation,
)

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "evals" / "classification.json").read_text("utf-8")
)
CLASSIFICATION = {case["name"]: case for case in FIXTURE["classification"]}
CORRELATION = {case["name"]: case for case in FIXTURE["correlation"]}
# The Keras metrics take ids in [0, num_classes); one case has labels -1 and 1.
CLASS_IDS = [name for name, case in CLASSIFICATION.items() if min(case["labels"]) >= 0]
AVERAGES = ("macro", "micro", "weighted")
# Inputs as the user may hold them: lists, NumPy arrays, tensors.
AS = [list, np.asarray, tf.constant]
AS_SCORES = [list, np.asarray, lambda values: tf.constant(values, tf.float64)]


def num_classes_of(case):
    return case["num_classes"] or max(2, max(case["labels"] + case["predictions"]) + 1)


def f1_metrics(case, dtype=None):
    """An F1 metric per average the case records, keyed by the fixture's name of it."""
    num_classes = num_classes_of(case)
    metrics = {f"f1_{avg}": CorpusF1Score(num_classes, avg, dtype=dtype) for avg in AVERAGES}
    if "f1_binary" in case and num_classes == 2:
        metrics["f1_binary"] = CorpusF1Score(2, "binary", case["pos_label"], dtype=dtype)
    return {"matthews_corrcoef": MatthewsCorrelation(num_classes, dtype=dtype), **metrics}


def run_batches(metrics, dataset, compile=None):
    """Every metric updated with every (labels, predictions) batch: eagerly, or in one
    ``tf.function`` (``compile="graph"``) or XLA program (``compile="xla"``) per batch."""

    def step(labels, predictions):
        for metric in metrics.values():
            metric.update_state(labels, predictions)

    if compile is not None:
        step = tf.function(step, jit_compile=compile == "xla")
    for labels, predictions in dataset:
        step(labels, predictions)
    return {key: float(metric.result()) for key, metric in metrics.items()}


def assert_close(actual, expected, tolerance):
    if math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert actual == pytest.approx(expected, abs=tolerance)


# -- the functions ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CLASSIFICATION))
def test_mcc_and_f1_equal_scikit_learn(name):
    case = CLASSIFICATION[name]
    convert = AS[sorted(CLASSIFICATION).index(name) % len(AS)]
    labels, predictions = convert(case["labels"]), convert(case["predictions"])
    assert matthews_corrcoef(labels, predictions) == pytest.approx(
        case["matthews_corrcoef"], abs=1e-12
    )
    for average in AVERAGES:
        expected = case[f"f1_{average}"]
        actual = f1_score(labels, predictions, average, num_classes=case["num_classes"])
        assert actual == pytest.approx(expected, abs=1e-12), average
    if "f1_binary" in case:
        actual = f1_score(labels, predictions, pos_label=case["pos_label"])
        assert actual == pytest.approx(case["f1_binary"], abs=1e-12)
    assert isinstance(matthews_corrcoef(labels, predictions), float)


@pytest.mark.parametrize("name", sorted(CORRELATION))
def test_correlations_equal_scipy(name):
    case = CORRELATION[name]
    convert = AS_SCORES[sorted(CORRELATION).index(name) % len(AS_SCORES)]
    x, y = convert(case["x"]), convert(case["y"])
    assert_close(pearson_correlation(x, y), case["pearson"], 1e-12)
    assert_close(spearman_correlation(x, y), case["spearman"], 1e-12)


def test_correlations_equal_scipy_itself_on_fresh_ties():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for _ in range(5):
        x = rng.integers(0, 6, 300) / 2
        y = np.round(x + rng.normal(0, 1.5, 300), 1)
        assert pearson_correlation(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
        assert spearman_correlation(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)


def test_f1_of_an_unseen_positive_class_is_zero_and_binary_needs_two_classes():
    assert f1_score([0, 0, 0], [0, 0, 0]) == 0.0  # 0 / 0: zero_division=0
    assert f1_score([1, 1], [1, 1]) == 1.0
    with pytest.raises(ValueError, match="at most two classes"):
        f1_score([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="pos_label=5 is not one of the classes"):
        f1_score([0, 1], [1, 1], pos_label=5)


# -- the Keras metrics ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, tolerance", [(None, 1e-6), ("float64", 1e-12)])
def test_confusion_metrics_over_batches_equal_scikit_learn(dtype, tolerance):
    for index, name in enumerate(CLASS_IDS):
        case = CLASSIFICATION[name]
        pairs = (case["labels"], case["predictions"])
        dataset = tf.data.Dataset.from_tensor_slices(pairs).batch(8 + 7 * index)
        results = run_batches(f1_metrics(case, dtype), dataset)
        for key, value in results.items():
            assert value == pytest.approx(case[key], abs=tolerance), (name, key)


def test_confusion_metrics_under_xla_and_reset():
    case = CLASSIFICATION["random_5_classes_150"]
    metrics = f1_metrics(case)
    dataset = tf.data.Dataset.from_tensor_slices((case["labels"], case["predictions"]))
    compiled = run_batches(metrics, dataset.batch(50), "xla")
    for metric in metrics.values():
        metric.reset_state()
    for key, value in compiled.items():
        assert value == pytest.approx(case[key], abs=1e-6), key
    # After the reset, only the first 64 examples count (the scores do not scale with counts).
    eager = run_batches(metrics, dataset.take(64).batch(32))
    first = (case["labels"][:64], case["predictions"][:64])
    assert eager["matthews_corrcoef"] == pytest.approx(matthews_corrcoef(*first), abs=1e-6)
    for average in AVERAGES:
        expected = f1_score(*first, average=average)
        assert eager[f"f1_{average}"] == pytest.approx(expected, abs=1e-6), average


def test_confusion_metrics_take_scores_weights_and_keras_configs():
    case = CLASSIFICATION["random_3_classes_100"]
    labels, predictions = np.array(case["labels"]), np.array(case["predictions"])
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(labels.size, 3)).astype(np.float32)
    scores[np.arange(labels.size), predictions] += 10.0  # the argmax is the prediction
    weights = rng.integers(0, 4, labels.size)
    repeated = (np.repeat(labels, weights), np.repeat(predictions, weights))
    references = [
        (MatthewsCorrelation(3), "matthews_corrcoef", matthews_corrcoef),
        (
            CorpusF1Score(3, average="macro", name="macro_f1"),
            "f1_macro",
            lambda *corpus: f1_score(*corpus, average="macro"),
        ),
    ]
    for metric, key, reference in references:
        metric.update_state(labels[:, None], scores)
        assert float(metric.result()) == pytest.approx(case[key], abs=1e-6)
        metric.reset_state()
        metric.update_state(labels, predictions, sample_weight=weights)
        expected = reference(*repeated)
        assert float(metric.result()) == pytest.approx(expected, abs=1e-6)
        restored = keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(metric)
        )
        assert type(restored) is type(metric) and restored.get_config() == metric.get_config()


def test_confusion_metrics_in_model_evaluate_equal_the_functions():
    rng = np.random.default_rng(5)
    features = rng.normal(size=(90, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 90)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[MatthewsCorrelation(3), CorpusF1Score(3, average="macro")],
    )
    results = model.evaluate(features, labels, batch_size=16, verbose=0, return_dict=True)
    predictions = np.argmax(model.predict(features, verbose=0), axis=-1)
    assert results["matthews_correlation"] == pytest.approx(
        matthews_corrcoef(labels, predictions), abs=1e-6
    )
    assert results["f1_score"] == pytest.approx(
        f1_score(labels, predictions, average="macro"), abs=1e-6
    )


@pytest.mark.parametrize(
    "names, compile", [(sorted(CORRELATION), None), (["heavy_ties", "stsb_like"], "xla")]
)
def test_correlation_metrics_over_batches_equal_scipy(names, compile):
    for index, name in enumerate(names):
        case = CORRELATION[name]
        metrics = {
            "pearson": CorpusPearsonCorrelation(),
            "spearman": CorpusSpearmanCorrelation(capacity=2000),
        }
        pairs = (np.array(case["x"]), np.array(case["y"]))
        dataset = tf.data.Dataset.from_tensor_slices(pairs).batch(1 + 13 * index)
        results = run_batches(metrics, dataset, compile)
        # Running sums lose digits with a large mean: (mean / std)**2 = 1e8 here.
        tolerance = 1e-7 if name == "large_mean" else 1e-12
        assert_close(results["pearson"], case["pearson"], tolerance)
        assert_close(results["spearman"], case["spearman"], 1e-12)


def test_spearman_capacity_overflow_is_refused_or_nan_under_xla():
    metric = CorpusSpearmanCorrelation(capacity=4)
    metric.update_state([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="at most capacity=4"):
        metric.update_state([4.0, 5.0], [4.0, 5.0])
    assert float(metric.count) == 3.0
    assert float(metric.result()) == pytest.approx(spearman_correlation([1, 2, 3], [1, 3, 2]))
    tf.function(metric.update_state, jit_compile=True)(tf.constant([4.0, 5.0]), [4.0, 5.0])
    assert math.isnan(float(metric.result()))


# -- under a 2-replica MirroredStrategy -------------------------------------------------------


def test_metrics_under_a_mirrored_strategy_equal_the_references():
    # texkit's one MirroredStrategy per device set: separate ones would mix up their collectives.
    strategy = tx.run.strategy_from_hparams({"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]})
    case = CLASSIFICATION["random_5_classes_150"]
    scores = CORRELATION["stsb_like"]
    with strategy.scope():
        metrics = f1_metrics(case)
        correlations = {
            "pearson": CorpusPearsonCorrelation(),
            "spearman": CorpusSpearmanCorrelation(capacity=1600),
        }

    @tf.function
    def step(metrics, labels, predictions):
        def update(labels, predictions):
            for metric in metrics.values():
                metric.update_state(labels, predictions)

        strategy.run(update, args=(labels, predictions))

    # Global batches of 25 and 125 examples: the replicas get 13 and 12, 63 and 62.
    for group, pairs, size in [
        (metrics, (case["labels"], case["predictions"]), 25),
        (correlations, (np.array(scores["x"]), np.array(scores["y"])), 125),
    ]:
        dataset = tf.data.Dataset.from_tensor_slices(pairs).batch(size)
        for labels, predictions in strategy.experimental_distribute_dataset(dataset):
            step(group, labels, predictions)
    for key, metric in metrics.items():
        assert float(metric.result()) == pytest.approx(case[key], abs=1e-6), key
    assert correlations["spearman"].count.numpy() == 1500
    for key, metric in correlations.items():
        assert float(metric.result()) == pytest.approx(scores[key], abs=1e-12), key


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: matthews_corrcoef([0, 1, 1], [0, 1]), "same length, got 3 and 2"),
        (lambda: matthews_corrcoef([], []), "labels is empty"),
        (lambda: matthews_corrcoef([[0, 1]], [[0, 1]]), "labels must be 1-D"),
        (lambda: f1_score([0, 1], [0.0, 1.0]), "predictions must be integer class ids"),
        (lambda: f1_score([0, 3], [0, 1], "macro", num_classes=3), r"labels must be class ids"),
        (lambda: f1_score([0, 1], [0, -1], "macro", num_classes=2), "predictions must be class"),
        (lambda: f1_score([0, 1], [0, 1], average="samples"), "average must be one of"),
        (lambda: f1_score([0, 1], [0, 1], num_classes=3), "average='binary' scores two"),
        (lambda: pearson_correlation([1.0, np.nan, 2.0], [1, 2, 3]), "x holds NaN"),
        (lambda: spearman_correlation([1.0, 2.0], [1.0, np.inf]), "y holds NaN or infinite"),
        (lambda: pearson_correlation([1.0], [2.0]), "at least 2 pairs"),
        (lambda: spearman_correlation([1.0, 2.0], [1.0]), "same length"),
        (lambda: pearson_correlation(["a", "b"], [1.0, 2.0]), "x must be numbers"),
        (lambda: MatthewsCorrelation(1), "num_classes must be an int >= 2"),
        (lambda: CorpusF1Score(3), "average='binary' scores two classes"),
        (lambda: CorpusSpearmanCorrelation(capacity=1.5), "capacity must be an int"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_batches_are_refused_and_change_nothing():
    confusion = CorpusF1Score(3, average="micro")
    confusion.update_state([0, 1], [0, 2])
    before = confusion.confusion_matrix.numpy().copy()
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"labels must be class ids in \[0"):
        confusion.update_state([0, 3], [0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="predictions must be class ids"):
        tf.function(confusion.update_state)(tf.constant([0, 1]), tf.constant([-1, 1]))
    with pytest.raises(ValueError, match="one value per example each, got 2 labels and 3"):
        confusion.update_state([0, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="labels must be int class ids"):
        confusion.update_state([0.0, 1.0], [0, 1])
    with pytest.raises(ValueError, match=r"scores \[batch, num_classes=3\]"):
        confusion.update_state([0, 1], [[0.2, 0.8], [0.9, 0.1]])
    # One probability per example, as many examples as classes: still not scores per class.
    with pytest.raises(ValueError, match=r"scores \[batch, num_classes=3\]"):
        confusion.update_state([0, 1, 1], [0.2, 0.8, 0.9])
    np.testing.assert_array_equal(confusion.confusion_matrix.numpy(), before)
    for metric in (CorpusPearsonCorrelation(), CorpusSpearmanCorrelation(capacity=8)):
        metric.update_state([1.0, 2.0], [2.0, 1.0])
        state = [variable.numpy().copy() for variable in metric.variables]
        with pytest.raises(tf.errors.InvalidArgumentError, match="predictions must be finite"):
            metric.update_state([3.0], [np.nan])
        with pytest.raises(ValueError, match="does not take sample_weight"):
            metric.update_state([3.0], [1.0], sample_weight=[2.0])
        for variable, value in zip(metric.variables, state, strict=True):
            np.testing.assert_array_equal(variable.numpy(), value)
