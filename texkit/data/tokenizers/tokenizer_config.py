"""A Hugging Face tokenizer folder's special tokens: ``tokenizer_config.json`` and
``special_tokens_map.json`` read into a :class:`TokenizerConfig`.

What is read, and how it is checked (every error names the file and the key):

* ``bos_token``, ``eos_token``, ``unk_token``, ``pad_token``: a string, an ``AddedToken``
  object (``{"__type": "AddedToken", "content": "<s>", ...}``: its ``content``) or ``null``
  (no such token). Both files may give a token; when they give different ones the folder is
  refused (transformers 4 takes ``special_tokens_map.json``'s, transformers 5 ignores that file
  when ``tokenizer_config.json`` has ``added_tokens_decoder``).
* ``add_bos_token``, ``add_eos_token``: ``true``, ``false``, or absent (the tokenizer class's
  default).
* ``added_tokens_decoder``: an object from ids (decimal strings) to ``AddedToken`` objects:
  the id's ``content`` and whether it is ``special``.
* ``tokenizer_class``: a string, or absent.

Both files are optional and read by :func:`~texkit.data.tokenizers.reading.read_json_object`
(a regular file of at most :data:`texkit.files.MAX_CONFIG_BYTES` bytes, read strictly).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from texkit.data.tokenizers.reading import present, read_json_object, shown

__all__ = ["SPECIAL_ROLES", "AddedToken", "TokenizerConfig", "read_tokenizer_config"]

# The special tokens read, by role (the key is the role + "_token").
SPECIAL_ROLES = ("bos", "eos", "unk", "pad")
CONFIG_FILE = "tokenizer_config.json"
MAP_FILE = "special_tokens_map.json"


@dataclass(frozen=True)
class AddedToken:
    """An entry of ``added_tokens_decoder``: the token's text and whether it is special."""

    content: str
    special: bool


@dataclass(frozen=True)
class TokenizerConfig:
    """What a folder's ``tokenizer_config.json`` and ``special_tokens_map.json`` say.

    Attributes:
        tokens: the special tokens the files give, by role (``"bos"``, ``"eos"``, ``"unk"``,
            ``"pad"``): their text, or ``None`` when a file sets the token to ``null``; a role
            no file names is absent.
        add_bos_token: ``add_bos_token`` (``None``: absent).
        add_eos_token: ``add_eos_token`` (``None``: absent).
        added_tokens: ``added_tokens_decoder``, by id.
        tokenizer_class: ``tokenizer_class`` (``None``: absent).
        sources: the files read, for messages (``()``: none).
    """

    tokens: dict[str, str | None] = field(default_factory=dict)
    add_bos_token: bool | None = None
    add_eos_token: bool | None = None
    added_tokens: dict[int, AddedToken] = field(default_factory=dict)
    tokenizer_class: str | None = None
    sources: tuple[str, ...] = ()


def _token(value: Any, file: str, key: str) -> str | None:
    """A special token's text: a string, an ``AddedToken`` object's ``content``, or ``None``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise ValueError(
        f"{file!r}: {key} must be a string, an AddedToken object with a string 'content', or "
        f"null, got {shown(value)}"
    )


def _flag(config: dict, file: str, key: str) -> bool | None:
    value = config.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(f"{file!r}: {key} must be true or false, got {shown(value)}")


def _added_tokens(config: dict, file: str) -> dict[int, AddedToken]:
    """``added_tokens_decoder``, checked: decimal ids to objects with a string ``content``."""
    decoder = config.get("added_tokens_decoder", {})
    if not isinstance(decoder, dict):
        raise ValueError(
            f"{file!r}: added_tokens_decoder must be an object from ids to AddedToken objects, "
            f"got {shown(decoder)}"
        )
    added = {}
    for key, entry in decoder.items():
        where = f"added_tokens_decoder[{key!r}]"
        if not (key.isascii() and key.isdigit()) or len(key) > 10:
            raise ValueError(f"{file!r}: {where}: the key must be a token id (decimal digits)")
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise ValueError(
                f"{file!r}: {where} must be an AddedToken object with a string 'content', got "
                f"{shown(entry)}"
            )
        special = entry.get("special", False)
        if not isinstance(special, bool):
            raise ValueError(f"{file!r}: {where}.special must be true or false, got {special!r}")
        added[int(key)] = AddedToken(entry["content"], special)
    return added


def read_tokenizer_config(folder: str | os.PathLike, context: str) -> TokenizerConfig:
    """The special tokens and flags of the folder's ``tokenizer_config.json`` and
    ``special_tokens_map.json`` (either may be absent; see the module).

    Args:
        folder: The folder (local or any ``tf.io.gfile`` path).
        context: What reads it, for the errors (``"SentencePieceTokenizer.from_pretrained"``).

    Raises:
        ValueError: a value of the wrong kind, or the two files naming different tokens for a
            role; the message names the file and the key.
    """
    folder = os.fspath(folder)
    config_file = os.path.join(folder, CONFIG_FILE)
    map_file = os.path.join(folder, MAP_FILE)
    config = read_json_object(config_file, context) if present(config_file) else {}
    tokens_map = read_json_object(map_file, context) if present(map_file) else {}
    tokens: dict[str, str | None] = {}
    for role in SPECIAL_ROLES:
        key = f"{role}_token"
        given = {}
        for file, values in ((config_file, config), (map_file, tokens_map)):
            if key in values:
                given[file] = _token(values[key], file, key)
        if len(set(given.values())) > 1:
            (first, one), (second, other) = given.items()
            raise ValueError(
                f"{context}: {first!r} sets {key}={one!r} but {second!r} sets {key}={other!r}; "
                "the folder must name one token"
            )
        if given:
            tokens[role] = next(iter(given.values()))
    tokenizer_class = config.get("tokenizer_class")
    if tokenizer_class is not None and not isinstance(tokenizer_class, str):
        raise ValueError(
            f"{config_file!r}: tokenizer_class must be a string, got {shown(tokenizer_class)}"
        )
    return TokenizerConfig(
        tokens=tokens,
        add_bos_token=_flag(config, config_file, "add_bos_token"),
        add_eos_token=_flag(config, config_file, "add_eos_token"),
        added_tokens=_added_tokens(config, config_file),
        tokenizer_class=tokenizer_class,
        sources=tuple(file for file in (config_file, map_file) if present(file)),
    )
