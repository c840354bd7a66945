"""The files of a Hugging Face folder that texkit writes, and how it writes them safely.

:func:`~texkit.pretrained.save_pretrained` writes ``config.json``, ``generation_config.json``,
``model.safetensors`` (or shards and their index) and the tokenizer's files
(:data:`TOKENIZER_FILES`), and nothing else. Like ``texkit export`` for SavedModels
(:mod:`texkit.run.export`), it never deletes what it did not write:

- an output folder that does not exist, or is empty, is written;
- a folder that holds anything else is refused, unless ``overwrite=True`` *and* it holds a
  Hugging Face folder's files and nothing else (:func:`check_hf_export_path`): a ``config.json``,
  weights, and only files of the names above;
- the folder is first written to a temporary sibling (``<output>.texkit-export-<id>``) and
  moved into place once complete (:func:`write_folder`); a failed export removes its temporary
  folder and leaves the output as it was.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import tensorflow as tf

import texkit.files
from texkit.pretrained.checkpoints import CheckpointError
from texkit.pretrained.safetensors_files import INDEX, SINGLE

__all__ = [
    "GENERATION_CONFIG",
    "TOKENIZER_FILES",
    "check_hf_export_path",
    "is_export_file",
    "tokenizer_files",
    "write_folder",
]

GENERATION_CONFIG = "generation_config.json"

# The files of a Hugging Face tokenizer, copied from the folder a tokenizer was made from.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
    "chat_template.jinja",
    "chat_template.json",
)
_WRITTEN = frozenset({"config.json", GENERATION_CONFIG, SINGLE, INDEX, *TOKENIZER_FILES})
_SHARD = re.compile(r"^model-\d{5}-of-\d{5}\.safetensors$")


def is_export_file(name: str) -> bool:
    """Whether ``name`` is a file that :func:`~texkit.pretrained.save_pretrained` writes."""
    return name in _WRITTEN or bool(_SHARD.match(name))


def _entries(path: str) -> list[str]:
    return sorted(name.rstrip("/") for name in tf.io.gfile.listdir(path))


def check_hf_export_path(path: str, overwrite: bool = False) -> bool:
    """Checks that a Hugging Face folder may be written at ``path``; returns whether an earlier
    one is replaced.

    Raises:
        FileExistsError: ``path`` is a file, a non-empty folder without ``overwrite``, or a
            folder that holds more than a Hugging Face folder's files (it is never deleted,
            whatever ``overwrite`` says).
    """
    if not tf.io.gfile.exists(path):
        return False
    if not tf.io.gfile.isdir(path):
        raise FileExistsError(f"{path!r} is a file; give a folder path for the Hugging Face folder")
    entries = _entries(path)
    if not entries:
        return False
    others = [name for name in entries if not is_export_file(name)]
    weights = SINGLE in entries or INDEX in entries
    if others or "config.json" not in entries or not weights:
        shown = others or entries
        listed = ", ".join(repr(name) for name in shown[:3]) + (", ..." if len(shown) > 3 else "")
        raise FileExistsError(
            f"{path!r} is not empty and is not a Hugging Face model folder (it holds {listed}); "
            "texkit never deletes a folder it did not write: choose a new or empty output folder"
        )
    if not overwrite:
        raise FileExistsError(
            f"{path!r} already holds a Hugging Face model folder; pass overwrite=True (the "
            "command's --overwrite) to replace it, or choose a new output folder"
        )
    return True


def write_folder(path: str, write: Callable[[str], None], replacing: bool) -> str:
    """Calls ``write(folder)`` on a new temporary sibling of ``path``, then moves it to
    ``path`` (replacing the folder there when ``replacing``, which
    :func:`check_hf_export_path` allowed); returns ``path``."""
    parent = os.path.dirname(path)
    if parent:
        tf.io.gfile.makedirs(parent)
    token = uuid.uuid4().hex[:12]
    temporary = f"{path}.texkit-export-{token}"
    tf.io.gfile.makedirs(temporary)
    try:
        write(temporary)
    except BaseException:
        tf.io.gfile.rmtree(temporary)  # texkit's own, half-written
        raise
    if replacing:
        previous = f"{path}.texkit-previous-{token}"
        tf.io.gfile.rename(path, previous)
        tf.io.gfile.rename(temporary, path)
        tf.io.gfile.rmtree(previous)
    else:
        if tf.io.gfile.exists(path):
            if "://" not in path:
                os.rmdir(path)  # fails, deleting nothing, if something appeared in it meanwhile
            else:
                tf.io.gfile.rmtree(path)
        tf.io.gfile.rename(temporary, path)
    return path


# A tokenizer's own files (its attributes) under Hugging Face's names, for a tokenizer made
# from files named otherwise (OpenAI's encoder.json and vocab.bpe, a KerasHub vocabulary).
def _hf_name(tokenizer: Any, attribute: str) -> str:
    if attribute == "model_file":
        return (
            "spiece.model"
            if getattr(tokenizer, "style", None) in ("albert", "t5")
            else ("tokenizer.model")
        )
    if attribute == "vocab_file":
        return "vocab.json" if getattr(tokenizer, "merges_file", None) else "vocab.txt"
    return {"tokenizer_file": "tokenizer.json", "merges_file": "merges.txt"}[attribute]


_SOURCE_ATTRIBUTES = ("model_file", "tokenizer_file", "vocab_file", "merges_file")


def tokenizer_files(
    tokenizer: Any, folder: str | None, hugging_face: bool = True
) -> tuple[dict[str, str], dict[str, Any]]:
    """The tokenizer files of an export: ``({name: file to copy}, {name: JSON to write})``.

    ``tokenizer`` may be a folder: its Hugging Face tokenizer files. A tokenizer: the Hugging
    Face tokenizer files of the folder it was made from, and its own files under Hugging Face's
    names (OpenAI's ``encoder.json`` as ``vocab.json``, a KerasHub vocabulary as
    ``vocab.txt``), with a ``tokenizer_config.json`` saying a ``BERTTokenizer``'s casing when
    none is copied. Without one: the tokenizer files of
    ``folder`` (the checkpoint the module was loaded from; ``None``: none) when it is a Hugging
    Face folder (``hugging_face``); another format's files (KerasHub's own ``tokenizer.json``)
    are not a Hugging Face tokenizer's, and none is written.

    Raises:
        TypeError: ``tokenizer`` is not made from files (it has none of ``model_file``,
            ``tokenizer_file``, ``vocab_file``).
        CheckpointError: ``tokenizer`` is a path but no folder.
    """
    own: dict[str, str] = {}
    if isinstance(tokenizer, (str, os.PathLike)):  # a folder of tokenizer files
        folder = os.fspath(tokenizer)
        if not tf.io.gfile.isdir(folder):
            raise CheckpointError(f"tokenizer: {folder!r} is not a folder of tokenizer files")
        tokenizer = None
        hugging_face = True
    elif tokenizer is not None:
        for attribute in _SOURCE_ATTRIBUTES:
            file = getattr(tokenizer, attribute, None)
            if isinstance(file, str) and file:
                own[_hf_name(tokenizer, attribute)] = file
        if not own:
            raise TypeError(
                f"tokenizer: expected a texkit tokenizer made from files (with a model_file, "
                f"tokenizer_file or vocab_file), got {type(tokenizer).__name__}"
            )
        folder = os.path.dirname(next(iter(own.values())))
    elif not hugging_face:
        folder = None
    found = {}
    if folder is not None and tf.io.gfile.isdir(folder):
        present = set(_entries(folder))
        found = {name: f"{folder}/{name}" for name in TOKENIZER_FILES if name in present}
    found.update(own)  # the files the tokenizer reads, whatever the folder holds
    for file in found.values():
        texkit.files.check_regular_file(file, error=CheckpointError, context="tokenizer file")
    written = {}
    lowercase = getattr(tokenizer, "lowercase", None)
    if "vocab.txt" in own and "tokenizer_config.json" not in found and lowercase is not None:
        written["tokenizer_config.json"] = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": lowercase,
            "strip_accents": None,
        }
    return found, written


def generation_config(
    folder: str | None, config: Mapping[str, Any], generates: bool
) -> dict | bytes | None:
    """A ``generation_config.json``: the bytes of the source ``folder``'s, when it has one, else
    (for a model that ``generates``) the token ids of ``config``; ``None``: none."""
    if folder is not None:
        file = f"{folder}/{GENERATION_CONFIG}"
        if tf.io.gfile.exists(file):
            texkit.files.read_json(
                file, limit=texkit.files.MAX_CONFIG_BYTES, error=CheckpointError,
                what="generation config",
            )  # fmt: skip
            return texkit.files.read_bytes(
                file, limit=texkit.files.MAX_CONFIG_BYTES, error=CheckpointError
            )
    if not generates:
        return None
    keys = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")
    return {
        "_from_model_config": True,
        **{key: config[key] for key in keys if config.get(key) is not None},
    }
