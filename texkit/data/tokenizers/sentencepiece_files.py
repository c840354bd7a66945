"""The files of a SentencePiece tokenizer: the model (``spiece.model``, a serialized
``ModelProto`` read without the ``sentencepiece`` package) and a Hugging Face folder's
``tokenizer_config.json`` and ``config.json`` (the style and ALBERT's options).

The model file is read by :func:`~texkit.data.tokenizers.reading.read_file` (a regular file of
at most :data:`texkit.files.MAX_JSON_BYTES` bytes), the JSON files by
:func:`~texkit.data.tokenizers.reading.read_json_object` (at most
:data:`texkit.files.MAX_CONFIG_BYTES`, read strictly).
"""

from __future__ import annotations

import os
import struct
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.albert_text import ALBERT_OPTIONS
from texkit.data.tokenizers.reading import present, read_file, read_json_object, shown

# Tokenizer classes and model types of Hugging Face folders, to a style.
_STYLE_OF_CLASS = {
    "AlbertTokenizer": "albert",
    "AlbertTokenizerFast": "albert",
    "T5Tokenizer": "t5",
    "T5TokenizerFast": "t5",
}
_STYLE_OF_MODEL_TYPE = {"albert": "albert", "t5": "t5", "mt5": "t5", "umt5": "t5"}

# SentencePiece's piece types (sentencepiece_model.proto).
_NORMAL, _UNKNOWN, _CONTROL = 1, 2, 3


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
    """A ``spiece.model``'s bytes, its pieces: (text, score, type), the id the index, and what
    its normalization needs: ``charsmap`` (``normalizer_spec.precompiled_charsmap``) and
    ``byte_fallback`` (``trainer_spec.byte_fallback``).

    The pieces are read from the serialized ``ModelProto`` (field 1, each a ``SentencePiece``:
    1 ``piece``, 2 ``score``, 3 ``type``; 2 ``trainer_spec``, 3 ``normalizer_spec``) without
    the ``sentencepiece`` package. The file is read by
    :func:`~texkit.data.tokenizers.reading.read_file`.
    """
    data = read_file(path, "SentencePieceTokenizer", "model_file", text=False)
    pieces = []
    specs: dict[str, Any] = {"charsmap": b"", "byte_fallback": False}
    try:
        for number, wire, value in _fields(data):
            if number in (2, 3) and wire == 2:  # trainer_spec, normalizer_spec
                for field, field_wire, field_value in _fields(value):
                    if (number, field, field_wire) == (2, 35, 0):
                        specs["byte_fallback"] = bool(field_value)
                    elif (number, field, field_wire) == (3, 2, 2):
                        specs["charsmap"] = field_value
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


def _folder_settings(
    path: str | os.PathLike, style: str | None, kwargs: dict[str, Any]
) -> tuple[str, str, dict[str, Any]]:
    """The model file, the style and the arguments of
    :meth:`~texkit.data.tokenizers.SentencePieceTokenizer.from_pretrained` for the folder
    ``path``: ``style`` or the folder's, ``kwargs`` with ALBERT's options from its
    ``tokenizer_config.json``."""
    folder = os.fspath(path)
    where = "SentencePieceTokenizer.from_pretrained"
    if not tf.io.gfile.isdir(folder):
        raise FileNotFoundError(f"{where}: {folder!r} is not a folder")
    model_file = os.path.join(folder, "spiece.model")
    if not tf.io.gfile.exists(model_file):
        models = sorted(
            name
            for name in tf.io.gfile.listdir(folder)
            if name.endswith(".model") and not tf.io.gfile.isdir(os.path.join(folder, name))
        )
        if len(models) != 1:
            raise FileNotFoundError(
                f"{where}: {folder!r} holds no spiece.model and "
                + (f"several *.model files {models}; give one" if models else "no *.model")
                + " (the SentencePiece model of ALBERT and T5 folders)"
            )
        model_file = os.path.join(folder, models[0])
    config_file = os.path.join(folder, "tokenizer_config.json")
    config = read_json_object(config_file, where) if present(config_file) else {}
    if style is None:
        style = _STYLE_OF_CLASS.get(_text(config.get("tokenizer_class")))
    if style is None:
        model_config = os.path.join(folder, "config.json")
        if present(model_config):
            model_type = read_json_object(model_config, where).get("model_type")
            style = _STYLE_OF_MODEL_TYPE.get(_text(model_type))
    if style is None:
        raise ValueError(
            f"{where}: {folder!r} does not say whether it is ALBERT's or T5's (no known "
            "tokenizer_class in tokenizer_config.json, no known model_type in config.json); "
            "give style='albert' or style='t5'"
        )
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
    return model_file, style, kwargs


def _text(value: Any) -> str | None:
    """``value`` if it is a string (a config's name of a class or a model type), else ``None``."""
    return value if isinstance(value, str) else None
