"""pytest setup shared by tests/ and by the doctests of texkit's docstrings.

``python -m pytest tests texkit --doctest-modules`` runs the tests and every ``>>>`` example in
texkit's docstrings, in one process, with ``tx``, ``tf``, ``np`` and ``keras`` already imported
as a reader of the docs would have them.
"""

import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402
from _pytest.doctest import DoctestItem, DoctestModule  # noqa: E402

_TEXKIT = Path(__file__).resolve().parent / "texkit"


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    # Doctests are texkit's docstrings: the modules of tests/ are collected as tests only (and
    # tests/fixtures holds scripts that need the benchmark extras to import).
    collectors = yield
    if _TEXKIT in file_path.resolve().parents:
        return collectors
    return [c for c in collectors if not isinstance(c, DoctestModule)]


@pytest.fixture(autouse=True)
def _doctest_imports(request: pytest.FixtureRequest) -> None:
    # Imported here, not at module level: tests/conftest.py configures TensorFlow's devices
    # before anything runs an op, and only doctests need these names.
    if not isinstance(request.node, DoctestItem):
        return
    import keras
    import numpy as np
    import tensorflow as tf

    import texkit as tx

    namespace = request.getfixturevalue("doctest_namespace")
    namespace.update(tx=tx, tf=tf, np=np, keras=keras)
