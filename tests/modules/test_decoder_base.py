"""DecoderBase: one dispatch and one set of argument checks for every decoder, weights from build.

A counting decoder (its logits pick ``token + 1`` at every step) checks the dispatch against
what the algorithms must produce by hand; the real decoders check that they all answer the same
misuse with the same error, and that ``build`` alone creates every weight a call uses.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from texkit.modules import WordEmbedder
from texkit.modules.decoders import (
    AttentionRNNDecoder,
    BasicRNNDecoder,
    DecoderOutput,
    GPT2Decoder,
    TransformerDecoder,
)
from texkit.modules.decoders.decoder_base import STRATEGIES, DecoderBase, Inference

VOCAB, DIM, EOS = 7, 8, 6
MEMORY = np.random.default_rng(0).normal(size=(2, 3, 5)).astype(np.float32)


class CountingDecoder(DecoderBase):
    """Next token = previous + 1 (so from start token s it ends at EOS after EOS - s steps)."""

    def __init__(self, **kwargs):
        super().__init__({"max_decoding_length_infer": 10, "name": "counting"}, **kwargs)
        self.vocab_size, self.output_layer = VOCAB, None
        self.inference_calls = []

    @classmethod
    def default_hparams(cls):
        return {"max_decoding_length_infer": 10, "name": "counting"}

    def _parts_built(self, memory_shape):
        return True

    def _teacher_forcing(self, request):
        logits = tf.one_hot(tf.minimum(request.inputs + 1, VOCAB - 1), VOCAB)
        ids = tf.argmax(logits, -1, output_type=tf.int32)
        return DecoderOutput(logits, ids, tf.one_hot(ids, VOCAB)), (), None

    def _inference(self, request):
        self.inference_calls.append((request.max_length, request.beam_width))

        def step(token_ids, time, state):
            return tf.one_hot(tf.minimum(token_ids + 1, VOCAB - 1), VOCAB) * 10.0, state

        start = tf.cast(request.start_tokens, tf.int32)
        return Inference(step, {"zeros": tf.zeros_like(start)}, start)

    def _inference_outputs(self, result):
        return DecoderOutput(result.logits, result.sample_id, result.soft_sample), ()


def test_dispatch_runs_each_strategy_through_the_algorithms():
    decoder = CountingDecoder()
    outputs, state, lengths = decoder(decoding_strategy="infer_greedy", start_tokens=[2, 4],
                                      end_token=EOS)  # fmt: skip
    np.testing.assert_array_equal(lengths, [4, 2])  # 3 4 5 6 and 5 6
    np.testing.assert_array_equal(outputs.sample_id[0, :4], [3, 4, 5, 6])
    assert outputs.sample_id.shape == (2, 10) and state == ()  # max_decoding_length_infer
    sampled, _, _ = decoder(decoding_strategy="infer_sample", start_tokens=[2, 4], end_token=EOS,
                            max_decoding_length=5, seed=3)  # fmt: skip
    np.testing.assert_array_equal(sampled.sample_id[:, :2], [[3, 4], [5, 6]])
    search = decoder.beam_search(3, 0.0, start_tokens=[2, 4], end_token=EOS)
    np.testing.assert_array_equal(search.ids[:, 0, :2], [[3, 4], [5, 6]])
    assert decoder.inference_calls == [(10, None), (5, None), (10, 3)]
    trained, _, _ = decoder(inputs=tf.constant([[1, 2]]))
    np.testing.assert_array_equal(trained.sample_id, [[2, 3]])
    assert STRATEGIES == (
        "train_greedy", "train_sample", "scheduled_sampling", "infer_greedy", "infer_sample",
        "gumbel_softmax",
    )  # fmt: skip


def test_the_algorithms_run_under_xla_through_the_base():
    decoder = CountingDecoder()

    @tf.function(jit_compile=True)
    def greedy(start):
        return decoder(decoding_strategy="infer_greedy", start_tokens=start, end_token=EOS)[2]

    np.testing.assert_array_equal(greedy(tf.constant([2, 4])), [4, 2])


def _decoders():
    embedder = WordEmbedder(vocab_size=VOCAB, hparams={"dim": DIM})
    cell = {"rnn_cell": {"type": "GRUCell", "kwargs": {"units": 6}}}
    attention = {**cell, "attention": {"kwargs": {"units": 6}}}
    small = {"dim": DIM, "num_blocks": 1, "multihead_attention": {"num_heads": 2},
             "poswise_feedforward": {"dim": 16}}  # fmt: skip
    gpt2 = {"vocab_size": VOCAB, "dim": DIM,
            "decoder": {"num_blocks": 1, "multihead_attention": {"num_heads": 2},
                        "poswise_feedforward": {"dim": 16},
                        "position_embedder": {"position_size": 16}}}  # fmt: skip
    return {
        "basic": (BasicRNNDecoder(VOCAB, hparams=cell), {"embedding": embedder}),
        "attention": (
            AttentionRNNDecoder(VOCAB, hparams=attention),
            {"embedding": embedder, "memory": MEMORY},
        ),
        "transformer": (
            TransformerDecoder(VOCAB, hparams=small),
            {"embedding": embedder, "memory": MEMORY},
        ),
        "gpt2": (GPT2Decoder(gpt2), {}),
    }


@pytest.mark.parametrize("kind", ["basic", "attention", "transformer", "gpt2"])
def test_every_decoder_answers_misuse_the_same_way(kind):
    decoder, args = _decoders()[kind]
    start = {"start_tokens": [1, 1], "end_token": EOS}
    with pytest.raises(ValueError, match=f"{decoder.name}: decoding_strategy must be one of"):
        decoder(decoding_strategy="infer_beam", **args, **start)
    # Without start tokens (or prompts); end_token=None is no end token, not a misuse.
    with pytest.raises(ValueError, match="needs start_tokens|exactly one of start_tokens"):
        decoder(decoding_strategy="infer_greedy", end_token=EOS, **args)
    with pytest.raises(ValueError, match="max_decoding_length must be a positive Python int"):
        decoder(decoding_strategy="infer_greedy", max_decoding_length=0, **args, **start)
    with pytest.raises(ValueError, match="beam_width must be a positive int, got 0"):
        decoder.beam_search(0, start_tokens=[1, 1], end_token=EOS, **args)
    if decoder.ACCEPTS_CONTEXT:
        with pytest.raises(ValueError, match="exactly one of start_tokens and context"):
            decoder(decoding_strategy="infer_greedy", end_token=EOS, **args)
    else:
        with pytest.raises(ValueError, match="takes no context"):
            decoder(decoding_strategy="infer_greedy", context=[[1, 2]] * 2, **args, **start)
    if not decoder.ACCEPTS_INITIAL_STATE:
        with pytest.raises(ValueError, match="takes no initial_state"):
            decoder(decoding_strategy="infer_greedy", initial_state=tf.zeros([2, 6]), **args,
                    **start)  # fmt: skip
    if "memory" not in args:
        with pytest.raises(ValueError, match="memory"):
            decoder(decoding_strategy="infer_greedy", memory=MEMORY, **args, **start)


@pytest.mark.parametrize("kind", ["basic", "attention", "transformer", "gpt2"])
def test_build_creates_every_weight_a_call_uses(kind):
    decoder, args = _decoders()[kind]
    embedder = args.get("embedding")
    if embedder is not None:
        embedder.build()
    decoder.build((None, None, DIM), memory_shape=None if "memory" not in args else MEMORY.shape)
    built = {w.path for w in decoder.weights}
    assert built, "build created no weight"
    outputs, _, _ = decoder(decoding_strategy="infer_greedy", start_tokens=[1, 1], end_token=EOS,
                            max_decoding_length=4, **args)  # fmt: skip
    decoder.beam_search(2, start_tokens=[1, 1], end_token=EOS, max_decoding_length=4, **args)
    assert {w.path for w in decoder.weights} == built  # the calls created nothing
    assert outputs.logits.shape == (2, 4, VOCAB)


def _unnumbered(weights):
    # Keras numbers repeated layer names (gru_cell_3): compare names without the numbers.
    return sorted((re.sub(r"_\d+(?=/|$)", "", w.path), tuple(w.shape)) for w in weights)


@pytest.mark.parametrize("kind", ["basic", "attention"])
def test_an_inference_call_builds_the_decoder_through_build(kind):
    # In inference Keras sees no inputs' shape; the call builds the decoder once the embedding
    # says the step input's size, and the weights are those build makes.
    decoder, args = _decoders()[kind]
    decoder(decoding_strategy="infer_greedy", start_tokens=[1, 1], end_token=EOS, **args)
    fresh, fresh_args = _decoders()[kind]
    fresh.build((None, None, DIM), memory_shape=None if "memory" not in args else MEMORY.shape)
    assert _unnumbered(decoder.weights) == _unnumbered(fresh.weights)


def test_a_new_strategy_is_one_function_and_one_row(monkeypatch):
    """A strategy added in a test (top-1 sampling) runs through ``decoder(...)`` with its row's
    checks, and picks at every step the argmax of the teacher-forced logits of its own prefix."""
    from texkit.modules.decoders.decoding import sample_decode
    from texkit.modules.decoders.strategies import STRATEGY_TABLE, Strategy, run_inference

    def infer_top1(decoder, request):
        return run_inference(decoder, request, lambda run, loop: sample_decode(
            run.step, run.start_tokens, top_k=1, seed=request.seed, **loop))  # fmt: skip

    monkeypatch.setitem(STRATEGY_TABLE, "infer_top1", Strategy(infer_top1, "start"))
    embedder = WordEmbedder(vocab_size=VOCAB, hparams={"dim": DIM})
    decoder = TransformerDecoder(output_layer=embedder, hparams={
        "dim": DIM, "num_blocks": 1, "multihead_attention": {"num_heads": 2},
        "poswise_feedforward": {"dim": 16}, "cross_attention": False})  # fmt: skip
    start = tf.constant([1, 3])
    outputs, _, lengths = decoder(
        decoding_strategy="infer_top1", embedding=embedder, start_tokens=start, end_token=EOS,
        max_decoding_length=5,
    )  # fmt: skip
    ids = outputs.sample_id.numpy()
    prefix = tf.concat([start[:, None], ids[:, :-1]], axis=1)
    forced, _, _ = decoder(inputs=prefix, embedding=embedder)
    expected = np.argmax(forced.logits.numpy(), -1)
    for row, length in enumerate(lengths.numpy()):
        np.testing.assert_array_equal(ids[row, :length], expected[row, :length])
    with pytest.raises(ValueError, match="sampling_probability is for"):
        decoder(decoding_strategy="infer_top1", embedding=embedder, start_tokens=start,
                end_token=EOS, sampling_probability=0.5)  # fmt: skip
