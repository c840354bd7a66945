"""Hyperparameters: strict merging of user values into documented defaults.

Every configurable texkit class declares ``default_hparams()``, a plain nested dict. A user passes
a (partial) dict of the same shape; :class:`HParams` merges the two and validates the result:

* An unknown key is an error naming its full path and the closest known keys.
* A value must have the type of its default. An ``int`` is accepted where the default is a
  ``float`` (and stored as a float); nothing else is coerced. A default of ``None`` accepts
  anything; an empty dict ``{}`` accepts any dict (its keys are free-form).
* Nested dicts merge key by key. Lists are replaced whole, except a list whose default is a single
  dict (a template): each user element is merged into that template.
* A dict with both ``type`` and ``kwargs`` names a class. ``type`` is a registry name
  (``"LSTMCell"``) or a dotted path under an allowed prefix (see :mod:`texkit.registry`);
  ``kwargs`` is free-form but every key must be accepted by the class. When ``type`` changes,
  default ``kwargs`` the new class does not accept are dropped; a user kwarg it does not accept
  is an error. A plain string where such a pair is expected is short for ``{type: string}``
  (``activation: gelu``).
* The result is read-only. :meth:`HParams.replace` returns a new validated copy.

Config files are read with ``yaml.safe_load`` only: nothing in a file can import or run code.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

__all__ = [
    "HParams",
    "HParamsError",
    "apply_overrides",
    "check_positive",
    "check_positive_int",
    "check_rate",
    "hparams_scope",
]


class _SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (same constructors: plain data only), stricter about configs.

    * ``1e-3`` is a float: PyYAML follows YAML 1.1, where a float needs a dot (``1.0e-3``), so
      ``learning_rate: 1e-3`` would silently become the string ``"1e-3"``.
    * Aliases (``*name``) are refused: they allow self-referencing and exponentially growing
      documents, and a config does not need them.
    * A key given twice in one mapping is an error rather than "the last one wins".
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in texkit configs", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                continue  # unhashable keys are refused by the base class
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _SafeDumper(yaml.SafeDumper):
    """Writes what :class:`_SafeLoader` reads back unchanged (quotes strings such as ``"1e5"``)."""


_FLOAT_WITHOUT_DOT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
for _resolver in (_SafeLoader, _SafeDumper):
    _resolver.add_implicit_resolver(
        "tag:yaml.org,2002:float", _FLOAT_WITHOUT_DOT, list("-+0123456789")
    )


def _safe_load(stream: Any) -> Any:
    return yaml.load(stream, Loader=_SafeLoader)


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
        raise HParamsError(error.message, _join(path, error.path) if error.path else path) from None


def _at(hparams: Mapping, path: str) -> Any:
    node: Any = hparams
    for key in path.split("."):
        node = node[key]
    return node


def check_positive_int(hparams: Mapping, *paths: str, optional: bool = False) -> None:
    """Raises :class:`HParamsError` naming the first of ``paths`` that is not an int >= 1.

    With ``optional``, ``None`` is accepted too.
    """
    for path in paths:
        value = _at(hparams, path)
        if optional and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            expected = "None or a positive int" if optional else "a positive int"
            raise HParamsError(f"expected {expected}, got {value!r}", path)


def check_positive(hparams: Mapping, *paths: str) -> None:
    """Raises :class:`HParamsError` naming the first of ``paths`` that is not a number > 0."""
    for path in paths:
        value = _at(hparams, path)
        if not value > 0:
            raise HParamsError(f"expected a positive number, got {value!r}", path)


def check_rate(hparams: Mapping, *paths: str) -> None:
    """Raises :class:`HParamsError` naming the first of ``paths`` outside ``[0, 1)``."""
    for path in paths:
        value = _at(hparams, path)
        if not 0.0 <= value < 1.0:
            raise HParamsError(f"expected a rate in [0, 1), got {value!r}", path)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_type_kwargs(default: Mapping) -> bool:
    return "type" in default and "kwargs" in default


def _suggest(key: Any, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "known keys: " + ", ".join(repr(k) for k in sorted(map(str, known)))


def _accepted_kwargs(target: Any) -> set[str] | None:
    """Names of the keyword arguments ``target`` accepts; ``None`` when it accepts any."""
    if inspect.isclass(target):
        names: set[str] = set()
        for klass in target.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None or klass is object:
                continue
            try:
                params = inspect.signature(init).parameters.values()
            except (TypeError, ValueError):
                return None
            names.update(
                p.name
                for p in params
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
            )
            if not any(p.kind == p.VAR_KEYWORD for p in params):
                return names
        # Keras objects check their own **kwargs and reject unknown ones, so the named parameters
        # collected along the hierarchy are the complete list.
        if target.__module__.split(".")[0] in ("keras", "tf_keras"):
            return names
        return None
    if callable(target):
        try:
            params = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):
            return None
        if any(p.kind == p.VAR_KEYWORD for p in params):
            return None
        return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return None


def _resolve_type(value: Any, path: str) -> tuple[str | None, Any]:
    """Returns (canonical name, object) for a ``type`` value, or raises :class:`HParamsError`."""
    from texkit import registry

    if value is None:
        return None, None
    if isinstance(value, str):
        try:
            return value, registry.resolve(value)
        except HParamsError as error:
            raise HParamsError(error.message, path) from None
    if inspect.isclass(value) or callable(value):
        name = registry.name_of(value)
        if name is None:
            raise HParamsError(
                f"the class {_short(value)} cannot be named in a config: register it with "
                "texkit.registry.register(obj, name) first",
                path,
            )
        return name, value
    raise HParamsError(
        f"expected a registry name (str) or a class, got {_type_name(value)} {_short(value)}", path
    )


def _to_plain(value: Any) -> Any:
    if isinstance(value, HParams):
        return value.todict()
    if isinstance(value, Mapping):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    return value


def _check_scalar(value: Any, default: Any, path: str) -> Any:
    """Type check of one non-container value against its non-container default."""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            try:
                return float(value)
            except OverflowError:
                raise HParamsError(f"{value} is too large for a float", path) from None
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise HParamsError(
            f"expected {_type_name(default)} (default {_short(default)}), "
            f"got {_type_name(value)} {_short(value)}",
            path,
        )
    return value


def _merge_value(value: Any, default: Any, path: str, allow_new: bool) -> Any:
    if default is None:
        return _to_plain(value)
    if isinstance(value, HParams):
        value = value.todict()
    if isinstance(default, Mapping):
        if isinstance(value, str) and _is_type_kwargs(default):
            value = {"type": value}  # shorthand: a name alone
        if not isinstance(value, Mapping):
            raise HParamsError(
                f"expected a dict (default {_short(default)}), "
                f"got {_type_name(value)} {_short(value)}",
                path,
            )
        if not default:
            return _to_plain(value)
        return _merge_dict(value, default, path, allow_new)
    if isinstance(default, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            raise HParamsError(
                f"expected a list (default {_short(list(default))}), "
                f"got {_type_name(value)} {_short(value)}",
                path,
            )
        if len(default) == 1 and isinstance(default[0], Mapping):
            return [
                _merge_value(item, default[0], _join(path, i), allow_new)
                for i, item in enumerate(value)
            ]
        if default and all(type(d) is type(default[0]) for d in default):
            return [_check_scalar(item, default[0], _join(path, i)) for i, item in enumerate(value)]
        return _to_plain(value)
    return _check_scalar(value, default, path)


def _merge_dict(user: Mapping, default: Mapping, path: str, allow_new: bool) -> dict:
    for key in user:
        if not isinstance(key, str):
            raise HParamsError(
                f"keys must be strings, got {_type_name(key)} {_short(key)}", _join(path, key)
            )
    if _is_type_kwargs(default):
        return _merge_type_kwargs(user, default, path, allow_new)
    merged: dict = {}
    for key, default_value in default.items():
        if key in user:
            merged[key] = _merge_value(user[key], default_value, _join(path, key), allow_new)
        else:
            merged[key] = _to_plain(default_value)
    for key in user:
        if key in default:
            continue
        if not allow_new:
            raise HParamsError(f"unknown key; {_suggest(key, list(default))}", _join(path, key))
        merged[key] = _to_plain(user[key])
    return merged


def _merge_type_kwargs(user: Mapping, default: Mapping, path: str, allow_new: bool) -> dict:
    if not allow_new:
        # Checked here, not by _merge_dict below, so the suggestion includes 'type' and 'kwargs'.
        for key in user:
            if key not in default:
                raise HParamsError(f"unknown key; {_suggest(key, list(default))}", _join(path, key))
    others = {k: v for k, v in default.items() if k not in ("type", "kwargs")}
    merged = _merge_dict(
        {k: v for k, v in user.items() if k not in ("type", "kwargs")}, others, path, allow_new
    )
    type_path = _join(path, "type")
    kwargs_path = _join(path, "kwargs")
    default_name, default_obj = _resolve_type(default["type"], type_path)
    if "type" in user and user["type"] is not None:
        name, obj = _resolve_type(user["type"], type_path)
    else:
        name, obj = default_name, default_obj
    accepted = None if obj is None else _accepted_kwargs(obj)

    default_kwargs = dict(_to_plain(default["kwargs"]) or {})
    if obj is not default_obj:
        # A new class keeps only the defaults it understands.
        default_kwargs = {
            k: v for k, v in default_kwargs.items() if accepted is None or k in accepted
        }
    user_kwargs = user.get("kwargs", None)
    if isinstance(user_kwargs, HParams):
        user_kwargs = user_kwargs.todict()
    if user_kwargs is None:
        user_kwargs = {}
    if not isinstance(user_kwargs, Mapping):
        raise HParamsError(
            f"expected a dict of keyword arguments, got {_type_name(user_kwargs)} "
            f"{_short(user_kwargs)}",
            kwargs_path,
        )
    for key in user_kwargs:
        if not isinstance(key, str):
            raise HParamsError(f"keys must be strings, got {_short(key)}", kwargs_path)
        if accepted is not None and key not in accepted:
            raise HParamsError(
                f"{name} does not accept the keyword argument {key!r}; "
                f"{_suggest(key, sorted(accepted))}",
                _join(kwargs_path, key),
            )
    kwargs = {**default_kwargs, **_to_plain(user_kwargs)}
    return {"type": name, "kwargs": kwargs, **merged}


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
                f"expected a dict of hyperparameters, got {_type_name(hparams)} {_short(hparams)}"
            )
        if isinstance(hparams, HParams):
            hparams = hparams.todict()
        hparams = dict(hparams or {})
        if default_hparams is None:
            data = _to_plain(hparams)
        else:
            if isinstance(default_hparams, HParams):
                default_hparams = default_hparams.todict()
            data = _merge_dict(hparams, default_hparams, "", allow_new_hparam)
        self._init(data, _to_plain(default_hparams), allow_new_hparam)

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
        raise AttributeError(f"HParams has no key {name!r}; {_suggest(name, list(data))}")

    def __getitem__(self, key: str) -> Any:
        if key in self._data:
            return self._data[key]
        raise KeyError(f"HParams has no key {key!r}; {_suggest(key, list(self._data))}")

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
        return {k: _to_plain(v) for k, v in self._data.items()}

    def to_yaml(self) -> str:
        """The hyperparameters as a YAML document (readable back by :meth:`from_yaml`)."""
        return yaml.dump(
            self.todict(), Dumper=_SafeDumper, sort_keys=False, default_flow_style=False
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self.todict() == _to_plain(other)
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
            _set_path(user, key.split("."), value, key, retype=True)
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
            FileNotFoundError: the file does not exist.
            HParamsError: the file is not valid YAML, holds a tag that is not plain data (such as
                ``!!python/object``), is not a mapping, or fails validation.
        """
        return cls(_load_yaml(path), default_hparams, allow_new_hparam)


def _load_yaml(path: str | os.PathLike) -> dict:
    """Safely loads a YAML mapping from ``path``; see :meth:`HParams.from_yaml`."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"hparams file not found: {path}")
    with open(path, encoding="utf-8") as stream:
        try:
            data = _safe_load(stream)
        except yaml.YAMLError as error:
            raise HParamsError(f"cannot read {path} as plain YAML data: {error}") from None
        except UnicodeDecodeError as error:
            raise HParamsError(f"{path} is not UTF-8 text: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HParamsError(f"{path} must hold a mapping at the top level, got {_type_name(data)}")
    return data


def _set_path(target: dict, keys: list[str], value: Any, full: str, retype: bool = False) -> None:
    node: Any = target
    for depth, key in enumerate(keys[:-1]):
        if isinstance(node, list):
            node = _list_item(node, key, full)
            if not isinstance(node, (dict, list)):
                raise HParamsError(
                    f"cannot set a nested key: '{'.'.join(keys[: depth + 1])}' holds "
                    f"{_type_name(node)} {_short(node)}, not a dict",
                    full,
                )
            continue
        if key not in node or node[key] is None:
            node[key] = {}
        if not isinstance(node[key], (dict, list)):
            raise HParamsError(
                f"cannot set a nested key: '{'.'.join(keys[: depth + 1])}' holds "
                f"{_type_name(node[key])} {_short(node[key])}, not a dict",
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
        if retype and last == "type" and _is_type_kwargs(node):
            node["kwargs"] = _kwargs_kept_for(node, value)
        node[last] = value


def _deep_update(base: dict, changes: Mapping, retype: bool = False) -> dict:
    result = dict(base)
    if retype and _is_type_kwargs(result) and "type" in changes:
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
        _, target = _resolve_type(new_type, "")
    except HParamsError:
        return kwargs  # validation reports the bad type, with its path
    accepted = _accepted_kwargs(target)
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


def apply_overrides(
    hparams_dict: Mapping | None,
    overrides: Sequence[str],
    default_hparams: Mapping | None = None,
) -> dict:
    """Applies ``"dotted.key=value"`` overrides to a (user) hyperparameter dict.

    Each value is parsed with ``yaml.safe_load`` (``4`` is an int, ``0.1`` or ``1e-3`` a float,
    ``true`` a bool, ``[1, 2]`` a list, ``null`` None). A list element is addressed by its index
    (``layers.0.units=8``).

    Args:
        hparams_dict: the user dict to start from (not modified).
        overrides: strings of the form ``key=value``.
        default_hparams: when given, the result is validated against these defaults at once, so a
            mistyped key fails here rather than later.

    Returns:
        A new dict with the overrides applied.

    Raises:
        HParamsError: an override without ``=``, a value that is not plain YAML, or (with
            ``default_hparams``) a result that fails validation.
    """
    if isinstance(overrides, str):
        overrides = [overrides]
    result = _to_plain(dict(hparams_dict or {}))
    for override in overrides:
        if not isinstance(override, str) or "=" not in override:
            raise HParamsError(f"override {override!r} must have the form key=value")
        key, _, text = override.partition("=")
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise HParamsError(f"override {override!r} has an empty key")
        try:
            value = _safe_load(text) if text.strip() else ""
        except yaml.YAMLError as error:
            raise HParamsError(f"cannot parse the value {text!r}: {error}", key) from None
        _set_path(result, key.split("."), value, key, retype=True)
    if default_hparams is not None:
        HParams(result, default_hparams)
    return result
