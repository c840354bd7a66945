"""Export: a module of any pretrained family written as its family's Hugging Face folder.

:func:`save_pretrained` is loading run backwards, from the same data (the family's
:class:`~texkit.pretrained.family.Family`):

* **Weights.** Each row of the family's name table names the entry that holds a variable and
  its layout, so the entry is the variable laid out back (``[out, in]`` dense kernels, GPT-2's
  ``[in, out]`` convolutions); rows that split one entry (GPT-2's ``c_attn``, Phi-3's
  ``qkv_proj`` and ``gate_up_proj``) are joined into it again, in order. Tied weights are in
  the table once, and written once, as transformers writes them (GPT-2's and tied T5's and
  Llama's output layers are the embeddings). Names carry the family's model prefix
  (``transformer.``, ``model.``) as the transformers class the folder is for saves them; the
  BERT family is written as its base model (``BertModel``: no prefix, with the pooler when the
  module has a loaded one). Float32 by default, ``dtype="bfloat16"`` or ``"float16"`` when
  asked; sharded over ``max_shard_size`` (:mod:`~texkit.pretrained.safetensors_writer`).
* **config.json** from the module's hparams (the family's ``HFExport.config``, the inverse of
  its config translation), over the keys texkit does not model of the config the module was
  loaded from (``module.load_report.config``: ``bos_token_id``, ``initializer_range``...).
  Before anything is written, texkit reads the config back: it must give the module's hparams
  (dropout rates and initializers aside), so a module whose hparams the family's configs cannot
  say (GPT-2 with post-norm blocks, Mistral with attention biases) is refused, naming the key.
* **The tokenizer files** the model was loaded with (or those of ``tokenizer``'s folder) and
  the source's ``generation_config.json`` (else one from the config's token ids), copied.

A multimodal Gemma 3 module (its language model: texkit loads no vision tower) is written as
``Gemma3ForCausalLM``. LoRA adapters and quantized layers are refused: merge them
(``merge_lora()``) or export the float model; the task models do that before calling this.
Files and overwriting: :mod:`~texkit.pretrained.hf_folder`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit import _compat
from texkit.hparams.rules import short
from texkit.modules.classifiers import BERTClassifier
from texkit.pretrained.checkpoints import (
    DENSE,
    HUGGINGFACE,
    OUT_IN,
    PER_HEAD,
    CheckpointError,
    Row,
    resolve_attribute,
    split_bounds,
    stored_shape,
)
from texkit.pretrained.family import FAMILIES, Family, HFExport, family_for_type, family_of
from texkit.pretrained.folders import hparams_from_config
from texkit.pretrained.hf_folder import (
    GENERATION_CONFIG,
    check_hf_export_path,
    generation_config,
    tokenizer_files,
    write_folder,
)
from texkit.pretrained.hf_heads import Head, sequence_classifier
from texkit.pretrained.names import MODULE, holds_rows
from texkit.pretrained.safetensors_writer import DTYPES, Entry, parse_size, write_safetensors

__all__ = ["export_config", "export_entries", "save_pretrained"]

# Keys of a source config that are not carried over: written anew, or about the source's files.
_NOT_CARRIED = frozenset(
    {"architectures", "model_type", "transformers_version", "dtype", "torch_dtype",
     "_name_or_path", "name_or_path", "auto_map", "quantization_config"}
)  # fmt: skip
# Hparams that do not change what a model computes at inference, not compared when the config
# is read back (dropout rates, initializers, names, decoding defaults).
_NOT_COMPARED = re.compile(
    r"(^|\.)(name|trainable|\w*dropout\w*|\w*initializer\w*|max_decoding_length_infer)(\.|$)"
)


def _family_module(module: Any) -> list[Family]:
    """The families that may write ``module`` (several for the Llama line), best first."""
    families = [f for f in FAMILIES.values() if f.export is not None and type(module) is f.module]
    if not families:
        names = sorted({f.module.__name__ for f in FAMILIES.values() if f.export is not None})
        inside = getattr(module, "encoder", None)
        hint = (
            "; its encoder is one: save_pretrained(model.encoder, ...) writes the encoder"
            if type(inside) in {f.module for f in FAMILIES.values()}
            else ""
        )
        raise TypeError(
            f"save_pretrained: expected a module of a pretrained family ({', '.join(names)}), "
            f"got {type(module).__name__}{hint}"
        )
    families.sort(key=lambda f: f.name != "llama")  # the plainest member of its line first
    return families


def _refuse_adapted(module: Any) -> None:
    """Refuses a module with LoRA adapters or quantized layers, naming the first such layer."""
    for layer in _compat.sublayers(module, include_self=True):
        if getattr(layer, "lora_enabled", False):
            raise ValueError(
                f"save_pretrained: {layer.path} has LoRA adapters enabled; call merge_lora() "
                "first (the export holds the merged weights)"
            )
        mode = getattr(layer, "_quantization_mode", None)  # what texkit's quantize recorded
        mode = mode or getattr(layer, "quantization_mode", None)
        if mode is None:
            mode = getattr(getattr(layer, "dtype_policy", None), "quantization_mode", None)
        if mode is not None:
            raise ValueError(
                f"save_pretrained: {layer.path} is quantized ({mode}); export the float model "
                "(a Hugging Face folder holds float weights)"
            )


def _source(report: Any, family: Family) -> tuple[dict, str | None]:
    """The config a module was loaded from (its language model's, for a multimodal folder),
    when ``report`` (its load report) says it was a Hugging Face folder of ``family``, and the
    folder."""
    if report is None or not getattr(report, "path", ""):
        return {}, None
    folder = report.path
    if report.format != HUGGINGFACE or report.family != family.name:
        return {}, folder
    config = dict(report.config)
    for fmt in family.formats:
        if fmt.name == HUGGINGFACE and fmt.config_translate is not None:
            config = fmt.config_translate(config)
    return {k: v for k, v in config.items() if k not in _NOT_CARRIED}, folder


def _compared(tree: Any, path: str = "") -> Any:
    """``tree`` without the hparams that are not compared."""
    if not isinstance(tree, Mapping):
        return tree
    return {
        key: _compared(value, f"{path}{key}.")
        for key, value in tree.items()
        if not _NOT_COMPARED.search(f"{path}{key}")
    }


def _difference(mine: Any, theirs: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first path where two compared hparams trees differ, with both values."""
    if isinstance(mine, Mapping) and isinstance(theirs, Mapping) and mine.keys() == theirs.keys():
        for key in mine:
            found = _difference(mine[key], theirs[key], f"{path}{key}.")
            if found is not None:
                return found
        return None
    return None if mine == theirs else (path.rstrip("."), mine, theirs)


def export_config(
    module: Any, family: Family, source: Mapping[str, Any], dtype: str, head: Head | None = None
) -> dict:
    """The ``config.json`` of ``module`` written as ``family`` (with ``head``'s keys and
    class), checked by reading it back.

    Raises:
        ValueError: the config does not give back the module's hparams (the key is named).
    """
    export: HFExport = family.export
    model_type = source.get("model_type")
    if model_type not in export.classes:
        model_type = next(iter(export.classes))
    hparams = module.hparams.todict()
    config = export.config(hparams, source)
    architecture = head.architecture if head is not None else export.classes[model_type]
    config.update({"model_type": model_type, "architectures": [architecture], "dtype": dtype})
    config.update(head.config if head is not None else {})
    what = f"a {model_type} config.json"
    try:
        read = hparams_from_config(family_for_type(model_type, what), config, what)
    except CheckpointError as error:
        raise ValueError(f"save_pretrained: {type(module).__name__} as {error}") from None
    mine = export.reads_back(hparams) if export.reads_back else hparams
    difference = _difference(_compared(mine), _compared(read))
    if difference is not None:
        path, value, theirs = difference
        raise ValueError(
            f"save_pretrained: {type(module).__name__}'s {path}={short(value)} cannot be "
            f"written as {what} ({export.classes[model_type]}): it would read back as "
            f"{short(theirs)}"
        )
    return config


def _stored(value: np.ndarray, layout: str) -> np.ndarray:
    """A variable's value as a Hugging Face file stores it (the inverse of
    :func:`~texkit.pretrained.checkpoints.to_keras_layout`)."""
    layout = PER_HEAD.get(layout, layout)
    return value.T if layout in (DENSE, OUT_IN) else value


def _entry(name: str, parts: list[tuple[Row, Any]]) -> Entry:
    """The entry ``name`` from the variables its rows fill (several: slices of one entry, joined
    along the last axis in Keras' layout, in the rows' order)."""
    row, variable = parts[0]
    if row.split is None:
        if len(parts) > 1:
            raise ValueError(f"{name}: {len(parts)} variables are written to one entry")
        shape = stored_shape(variable.shape, row.layout, HUGGINGFACE)
        return Entry(name, tuple(shape), lambda: _stored(np.asarray(variable.numpy()), row.layout))
    parts = sorted(parts, key=lambda part: split_bounds(part[0].split)[0])
    bounds = [split_bounds(r.split) for r, _ in parts]
    count = bounds[0][2]
    chained = all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    if bounds[0][0] != 0 or bounds[-1][1] != count or not chained:
        raise ValueError(f"{name}: its slices {bounds} do not make the whole entry")
    keras_shape = (*variable.shape[:-1], sum(int(v.shape[-1]) for _, v in parts))
    shape = tuple(stored_shape(variable.shape, row.layout, HUGGINGFACE, row.split, row.heads))
    if tuple(_stored(np.empty(keras_shape, np.int8), row.layout).shape) != shape:
        raise ValueError(f"{name}: its slices' sizes do not add up to {list(shape)}")

    def value() -> np.ndarray:
        joined = np.concatenate([np.asarray(v.numpy()) for _, v in parts], axis=-1)
        return _stored(joined, row.layout)

    return Entry(name, shape, value)


def export_entries(
    module: Any, family: Family, report: Any = None, head: Head | None = None
) -> list[Entry]:
    """The safetensors entries of ``module`` as ``family``'s Hugging Face folder: its table's
    module part and the optional parts of the module itself (a BERT pooler) that were loaded
    (``report``: the module's load report), then ``head``'s."""
    if not module.built:
        raise ValueError(
            f"save_pretrained: {type(module).__name__} has no weights yet; build it (call it "
            "once) or load a checkpoint first"
        )
    rows = list(family.name_table(module.hparams, MODULE))
    for part, attribute in family.optional_parts.items():
        if attribute == "" and part not in getattr(report, "missing_heads", []):
            part_rows = family.name_table(module.hparams, part)
            if holds_rows(module, part_rows):  # not a pooler the module was built without
                rows += part_rows
    prefix = head.prefix if head is not None else family.export.prefix
    groups: dict[str, list[tuple[Row, Any]]] = {}
    for row in rows:
        name = (prefix if row.prefixed else "") + row.names[HUGGINGFACE]
        variable = resolve_attribute(module, row.attribute)
        dtype = tf.as_dtype(variable.dtype)
        if not dtype.is_floating:
            raise ValueError(
                f"save_pretrained: {variable.path} holds {dtype.name}, not float weights "
                "(a quantized model: export the float model)"
            )
        groups.setdefault(name, []).append((row, variable))
    entries = [_entry(name, parts) for name, parts in groups.items()]
    return entries + (head.entries if head is not None else [])


def _dtype_name(dtype: Any) -> str:
    if dtype is None:
        return "float32"
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
    if name not in DTYPES:
        raise ValueError(f"dtype: expected one of {sorted(DTYPES)} (or None), got {dtype!r}")
    return name


def _write_json(path: str, value: Any) -> None:
    with tf.io.gfile.GFile(path, "w") as stream:
        stream.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def _written_as(
    module: Any, model_type: str | None, dtype: str, report: Any, head: Head | None
) -> tuple[Family, dict, Any]:
    """The family that writes ``module``, its ``config.json`` and the folder the module was
    loaded from (``report``: its load report): the family asked for, else the one it was
    loaded as, else the first of its class whose config says its hparams (the error of the
    first that could not)."""
    families = _family_module(module)
    chosen = [f for f in families if f.name == getattr(report, "family", None)]
    if model_type is not None:
        chosen = [f for f in families if model_type in f.export.classes]
        if not chosen:
            known = sorted({t for f in families for t in f.export.classes})
            raise ValueError(f"model_type: expected one of {known}, got {model_type!r}")
    error = None
    for candidate in chosen or families:
        source, source_folder = _source(report, candidate)
        try:
            config = export_config(module, candidate, source, dtype, head)
            return candidate, config, source_folder
        except ValueError as failure:
            error = error or failure
    raise error


def save_pretrained(
    module: Any,
    folder: str | os.PathLike,
    *,
    tokenizer: Any = None,
    max_shard_size: int | str = "2GB",
    overwrite: bool = False,
    dtype: Any = None,
    model_type: str | None = None,
) -> str:
    """Writes ``module`` as its family's Hugging Face folder, which transformers loads; returns
    the folder.

    The folder holds ``config.json``, ``model.safetensors`` (or shards of at most
    ``max_shard_size`` and ``model.safetensors.index.json``), the tokenizer's files and, for a
    language model, ``generation_config.json`` (see the module for what each holds).

    Args:
        module: a family's module (``BERTEncoder``, ``RoBERTaEncoder``, ``DistilBERTEncoder``,
            ``ALBERTEncoder``, ``ELECTRAEncoder``, ``GPT2Decoder``, ``T5EncoderDecoder``,
            ``LlamaDecoder``), loaded with ``from_pretrained`` or built and trained; or a
            ``BERTClassifier`` over a BERT or ALBERT encoder (written as
            ``*ForSequenceClassification``: :mod:`~texkit.pretrained.hf_heads`).
        folder: the output folder (local or a ``tf.io.gfile`` URL): new or empty.
        tokenizer: a texkit tokenizer, or a folder, whose tokenizer files are copied (default:
            those of the folder the module was loaded from, if any).
        max_shard_size: bytes, or a size such as ``"2GB"`` or ``"500MiB"``.
        overwrite: replace an earlier Hugging Face folder at ``folder`` (never anything else).
        dtype: ``"float32"`` (``None``), ``"bfloat16"`` or ``"float16"``: the weights' type.
        model_type: which family of the Llama line writes a ``LlamaDecoder`` (``"qwen2"``...;
            default: the one it was loaded as, else the first whose config says its hparams).

    Raises:
        TypeError: ``module`` is not a family's module.
        ValueError: LoRA adapters or quantized layers (merge or export the float model), hparams
            that the family's config cannot say, or a bad argument; nothing is written.
        FileExistsError: ``folder`` may not be written (see
            :func:`~texkit.pretrained.hf_folder.check_hf_export_path`); nothing is changed.
    """
    folder = os.fspath(folder).rstrip("/") or os.fspath(folder)
    dtype = _dtype_name(dtype)
    parse_size(max_shard_size)
    _refuse_adapted(module)
    report = getattr(module, "load_report", None)
    head = None
    if isinstance(module, BERTClassifier):
        head = sequence_classifier(module, family_of(type(module.encoder)).name)
        module = head.encoder
    family, config, source_folder = _written_as(module, model_type, dtype, report, head)
    entries = export_entries(module, family, report, head)
    hugging_face = getattr(report, "format", None) == HUGGINGFACE
    copies, tokenizer_json = tokenizer_files(tokenizer, source_folder, hugging_face)
    generation = generation_config(source_folder, config, family.export.generates)
    replacing = check_hf_export_path(folder, overwrite)

    def write(target: str) -> None:
        _write_json(f"{target}/config.json", config)
        write_safetensors(target, entries, dtype, max_shard_size)
        for name, file in copies.items():
            tf.io.gfile.copy(file, f"{target}/{name}")
        for name, value in tokenizer_json.items():
            _write_json(f"{target}/{name}", value)
        if isinstance(generation, bytes):
            with tf.io.gfile.GFile(f"{target}/{GENERATION_CONFIG}", "wb") as stream:
                stream.write(generation)
        elif generation is not None:
            _write_json(f"{target}/{GENERATION_CONFIG}", generation)

    return write_folder(folder, write, replacing)
