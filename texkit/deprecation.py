"""Old public names kept for one release: each warns with the call that replaces it.

A renamed function stays importable under its old name for one release::

    load_bert_checkpoint = deprecated_alias(
        load_checkpoint, "tx.pretrained.load_bert_checkpoint", "tx.pretrained.load_checkpoint"
    )

Calling the alias emits a :class:`DeprecationWarning` that names the new call (with the caller's
line as its location), then runs the new function with the same arguments.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["deprecated_alias", "warn_deprecated"]


def warn_deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """Emits the :class:`DeprecationWarning` of a renamed public name: ``old`` is deprecated,
    use ``new`` (``stacklevel`` 3 points at the caller of the function that calls this)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def deprecated_alias(function: Callable[..., Any], old: str, new: str) -> Callable[..., Any]:
    """Returns ``function`` under an old name: each call warns (see :func:`warn_deprecated`),
    then calls ``function`` with the same arguments. The alias's docstring names the new call.

    >>> import warnings
    >>> def add(a, b):
    ...     return a + b
    >>> plus = deprecated_alias(add, "plus", "add")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     plus(1, 2)
    3
    >>> str(caught[0].message)
    'plus is deprecated and will be removed in the next release; use add instead.'
    """

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warn_deprecated(old, new)
        return function(*args, **kwargs)

    alias.__doc__ = f"Deprecated: use :func:`{new}` (same arguments). Removed in the next release."
    alias.__name__ = old.rsplit(".", 1)[-1]
    alias.__qualname__ = alias.__name__
    return alias
