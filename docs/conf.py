"""Sphinx configuration of texkit's documentation.

Build (``make docs``): ``sphinx-build -E -W --keep-going -b html docs docs/_build/html``; ``-E``
rereads every page, so the warnings of unchanged pages are reported too. The API pages (docs/api/)
document every public module with ``automodule``; ``tests/test_docs.py`` fails when a module is
missing from them.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

# texkit runs on Keras' TensorFlow backend; importing texkit (below, before TensorFlow) keeps
# TensorFlow's C++ log lines out of the build's output.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.abspath(".."))

from sphinx.util import inspect as sphinx_inspect  # noqa: E402

import texkit  # noqa: E402

project = "texkit"
author = "texkit authors"
copyright = "texkit authors"  # noqa: A001 - Sphinx's name
release = texkit.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# -- autodoc and napoleon ---------------------------------------------------------------------
autodoc_default_options = {
    "members": True,
    "member-order": "bysource",
    "show-inheritance": True,
}
# Signatures stay as written; type hints are shown in them (Any everywhere would add nothing to
# the Args sections).
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# Only texkit's own docstrings: an override without one (`call`, `get_config`) would otherwise
# repeat Keras' docstring on every module.
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# "Attributes:" as fields of their class: a NamedTuple's fields are then not described twice.
napoleon_use_ivar = True
# Keras-style docstrings list a layer's call arguments apart from its constructor's.
napoleon_custom_sections = [("Call arguments", "params_style")]

# -- MyST -------------------------------------------------------------------------------------
myst_heading_anchors = 3

# -- HTML -------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"texkit {release}"


# -- cross references to re-exported names ----------------------------------------------------
# Docstrings name objects the way users import them (``texkit.HParams``,
# ``texkit.run.Trainer.export``, ``make_nsp_pairs`` in its package's docstring), while autodoc
# documents each object once, in the module that defines it (``texkit.hparams.core.HParams``). A
# reference that finds no target is retried at the object's defining module.


def _import_target(target: str) -> Any:
    parts = target.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(target)


def _canonical(target: str) -> str | None:
    """The dotted name under which autodoc documents what ``target`` names, or None."""
    try:
        obj = _import_target(target)
    except (ImportError, AttributeError):
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    # A property or a constant: its owner's name, then its own.
    owner, _, name = target.rpartition(".")
    owner_name = _canonical(owner) if owner.startswith("texkit.") else None
    return f"{owner_name}.{name}" if owner_name else None


def _scopes(node: Any) -> list[str]:
    """Where a relative name is looked up: the class, the module, then its parent packages."""
    module, cls = node.get("py:module") or "", node.get("py:class")
    if not module.startswith("texkit"):
        return []
    parts = module.split(".")
    packages = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    return ([f"{module}.{cls}"] if cls else []) + packages


def _resolve_reexport(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip("~.")
    scopes = [""] if target.startswith("texkit.") else _scopes(node)
    domain = env.get_domain("py")
    for scope in scopes:
        canonical = _canonical(f"{scope}.{target}" if scope else target)
        if canonical is None or canonical == node["reftarget"]:
            continue
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode
        )
        if found is not None:
            return found
    return None


def _skip_namedtuple_fields(
    app: Any, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    # The fields of a NamedTuple are described by its "Attributes:" section; their generated
    # docstrings ("Alias for field number 0") say nothing.
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return None


def _init_signature(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: Any, return_annotation: Any
) -> tuple[str, None] | None:
    # Keras layers define ``__new__(cls, *args, **kwargs)``, which autodoc would show as every
    # layer's signature; the constructor's arguments are ``__init__``'s.
    if what != "class" or signature != "(*args, **kwargs)" or "__init__" not in dir(obj):
        return None
    try:
        init = sphinx_inspect.signature(
            obj.__init__, bound_method=True, type_aliases=app.config.autodoc_type_aliases
        )
    except (TypeError, ValueError):
        return None
    return sphinx_inspect.stringify_signature(init, show_return_annotation=False), None


def setup(app: Any) -> None:
    app.connect("missing-reference", _resolve_reexport)
    app.connect("autodoc-process-signature", _init_signature)
    app.connect("autodoc-skip-member", _skip_namedtuple_fields)
