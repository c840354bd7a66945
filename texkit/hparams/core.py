"""The :class:`HParams` core: the read-only result of merging, its copies, and range checks."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from typing import Any

from texkit.errors import HParamsError, check_depth
from texkit.hparams.rules import (
    accepted_kwargs,
    is_type_kwargs,
    merge_dict,
    resolve_type,
    short,
    suggest,
    to_plain,
    type_name,
)
from texkit.hparams.yaml_format import dump_yaml, load_yaml_file

__all__ = [
    "HParams",
    "check_layer_count",
    "check_positive",
    "check_positive_int",
    "check_rate",
    "check_table_size",
    "check_width",
    "set_path",
]


def _at(hparams: Mapping, path: str) -> Any:
    node: Any = hparams
    for key in path.split("."):
        node = node[key]
    return node


# Bounds that admit every real model and refuse typos (and hostile configs) before anything is
# allocated. Each is a module constant: a model beyond one raises it, e.g.
# ``texkit.hparams.core.MAX_DIM = 1 << 22``, before building.
#
# MAX_LAYERS: layer counts (``num_blocks: 1000000`` would build for minutes).
# MAX_SIZE: the size of one dimension (a vocabulary, a number of positions or classes).
# MAX_DIM: the width of one vector (embedding and hidden sizes, attention units, feed-forward
#   sizes); the widest released models stay under 75,000 (PaLM's feed-forward: 73,728).
# MAX_ELEMENTS: the values of one table or buffer that a module allocates (rows x width, e.g.
#   vocab_size x dim or positions x dim): 2**31 - 1, 8 GiB in float32; the largest released
#   embedding tables (Llama 3 405B: 128,256 x 16,384) fit.
MAX_LAYERS = 1024
MAX_SIZE = 2**31 - 1
MAX_DIM = 1 << 20
MAX_ELEMENTS = 2**31 - 1


def check_positive_int(
    hparams: Mapping, *paths: str, optional: bool = False, maximum: int | None = None
) -> None:
    """Raises :class:`HParamsError` naming the first of ``paths`` that is not an int in
    ``[1, maximum]`` (by default :data:`MAX_SIZE`, the size of one dimension; see
    :func:`check_width` for widths and :func:`check_layer_count` for layer counts).

    With ``optional``, ``None`` is accepted too.
    """
    maximum = MAX_SIZE if maximum is None else maximum
    for path in paths:
        value = _at(hparams, path)
        if optional and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
            expected = "a positive int"
            if isinstance(value, int) and not isinstance(value, bool) and value > maximum:
                expected = f"at most {maximum}"
            expected = f"None or {expected}" if optional else expected
            raise HParamsError(f"expected {expected}, got {short(value)}", path)


def check_width(hparams: Mapping, *paths: str, optional: bool = False) -> None:
    """:func:`check_positive_int` for widths (embedding and hidden sizes, units): at most
    :data:`MAX_DIM`."""
    check_positive_int(hparams, *paths, optional=optional, maximum=MAX_DIM)


def check_layer_count(hparams: Mapping, *paths: str) -> None:
    """:func:`check_positive_int` for layer counts: at most :data:`MAX_LAYERS`."""
    check_positive_int(hparams, *paths, maximum=MAX_LAYERS)


def check_table_size(rows: int, width: int, path: str, what: str = "a table") -> None:
    """Raises :class:`HParamsError` naming ``path`` when ``rows`` x ``width`` values (``what``:
    a table, a buffer) are more than :data:`MAX_ELEMENTS`: checked before the module allocates
    them, so a typo or a hostile config fails at once instead of exhausting memory."""
    elements = int(rows) * int(width)
    if elements > MAX_ELEMENTS:
        raise HParamsError(
            f"{rows:,} x {width:,}: {what} of {elements:,} values, more than texkit allocates in "
            f"one ({MAX_ELEMENTS:,}; texkit.hparams.core.MAX_ELEMENTS)",
            path,
        )


def check_positive(hparams: Mapping, *paths: str) -> None:
    """Raises :class:`HParamsError` naming the first of ``paths`` that is not a finite
    number > 0."""
    for path in paths:
        value = _at(hparams, path)
        if not 0 < value < math.inf:
            raise HParamsError(f"expected a finite positive number, got {value!r}", path)


def check_rate(hparams: Mapping, *paths: str) -> None:
    """Raises :class:`HParamsError` naming the first of ``paths`` outside ``[0, 1)``."""
    for path in paths:
        value = _at(hparams, path)
        if not 0.0 <= value < 1.0:
            raise HParamsError(f"expected a rate in [0, 1), got {value!r}", path)


def _freeze(value: Any, default: Any, allow_new: bool) -> Any:
    """Read-only form of a validated value; nested dicts keep their defaults for ``replace``."""
    if isinstance(value, Mapping):
        if isinstance(default, Mapping) and default:
            return HParams._from_validated(value, default, allow_new)
        return HParams._from_validated(value, None, True)  # free-form
    if isinstance(value, list):
        template = None
        if isinstance(default, (list, tuple)) and len(default) == 1:
            template = default[0] if isinstance(default[0], Mapping) else None
        return tuple(_freeze(v, template, allow_new) for v in value)
    return value


class HParams(Mapping):
    """Read-only hyperparameters: user values merged into defaults and validated.

    Args:
        hparams: a dict (or ``HParams``) of user values, possibly partial; ``None`` for defaults.
        default_hparams: the defaults, usually ``SomeClass.default_hparams()``. ``None`` wraps
            ``hparams`` as given, without validation.
        allow_new_hparam: accept keys that the defaults do not have.

    Raises:
        HParamsError: on an unknown key, a value of the wrong type or a bad ``type`` name.

    A key that shares its name with a method (``keys``, ``items``, ``get``, ``replace``, ...) is
    read with ``hp["items"]``; attribute access returns the method.

    Example:
        >>> hp = HParams({"dim": 64}, {"dim": 100, "dropout_rate": 0.0, "name": "embedder"})
        >>> hp.dim, hp["dropout_rate"]
        (64, 0.0)
        >>> hp.replace(dim=32).dim
        32
    """

    __slots__ = ("_data", "_defaults", "_allow_new")

    def __init__(
        self,
        hparams: Mapping | None,
        default_hparams: Mapping | None,
        allow_new_hparam: bool = False,
    ):
        if hparams is not None and not isinstance(hparams, Mapping):
            raise HParamsError(
                f"expected a dict of hyperparameters, got {type_name(hparams)} {short(hparams)}"
            )
        if isinstance(hparams, HParams):
            hparams = hparams.todict()
        check_depth(hparams)
        hparams = dict(hparams or {})
        if default_hparams is None:
            data = to_plain(hparams)
        else:
            if isinstance(default_hparams, HParams):
                default_hparams = default_hparams.todict()
            data = merge_dict(hparams, default_hparams, "", allow_new_hparam)
        self._init(data, to_plain(default_hparams), allow_new_hparam)

    def _init(self, data: Mapping, defaults: Mapping | None, allow_new: bool) -> None:
        sub = defaults or {}
        frozen = {k: _freeze(v, sub.get(k), allow_new) for k, v in data.items()}
        object.__setattr__(self, "_data", frozen)
        object.__setattr__(self, "_defaults", defaults)
        object.__setattr__(self, "_allow_new", allow_new)

    @classmethod
    def _from_validated(cls, data: Mapping, defaults: Mapping | None, allow_new: bool) -> HParams:
        instance = cls.__new__(cls)
        instance._init(data, defaults, allow_new)
        return instance

    # -- reading -------------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        data = object.__getattribute__(self, "_data")
        if name in data:
            return data[name]
        raise AttributeError(f"HParams has no key {name!r}; {suggest(name, list(data))}")

    def __getitem__(self, key: str) -> Any:
        if key in self._data:
            return self._data[key]
        raise KeyError(f"HParams has no key {key!r}; {suggest(key, list(self._data))}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when absent."""
        return self._data.get(key, default)

    def todict(self) -> dict:
        """A deep copy as plain dicts and lists."""
        return {k: to_plain(v) for k, v in self._data.items()}

    def to_yaml(self) -> str:
        """The hyperparameters as a YAML document (readable back by :meth:`from_yaml`)."""
        return dump_yaml(self.todict())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self.todict() == to_plain(other)
        return NotImplemented

    def __hash__(self) -> int:
        # Equal mappings have equal keys (1 == 1.0, so values cannot be hashed by their text).
        return hash(tuple(sorted(self._data)))

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self._data.items())
        return f"HParams({body})"

    # -- read-only ------------------------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"HParams is read-only (tried to set {name!r}); use hparams.replace({name}=...)"
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"HParams is read-only (tried to delete {name!r})")

    def __reduce__(self):
        return (HParams, (self.todict(), self._defaults, self._allow_new))

    # -- derived copies -------------------------------------------------------------------------

    def replace(self, **changes: Any) -> HParams:
        """A new, validated ``HParams`` with ``changes`` merged in.

        Keys may be dotted paths (``hp.replace(**{"encoder.num_layers": 4})``); a dict value
        merges into the nested dict it names. A change of a ``type`` keeps only the current
        ``kwargs`` that the new class accepts (the current values act as its defaults); ``kwargs``
        given with the change are validated as usual.
        """
        user = self.todict()
        for key, value in changes.items():
            set_path(user, key.split("."), value, key, retype=True)
        if self._defaults is None and not self._allow_new:
            return HParams(user, None)
        return HParams(user, self._defaults, self._allow_new)

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike,
        default_hparams: Mapping | None,
        allow_new_hparam: bool = False,
    ) -> HParams:
        """Reads a YAML file (``yaml.safe_load`` only) and validates it against the defaults.

        Raises:
            FileNotFoundError: the file does not exist, or is a folder.
            HParamsError: the file is not a regular file (a FIFO, a device such as
                ``/dev/zero``), is larger than :data:`texkit.files.MAX_CONFIG_BYTES`, is not valid
                YAML, holds a tag that is not plain data (such as ``!!python/object``), an
                integer of more than 30 digits or nesting deeper than 64 levels, is not a
                mapping, or fails validation.
        """
        return cls(load_yaml_file(path), default_hparams, allow_new_hparam)


def set_path(target: dict, keys: list[str], value: Any, full: str, retype: bool = False) -> None:
    node: Any = target
    for depth, key in enumerate(keys[:-1]):
        if isinstance(node, list):
            node = _list_item(node, key, full)
            if not isinstance(node, (dict, list)):
                raise HParamsError(
                    f"cannot set a nested key: '{'.'.join(keys[: depth + 1])}' holds "
                    f"{type_name(node)} {short(node)}, not a dict",
                    full,
                )
            continue
        if key not in node or node[key] is None:
            node[key] = {}
        if not isinstance(node[key], (dict, list)):
            raise HParamsError(
                f"cannot set a nested key: '{'.'.join(keys[: depth + 1])}' holds "
                f"{type_name(node[key])} {short(node[key])}, not a dict",
                full,
            )
        node = node[key]
    last = keys[-1]
    if isinstance(node, list):
        index = _list_index(node, last, full)
        node[index] = value
    elif isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last] = _deep_update(node[last], value, retype)
    else:
        if retype and last == "type" and is_type_kwargs(node):
            node["kwargs"] = _kwargs_kept_for(node, value)
        node[last] = value


def _deep_update(base: dict, changes: Mapping, retype: bool = False) -> dict:
    result = dict(base)
    if retype and is_type_kwargs(result) and "type" in changes:
        result["kwargs"] = _kwargs_kept_for(result, changes["type"])
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), dict):
            result[key] = _deep_update(result[key], value, retype)
        else:
            result[key] = value
    return result


def _kwargs_kept_for(pair: Mapping, new_type: Any) -> Any:
    """The ``kwargs`` of a ``{type, kwargs}`` pair that ``new_type`` accepts."""
    kwargs = pair["kwargs"]
    if new_type is None or not isinstance(kwargs, Mapping):
        return kwargs
    try:
        _, target = resolve_type(new_type, "")
    except HParamsError:
        return kwargs  # validation reports the bad type, with its path
    accepted = accepted_kwargs(target)
    if accepted is None:
        return kwargs
    return {k: v for k, v in kwargs.items() if k in accepted}


def _list_index(node: list, key: str, full: str) -> int:
    try:
        index = int(key)
    except ValueError:
        raise HParamsError(f"{key!r} is not an index into a list", full) from None
    if not -len(node) <= index < len(node):
        raise HParamsError(f"index {index} out of range for a list of {len(node)}", full)
    return index


def _list_item(node: list, key: str, full: str) -> Any:
    return node[_list_index(node, key, full)]
