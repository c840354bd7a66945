"""CRF and CRFTaggingHead: brute-force enumeration in float64, pytorch-crf on the same weights,
tag-scheme constraints, XLA, the module contract and bad input."""

import itertools
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import check_module_contract
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.core.tag_schemes import allowed_transitions
from texkit.hparams import HParamsError
from texkit.modules import CRF, CRFTaggingHead

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tagging" / "crf.npz"
WEIGHTS = ("transitions", "start_transitions", "end_transitions")
BIO = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def make_crf(num_tags, seed=0, scale=1.0, **hparams):
    crf = CRF(num_tags, hparams=hparams or None)
    crf.build()
    rng = np.random.default_rng(seed)
    for name in WEIGHTS:
        weight = getattr(crf, name)
        weight.assign(scale * rng.normal(size=weight.shape))
    return crf


def weights_of(crf):
    return [getattr(crf, name).numpy().astype(np.float64) for name in WEIGHTS]


def features(path, time, num_tags):
    """d score / d (potentials [time, n], transitions, start, end) of one tag path."""
    unary, pairs = np.zeros((time, num_tags)), np.zeros((num_tags, num_tags))
    start, end = np.zeros(num_tags), np.zeros(num_tags)
    for t, tag in enumerate(path):
        unary[t, tag] = 1
        if t:
            pairs[path[t - 1], tag] += 1
    if path:
        start[path[0]], end[path[-1]] = 1, 1
    return unary, pairs, start, end


def enumerate_paths(potentials, length, transitions, start, end, allowed=None):
    """Every tag path of ``length`` (within ``allowed`` if given) and its score, float64."""
    num_tags = potentials.shape[-1]
    paths, scores = [], []
    for path in itertools.product(range(num_tags), repeat=length):
        if allowed is not None and path and not is_allowed(path, allowed):
            continue
        parts = features(path, potentials.shape[0], num_tags)
        paths.append(path)
        scores.append(
            sum(
                np.sum(f * w)
                for f, w in zip(parts, (potentials, transitions, start, end), strict=True)
            )
        )
    return paths, np.array(scores)


def is_allowed(path, allowed):
    start, transitions, end = allowed
    return bool(
        start[path[0]]
        and end[path[-1]]
        and all(transitions[a, b] for a, b in zip(path[:-1], path[1:], strict=True))
    )


def brute_force(potentials, tags, lengths, weights, coefficients):
    """Log-likelihoods [batch], and the gradients of ``sum(coefficients * log_likelihood)``."""
    batch, time, num_tags = potentials.shape
    log_likelihoods = []
    gradients = [np.zeros_like(potentials), *(np.zeros_like(w) for w in weights)]
    for b in range(batch):
        paths, scores = enumerate_paths(potentials[b], lengths[b], *weights)
        log_z = np.logaddexp.reduce(scores)
        probabilities = np.exp(scores - log_z)
        gold = tuple(tags[b, : lengths[b]])
        log_likelihoods.append(scores[paths.index(gold)] - log_z)
        expected = [np.zeros_like(g[0] if i == 0 else g) for i, g in enumerate(gradients)]
        for path, probability in zip(paths, probabilities, strict=True):
            for i, f in enumerate(features(path, time, num_tags)):
                expected[i] += probability * f
        for i, f in enumerate(features(gold, time, num_tags)):
            delta = coefficients[b] * (f - expected[i])
            if i == 0:
                gradients[0][b] += delta
            else:
                gradients[i] += delta
    return np.array(log_likelihoods), gradients


def random_batch(rng, num_tags, time, batch=4):
    potentials = (2 * rng.normal(size=(batch, time, num_tags))).astype(np.float32)
    tags = rng.integers(0, num_tags, size=(batch, time)).astype(np.int32)
    lengths = rng.integers(0, time + 1, size=batch).astype(np.int32)
    lengths[:3] = [time, 1, 0]
    return potentials, tags, lengths


def ll_and_gradients(crf, potentials, tags, lengths, coefficients):
    potentials = tf.convert_to_tensor(potentials)
    with tf.GradientTape() as tape:
        tape.watch(potentials)
        log_likelihood = crf.log_likelihood(potentials, tags, lengths)
        objective = tf.reduce_sum(coefficients * log_likelihood)
    gradients = tape.gradient(objective, [potentials, *(getattr(crf, n) for n in WEIGHTS)])
    return log_likelihood, gradients


def test_documented_and_registered():
    for cls in (CRF, CRFTaggingHead):
        assert undocumented_hparams(cls) == ([], [])
        assert registry.resolve(cls.__name__) is cls


@pytest.mark.parametrize("num_tags,time", [(2, 1), (3, 4), (4, 3)])
def test_log_likelihood_and_gradient_equal_brute_force(num_tags, time):
    rng = np.random.default_rng(num_tags * 10 + time)
    crf = make_crf(num_tags, seed=time)
    potentials, tags, lengths = random_batch(rng, num_tags, time)
    coefficients = rng.normal(size=len(lengths)).astype(np.float32)
    log_likelihood, gradients = ll_and_gradients(crf, potentials, tags, lengths, coefficients)
    expected, expected_gradients = brute_force(
        potentials.astype(np.float64), tags, lengths, weights_of(crf), coefficients
    )
    assert log_likelihood.dtype == tf.float32 and log_likelihood.shape == (len(lengths),)
    np.testing.assert_allclose(log_likelihood.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert log_likelihood.numpy()[2] == 0.0  # length 0
    for got, want in zip(gradients, expected_gradients, strict=True):
        np.testing.assert_allclose(tf.convert_to_tensor(got).numpy(), want, atol=1e-5)


@pytest.mark.parametrize("num_tags,time", [(2, 1), (3, 4), (4, 4)])
def test_viterbi_equals_brute_force_argmax(num_tags, time):
    rng = np.random.default_rng(num_tags + time)
    crf = make_crf(num_tags, seed=num_tags)
    potentials, _, lengths = random_batch(rng, num_tags, time, batch=6)
    tags, scores = crf.viterbi_decode(potentials, lengths)
    assert tags.dtype == tf.int32 and tags.shape == (6, time) and scores.dtype == tf.float32
    for b, length in enumerate(lengths):
        paths, path_scores = enumerate_paths(
            potentials[b].astype(np.float64), length, *weights_of(crf)
        )
        best = int(np.argmax(path_scores))
        np.testing.assert_array_equal(tags.numpy()[b, :length], paths[best])
        np.testing.assert_array_equal(tags.numpy()[b, length:], 0)  # the pad tag
        np.testing.assert_allclose(scores.numpy()[b], path_scores[best], atol=1e-5)
    np.testing.assert_array_equal(crf(potentials, sequence_length=lengths).numpy(), tags.numpy())


@pytest.mark.parametrize("case", ["small", "wide"])
def test_equals_pytorch_crf(case):
    with np.load(FIXTURE) as data:
        fixture = {key.split("/")[1]: data[key] for key in data.files if key.startswith(case)}
    crf = CRF(fixture["potentials"].shape[-1])
    crf.build()
    for name in WEIGHTS:
        getattr(crf, name).assign(fixture[name])
    lengths = fixture["sequence_length"]
    log_likelihood = crf.log_likelihood(fixture["potentials"], fixture["tags"], lengths)
    np.testing.assert_allclose(log_likelihood.numpy(), fixture["log_likelihood"], rtol=1e-5)
    tags, _ = crf.viterbi_decode(fixture["potentials"], lengths)
    mask = np.arange(tags.shape[1])[None, :] < lengths[:, None]
    np.testing.assert_array_equal(np.where(mask, tags.numpy(), -1), fixture["decoded"])


@pytest.mark.parametrize("scheme", ["BIO", "IOB1", "IOBES", "BILOU"])
def test_constraints_never_violated(scheme):
    letters = {"BIO": "BI", "IOB1": "BI", "IOBES": "BIES", "BILOU": "BILU"}[scheme]
    tag_set = ["O"] + [f"{letter}-{kind}" for kind in ("PER", "LOC") for letter in letters]
    allowed = allowed_transitions(tag_set, scheme)
    crf = make_crf(len(tag_set), seed=5, tags=tag_set, tag_scheme=scheme)
    # Make every forbidden transition, start and end attractive: unconstrained decoding would
    # take them.
    for name, mask in zip(WEIGHTS, (allowed[1], allowed[0], allowed[2]), strict=True):
        weight = getattr(crf, name)
        weight.assign(np.where(mask, weight.numpy(), 5.0))
    rng = np.random.default_rng(7)
    potentials = (3 * rng.normal(size=(64, 6, len(tag_set)))).astype(np.float32)
    lengths = rng.integers(0, 7, size=64).astype(np.int32)
    tags, scores = crf.viterbi_decode(potentials, lengths)
    free = CRF(len(tag_set))
    free.build()
    free.set_weights(crf.get_weights())
    assert any(
        not is_allowed(list(path[:n]), allowed)
        for path, n in zip(
            free.viterbi_decode(potentials, lengths)[0].numpy(), lengths, strict=True
        )
        if n
    ), "the test's weights should tempt an unconstrained CRF"
    for path, length in zip(tags.numpy(), lengths, strict=True):
        if length:
            assert is_allowed(list(path[:length]), allowed), (scheme, path[:length])
    for b in range(4):  # the best allowed path, by enumeration
        length = min(int(lengths[b]), 4)
        short = potentials[b : b + 1, :length] if length else potentials[b : b + 1, :1]
        got, got_score = crf.viterbi_decode(short, [length])
        paths, path_scores = enumerate_paths(
            short[0].astype(np.float64), length, *weights_of(crf), allowed=allowed
        )
        np.testing.assert_array_equal(got.numpy()[0, :length], paths[int(np.argmax(path_scores))])
        np.testing.assert_allclose(got_score.numpy()[0], path_scores.max(), atol=1e-5)
    # The log-likelihood ignores the constraints (documented): it equals the free CRF's.
    gold = rng.integers(0, len(tag_set), size=(64, 6))
    np.testing.assert_allclose(
        crf.log_likelihood(potentials, gold, lengths).numpy(),
        free.log_likelihood(potentials, gold, lengths).numpy(),
        rtol=1e-6,
    )


def test_xla_and_graph_equal_eager_with_dynamic_time():
    rng = np.random.default_rng(11)
    crf = make_crf(4, seed=2)
    potentials, tags, lengths = random_batch(rng, 4, 9, batch=5)
    coefficients = np.ones(5, np.float32)
    expected = ll_and_gradients(crf, potentials, tags, lengths, coefficients)
    expected_decode = crf.viterbi_decode(potentials, lengths)

    def run(potentials, tags, lengths):
        log_likelihood, gradients = ll_and_gradients(crf, potentials, tags, lengths, coefficients)
        return log_likelihood, gradients, crf.viterbi_decode(potentials, lengths)

    dynamic = tf.TensorSpec([None, None, 4], tf.float32), *[tf.TensorSpec(None, tf.int32)] * 2
    for function in (
        tf.function(run, jit_compile=True),
        tf.function(run, input_signature=[dynamic[0], tf.TensorSpec([None, None], tf.int32),
                                          tf.TensorSpec([None], tf.int32)]),
    ):  # fmt: skip
        log_likelihood, gradients, (decoded, scores) = function(potentials, tags, lengths)
        np.testing.assert_allclose(log_likelihood.numpy(), expected[0].numpy(), atol=1e-5)
        for got, want in zip(gradients, expected[1], strict=True):
            np.testing.assert_allclose(
                tf.convert_to_tensor(got).numpy(), tf.convert_to_tensor(want).numpy(), atol=1e-5
            )
        np.testing.assert_array_equal(decoded.numpy(), expected_decode[0].numpy())
        np.testing.assert_allclose(scores.numpy(), expected_decode[1].numpy(), atol=1e-5)


def test_padded_steps_change_nothing():
    rng = np.random.default_rng(12)
    crf = make_crf(3, seed=4)
    potentials, tags, lengths = random_batch(rng, 3, 5)
    longer = np.concatenate([potentials, rng.normal(size=(4, 3, 3)).astype(np.float32)], 1)
    mask = np.arange(8)[None, :] < lengths[:, None]
    longer[~mask] = np.nan  # even NaN at padded steps reaches nothing
    padded_tags = np.where(mask, np.pad(tags, [[0, 0], [0, 3]]), -1)
    with tf.GradientTape() as tape:
        padded = tf.constant(longer)
        tape.watch(padded)
        log_likelihood = crf.log_likelihood(padded, padded_tags, lengths)
    gradients = tape.gradient(log_likelihood, [padded, crf.transitions])
    assert all(np.isfinite(g.numpy()).all() for g in gradients)
    np.testing.assert_allclose(
        log_likelihood.numpy(), crf.log_likelihood(potentials, tags, lengths).numpy(), atol=1e-6
    )
    decoded = crf.viterbi_decode(longer, lengths)[0].numpy()
    np.testing.assert_array_equal(decoded[:, :5], crf.viterbi_decode(potentials, lengths)[0])
    np.testing.assert_array_equal(decoded[:, 5:], 0)


def test_crf_contract(tmp_path):
    rng = np.random.default_rng(13)
    potentials, _, lengths = random_batch(rng, 4, 5)
    reference = make_crf(4, seed=9)

    def make(**kwargs):
        crf = CRF(4, **kwargs)
        crf.build()
        crf.set_weights(reference.get_weights())
        return crf

    check_module_contract(
        make,
        {"potentials": potentials, "sequence_length": lengths},
        tmp_path,
        sequence_inputs={"potentials": 1},
        output_time_axes=1,
    )


def test_head_potentials_loss_decode_and_contract(tmp_path):
    rng = np.random.default_rng(14)
    hidden = rng.normal(size=(4, 5, 6)).astype(np.float32)
    _, tags, lengths = random_batch(rng, 5, 5)
    hparams = {"num_tags": 5, "tags": BIO, "tag_scheme": "BIO", "dropout_rate": 0.2}
    head = CRFTaggingHead(hparams)
    potentials = head(hidden, sequence_length=lengths).numpy()
    dense = hidden.astype(np.float64) @ head.dense.kernel.numpy() + head.dense.bias.numpy()
    mask = np.arange(5)[None, :] < lengths[:, None]
    np.testing.assert_allclose(potentials, np.where(mask[..., None], dense, 0), atol=1e-5)
    assert not np.allclose(head(hidden, sequence_length=lengths, training=True), potentials)
    for name in WEIGHTS:
        weight = getattr(head.crf, name)
        weight.assign(rng.normal(size=weight.shape))
    expected, _ = brute_force(
        potentials.astype(np.float64), tags, lengths, weights_of(head.crf), np.ones(4)
    )
    loss = head.loss(potentials, tags, lengths)
    assert loss.shape == () and loss.dtype == tf.float32
    np.testing.assert_allclose(loss.numpy(), -expected.mean(), rtol=1e-5)
    decoded, scores = head.decode(potentials, lengths)
    want = head.crf.viterbi_decode(potentials, lengths)
    np.testing.assert_array_equal(decoded.numpy(), want[0].numpy())
    np.testing.assert_allclose(scores.numpy(), want[1].numpy())
    with tf.GradientTape() as tape:  # training reaches every weight
        loss = head.loss(head(hidden, lengths, training=True), tags, lengths)
    gradients = tape.gradient(loss, head.trainable_weights)
    assert all(g is not None and np.abs(g.numpy()).sum() > 0 for g in gradients)
    # Keras numbers a layer's default name when others of its class exist: crf_tagging_head_3.
    assert head.name.startswith("crf_tagging_head")
    assert [w.path for w in head.weights] == [
        f"{head.name}/crf/transitions",
        f"{head.name}/crf/start_transitions",
        f"{head.name}/crf/end_transitions",
        f"{head.name}/dense/kernel",
        f"{head.name}/dense/bias",
    ]

    def make(**kwargs):
        made = CRFTaggingHead(hparams, **kwargs)
        made.build(hidden.shape)
        made.set_weights(head.get_weights())
        return made

    check_module_contract(
        make,
        {"hidden_states": hidden, "sequence_length": lengths},
        tmp_path,
        sequence_inputs={"hidden_states": 1},
        output_time_axes=1,
    )


def test_bad_inputs_name_the_argument():
    crf = CRF(3)
    potentials = np.zeros((2, 4, 3), np.float32)
    tags = np.zeros((2, 4), np.int32)
    cases = [
        (lambda: crf.log_likelihood(potentials[0], tags), r"potentials .*shape \(4, 3\)"),
        (lambda: crf.viterbi_decode(np.zeros((2, 4, 5), np.float32)), r"num_tags=3.*\(2, 4, 5\)"),
        (lambda: crf.log_likelihood(potentials, tags[:, :3]), r"tags .*\(2, 3\)"),
        (lambda: crf.log_likelihood(potentials, tags.astype(float)), "tags must be int"),
        (lambda: crf.log_likelihood(potentials, tags + 3), r"tags must be in \[0, num_tags\)"),
        (lambda: crf.log_likelihood(potentials, tags - 1, [1, 0]), r"tags .*\[-1\]"),
        (lambda: crf.viterbi_decode(potentials, [5, 1]), r"sequence_length .*\[5\]"),
        (lambda: crf.viterbi_decode(potentials, [-1, 1]), r"sequence_length .*\[-1\]"),
        (lambda: crf.viterbi_decode(potentials, [[4, 1]]), r"sequence_length .*\(1, 2\)"),
        (lambda: crf.viterbi_decode(potentials, [4, 1, 1]), r"sequence_length .*\(3,\)"),
        (lambda: crf.viterbi_decode(potentials[:, :0]), "0 steps"),
    ]
    for call, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            call()
    assert not crf.built  # refused calls create nothing
    crf.log_likelihood(potentials, np.full((2, 4), -1), [0, 0])  # padded steps: anything goes

    @tf.function
    def graph(tags):
        return crf.log_likelihood(potentials, tags)

    with pytest.raises(tf.errors.InvalidArgumentError, match="tags must be in"):
        graph(tf.constant(tags + 3))


def test_bad_hparams_name_the_key():
    cases = [
        ({"num_tags": 0}, "num_tags"),
        ({"num_tags": 3, "tags": ["O", "B-X"]}, "num_tags"),
        ({"num_tags": 2, "tags": "OB"}, "tags"),
        ({"num_tags": 2, "tag_scheme": "BIO"}, "tags"),
        ({"num_tags": 2, "tags": ["O", "B-X"], "tag_scheme": "BIOES"}, "tag_scheme"),
        ({"num_tags": 2, "tags": ["O", "E-X"], "tag_scheme": "BIO"}, "tags"),
        ({"num_tags": 2, "tags": ["O", "O"], "tag_scheme": "BIO"}, "tags"),
    ]
    for cls in (CRF, CRFTaggingHead):
        for hparams, key in cases:
            with pytest.raises(HParamsError) as caught:
                cls(hparams=hparams)
            assert caught.value.path == key, (cls, hparams, str(caught.value))
    with pytest.raises(HParamsError) as caught:
        CRFTaggingHead({"dropout_rate": 1.0})
    assert caught.value.path == "dropout_rate"
    with pytest.raises(ValueError, match="num_tags=3 but hparams num_tags=4"):
        CRF(3, hparams={"num_tags": 4})
    with pytest.raises(TypeError, match="num_tags must be an int"):
        CRF("3")
    assert CRF(3).hparams.num_tags == CRF({"num_tags": 3}).hparams.num_tags == 3
