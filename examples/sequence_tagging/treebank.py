"""The Turkish Web Treebank (Google; PyPI package ``turkish-treebanks`` 1.0.0, Apache-2.0) with a
fixed train/dev/test split.

The package ships two CoNLL-U files outside its Python package, ``data/web.conllu`` (2,541
sentences of forums and blogs) and ``data/wiki.conllu`` (2,310 sentences of Wikipedia): 4,851
sentences, 81,370 tokens. They are found through the package's installed file list
(``importlib.metadata``) and read with ``tx.data.read_conll``; the package itself is never
imported (its reader needs protobuf). The tags are the UPOS column (the fourth): 14 tags, NOUN
the most frequent (41% of the tokens).

A token of this treebank is a morphological segment, not a word: a word with derivational
suffixes is split at each derivation, each part with its own tag and ``SpaceAfter=No`` on all
but the last (``Açıklanmayan`` is ``Açık`` NOUN, ``la`` VERB, ``nma`` VERB, ``yan`` ADJ).

The split is the package's own (its ``read.py``): in each file, sentence ``i`` (from 0, in file
order) is in the test split if ``i % 10 == 9``, in the dev split if ``i % 10 == 8``, and in
training otherwise. That gives 3,881 training, 485 dev and 485 test sentences.
"""

from __future__ import annotations

import importlib.metadata
import os

import texkit as tx

PACKAGE = "turkish-treebanks"
SECTIONS = ("web", "wiki")
SPLITS = ("train", "dev", "test")
TAG_COLUMN = "upos"


def treebank_files() -> dict[str, str]:
    """``{section: path}`` of the two CoNLL-U files of the installed package.

    Raises:
        FileNotFoundError: the package is not installed, or a file is missing.
    """
    install = f"pip install --no-deps {PACKAGE}==1.0.0"
    try:
        installed = importlib.metadata.files(PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(f"the Turkish Web Treebank is not installed: {install}") from None
    paths = {}
    for entry in installed:
        for section in SECTIONS:
            if str(entry).replace("\\", "/") == f"data/{section}.conllu":
                paths[section] = str(entry.locate())
    for section in SECTIONS:
        if section not in paths or not os.path.isfile(paths[section]):
            raise FileNotFoundError(
                f"the package {PACKAGE} has no data/{section}.conllu: reinstall it ({install})"
            )
    return paths


def split_of(index: int) -> str:
    """The split of a file's ``index``-th sentence (from 0), as the package's ``read.py``."""
    return {8: "dev", 9: "test"}.get(index % 10, "train")


def load_treebank() -> dict[str, list]:
    """``{"train", "dev", "test"}``: the sentences (``tx.data.read_conll``'s) of each split, the
    web section's before the wiki section's, each in file order."""
    splits: dict[str, list] = {name: [] for name in SPLITS}
    for _, path in sorted(treebank_files().items()):
        for index, sentence in enumerate(tx.data.read_conll(path, format="conllu")):
            splits[split_of(index)].append(sentence)
    return splits
