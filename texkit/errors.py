"""texkit's errors, at the bottom of the import graph so every layer can raise them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["HParamsError", "hparams_scope", "join_path"]


def join_path(path: str, key: Any) -> str:
    """``path.key``, or ``key`` alone at the top level."""
    return f"{path}.{key}" if path else str(key)


class HParamsError(ValueError):
    """A hyperparameter is unknown, of the wrong type, or out of range.

    Attributes:
        path: dotted path of the offending hyperparameter, e.g. ``"encoder.rnn_cell.kwargs.units"``
            (empty when the error concerns the whole config).
    """

    def __init__(self, message: str, path: str = ""):
        self.path = path
        prefix = f"hparams '{path}': " if path else "hparams: "
        super().__init__(prefix + message)
        self.message = message


@contextlib.contextmanager
def hparams_scope(path: str) -> Iterator[None]:
    """Prefixes ``path`` to the path of any :class:`HParamsError` raised inside.

    A module that builds a sub-module from a part of its hparams wraps the construction, so an
    error names the key as the user wrote it (``encoder.num_attention_heads``).
    """
    try:
        yield
    except HParamsError as error:
        raise HParamsError(
            error.message, join_path(path, error.path) if error.path else path
        ) from None
