"""The strategies that feed a decoder its own choices: train_sample, scheduled_sampling and
gumbel_softmax, for every decoder, under XLA.

Independent checks: scheduled sampling with probability 0 is teacher forcing and with
probability 1 is train_sample; the tokens train_sample feeds are its recorded samples (teacher
forcing on them gives the same logits); drawn tokens follow the softmax (chi-square); a
Gumbel-softmax sample approaches one-hot as the temperature falls, straight-through's forward is
the one-hot; gradients reach the decoder's weights and the embedding and are finite.
"""

import numpy as np
import pytest
import tensorflow as tf

from texkit.modules import T5EncoderDecoder, WordEmbedder
from texkit.modules.decoders import (
    AttentionRNNDecoder,
    BasicRNNDecoder,
    GPT2Decoder,
    LlamaDecoder,
    TransformerDecoder,
)
from texkit.modules.decoders.decoder_base import STRATEGIES

VOCAB, BOS, EOS = 11, 1, 2
BATCH, TIME, MAX_LENGTH = 3, 5, 6
LENGTHS = np.array([5, 3, 4], np.int32)
IDS = np.random.default_rng(0).integers(3, VOCAB, size=(BATCH, TIME)).astype(np.int32)
IDS[:, 0] = BOS
MEMORY = np.random.default_rng(1).normal(size=(BATCH, 4, 6)).astype(np.float32)
MEMORY_LENGTHS = np.array([4, 2, 3], np.int32)

DECODERS = ("basic_rnn", "attention_rnn", "transformer", "gpt2", "llama", "t5")
TRAIN = ("train_greedy", "train_sample", "scheduled_sampling")


class Case:
    """A small decoder, the arguments every call takes, and the embedding table it feeds."""

    def __init__(self, name):
        tf.random.set_seed(0)
        self.common = {}
        embedder = WordEmbedder(vocab_size=VOCAB, hparams={"dim": 8})
        if name == "basic_rnn":
            self.decoder = BasicRNNDecoder(VOCAB, hparams={"rnn_cell": {"kwargs": {"units": 8}}})
        elif name == "attention_rnn":
            self.decoder = AttentionRNNDecoder(VOCAB, hparams={
                "rnn_cell": {"kwargs": {"units": 8}},
                "attention": {"kwargs": {"units": 8}},
            })  # fmt: skip
            self.common = {"memory": MEMORY, "memory_sequence_length": MEMORY_LENGTHS}
        elif name == "transformer":
            self.decoder = TransformerDecoder(VOCAB, hparams={
                "dim": 8, "num_blocks": 1, "multihead_attention": {"num_heads": 2},
                "poswise_feedforward": {"dim": 16}, "embedding_dropout": 0.0,
                "residual_dropout": 0.0,
            })  # fmt: skip
            self.common = {"memory": MEMORY, "memory_sequence_length": MEMORY_LENGTHS}
        elif name == "gpt2":
            self.decoder = GPT2Decoder({
                "vocab_size": VOCAB, "dim": 8,
                "decoder": {"num_blocks": 1, "multihead_attention": {"num_heads": 2},
                            "poswise_feedforward": {"dim": 16},
                            "position_embedder": {"position_size": 16}},
            })  # fmt: skip
            embedder = self.decoder.word_embedder
        elif name == "llama":
            self.decoder = LlamaDecoder({
                "vocab_size": VOCAB, "dim": 8, "num_blocks": 2,
                "attention": {"num_heads": 2, "num_kv_heads": 1, "sliding_window": 3,
                              "layer_types": ["sliding_attention", "full_attention"]},
                "feed_forward": {"dim": 16}, "max_position_embeddings": 16,
                "rotary": {"scaling": {"rope_type": "longrope", "short_factor": [1.0, 2.0],
                                       "long_factor": [3.0, 4.0],
                                       "original_max_position_embeddings": 4}},
            })  # fmt: skip
            embedder = self.decoder.word_embedder
        else:
            t5 = T5EncoderDecoder({
                "vocab_size": VOCAB, "d_model": 8, "d_kv": 4, "d_ff": 16, "num_layers": 1,
                "num_heads": 2, "dropout_rate": 0.0, "relative_attention_num_buckets": 4,
                "relative_attention_max_distance": 8,
            })  # fmt: skip
            self.decoder = t5.decoder
            embedder = t5.shared
            memory = t5.encode(IDS, LENGTHS)
            self.common = {"memory": memory, "memory_sequence_length": LENGTHS}
        if name not in ("gpt2", "llama", "t5"):
            self.common["embedding"] = embedder
        self.embedder = embedder
        # Build everything.
        self.decoder(inputs=IDS, sequence_length=LENGTHS, **self.common)

    def train(self, strategy, ids=IDS, **kwargs):
        return self.decoder(inputs=ids, sequence_length=LENGTHS, decoding_strategy=strategy,
                            **self.common, **kwargs)  # fmt: skip

    def infer(self, strategy, **kwargs):
        return self.decoder(decoding_strategy=strategy, start_tokens=tf.fill([BATCH], BOS),
                            end_token=EOS, max_decoding_length=MAX_LENGTH, **self.common,
                            **kwargs)  # fmt: skip


_CASES = {}


def case_of(name):
    if name not in _CASES:
        _CASES[name] = Case(name)
    return _CASES[name]


def valid_mask():
    return np.arange(TIME)[None, :] < LENGTHS[:, None]


@pytest.mark.parametrize("name", DECODERS)
def test_every_strategy_compiles_with_xla_and_returns_one_type(name):
    case = case_of(name)

    @tf.function(jit_compile=True)
    def run(probability):
        results = {}
        for strategy in STRATEGIES:
            if strategy in TRAIN:
                extra = {"seed": 3} if strategy != "train_greedy" else {}
                if strategy == "scheduled_sampling":
                    extra["sampling_probability"] = probability
                results[strategy] = case.train(strategy, **extra)
            else:
                extra = {"seed": 3} if strategy != "infer_greedy" else {}
                results[strategy] = case.infer(strategy, **extra)
        return results

    results = run(tf.constant(0.5))
    kinds = {type(outputs) for outputs, _, _ in results.values()}
    assert len(kinds) == 1, kinds
    reference = results["train_greedy"]
    for strategy, (outputs, state, lengths) in results.items():
        tf.nest.assert_same_structure((outputs, state, lengths), reference)
        time = TIME if strategy in TRAIN else MAX_LENGTH
        assert outputs.logits.shape == (BATCH, time, VOCAB), strategy
        assert outputs.sample_id.shape == (BATCH, time) and outputs.sample_id.dtype == tf.int32
        assert outputs.soft_sample.shape == (BATCH, time, VOCAB), strategy
        assert outputs.soft_sample.dtype == tf.float32 and lengths.shape == (BATCH,)
        assert np.isfinite(outputs.logits.numpy()).all() and np.isfinite(outputs.soft_sample).all()
        if strategy != "gumbel_softmax":  # the one-hot of the choices
            ids = outputs.sample_id.numpy()
            mask = outputs.soft_sample.numpy().sum(-1) > 0
            one_hot = np.eye(VOCAB)[np.maximum(ids, 0)] * mask[..., None]
            np.testing.assert_array_equal(outputs.soft_sample, one_hot)


@pytest.mark.parametrize("name", DECODERS)
def test_scheduled_sampling_at_probability_0_is_teacher_forcing(name):
    case = case_of(name)
    forced, _, _ = case.train("train_greedy")
    scheduled, _, lengths = case.train("scheduled_sampling", sampling_probability=0.0, seed=5)
    valid = valid_mask()
    np.testing.assert_array_equal(lengths, LENGTHS)
    np.testing.assert_allclose(
        scheduled.logits.numpy()[valid], forced.logits.numpy()[valid], atol=1e-5, rtol=1e-5
    )
    # No token was sampled: -1 on every valid step (Texar's convention), 0 past the lengths.
    np.testing.assert_array_equal(scheduled.sample_id, np.where(valid, -1, 0))
    assert not scheduled.soft_sample.numpy().any()
    assert not scheduled.logits.numpy()[~valid].any()


@pytest.mark.parametrize("name", DECODERS)
def test_scheduled_sampling_at_probability_1_is_train_sample(name):
    case = case_of(name)
    sampled, _, _ = case.train("train_sample", seed=7)
    scheduled, _, _ = case.train("scheduled_sampling", sampling_probability=1.0, seed=7)
    np.testing.assert_array_equal(scheduled.logits, sampled.logits)
    np.testing.assert_array_equal(scheduled.sample_id, sampled.sample_id)
    np.testing.assert_array_equal(scheduled.soft_sample, sampled.soft_sample)
    # Between 0 and 1, some fed tokens are samples and some the ground truth.
    half, _, _ = case.train("scheduled_sampling", sampling_probability=tf.constant(0.5), seed=7)
    fed = half.sample_id.numpy()[valid_mask()]
    assert (fed == -1).any() and (fed >= 0).any()


@pytest.mark.parametrize("name", DECODERS)
def test_train_sample_feeds_its_recorded_samples(name):
    case = case_of(name)
    sampled, _, _ = case.train("train_sample", seed=11)
    ids = sampled.sample_id.numpy()
    valid = valid_mask()
    assert ((ids >= 0) & (ids < VOCAB))[valid].all() and not ids[~valid].any()
    # Teacher forcing on what was fed (the first input, then each step's sample) gives the same
    # logits at every step.
    fed = np.concatenate([IDS[:, :1], ids[:, :-1]], axis=1)
    forced, _, _ = case.train("train_greedy", ids=fed)
    np.testing.assert_allclose(
        forced.logits.numpy()[valid], sampled.logits.numpy()[valid], atol=1e-5, rtol=1e-5
    )
    assert not (ids[valid] == np.argmax(sampled.logits.numpy(), -1)[valid]).all()


def chi_square(counts, probabilities):
    expected = probabilities * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


# The 99.9% quantile of chi-square with VOCAB - 1 = 10 degrees of freedom.
CHI2_10_999 = 29.59


def peaked_rnn_decoder():
    """A BasicRNNDecoder whose logits are far from uniform (its output bias is set)."""
    tf.random.set_seed(1)
    decoder = BasicRNNDecoder(VOCAB, hparams={"rnn_cell": {"kwargs": {"units": 8}}})
    embedder = WordEmbedder(vocab_size=VOCAB, hparams={"dim": 8})
    decoder(inputs=embedder(IDS))
    decoder.output_layer.bias.assign(np.linspace(-2.0, 2.0, VOCAB).astype(np.float32))
    return decoder, embedder


def test_sampled_tokens_follow_the_softmax():
    decoder, embedder = peaked_rnn_decoder()
    rows = 4000
    inputs = np.full((rows, 2), BOS, np.int32)  # every row's first step sees the same input
    common = {"inputs": inputs, "embedding": embedder, "seed": 13}
    sampled, _, _ = decoder(decoding_strategy="train_sample", **common)
    probabilities = tf.nn.softmax(sampled.logits[0, 0]).numpy()
    counts = np.bincount(sampled.sample_id[:, 0].numpy(), minlength=VOCAB)
    assert chi_square(counts, probabilities) < CHI2_10_999, (counts, probabilities)
    # The second step: rows fed the same sample share their logits, and draw from them.
    first = sampled.sample_id[:, 0].numpy()
    token = np.argmax(counts)
    rows_of_token = first == token
    probabilities = tf.nn.softmax(sampled.logits[np.argmax(rows_of_token), 1]).numpy()
    counts = np.bincount(sampled.sample_id[:, 1].numpy()[rows_of_token], minlength=VOCAB)
    assert chi_square(counts, probabilities) < CHI2_10_999
    # Scheduled sampling's coin: the fraction of fed samples is the probability (4 sigma).
    scheduled, _, _ = decoder(
        decoding_strategy="scheduled_sampling", sampling_probability=0.3, **common
    )
    fraction = float(np.mean(scheduled.sample_id.numpy() >= 0))
    assert abs(fraction - 0.3) < 4 * np.sqrt(0.3 * 0.7 / (2 * rows)), fraction
    # The argmax of a Gumbel-softmax sample is a sample of the softmax (the Gumbel-max trick).
    gumbel, _, _ = decoder(
        decoding_strategy="gumbel_softmax", embedding=embedder, start_tokens=inputs[:, 0],
        end_token=EOS, max_decoding_length=1, softmax_temperature=0.5, seed=17,
    )  # fmt: skip
    probabilities = tf.nn.softmax(gumbel.logits[0, 0]).numpy()
    counts = np.bincount(gumbel.sample_id[:, 0].numpy(), minlength=VOCAB)
    assert chi_square(counts, probabilities) < CHI2_10_999, (counts, probabilities)


def valid_steps(outputs, lengths):
    return np.arange(outputs.sample_id.shape[1])[None, :] < lengths.numpy()[:, None]


@pytest.mark.parametrize("name", ["basic_rnn", "transformer"])
def test_gumbel_softmax_approaches_one_hot_and_straight_through_is_one_hot(name):
    case = case_of(name)
    sharpness = []
    for temperature in (1.0, 0.1, 1e-4):
        outputs, _, lengths = case.infer("gumbel_softmax", softmax_temperature=temperature, seed=1)
        valid = valid_steps(outputs, lengths)
        soft = outputs.soft_sample.numpy()
        np.testing.assert_allclose(soft.sum(-1)[valid], 1.0, rtol=1e-5)
        assert not soft[~valid].any()
        np.testing.assert_array_equal(soft.argmax(-1)[valid], outputs.sample_id.numpy()[valid])
        sharpness.append(float(soft.max(-1)[valid].mean()))
    # The same noise at every temperature: the samples sharpen towards the one-hot.
    assert sharpness[0] < sharpness[1] < sharpness[2] and sharpness[2] > 0.97, sharpness
    assert sharpness[0] < 0.9
    hard, _, lengths = case.infer(
        "gumbel_softmax", softmax_temperature=1.0, straight_through=True, seed=1
    )
    valid = valid_steps(hard, lengths)
    one_hot = np.eye(VOCAB, dtype=np.float32)[hard.sample_id.numpy()] * valid[..., None]
    np.testing.assert_array_equal(hard.soft_sample, one_hot)
    # The same noise: straight-through changes what is fed, not the first choice.
    np.testing.assert_array_equal(hard.sample_id[:, 0], outputs.sample_id[:, 0])


@pytest.mark.parametrize("name", DECODERS)
def test_gradients_reach_the_decoder_and_the_embedding(name):
    case = case_of(name)
    decoder_variables = [v for v in case.decoder.trainable_variables
                         if v is not case.embedder.embedding]  # fmt: skip
    variables = [case.embedder.embedding, *decoder_variables]
    weights = tf.random.stateless_normal([BATCH, MAX_LENGTH, VOCAB], [0, 1])

    def gradients(straight_through):
        with tf.GradientTape() as tape:
            soft, _, _ = case.infer("gumbel_softmax", softmax_temperature=0.7,
                                    straight_through=straight_through, seed=2)  # fmt: skip
            loss = tf.reduce_sum(soft.soft_sample * weights)
            sampled, _, _ = case.train("scheduled_sampling", sampling_probability=0.5, seed=2)
            loss += tf.reduce_sum(tf.nn.log_softmax(sampled.logits)[..., 3])
        return tape.gradient(loss, variables)

    # Under XLA for a recurrent decoder and GPT-2 (compiling the gradients of the loops is what
    # takes time here), eagerly for the others and for the soft samples.
    modes = (False, True)
    if name in ("basic_rnn", "gpt2"):
        gradients, modes = tf.function(gradients, jit_compile=True), (True,)
    for straight_through in modes:
        grads = gradients(straight_through)
        missing = [v.path for v, g in zip(variables, grads, strict=True) if g is None]
        assert not missing, missing
        grads = [tf.convert_to_tensor(g).numpy() for g in grads]
        assert all(np.isfinite(g).all() for g in grads)
        assert sum(float(np.abs(g).sum()) > 0 for g in grads[1:]) >= len(grads[1:]) // 2
        # The rows of tokens never fed by id reach the embedding only through the soft samples.
        assert np.abs(grads[0][[0, 4, 5, 6]]).sum() > 0


def test_a_tensor_probability_does_not_retrace():
    case = case_of("basic_rnn")

    @tf.function(jit_compile=True)
    def run(probability):
        outputs, _, _ = case.train("scheduled_sampling", sampling_probability=probability, seed=1)
        return outputs.sample_id

    never = run(tf.constant(0.0)).numpy()
    always = run(tf.constant(1.0)).numpy()
    assert run.experimental_get_tracing_count() == 1
    valid = valid_mask()
    assert (never[valid] == -1).all() and (always[valid] >= 0).all()


def test_errors_name_the_argument():
    case = case_of("basic_rnn")
    with pytest.raises(ValueError, match="train_sample.*scheduled_sampling.*gumbel_softmax"):
        case.train("teacher_forcing")
    for probability in (-0.1, 1.5, [0.2, 2.0, 0.1]):
        with pytest.raises(ValueError, match=r"sampling_probability must be in \[0, 1\]"):
            case.train("scheduled_sampling", sampling_probability=probability)
    with pytest.raises(ValueError, match="scheduled_sampling needs sampling_probability"):
        case.train("scheduled_sampling")
    with pytest.raises(ValueError, match="sampling_probability is for"):
        case.train("train_sample", sampling_probability=0.5)
    for temperature in (0.0, -1.0):
        with pytest.raises(ValueError, match="softmax_temperature must be positive"):
            case.infer("gumbel_softmax", softmax_temperature=temperature)
        with pytest.raises(ValueError, match="softmax_temperature must be positive"):
            case.train("train_sample", softmax_temperature=temperature)
    with pytest.raises(ValueError, match="straight_through is for"):
        case.infer("infer_sample", straight_through=True)

    # A probability known only when the graph runs is checked then (not under XLA).
    @tf.function
    def run(probability):
        return case.train("scheduled_sampling", sampling_probability=probability)[0].logits

    with pytest.raises(tf.errors.InvalidArgumentError, match="sampling_probability"):
        run(tf.constant(1.5))


def test_embedded_inputs_feed_like_token_ids():
    case = case_of("attention_rnn")
    from_ids, _, _ = case.train("train_sample", seed=4)
    embedded = case.embedder(IDS)
    from_vectors, _, _ = case.train("train_sample", ids=embedded, seed=4)
    np.testing.assert_array_equal(from_vectors.sample_id, from_ids.sample_id)
    np.testing.assert_allclose(from_vectors.logits, from_ids.logits, atol=1e-6)


def test_gumbel_softmax_after_prompts_forces_them():
    case = case_of("gpt2")
    context = IDS[:, :3]
    outputs, _, lengths = case.decoder(
        decoding_strategy="gumbel_softmax", context=context, context_sequence_length=[3, 2, 3],
        end_token=EOS, max_decoding_length=MAX_LENGTH, softmax_temperature=0.5, seed=3,
    )  # fmt: skip
    ids, soft = outputs.sample_id.numpy(), outputs.soft_sample.numpy()
    # The prompts' tokens after the first are the first steps' choices, fed as their one-hots.
    np.testing.assert_array_equal(ids[:, 0], context[:, 1])
    np.testing.assert_array_equal(ids[[0, 2], 1], context[[0, 2], 2])
    np.testing.assert_array_equal(soft[:, 0], np.eye(VOCAB)[context[:, 1]])
    assert (lengths.numpy() >= [2, 1, 2]).all()
