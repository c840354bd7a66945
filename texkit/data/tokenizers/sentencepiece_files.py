"""The files of a SentencePiece tokenizer: the model (``spiece.model`` or ``tokenizer.model``, a
serialized ``ModelProto`` read without the ``sentencepiece`` package) and a Hugging Face
folder's ``tokenizer_config.json`` and ``config.json`` (the style, ALBERT's options, and for
``"llama"`` the special tokens and whether BOS and EOS are added:
:mod:`~texkit.data.tokenizers.tokenizer_config`).

For the ``"llama"`` style, a copy of the model without its dummy prefix
(``_without_dummy_prefix``) lets the tokenizer write the prefix where Hugging Face puts it.

The model file is read by :func:`~texkit.data.tokenizers.reading.read_file` (a regular file of
at most :data:`texkit.files.MAX_JSON_BYTES` bytes), the JSON files by
:func:`~texkit.data.tokenizers.reading.read_json_object` (at most
:data:`texkit.files.MAX_CONFIG_BYTES`, read strictly).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.added_tokens import added_token_flags
from texkit.data.tokenizers.albert_text import ALBERT_OPTIONS
from texkit.data.tokenizers.reading import present, read_file, read_json_object, shown
from texkit.data.tokenizers.tokenizer_config import read_tokenizer_config
from texkit.data.tokenizers.tokenizer_json import AddedToken
from texkit.data.tokenizers.unknown_runs import unknown_run_pattern

# Tokenizer classes and model types of Hugging Face folders, to a style.
_STYLE_OF_CLASS = {
    "AlbertTokenizer": "albert",
    "AlbertTokenizerFast": "albert",
    "T5Tokenizer": "t5",
    "T5TokenizerFast": "t5",
    "LlamaTokenizer": "llama",
    "LlamaTokenizerFast": "llama",
    "CodeLlamaTokenizer": "llama",
    "CodeLlamaTokenizerFast": "llama",
    "GemmaTokenizer": "llama",
    "GemmaTokenizerFast": "llama",
}
_STYLE_OF_MODEL_TYPE = {
    "albert": "albert",
    "t5": "t5",
    "mt5": "t5",
    "umt5": "t5",
    **dict.fromkeys(
        ("llama", "mistral", "mixtral", "gemma", "gemma2", "gemma3", "gemma3_text"), "llama"
    ),
}
# The model file of Llama's, Mistral's and Gemma's folders (ALBERT's and T5's: spiece.model).
LLAMA_MODEL_FILE = "tokenizer.model"

# SentencePiece's piece types (sentencepiece_model.proto).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6

# What _read_model reads of trainer_spec (2) and normalizer_spec (3): (message, field, wire
# type) -> (name, kind), with the proto's defaults.
_SPEC_FIELDS = {
    (2, 35, 0): ("byte_fallback", bool),
    (2, 44, 2): ("unk_surface", str),
    (2, 45, 2): ("unk_piece", str),
    (2, 46, 2): ("bos_piece", str),
    (2, 47, 2): ("eos_piece", str),
    (2, 48, 2): ("pad_piece", str),
    (3, 2, 2): ("charsmap", bytes),
    (3, 3, 0): ("add_dummy_prefix", bool),
    (3, 4, 0): ("remove_extra_whitespaces", bool),
}
_SPEC_DEFAULTS = {
    "byte_fallback": False,
    "unk_surface": " \u2047 ",
    "unk_piece": "<unk>",
    "bos_piece": "<s>",
    "eos_piece": "</s>",
    "pad_piece": "<pad>",
    "charsmap": b"",
    "add_dummy_prefix": True,
    "remove_extra_whitespaces": True,
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a varint runs past the end")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes((value,))


def _field(number: int, wire: int, value: Any) -> bytes:
    """One field of a protocol buffer message, serialized (the inverse of :func:`_fields`)."""
    key = _varint_bytes(number << 3 | wire)
    if wire == 0:
        return key + _varint_bytes(value)
    return key + (_varint_bytes(len(value)) if wire == 2 else b"") + value


def _without_dummy_prefix(data: bytes) -> bytes:
    """The model ``data`` (checked by :func:`_read_model`) with
    ``normalizer_spec.add_dummy_prefix`` false, all else as it was."""
    fields = []
    for number, wire, value in _fields(data):
        if (number, wire) == (3, 2):
            kept = [_field(*field) for field in _fields(value) if field[:2] != (3, 0)]
            value = b"".join(kept) + _field(3, 0, 0)
        fields.append(_field(number, wire, value))
    return b"".join(fields)


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (field number, wire type, value) of a protocol buffer message, in order."""
    fields = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        else:
            raise ValueError(f"wire type {wire}")
        if pos > len(data):
            raise ValueError("a field runs past the end")
        fields.append((number, wire, value))
    return fields


def _read_model(path: str) -> tuple[bytes, list[tuple[str, float, int]], dict[str, Any]]:
    """A ``spiece.model``'s bytes, its pieces: (text, score, type), the id the index, and the
    specs it holds (:data:`_SPEC_FIELDS`, e.g. ``charsmap``:
    ``normalizer_spec.precompiled_charsmap``, ``byte_fallback``: ``trainer_spec.byte_fallback``,
    ``bos_piece``, ``add_dummy_prefix``), the proto's defaults for those it does not.

    The pieces are read from the serialized ``ModelProto`` (field 1, each a ``SentencePiece``:
    1 ``piece``, 2 ``score``, 3 ``type``; 2 ``trainer_spec``, 3 ``normalizer_spec``) without
    the ``sentencepiece`` package. The file is read by
    :func:`~texkit.data.tokenizers.reading.read_file`.
    """
    data = read_file(path, "SentencePieceTokenizer", "model_file", text=False)
    pieces = []
    specs: dict[str, Any] = dict(_SPEC_DEFAULTS)
    try:
        for number, wire, value in _fields(data):
            if number in (2, 3) and wire == 2:  # trainer_spec, normalizer_spec
                for field, field_wire, field_value in _fields(value):
                    name, kind = _SPEC_FIELDS.get((number, field, field_wire), (None, None))
                    if kind is str:
                        specs[name] = field_value.decode("utf-8")
                    elif kind is not None:
                        specs[name] = kind(field_value)
            if number != 1:
                continue
            if wire != 2:
                raise ValueError("field 1 (pieces) is not a message")
            piece: list[Any] = [None, 0.0, _NORMAL]
            for field, field_wire, field_value in _fields(value):
                if (field, field_wire) == (1, 2):
                    piece[0] = field_value.decode("utf-8")
                elif (field, field_wire) == (2, 5):
                    piece[1] = struct.unpack("<f", field_value)[0]
                elif (field, field_wire) == (3, 0):
                    piece[2] = field_value
            if piece[0] is None:
                raise ValueError(f"piece {len(pieces)} has no text")
            pieces.append(tuple(piece))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(
            f"SentencePieceTokenizer: model_file {path!r} is not a SentencePiece model ({e})"
        ) from None
    unknown = [i for i, (_, _, kind) in enumerate(pieces) if kind == _UNKNOWN]
    if not pieces or len(unknown) != 1:
        raise ValueError(
            f"SentencePieceTokenizer: model_file {path!r} is not a SentencePiece model (it holds "
            f"{len(pieces)} pieces, {len(unknown)} of them <unk>; a model has exactly one)"
        )
    return data, pieces, specs


def _model_file(folder: str, where: str) -> str:
    """The folder's SentencePiece model: ``spiece.model``, else ``tokenizer.model``, else its one
    ``*.model``."""
    for name in ("spiece.model", LLAMA_MODEL_FILE):
        if tf.io.gfile.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    models = sorted(
        name
        for name in tf.io.gfile.listdir(folder)
        if name.endswith(".model") and not tf.io.gfile.isdir(os.path.join(folder, name))
    )
    if len(models) != 1:
        raise FileNotFoundError(
            f"{where}: {folder!r} holds no spiece.model, no {LLAMA_MODEL_FILE} and "
            + (f"several *.model files {models}; give one" if models else "no *.model")
            + " (the SentencePiece model of ALBERT's, T5's, Llama's, Mistral's and Gemma's "
            "folders)"
        )
    return os.path.join(folder, models[0])


def _folder_style(folder: str, model_file: str, config: dict[str, Any], where: str) -> str:
    """The style a folder says: its ``tokenizer_class``, else its ``config.json``'s
    ``model_type``, else ``"llama"`` for a ``tokenizer.model``."""
    style = _STYLE_OF_CLASS.get(_text(config.get("tokenizer_class")))
    if style is None:
        model_config = os.path.join(folder, "config.json")
        if present(model_config):
            model_type = read_json_object(model_config, where).get("model_type")
            style = _STYLE_OF_MODEL_TYPE.get(_text(model_type))
    if style is None and os.path.basename(model_file) == LLAMA_MODEL_FILE:
        style = "llama"
    if style is None:
        raise ValueError(
            f"{where}: {folder!r} does not say whether it is ALBERT's, T5's or Llama's (no known "
            "tokenizer_class in tokenizer_config.json, no known model_type in config.json); "
            "give style='albert', style='t5' or style='llama'"
        )
    return style


def _folder_settings(
    path: str | os.PathLike, style: str | None, kwargs: dict[str, Any]
) -> tuple[str, str, dict[str, Any]]:
    """The model file, the style and the arguments of
    :meth:`~texkit.data.tokenizers.SentencePieceTokenizer.from_pretrained` for the folder
    ``path``: ``style`` or the folder's, ``kwargs`` with ALBERT's options or Llama's special
    tokens from its ``tokenizer_config.json``."""
    folder = os.fspath(path)
    where = "SentencePieceTokenizer.from_pretrained"
    if not tf.io.gfile.isdir(folder):
        raise FileNotFoundError(f"{where}: {folder!r} is not a folder")
    model_file = _model_file(folder, where)
    config_file = os.path.join(folder, "tokenizer_config.json")
    config = read_json_object(config_file, where) if present(config_file) else {}
    if style is None:
        style = _folder_style(folder, model_file, config, where)
    if config.get("sp_model_kwargs"):
        raise ValueError(
            f"{where}: {config_file!r} sets sp_model_kwargs="
            f"{shown(config['sp_model_kwargs'])}; "
            "only SentencePiece's plain encoding (no sampling) is supported"
        )
    if config.get("add_prefix_space") is False:
        raise ValueError(
            f"{where}: {config_file!r} sets add_prefix_space=false; SentencePiece's own "
            "(a '▁' before the text) is the only one supported"
        )
    if style == "albert":
        for option in ALBERT_OPTIONS:
            if option in config and kwargs.get(option) is None:
                value = config[option]
                if not isinstance(value, bool):
                    raise ValueError(
                        f"{where}: {config_file!r} sets {option}="
                        f"{shown(value)}; it must be true "
                        "or false"
                    )
                kwargs[option] = value
    elif style == "llama":
        kwargs = _llama_settings(folder, config, where, kwargs)
    return model_file, style, kwargs


def _llama_settings(
    folder: str, raw: dict[str, Any], where: str, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """``kwargs`` with the special tokens, ``add_bos_token``, ``add_eos_token``, ``legacy`` and
    the added tokens (with their ``lstrip`` and ``rstrip``) of the folder's
    ``tokenizer_config.json`` (``raw``: as read) and ``special_tokens_map.json`` (those
    ``kwargs`` do not give)."""
    config = read_tokenizer_config(folder, where)
    config_file = os.path.join(folder, "tokenizer_config.json")
    kwargs = dict(kwargs)
    if kwargs.get("legacy") is None:
        legacy = raw.get("legacy")
        if legacy is not None and not isinstance(legacy, bool):
            raise ValueError(f"{config_file!r}: legacy must be true or false, got {shown(legacy)}")
        kwargs["legacy"] = legacy
    for flag in ("add_bos_token", "add_eos_token"):
        if kwargs.get(flag) is None:
            kwargs[flag] = getattr(config, flag)
    kwargs["special_tokens"] = {**config.tokens, **(kwargs.get("special_tokens") or {})}
    if kwargs.get("added_tokens") is None:
        flags = added_token_flags(raw, config_file)
        kwargs["added_tokens"] = {
            token_id: (token.content, token.special, *flags[token_id])
            for token_id, token in config.added_tokens.items()
        }
    return kwargs


def _text(value: Any) -> str | None:
    """``value`` if it is a string (a config's name of a class or a model type), else ``None``."""
    return value if isinstance(value, str) else None


def _llama_specials(
    pieces: list[tuple[str, float, int]],
    specs: dict[str, Any],
    tokens: dict[str, str | None],
    added: dict[int, tuple[str, bool]],
    model_file: str,
) -> tuple[list[str | None], dict[str, int | None], set[int]]:
    """The ``"llama"`` style's vocabulary (the pieces, then the added tokens after them), its
    special ids by role (``"bos"``, ``"eos"``, ``"unk"``, ``"pad_token"``: a role ``tokens``
    does not give is the model's own ``bos_piece``... when the model has it as a control piece)
    and the ids of the special added tokens.

    Raises:
        ValueError: an added token that contradicts the model's piece of its id, a non-special
            added token after the pieces, a special token that is neither a piece nor an added
            token; the message names the model file.
    """
    where = f"SentencePieceTokenizer: model_file {model_file!r}"
    vocabulary: list[str | None] = [text for text, _, _ in pieces]
    special_added = set()
    for token_id, (content, special, *_) in sorted(added.items()):
        if token_id < len(pieces):
            if content != pieces[token_id][0]:
                raise ValueError(
                    f"{where}: added token {token_id} is {content!r} (added_tokens_decoder of "
                    f"tokenizer_config.json) but the model's piece {token_id} is "
                    f"{pieces[token_id][0]!r}"
                )
        elif not special:
            raise ValueError(
                f"{where}: added token {token_id} {content!r} lies after the model's "
                f"{len(pieces)} pieces and is not special; texkit reads only special tokens "
                "added after the model"
            )
        else:
            vocabulary += [None] * (token_id + 1 - len(vocabulary))
            vocabulary[token_id] = content
        if special:
            special_added.add(token_id)
    ids: dict[str, int] = {}
    for token_id, text in enumerate(vocabulary):
        if text is not None:
            ids.setdefault(text, token_id)
    kinds = {"bos": _CONTROL, "eos": _CONTROL, "unk": _UNKNOWN, "pad": _CONTROL}
    special: dict[str, int | None] = {}
    for role, kind in kinds.items():
        if role in tokens:
            text = tokens[role]
            if text is not None and text not in ids:
                raise ValueError(
                    f"{where}: the {role}_token {text!r} (tokenizer_config.json or "
                    "special_tokens_map.json) is neither a piece of the model nor an added token"
                )
            special[role] = None if text is None else ids[text]
        else:
            token_id = ids.get(specs[f"{role}_piece"])
            usable = token_id is not None and token_id < len(pieces)
            special[role] = token_id if usable and pieces[token_id][2] == kind else None
    if special["unk"] is None:
        special["unk"] = next(i for i, (_, _, kind) in enumerate(pieces) if kind == _UNKNOWN)
    special["pad_token"] = special.pop("pad")
    return vocabulary, special, special_added


def _llama_cut(
    added: Mapping[int, tuple],
    special: Mapping[str, int | None],
    vocabulary: list[str | None],
) -> list[AddedToken]:
    """The tokens the ``"llama"`` style cuts out of a text before SentencePiece, as Hugging
    Face's tokenizer of the folder does: the added tokens (with their ``lstrip`` and
    ``rstrip``) and the special tokens of the roles. (Hugging Face's also cuts out the model's
    user-defined pieces, which SentencePiece keeps whole too, but for those with spaces, which
    it never matches: on Gemma's runs of spaces, the ids are the library's.)"""
    cut: dict[str, AddedToken] = {}
    for token_id, (content, is_special, *strip) in sorted(added.items()):
        lstrip, rstrip = strip or (False, False)
        cut.setdefault(content, AddedToken(content, token_id, is_special, lstrip, rstrip, False))
    for token_id in special.values():
        text = None if token_id is None else vocabulary[token_id]
        if text:
            cut.setdefault(text, AddedToken(text, token_id, True, False, False, False))
    return list(cut.values())


def _unknown_runs(
    pieces: list[tuple[str, float, int]], specs: dict[str, Any], model_file: str
) -> str | None:
    """The pattern of the runs of unknown characters that are cut to what gives
    SentencePiece the same ids in linear time (:mod:`~texkit.data.tokenizers.unknown_runs`),
    compiled by RE2 here, not in the middle of a pipeline; errors name the model file."""
    try:
        pattern = unknown_run_pattern(pieces, specs["charsmap"], specs["byte_fallback"])
        if pattern is not None:
            with tf.init_scope():
                tf.strings.regex_replace([""], pattern, r"\1")
    except ValueError as e:
        raise ValueError(f"SentencePieceTokenizer: model_file {model_file!r}: {e}") from None
    except tf.errors.InvalidArgumentError as e:
        raise ValueError(
            f"SentencePieceTokenizer: model_file {model_file!r}: its characters make a "
            f"pattern RE2 cannot compile ({e.message})"
        ) from None
    return pattern
