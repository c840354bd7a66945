"""The API reference (docs/api/) documents every public module of texkit, and nothing else.

Building the docs (Sphinx, slow) is ``make docs``; this only checks that the pages name every
module, so that a new module without documentation fails the tests.
"""

import texkit  # noqa: I001  (first: texkit picks the Keras backend)

import pkgutil
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
_AUTOMODULE = re.compile(r"^\s*\.\. automodule::\s*(\S+)\s*$", re.MULTILINE)


def _public_modules() -> set[str]:
    modules = {"texkit"}
    for module in pkgutil.walk_packages(texkit.__path__, "texkit."):
        if not any(part.startswith("_") for part in module.name.split(".")):
            modules.add(module.name)
    return modules


def _documented_modules() -> set[str]:
    sources = [
        path
        for path in DOCS.rglob("*")
        if path.suffix in (".rst", ".md") and "_build" not in path.relative_to(DOCS).parts
    ]
    return {name for path in sources for name in _AUTOMODULE.findall(path.read_text("utf-8"))}


def test_every_public_module_has_an_api_page():
    missing = sorted(_public_modules() - _documented_modules())
    assert not missing, (
        f"modules missing from the API reference: {missing}; add an `.. automodule::` section "
        f"for each to the page of its package in docs/api/"
    )


def test_api_pages_name_only_existing_public_modules():
    stale = sorted(_documented_modules() - _public_modules())
    assert not stale, f"docs/api/ documents modules that are gone or private: {stale}"


def test_the_guide_and_the_api_are_in_the_index():
    index = (DOCS / "index.md").read_text("utf-8")
    assert "guide/*" in index and "api/index" in index


# docs/guide/layout.md, "Where things are": a code block whose lines name a folder of texkit
# (``texkit/core/``) and then, indented below it, the module files it holds (``attention.py``
# followed by what it is for), or a file by its whole path (``texkit/cli.py``).
_LAYOUT = DOCS / "guide" / "layout.md"


def _files_named_in_layout() -> set[str]:
    text = _LAYOUT.read_text("utf-8")
    blocks = re.findall(r"```\n(.*?)```", text, re.DOTALL)
    named: set[str] = set()
    folder = None
    for line in "\n".join(blocks).splitlines():
        words = line.split()
        if not words:
            continue
        first = words[0]
        if first.startswith("texkit/") and first.endswith("/"):
            folder = first
        elif first.startswith("texkit/") and first.endswith(".py"):
            named.add(first)
        elif first.endswith(".py") and line[:1].isspace() and folder:
            named.add(folder + first)
    return named


def _module_files() -> set[str]:
    root = Path(texkit.__file__).resolve().parent
    return {
        "texkit/" + path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if path.name != "__init__.py"
    }


def test_the_layout_page_names_every_module_file():
    missing = sorted(_module_files() - _files_named_in_layout())
    assert not missing, (
        f"docs/guide/layout.md does not name these module files: {missing}; add each under its "
        "folder with a few words on what it holds"
    )


def test_the_layout_page_names_only_existing_files():
    stale = sorted(_files_named_in_layout() - _module_files())
    assert not stale, f"docs/guide/layout.md names files that are gone: {stale}"
