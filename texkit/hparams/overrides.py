"""The command-line front end of hparams: ``dotted.key=value`` overrides of a config."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml

from texkit.errors import MAX_DEPTH, HParamsError, check_depth
from texkit.hparams.core import HParams, set_path
from texkit.hparams.rules import short, to_plain
from texkit.hparams.yaml_format import one_line, safe_load

__all__ = ["apply_overrides"]


def _abridged(key: str, limit: int = 80) -> str:
    return key if len(key) <= limit else key[: limit - 3] + "..."


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
        HParamsError: an override without ``=``, a key of more than
            :data:`~texkit.errors.MAX_DEPTH` parts, a value that is not plain YAML (or holds an
            integer of more than :data:`~texkit.errors.MAX_DIGITS` digits), a result nested
            deeper than ``MAX_DEPTH`` levels, or (with ``default_hparams``) a result that fails
            validation.
    """
    if isinstance(overrides, str):
        overrides = [overrides]
    result = to_plain(dict(hparams_dict or {}))
    for override in overrides:
        if not isinstance(override, str) or "=" not in override:
            raise HParamsError(f"override {short(override)} must have the form key=value")
        key, _, text = override.partition("=")
        key = key.strip()
        parts = key.split(".")
        if not key or any(not part for part in parts):
            raise HParamsError(f"override {short(override)} has an empty key")
        if len(parts) > MAX_DEPTH:
            raise HParamsError(
                f"override key of {len(parts):,} parts, nested deeper than {MAX_DEPTH} levels",
                _abridged(key),
            )
        try:
            value = safe_load(text) if text.strip() else ""
        except yaml.YAMLError as error:
            raise HParamsError(
                f"cannot parse the value {short(text)}: {one_line(error)}", _abridged(key)
            ) from None
        set_path(result, parts, value, key, retype=True)
    check_depth(result)
    if default_hparams is not None:
        HParams(result, default_hparams)
    return result
