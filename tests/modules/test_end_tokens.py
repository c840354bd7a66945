"""Several end ids: ``end_token`` a list or a 1-D tensor ends a sequence at the first of them.

Independent checks: a decoding with ``end_token=[a, b]`` equals an unbounded decoding (its end
id never emitted) cut, row by row, at the first ``a`` or ``b`` and padded with ``a``; ``a`` and
``b`` are taken from that unbounded run so that each of them ends some row. Beam search with
several ids ends every early hypothesis with one of them, and with ``[a]`` equals ``end_token=a``.
"""

import numpy as np
import pytest
import tensorflow as tf

from texkit.modules import WordEmbedder
from texkit.modules.decoders import BasicRNNDecoder, GPT2Decoder, TransformerDecoder

VOCAB, BATCH, LENGTH = 40, 6, 10
START = np.arange(3, 3 + BATCH, dtype=np.int32)
MEMORY = np.random.default_rng(1).normal(size=(BATCH, 4, 8)).astype(np.float32)
DECODERS = ("transformer", "basic_rnn", "gpt2")
BLOCK = {"num_blocks": 1, "multihead_attention": {"num_heads": 2},
         "poswise_feedforward": {"dim": 16}}  # fmt: skip
_CASES = {}


class Case:
    """A small decoder with fixed weights and the arguments every call takes."""

    def __init__(self, name):
        tf.random.set_seed(0)
        self.common = {"embedding": WordEmbedder(vocab_size=VOCAB, hparams={"dim": 8})}
        if name == "basic_rnn":
            self.decoder = BasicRNNDecoder(VOCAB, hparams={"rnn_cell": {"kwargs": {"units": 8}}})
        elif name == "transformer":
            self.decoder = TransformerDecoder(VOCAB, hparams={"dim": 8, **BLOCK})
            self.common["memory"] = MEMORY
        else:
            self.decoder = GPT2Decoder({"vocab_size": VOCAB, "dim": 8, "decoder": {
                **BLOCK, "position_embedder": {"position_size": 16}}})  # fmt: skip
            self.common = {}


def case_of(name):
    if name not in _CASES:
        _CASES[name] = Case(name)
    return _CASES[name]


def decode(case, strategy, end_token, **kwargs):
    outputs, _, lengths = case.decoder(
        decoding_strategy=strategy, start_tokens=START, end_token=end_token,
        max_decoding_length=LENGTH, **case.common, **kwargs,
    )  # fmt: skip
    return outputs.sample_id.numpy(), lengths.numpy()


def unbounded(case, strategy, **kwargs):
    """A run whose end id it never emits, so every row decodes ``LENGTH`` tokens."""
    for never in range(VOCAB - 1, -1, -1):
        ids, lengths = decode(case, strategy, never, **kwargs)
        if not (ids == never).any():
            assert (lengths == LENGTH).all()
            return ids
    raise AssertionError("every id occurs in the run")


def first_end(row, ends):
    hits = [t for t, token in enumerate(row) if token in ends]
    return hits[0] if hits else None


def two_ends(ids):
    """``(a, b)``: two ids of the run such that each is the first of the pair in some row."""
    tokens = sorted(set(ids.ravel().tolist()))
    for a in tokens:
        for b in tokens:
            ts = [(row, first_end(row, (a, b))) for row in ids]
            firsts = {row[t] for row, t in ts if t is not None}
            if a != b and firsts == {a, b}:
                return a, b
    pytest.skip("no two ids that both end a row in this run")


def cut(ids, ends):
    """The unbounded run cut at the first of ``ends`` in each row, padded with ``ends[0]``."""
    expected, lengths = np.full_like(ids, ends[0]), np.full(len(ids), LENGTH)
    for r, row in enumerate(ids):
        t = first_end(row, ends)
        stop = LENGTH if t is None else t + 1
        expected[r, :stop], lengths[r] = row[:stop], stop
    return expected, lengths


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("strategy", ["infer_greedy", "infer_sample", "gumbel_softmax"])
def test_several_end_ids_cut_the_unbounded_run_at_the_first(name, strategy):
    case = case_of(name)
    kwargs = {} if strategy == "infer_greedy" else {"seed": 7}
    ids = unbounded(case, strategy, **kwargs)
    a, b = two_ends(ids)
    expected, expected_lengths = cut(ids, (a, b))
    assert (expected_lengths < LENGTH).any()
    for end_token in ([a, b], (a, b), tf.constant([a, b]), tf.constant([a, b], tf.int64)):
        got, lengths = decode(case, strategy, end_token, **kwargs)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(lengths, expected_lengths)
    one, one_lengths = decode(case, strategy, [a], **kwargs)
    single, single_lengths = decode(case, strategy, a, **kwargs)
    np.testing.assert_array_equal(one, single)
    np.testing.assert_array_equal(one_lengths, single_lengths)


@pytest.mark.parametrize("name", ["transformer", "basic_rnn"])
def test_greedy_with_several_end_ids_compiles_with_xla(name):
    case = case_of(name)
    a, b = two_ends(unbounded(case, "infer_greedy"))
    expected = decode(case, "infer_greedy", [a, b])

    @tf.function(jit_compile=True)
    def run(end_token):
        outputs, _, lengths = case.decoder(
            decoding_strategy="infer_greedy", start_tokens=START,
            end_token=end_token, max_decoding_length=LENGTH, **case.common,
        )  # fmt: skip
        return outputs.sample_id, lengths

    got = run(tf.constant([a, b]))
    np.testing.assert_array_equal(got[0].numpy(), expected[0])
    np.testing.assert_array_equal(got[1].numpy(), expected[1])


def beam(case, end_token):
    return case.decoder.beam_search(
        3, 0.6, start_tokens=START, end_token=end_token,
        max_decoding_length=LENGTH, **case.common,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["transformer", "basic_rnn"])
def test_beam_search_hypotheses_end_with_one_of_the_ids(name):
    case = case_of(name)
    a, b = two_ends(unbounded(case, "infer_greedy"))
    search = beam(case, [a, b])
    ids, lengths = search.ids.numpy(), search.lengths.numpy()
    early = 0
    for r in range(BATCH):
        for k in range(3):
            n = lengths[r, k]
            if 0 < n < LENGTH:
                early += 1
                assert ids[r, k, n - 1] in (a, b)
                assert not set(ids[r, k, : n - 1].tolist()) & {a, b}
                assert (ids[r, k, n:] == a).all()
    assert early > 0
    one, single = beam(case, [a]), beam(case, a)
    for x, y in zip(one, single, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize(
    "end_token",
    [[], [1.5], -1, [2, -1], VOCAB, [2, VOCAB], 2.0, "2", tf.constant([[1, 2]]),
     tf.constant([1.0, 2.0]), tf.zeros([0], tf.int32), tf.constant([2, VOCAB])],
)  # fmt: skip
def test_bad_end_tokens_are_refused_naming_end_token(end_token):
    case = case_of("transformer")
    with pytest.raises(ValueError, match="end_token"):
        decode(case, "infer_greedy", end_token)
    with pytest.raises(ValueError, match="end_token"):
        beam(case, end_token)


def test_any_end_id_inside_a_prompt_ends_its_row_there():
    case = case_of("gpt2")
    context = np.array([[1, 5, 31, 7], [1, 8, 30, 4]], np.int32)
    outputs, _, lengths = case.decoder(
        decoding_strategy="infer_greedy", context=context, end_token=[30, 31],
        max_decoding_length=6,
    )  # fmt: skip
    np.testing.assert_array_equal(lengths, [2, 2])
    np.testing.assert_array_equal(outputs.sample_id.numpy(), [[5, 31, 30, 30, 30, 30],
                                                              [8, 30, 30, 30, 30, 30]])  # fmt: skip
    search = case.decoder.beam_search(2, 0.0, end_token=[30, 31], context=context[:1],
                                      max_decoding_length=6)  # fmt: skip
    np.testing.assert_array_equal(search.ids.numpy()[0, 0, :2], [5, 31])
    assert search.scores.numpy()[0, 0] == 0.0
