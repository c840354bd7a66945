"""texkit's errors, at the bottom of the import graph so every layer can raise them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_DIGITS",
    "HParamsError",
    "Problems",
    "check_depth",
    "hparams_scope",
    "join_path",
]

# The most problems one HParamsError lists; the others are counted.
MAX_LISTED = 20
# The deepest nesting of dicts and lists a config may have (real ones use under ten levels).
MAX_DEPTH = 64
# The most digits an integer in a config or a file texkit reads may have: sizes and ids have
# under 20, but transformers writes an unset model_max_length as int(1e30), 31 digits; Python's
# own limit (4,300) fails without naming the key or file.
MAX_DIGITS = 40


def check_depth(value: Any, what: str = "") -> None:
    """Raises :class:`HParamsError` when ``value``'s dicts and lists nest deeper than
    :data:`MAX_DEPTH`, its path the keys down to where the limit was passed (the middle elided)
    and ``what`` (if given) starting its message. Checked without recursion, so any depth is
    reported, not crashed on; only containers are visited, so a long flat list costs no copy."""
    if not _is_container(value):
        return
    # Each entry: (container, its depth, the entry of its parent, its key there).
    stack: list[tuple[Any, int, Any, Any]] = [(value, 0, None, None)]
    while stack:
        entry = stack.pop()
        node, depth = entry[0], entry[1]
        if isinstance(node, dict) or hasattr(node, "todict"):
            items: Iterable[tuple[Any, Any]] = node.items()
        elif not any(map(_is_container_type, set(map(type, node)))):
            continue  # a list of numbers (an init_value) is skipped at C speed
        else:
            items = enumerate(node)
        for key, child in items:
            if not _is_container(child):
                continue
            if depth + 1 >= MAX_DEPTH:
                message = f"nested deeper than {MAX_DEPTH} levels"
                raise HParamsError(
                    f"{what} {message}" if what else message, _depth_path(entry, key)
                )
            stack.append((child, depth + 1, entry, key))


def _is_container(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple)) or hasattr(value, "todict")


def _is_container_type(kind: type) -> bool:
    return issubclass(kind, (dict, list, tuple)) or hasattr(kind, "todict")


def _depth_path(entry: tuple, key: Any) -> str:
    """The dotted path of ``key`` under ``entry``, its middle elided (it is ``MAX_DEPTH`` long)."""
    keys = [key]
    while entry is not None and entry[2] is not None:
        keys.append(entry[3])
        entry = entry[2]
    keys.reverse()
    parts = [_short_key(k) for k in keys]
    if len(parts) > 8:
        parts = parts[:4] + [f"...({len(parts) - 6} more levels)..."] + parts[-2:]
    return ".".join(parts)


def _short_key(key: Any) -> str:
    try:
        text = key if isinstance(key, str) else repr(key)
    except ValueError:  # an int too long to print
        text = f"<{type(key).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."


def join_path(path: str, key: Any) -> str:
    """``path.key``, or ``key`` alone at the top level."""
    return f"{path}.{key}" if path else str(key)


def _line(path: str, message: str) -> str:
    return f"hparams '{path}': {message}" if path else f"hparams: {message}"


class HParamsError(ValueError):
    """A hyperparameter is unknown, of the wrong type, or out of range; or several are.

    Validation collects every problem of a config before it fails, so one error may list many
    (:meth:`collected`), each with its path, the first :data:`MAX_LISTED` shown.

    Attributes:
        path: dotted path of the (first) offending hyperparameter, e.g.
            ``"encoder.rnn_cell.kwargs.units"`` (empty when the error concerns the whole config).
        message: what is wrong there.
        problems: every ``(path, message)`` of the error, in the order found.
    """

    def __init__(self, message: str, path: str = ""):
        self.path = path
        self.message = message
        self.problems = [(path, message)]
        super().__init__(_line(path, message))

    @classmethod
    def collected(cls, problems: Iterable[tuple[str, str]]) -> HParamsError:
        """One error for ``problems`` (``(path, message)`` pairs; at least one)."""
        problems = list(dict.fromkeys(problems))  # each once, in order
        error = cls(problems[0][1], problems[0][0])
        if len(problems) > 1:
            lines = [_line(path, message) for path, message in problems[:MAX_LISTED]]
            if len(problems) > MAX_LISTED:
                lines.append(f"... and {len(problems) - MAX_LISTED} more")
            error.args = (f"{len(problems)} problems:\n  " + "\n  ".join(lines),)
            error.problems = problems
        return error

    def relocated(self, where: Callable[[str], str]) -> HParamsError:
        """The same problems at the paths ``where(path)`` (e.g. under a parent key)."""
        return HParamsError.collected([(where(path), message) for path, message in self.problems])


class Problems:
    """Collects :class:`HParamsError` problems so that validation goes on after one.

    Example:
        >>> problems = Problems()
        >>> for key in ("a", "b"):
        ...     with problems.check():
        ...         raise HParamsError("unknown key", key)
        >>> problems.raise_if_any()
        Traceback (most recent call last):
        ...
        texkit.errors.HParamsError: 2 problems:
          hparams 'a': unknown key
          hparams 'b': unknown key
    """

    def __init__(self) -> None:
        self.found: list[tuple[str, str]] = []

    @contextlib.contextmanager
    def check(self) -> Iterator[None]:
        """Runs the block; an :class:`HParamsError` inside is recorded instead of raised."""
        try:
            yield
        except HParamsError as error:
            self.found.extend(error.problems)

    def add(self, message: str, path: str = "") -> None:
        self.found.append((path, message))

    def raise_if_any(self) -> None:
        if self.found:
            raise HParamsError.collected(self.found)


@contextlib.contextmanager
def hparams_scope(path: str) -> Iterator[None]:
    """Prefixes ``path`` to the path of any :class:`HParamsError` raised inside.

    A module that builds a sub-module from a part of its hparams wraps the construction, so an
    error names the key as the user wrote it (``encoder.num_attention_heads``).
    """
    try:
        yield
    except HParamsError as error:
        raise error.relocated(lambda inner: join_path(path, inner) if inner else path) from None
