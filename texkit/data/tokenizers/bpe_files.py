"""The files of a byte-level BPE tokenizer: ``vocab.json`` and ``merges.txt`` (Hugging Face) or
``encoder.json`` and ``vocab.bpe`` (OpenAI's GPT-2 release), read with the errors a user can act
on (each names the file, and the line of ``merges.txt``; see
:mod:`texkit.data.tokenizers.reading` for what every tokenizer file must be).
"""

from __future__ import annotations

import json
import os
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.reading import quoted, read_file, shown
from texkit.errors import MAX_DIGITS

# A folder's pairs of files, the first found taken.
_FILE_PAIRS = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))


def _find_files(path: str | os.PathLike) -> tuple[str, str]:
    """The vocabulary and merges files of a folder (see :data:`_FILE_PAIRS`)."""
    folder = os.fspath(path)
    if not tf.io.gfile.isdir(folder):
        raise FileNotFoundError(f"GPT2BPETokenizer.from_pretrained: {folder!r} is not a folder")
    for vocab_name, merges_name in _FILE_PAIRS:
        vocab_file = os.path.join(folder, vocab_name)
        merges_file = os.path.join(folder, merges_name)
        if tf.io.gfile.exists(vocab_file) and tf.io.gfile.exists(merges_file):
            return vocab_file, merges_file
    raise FileNotFoundError(
        f"GPT2BPETokenizer.from_pretrained: {folder!r} holds neither vocab.json + merges.txt "
        "(Hugging Face) nor encoder.json + vocab.bpe (OpenAI)"
    )


def _read_vocab(path: str, max_vocab_size: int) -> dict[str, int]:
    """A ``vocab.json`` / ``encoder.json``: a JSON object from each token to its id, the ids
    below ``max_vocab_size`` (:data:`texkit.data.tokenizers.byte_bpe.MAX_VOCAB_SIZE`)."""
    where = f"GPT2BPETokenizer: vocab_file {path!r}"

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"{where} repeats the token {quoted(key)}")
            seen[key] = value
        return seen

    def bounded_int(text: str) -> int:
        if len(text.lstrip("-")) > MAX_DIGITS:
            raise ValueError(f"{where} holds an integer of {len(text.lstrip('-')):,} digits")
        return int(text)

    try:
        vocab = json.loads(
            read_file(path, "GPT2BPETokenizer", "vocab_file"),
            object_pairs_hook=no_repeats,
            parse_int=bounded_int,
        )
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{where} is not JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except RecursionError:
        raise ValueError(
            f"{where} nests JSON values too deeply; it must hold a flat object from each token "
            "to its id"
        ) from None
    if not isinstance(vocab, dict):
        raise ValueError(
            f"GPT2BPETokenizer: vocab_file {path!r} must hold a JSON object from each token to "
            f'its id ({{"token": 0, ...}}), got a {type(vocab).__name__}'
        )
    if not vocab:
        raise ValueError(f"GPT2BPETokenizer: vocab_file {path!r} is an empty object")
    token_of: dict[int, str] = {}
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise ValueError(
                f"{where} gives the token {quoted(token)} the id {shown(token_id)}; ids must "
                "be ints >= 0"
            )
        if token_id >= max_vocab_size:
            raise ValueError(
                f"{where} gives the token {quoted(token)} the id {token_id:,}; ids must be below "
                f"{max_vocab_size:,} (texkit.data.tokenizers.byte_bpe.MAX_VOCAB_SIZE, which a "
                "larger vocabulary may raise)"
            )
        if token_id in token_of:
            raise ValueError(
                f"{where} gives the id {token_id} to both {quoted(token_of[token_id])} and "
                f"{quoted(token)}"
            )
        token_of[token_id] = token
    return vocab


def _read_merges(path: str, vocab: dict[str, int]) -> list[tuple[str, str]]:
    """A ``merges.txt`` / ``vocab.bpe``: one merge ``left right`` a line, the first line first.

    Lines that start with ``#version`` are skipped, as the empty last line after the final
    newline. The two parts and their concatenation must be in ``vocab``.
    """
    lines = read_file(path, "GPT2BPETokenizer", "merges_file").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    merges: list[tuple[str, str]] = []
    first_line: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"GPT2BPETokenizer: merges_file {path!r} line {number} is {quoted(line)}; every "
                "line must be two tokens separated by one space (or a first '#version' line)"
            )
        pair = (parts[0], parts[1])
        if pair in first_line:
            raise ValueError(
                f"GPT2BPETokenizer: merges_file {path!r} line {number} repeats the merge of "
                f"line {first_line[pair]}: {quoted(line)}"
            )
        first_line[pair] = number
        for token in (*pair, pair[0] + pair[1]):
            if token not in vocab:
                raise ValueError(
                    f"GPT2BPETokenizer: merges_file {path!r} line {number} ({quoted(line)}): the "
                    f"token {quoted(token)} is not in the vocabulary"
                )
        merges.append(pair)
    return merges
