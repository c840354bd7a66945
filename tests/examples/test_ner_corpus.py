"""examples/sequence_tagging/ner_corpus.py: the Japanese NER corpus's split against the package's
own reader and a plain-text reading of the file, its entity counts against a small IOB2 reading
written here, the files it writes, and the entity F1 of two trivial baselines."""

from __future__ import annotations

import collections
import os

import pytest

import texkit as tx
from examples.sequence_tagging import ner_corpus
from tests.real_data import HIRONSAN_NER, hironsan_ner_file, require_package

# The sizes the module's docstring states (405 / 45 / 50 of 500 sentences).
DOCUMENTED_SIZES = {"train": 405, "dev": 45, "test": 50}


@pytest.fixture(scope="module")
def plain_rows() -> list[list[list[str]]]:
    """Each sentence of the file as its token lines split at tabs: plain string splitting of the
    blank-line separated blocks."""
    with open(hironsan_ner_file(), encoding="utf-8") as stream:
        blocks = [block for block in stream.read().split("\n\n") if block.strip()]
    return [[line.split("\t") for line in block.split("\n")] for block in blocks]


@pytest.fixture(scope="module")
def splits() -> dict[str, list[tx.data.Sentence]]:
    require_package(HIRONSAN_NER)
    return ner_corpus.load_corpus()


def iob2_entities(tags: list[str], strict: bool) -> list[tuple[str, int, int]]:
    """(type, start, end) of the entities of one IOB2 sequence. Lenient: an ``I-X`` that does not
    continue an ``X`` entity starts one (as conlleval); strict: only ``B-X`` starts one, and an
    ``I-`` that continues nothing belongs to no entity."""
    entities, current = [], None  # current: [type, start]
    for index, tag in enumerate([*tags, "O"]):
        prefix, _, type_ = tag.partition("-")
        continues = current is not None and prefix == "I" and type_ == current[0]
        if current is not None and not continues:
            entities.append((current[0], current[1], index))
            current = None
        if prefix == "B" or (prefix == "I" and not continues and not strict):
            current = [type_, index]
    return entities


def test_the_file_is_found_through_the_package_metadata():
    assert ner_corpus.corpus_file() == hironsan_ner_file()


def test_split_is_the_packages_with_dev_cut_from_its_training_part(splits, plain_rows):
    sizes = {name: len(sentences) for name, sentences in splits.items()}
    assert sizes == DOCUMENTED_SIZES
    # The package's own reader (it reads the file when imported): train + dev is its training
    # part, test its test part. Its tags are compared: it strips each line before splitting it at
    # tabs, which loses the surface form of the two tokens that are an ideographic space (U+3000).
    from hironsan.corpus import hiron2016

    def tags(sentences: list) -> list[list[str]]:
        return [[columns[-1] for columns in sentence] for sentence in sentences]

    assert tags(s.tokens for s in splits["train"] + splits["dev"]) == tags(
        hiron2016.iob_sents("train")
    )
    assert tags(s.tokens for s in splits["test"]) == tags(hiron2016.iob_sents("test"))
    assert sum(columns[0] == "\u3000" for s in splits["train"] for columns in s.tokens) == 2
    # Dev is the last tenth of the package's training part, in file order.
    package_train = len(hiron2016.iob_sents("train"))
    assert sizes["dev"] == package_train - int(package_train * 0.9)
    all_sentences = [s.tokens for name in ("train", "dev", "test") for s in splits[name]]
    assert all_sentences == plain_rows


def test_counts_equal_a_plain_text_count(splits, plain_rows):
    counts = ner_corpus.split_counts(splits)
    start = 0
    for name in ("train", "dev", "test"):
        rows = plain_rows[start : start + counts[name]["sentences"]]
        start += len(rows)
        tags = [[columns[-1] for columns in sentence] for sentence in rows]
        assert counts[name]["tokens"] == sum(map(len, rows))
        lenient = collections.Counter(t for s in tags for t, _, _ in iob2_entities(s, False))
        strict = [e for s in tags for e in iob2_entities(s, True)]
        assert counts[name]["types"] == dict(sorted(lenient.items()))
        assert counts[name]["entities"] == sum(lenient.values())
        assert counts[name]["strict_entities"] == len(strict)
        # The same against texkit's scorer: the references scored against themselves.
        assert tx.evals.entity_f1(tags, tags, mode="strict")["support"] == len(strict)
    assert start == len(plain_rows)
    # Every tag of dev and test is one training has (the example refuses unseen tags).
    seen = {t for s in splits["train"] for t in s.column(-1)}
    assert all(set(s.column(-1)) <= seen for name in ("dev", "test") for s in splits[name])
    # The file's two entities that start with I- after O: the lenient and strict readings differ.
    total = sum(c["entities"] - c["strict_entities"] for c in counts.values())
    irregular = 0
    for sentence in plain_rows:
        tags = [columns[-1] for columns in sentence]
        pairs = zip(["O", *tags[:-1]], tags, strict=True)
        irregular += sum(before == "O" and tag.startswith("I-") for before, tag in pairs)
    assert total == irregular > 0


def test_written_files_round_trip(splits, tmp_path):
    paths = ner_corpus.write_splits(str(tmp_path / "two"))
    assert sorted(paths) == ["dev", "test", "train"]
    for name, path in paths.items():
        read = tx.data.read_conll(path, format="conll2003")
        expected = [[[c[0], c[-1]] for c in s.tokens] for s in splits[name]]
        assert [s.tokens for s in read] == expected
    # Every column: the three files, one after the other, are the corpus file byte for byte.
    full = ner_corpus.write_splits(str(tmp_path / "all"), all_columns=True)
    written = b"".join(open(full[name], "rb").read() for name in ("train", "dev", "test"))
    assert written == open(hironsan_ner_file(), "rb").read()
    for name, path in full.items():
        assert tx.data.read_conll(path, "conll2003", num_columns="any") == splits[name]


def test_trivial_baselines_score_zero_and_one(splits):
    tags = [s.column(-1) for s in splits["test"]]
    nothing = tx.evals.entity_f1(tags, [["O"] * len(s) for s in tags], scheme="IOB2")
    assert (nothing["f1"], nothing["predicted"], nothing["true_positives"]) == (0.0, 0, 0)
    assert nothing["support"] == sum(len(iob2_entities(s, False)) for s in tags)
    perfect = tx.evals.entity_f1(tags, tags, scheme="IOB2")
    assert perfect["f1"] == perfect["precision"] == perfect["recall"] == 1.0


def test_main_writes_and_prints_the_counts(splits, tmp_path, capsys):
    paths = ner_corpus.main(["--output", str(tmp_path)])
    printed = capsys.readouterr().out.splitlines()
    counts = ner_corpus.split_counts(splits)
    for name in ("train", "dev", "test"):
        row = next(line.split() for line in printed if line.startswith(name + " "))
        assert [int(n) for n in row[1:5]] == [
            counts[name][key] for key in ("sentences", "tokens", "entities", "strict_entities")
        ]
        assert paths[name] == str(tmp_path / f"{name}.conll")


def test_ner_config_reads_the_files_main_writes():
    from examples.sequence_tagging import train

    config = os.path.join(os.path.dirname(ner_corpus.__file__), "ner.yaml")
    user = tx.HParams.from_yaml(config, None).todict()
    user.pop("predictions_dir")
    experiments = train.experiments(user, None)
    assert sorted(experiments) == ["bilstm_cnn_crf", "bilstm_cnn_softmax"]
    for hparams in experiments.values():
        data = hparams.data.hparams
        assert (data.format, data.scheme) == ("conll2003", "IOB2")
        assert data.files.todict() == {
            name: os.path.join(ner_corpus.DEFAULT_FOLDER, f"{name}.conll")
            for name in ner_corpus.SPLITS
        }
