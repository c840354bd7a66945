"""The task models in experiment files: ``texkit train`` fine-tunes a :class:`~texkit.tasks.
CausalLM` (fully or with LoRA) on text files, with no code of one's own::

    model:
      type: causal_lm
      hparams: {pretrained: path/to/checkpoint, lora: {rank: 8, targets: [query, value]}}
    data:
      type: text_data
      hparams: {train: train.jsonl, eval: dev.jsonl, format: jsonl, batch_size: 8}
    run: {model_dir: runs/lm, train_steps: 1000}

``text_data`` reads UTF-8 text files (local or any ``tf.io.gfile`` path): ``format: lines``,
one text per line; ``format: jsonl``, one JSON object per line, ``{"text": ...}`` or
``{"prompt": ..., "completion": ...}`` (the loss then is on the completion only). Batches are
raw strings; the task tokenizes them in its graph.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from texkit.hparams import HParams, HParamsError
from texkit.run.experiment import Data, data_builder, model_builder

__all__ = ["batched", "causal_lm", "read_text_records", "text_data", "text_splits"]

# A line of a text file longer than this is refused (a file with no newline is no text file).
MAX_LINE_BYTES = 1 << 20


def read_text_records(path: str, fmt: str, where: str) -> tuple[list[str], list[str] | None]:
    """``(texts, completions)`` of a text file (``completions`` ``None`` unless the records are
    prompt/completion pairs).

    Raises:
        HParamsError: naming ``where``: a missing file, a line over :data:`MAX_LINE_BYTES`, a
            line that is no JSON object with ``text`` or ``prompt`` and ``completion`` strings,
            records of both kinds, or no record.
    """
    if not tf.io.gfile.exists(path):
        raise HParamsError(f"no such file: {path!r}", where)
    texts, completions, kinds = [], [], set()
    with tf.io.gfile.GFile(path, "rb") as f:
        for number, raw in enumerate(_lines(f, path, where), 1):
            line = _utf8(raw, path, number, where)
            if fmt == "lines":
                texts.append(line)
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                raise HParamsError(f"{path}:{number}: not JSON ({error})", where) from None
            kind = _kind(record)
            if kind is None:
                raise HParamsError(
                    f"{path}:{number}: expected an object with a 'text' string, or 'prompt' and "
                    f"'completion' strings, got {line[:80]!r}",
                    where,
                )
            kinds.add(kind)
            texts.append(record["text"] if kind == "text" else record["prompt"])
            if kind == "pair":
                completions.append(record["completion"])
    if len(kinds) > 1:
        raise HParamsError(f"{path}: mixes 'text' records and prompt/completion pairs", where)
    if not texts:
        raise HParamsError(f"{path}: holds no text", where)
    return texts, (completions if kinds == {"pair"} else None)


def _lines(f: Any, path: str, where: str) -> Any:
    """The lines of an open binary file, without their newline; a line longer than
    :data:`MAX_LINE_BYTES` is refused as soon as it is that long (never read whole)."""
    buffer = b""
    while True:
        block = f.read(1 << 16)
        buffer += block
        *lines, buffer = buffer.split(b"\n")
        yield from lines
        if len(buffer) > MAX_LINE_BYTES:
            raise HParamsError(f"{path}: a line longer than {MAX_LINE_BYTES} bytes", where)
        if not block:
            if buffer:
                yield buffer
            return


def _utf8(raw: bytes, path: str, number: int, where: str) -> str:
    try:
        return raw.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError as error:
        raise HParamsError(f"{path}:{number}: not UTF-8 ({error})", where) from None


def _kind(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("text"), str):
        return "text"
    if isinstance(record.get("prompt"), str) and isinstance(record.get("completion"), str):
        return "pair"
    return None


def _dataset(path: str, hp: HParams, where: str, train: bool) -> tf.data.Dataset:
    texts, completions = read_text_records(path, hp.format, where)
    tensors = texts if completions is None else (texts, completions)
    return batched(tf.data.Dataset.from_tensor_slices(tensors), len(texts), hp, train)


def batched(dataset: tf.data.Dataset, size: int, hp: HParams, train: bool) -> tf.data.Dataset:
    """``dataset`` (of ``size`` records) in batches of ``hp.batch_size``: for training shuffled
    with ``hp.seed``, repeated, the last short batch dropped."""
    if train:
        dataset = dataset.shuffle(size, seed=hp.seed).repeat()
    return dataset.batch(hp.batch_size, drop_remainder=train)


def text_splits(hparams: HParams, dataset: Callable[..., tf.data.Dataset]) -> Data:
    """The ``train`` (and ``eval``) splits of text files ``hparams`` name, each read by
    ``dataset(path, hparams, split, train)``; the format and the files checked first."""
    if hparams.format not in ("lines", "jsonl"):
        raise HParamsError(f"expected 'lines' or 'jsonl', got {hparams.format!r}", "format")
    if not hparams.train:
        raise HParamsError("name the training file", "train")
    splits = {"train": dataset(hparams.train, hparams, "train", True)}
    if hparams.eval:
        splits["eval"] = dataset(hparams.eval, hparams, "eval", False)
    return Data(**splits)


@data_builder(
    {"train": None, "eval": None, "format": "lines", "batch_size": 8, "seed": 0,
     "name": "text_data"}
)  # fmt: skip
def text_data(hparams: HParams) -> Data:
    """Raw texts (or prompt/completion pairs) from text files, batched (see the module)."""
    return text_splits(hparams, _dataset)


@model_builder({"pretrained": None, "hparams": {}, "lora": None, "name": "causal_lm"})
def causal_lm(hparams: HParams, data: Data) -> Any:
    """A :class:`~texkit.tasks.CausalLM` from a checkpoint folder (``pretrained``), its task
    ``hparams`` (``sequence_length``, ``generation``...), and LoRA when ``lora`` says
    ``{rank, alpha, targets}``."""
    from texkit.tasks import CausalLM
    from texkit.tasks.lora import lora_from_hparams

    if not hparams.pretrained:
        raise HParamsError("name a checkpoint folder to fine-tune", "pretrained")
    task = CausalLM.from_pretrained(hparams.pretrained, hparams.hparams.todict())
    if hparams.lora:
        task._build_for_weights()
        lora_from_hparams(task.module, hparams.lora)
    return task
