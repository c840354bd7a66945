"""texkit.rewards: each reward against its definition computed another way, eagerly, in
tf.function, with XLA where it runs in the graph, under MirroredStrategy on the two logical CPUs
of tests/conftest.py, and every refused input."""

import numpy as np
import pytest
import sacrebleu
import tensorflow as tf

import texkit as tx
from texkit.rewards import (
    ClassifierProbability,
    CombinedReward,
    ExactMatch,
    FunctionReward,
    MissingFeatureError,
    Reward,
    Samples,
    SentenceBLEU,
    as_reward,
    check_reward_runs_on,
)

TEXTS = [
    "the cat sat on the mat",
    "the cat sat",
    "a dog ran off",
    "",
    "The Cat sat on the mat",
    "on the mat the cat sat",
]
REFERENCES = [
    ["the cat sat on the mat", ""],
    ["the cat sat on the mat", "the cat sat"],
    ["the dog ran off", "a dog ran away"],
    ["a b c", ""],
    ["the cat sat on the mat", ""],
    ["the cat sat on the mat", "on the mat sat the cat"],
]
N = len(TEXTS)
VOCAB, WIDTH = 11, 7

# One MirroredStrategy per device set and process (see texkit.run.distribution).
MIRRORED = {"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}


def _ids():
    rng = np.random.default_rng(3)
    lengths = np.array([7, 3, 5, 0, 2, 4], np.int32)
    ids = rng.integers(1, VOCAB, size=(N, WIDTH)).astype(np.int32)
    ids[np.arange(WIDTH)[None, :] >= lengths[:, None]] = 0
    return ids, lengths


IDS, LENGTHS = _ids()


def _reference_ids():
    """References with <BOS> (id 1) first; rows 0, 2, 4 equal their sample (other padding)."""
    references = np.full((N, WIDTH + 3), 9, np.int32)  # padding unlike the samples'
    reference_lengths = LENGTHS + 1
    references[:, 0] = 1
    references[:, 1 : WIDTH + 1] = IDS
    references[1, 1] = (IDS[1, 0] % (VOCAB - 1)) + 1  # another first token
    reference_lengths[3] += 1  # one token longer: no match however the tokens compare
    references[5, 1 + LENGTHS[5] :] = 9
    reference_lengths[5] = LENGTHS[5] + 2  # longer, with a token past the sample's end
    return references, reference_lengths.astype(np.int32)


REF_IDS, REF_LENGTHS = _reference_ids()


def samples_of(texts=True, **extra):
    features = {
        "target_text": tf.constant([r[0] for r in REFERENCES]),
        "all_refs": tf.constant(REFERENCES),
        "target_ids": tf.constant(REF_IDS),
        "target_length": tf.constant(REF_LENGTHS),
        **extra,
    }
    return Samples(
        ids=tf.constant(IDS),
        lengths=tf.constant(LENGTHS),
        texts=tf.constant(TEXTS) if texts else None,
        features=features,
    )


def run_each_way(reward, samples, jit=False):
    """The reward's values eagerly, in tf.function (and with XLA): all equal, returned once."""
    eager = reward(samples).numpy()
    graph = tf.function(reward)(samples).numpy()
    np.testing.assert_allclose(graph, eager, rtol=1e-6, atol=1e-7)
    assert eager.dtype == np.float32 and eager.shape == (N,)
    if jit:  # strings cannot enter an XLA program: the numeric fields only
        numeric = {k: v for k, v in samples.features.items() if v.dtype != tf.string}
        numeric_samples = Samples(samples.ids, samples.lengths, None, numeric)
        compiled = tf.function(reward, jit_compile=True)(numeric_samples).numpy()
        np.testing.assert_allclose(compiled, eager, rtol=1e-6, atol=1e-7)
    return eager


@pytest.fixture(scope="module")
def mirrored():
    return tx.run.strategy_from_hparams(MIRRORED)


def run_mirrored(strategy, reward, samples):
    """The reward on each replica's half of the samples, inside a compiled step, gathered."""
    fields = {"ids": samples.ids, "lengths": samples.lengths, **samples.features}
    if samples.texts is not None:
        fields["texts"] = samples.texts
    half = N // 2

    def split(context):
        start = context.replica_id_in_sync_group * half
        return {key: value[start : start + half] for key, value in fields.items()}

    per_replica = strategy.experimental_distribute_values_from_function(split)

    def replica_step(part):
        part = dict(part)
        ids, lengths, texts = part.pop("ids"), part.pop("lengths"), part.pop("texts", None)
        return reward(Samples(ids, lengths, texts, part))

    @tf.function
    def step(part):
        return strategy.gather(strategy.run(replica_step, args=(part,)), axis=0)

    return step(per_replica).numpy()


# --- SentenceBLEU -----------------------------------------------------------------------------


def test_sentence_bleu_is_texkits_sentence_bleu_and_sacrebleus(mirrored):
    reward = SentenceBLEU("target_text")
    values = run_each_way(reward, samples_of())
    pairs = list(zip(TEXTS, REFERENCES, strict=True))
    ours = [tx.evals.sentence_bleu([r[0]], t, smooth=True) for t, r in pairs]
    np.testing.assert_allclose(values, ours, rtol=1e-6)
    # texkit's docs: smooth=True is sacrebleu's add-k (k = 1) on whitespace tokens.
    metric = sacrebleu.metrics.BLEU(tokenize="none", smooth_method="add-k", force=True)
    theirs = [metric.sentence_score(t, [r[0]]).score for t, r in pairs]
    np.testing.assert_allclose(values, theirs, rtol=1e-6)
    assert values[0] == pytest.approx(100.0) and 0 < values[1] < 100 and values[3] == 0
    np.testing.assert_array_equal(run_mirrored(mirrored, reward, samples_of()), values)
    assert not reward.in_graph


def test_sentence_bleu_several_references_lowercase_and_orders():
    reward = SentenceBLEU("all_refs", max_order=2, lowercase=True, smooth=False)
    values = run_each_way(reward, samples_of())
    expected = [
        tx.evals.sentence_bleu([x for x in r if x], t, max_order=2, lowercase=True)
        for t, r in zip(TEXTS, REFERENCES, strict=True)
    ]
    np.testing.assert_allclose(values, expected, rtol=1e-6)
    assert values[4] == pytest.approx(100.0)  # "The Cat" lowercased


# --- ExactMatch -------------------------------------------------------------------------------


def test_exact_match_over_texts_is_string_equality():
    strict = run_each_way(ExactMatch("target_text"), samples_of())
    expected = [float(t.strip() == r[0].strip()) for t, r in zip(TEXTS, REFERENCES, strict=True)]
    np.testing.assert_array_equal(strict, expected)
    lowered = run_each_way(ExactMatch("target_text", lowercase=True), samples_of())
    expected = [float(t.lower() == r[0].lower()) for t, r in zip(TEXTS, REFERENCES, strict=True)]
    np.testing.assert_array_equal(lowered, expected)
    assert lowered[4] == 1 and strict[4] == 0


def _numpy_exact_match(start):
    out = []
    for i in range(N):
        sample = IDS[i, : LENGTHS[i]].tolist()
        reference = REF_IDS[i, start : REF_LENGTHS[i]].tolist()
        out.append(float(sample == reference))
    return out


def test_exact_match_over_ids_compares_up_to_each_length(mirrored):
    reward = ExactMatch("target_ids", over="ids", reference_start=1)
    values = run_each_way(reward, samples_of(), jit=True)
    np.testing.assert_array_equal(values, _numpy_exact_match(1))
    assert values.sum() >= 2 and values[1] == values[3] == values[5] == 0
    np.testing.assert_array_equal(run_mirrored(mirrored, reward, samples_of()), values)
    # Without skipping <BOS>, only empty samples against empty references could match.
    unshifted = run_each_way(ExactMatch("target_ids", over="ids"), samples_of())
    np.testing.assert_array_equal(unshifted, _numpy_exact_match(0))


# --- ClassifierProbability --------------------------------------------------------------------


def _bert_classifier(num_classes):
    classifier = tx.modules.BERTClassifier(
        hparams={
            "encoder": {
                "vocab_size": VOCAB, "hidden_size": 8, "num_hidden_layers": 1,
                "num_attention_heads": 2, "intermediate_size": 16,
                "max_position_embeddings": 16,
            },
            "num_classes": num_classes,
            "clas_strategy": "mean_time",
        }
    )  # fmt: skip
    classifier(tf.constant(IDS), tf.constant(LENGTHS))
    return classifier


def _softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def test_classifier_probability_is_the_softmax_of_its_logits(mirrored):
    classifier = _bert_classifier(3)
    logits, _ = classifier(tf.constant(IDS), tf.constant(LENGTHS), training=False)
    for label in range(3):
        values = ClassifierProbability(classifier, label=label)(samples_of()).numpy()
        np.testing.assert_allclose(values, _softmax(logits.numpy())[:, label], rtol=1e-5)
    reward = ClassifierProbability(classifier, label=2)
    values = run_each_way(reward, samples_of(), jit=True)
    np.testing.assert_allclose(values, _softmax(logits.numpy())[:, 2], rtol=1e-5)
    mirrored_values = run_mirrored(mirrored, reward, samples_of())
    np.testing.assert_allclose(mirrored_values, values, rtol=1e-5, atol=1e-7)
    assert reward.in_graph


def test_binary_classifier_probability_is_the_sigmoid():
    classifier = _bert_classifier(1)
    logits = classifier(tf.constant(IDS), tf.constant(LENGTHS), training=False)[0].numpy()
    positive = 1 / (1 + np.exp(-logits.astype(np.float64)))
    values = run_each_way(ClassifierProbability(classifier, 1), samples_of(), jit=True)
    np.testing.assert_allclose(values, positive, rtol=1e-5)
    values = ClassifierProbability(classifier, 0)(samples_of()).numpy()
    np.testing.assert_allclose(values, 1 - positive, rtol=1e-5)
    # [n, 1] logits are the same binary classifier.
    column = ClassifierProbability(lambda ids, lengths: classifier(ids, lengths)[0][:, None], 1)
    np.testing.assert_allclose(run_each_way(column, samples_of()), positive, rtol=1e-5)


def test_classifier_probability_over_texts():
    def by_length(texts):  # logits from the texts' byte lengths, in the graph
        length = tf.cast(tf.strings.length(texts), tf.float32)
        return tf.stack([0.1 * length, -0.05 * length], axis=1)

    values = run_each_way(ClassifierProbability(by_length, 0, over="texts"), samples_of())
    lengths = np.array([len(t) for t in TEXTS], np.float64)
    expected = _softmax(np.stack([0.1 * lengths, -0.05 * lengths], 1))[:, 0]
    np.testing.assert_allclose(values, expected, rtol=1e-5)


# --- FunctionReward and CombinedReward --------------------------------------------------------


def _overlap(texts, features):
    references = features["target_text"]
    assert isinstance(texts, list) and all(isinstance(t, str) for t in texts)
    assert references.dtype == object and isinstance(references[0], str)
    pairs = zip(texts, references, strict=True)
    return [len(set(t.split()) & set(r.split())) / 7 for t, r in pairs]


def _ids_score(ids, lengths, features):
    assert isinstance(ids, np.ndarray) and ids.shape[1] == WIDTH
    return np.where(np.arange(ids.shape[1]) < lengths[:, None], ids, 0).sum(1) / 10.0 + (
        features["target_length"] * 0.5
    )


def test_python_function_rewards_get_texts_ids_and_features(mirrored):
    over_texts = FunctionReward(_overlap)
    values = run_each_way(over_texts, samples_of())
    expected = _overlap(TEXTS, {"target_text": np.array([r[0] for r in REFERENCES], object)})
    np.testing.assert_allclose(values, expected, rtol=1e-6)
    np.testing.assert_allclose(run_mirrored(mirrored, over_texts, samples_of()), values)
    over_ids = FunctionReward(_ids_score, over="ids")
    values = run_each_way(over_ids, samples_of(texts=False))
    np.testing.assert_allclose(values, _ids_score(IDS, LENGTHS, {"target_length": REF_LENGTHS}))
    np.testing.assert_allclose(run_mirrored(mirrored, over_ids, samples_of(False)), values)
    assert over_texts.name == "_overlap" and not over_ids.in_graph


def test_tf_function_reward_runs_in_the_graph(mirrored):
    def length_bonus(samples):
        return tf.cast(samples.lengths, tf.float32) / WIDTH

    reward = FunctionReward(length_bonus, over="ids", python=False)
    values = run_each_way(reward, samples_of(texts=False), jit=True)
    np.testing.assert_allclose(values, LENGTHS / WIDTH, rtol=1e-6)
    np.testing.assert_allclose(run_mirrored(mirrored, reward, samples_of(False)), values)
    assert reward.in_graph


def test_combined_reward_is_the_weighted_sum():
    parts = [SentenceBLEU("target_text"), ExactMatch("target_text"), _overlap]
    reward = CombinedReward(parts, weights=[0.01, 2, -0.5])
    values = run_each_way(reward, samples_of())
    samples = samples_of()
    expected = sum(
        w * as_reward(p)(samples).numpy().astype(np.float64)
        for w, p in zip([0.01, 2, -0.5], parts, strict=True)
    )
    np.testing.assert_allclose(values, expected, rtol=1e-5)
    assert not reward.in_graph
    assert CombinedReward([ExactMatch("target_text"), ExactMatch("target_ids", "ids")]).in_graph


# --- as_reward --------------------------------------------------------------------------------


def test_as_reward_from_hparams_names_and_functions():
    reward = as_reward({"type": "SentenceBLEU", "kwargs": {"max_order": 2}})
    assert isinstance(reward, SentenceBLEU) and reward.max_order == 2
    assert isinstance(as_reward("ExactMatch"), ExactMatch)
    assert isinstance(as_reward(_overlap), FunctionReward)
    same = ExactMatch()
    assert as_reward(same) is same
    combined = as_reward(
        {
            "type": "CombinedReward",
            "kwargs": {"rewards": ["ExactMatch", {"type": "SentenceBLEU"}], "weights": [1, 0.01]},
        }
    )
    assert [type(r) for r in combined.rewards] == [ExactMatch, SentenceBLEU]
    tx.registry.register(_ids_score, "test_rewards_ids_score")
    by_name = as_reward({"type": "test_rewards_ids_score", "kwargs": {"over": "ids"}})
    assert isinstance(by_name, FunctionReward) and by_name.fn is _ids_score
    np.testing.assert_allclose(
        by_name(samples_of()).numpy(), _ids_score(IDS, LENGTHS, {"target_length": REF_LENGTHS})
    )


@pytest.mark.parametrize(
    "hparams, path, message",
    [
        ({"type": "SentenceBLUE"}, "reward.type", "did you mean 'SentenceBLEU'"),
        ({"type": "Dense"}, "reward.type", "not a texkit.rewards.Reward"),
        ({"type": "tensorflow.math.reduce_sum"}, "reward.type", "registered with"),
        ({"type": "os.system"}, "reward.type", "refusing"),
        ({"type": "ExactMatch", "kwargs": {"refrence_key": "x"}}, "reward.kwargs", "refrence_key"),
        ({"type": "ExactMatch", "kwargs": {"over": "tokens"}}, "reward.kwargs", "over must be"),
        ({"type": "ExactMatch", "kwarg": {}}, "reward.kwarg", "unknown key 'kwarg'"),
        ({"kwargs": {}}, "reward.type", "registered name"),
        (
            {"type": "CombinedReward", "kwargs": {"rewards": [{"type": "Nope"}]}},
            "reward.kwargs.rewards[0].type",
            "unknown type 'Nope'",
        ),
    ],
)
def test_as_reward_refuses_bad_hparams(hparams, path, message):
    with pytest.raises(tx.HParamsError, match=message) as error:
        as_reward(hparams)
    assert error.value.path == path


def test_as_reward_refuses_other_values():
    with pytest.raises(TypeError, match="reward must be a texkit.rewards.Reward"):
        as_reward(3)
    with pytest.raises(TypeError, match="got type"):
        as_reward(ExactMatch)  # the class, not a reward


# --- bad values: every reward's output is checked ---------------------------------------------


BAD_VALUES = [
    (lambda n: [float("nan")] * n, ValueError, "gave a NaN or infinite value"),
    (lambda n: [1e39] * n, ValueError, "NaN or infinite value as float32"),
    (lambda n: np.zeros((n, 2)), ValueError, r"shape \[6, 2\]"),
    (lambda n: [0.0] * (n - 1), ValueError, r"shape \[5\] for 6 samples"),
    (lambda n: [1] * n, TypeError, "gave int values"),
    (lambda n: [True] * n, TypeError, "gave bool values"),
    (lambda n: ["0.5"] * n, TypeError, "gave string values"),
    (lambda n: "0.5", TypeError, "gave a string"),
    (lambda n: None, TypeError, "gave object values"),
]


@pytest.mark.parametrize("make, error, message", BAD_VALUES)
def test_bad_python_values_are_refused_naming_the_reward(make, error, message):
    def bad(texts, features):
        return make(len(texts))

    reward = FunctionReward(bad)
    with pytest.raises(error, match=f"FunctionReward 'bad' .*{message}"):
        reward(samples_of())
    # In a graph, TensorFlow raises it as InvalidArgumentError, the message kept.
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"FunctionReward 'bad' .*{message}"):
        tf.function(reward)(samples_of())


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda s: tf.fill([6], np.nan), tf.errors.InvalidArgumentError, "NaN or infinite"),
        (lambda s: tf.zeros([6, 2]), ValueError, r"shape \[6, 2\], but there are 6 samples"),
        (lambda s: tf.zeros([5]), ValueError, r"shape \[5\], but there are 6 samples"),
        (lambda s: tf.zeros([]), ValueError, r"shape \[\]"),
        (lambda s: s.lengths, TypeError, "gave int32 values"),
        (lambda s: s.texts, TypeError, "gave string values"),
    ],
)
def test_bad_graph_values_are_refused_naming_the_reward(make, error, message):
    def broken(samples):
        return make(samples)

    reward = FunctionReward(broken, python=False)
    with pytest.raises(error, match=f"FunctionReward 'broken' .*{message}"):
        reward(samples_of())
    with pytest.raises(error, match=f"FunctionReward 'broken' .*{message}"):
        tf.function(reward)(samples_of())


def test_a_size_known_only_at_run_time_is_checked():
    reward = FunctionReward(lambda s: tf.zeros(tf.shape(s.ids)[:1] - 1), "ids", python=False)

    @tf.function(input_signature=[tf.TensorSpec([None, WIDTH], tf.int32)] * 1)
    def step(ids):
        return reward(Samples(ids, tf.reduce_sum(ids, 1)))

    with pytest.raises(tf.errors.InvalidArgumentError, match="another shape than"):
        step(tf.constant(IDS))


# --- bad inputs -------------------------------------------------------------------------------


def test_missing_reference_key_lists_the_features():
    listed = "there are: 'all_refs', 'target_ids', 'target_length', 'target_text'"
    for reward in [SentenceBLEU("answer"), ExactMatch("answer"), ExactMatch("answer", "ids")]:
        with pytest.raises(KeyError, match=f"{type(reward).__name__}: reference_key='answer'"):
            reward(samples_of())
    with pytest.raises(MissingFeatureError) as error:
        ExactMatch("target_ids", "ids", reference_length_key="n_tokens")(samples_of())
    assert str(error.value).startswith("ExactMatch: reference_length_key='n_tokens' is not")
    assert listed in str(error.value)


def test_texts_needed_but_absent():
    for reward in [
        SentenceBLEU(),
        ExactMatch(),
        ClassifierProbability(lambda texts: tf.zeros([N, 2]), 0, over="texts"),
        FunctionReward(_overlap),
        FunctionReward(lambda s: tf.zeros([N]), python=False),
    ]:
        with pytest.raises(ValueError, match="samples.texts is None"):
            reward(samples_of(texts=False))


def test_references_of_the_wrong_kind():
    with pytest.raises(TypeError, match=r"tf.string \[n\] or \[n, r\], got int32"):
        SentenceBLEU("target_ids")(samples_of())
    with pytest.raises(TypeError, match="compares with tf.string"):
        ExactMatch("target_ids")(samples_of())
    with pytest.raises(TypeError, match="compares with integer"):
        ExactMatch("target_text", over="ids")(samples_of())
    with pytest.raises(TypeError, match="reference_length_key='target_text' must name integer"):
        ExactMatch("target_ids", over="ids", reference_length_key="target_text")(samples_of())
    empty = samples_of(all_refs=tf.constant([["", ""]] * N))
    with pytest.raises(ValueError, match="sample 0 has no reference"):
        SentenceBLEU("all_refs")(empty)


def test_classifier_errors():
    samples = samples_of()
    with pytest.raises(ValueError, match=r"logits must be \[n, num_classes\].*shape \[6, 7, 3\]"):
        ClassifierProbability(lambda ids, lengths: tf.zeros([N, WIDTH, 3]), 0)(samples)
    with pytest.raises(TypeError, match="logits must be floats"):
        ClassifierProbability(lambda ids, lengths: ids, 0)(samples)
    with pytest.raises(TypeError, match="must return logits"):
        ClassifierProbability(lambda ids, lengths: {"logits": ids}, 0)(samples)
    with pytest.raises(ValueError, match="label=3 is out of range for a classifier of 3 classes"):
        ClassifierProbability(lambda ids, lengths: tf.zeros([N, 3]), 3)(samples)
    with pytest.raises(ValueError, match="label=2 is out of range for a binary classifier"):
        ClassifierProbability(lambda ids, lengths: tf.zeros([N]), 2)(samples)
    with pytest.raises(ValueError, match=r"label must be a class index.*-1"):
        ClassifierProbability(lambda ids, lengths: tf.zeros([N]), -1)
    with pytest.raises(ValueError, match=r"label must be a class index.*True"):
        ClassifierProbability(lambda ids, lengths: tf.zeros([N]), True)
    with pytest.raises(TypeError, match="classifier must be callable"):
        ClassifierProbability("bert", 0)


def test_samples_are_checked():
    reward = ExactMatch()
    with pytest.raises(TypeError, match="ExactMatch: expected a texkit.rewards.Samples, got dict"):
        reward({"ids": IDS})
    with pytest.raises(TypeError, match=r"samples.ids must be integer \[n, T\], got float32"):
        reward(Samples(tf.zeros([N, 2]), tf.constant(LENGTHS)))
    with pytest.raises(TypeError, match=r"samples.lengths must be integer \[n\]"):
        reward(Samples(tf.constant(IDS), tf.constant(IDS)))
    with pytest.raises(TypeError, match=r"samples.texts must be tf.string \[n\]"):
        reward(Samples(tf.constant(IDS), tf.constant(LENGTHS), tf.constant(LENGTHS)))
    with pytest.raises(ValueError, match=r"samples.features\['target_text'\] has shape \[3\]"):
        reward(samples_of(target_text=tf.constant(["a", "b", "c"])))
    with pytest.raises(TypeError, match="samples.features must be a dict"):
        reward(Samples(tf.constant(IDS), tf.constant(LENGTHS), None, [1]))


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: SentenceBLEU(max_order=0), ValueError, "max_order must be an int >= 1"),
        (lambda: SentenceBLEU(smooth=1), TypeError, "smooth must be a bool"),
        (lambda: SentenceBLEU(reference_key=""), ValueError, "reference_key must be"),
        (lambda: ExactMatch(over="tokens"), ValueError, "over must be one of"),
        (lambda: ExactMatch(reference_start=-1), ValueError, "reference_start must be"),
        (lambda: FunctionReward(3), TypeError, "fn must be callable"),
        (lambda: FunctionReward(_overlap, python="no"), TypeError, "python must be a bool"),
        (lambda: CombinedReward([]), ValueError, "rewards must be a non-empty list"),
        (lambda: CombinedReward([_overlap], [1, 2]), ValueError, "2 weights for 1 rewards"),
        (lambda: CombinedReward([_overlap], [float("nan")]), ValueError, r"weights\[0\]"),
        (lambda: CombinedReward([_overlap], ["1"]), TypeError, r"weights\[0\] must be a number"),
        (lambda: Reward(name=""), ValueError, "name must be a non-empty string"),
    ],
)
def test_bad_arguments_name_the_argument(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_check_reward_runs_on(mirrored):
    host, graph = SentenceBLEU(), ExactMatch("target_ids", "ids")
    for strategy in [None, tf.distribute.get_strategy(), mirrored]:
        check_reward_runs_on(host, strategy)
        check_reward_runs_on(graph, strategy, jit_compile=strategy is None)
    with pytest.raises(ValueError, match="SentenceBLEU runs Python.*jit_compile=True"):
        check_reward_runs_on(host, None, jit_compile=True)
    with pytest.raises(ValueError, match=r"CombinedReward runs Python.*jit_compile"):
        check_reward_runs_on(CombinedReward([graph, host]), jit_compile=True)
    # A TPU strategy needs a TPU to be built; the check looks only at the strategy's class.
    tpu = object.__new__(tf.distribute.TPUStrategy)
    with pytest.raises(ValueError, match="FunctionReward '_overlap' runs Python.*a TPU"):
        check_reward_runs_on(FunctionReward(_overlap), tpu)
    check_reward_runs_on(graph, tpu)
    with pytest.raises(TypeError, match="reward must be a texkit.rewards.Reward"):
        check_reward_runs_on(_overlap)


def test_ragged_features_pass_through_unread():
    ragged = tf.ragged.constant([[1, 2], [3], [], [4], [5, 6, 7], [8]])
    samples = samples_of(pieces=ragged)
    np.testing.assert_array_equal(
        ExactMatch("target_text")(samples).numpy(), ExactMatch("target_text")(samples_of()).numpy()
    )
    keys = []
    FunctionReward(lambda texts, features: keys.extend(features) or [0.0] * len(texts))(samples)
    assert "pieces" not in keys and "target_text" in keys
    with pytest.raises(TypeError, match="reference_key='pieces' names a RaggedTensor"):
        ExactMatch("pieces", over="ids")(samples)
