"""The examples train on real data and beat the trivial baseline on held-out text."""

import os
import sys

import pytest

import texkit as tx

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import bible_corpus  # noqa: E402
import testament_classifier  # noqa: E402


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


def test_testament_classifier_learns_from_the_yaml_config():
    config = os.path.join(
        os.path.dirname(__file__), os.pardir, "hparams", "testament_classifier.yaml"
    )
    user = tx.HParams.from_yaml(config, None).todict()
    hparams = tx.HParams(
        tx.apply_overrides(user, ["epochs=1", "embedder.dim=32"]),
        testament_classifier.default_hparams(),
    )
    results = testament_classifier.run(hparams, verbose=0)
    test = results["test"]
    assert test["size"] == 699
    assert test["accuracy"] > test["majority"] + 0.2, results
