"""The sequence-level RL examples: ``examples/seq2seq_rl`` and ``examples/lm_rl`` in their quick
modes, the verifiable reward of ``lm_rl`` against its definition computed another way, and
``texkit migrate`` of Texar's ``seq2seq_rl`` config onto ``examples/seq2seq_rl``."""

import math
import os

import numpy as np
import pytest
import sacrebleu
import yaml

import texkit as tx
from examples.common import bible_corpus
from examples.lm_rl import chart
from examples.lm_rl import train as lm_rl
from examples.seq2seq_rl import train as seq2seq_rl
from texkit.cli import main as texkit_command

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))

# Texar-TF's examples/seq2seq_rl/config_model.py, as Texar has it.
TEXAR_SEQ2SEQ_RL = """
num_units = 256
beam_width = 10

embedder = {'dim': num_units}
encoder = {'rnn_cell_fw': {'kwargs': {'num_units': num_units}}}
decoder = {
    'rnn_cell': {'kwargs': {'num_units': num_units}},
    'attention': {'kwargs': {'num_units': num_units}, 'attention_layer_size': num_units},
}
agent = {'discount_factor': 0., 'entropy_weight': .5}
"""


def check_bleu(result, verses):
    """BLEU before and after RL is sacrebleu's own on the returned translations."""
    references = [verse.english for verse in verses]
    assert result["references"] == references
    for phase in ("before", "after"):
        hypotheses = result[phase]["hypotheses"]
        assert len(hypotheses) == len(verses) and all("<EOS>" not in h for h in hypotheses)
        expected = sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True, force=True)
        assert result[phase]["beam"] == pytest.approx(expected.score)
        assert math.isfinite(result[phase]["greedy"])


def test_seq2seq_rl_quick_mode_pretrains_then_trains_by_policy_gradient(tmp_path):
    config = os.path.join(ROOT, "examples", "seq2seq_rl", "config.yaml")
    result = seq2seq_rl.main(
        ["--config", config, "--quick", f"run.model_dir={tmp_path}", "run.verbose=0"]
    )
    losses = result["mle_history"]["loss"]
    assert losses[-1] < losses[0]
    assert (tmp_path / "mle.weights.h5").exists() and (tmp_path / "rl" / "hparams.yaml").exists()
    history = result["history"]
    # Sentence BLEU is on a 0-100 scale; the mean of the samples' rewards is logged.
    assert all(0.0 <= r <= 100.0 for r in history["reward"]) and history["length"][-1] > 0
    assert all(math.isfinite(v) for v in history["loss"])
    check_bleu(result, bible_corpus.load_bible()["test"][:24])


def test_lm_rl_quick_mode_starts_at_zero_kl_and_moves_away():
    result = lm_rl.main(["--quick", "run.verbose=0"])
    before, after = result["before"], result["after"]
    # The reference is an exact copy of the starting model: the KL starts at 0, then grows.
    assert before["kl"] == pytest.approx(0.0, abs=1e-5)
    assert after["kl"] > 1e-4
    for measured in (before, after):
        assert 0.0 <= measured["sampled_reward"] <= 1.0 and 0.0 <= measured["exact"] <= 1.0
        assert len(measured["sampled_texts"]) == len(measured["prompts"]) == 32
    history = result["history"]
    assert len(history["reward"]) == 2 and len(history["val_reward"]) == 2
    assert all(k >= -1e-6 for k in history["kl"])


def test_word_count_reward_matches_its_definition():
    vocab = tx.data.Vocab.from_tokens(["the", ",", "lord", ".", "7"])
    words = {"the", "lord", "7"}
    reward = lm_rl.word_count_reward(vocab, target=3)
    rng = np.random.default_rng(0)
    ids = rng.integers(4, vocab.size, size=(64, 8)).astype(np.int32)
    lengths = rng.integers(0, 9, size=64).astype(np.int32)
    ends = rng.random(64) < 0.7
    for i in range(64):
        if ends[i] and lengths[i] > 0:
            ids[i, lengths[i] - 1] = vocab.eos_token_id
    samples = tx.rewards.Samples(ids, lengths, None, {})
    got = reward(samples).numpy()
    for i in range(64):
        tokens = vocab.map_ids_to_tokens_py(ids[i, : lengths[i]]).tolist()
        if not tokens or tokens[-1] != "<EOS>":
            assert got[i] == 0.0
            continue
        n = sum(t in words for t in tokens[:-1])
        assert got[i] == pytest.approx(max(0.0, 1.0 - abs(n - 3) / 3))
    assert {0.0, 1.0} <= set(got.tolist())


def test_chart_writes_a_valid_png(tmp_path):
    import struct
    import zlib

    path = tmp_path / "c.png"
    chart.line_chart(str(path), [{"title": "kl", "curves": {"a": ([1, 2, 3], [0.1, 0.5, 0.2])}}],
                     width=120, panel_height=80)  # fmt: skip
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (120, 80)
    start = data.index(b"IDAT") + 4
    length = struct.unpack(">I", data[start - 8 : start - 4])[0]
    raw = zlib.decompress(data[start : start + length])
    assert len(raw) == height * (1 + 3 * width)
    assert raw.count(bytes([31, 119, 180])) > 0  # the curve's colour was drawn


def test_texar_seq2seq_rl_config_migrates_and_trains(tmp_path, capsys):
    source = tmp_path / "config_model.py"
    source.write_text(TEXAR_SEQ2SEQ_RL)
    output = tmp_path / "experiment.yaml"
    base = os.path.join(ROOT, "examples", "seq2seq_rl", "config.yaml")
    args = ["migrate", str(source), "--model", "seq2seq_attn_modules", "--base", base,
            "--output", str(output)]  # fmt: skip
    assert texkit_command(args) == 0, capsys.readouterr().err
    text = output.read_text()
    experiment = yaml.safe_load(text)
    model = experiment["model"]["hparams"]
    assert model["decoder"]["rnn_cell"]["kwargs"] == {"units": 256}
    assert model["embedder"]["dim"] == 256
    assert experiment["translate"]["beam_width"] == 10
    assert experiment["rl"]["model"]["hparams"]["policy_gradient"]["baseline"]["type"] == (
        "self_critical"
    )
    assert "agent: " in text and "not carried" in text
    # The migrated config trains; its Texar sizes (256 units) are shrunk for the test's time.
    quick = [o for o in seq2seq_rl.QUICK if not o.startswith("model.")]
    small = [f"model.hparams.{key}={value}" for key, value in (
        ("embedder.dim", 16), ("encoder.rnn_cell_fw.kwargs.units", 16),
        ("decoder.rnn_cell.kwargs.units", 32), ("decoder.attention.kwargs.units", 32),
        ("decoder.attention.attention_layer_size", 32))]  # fmt: skip
    result = seq2seq_rl.main(
        ["--config", str(output), *quick, *small, "run.train_steps=4",
         "run.checkpoint_every_steps=2", "rl.run.train_steps=2", "rl.run.checkpoint_every_steps=1",
         "run.verbose=0"]
    )  # fmt: skip
    assert math.isfinite(result["after"]["beam"]) and len(result["history"]["reward"]) == 2
