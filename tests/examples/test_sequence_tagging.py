"""examples/sequence_tagging: the Turkish Web Treebank's split, the WordPiece alignment, and the
--quick runs of both encoders, each with a CRF and a softmax head, against a majority-tag
baseline counted here from the files themselves."""

from __future__ import annotations

import collections
import os

import numpy as np
import pytest

import texkit as tx
from examples.sequence_tagging import train
from examples.sequence_tagging.treebank import load_treebank
from examples.sequence_tagging.wordpieces import wordpiece_inputs
from tests.real_data import MINILM, TURKISH_TREEBANK, minilm_folder, require_package

QUICK_SENTENCES = {"train": 400, "test": 100}  # data.hparams.max_*_sentences of --quick


def conllu_sentences(path: str) -> list[tuple[list[str], list[str]]]:
    """(forms, UPOS tags) of each sentence of a CoNLL-U file, read with plain string splitting:
    word lines only (an integer ID), comments and blank lines skipped."""
    with open(path, encoding="utf-8") as stream:
        blocks = [block for block in stream.read().split("\n\n") if block.strip()]
    sentences = []
    for block in blocks:
        rows = [line.split("\t") for line in block.split("\n") if line and line[0] != "#"]
        rows = [row for row in rows if row[0].isdigit()]
        sentences.append(([row[1] for row in rows], [row[3] for row in rows]))
    return sentences


def package_split() -> dict[str, list]:
    """The split the package's read.py makes: in each file (web, then wiki), sentence i is
    test when i % 10 == 9, dev when i % 10 == 8, training otherwise."""
    require_package(TURKISH_TREEBANK)
    folder = os.path.join(os.path.dirname(require_package(TURKISH_TREEBANK)), "data")
    splits: dict[str, list] = {"train": [], "dev": [], "test": []}
    for name in ("web.conllu", "wiki.conllu"):
        for index, sentence in enumerate(conllu_sentences(os.path.join(folder, name))):
            splits["test" if index % 10 == 9 else "dev" if index % 10 == 8 else "train"].append(
                sentence
            )
    return splits


def test_treebank_split_is_the_packages_own_and_complete():
    expected = package_split()
    splits = load_treebank()
    assert {name: len(s) for name, s in splits.items()} == {"train": 3881, "dev": 485, "test": 485}
    for name, sentences in splits.items():
        assert [(s.column("FORM"), s.column("UPOS")) for s in sentences] == expected[name]
    tokens = sum(len(forms) for split in expected.values() for forms, _ in split)
    assert tokens == 81370
    # Tokens are morphological segments: "Açıklanmayan" is four tokens with four tags.
    forms, tags = expected["train"][1]
    assert forms[:4] == ["Açık", "la", "nma", "yan"] and tags[:4] == ["NOUN", "VERB", "VERB", "ADJ"]


def test_wordpieces_label_each_tokens_first_piece():
    tokenizer = tx.data.BERTTokenizer.from_pretrained(minilm_folder(), max_seq_length=512)
    sentences = [["Açık", "la", "nma", "yan", "soruların", "?"], ["Burda", "da", "öylemi"]]
    inputs = wordpiece_inputs(tokenizer, sentences, max_pieces=64)
    for sentence, features in zip(sentences, inputs, strict=True):
        ids, first = features["input_ids"].tolist(), features["first_piece"].tolist()
        assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
        # Between two first pieces lie exactly the pieces of one token, tokenized on its own.
        bounds = [*first, len(ids) - 1]
        for index, word in enumerate(sentence):
            alone = tokenizer.tokenize([word])[0].numpy().tolist()
            assert ids[bounds[index] : bounds[index + 1]] == alone, word
            assert not tokenizer.id_to_token(ids[first[index]]).startswith("##")
    assert sum(len(tokenizer.tokenize([w])[0]) for w in sentences[0]) > len(sentences[0])
    # Too many pieces for max_pieces: one piece per token, still aligned.
    (short,) = wordpiece_inputs(tokenizer, sentences[:1], max_pieces=8)
    assert short["first_piece"].tolist() == list(range(1, 7))
    with pytest.raises(ValueError, match=r"sentences\[0\] has 6 tokens"):
        wordpiece_inputs(tokenizer, sentences[:1], max_pieces=7)


def majority_baseline() -> tuple[str, float]:
    """The most frequent tag of --quick's training sentences and its share of the test tokens."""
    splits = package_split()
    train = splits["train"][: QUICK_SENTENCES["train"]]
    tag = collections.Counter(t for _, tags in train for t in tags).most_common(1)[0][0]
    test = [t for _, tags in splits["test"][: QUICK_SENTENCES["test"]] for t in tags]
    return tag, float(np.mean([t == tag for t in test]))


def check_quick_run(result: dict, names: tuple[str, ...], folder, margin: float) -> None:
    """Each model beats the majority tag by ``margin`` at least, and its CoNLL-U predictions file
    holds the test sentences with tags whose accuracy is the one reported."""
    tag, share = majority_baseline()
    assert result["data"].majority_tag == tag
    assert result["majority"]["test"] == pytest.approx(share)
    test = package_split()["test"][: QUICK_SENTENCES["test"]]
    for name in names:
        outcome = result["models"][name]
        assert outcome["test"]["accuracy"] > share + margin, (name, outcome["test"], share)
        path = outcome["predictions_file"]
        assert os.path.dirname(path) == str(folder)
        written = conllu_sentences(path)
        assert [forms for forms, _ in written] == [forms for forms, _ in test]
        tags = result["data"].tags
        assert [t for _, ts in written for t in ts] == [
            tags[i] for row in outcome["test_predictions"] for i in row
        ]
        right = sum(p == g for (_, ps), (_, gs) in zip(written, test, strict=True)
                    for p, g in zip(ps, gs, strict=True))  # fmt: skip
        tokens = sum(len(gs) for _, gs in test)
        assert outcome["test"]["tokens"] == tokens
        assert outcome["test"]["accuracy"] == pytest.approx(right / tokens)


def run_quick(tmp_path, names: tuple[str, ...]) -> dict:
    args = ["--quick", "--models", ",".join(names), "run.verbose=0"]
    return train.main([*args, f"predictions_dir={tmp_path}"])


def test_bilstm_cnn_quick_mode_learns_with_and_without_crf(tmp_path):
    require_package(TURKISH_TREEBANK)
    names = ("bilstm_cnn_crf", "bilstm_cnn_softmax")
    check_quick_run(run_quick(tmp_path, names), names, tmp_path, margin=0.2)


def test_bert_quick_mode_learns_with_a_crf(tmp_path):
    # The softmax head is the one of the BiLSTM test above; BERT is trained with the CRF only,
    # for the test's time.
    require_package(TURKISH_TREEBANK)
    require_package(MINILM)
    names = ("bert_crf",)
    result = run_quick(tmp_path, names)
    # 30 steps of an English model on Turkish: about 0.6 against 0.37.
    check_quick_run(result, names, tmp_path, margin=0.15)
    assert result["data"].pieces_per_token > 2  # Turkish in an English WordPiece vocabulary


def proper_name_spans(path: str) -> list[tuple[list[str], list[str]]]:
    """(forms, IOB2 tags) of each sentence of a CoNLL-U file: a run of tokens whose FEATS say
    ``Proper=True`` is one ``NAME`` entity (a stand-in for named entities, which the treebank
    does not mark)."""
    with open(path, encoding="utf-8") as stream:
        blocks = [block for block in stream.read().split("\n\n") if block.strip()]
    sentences = []
    for block in blocks:
        rows = [line.split("\t") for line in block.split("\n") if line and line[0] != "#"]
        tags, inside = [], False
        for row in rows:
            proper = "Proper=True" in row[5].split("|")
            tags.append(("I-NAME" if inside else "B-NAME") if proper else "O")
            inside = proper
        sentences.append(([row[1] for row in rows], tags))
    return sentences


def iob2_entities(tags: list[str]) -> set[tuple[int, int]]:
    """The (start, end) of each entity of a well-formed IOB2 sequence of one type."""
    entities, start = set(), None
    for index, tag in enumerate([*tags, "O"]):
        if start is not None and tag != "I-NAME":
            entities.add((start, index))
            start = None
        if tag == "B-NAME":
            start = index
    return entities


def test_scheme_option_scores_entities_of_conll2003_files(tmp_path):
    """--scheme IOB2 on CoNLL-2003 files: the CRF never decodes O -> I-NAME nor starts with
    I-NAME, and the entity F1 is the one counted here from the predictions file."""
    require_package(TURKISH_TREEBANK)
    folder = os.path.join(os.path.dirname(require_package(TURKISH_TREEBANK)), "data")
    sentences = proper_name_spans(os.path.join(folder, "web.conllu"))
    files = {}
    for name, part in (("train", sentences[:400]), ("dev", sentences[400:500]),
                       ("test", sentences[500:600])):  # fmt: skip
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text(
            "\n\n".join("\n".join(f"{w} {t}" for w, t in zip(*s, strict=True)) for s in part)
            + "\n\n",
            encoding="utf-8",
        )
    overrides = [f"data.hparams.files.{name}={path}" for name, path in files.items()]
    result = train.main(
        ["--quick", "--models", "bilstm_cnn_crf", "--scheme", "IOB2", "run.verbose=0",
         "data.hparams.format=conll2003", f"predictions_dir={tmp_path / 'out'}", *overrides]
    )  # fmt: skip
    outcome = result["models"]["bilstm_cnn_crf"]
    assert result["data"].tags == ["B-NAME", "I-NAME", "O"]
    with open(outcome["predictions_file"], encoding="utf-8") as stream:
        written = [[line.split(" ") for line in block.split("\n")]
                   for block in stream.read().strip("\n").split("\n\n")]  # fmt: skip
    gold = sentences[500:600]
    assert [[w for w, _ in s] for s in written] == [forms for forms, _ in gold]
    predicted = [[t for _, t in s] for s in written]
    for tags in predicted:
        assert all(not (tag == "I-NAME" and before == "O") for before, tag in
                   zip(["O", *tags], tags, strict=False))  # fmt: skip
    found = [iob2_entities(tags) for tags in predicted]
    reference = [iob2_entities(tags) for _, tags in gold]
    right = sum(len(f & r) for f, r in zip(found, reference, strict=True))
    precision = right / max(sum(map(len, found)), 1)
    recall = right / sum(map(len, reference))
    f1 = 2 * precision * recall / (precision + recall) if right else 0.0
    assert outcome["test"]["f1"] == pytest.approx(f1)
    assert outcome["test"]["precision"] == pytest.approx(precision)
    assert outcome["test"]["recall"] == pytest.approx(recall)
