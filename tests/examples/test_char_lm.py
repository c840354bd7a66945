"""examples/char_lm: its --quick mode learns the King James verses character by character, and
its bits per character are the NLL of every character and verse end, recomputed here."""

import collections
import math
import os

import numpy as np
import pytest

import texkit as tx
from examples.char_lm import train as char_lm
from examples.common import bible_corpus

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
CONFIG = os.path.join(ROOT, "examples", "char_lm", "config.yaml")


def log_softmax(logits):
    logits = logits.astype(np.float64)
    top = logits.max(axis=-1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))


def unigram_bits(train_verses, verses):
    """Bits per character of an add-one-smoothed unigram model of ``train_verses`` (characters
    and one end per verse) on ``verses``, over the characters seen, the end and the unknown."""
    counts = collections.Counter("".join(train_verses))
    symbols = len(counts) + 2  # the characters, <EOS> and <UNK>
    total = sum(counts.values()) + len(train_verses) + symbols
    bits = -sum(math.log2((counts[c] + 1) / total) for verse in verses for c in verse)
    bits -= len(verses) * math.log2((len(train_verses) + 1) / total)
    return bits / sum(len(verse) + 1 for verse in verses)


def test_quick_mode_learns_and_reports_exact_bits_per_character(tmp_path):
    result = char_lm.main(
        ["--config", CONFIG, "--quick", f"run.model_dir={tmp_path / 'run'}", "run.verbose=0"]
    )
    losses = result["history"]["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    bible = bible_corpus.load_bible()
    train = [v.english for v in bible["train"][:600]]
    test = [v.english for v in bible["test"][:24]]
    data, model = result["data"], result["trainer"].model

    # The vocabulary: every character of the training verses (the space too), after the four
    # special tokens.
    vocab = data.vocab
    assert isinstance(vocab, tx.data.CharVocab)
    assert sorted(vocab.tokens[4:]) == sorted(set("".join(train))) and " " in vocab.tokens
    assert result["uniform"] == pytest.approx(math.log2(len(set("".join(train))) + 4))

    # Every character of the 24 test verses, and each verse's end, is predicted once; the bits
    # per character are the total NLL / ln 2 / those predictions, recomputed in float64.
    nll, predictions = 0.0, 0
    for features, labels in data["test"]:
        log_probs = log_softmax(model.predict_on_batch(features))
        picked = np.take_along_axis(log_probs, labels.numpy()[..., None], axis=-1)[..., 0]
        valid = np.arange(labels.shape[1])[None, :] < features["length"].numpy()[:, None]
        nll -= picked[valid].sum()
        predictions += int(valid.sum())
    assert predictions == sum(len(v) + 1 for v in test) == result["test"]["predictions"]
    assert result["test"]["nll"] == pytest.approx(nll, rel=1e-4)
    assert result["test"]["bpc"] == pytest.approx(nll / math.log(2) / predictions, rel=1e-4)

    # It learned: clearly below a uniform choice and below the unigram model of the training
    # characters, counted here.
    unigram = unigram_bits(train, test)
    assert result["unigram"]["test"] == pytest.approx(unigram, rel=1e-9)
    assert result["test"]["bpc"] < unigram - 0.5 < result["uniform"] - 1.0, result["test"]
    assert np.isfinite(result["dev"]["bpc"])

    # Seeded temperature samples: text of the vocabulary's characters, drawn again the same.
    settings = tx.HParams(
        {"num_samples": 2, "max_decoding_length": 60}, char_lm.SAMPLES_DEFAULTS
    )  # fmt: skip
    for temperature, texts in result["samples"].items():
        assert len(texts) == 2 and all(0 < len(t) <= 60 for t in texts), texts
        assert set("".join(texts)) <= set(vocab.tokens[4:])
        assert char_lm.sample_verses(model, vocab, settings, temperature) == texts
    assert (tmp_path / "run" / "hparams.yaml").exists()


def test_training_batches_are_bucketed_and_padded_to_the_multiple(tmp_path):
    user = tx.HParams.from_yaml(CONFIG, None).todict()
    user = tx.apply_overrides(user, [*char_lm.QUICK, f"data.hparams.work_dir={tmp_path}"])
    user.pop("samples")
    hparams = tx.run.validate_experiment(user)
    data = char_lm.bible_characters(hparams.data.hparams)
    multiple, budget = hparams.data.hparams.pad_multiple, hparams.data.hparams.batch_tokens
    for features, labels in data["train"](None).take(12):
        ids, length = features["ids"].numpy(), features["length"].numpy()
        width = ids.shape[1]
        # Verses of one bucket: padded only up to the next multiple, as many as the token budget
        # holds of lines (<BOS> and <EOS> included) of the bucket's longest length.
        assert width % multiple == 0 and (length > width - multiple).all() and length.max() <= width
        assert budget - (width + 1) < len(length) * (width + 1) <= budget
        labels = labels.numpy()
        rows = np.arange(len(length))
        # <BOS> starts the inputs, <EOS> ends the labels, padding follows (in the inputs, after
        # the <EOS> that a shorter line has where its labels end).
        eos = vocab_id(data, "<EOS>")
        assert (ids[:, 0] == vocab_id(data, "<BOS>")).all()
        assert (labels[rows, length - 1] == eos).all()
        positions = np.arange(width)[None, :]
        assert (labels[positions >= length[:, None]] == 0).all()
        assert (ids[positions > length[:, None]] == 0).all()
        shorter = length < width
        assert (ids[rows[shorter], length[shorter]] == eos).all()


def vocab_id(data, token):
    return data.vocab.token_to_id_map_py[token]


def test_a_pad_multiple_below_one_is_refused():
    with pytest.raises(tx.HParamsError, match="pad_multiple"):
        char_lm.main(["--config", CONFIG, "--quick", "data.hparams.pad_multiple=0"])
