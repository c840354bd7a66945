"""The English-Spanish Bible corpus shipped in examples/common/data, with its fixed split by book.

See examples/common/data/README.md for provenance and the split.
"""

from __future__ import annotations

import gzip
import os
from typing import NamedTuple

CORPUS_PATH = os.path.join(os.path.dirname(__file__), "data", "bible-kjv-rv1909.en-es.tsv.gz")

TEST_BOOKS = frozenset({"Ruth", "Esth", "Jonah", "Hag", "Gal", "Jas", "1Pet"})
DEV_BOOKS = frozenset({"Joel", "Obad", "Nah", "Phil", "2Thess", "Titus"})
# The first book of the New Testament; the corpus is in canonical order.
FIRST_NEW_TESTAMENT_BOOK = "Matt"


class Verse(NamedTuple):
    reference: str
    book: str
    english: str
    spanish: str
    new_testament: bool


def split_of(book: str) -> str:
    """'train', 'dev' or 'test' for a book abbreviation (e.g. 'Gen')."""
    if book in TEST_BOOKS:
        return "test"
    if book in DEV_BOOKS:
        return "dev"
    return "train"


def load_bible(path: str = CORPUS_PATH) -> dict[str, list[Verse]]:
    """Reads the corpus into {'train', 'dev', 'test'} lists of verses.

    Raises:
        FileNotFoundError: the corpus file is missing.
        ValueError: a line does not have three tab-separated fields (names the line number).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Bible corpus not found: {path}")
    splits: dict[str, list[Verse]] = {"train": [], "dev": [], "test": []}
    new_testament = False
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                raise ValueError(
                    f"{path}:{number}: expected 3 tab-separated fields, got {len(fields)}"
                )
            reference, english, spanish = fields
            book = reference.split(".", 1)[0]
            new_testament = new_testament or book == FIRST_NEW_TESTAMENT_BOOK
            verse = Verse(reference, book, english, spanish, new_testament)
            splits[split_of(book)].append(verse)
    return splits
