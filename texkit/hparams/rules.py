"""The merge rules of hyperparameters: user values checked against their defaults.

These functions work on plain dicts and lists (an :class:`~texkit.hparams.HParams` is read as the
mapping it is); :mod:`texkit.hparams.core` wraps their result in a read-only ``HParams``. The
rules themselves are documented in :mod:`texkit.hparams`.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

from texkit import registry
from texkit.errors import HParamsError, Problems, join_path
from texkit.hparams.texar_names import texar_key_hint, texar_type_hint

__all__ = [
    "accepted_kwargs",
    "is_type_kwargs",
    "merge_dict",
    "resolve_type",
    "short",
    "suggest",
    "to_plain",
    "type_name",
]


def type_name(value: Any) -> str:
    return type(value).__name__


def short(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int past Python's 4,300 digits
        if not isinstance(value, int):
            raise
        return f"an int of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_type_kwargs(default: Mapping) -> bool:
    return "type" in default and "kwargs" in default


def suggest(key: Any, known: Sequence[str], path: str = "") -> str:
    """What to write instead of the unknown ``key`` (at ``path``): Texar's name's replacement
    (:mod:`texkit.hparams.texar_names`), else the closest known keys, else all of them."""
    hint = texar_key_hint(str(key), path)
    if hint is not None:
        return hint
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "known keys: " + ", ".join(repr(k) for k in sorted(map(str, known)))


def accepted_kwargs(target: Any) -> set[str] | None:
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


def resolve_type(value: Any, path: str) -> tuple[str | None, Any]:
    """Returns (canonical name, object) for a ``type`` value, or raises :class:`HParamsError`."""
    if value is None:
        return None, None
    if isinstance(value, str):
        try:
            return value, registry.resolve(value)
        except HParamsError as error:
            hint = texar_type_hint(value)
            message = f"unknown type {value!r}; {hint}" if hint else error.message
            raise HParamsError(message, path) from None
    if inspect.isclass(value) or callable(value):
        name = registry.name_of(value)
        if name is None:
            raise HParamsError(
                f"the class {short(value)} cannot be named in a config: register it with "
                "texkit.registry.register(obj, name) first",
                path,
            )
        return name, value
    raise HParamsError(
        f"expected a registry name (str) or a class, got {type_name(value)} {short(value)}", path
    )


def to_plain(value: Any) -> Any:
    if isinstance(value, Mapping):  # an HParams too
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
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
            f"expected {type_name(default)} (default {short(default)}), "
            f"got {type_name(value)} {short(value)}",
            path,
        )
    return value


def _merge_value(value: Any, default: Any, path: str, allow_new: bool) -> Any:
    if default is None:
        return to_plain(value)
    if isinstance(default, Mapping):
        if isinstance(value, str) and is_type_kwargs(default):
            value = {"type": value}  # shorthand: a name alone
        if not isinstance(value, Mapping):
            raise HParamsError(
                f"expected a dict (default {short(default)}), "
                f"got {type_name(value)} {short(value)}",
                path,
            )
        if not default:
            return to_plain(value)
        return merge_dict(value, default, path, allow_new)
    if isinstance(default, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            raise HParamsError(
                f"expected a list (default {short(list(default))}), "
                f"got {type_name(value)} {short(value)}",
                path,
            )
        if len(default) == 1 and isinstance(default[0], Mapping):
            problems = Problems()
            items = []
            for i, item in enumerate(value):
                with problems.check():
                    items.append(_merge_value(item, default[0], join_path(path, i), allow_new))
            problems.raise_if_any()
            return items
        if default and all(type(d) is type(default[0]) for d in default):
            return [
                _check_scalar(item, default[0], join_path(path, i)) for i, item in enumerate(value)
            ]
        return to_plain(value)
    return _check_scalar(value, default, path)


def merge_dict(user: Mapping, default: Mapping, path: str, allow_new: bool) -> dict:
    """``user`` merged into ``default``, every problem of it found before one error lists them
    all (:meth:`~texkit.errors.HParamsError.collected`)."""
    problems = Problems()
    for key in user:
        if not isinstance(key, str):
            problems.add(
                f"keys must be strings, got {type_name(key)} {short(key)}", join_path(path, key)
            )
    problems.raise_if_any()
    if is_type_kwargs(default):
        return _merge_type_kwargs(user, default, path, allow_new)
    merged: dict = {}
    for key, default_value in default.items():
        if key in user:
            with problems.check():
                merged[key] = _merge_value(
                    user[key], default_value, join_path(path, key), allow_new
                )
        else:
            merged[key] = to_plain(default_value)
    for key in user:
        if key in default:
            continue
        if not allow_new:
            where = join_path(path, key)
            problems.add(f"unknown key; {suggest(key, list(default), where)}", where)
            continue
        merged[key] = to_plain(user[key])
    problems.raise_if_any()
    return merged


def _merge_type_kwargs(user: Mapping, default: Mapping, path: str, allow_new: bool) -> dict:
    problems = Problems()
    if not allow_new:
        # Checked here, not by merge_dict below, so the suggestion includes 'type' and 'kwargs'.
        for key in user:
            if key not in default:
                where = join_path(path, key)
                problems.add(f"unknown key; {suggest(key, list(default), where)}", where)
    others = {k: v for k, v in default.items() if k not in ("type", "kwargs")}
    merged: dict = {}
    with problems.check():  # (unknown keys were reported above)
        merged = merge_dict(
            {
                k: v
                for k, v in user.items()
                if k not in ("type", "kwargs") and (allow_new or k in others)
            },
            others,
            path,
            allow_new,
        )
    type_path = join_path(path, "type")
    kwargs_path = join_path(path, "kwargs")
    default_name, default_obj = resolve_type(default["type"], type_path)
    name, obj = default_name, default_obj
    if "type" in user and user["type"] is not None:
        try:
            name, obj = resolve_type(user["type"], type_path)
        except HParamsError as error:
            # The kwargs cannot be checked against an unknown class.
            problems.found.extend(error.problems)
            problems.raise_if_any()
    accepted = None if obj is None else accepted_kwargs(obj)

    default_kwargs = dict(to_plain(default["kwargs"]) or {})
    if obj is not default_obj:
        # A new class keeps only the defaults it understands.
        default_kwargs = {
            k: v for k, v in default_kwargs.items() if accepted is None or k in accepted
        }
    user_kwargs = user.get("kwargs", None)
    if user_kwargs is None:
        user_kwargs = {}
    if not isinstance(user_kwargs, Mapping):
        problems.add(
            f"expected a dict of keyword arguments, got {type_name(user_kwargs)} "
            f"{short(user_kwargs)}",
            kwargs_path,
        )
        user_kwargs = {}
    for key in user_kwargs:
        if not isinstance(key, str):
            problems.add(f"keys must be strings, got {short(key)}", kwargs_path)
        elif accepted is not None and key not in accepted:
            where = join_path(kwargs_path, key)
            problems.add(
                f"{name} does not accept the keyword argument {key!r}; "
                f"{suggest(key, sorted(accepted), where)}",
                where,
            )
    problems.raise_if_any()
    kwargs = {**default_kwargs, **to_plain(user_kwargs)}
    if user_kwargs or obj is not default_obj:
        failure = _try_out(obj, kwargs)
        if failure is not None:
            problems.add(f"{name} with these kwargs fails: {failure}", kwargs_path)
            problems.raise_if_any()
    return {"type": name, "kwargs": kwargs, **merged}


def _try_out(obj: Any, kwargs: dict) -> str | None:
    """Makes the initializer, regularizer or constraint ``obj(**kwargs)`` and applies it to a
    2 x 2 input; returns the first line of the error if that fails, else None.

    Their values (an initializer's ``minval: "a"``, a string ``stddev``) are otherwise checked
    only when a layer is built, far from the key. Random initializers get ``seed: 0`` unless
    one is given, so that the trial draws on no global random state. Layers are not made (that
    would number their default names), nor any other class.
    """
    import keras
    import tensorflow as tf

    kinds = (
        keras.initializers.Initializer,
        keras.regularizers.Regularizer,
        keras.constraints.Constraint,
    )
    if not (isinstance(obj, type) and issubclass(obj, kinds)):
        return None
    trial = dict(kwargs)
    if trial.get("seed") is None and "seed" in (accepted_kwargs(obj) or ()):
        trial["seed"] = 0
    try:
        with tf.init_scope():
            instance = obj(**trial)
            if issubclass(obj, keras.initializers.Initializer):
                instance(shape=(2, 2), dtype="float32")
            else:
                instance(tf.ones((2, 2)))
    except Exception as error:  # noqa: BLE001 - any failure of the user's values is reported
        line = (str(error).strip().splitlines() or [""])[0]
        line = re.sub(r"\{\{[^}]*\}\}|\[Op:\w+\].*$", "", line).strip()
        return (line or type(error).__name__)[:200]
    return None
