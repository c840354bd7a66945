import numpy as np
import pytest
import tensorflow as tf

from tests.core.test_attention import numpy_attention
from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import TransformerDecoder, WordEmbedder
from texkit.modules.decoders import DecoderOutput, beam_search, forced_logits, gnmt_length_penalty

RNG = np.random.default_rng(5)
VOCAB, DIM = 13, 16
BOS, EOS = 1, 2
MEMORY = RNG.normal(size=(3, 6, 7)).astype(np.float32)
MEMORY_LENGTHS = np.array([6, 2, 4], np.int32)


def small(**hparams):
    return {
        "dim": DIM,
        "num_blocks": 2,
        "multihead_attention": {"num_heads": 4, "dropout_rate": 0.0},
        "poswise_feedforward": {"dim": 24},
        "embedding_dropout": 0.0,
        "residual_dropout": 0.0,
        **hparams,
    }


def randomize(layer, seed=0):
    """Random weights everywhere (layer norms and biases included), so no part is an identity."""
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        scale = 0.4 if len(weight.shape) > 1 else 0.2
        value = rng.normal(size=weight.shape) * scale
        if weight.path.endswith("gamma"):
            value = 1.0 + value
        weight.assign(value.astype(np.float32))


def make_decoder(tied=True, **hparams):
    embedder = WordEmbedder(vocab_size=VOCAB, hparams={"dim": DIM})
    if tied:
        decoder = TransformerDecoder(output_layer=embedder, hparams=small(**hparams))
    else:
        decoder = TransformerDecoder(VOCAB, hparams=small(**hparams))
    memory = MEMORY if decoder.hparams.cross_attention else None
    lengths = MEMORY_LENGTHS if memory is not None else None
    decoder(inputs=np.ones((3, 2), np.int32), embedding=embedder, memory=memory,
            memory_sequence_length=lengths)  # fmt: skip
    randomize(embedder, 1)
    randomize(decoder, 2)
    return decoder, embedder


def memory_args(decoder):
    if decoder.hparams.cross_attention:
        return {"memory": MEMORY, "memory_sequence_length": MEMORY_LENGTHS}
    return {}


# --- an independent NumPy reference --------------------------------------------------------------


def layer_norm(x, layer):
    gamma, beta = (w.numpy().astype(np.float64) for w in layer.weights)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + layer.epsilon) * gamma + beta


def sinusoids(time, dim):
    pos = np.arange(time)[:, None].astype(np.float64)
    i = np.arange(dim)[None, :]
    angle = pos / np.power(10000.0, 2 * (i // 2) / dim)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))


def relu(x):
    return np.maximum(x, 0)


def numpy_decoder(decoder, table, ids, memory=None, memory_lengths=None, activation=relu):
    """The decoder's logits written out in NumPy from its weights."""
    hp = decoder.hparams
    if hp.position_embedder.type == "sinusoids":
        positions = sinusoids(ids.shape[1], hp.dim)
    else:
        positions = decoder.position_embedder.embedding.numpy()[: ids.shape[1]]
    scale = np.sqrt(hp.dim) if hp.scale_embeddings else 1.0
    x = table[ids] * scale + positions[None]

    def sublayer(x, norm, fn):
        if hp.norm == "post":
            return layer_norm(x + fn(x), norm)
        return x + fn(layer_norm(x, norm))

    def ffn(block, y):
        inner = activation(y @ block.ffn_inner.kernel.numpy() + block.ffn_inner.bias.numpy())
        return inner @ block.ffn_output.kernel.numpy() + block.ffn_output.bias.numpy()

    for b in decoder.blocks:
        x = sublayer(
            x, b.attention_norm, lambda y, b=b: numpy_attention(b.self_attention, y, y, None, True)
        )
        if memory is not None:
            x = sublayer(
                x,
                b.cross_attention_norm,
                lambda y, b=b: numpy_attention(b.cross_attention, y, memory, memory_lengths),
            )
        x = sublayer(x, b.ffn_norm, lambda y, b=b: ffn(b, y))
    if hp.norm == "pre":
        x = layer_norm(x, decoder.output_norm)
    return x @ table.T


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("cross", [True, False])
def test_teacher_forcing_equals_numpy_reference(norm, cross):
    decoder, embedder = make_decoder(norm=norm, cross_attention=cross)
    ids = RNG.integers(0, VOCAB, size=(3, 5)).astype(np.int32)
    outputs, state, lengths = decoder(
        inputs=ids, embedding=embedder, sequence_length=[5, 5, 5], **memory_args(decoder)
    )
    assert isinstance(outputs, DecoderOutput) and state == ()
    table = embedder.embedding.numpy().astype(np.float64)
    memory = MEMORY if cross else None
    want = numpy_decoder(decoder, table, ids, memory, MEMORY_LENGTHS)
    np.testing.assert_allclose(outputs.logits.numpy(), want, atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(outputs.sample_id, want.argmax(-1))
    np.testing.assert_array_equal(lengths, [5, 5, 5])


def test_embedding_inputs_equal_id_inputs_and_padding_is_zero():
    decoder, embedder = make_decoder()
    ids = RNG.integers(0, VOCAB, size=(3, 5)).astype(np.int32)
    by_ids, _, _ = decoder(inputs=ids, embedding=embedder, sequence_length=[5, 3, 1],
                           **memory_args(decoder))  # fmt: skip
    by_vectors, _, _ = decoder(inputs=embedder(ids), sequence_length=[5, 3, 1],
                               **memory_args(decoder))  # fmt: skip
    np.testing.assert_allclose(by_ids.logits, by_vectors.logits, atol=1e-6)
    assert not np.any(by_ids.logits.numpy()[1, 3:]) and not np.any(by_ids.sample_id[2, 1:])


# --- incremental decoding with the cache -----------------------------------------------------


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("cross", [True, False])
def test_cached_greedy_steps_equal_recomputing_the_prefix(norm, cross):
    """At every step, the cached step's logits equal the logits of the whole prefix recomputed
    from scratch by teacher forcing (max abs diff <= 1e-5)."""
    decoder, embedder = make_decoder(norm=norm, cross_attention=cross)
    steps = 7
    outputs, _, lengths = decoder(
        decoding_strategy="infer_greedy", embedding=embedder, start_tokens=[BOS] * 3,
        end_token=EOS, max_decoding_length=steps, **memory_args(decoder),
    )  # fmt: skip
    tokens = np.concatenate([np.full((3, 1), BOS), outputs.sample_id.numpy()], axis=1)
    for t in range(steps):
        prefix, _, _ = decoder(inputs=tokens[:, : t + 1], embedding=embedder,
                               **memory_args(decoder))  # fmt: skip
        live = t < lengths.numpy()
        diff = np.abs(prefix.logits.numpy()[:, t] - outputs.logits.numpy()[:, t])[live]
        assert diff.max() <= 1e-5, f"step {t}: {diff.max()}"


def test_beam_hypotheses_score_their_recomputed_log_probabilities():
    """Every hypothesis beam search keeps (decoded with the cache, reordered between beams) scores
    the log-probability teacher forcing gives its tokens, over the GNMT penalty."""
    decoder, embedder = make_decoder()
    alpha = 0.6
    search = decoder.beam_search(4, alpha, start_tokens=[BOS] * 3, end_token=EOS,
                                 max_decoding_length=6, embedding=embedder,
                                 **memory_args(decoder))  # fmt: skip
    ids, scores, lengths = (x.numpy() for x in search)
    assert np.all(np.isfinite(scores)) and np.all(np.diff(scores, axis=1) <= 1e-6)
    for beam in range(4):
        hyp = ids[:, beam]
        inputs = np.concatenate([np.full((3, 1), BOS), hyp[:, :-1]], axis=1)
        forced, _, _ = decoder(inputs=inputs, embedding=embedder, **memory_args(decoder))
        log_probs = tf.nn.log_softmax(forced.logits).numpy()
        picked = np.take_along_axis(log_probs, hyp[:, :, None], axis=2)[:, :, 0]
        valid = np.arange(6)[None] < lengths[:, beam, None]
        total = np.where(valid, picked, 0).sum(1)
        want = total / gnmt_length_penalty(lengths[:, beam], alpha).numpy()
        np.testing.assert_allclose(scores[:, beam], want, atol=1e-5)


def test_beam_width_one_and_top_k_one_equal_greedy():
    decoder, embedder = make_decoder()
    common = {"start_tokens": [BOS] * 3, "end_token": EOS, "max_decoding_length": 6,
              "embedding": embedder, **memory_args(decoder)}  # fmt: skip
    greedy, _, lengths = decoder(decoding_strategy="infer_greedy", **common)
    sampled, _, _ = decoder(decoding_strategy="infer_sample", top_k=1, seed=3, **common)
    np.testing.assert_array_equal(sampled.sample_id, greedy.sample_id)
    search = decoder.beam_search(1, **common)
    np.testing.assert_array_equal(search.ids[:, 0], greedy.sample_id)
    np.testing.assert_array_equal(search.lengths[:, 0], lengths)


def test_causality_future_tokens_never_change_earlier_outputs():
    decoder, embedder = make_decoder()
    ids = RNG.integers(0, VOCAB, size=(3, 6)).astype(np.int32)
    base, _, _ = decoder(inputs=ids, embedding=embedder, **memory_args(decoder))
    for t in range(6):
        changed = ids.copy()
        changed[:, t:] = (changed[:, t:] + 1 + RNG.integers(0, VOCAB - 1, size=(3, 6 - t))) % VOCAB
        again, _, _ = decoder(inputs=changed, embedding=embedder, **memory_args(decoder))
        np.testing.assert_allclose(again.logits[:, :t], base.logits[:, :t], atol=1e-6)
        assert not np.allclose(again.logits[:, t], base.logits[:, t])


def test_memory_padding_changes_nothing_in_training_or_decoding():
    decoder, embedder = make_decoder()
    padded = np.concatenate([MEMORY, RNG.normal(size=(3, 3, 7)).astype(np.float32) * 9], axis=1)
    garbage = padded.copy()
    for row, length in enumerate(MEMORY_LENGTHS):
        garbage[row, length:] = RNG.normal(size=garbage[row, length:].shape) * 9
    ids = RNG.integers(0, VOCAB, size=(3, 5)).astype(np.int32)
    for memory in (padded, garbage):
        args = {"memory": memory, "memory_sequence_length": MEMORY_LENGTHS, "embedding": embedder}
        base, _, _ = decoder(inputs=ids, **memory_args(decoder), embedding=embedder)
        got, _, _ = decoder(inputs=ids, **args)
        np.testing.assert_allclose(got.logits, base.logits, atol=1e-5)
        search = decoder.beam_search(3, 0.6, [BOS] * 3, EOS, 6, **args)
        want = decoder.beam_search(3, 0.6, [BOS] * 3, EOS, 6, embedding=embedder,
                                   **memory_args(decoder))  # fmt: skip
        np.testing.assert_array_equal(search.ids, want.ids)


@pytest.mark.parametrize("strategy", ["infer_greedy", "infer_sample", "beam"])
def test_decoding_compiles_with_xla_and_matches_eager(strategy):
    decoder, embedder = make_decoder()
    common = {"start_tokens": [BOS] * 3, "end_token": EOS, "max_decoding_length": 8,
              "embedding": embedder, **memory_args(decoder)}  # fmt: skip

    def run():
        if strategy == "beam":
            return decoder.beam_search(3, 0.6, **common)
        outputs, _, lengths = decoder(decoding_strategy=strategy, seed=4, **common)
        return outputs, lengths

    eager = run()
    compiled = tf.function(run, jit_compile=True)()
    if strategy == "infer_sample":  # XLA draws other random numbers: only the shapes agree
        for a, b in zip(tf.nest.flatten(compiled), tf.nest.flatten(eager), strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype
        return
    for a, b in zip(tf.nest.flatten(compiled), tf.nest.flatten(eager), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)


# --- prompts ---------------------------------------------------------------------------------


def test_context_is_forced_then_continued_greedily():
    decoder, embedder = make_decoder(cross_attention=False)
    context = np.array([[BOS, 5, 6, 7], [BOS, 8, 0, 0], [BOS, 0, 0, 0]], np.int32)
    context_lengths = np.array([4, 2, 1])
    outputs, _, lengths = decoder(
        decoding_strategy="infer_greedy", embedding=embedder, context=context,
        context_sequence_length=context_lengths, end_token=EOS, max_decoding_length=9,
    )  # fmt: skip
    ids = outputs.sample_id.numpy()
    for row, length in enumerate(context_lengths):
        np.testing.assert_array_equal(ids[row, : length - 1], context[row, 1:length])
    # The continuation is greedy given the prompt: each free token is the argmax of the logits
    # teacher forcing gives the sequence so far.
    tokens = np.concatenate([context[:, :1], ids], axis=1)
    forced, _, _ = decoder(inputs=tokens[:, :-1], embedding=embedder)
    for row, length in enumerate(context_lengths):
        free = slice(length - 1, lengths[row])
        np.testing.assert_array_equal(ids[row, free], forced.sample_id.numpy()[row, free])
        np.testing.assert_allclose(
            outputs.logits.numpy()[row, free], forced.logits.numpy()[row, free], atol=1e-5
        )
    # Beam search keeps the prompt in every hypothesis.
    search = decoder.beam_search(
        3,
        0.0,
        end_token=EOS,
        max_decoding_length=9,
        embedding=embedder,
        context=context,
        context_sequence_length=context_lengths,
    )
    for row, length in enumerate(context_lengths):
        for beam in range(3):
            np.testing.assert_array_equal(
                search.ids.numpy()[row, beam, : length - 1], context[row, 1:length]
            )


PROMPTS = np.array([[BOS, 5, 6, 7], [BOS, 8, 0, 0], [BOS, 3, 9, 0]], np.int32)
PROMPT_LENGTHS = np.array([4, 2, 3], np.int32)


def recomputing_step(decoder, embedder, max_length):
    """A step function for the generic algorithms that keeps the tokens so far in its state and
    runs teacher forcing on the whole prefix at every step (no cache), forcing prompts the way
    the decoder documents it."""

    def step(tokens, time, state):
        ids = tf.where(tf.range(max_length)[None, :] == time, tokens[:, None], state["ids"])
        memory = {}
        if "memory" in state:
            memory = {"memory": state["memory"], "memory_sequence_length": state["memory_length"]}
        outputs, _, _ = decoder(inputs=ids[:, : time + 1], embedding=embedder, **memory)
        logits = outputs.logits[:, time]
        if "context" in state:
            forced = time + 1 < state["context_length"]
            token = tf.gather(state["context"], tf.minimum(time + 1, 3), axis=1)
            logits = tf.where(forced[:, None], forced_logits(token, VOCAB), logits)
        return logits, {**state, "ids": ids}

    return step


@pytest.mark.parametrize("cross", [True, False])
@pytest.mark.parametrize("prompted", [True, False])
def test_beam_search_equals_a_search_that_recomputes_every_prefix(cross, prompted):
    """The decoder's beam search (prompts run in one pass, caches left in place and read through
    the ancestry table, one memory per example) finds the hypotheses and scores of the generic
    beam search over a step that recomputes each hypothesis' whole prefix and whose state
    (tokens, memory, prompts) is tiled and gathered like any other."""
    decoder, embedder = make_decoder(cross_attention=cross)
    max_length, beams = 7, 3
    state = {"ids": tf.zeros([3, max_length], tf.int32)}
    if cross:
        state.update(memory=tf.constant(MEMORY), memory_length=tf.constant(MEMORY_LENGTHS))
    prompt = {"start_tokens": [BOS] * 3}
    if prompted:
        state.update(context=tf.constant(PROMPTS), context_length=tf.constant(PROMPT_LENGTHS))
        prompt = {"context": PROMPTS, "context_sequence_length": PROMPT_LENGTHS}
    want = beam_search(
        recomputing_step(decoder, embedder, max_length), [BOS] * 3, EOS, max_length, state,
        beams, 0.6,
    )  # fmt: skip
    got = decoder.beam_search(
        beams, 0.6, end_token=EOS, max_decoding_length=max_length, embedding=embedder,
        **memory_args(decoder), **prompt,
    )  # fmt: skip
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.lengths, want.lengths)
    np.testing.assert_allclose(got.scores, want.scores, atol=1e-5)
    if prompted:
        for row, length in enumerate(PROMPT_LENGTHS):
            assert (got.ids.numpy()[row, :, : length - 1] == PROMPTS[row, 1:length]).all()


def test_an_end_token_inside_a_prompt_ends_its_row_there():
    decoder, embedder = make_decoder(cross_attention=False)
    context = np.array([[BOS, 5, EOS, 7], [BOS, 8, 9, 4]], np.int32)
    outputs, _, lengths = decoder(
        decoding_strategy="infer_greedy", embedding=embedder, context=context, end_token=EOS,
        max_decoding_length=6,
    )  # fmt: skip
    np.testing.assert_array_equal(lengths, [2, 6])
    np.testing.assert_array_equal(outputs.sample_id.numpy()[0], [5, EOS, EOS, EOS, EOS, EOS])
    # The other row is decoded as if alone.
    alone, _, _ = decoder(
        decoding_strategy="infer_greedy", embedding=embedder, context=context[1:],
        end_token=EOS, max_decoding_length=6,
    )  # fmt: skip
    np.testing.assert_array_equal(outputs.sample_id[1], alone.sample_id[0])
    np.testing.assert_allclose(outputs.logits[1], alone.logits[0], atol=1e-5)
    search = decoder.beam_search(
        2, 0.0, end_token=EOS, max_decoding_length=6, embedding=embedder, context=context[:1]
    )
    np.testing.assert_array_equal(search.ids.numpy()[0, 0, :2], [5, EOS])
    # The best hypothesis is the prompt (log-probability 0); any other spends a forced-out token.
    assert search.scores.numpy()[0, 0] == 0.0 and search.scores.numpy()[0, 1] < -1e8


# --- the module contract, mixed precision, tying, errors -------------------------------------


def test_decoder_contract(tmp_path):
    inputs = RNG.normal(size=(3, 5, DIM)).astype(np.float32)

    def factory(**kwargs):
        return TransformerDecoder(VOCAB, hparams=small(), **kwargs)

    check_module_contract(
        factory,
        {
            "inputs": inputs,
            "sequence_length": np.array([5, 3, 1], np.int32),
            "memory": MEMORY,
            "memory_sequence_length": MEMORY_LENGTHS,
        },  # fmt: skip
        tmp_path,
        sequence_inputs={"inputs": 1},
        output_time_axes=(DecoderOutput(1, 1, 1), (), None),
        float32_outputs=(DecoderOutput(True, False, True), (), False),
    )


def test_mixed_bfloat16_decoding_in_a_graph():
    decoder = TransformerDecoder(VOCAB, hparams=small(), dtype="mixed_bfloat16")
    embedding = RNG.normal(size=(VOCAB, DIM)).astype(np.float32)

    @tf.function(jit_compile=True)
    def run():
        outputs, _, lengths = decoder(
            decoding_strategy="infer_greedy", embedding=embedding, start_tokens=[BOS] * 3,
            end_token=EOS, max_decoding_length=5, **memory_args(decoder),
        )  # fmt: skip
        search = decoder.beam_search(2, 0.6, [BOS] * 3, EOS, 5, embedding=embedding,
                                     **memory_args(decoder))  # fmt: skip
        return outputs.logits, search.scores

    logits, scores = run()
    assert logits.dtype == tf.float32 and np.all(np.isfinite(scores.numpy()))
    assert all(w.dtype == "float32" for w in decoder.weights)


def test_tied_output_shares_the_embedding_table():
    decoder, embedder = make_decoder()
    table_paths = [w.path for w in decoder.weights if w.path.endswith("embedding")]
    assert table_paths == [embedder.embedding.path]  # tracked once, not copied
    ids = RNG.integers(0, VOCAB, size=(3, 4)).astype(np.int32)
    before, _, _ = decoder(inputs=ids, embedding=embedder, **memory_args(decoder))
    embedder.embedding.assign(embedder.embedding * 2.0)
    after, _, _ = decoder(inputs=ids, embedding=embedder, **memory_args(decoder))
    assert not np.allclose(before.logits, after.logits)
    with pytest.raises(NotImplementedError, match="GPT2Decoder"):
        decoder.get_config()


def test_dropout_applies_in_training_only():
    embedder = WordEmbedder(vocab_size=VOCAB, hparams={"dim": DIM})
    decoder = TransformerDecoder(
        output_layer=embedder, hparams={**small(), "residual_dropout": 0.3}
    )
    ids = RNG.integers(0, VOCAB, size=(3, 4)).astype(np.int32)
    a, _, _ = decoder(inputs=ids, embedding=embedder, **memory_args(decoder))
    b, _, _ = decoder(inputs=ids, embedding=embedder, **memory_args(decoder))
    np.testing.assert_array_equal(a.logits, b.logits)
    c, _, _ = decoder(inputs=ids, embedding=embedder, training=True, **memory_args(decoder))
    assert not np.allclose(a.logits, c.logits)


def test_every_hparam_is_documented():
    assert undocumented_hparams(TransformerDecoder) == ([], [])


def test_errors_name_the_problem():
    decoder, embedder = make_decoder()
    ids = np.ones((3, 4), np.int32)
    with pytest.raises(ValueError, match="needs `memory`"):
        decoder(inputs=ids, embedding=embedder)
    with pytest.raises(ValueError, match="token ids need `embedding`"):
        decoder(inputs=ids, **memory_args(decoder))
    with pytest.raises(ValueError, match="exactly one of start_tokens and context"):
        decoder(decoding_strategy="infer_greedy", embedding=embedder, end_token=EOS,
                **memory_args(decoder))  # fmt: skip
    # No end token: every sequence runs all the steps asked for.
    outputs, _, lengths = decoder(decoding_strategy="infer_greedy", embedding=embedder,
                                  start_tokens=[1, 1, 1], max_decoding_length=5,
                                  **memory_args(decoder))  # fmt: skip
    np.testing.assert_array_equal(lengths, [5, 5, 5])
    assert outputs.sample_id.shape == (3, 5)
    with pytest.raises(ValueError, match="decoding_strategy"):
        decoder(decoding_strategy="beam", **memory_args(decoder))
    with pytest.raises(ValueError, match="expected dim=16"):
        decoder(inputs=np.zeros((3, 4, 5), np.float32), **memory_args(decoder))
    with pytest.raises(ValueError, match="does not fit in max_decoding_length=3"):
        decoder(decoding_strategy="infer_greedy", embedding=embedder, context=np.ones((3, 4)),
                end_token=EOS, max_decoding_length=3, **memory_args(decoder))  # fmt: skip
    lm, lm_embedder = make_decoder(
        cross_attention=False, position_embedder={"type": "learned", "position_size": 6}
    )
    with pytest.raises(ValueError, match="got a memory, but cross_attention is false"):
        lm(inputs=ids, embedding=lm_embedder, memory=MEMORY)
    with pytest.raises(ValueError, match="exceed position_embedder.position_size=6"):
        lm(decoding_strategy="infer_greedy", embedding=lm_embedder, start_tokens=[1, 1, 1],
           end_token=EOS, max_decoding_length=7)  # fmt: skip
    with pytest.raises(HParamsError, match="position_embedder.position_size"):
        TransformerDecoder(VOCAB, hparams=small(position_embedder={"type": "learned"}))
    with pytest.raises(HParamsError, match="position_embedder.type"):
        TransformerDecoder(VOCAB, hparams=small(position_embedder={"type": "rotary"}))
    with pytest.raises(HParamsError, match="multihead_attention.num_heads"):
        TransformerDecoder(VOCAB, hparams=small(multihead_attention={"num_heads": 5}))
    with pytest.raises(ValueError, match="tied embedder has dim=8"):
        TransformerDecoder(output_layer=WordEmbedder(vocab_size=5, hparams={"dim": 8}),
                           hparams=small())  # fmt: skip
    with pytest.raises(ValueError, match="vocab_size must be a positive int"):
        TransformerDecoder(hparams=small())
