"""Reading a tokenizer's files with the errors a user can act on, and quoting what they hold.

Every tokenizer file (a BERT ``vocab.txt``, GPT-2's ``vocab.json`` and ``merges.txt``, a
SentencePiece ``spiece.model``) is read by :func:`read_file`: it must exist, not be a folder,
be a regular file (not a FIFO or a device: :mod:`texkit.files`) and hold at most
:data:`texkit.files.MAX_JSON_BYTES` bytes (256 MiB; set that constant higher for a larger
file). A folder's optional JSON configs are read by :func:`read_json_object` (at most
:data:`texkit.files.MAX_CONFIG_BYTES`, strictly: :func:`texkit.files.read_json`).

Messages quote at most the first :data:`QUOTED_CHARS` characters of a line or a value
(:func:`quoted`, :func:`shown`): an error about a 50 MB line stays one line.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from texkit import files

__all__ = ["QUOTED_CHARS", "present", "quoted", "read_file", "read_json_object", "shown"]

# The most characters of a line or token an error message quotes.
QUOTED_CHARS = 60


def quoted(text: str, limit: int = QUOTED_CHARS) -> str:
    """``repr(text)``, or of its first ``limit`` characters and its length when it is longer: an
    error about a 50 MB line stays one line.

    >>> quoted("x" * 100, limit=3)
    "'xxx'... (100 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def shown(value: object, limit: int = QUOTED_CHARS) -> str:
    """``repr(value)``, cut to its first ``limit`` characters and its length when longer (a
    config value or an id that may be a whole list).

    >>> shown(list(range(100)), limit=9)
    '[0, 1, 2,... (390 characters)'
    """
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def read_file(
    path: str,
    owner: str,
    arg: str,
    *,
    what: str = "tokenizer file",
    give: str = "the file",
    text: bool = True,
) -> str | bytes:
    """The content of the tokenizer file ``path`` (any ``tf.io.gfile`` path): its UTF-8 text,
    or its bytes when not ``text``.

    Args:
        path: The file.
        owner: The class that reads it, which the errors name (``"BERTTokenizer"``).
        arg: The argument that gave it (``"vocab_file"``).
        what: What the file is, in the error about its size.
        give: What to give instead of a folder (``"its vocab.txt"``).
        text: Decode the bytes as UTF-8 (an error naming the byte where they are not).
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{owner}: {arg} {path!r} does not exist")
    if tf.io.gfile.isdir(path):
        raise IsADirectoryError(
            f"{owner}: {arg} {path!r} is a folder; give {give}, or use "
            f"{owner}.from_pretrained(folder)"
        )
    data = files.read_bytes(
        path,
        files.MAX_JSON_BYTES,
        context=f"{owner} {arg}",
        what=f"{what} (texkit.files.MAX_JSON_BYTES)",
    )
    if not text:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{owner}: {arg} {path!r} is not UTF-8 ({e.reason} at byte {e.start:,})"
        ) from None


def read_json_object(path: str, context: str) -> dict[str, Any]:
    """A JSON object file (``tokenizer_config.json``, ``config.json``), errors naming it: read
    strictly by :func:`texkit.files.read_json` (a regular file of at most
    :data:`texkit.files.MAX_CONFIG_BYTES` bytes, no repeated keys, bounded nesting)."""
    value = files.read_json(
        path,
        limit=files.MAX_CONFIG_BYTES,
        context=context,
        what="tokenizer config (texkit.files.MAX_CONFIG_BYTES)",
    )
    if not isinstance(value, dict):
        raise ValueError(
            f"{context}: {path!r} must hold a JSON object, got a {type(value).__name__}"
        )
    return value


def present(path: str) -> bool:
    """Whether a folder holds the optional file ``path``: a symbolic link to nothing is there
    (and an error when read), not absent."""
    return tf.io.gfile.exists(path) or os.path.islink(path)
