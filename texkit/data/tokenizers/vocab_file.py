"""A BERT ``vocab.txt``: its special tokens, and reading it with the errors a user can act on."""

from __future__ import annotations

import tensorflow as tf

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)


def _read_vocab(vocab_file: str) -> list[str]:
    """The tokens of a BERT ``vocab.txt``, one per line; the line number (from 0) is the id."""
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"BERTTokenizer: vocab_file {vocab_file!r} does not exist")
    if tf.io.gfile.isdir(vocab_file):
        raise IsADirectoryError(
            f"BERTTokenizer: vocab_file {vocab_file!r} is a folder; give its vocab.txt, or use "
            "BERTTokenizer.from_pretrained(folder)"
        )
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"BERTTokenizer: vocab_file {vocab_file!r} is not UTF-8 ({e})") from None
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
        if token in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} repeats the token "
                f"{token!r} of line {first_line[token]}"
            )
        first_line[token] = line
    for token in SPECIAL_TOKENS:
        if token not in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} has no {token} token; a BERT "
                f"vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
            )
    return tokens
