"""The examples train on real data and beat the trivial baseline on held-out text."""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import bible_corpus  # noqa: E402
import testament_classifier  # noqa: E402, F401  (registers the example's builders)


def test_bible_split_is_by_book_and_complete():
    splits = bible_corpus.load_bible()
    sizes = {name: len(verses) for name, verses in splits.items()}
    assert sizes == {"train": 30047, "dev": 338, "test": 699}
    books = {name: {v.book for v in verses} for name, verses in splits.items()}
    assert books["test"] == set(bible_corpus.TEST_BOOKS)
    assert books["dev"] == set(bible_corpus.DEV_BOOKS)
    assert not books["train"] & (books["dev"] | books["test"])
    # Matthew 1:1 opens the New Testament; Malachi closes the Old.
    labels = {v.reference: v.new_testament for v in splits["train"]}
    assert labels["Matt.1.1"] and not labels["Mal.4.6"]


def test_bible_loader_names_the_bad_line(tmp_path):
    import gzip

    path = tmp_path / "broken.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write("Gen.1.1\tIn the beginning\tEn el principio\nGen.1.2\tonly two fields\n")
    with pytest.raises(ValueError, match="broken.tsv.gz:2"):
        bible_corpus.load_bible(str(path))
    with pytest.raises(FileNotFoundError, match="missing"):
        bible_corpus.load_bible(str(tmp_path / "missing.tsv.gz"))


def test_testament_classifier_learns_from_the_yaml_config(tmp_path):
    config = os.path.join(
        os.path.dirname(__file__), os.pardir, "hparams", "testament_classifier.yaml"
    )
    user = tx.HParams.from_yaml(config, None).todict()
    overrides = ["run.train_steps=350", "run.verbose=0", "model.hparams.embedder.dim=32"]
    hparams = tx.run.validate_experiment(tx.apply_overrides(user, overrides))
    trainer = tx.run.Trainer.from_hparams(hparams)
    trainer.train()
    test = trainer.evaluate("test")
    assert trainer.data.sizes["test"] == 699
    assert test["accuracy"] > trainer.data.majority["test"] + 0.2, test

    # The export takes raw verses and agrees with the trained model.
    verses = [
        "And Jesus answered and said unto them, Verily I say unto you",
        "And the LORD spake unto Moses, saying,",
    ]
    trainer.export(str(tmp_path / "serving"))
    loaded = tf.saved_model.load(str(tmp_path / "serving"))
    served = loaded.serve(tf.constant(verses)).numpy()
    expected = trainer.model.predict(trainer.data.preprocessor(tf.constant(verses)), verbose=0)
    np.testing.assert_allclose(served, expected, atol=1e-5)
    assert served[0].argmax() == 1 and served[1].argmax() == 0  # New, then Old Testament
