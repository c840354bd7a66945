"""ROUGE against rouge-score's RougeScorer called directly on seeded random corpora; the Keras
metric over batches against the corpus function; the Unicode tokenizer by hand."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from rouge_score import rouge_scorer

from texkit.evals import ROUGE, UnicodeTokenizer, rouge

TYPES = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]
WORDS = "the cat cats sat sitting on a mat mats dog running runs quickly".split()


def random_corpus(seed, size, max_refs=1, words=WORDS):
    rng = np.random.default_rng(seed)

    def text():
        # Several lines, for rougeLsum's sentences; now and then empty.
        lines = [" ".join(rng.choice(words, size=rng.integers(0, 8))) for _ in range(3)]
        return "\n".join(lines[: rng.integers(1, 4)])

    hyps = [text() for _ in range(size)]
    refs = [[text() for _ in range(rng.integers(1, max_refs + 1))] for _ in range(size)]
    return hyps, refs


def reference_means(hyps, refs, types, **kwargs):
    """Mean over pairs of the best F per type, from RougeScorer.score on each reference."""
    scorer = rouge_scorer.RougeScorer(types, **kwargs)
    totals = dict.fromkeys(types, 0.0)
    for hyp, targets in zip(hyps, refs, strict=True):
        targets = [targets] if isinstance(targets, str) else targets
        scores = [scorer.score(target, hyp) for target in targets]
        for name in types:
            totals[name] += max(score[name].fmeasure for score in scores)
    return {name: total / len(hyps) for name, total in totals.items()}


@pytest.mark.parametrize("seed,max_refs,use_stemmer", [(0, 1, False), (1, 3, False), (2, 2, True)])
def test_rouge_equals_rouge_score(seed, max_refs, use_stemmer):
    hyps, refs = random_corpus(seed, 30, max_refs)
    expected = reference_means(hyps, refs, TYPES, use_stemmer=use_stemmer)
    got = rouge(hyps, refs, TYPES, use_stemmer=use_stemmer)
    assert list(got) == TYPES
    assert got == pytest.approx(expected, abs=1e-12)
    if max_refs == 1:  # one reference each: plain texts do as well as lists of one
        assert rouge(hyps, [r[0] for r in refs], TYPES, use_stemmer) == got


def test_defaults_and_lsum_splits_on_newlines():
    hyps, refs = random_corpus(3, 10)
    assert list(rouge(hyps, refs)) == ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    hyp, ref = "a b c\nd e", "d e\na b c"
    one_line = rouge([hyp.replace("\n", " ")], [ref.replace("\n", " ")], ["rougeL", "rougeLsum"])
    lines = rouge([hyp], [ref], ["rougeL", "rougeLsum"])
    assert one_line["rougeL"] == one_line["rougeLsum"] == lines["rougeL"] == pytest.approx(0.6)
    assert lines["rougeLsum"] == 1.0  # each sentence's LCS found in the other summary


def test_the_default_tokenizer_drops_non_ascii_and_unicode_tokenizer_keeps_it():
    hyps = ["Kedi halının üstünde oturdu", "Кошка сидит на ковре", "猫坐在垫子上"]
    refs = ["Kedi halının üstünde", "Кошка сидит", "猫在垫子上"]
    default = rouge(hyps, refs, ["rouge1"])["rouge1"]
    # rouge-score's [a-z0-9] filter drops Cyrillic and Chinese and cuts Turkish words at ı, ü.
    assert default == pytest.approx(reference_means(hyps, refs, ["rouge1"])["rouge1"])
    unicode = rouge(hyps, refs, ["rouge1", "rougeL"], tokenizer=UnicodeTokenizer())
    expected = reference_means(hyps, refs, ["rouge1", "rougeL"], tokenizer=UnicodeTokenizer())
    assert unicode == pytest.approx(expected, abs=1e-12)
    # By hand: 3 of 4 / 3 of 3 words, 2 of 4 / 2 of 2 words, 5 of 6 / 5 of 5 characters.
    f1 = [2 * 3 / 7, 2 * 2 / 6, 2 * 5 / 11]
    assert unicode["rouge1"] == pytest.approx(np.mean(f1))
    assert default < unicode["rouge1"]


def test_unicode_tokenizer_by_hand():
    tokenizer = UnicodeTokenizer()
    assert tokenizer.tokenize("İZMİR'de ÇAY-içtik, 3 kez!") == [
        "i̇zmi̇r",
        "de",
        "çay",
        "içtik",
        "3",
        "kez",
    ]
    # Combining vowel signs (category M) stay inside Devanagari words.
    assert tokenizer.tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert tokenizer.tokenize("東京タワーへ行く。ＡＢＣ１") == list("東京タワーへ行く") + ["abc1"]
    assert UnicodeTokenizer(split_cjk=False).tokenize("東京タワー 한국어") == [
        "東京タワー",
        "한국어",
    ]
    with pytest.raises(TypeError, match="split_cjk"):
        UnicodeTokenizer(split_cjk="yes")


def test_metric_over_a_batched_dataset_equals_the_function():
    hyps, refs = random_corpus(4, 23, max_refs=2)
    refs = [r * 2 if len(r) == 1 else r for r in refs]  # two each, for a [batch, 2] tensor
    expected = rouge(hyps, refs, TYPES)
    metric = ROUGE(TYPES)

    @tf.function
    def update(hyp, ref):
        metric.update_state(hyp, ref)

    for hyp, ref in tf.data.Dataset.from_tensor_slices((hyps, refs)).batch(5):
        update(hyp, ref)
    result = metric.result()
    assert list(result) == TYPES
    assert {k: float(v) for k, v in result.items()} == pytest.approx(expected, abs=1e-6)
    # Eagerly, with Python lists of ragged references and Unicode tokenization.
    hyps, refs = random_corpus(5, 9, max_refs=3, words=["kedi", "çay", "кошка", "猫", "垫子"])
    metric = ROUGE(["rouge1", "rougeLsum"], tokenizer=UnicodeTokenizer())
    for start in range(0, 9, 4):
        metric.update_state(hyps[start : start + 4], refs[start : start + 4])
    expected = rouge(hyps, refs, ["rouge1", "rougeLsum"], tokenizer=UnicodeTokenizer())
    assert {k: float(v) for k, v in metric.result().items()} == pytest.approx(expected, abs=1e-6)
    metric.reset_state()
    assert all(np.isnan(float(v)) for v in metric.result().values())
    # A ragged [batch, None] tensor of references, in a tf.function.
    update = tf.function(metric.update_state)
    dataset = tf.data.Dataset.from_tensor_slices((hyps, tf.ragged.constant(refs))).ragged_batch(4)
    for hyp, ref in dataset:
        update(hyp, ref)
    assert {k: float(v) for k, v in metric.result().items()} == pytest.approx(expected, abs=1e-6)


def test_metric_config_round_trip():
    metric = ROUGE(["rouge2"], tokenizer=UnicodeTokenizer(split_cjk=False), name="r2")
    clone = keras.metrics.deserialize(keras.metrics.serialize(metric))
    assert clone.rouge_types == ("rouge2",) and clone.name == "r2"
    assert isinstance(clone.tokenizer, UnicodeTokenizer) and clone.tokenizer.split_cjk is False

    class Words:
        def tokenize(self, text):
            return text.split()

    with pytest.raises(TypeError, match="cannot be saved"):
        ROUGE(tokenizer=Words()).get_config()


def test_bad_input_is_refused_naming_the_argument_and_changes_nothing():
    with pytest.raises(ValueError, match="references must have one item per hypothesis"):
        rouge(["a b", "c"], ["a b"])
    with pytest.raises(ValueError, match="hypotheses is empty"):
        rouge([], [])
    with pytest.raises(TypeError, match=r"hypotheses\[1\] must be a string"):
        rouge(["a", 3], ["a", "b"])
    with pytest.raises(TypeError, match=r"references\[0\]\[1\] must be a string"):
        rouge(["a"], [["a", None]])
    with pytest.raises(TypeError, match="hypotheses must be a list of texts"):
        rouge("a b", "a b")
    with pytest.raises(ValueError, match="rouge_types holds 'rougeX'"):
        rouge(["a"], ["a"], ["rouge1", "rougeX"])
    with pytest.raises(ValueError, match="rouge_types holds a type twice"):
        ROUGE(["rouge1", "rouge1"])
    with pytest.raises(ValueError, match="use_stemmer=True works only"):
        rouge(["a"], ["a"], use_stemmer=True, tokenizer=UnicodeTokenizer())
    with pytest.raises(TypeError, match="tokenizer must have a tokenize"):
        ROUGE(tokenizer=str.split)
    metric = ROUGE(["rouge1"])
    metric.update_state(["a b"], ["a c"])
    with pytest.raises(TypeError, match=r"references\[1\]"):
        metric.update_state(["a", "b"], ["a", 7])
    assert float(metric.result()["rouge1"]) == pytest.approx(0.5)
