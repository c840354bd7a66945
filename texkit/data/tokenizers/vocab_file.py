"""A BERT ``vocab.txt``: its special tokens, and reading it with the errors a user can act on.

Limits (each an error naming the file, and the line where there is one):

* The file is a regular file (not a FIFO or a device: :mod:`texkit.files`) of at most
  :data:`texkit.files.MAX_JSON_BYTES` bytes (256 MiB; BERT's are under 1 MB). Set that
  constant higher for a larger file.
* An entry holds at most :data:`MAX_WORDPIECE_BYTES` UTF-8 bytes besides a leading ``##``:
  ``tf_text.FastWordpieceTokenizer`` accepts no longer token (BERT's longest are under 20).

Messages quote at most the first :data:`QUOTED_CHARS` characters of a line (:func:`_quoted`).
"""

from __future__ import annotations

import tensorflow as tf

from texkit import files

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

# FastWordpieceTokenizer refuses a longer token (besides its suffix indicator).
MAX_WORDPIECE_BYTES = 256
# The most characters of a line or token an error message quotes.
QUOTED_CHARS = 60


def _quoted(text: str, limit: int = QUOTED_CHARS) -> str:
    """``repr(text)``, or of its first ``limit`` characters and its length when it is longer: an
    error about a 50 MB line stays one line.

    >>> _quoted("x" * 100, limit=3)
    "'xxx'... (100 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def _shown(value: object, limit: int = QUOTED_CHARS) -> str:
    """``repr(value)``, cut to its first ``limit`` characters and its length when longer (a
    config value or an id that may be a whole list)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _read_vocab(vocab_file: str) -> list[str]:
    """The tokens of a BERT ``vocab.txt``, one per line; the line number (from 0) is the id."""
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"BERTTokenizer: vocab_file {vocab_file!r} does not exist")
    if tf.io.gfile.isdir(vocab_file):
        raise IsADirectoryError(
            f"BERTTokenizer: vocab_file {vocab_file!r} is a folder; give its vocab.txt, or use "
            "BERTTokenizer.from_pretrained(folder)"
        )
    data = files.read_bytes(
        vocab_file,
        files.MAX_JSON_BYTES,
        context="BERTTokenizer vocab_file",
        what="vocabulary file (texkit.files.MAX_JSON_BYTES)",
    )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"BERTTokenizer: vocab_file {vocab_file!r} is not UTF-8 ({e.reason} at byte "
            f"{e.start:,})"
        ) from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()  # the final newline
    tokens = [token.removesuffix("\r") for token in tokens]
    first_line: dict[str, int] = {}
    for line, token in enumerate(tokens, start=1):
        if not token.strip():
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} is empty; "
                "every line must hold one token"
            )
        if len(token.removeprefix("##").encode("utf-8")) > MAX_WORDPIECE_BYTES:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} is the token "
                f"{_quoted(token)}, longer than a WordPiece token may be "
                f"({MAX_WORDPIECE_BYTES} UTF-8 bytes besides a leading '##')"
            )
        if token in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} repeats the token "
                f"{_quoted(token)} of line {first_line[token]}"
            )
        first_line[token] = line
    for token in SPECIAL_TOKENS:
        if token not in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} has no {token} token; a BERT "
                f"vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
            )
    return tokens
