"""texkit against Texar-PyTorch 0.1.4, on the same weights and inputs.

The reference numbers come from ``tests/fixtures/texar_torch/`` (made by ``make_fixture.py`` there,
in a separate environment with Texar-PyTorch; see its docstring). Each test builds the texkit
equivalent of a Texar-PyTorch module, copies Texar's weights in and compares the outputs to 1e-5
(max absolute difference). Nothing here imports torch or Texar.

Weight layouts: a torch ``Linear`` stores ``[out, in]``, a Keras kernel ``[in, out]``. torch's LSTM
gates are ``i, f, g, o`` like Keras' ``i, f, c, o``, with two biases (input and recurrent) that
Keras keeps as one sum. torch's GRU is Keras' ``GRUCell(reset_after=True)`` (the default) with
the gates in the order ``r, z, n`` instead of ``z, r, h``, and the two biases stacked
``[2, 3 * units]``. A torch ``Conv1d`` kernel is ``[out, in, width]``, a Keras one
``[width, in, out]``.

Where texkit departs from Texar-PyTorch on purpose, the test either configures texkit to match
(saying so) or asserts the departure's exact prediction.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from texkit import losses
from texkit.modules import (
    AttentionRNNDecoder,
    BasicRNNDecoder,
    BidirectionalRNNEncoder,
    ConstantConnector,
    Conv1DClassifier,
    ForwardConnector,
    MLPTransformConnector,
    SinusoidsPositionEmbedder,
    TransformerDecoder,
    TransformerEncoder,
    UnidirectionalRNNEncoder,
    WordEmbedder,
)
from texkit.modules.decoders import beam_search

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "texar_torch"
META = json.loads((FIXTURES / "hparams.json").read_text())
ATOL = 1e-5


def load(case: str) -> dict:
    with np.load(FIXTURES / f"{case}.npz") as data:
        return {key: data[key] for key in data.files}


def assert_close(actual, expected, atol: float = ATOL) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol)


def valid_steps(lengths) -> np.ndarray:
    """[batch, time] mask of the steps before each length (time from the longest length)."""
    lengths = np.asarray(lengths)
    return np.arange(lengths.max())[None, :] < lengths[:, None]


def dense(layer, fixture: dict, name: str, bias: bool = True) -> None:
    """Copies a torch Linear ``name`` into a built Keras Dense ``layer``."""
    layer.kernel.assign(fixture[f"w/{name}.weight"].T)
    if bias:
        layer.bias.assign(fixture[f"w/{name}.bias"])


def lstm(cell, fixture: dict, name: str) -> None:
    """torch LSTMCell ``name`` -> Keras LSTMCell: same gate order, the two biases summed."""
    cell.kernel.assign(fixture[f"w/{name}.weight_ih"].T)
    cell.recurrent_kernel.assign(fixture[f"w/{name}.weight_hh"].T)
    cell.bias.assign(fixture[f"w/{name}.bias_ih"] + fixture[f"w/{name}.bias_hh"])


def _gru_order(weight: np.ndarray) -> np.ndarray:
    reset, update, new = np.split(weight, 3, axis=0)
    return np.concatenate([update, reset, new], axis=0)


def gru(cell, fixture: dict, name: str) -> None:
    """torch GRUCell ``name`` -> Keras GRUCell(reset_after=True): gates r,z,n -> z,r,h."""
    assert cell.reset_after
    cell.kernel.assign(_gru_order(fixture[f"w/{name}.weight_ih"]).T)
    cell.recurrent_kernel.assign(_gru_order(fixture[f"w/{name}.weight_hh"]).T)
    cell.bias.assign(
        np.stack(
            [_gru_order(fixture[f"w/{name}.bias_ih"]), _gru_order(fixture[f"w/{name}.bias_hh"])]
        )
    )


def layer_norm(layer, fixture: dict, name: str) -> None:
    layer.gamma.assign(fixture[f"w/{name}.weight"])
    layer.beta.assign(fixture[f"w/{name}.bias"])


def texkit_cell(texar_cell: dict) -> dict:
    """A Texar ``rnn_cell`` entry in texkit's terms (``num_units`` is Keras' ``units``)."""
    return {"type": texar_cell["type"], "kwargs": {"units": texar_cell["kwargs"]["num_units"]}}


# --- embedder and encoders -------------------------------------------------------------------


def test_word_embedder():
    fixture = load("word_embedder")
    embedder = WordEmbedder(
        init_value=fixture["w/_embedding"], hparams=META["word_embedder"]["hparams"]
    )
    assert_close(embedder(tf.constant(fixture["ids"])), fixture["outputs"])


def _copy_cell(cell, fixture: dict, name: str) -> None:
    (lstm if "LSTM" in type(cell).__name__ else gru)(cell, fixture, name)


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell"])
def test_unidirectional_rnn_encoder(cell):
    fixture = load(f"uni_{cell}")
    encoder = UnidirectionalRNNEncoder(
        {"rnn_cell": texkit_cell(META[f"uni_{cell}"]["hparams"]["rnn_cell"])}
    )
    inputs, lengths = tf.constant(fixture["inputs"]), tf.constant(fixture["lengths"])
    encoder(inputs, sequence_length=lengths)
    _copy_cell(encoder.rnn.cell, fixture, "_cell._cell")
    outputs, state = encoder(inputs, sequence_length=lengths)
    assert_close(outputs, fixture["outputs"])  # both zero past each length
    assert len(state) == (2 if cell == "LSTMCell" else 1)  # [h, c] or [h], as Texar's (h, c) or h
    for index, part in enumerate(state):
        assert_close(part, fixture[f"state_{index}"])


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell"])
def test_bidirectional_rnn_encoder(cell):
    fixture = load(f"bi_{cell}")
    encoder = BidirectionalRNNEncoder(
        {"rnn_cell_fw": texkit_cell(META[f"bi_{cell}"]["hparams"]["rnn_cell_fw"])}
    )
    inputs, lengths = tf.constant(fixture["inputs"]), tf.constant(fixture["lengths"])
    encoder(inputs, sequence_length=lengths)
    _copy_cell(encoder.rnn_fw.cell, fixture, "_cell_fw._cell")
    _copy_cell(encoder.rnn_bw.cell, fixture, "_cell_bw._cell")
    (out_fw, out_bw), (state_fw, state_bw) = encoder(inputs, sequence_length=lengths)
    assert_close(out_fw, fixture["outputs_fw"])
    assert_close(out_bw, fixture["outputs_bw"])
    for prefix, state in (("fw", state_fw), ("bw", state_bw)):
        for index, part in enumerate(state):
            assert_close(part, fixture[f"state_{prefix}_{index}"])


# --- RNN decoders ----------------------------------------------------------------------------


def _compare_decoding(outputs, lengths, fixture: dict, prefix: str, max_time: int | None = None):
    """Logits and ids at the steps each sequence decoded (Texar computes garbage past them)."""
    expected_lengths = fixture[f"{prefix}_lengths"]
    assert_close(lengths, expected_lengths)
    valid = valid_steps(expected_lengths)
    time = valid.shape[1]
    logits = np.asarray(outputs.logits)[:, :time]
    sample_id = np.asarray(outputs.sample_id)[:, :time]
    expected_logits = fixture[f"{prefix}_logits"][:, :time]
    assert_close(
        np.where(valid[:, :, None], logits, 0), np.where(valid[:, :, None], expected_logits, 0)
    )
    np.testing.assert_array_equal(
        np.where(valid, sample_id, -1),
        np.where(valid, fixture[f"{prefix}_sample_id"][:, :time], -1),
    )
    if f"{prefix}_attention_scores" in fixture:
        scores = np.asarray(outputs.attention_scores)[:, :time]
        expected = fixture[f"{prefix}_attention_scores"][:, :time]
        assert_close(
            np.where(valid[:, :, None], scores, 0), np.where(valid[:, :, None], expected, 0)
        )


def _compare_final_state(state, fixture: dict, prefix: str) -> None:
    """texkit's final state of a batch against Texar's of each sequence decoded alone (texkit
    keeps each sequence's state from its own end on; Texar's batch state would be that of the
    last step, see make_fixture.py)."""
    cell_state = state.cell_state if hasattr(state, "cell_state") else state
    assert_close(cell_state[0], fixture[f"{prefix}_final_h"])
    assert_close(cell_state[1], fixture[f"{prefix}_final_c"])
    if hasattr(state, "attention"):
        assert_close(state.attention, fixture[f"{prefix}_final_attention"])
        assert_close(state.alignments, fixture[f"{prefix}_final_alignments"])


def test_basic_rnn_decoder():
    fixture = load("basic_rnn_decoder")
    meta = META["basic_rnn_decoder"]
    vocab = fixture["w/_output_layer.bias"].shape[0]
    decoder = BasicRNNDecoder(vocab, hparams={"rnn_cell": texkit_cell(meta["hparams"]["rnn_cell"])})
    embedding = tf.constant(fixture["w/_token_embedder._embedding"])
    initial_state = [tf.constant(fixture["initial_h"]), tf.constant(fixture["initial_c"])]
    train = {
        "inputs": tf.constant(fixture["ids"]),
        "sequence_length": fixture["lengths"],
        "embedding": embedding,
        "initial_state": initial_state,
    }
    decoder(**train)
    lstm(decoder.cell, fixture, "_cell._cell")
    dense(decoder.output_layer, fixture, "_output_layer")

    outputs, state, lengths = decoder(**train)
    _compare_decoding(outputs, lengths, fixture, "train")
    _compare_final_state(state, fixture, "train")
    outputs, state, lengths = decoder(
        decoding_strategy="infer_greedy",
        embedding=embedding,
        initial_state=initial_state,
        start_tokens=fixture["start_tokens"],
        end_token=meta["end_token"],
        max_decoding_length=meta["max_decoding_length"],
    )
    _compare_decoding(outputs, lengths, fixture, "greedy")
    _compare_final_state(state, fixture, "greedy")


def _texkit_attention(texar_attention: dict) -> dict:
    kwargs = texar_attention["kwargs"]
    if texar_attention["type"] == "LuongAttention":
        # Texar's Luong score is the "general" one, q . (W m), with W of num_units outputs.
        kwargs = {
            "units": kwargs["num_units"],
            "score": "general",
            "scale": kwargs.get("scale", False),
        }
    else:
        kwargs = {"units": kwargs["num_units"], "normalize": kwargs.get("normalize", False)}
    layer_size = texar_attention.get("attention_layer_size")
    hparams = {
        "type": texar_attention["type"],
        "kwargs": kwargs,
        "attention_layer_size": layer_size,
        # Texar's attention layer is linear; so is texkit's default (None). Said explicitly.
        "attention_layer_activation": None,
        "output_attention": True,
    }
    if "use_attention_layer" in AttentionRNNDecoder.default_hparams()["attention"]:
        # texkit departs from Texar's default on purpose (its docstring): it uses an attention
        # layer unless told not to. Without attention_layer_size, Texar's a_t is the context alone.
        hparams["use_attention_layer"] = layer_size is not None
    return hparams


def _attention_decoder(case: str) -> tuple[AttentionRNNDecoder, dict, dict]:
    fixture = load(case)
    meta = META[case]
    vocab = fixture["w/_output_layer.bias"].shape[0]
    decoder = AttentionRNNDecoder(vocab, hparams={
        "rnn_cell": texkit_cell(meta["hparams"]["rnn_cell"]),
        "attention": _texkit_attention(meta["hparams"]["attention"]),
    })  # fmt: skip
    memory = {
        "memory": tf.constant(fixture["memory"]),
        "memory_sequence_length": fixture["memory_lengths"],
    }
    embedding = tf.constant(fixture["w/_token_embedder._embedding"])
    decoder(
        inputs=tf.constant(fixture["ids"]),
        sequence_length=fixture["lengths"],
        embedding=embedding,
        **memory,
    )
    lstm(decoder.cell, fixture, "_cell._cell._cell")
    dense(decoder.output_layer, fixture, "_output_layer")
    mechanism = decoder.attention_mechanism
    mechanism.memory_kernel.assign(fixture["w/attention_mechanism._memory_layer.weight"].T)
    if "w/attention_mechanism.attention_v" in fixture:  # Bahdanau
        mechanism.query_kernel.assign(fixture["w/attention_mechanism._query_layer.weight"].T)
        mechanism.attention_v.assign(fixture["w/attention_mechanism.attention_v"])
        if mechanism.normalize:
            mechanism.attention_g.assign(fixture["w/attention_mechanism.attention_g"])
            mechanism.attention_b.assign(fixture["w/attention_mechanism.attention_b"])
    elif mechanism.scale:  # Luong's learned scalar
        mechanism.scale_weight.assign(fixture["w/attention_mechanism.attention_g"])
    if decoder.attention_layer is not None:
        # Both feed [cell_output; context] to a linear layer without bias.
        dense(decoder.attention_layer, fixture, "_cell._attention_layers.0", bias=False)
    return decoder, fixture, {"embedding": embedding, **memory}


@pytest.mark.parametrize(
    "case",
    ["luong", "luong_layer", "luong_scaled", "bahdanau", "bahdanau_layer", "bahdanau_normalized"],
)
def test_attention_rnn_decoder(case):
    decoder, fixture, common = _attention_decoder(f"attention_{case}")
    meta = META[f"attention_{case}"]
    outputs, state, lengths = decoder(
        inputs=tf.constant(fixture["ids"]), sequence_length=fixture["lengths"], **common
    )
    _compare_decoding(outputs, lengths, fixture, "train")
    _compare_final_state(state, fixture, "train")
    outputs, state, lengths = decoder(
        decoding_strategy="infer_greedy", start_tokens=fixture["start_tokens"],
        end_token=meta["end_token"], max_decoding_length=meta["max_decoding_length"], **common,
    )  # fmt: skip
    _compare_decoding(outputs, lengths, fixture, "greedy")
    _compare_final_state(state, fixture, "greedy")


# --- beam search -----------------------------------------------------------------------------


def _gnmt(length, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


def _texar_best(
    texar_ids, texar_scores, example: int, end_token: int, max_length: int, alpha: float
) -> tuple[np.ndarray, float, bool]:
    """Texar's best hypothesis of ``example``: ``(ids up to the end, score, ended)``.

    Texar returns, per example, its finished hypotheses (length-penalized scores, ids padded with
    0 after the end token) if any hypothesis ended, else its live ones with their raw
    log-probabilities; texkit counts a hypothesis that reaches ``max_decoding_length`` as
    finished and scores it with that length's penalty, so that is the score it is compared with.
    """
    row = texar_ids[example, 0]
    if (row == end_token).any():
        length = int(np.argmax(row == end_token)) + 1
        return row[:length], float(texar_scores[example, 0]), True
    return row, float(texar_scores[example, 0]) / _gnmt(max_length, alpha), False


def _compare_beams(
    result, texar_ids, texar_scores, end_token: int, max_length: int, alpha: float, log_prob
) -> dict[int, str]:
    """texkit's best hypothesis against Texar-PyTorch's (tensor2tensor's beam search).

    The two searches differ on purpose (texkit's ``beam_search`` docstring), in two ways:

    * ``"pruned"``: tensor2tensor extends its live hypotheses to ``2 * beam_width`` candidates,
      moves those that end to its finished set and keeps ``beam_width`` live ones; texkit keeps
      the ``beam_width`` best candidates and one that ends takes its slot. So texkit may never
      see a hypothesis that ends where tensor2tensor does: Texar's best is then strictly better
      than texkit's.
    * ``"truncated"``: texkit counts a hypothesis that reaches ``max_decoding_length`` without the
      end token as finished, scored with that length's penalty; Texar returns only hypotheses
      that end with the end token as soon as one did. texkit's best is then such a truncated
      hypothesis that scores better than Texar's best.

    Otherwise both return the same best hypothesis with the same score. Every case is checked
    exactly: ``log_prob(example, ids)`` rescores a hypothesis under texkit's model by teacher
    forcing, which must reproduce texkit's score for texkit's best and Texar's score for
    Texar's best (so both searches ran on the same model, and the inequality is real).

    Returns ``{example: "pruned" | "truncated"}`` for the examples where the two differ.
    """
    ids, scores = np.asarray(result.ids), np.asarray(result.scores)
    lengths = np.asarray(result.lengths)
    differ = {}
    for example in range(ids.shape[0]):
        texar_best, texar_score, _ = _texar_best(
            texar_ids, texar_scores, example, end_token, max_length, alpha
        )
        best = ids[example, 0, : lengths[example, 0]]
        assert_close(scores[example, 0], log_prob(example, best) / _gnmt(len(best), alpha))
        if len(best) == len(texar_best) and (best == texar_best).all():
            assert_close(scores[example, 0], texar_score)
            continue
        texar_rescored = log_prob(example, texar_best) / _gnmt(len(texar_best), alpha)
        assert_close(texar_rescored, texar_score)
        if texar_score > scores[example, 0]:
            differ[example] = "pruned"
        else:
            assert len(best) == max_length and best[-1] != end_token
            assert texar_best[-1] == end_token
            differ[example] = "truncated"
    return differ


def _texkit_documented_beam_search(
    log_probs, start_tokens, end_token: int, max_length: int, beam_width: int, alpha: float
):
    """texkit's beam search as its docstring describes it, in plain Python, one example at a time:
    of the ``2 * beam_width`` best extensions, those among the first ``beam_width`` that end (end
    token or ``max_length``) move to the finished set (the ``beam_width`` best by
    ``log P / gnmt(length)``), and the first ``beam_width`` that do not end stay live; stop when
    nothing is live, or when the set is full and the best live hypothesis, even at the largest
    penalty, cannot beat the set's worst. ``log_probs(time, previous token) -> [vocab]``."""
    results = []
    for start in start_tokens:
        alive = [(0.0, [int(start)])]
        finished = []
        for time in range(max_length):
            candidates = [
                (score + float(log_probs(time, tokens[-1])[token]), tokens + [token])
                for score, tokens in alive
                for token in range(len(log_probs(time, tokens[-1])))
            ]
            candidates.sort(key=lambda item: -item[0])
            alive = []
            for rank, (score, tokens) in enumerate(candidates[: 2 * beam_width]):
                if tokens[-1] == end_token or time + 1 >= max_length:
                    if rank < beam_width:
                        finished.append((score / _gnmt(time + 1, alpha), tokens[1:]))
                elif len(alive) < beam_width:
                    alive.append((score, tokens))
            finished = sorted(finished, key=lambda item: -item[0])[:beam_width]
            if not alive:
                break
            best_alive = max(score for score, _ in alive) / _gnmt(max_length, alpha)
            if len(finished) == beam_width and best_alive <= finished[-1][0]:
                break
        results.append(finished)
    return results


@pytest.mark.parametrize("alpha", META["beam_search_bigram"]["alphas"])
def test_beam_search_alone(alpha):
    """The search algorithms alone, on fixed step logits: table[previous token] + time_bias[t]."""
    fixture = load("beam_search_bigram")
    meta = META["beam_search_bigram"]
    table, time_bias = tf.constant(fixture["table"]), tf.constant(fixture["time_bias"])
    # log_probs[t, previous token] = log_softmax(table[previous token] + time_bias[t])
    log_probs = np.asarray(tf.nn.log_softmax(table[None] + time_bias[:, None]))

    def step(token_ids, time, state):
        return tf.gather(table, token_ids) + time_bias[time], state

    start, end_token = fixture["start_tokens"], meta["end_token"]
    beam_width, max_length = meta["beam_width"], meta["max_decoding_length"]
    result = beam_search(
        step, start, end_token, max_length, tf.zeros([len(start), 1]), beam_width, alpha
    )
    # texkit does what its docstring says, on every hypothesis...
    expected = _texkit_documented_beam_search(
        lambda time, token: log_probs[time, token],
        start,
        end_token,
        max_length,
        beam_width,
        alpha,
    )
    for example, finished in enumerate(expected):
        for beam, (score, ids) in enumerate(finished):
            length = int(result.lengths[example, beam])
            assert length == len(ids)
            np.testing.assert_array_equal(result.ids[example, beam, :length], ids)
            assert_close(result.scores[example, beam], score)

    # ... and its best hypothesis is Texar's, or one that Texar beat (see _compare_beams).
    def log_prob(example, ids):
        previous = np.concatenate([[start[example]], ids[:-1]])
        return float(log_probs[np.arange(len(ids)), previous, ids].sum())

    differ = _compare_beams(
        result,
        fixture[f"alpha_{alpha}_ids"],
        fixture[f"alpha_{alpha}_scores"],
        end_token,
        max_length,
        alpha,
        log_prob,
    )
    assert differ == {}


def _teacher_forced_log_prob(decoder, common: dict, start_tokens):
    """``log_prob(example, ids)``: log P(ids | start token, example's memory) under ``decoder``."""

    def log_prob(example, ids):
        inputs = np.concatenate([[start_tokens[example]], ids[:-1]])[None]
        memory = {
            key: value[example : example + 1] if key != "embedding" else value
            for key, value in common.items()
        }
        outputs, _, _ = decoder(inputs=tf.constant(inputs), sequence_length=[len(ids)], **memory)
        log_probs = np.asarray(tf.nn.log_softmax(outputs.logits))[0]
        return float(log_probs[np.arange(len(ids)), ids].sum())

    return log_prob


def test_attention_rnn_decoder_beam_search():
    decoder, fixture, common = _attention_decoder("attention_luong")
    meta = META["attention_luong"]
    result = decoder.beam_search(
        meta["beam_width"], meta["length_penalty"], start_tokens=fixture["start_tokens"],
        end_token=meta["end_token"], max_decoding_length=meta["max_decoding_length"], **common,
    )  # fmt: skip
    differ = _compare_beams(
        result, fixture["beam_ids"].transpose(0, 2, 1), fixture["beam_scores"],
        meta["end_token"], meta["max_decoding_length"], meta["length_penalty"],
        _teacher_forced_log_prob(decoder, common, fixture["start_tokens"]),
    )  # fmt: skip
    # Example 1: Texar's best, the end token at once (-2.20), is the 4th most likely first step:
    # not among texkit's 3 candidates, but among tensor2tensor's 6. texkit's best scores -3.74.
    assert differ == {1: "pruned"}


# --- connectors ------------------------------------------------------------------------------


def test_connectors():
    fixture = load("connectors")
    meta = META["connectors"]
    batch = fixture["h"].shape[0]
    constant = ConstantConnector(
        meta["constant"]["output_size"], {"value": meta["constant"]["value"]}
    )
    for index, part in enumerate(constant(batch)):
        assert_close(part, fixture[f"constant_{index}"])
    state = (tf.constant(fixture["h"]), tf.constant(fixture["c"]))
    forward = ForwardConnector(meta["forward"]["output_size"])
    for index, part in enumerate(forward(state)):
        assert_close(part, fixture[f"forward_{index}"])
    for key, config in meta["mlp"].items():
        activation = "tanh" if config["activation_fn"] == "torch.tanh" else None
        connector = MLPTransformConnector(config["output_size"], {"activation_fn": activation})
        connector(state)
        dense(connector.dense, fixture, f"{key}/_linear_layer")
        for index, part in enumerate(connector(state)):
            assert_close(part, fixture[f"{key}_{index}"])


# --- Transformer -----------------------------------------------------------------------------


def _transformer_hparams(texar: dict) -> dict:
    attention = texar["multihead_attention"]
    return {
        "dim": texar["dim"],
        "num_blocks": texar["num_blocks"],
        "multihead_attention": {
            "num_heads": attention["num_heads"],
            "num_units": attention["num_units"],
            "dropout_rate": attention["dropout_rate"],
            # Texar's projections have no bias; texkit's default has them.
            "use_bias": attention["use_bias"],
        },
        "poswise_feedforward": {
            "dim": texar["poswise_feedforward"]["layers"][0]["kwargs"]["out_features"],
            "activation": {"type": "relu", "kwargs": {}},
        },
        "embedding_dropout": texar["embedding_dropout"],
        "residual_dropout": texar["residual_dropout"],
        "norm": "pre",  # Texar's order without use_bert_config: pre-norm, a final layer norm
        "layer_norm_epsilon": texar["eps"],
    }


def _attention_weights(attention, fixture: dict, name: str) -> None:
    for layer, texar_name in (
        (attention.query, "Q_dense"),
        (attention.key, "K_dense"),
        (attention.value, "V_dense"),
        (attention.output_dense, "O_dense"),
    ):
        dense(layer, fixture, f"{name}.{texar_name}", bias=False)


def _block_weights(block, fixture: dict, index: int) -> None:
    _attention_weights(block.self_attention, fixture, f"self_attns.{index}")
    layer_norm(block.attention_norm, fixture, f"self_attn_layer_norm.{index}")
    dense(block.ffn_inner, fixture, f"poswise_networks.{index}._layers.0")
    dense(block.ffn_output, fixture, f"poswise_networks.{index}._layers.3")
    layer_norm(block.ffn_norm, fixture, f"poswise_layer_norm.{index}")
    if getattr(block, "cross_attention", None) is not None:
        _attention_weights(block.cross_attention, fixture, f"enc_dec_attns.{index}")
        layer_norm(block.cross_attention_norm, fixture, f"end_dec_attn_layer_norm.{index}")


def test_transformer_encoder():
    fixture = load("transformer_encoder")
    encoder = TransformerEncoder(_transformer_hparams(META["transformer_encoder"]["hparams"]))
    inputs, lengths = tf.constant(fixture["inputs"]), tf.constant(fixture["lengths"])
    encoder(inputs, sequence_length=lengths)
    for index, block in enumerate(encoder.blocks):
        _block_weights(block, fixture, index)
    layer_norm(encoder.output_norm, fixture, "final_layer_norm")
    outputs = np.asarray(encoder(inputs, sequence_length=lengths))
    # texkit documents outputs at padded steps as meaningless: compare the valid steps.
    valid = valid_steps(fixture["lengths"])[:, :, None]
    assert_close(np.where(valid, outputs, 0), np.where(valid, fixture["outputs"], 0))


def _transformer_decoder() -> tuple[TransformerDecoder, dict, dict]:
    fixture = load("transformer_decoder")
    meta = META["transformer_decoder"]
    hparams = {
        **_transformer_hparams(meta["hparams"]),
        "cross_attention": True,
        # texkit interleaves sin/cos (Vaswani et al.); Texar-PyTorch's SinusoidsPositionEmbedder
        # concatenates them with another timescale progression. The fixture's Texar decoder
        # embeds word * sqrt(dim) + Texar's sinusoids, so texkit gets that table as learned
        # positions, and scales its word embeddings by sqrt(dim) as the fixture does.
        "position_embedder": {"type": "learned", "position_size": meta["position_size"]},
        "scale_embeddings": True,
        "output_layer_bias": meta["hparams"]["output_layer_bias"],
    }
    vocab = fixture["w/_output_layer.weight"].shape[0]
    decoder = TransformerDecoder(vocab, hparams=hparams)
    common = {
        "embedding": tf.constant(fixture["word_table"]),
        "memory": tf.constant(fixture["memory"]),
        "memory_sequence_length": fixture["memory_lengths"],
    }
    decoder(inputs=tf.constant(fixture["ids"]), sequence_length=fixture["lengths"], **common)
    for index, block in enumerate(decoder.blocks):
        _block_weights(block, fixture, index)
    layer_norm(decoder.output_norm, fixture, "final_layer_norm")
    dense(decoder.output_layer, fixture, "_output_layer", bias=hparams["output_layer_bias"])
    decoder.position_embedder.embedding.assign(fixture["position_table"])
    return decoder, fixture, common


def test_sinusoids_position_embedder_departure():
    """texkit's sinusoids are Vaswani et al.'s, sin and cos interleaved at the wavelengths
    ``10000^(2i/dim)``; Texar-PyTorch's are tensor2tensor's, all sines then all cosines at
    ``10000^(i/(dim/2 - 1))``. The same idea, different tables: the Transformer decoder test
    therefore gives texkit Texar's table as learned positions. Both tables are checked against
    their formulas, so the difference is exactly this one."""
    fixture = load("transformer_decoder")
    texar_table = fixture["position_table"]
    size, dim = texar_table.shape
    positions = np.arange(size, dtype=np.float64)[:, None]
    half = dim // 2
    texar_angles = positions * np.exp(-np.arange(half) * np.log(1e4) / (half - 1))
    assert_close(texar_table, np.concatenate([np.sin(texar_angles), np.cos(texar_angles)], 1))
    texkit_table = np.asarray(
        SinusoidsPositionEmbedder(hparams={"dim": dim})(positions=tf.range(size)[None])
    )[0]
    angles = positions * 1e4 ** (-2 * np.arange(half) / dim)
    vaswani = np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(size, dim)
    assert_close(texkit_table, vaswani)
    assert not np.allclose(texkit_table, texar_table, atol=1e-2)


def test_transformer_decoder():
    decoder, fixture, common = _transformer_decoder()
    meta = META["transformer_decoder"]
    outputs, _, lengths = decoder(
        inputs=tf.constant(fixture["ids"]), sequence_length=fixture["lengths"], **common
    )
    valid = valid_steps(fixture["lengths"])
    logits = np.asarray(outputs.logits)
    assert_close(
        np.where(valid[:, :, None], logits, 0),
        np.where(valid[:, :, None], fixture["train_logits"], 0),
    )
    np.testing.assert_array_equal(
        np.where(valid, outputs.sample_id, -1), np.where(valid, fixture["train_sample_id"], -1)
    )
    outputs, _, lengths = decoder(
        decoding_strategy="infer_greedy", start_tokens=fixture["start_tokens"],
        end_token=meta["end_token"], max_decoding_length=meta["max_decoding_length"], **common,
    )  # fmt: skip
    _compare_decoding(outputs, lengths, fixture, "greedy")


def test_transformer_decoder_beam_search():
    decoder, fixture, common = _transformer_decoder()
    meta = META["transformer_decoder"]
    result = decoder.beam_search(
        meta["beam_width"], meta["length_penalty"], start_tokens=fixture["start_tokens"],
        end_token=meta["end_token"], max_decoding_length=meta["max_decoding_length"], **common,
    )  # fmt: skip
    differ = _compare_beams(
        result, fixture["beam_ids"].transpose(0, 2, 1), fixture["beam_scores"],
        meta["end_token"], meta["max_decoding_length"], meta["length_penalty"],
        _teacher_forced_log_prob(decoder, common, fixture["start_tokens"]),
    )  # fmt: skip
    # Examples 0 and 1: texkit's best never ends within 7 steps and outscores the best that ends;
    # Texar returns only those that end. (Texar's best is texkit's second there.)
    assert differ == {0: "truncated", 1: "truncated"}
    for example in differ:
        texar_best = fixture["beam_ids"].transpose(0, 2, 1)[example, 0]
        length = int(np.argmax(texar_best == meta["end_token"])) + 1
        np.testing.assert_array_equal(result.ids[example, 1, :length], texar_best[:length])
        assert_close(result.scores[example, 1], fixture["beam_scores"][example, 0])


# --- classifier and losses -------------------------------------------------------------------


def test_conv1d_classifier():
    fixture = load("conv1d_classifier")
    texar = META["conv1d_classifier"]["hparams"]
    # Texar-PyTorch convolves without padding by default; texkit always pads 'same' and pools
    # over the valid steps. The fixture asks torch for padding='same' (which pads an even kernel
    # as Keras does: the extra zero on the right) on unpadded sequences, where both pool over
    # the same steps.
    classifier = Conv1DClassifier({
        "num_conv_layers": texar["num_conv_layers"],
        "kernel_sizes": texar["kernel_size"],
        "filters": texar["out_channels"],
        "pooling": "max",
        "dropout_rate": texar["dropout_rate"],
        "num_dense_layers": texar["num_dense_layers"],
        "num_classes": texar["num_classes"],
    })  # fmt: skip
    inputs = tf.constant(fixture["inputs"])
    classifier(inputs)
    for branch, conv in enumerate(classifier.encoder.convs):
        name = f"w/_encoder._layers.0._layers.{branch}.Conv1d"
        conv.kernel.assign(fixture[f"{name}.weight"].transpose(2, 1, 0))  # [out,in,k]->[k,in,out]
        conv.bias.assign(fixture[f"{name}.bias"])
    dense(classifier.logits_layer, fixture, "_encoder._layers.3")
    logits, preds = classifier(inputs)
    assert_close(logits, fixture["logits"])
    np.testing.assert_array_equal(preds, fixture["preds"])

    # With padding the two differ on purpose: Texar zeroes the padded inputs but max-pools over
    # every step, padded ones included; texkit pools over the valid steps only, so a padded
    # sequence gets what Texar gives that sequence alone, without padding (texkit's docstring:
    # padding never matters).
    logits, _ = classifier(inputs, sequence_length=tf.constant(fixture["lengths"]))
    assert_close(logits, fixture["alone_logits"])
    assert not np.allclose(fixture["padded_logits"], fixture["alone_logits"], atol=1e-3)


@pytest.mark.parametrize("reduction", list(META["losses"]["reductions"]))
def test_sequence_losses(reduction):
    fixture = load("losses")
    kwargs = META["losses"]["reductions"][reduction]
    logits, labels = tf.constant(fixture["logits"]), tf.constant(fixture["labels"])
    lengths = tf.constant(fixture["lengths"])
    assert_close(
        losses.sequence_sparse_softmax_cross_entropy(labels, logits, lengths, **kwargs),
        fixture[f"sparse_{reduction}"],
    )
    assert_close(
        losses.sequence_softmax_cross_entropy(
            tf.constant(fixture["soft_labels"]), logits, lengths, **kwargs
        ),
        fixture[f"dense_{reduction}"],
    )
    # Texar-PyTorch's losses have no label smoothing. texkit spreads eps over all V classes, the
    # true one included: exactly Texar's soft-label loss on (1 - eps) * one_hot + eps / V.
    eps = META["losses"]["label_smoothing"]
    assert_close(
        losses.sequence_sparse_softmax_cross_entropy(
            labels, logits, lengths, label_smoothing=eps, **kwargs
        ),
        fixture[f"smoothed_{reduction}"],
    )
