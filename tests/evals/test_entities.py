"""Entity F1 against seqeval (default and strict modes) and conlleval's counts.

The references are in tests/fixtures/tagging/entities.json, written by make_entity_fixture.py
with seqeval 1.2.2 and the CoNLL shared tasks' conlleval script on seeded random corpora in the
four schemes, well-formed and malformed. The Keras metric is checked against the function.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit.evals import EntityF1, entity_f1

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tagging", "entities.json")
with open(FIXTURE, encoding="utf-8") as f:
    CASES = {case["name"]: case for case in json.load(f)["cases"]}
SCORES = ("precision", "recall", "f1")


def corpora(case):
    return [s.split() for s in case["references"]], [s.split() for s in case["predictions"]]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", ["default", "strict"])
def test_equal_to_seqeval(name, mode):
    case = CASES[name]
    expected = case.get(f"seqeval_{mode}")
    if expected is None:  # strict mode on IOB1
        with pytest.raises(ValueError, match="mode='strict' needs scheme IOB2, IOBES or BILOU"):
            entity_f1(*corpora(case), scheme=case["scheme"], mode=mode)
        return
    scores = entity_f1(*corpora(case), scheme=case["scheme"], mode=mode)
    for key in SCORES:
        assert scores[key] == pytest.approx(expected[key], abs=1e-12)
    # seqeval's report lists the types with a reference or a predicted entity, as texkit does.
    assert sorted(scores["per_type"]) == sorted(expected["per_type"])
    for type_, row in expected["per_type"].items():
        for key in SCORES:
            assert scores["per_type"][type_][key] == pytest.approx(row[key], abs=1e-12)
        assert scores["per_type"][type_]["support"] == row["support"]
    assert scores["support"] == sum(row["support"] for row in expected["per_type"].values())


@pytest.mark.parametrize("name", [name for name in sorted(CASES) if "conlleval" in CASES[name]])
def test_equal_to_conlleval(name):
    case = CASES[name]
    expected = case["conlleval"]
    scores = entity_f1(*corpora(case), scheme=case["scheme"])
    counts = (scores["support"], scores["predicted"], scores["true_positives"])
    assert counts == (expected["gold"], expected["guessed"], expected["correct"])
    assert sum(len(tags) for tags in corpora(case)[0]) == expected["tokens"]
    # conlleval prints percentages with two decimals.
    for key in SCORES:
        assert 100 * scores[key] == pytest.approx(expected[key], abs=0.005 + 1e-9)
    # conlleval lists the types with a reference or a predicted entity, as texkit does.
    assert sorted(scores["per_type"]) == sorted(expected["per_type"])
    for type_, row in expected["per_type"].items():
        assert scores["per_type"][type_]["predicted"] == row["guessed"]
        for key in SCORES:
            assert 100 * scores["per_type"][type_][key] == pytest.approx(row[key], abs=0.005 + 1e-9)


def test_bad_input():
    good = [["B-PER", "I-PER"], ["O"]]
    with pytest.raises(ValueError, match="references is empty"):
        entity_f1([], [])
    with pytest.raises(ValueError, match="predictions is empty"):
        entity_f1(good, [])
    with pytest.raises(ValueError, match="references has 2 sequences but predictions has 1"):
        entity_f1(good, good[:1])
    with pytest.raises(ValueError, match=r"predictions\[1\] has 2 tags but references\[1\] has 1"):
        entity_f1(good, [good[0], ["O", "O"]])
    with pytest.raises(ValueError, match=r"predictions\[0\]\[1\] is 'E-PER', not a tag of scheme"):
        entity_f1(good, [["B-PER", "E-PER"], ["O"]])
    with pytest.raises(ValueError, match=r"references\[1\]\[0\] is 'PER', not a tag of scheme"):
        entity_f1([good[0], ["PER"]], good)
    with pytest.raises(TypeError, match=r"references\[0\] must be a sequence of tags"):
        entity_f1(["B-PER I-PER", "O"], good)
    with pytest.raises(TypeError, match="predictions must be a list of tag sequences"):
        entity_f1(good, "B-PER I-PER O")
    with pytest.raises(ValueError, match="mode must be 'default' or 'strict'"):
        entity_f1(good, good, mode="lenient")
    with pytest.raises(ValueError, match="scheme must be one of"):
        entity_f1(good, good, scheme="IOE2")
    perfect = entity_f1(good, good, scheme="bio")
    assert (perfect["f1"], perfect["support"], perfect["per_type"]["PER"]["recall"]) == (
        1.0,
        1,
        1.0,
    )
    nothing = entity_f1([["O"]], [["O"]])
    assert (nothing["f1"], nothing["per_type"]) == (0.0, {})


def batches_of_ids(case, tags, batch_size, rng):
    """The corpora as [batch, max_time] ids, with random ids past the lengths."""
    references, predictions = corpora(case)
    index = {tag: i for i, tag in enumerate(tags)}
    for first in range(0, len(references), batch_size):
        rows = list(zip(references, predictions, strict=True))[first : first + batch_size]
        lengths = np.array([len(r) for r, _ in rows], np.int32)
        max_time = max(1, lengths.max())
        ids = rng.integers(0, len(tags), size=(2, len(rows), max_time))
        for b, (reference, prediction) in enumerate(rows):
            ids[0, b, : lengths[b]] = [index[t] for t in reference]
            ids[1, b, : lengths[b]] = [index[t] for t in prediction]
        yield ids[0], ids[1], lengths


@pytest.mark.parametrize(("name", "mode"), [("IOB2-formed", "default"), ("BILOU-random", "strict")])
def test_metric_over_batches_equals_the_function(name, mode):
    case = CASES[name]
    tags = sorted({t for s in case["references"] + case["predictions"] for t in s.split()})
    tags += ["B-NEVER", "I-NEVER"] if case["scheme"] == "IOB2" else ["U-NEVER"]
    expected = entity_f1(*corpora(case), scheme=case["scheme"], mode=mode)
    metric = EntityF1(tags, scheme=case["scheme"], mode=mode)
    graph_update = tf.function(metric.update_state)
    rng = np.random.default_rng(0)
    for step, (references, predictions, lengths) in enumerate(batches_of_ids(case, tags, 7, rng)):
        update = graph_update if step % 2 else metric.update_state
        update(tf.constant(references), tf.constant(predictions, tf.int32), lengths)
    assert float(metric.result()) == pytest.approx(expected["f1"], rel=1e-6)
    assert float(metric.precision()) == pytest.approx(expected["precision"], rel=1e-6)
    assert float(metric.recall()) == pytest.approx(expected["recall"], rel=1e-6)
    assert "NEVER" in metric.types
    for i, type_ in enumerate(metric.types):
        row = expected["per_type"].get(type_, {"true_positives": 0, "predicted": 0, "support": 0})
        counts = [
            int(getattr(metric, key)[i]) for key in ("true_positives", "predicted", "support")
        ]
        assert counts == [row["true_positives"], row["predicted"], row["support"]]
    clone = EntityF1.from_config(metric.get_config())
    assert (clone.tags, clone.scheme, clone.mode, clone.types) == (
        metric.tags,
        metric.scheme,
        metric.mode,
        metric.types,
    )
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(metric)).tags
    metric.reset_state()
    assert float(metric.result()) == float(metric.precision()) == 0.0


def test_metric_without_lengths_and_bad_input():
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    metric = EntityF1(tags, scheme="BIO")
    metric.update_state([[0, 2, 2, 3]], [[0, 1, 2, 3]])  # every step counts
    reference = entity_f1([["O", "I-PER", "I-PER", "B-LOC"]], [["O", "B-PER", "I-PER", "B-LOC"]])
    assert float(metric.result()) == pytest.approx(reference["f1"])
    before = [v.numpy().copy() for v in metric.variables]
    with pytest.raises(ValueError, match=r"predicted_tag_ids\[0, 1\] is 5, not an id of the 5"):
        metric.update_state([[0, 1]], [[0, 5]], sequence_length=[2])
    with pytest.raises(ValueError, match=r"sequence_length\[1\] is 3, not in \[0, 2\]"):
        metric.update_state([[0, 1], [0, 0]], [[0, 1], [0, 0]], sequence_length=[2, 3])
    with pytest.raises(ValueError, match="must be .batch, max_time. ids of one shape"):
        metric.update_state([[0, 1]], [[0, 1, 0]])
    with pytest.raises(ValueError, match="must be int ids"):
        metric.update_state([[0.0, 1.0]], [[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"sequence_length must be \[batch\] with batch 1"):
        metric.update_state([[0, 1]], [[0, 1]], sequence_length=[2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"reference_tag_ids\[0, 1\] is -1"):
        tf.function(metric.update_state)(tf.constant([[0, -1]]), tf.constant([[0, 1]]))
    for variable, value in zip(metric.variables, before, strict=True):
        np.testing.assert_array_equal(variable.numpy(), value)
    with pytest.raises(ValueError, match=r"tags\[2\] is 'E-PER', not a tag of scheme IOB2"):
        EntityF1(["O", "B-PER", "E-PER"])
    with pytest.raises(ValueError, match="mode='strict' needs scheme IOB2"):
        EntityF1(tags, scheme="IOB1", mode="strict")
    with pytest.raises(ValueError, match="tags must be a non-empty list"):
        EntityF1([])
