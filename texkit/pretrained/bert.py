"""The BERT family as data: BERT, RoBERTa, DistilBERT, ALBERT and ELECTRA.

Each member is a :class:`~texkit.pretrained.family.Family`: its module, its configs'
``model_type``, its folder formats and name tables (:mod:`texkit.pretrained.bert_names`); the
loading itself is :mod:`texkit.pretrained.loading`'s. Formats:

* **Hugging Face** (every member): ``config.json``, ``model.safetensors``; names like
  ``encoder.layer.0.attention.self.query.weight``, with or without the model prefix
  (``bert.``, ``roberta.``, ``distilbert.``, ``albert.``, ``electra.``), dense weights stored
  ``[out, in]``.
* **KerasHub preset** (BERT): what ``BertBackbone.save_to_preset`` writes, ``config.json``
  (``"class_name": "BertBackbone"``), ``model.weights.h5``, ``metadata.json``, and the
  tokenizer's ``assets/tokenizer/vocabulary.txt``; names are the HDF5 paths Keras 3 writes
  (``layers/transformer_encoder/_self_attention_layer/query_dense/vars/0``), attention weights
  stored per head. KerasHub's BERT uses gelu's tanh approximation (``"gelu_new"``).
* **Google TF checkpoint** (the original BERT release): ``bert_config.json``,
  ``bert_model.ckpt.index`` + ``bert_model.ckpt.data-*``, ``vocab.txt``; names like
  ``bert/encoder/layer_0/attention/self/query/kernel``, dense kernels stored ``[in, out]``.
  Optimizer slots (``adam_m``, ``adam_v``) and ``global_step`` are skipped. ALBERT's TF
  release too: ``albert_config.json`` and one checkpoint of any prefix (``model.ckpt-best``),
  the shared block under ``bert/encoder/transformer/group_0/inner_group_0/``. In both, the
  config's ``"gelu"`` is the tanh approximation (what Google's code computes), which texkit
  and Hugging Face call ``"gelu_new"``. ELECTRA's TF release too: one checkpoint and
  ``vocab.txt``, no config (the sizes are read off the discriminator's shapes under
  ``electra/``, the number of heads follows Google's rule ``hidden_size // 64``; the generator's
  entries are reported, not loaded); its ``gelu`` is exact.

BERT's functions of earlier releases (:func:`load_bert_checkpoint`, :func:`read_bert_config`,
:func:`bert_hparams_from_config`, :func:`detect_format`) remain, on the shared mechanism.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

import texkit.files
from texkit import registry
from texkit.data.tokenizers import BERTTokenizer, GPT2BPETokenizer, SentencePieceTokenizer
from texkit.hparams import HParamsError
from texkit.hparams import core as hparams_core
from texkit.hparams.rules import short
from texkit.modules.bert_heads import BERTPretrainer
from texkit.modules.classifiers import BERTClassifier
from texkit.modules.encoders import (
    ALBERTEncoder,
    BERTEncoder,
    DistilBERTEncoder,
    ELECTRAEncoder,
    RoBERTaEncoder,
)
from texkit.modules.encoders.bert_family import BERTFamilyEncoder
from texkit.pretrained.bert_names import (
    ALBERT_NAMES,
    BERT_NAMES,
    DISTILBERT_NAMES,
    ELECTRA_NAMES,
    GOOGLE_SKIPPED,
    HF_SKIPPED,
    MLM_HEAD,
    NSP_HEAD,
    ROBERTA_NAMES,
    FamilyNames,
)
from texkit.pretrained.checkpoints import (
    GOOGLE,
    HUGGINGFACE,
    KERAS_HUB,
    CheckpointError,
    Row,
    resolve_checkpoint,
)
from texkit.pretrained.family import Family, Format, register_family
from texkit.pretrained.folders import hparams_from_config, inspect_folder, read_config
from texkit.pretrained.loading import (
    encoder_from_pretrained,
    load_checkpoint,
    model_from_pretrained,
)

__all__ = [
    "ALBERT",
    "BERT",
    "DISTILBERT",
    "ELECTRA",
    "ROBERTA",
    "bert_hparams_from_config",
    "detect_format",
    "load_bert_checkpoint",
    "read_bert_config",
    "tokenizer_from_pretrained",
    "vocab_file",
]


def _hf_format(*roots: str) -> Format:
    return Format(
        HUGGINGFACE,
        "config.json",
        "model.safetensors",
        HF_SKIPPED,
        re.compile(rf"^({'|'.join(re.escape(r) for r in roots)})\."),
    )


def _absolute_positions(config: Mapping, source: str) -> None:
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{source}: position_embedding_type {short(position_type)} is not supported "
            "(absolute only)"
        )


def _google_config(config: dict) -> dict:
    """A Google release's config in Hugging Face's terms: Google's BERT and ALBERT code compute
    ``"gelu"`` with the tanh approximation, Hugging Face's ``"gelu_new"``."""
    if config.get("hidden_act") == "gelu":
        config["hidden_act"] = "gelu_new"
    return config


# KerasHub's BertBackbone arguments, as Hugging Face's BERT config keys.
_KERAS_HUB_KEYS = {
    "vocabulary_size": "vocab_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "hidden_dim": "hidden_size",
    "intermediate_dim": "intermediate_size",
    "max_sequence_length": "max_position_embeddings",
    "num_segments": "type_vocab_size",
}


def _keras_hub_config(config: dict) -> dict:
    """A KerasHub ``BertBackbone`` preset's ``config.json`` (the Keras-serialized backbone) in
    Hugging Face's terms. KerasHub's ``BertBackbone`` fixes what its arguments do not say: gelu
    with the tanh approximation (``"gelu_new"``), layer norms' epsilon 1e-12; its ``dropout``
    is both dropout rates."""
    arguments = config.get("config")
    if not isinstance(arguments, Mapping):
        raise CheckpointError(
            "a KerasHub preset's config: expected the backbone's arguments as an object under "
            "'config'"
        )
    translated = {new: arguments[old] for old, new in _KERAS_HUB_KEYS.items() if old in arguments}
    if "dropout" in arguments:
        translated["hidden_dropout_prob"] = arguments["dropout"]
        translated["attention_probs_dropout_prob"] = arguments["dropout"]
    translated["hidden_act"] = "gelu_new"
    translated["layer_norm_eps"] = 1e-12
    return translated


# At most six digits: a longer index is no layer texkit builds (the checks before building say so).
_ELECTRA_LAYER = re.compile(r"^electra/encoder/layer_(\d{1,6})/")


def _electra_config_from_shapes(shapes: Mapping[str, list[int]], source: str) -> dict:
    """The config of a checkpoint of Google's ELECTRA release (which ships none), read off the
    discriminator's shapes. The number of attention heads is not in the shapes: Google's
    ELECTRA code sets it to ``max(1, hidden_size // 64)`` (an assumption a user may override).
    Google's ELECTRA computes gelu exactly (erf), and its layer norms use epsilon 1e-12."""

    def shape(name: str, rank: int) -> list[int]:
        found = shapes.get(name)
        if found is None or len(found) != rank:
            raise CheckpointError(
                f"{source}: an ELECTRA checkpoint needs {name!r} of rank {rank} to read its "
                f"sizes from (it has {found!r})"
            )
        return list(found)

    vocab_size, embedding_size = shape("electra/embeddings/word_embeddings", 2)
    hidden_size = shape("electra/encoder/layer_0/attention/self/query/kernel", 2)[1]
    layers = {int(m.group(1)) for name in shapes for m in [_ELECTRA_LAYER.match(name)] if m}
    return {
        "model_type": "electra",
        "vocab_size": vocab_size,
        "embedding_size": embedding_size,
        "hidden_size": hidden_size,
        "num_hidden_layers": max(layers) + 1,
        "num_attention_heads": max(1, hidden_size // 64),
        "intermediate_size": shape("electra/encoder/layer_0/intermediate/dense/kernel", 2)[1],
        "hidden_act": "gelu",
        "max_position_embeddings": shape("electra/embeddings/position_embeddings", 2)[0],
        "type_vocab_size": shape("electra/embeddings/token_type_embeddings", 2)[0],
        "layer_norm_eps": 1e-12,
    }


def _albert_variants(config: Mapping, source: str) -> None:
    """Options of Google's ALBERT code that change the network from the released layout."""
    _absolute_positions(config, source)
    layers, most = config.get("num_hidden_layers"), hparams_core.MAX_LAYERS
    if isinstance(layers, int) and not isinstance(layers, bool) and not 1 <= layers <= most:
        # The weights hold one block whatever the count, so only the count can be checked.
        raise CheckpointError(
            f"{source}: num_hidden_layers={layers!r}: texkit applies a block 1 to {most} times "
            "(nothing was built)"
        )
    for key, plain in (("net_structure_type", 0), ("gap_size", 0), ("num_memory_blocks", 0),
                       ("down_scale_factor", 1), ("layers_to_keep", [])):  # fmt: skip
        if key in config and config[key] != plain:
            raise CheckpointError(
                f"{source}: {key}={short(config[key])} is not supported ({plain!r})"
            )


def _rows(
    names: FamilyNames,
    layers_key: str,
    segments: bool = True,
    heads_key: str | None = None,
    projected_when_sizes_differ: bool = False,
):
    def rows(hparams: Any, part: str) -> list[Row]:
        if part == "mlm":
            return list(MLM_HEAD)
        if part == "nsp":
            return list(NSP_HEAD)
        heads = hparams[heads_key] if heads_key else None
        if heads_key and (isinstance(heads, bool) or not isinstance(heads, int) or heads < 1):
            raise HParamsError(f"expected a positive int, got {short(heads)}", heads_key)
        projection = True
        if projected_when_sizes_differ:
            projection = hparams["embedding_size"] != hparams["hidden_size"]
        return names.rows(hparams[layers_key], part, segments, heads, projection)

    return rows


def _wordpiece(path: str, **kwargs: Any) -> BERTTokenizer:
    return BERTTokenizer.from_pretrained(path, **kwargs)


def _roberta_bpe(path: str, **kwargs: Any) -> GPT2BPETokenizer:
    return GPT2BPETokenizer.from_pretrained(path, **{"style": "roberta", **kwargs})


def _albert_sentencepiece(path: str, **kwargs: Any) -> SentencePieceTokenizer:
    return SentencePieceTokenizer.from_pretrained(path, **{"style": "albert", **kwargs})


def _keys(module: type) -> tuple[str, ...]:
    return tuple(k for k in module.default_hparams() if k != "name")


_BERT_ARCHITECTURE = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
)


def _block_sized(hidden: str, inner: str) -> tuple:
    """The sized weights of a BERT-family block: the attention's four projections and the
    feed-forward network's two."""
    attention = tuple(
        ((hidden, hidden), f"blocks.0.self_attention.{part}.kernel")
        for part in ("query", "key", "value", "output_dense")
    )
    return (
        *attention,
        ((hidden, inner), "blocks.0.ffn_inner.kernel"),
        ((inner, hidden), "blocks.0.ffn_output.kernel"),
    )


_BERT_SIZED = (
    (("vocab_size", "hidden_size"), "word_embedder.embedding"),
    (("type_vocab_size", "hidden_size"), "segment_embedder.embedding"),
    (("max_position_embeddings", "hidden_size"), "position_embedder.embedding"),
    *_block_sized("hidden_size", "intermediate_size"),
)
_FACTORIZED_SIZED = (
    (("vocab_size", "embedding_size"), "word_embedder.embedding"),
    (("type_vocab_size", "embedding_size"), "segment_embedder.embedding"),
    (("max_position_embeddings", "embedding_size"), "position_embedder.embedding"),
    (("embedding_size", "hidden_size"), "embedding_projection.kernel"),
    *_block_sized("hidden_size", "intermediate_size"),
)

BERT = register_family(
    Family(
        name="bert",
        model_types=("bert",),
        module=BERTEncoder,
        formats=(
            Format(
                GOOGLE,
                "bert_config.json",
                "bert_model.ckpt",
                GOOGLE_SKIPPED,
                re.compile(r"^bert/"),
                _google_config,
            ),
            _hf_format("embeddings", "encoder", "pooler"),
            Format(
                KERAS_HUB,
                "config.json",
                "model.weights.h5",
                re.compile(r"^optimizer/"),
                re.compile(r"^layers/"),
                _keras_hub_config,
                class_names=("BertBackbone",),
                layer_pattern=re.compile(r"^layers/transformer_encoder(?:_(\d+))?/"),
            ),
        ),  # fmt: skip
        config_keys=_keys(BERTEncoder),
        architecture_keys=_BERT_ARCHITECTURE,
        config_defaults={"layer_norm_eps": 1e-12},  # Google's configs leave it out
        rows=_rows(BERT_NAMES, "num_hidden_layers", heads_key="num_attention_heads"),
        optional_parts={"pooler": "", "mlm": "mlm_head", "nsp": "nsp_head"},
        prefixes=("bert.",),
        sized=_BERT_SIZED,
        num_layers_key="num_hidden_layers",
        epsilon_keys=("layer_norm_eps",),
        check_config=_absolute_positions,
        tokenizer=_wordpiece,
    )
)
ROBERTA = register_family(
    Family(
        name="roberta",
        model_types=("roberta", "xlm-roberta"),
        module=RoBERTaEncoder,
        formats=(_hf_format("embeddings", "encoder", "pooler"),),
        config_keys=_keys(RoBERTaEncoder),
        architecture_keys=(*_BERT_ARCHITECTURE, "pad_token_id"),
        rows=_rows(ROBERTA_NAMES, "num_hidden_layers"),
        optional_parts={"pooler": ""},
        prefixes=("roberta.",),
        sized=_BERT_SIZED,
        num_layers_key="num_hidden_layers",
        epsilon_keys=("layer_norm_eps",),
        check_config=_absolute_positions,
        tokenizer=_roberta_bpe,
    )
)
ELECTRA = register_family(
    Family(
        name="electra",
        model_types=("electra",),
        module=ELECTRAEncoder,
        formats=(
            _hf_format("embeddings", "embeddings_project", "encoder"),
            Format(
                GOOGLE,
                None,
                "*",
                GOOGLE_SKIPPED,
                re.compile(r"^electra/"),
                signature="electra/embeddings/word_embeddings",
                config_from_shapes=_electra_config_from_shapes,
                assumed=("num_attention_heads",),
            ),
        ),  # fmt: skip
        config_keys=_keys(ELECTRAEncoder),
        architecture_keys=(*_BERT_ARCHITECTURE, "embedding_size"),
        rows=_rows(ELECTRA_NAMES, "num_hidden_layers", projected_when_sizes_differ=True),
        prefixes=("electra.",),
        sized=_FACTORIZED_SIZED,
        num_layers_key="num_hidden_layers",
        epsilon_keys=("layer_norm_eps",),
        check_config=_absolute_positions,
        tokenizer=_wordpiece,
    )
)
ALBERT = register_family(
    Family(
        name="albert",
        model_types=("albert",),
        module=ALBERTEncoder,
        formats=(
            Format(
                GOOGLE,
                "albert_config.json",
                "*",
                GOOGLE_SKIPPED,
                re.compile(r"^bert/(embeddings|encoder|pooler)/"),
                _google_config,
            ),
            _hf_format("embeddings", "encoder", "pooler"),
        ),  # fmt: skip
        config_keys=_keys(ALBERTEncoder),
        architecture_keys=(
            *_BERT_ARCHITECTURE,
            "embedding_size",
            "num_hidden_groups",
            "inner_group_num",
        ),
        config_defaults={"layer_norm_eps": 1e-12},  # Google's configs leave it out
        rows=_rows(ALBERT_NAMES, "num_hidden_layers"),
        optional_parts={"pooler": ""},
        prefixes=("albert.",),
        sized=_FACTORIZED_SIZED,
        epsilon_keys=("layer_norm_eps",),
        check_config=_albert_variants,
        tokenizer=_albert_sentencepiece,
    )
)
DISTILBERT = register_family(
    Family(
        name="distilbert",
        model_types=("distilbert",),
        module=DistilBERTEncoder,
        formats=(_hf_format("embeddings", "transformer"),),
        config_keys=_keys(DistilBERTEncoder),
        architecture_keys=(
            "vocab_size",
            "dim",
            "n_layers",
            "n_heads",
            "hidden_dim",
            "activation",
            "max_position_embeddings",
            "sinusoidal_pos_embds",
        ),  # fmt: skip
        rows=_rows(DISTILBERT_NAMES, "n_layers", segments=False),
        prefixes=("distilbert.",),
        sized=(
            (("vocab_size", "dim"), "word_embedder.embedding"),
            (("max_position_embeddings", "dim"), "position_embedder.embedding"),
            *_block_sized("dim", "hidden_dim"),
        ),
        num_layers_key="n_layers",
        tokenizer=_wordpiece,
    )
)


# -- BERT's functions of earlier releases ----------------------------------------------------


def detect_format(path: str | os.PathLike) -> str:
    """``"google"``, ``"huggingface"`` or ``"keras_hub"``, from the files in the folder ``path``."""
    _, fmt, _ = inspect_folder(path)
    return fmt.name


def vocab_file(path: str | os.PathLike) -> str:
    """The ``vocab.txt`` of a checkpoint folder (an error naming the folder if it has none)."""
    file = os.path.join(os.fspath(path), "vocab.txt")
    if not tf.io.gfile.exists(file):
        raise CheckpointError(f"{os.fspath(path)}: no vocab.txt in the checkpoint folder")
    return file


def read_bert_config(path: str | os.PathLike) -> dict:
    """The checkpoint folder's config as :class:`~texkit.modules.BERTEncoder` hparams (a folder
    of another family is an error; :func:`texkit.pretrained.read_config` reads any family's).

    ``path`` may also name a packaged checkpoint (see :func:`resolve_checkpoint`).
    """
    family, hparams = read_config(path)
    if family is not BERT:
        raise CheckpointError(f"{os.fspath(path)}: a {family.name} checkpoint, not BERT")
    return hparams


def bert_hparams_from_config(config: Mapping[str, Any], source: str = "config") -> dict:
    """Translates a ``bert_config.json`` / Hugging Face ``config.json`` dict into hparams.

    Keys texkit does not use (``architectures``, ``pad_token_id``, ...) are ignored; a model
    that is not a plain BERT (``model_type`` other than ``bert``, relative positions) is an
    error naming ``source``.
    """
    if isinstance(config, Mapping):
        model_type = config.get("model_type", "bert")
        if model_type != "bert":
            raise CheckpointError(f"{source}: model_type {short(model_type)} is not a BERT model")
    return hparams_from_config(BERT, config, source)


load_bert_checkpoint = load_checkpoint


def tokenizer_from_pretrained(
    cls: type, path: Any, lowercase: bool | None = None, **kwargs: Any
) -> Any:
    """Implements ``BERTTokenizer.from_pretrained``: the folder's ``vocab.txt`` and casing.

    A KerasHub preset's vocabulary is ``assets/tokenizer/vocabulary.txt``, its casing the
    ``lowercase`` of its ``tokenizer.json`` (a serialized KerasHub ``BertTokenizer``).
    """
    path = resolve_checkpoint(path)
    vocab = os.path.join(path, "vocab.txt")
    keras_hub_vocab = os.path.join(path, "assets", "tokenizer", "vocabulary.txt")
    if not tf.io.gfile.exists(vocab) and tf.io.gfile.exists(keras_hub_vocab):
        config_file = os.path.join(path, "tokenizer.json")
        serialized = _read_json_if_any(config_file)
        config = serialized.get("config") if isinstance(serialized, Mapping) else None
        # BERTTokenizer strips accents exactly when it lowercases, splits on whitespace and
        # punctuation, and marks word pieces with "##".
        lowercase = _checked_casing(
            path, config_file, config if isinstance(config, Mapping) else {}, lowercase,
            "lowercase", "a KerasHub tokenizer.json",
            {"split": (None, True), "suffix_indicator": (None, "##")},
        )  # fmt: skip
        return cls(keras_hub_vocab, lowercase=lowercase, **kwargs)
    config_file = os.path.join(path, "tokenizer_config.json")
    config = _read_json_if_any(config_file)
    if not isinstance(config, Mapping):
        raise CheckpointError(f"{config_file}: expected a JSON object")
    lowercase = _checked_casing(
        path, config_file, config, lowercase, "do_lower_case",
        "a tokenizer_config.json", {"tokenize_chinese_chars": (None, True)},
    )  # fmt: skip
    return cls(vocab, lowercase=lowercase, **kwargs)


def _read_json_if_any(file: str) -> Any:
    """The JSON value of a tokenizer's config file (``{}`` when there is none), read strictly
    (:func:`texkit.files.read_json`: a regular file, no repeated keys, bounded size and depth)."""
    if not tf.io.gfile.exists(file) and not os.path.islink(file):  # a dangling link is an error
        return {}
    return texkit.files.read_json(
        file, limit=texkit.files.MAX_CONFIG_BYTES, error=CheckpointError, what="tokenizer config"
    )


def _checked_casing(
    path: str, config_file: str, config: Mapping, lowercase: bool | None, key: str, where: str,
    unsupported: dict,
) -> bool:  # fmt: skip
    """The casing a tokenizer config gives (``lowercase`` if given), with the options
    ``BERTTokenizer`` does not implement refused (``strip_accents`` other than the casing)."""
    if lowercase is None:
        if not isinstance(config.get(key), bool):
            raise ValueError(
                f"BERTTokenizer.from_pretrained: {path!r} does not say whether the model is "
                f"uncased (no {key} in {where}); pass lowercase=True for an uncased model, "
                "False for a cased one"
            )
        lowercase = config[key]
    for option, supported in {"strip_accents": (None, lowercase), **unsupported}.items():
        if option in config and config[option] not in supported:
            raise ValueError(
                f"BERTTokenizer.from_pretrained: {config_file!r} sets {option}="
                f"{short(config[option])}, which BERTTokenizer does not support"
            )
    return lowercase


registry.register_loader(BERTFamilyEncoder, encoder_from_pretrained)
registry.register_loader(BERTClassifier, model_from_pretrained)
registry.register_loader(BERTPretrainer, model_from_pretrained)
registry.register_loader(BERTTokenizer, tokenizer_from_pretrained)
