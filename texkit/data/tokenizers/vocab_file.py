"""A BERT ``vocab.txt``: its special tokens, and reading it with the errors a user can act on.

Limits (each an error naming the file, and the line where there is one):

* The file is read by :func:`~texkit.data.tokenizers.reading.read_file`: a regular file of
  at most :data:`texkit.files.MAX_JSON_BYTES` bytes (256 MiB; BERT's are under 1 MB).
* An entry holds at most :data:`MAX_WORDPIECE_BYTES` UTF-8 bytes besides a leading ``##``:
  ``tf_text.FastWordpieceTokenizer`` accepts no longer token (BERT's longest are under 20).

Messages quote at most the first :data:`~texkit.data.tokenizers.reading.QUOTED_CHARS`
characters of a line (:func:`~texkit.data.tokenizers.reading.quoted`).
"""

from __future__ import annotations

from texkit.data.tokenizers.reading import QUOTED_CHARS, quoted, read_file

__all__ = [
    "CLS_TOKEN",
    "MASK_TOKEN",
    "MAX_WORDPIECE_BYTES",
    "PAD_TOKEN",
    "QUOTED_CHARS",
    "SEP_TOKEN",
    "SPECIAL_TOKENS",
    "UNK_TOKEN",
]

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

# FastWordpieceTokenizer refuses a longer token (besides its suffix indicator).
MAX_WORDPIECE_BYTES = 256


def _read_vocab(vocab_file: str) -> list[str]:
    """The tokens of a BERT ``vocab.txt``, one per line; the line number (from 0) is the id."""
    text = read_file(
        vocab_file, "BERTTokenizer", "vocab_file", what="vocabulary file", give="its vocab.txt"
    )
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
                f"{quoted(token)}, longer than a WordPiece token may be "
                f"({MAX_WORDPIECE_BYTES} UTF-8 bytes besides a leading '##')"
            )
        if token in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} repeats the token "
                f"{quoted(token)} of line {first_line[token]}"
            )
        first_line[token] = line
    for token in SPECIAL_TOKENS:
        if token not in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} has no {token} token; a BERT "
                f"vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
            )
    return tokens
