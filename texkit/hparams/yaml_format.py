"""YAML for configs: ``yaml.safe_load``'s plain data, read more strictly, and written back.

Nothing in a config file can import or run code: only PyYAML's safe constructors are used.
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from texkit.errors import MAX_DEPTH, HParamsError

__all__ = ["dump_yaml", "load_yaml_file", "safe_load"]


class _SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (same constructors: plain data only), stricter about configs.

    * ``1e-3`` is a float: PyYAML follows YAML 1.1, where a float needs a dot (``1.0e-3``), so
      ``learning_rate: 1e-3`` would silently become the string ``"1e-3"``.
    * Aliases (``*name``) are refused: they allow self-referencing and exponentially growing
      documents, and a config does not need them.
    * A key given twice in one mapping is an error rather than "the last one wins".
    * Nesting deeper than :data:`~texkit.errors.MAX_DEPTH` levels is an error (no config needs
      it, and the reader would run out of stack).
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


def safe_load(stream: Any) -> Any:
    """``yaml.safe_load`` with the stricter loader above."""
    return yaml.load(stream, Loader=_SafeLoader)


def load_yaml_file(path: str | os.PathLike) -> dict:
    """Safely loads a YAML mapping from ``path``; see :meth:`HParams.from_yaml`."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise FileNotFoundError(f"hparams file {path} is a directory; give the YAML file's path")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"hparams file not found: {path}")
    with open(path, encoding="utf-8") as stream:
        try:
            data = safe_load(stream)
        except yaml.YAMLError as error:
            raise HParamsError(f"cannot read {path} as plain YAML data: {error}") from None
        except UnicodeDecodeError as error:
            raise HParamsError(f"{path} is not UTF-8 text: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HParamsError(
            f"{path} must hold a mapping at the top level, got {type(data).__name__}"
        )
    return data


def dump_yaml(data: Any) -> str:
    """``data`` as a YAML document that :func:`safe_load` reads back unchanged."""
    return yaml.dump(data, Dumper=_SafeDumper, sort_keys=False, default_flow_style=False)
