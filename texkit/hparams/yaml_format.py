"""YAML for configs: ``yaml.safe_load``'s plain data, read more strictly, and written back.

Nothing in a config file can import or run code: only PyYAML's safe constructors are used. A
config file must be a regular file of at most :data:`texkit.files.MAX_CONFIG_BYTES` (16 MiB;
assign a larger value to that constant to read a larger one): a FIFO, a device such as
``/dev/zero`` or a folder is refused naming the path, without blocking.
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from texkit import files
from texkit.errors import MAX_DEPTH, MAX_DIGITS, HParamsError

__all__ = ["dump_yaml", "load_yaml_file", "one_line", "safe_load"]


class _SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (same constructors: plain data only), stricter about configs.

    * ``1e-3`` is a float: PyYAML follows YAML 1.1, where a float needs a dot (``1.0e-3``), so
      ``learning_rate: 1e-3`` would silently become the string ``"1e-3"``.
    * Aliases (``*name``) are refused: they allow self-referencing and exponentially growing
      documents, and a config does not need them.
    * A key given twice in one mapping is an error rather than "the last one wins".
    * Nesting deeper than :data:`~texkit.errors.MAX_DEPTH` levels is an error (no config needs
      it, and the reader would run out of stack).
    * An integer of more than :data:`~texkit.errors.MAX_DIGITS` digits is an error naming its key
      (no size, id or seed has as many; Python's own limit, 4,300 digits, would fail without
      naming it).
    """

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in texkit configs", event.start_mark
            )
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: Any) -> int:
        _check_digits(node, "")
        return super().construct_yaml_int(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            _check_digits(value_node, f"the value of {_short(key)}: ")
            if not isinstance(key, (str, int, float, bool)):
                continue  # unhashable keys are refused by the base class
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_INT_TAG = "tag:yaml.org,2002:int"
_SafeLoader.add_constructor(_INT_TAG, _SafeLoader.construct_yaml_int)


def _check_digits(node: Any, where: str) -> None:
    """Refuses an int scalar of more than ``MAX_DIGITS`` digits (signs, ``_``, ``0x`` aside)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag != _INT_TAG:
        return
    text = node.value.replace("_", "").lstrip("+-")
    if text[:2].lower() in ("0x", "0b"):
        text = text[2:]
    if len(text) > MAX_DIGITS:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"{where}an integer of {len(text):,} digits (at most {MAX_DIGITS} are read)",
            node.start_mark,
        )


def _short(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


def one_line(error: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and where (line and column, counted from 1)."""
    if isinstance(error, yaml.MarkedYAMLError):
        what = "; ".join(part for part in (error.context, error.problem) if part)
        mark = error.problem_mark or error.context_mark
        if mark is not None:
            what += f" (line {mark.line + 1}, column {mark.column + 1})"
        return what
    return " ".join(str(error).split())


class _SafeDumper(yaml.SafeDumper):
    """Writes what :class:`_SafeLoader` reads back unchanged (quotes strings such as ``"1e5"``)."""


_FLOAT_WITHOUT_DOT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
for _resolver in (_SafeLoader, _SafeDumper):
    _resolver.add_implicit_resolver(
        "tag:yaml.org,2002:float", _FLOAT_WITHOUT_DOT, list("-+0123456789")
    )


def safe_load(stream: Any) -> Any:
    """``yaml.safe_load`` with the stricter loader above."""
    return yaml.load(stream, Loader=_SafeLoader)


def load_yaml_file(path: str | os.PathLike) -> dict:
    """Safely loads a YAML mapping from ``path``; see :meth:`HParams.from_yaml`."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise FileNotFoundError(f"hparams file {path} is a directory; give the YAML file's path")
    if not os.path.lexists(path):
        raise FileNotFoundError(f"hparams file not found: {path}")
    data = files.read_bytes(
        path,
        files.MAX_CONFIG_BYTES,
        error=HParamsError,
        what="config file (texkit.files.MAX_CONFIG_BYTES)",
    )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HParamsError(f"{path} is not UTF-8 text: {error}") from None
    try:
        value = safe_load(text)
    except yaml.YAMLError as error:
        raise HParamsError(f"cannot read {path} as plain YAML data: {one_line(error)}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HParamsError(
            f"{path} must hold a mapping at the top level, got {type(value).__name__}"
        )
    return value


def dump_yaml(data: Any) -> str:
    """``data`` as a YAML document that :func:`safe_load` reads back unchanged."""
    return yaml.dump(data, Dumper=_SafeDumper, sort_keys=False, default_flow_style=False)
