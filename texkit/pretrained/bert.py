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

BERT's functions of earlier releases (``load_bert_checkpoint``, ``read_bert_config``,
``bert_hparams_from_config``, ``detect_format``, ``vocab_file``) remain for one release
(:mod:`texkit.pretrained.deprecated`), each warning with the call that replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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
from texkit.pretrained.bert_names import (
    ALBERT_NAMES,
    BERT_NAMES,
    DISTILBERT_NAMES,
    ELECTRA_NAMES,
    GOOGLE_SKIPPED,
    HF_SKIPPED,
    ROBERTA_NAMES,
    bert_family_table,
    heads_table,
)
from texkit.pretrained.checkpoints import GOOGLE, KERAS_HUB, CheckpointError, Row
from texkit.pretrained.deprecated import (  # noqa: F401 - old names, kept for one release
    bert_hparams_from_config,
    detect_format,
    load_bert_checkpoint,
    read_bert_config,
    tokenizer_from_pretrained,
    vocab_file,
)
from texkit.pretrained.family import Family, Format, HFExport, huggingface_format, register_family

__all__ = ["ALBERT", "BERT", "DISTILBERT", "ELECTRA", "ROBERTA"]


def _hf_format(*roots: str) -> Format:
    return huggingface_format(
        HF_SKIPPED, re.compile(rf"^({'|'.join(re.escape(r) for r in roots)})\.")
    )


def _google_format(config_file: str, weights: str, own: str) -> Format:
    """A Google TF release: its config file, its checkpoint's prefix (``"*"``: any one) and the
    entries of the module; optimizer slots are skipped, ``"gelu"`` is the tanh form."""
    return Format(GOOGLE, config_file, weights, GOOGLE_SKIPPED, re.compile(own), _google_config)


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


def _table(
    names: Mapping, layers_key: str, segments: bool = True, heads_key: str | None = None,
    projected_when_sizes_differ: bool = False, shared: bool = False,
):  # fmt: skip
    """A member's ``Family.name_table``: its module's and pooler's rows
    (:func:`~texkit.pretrained.bert_names.bert_family_table`), and BERT's heads'."""

    def name_table(hparams: Any, part: str) -> list[Row]:
        if part in ("mlm", "nsp"):
            return heads_table(part)
        heads = hparams[heads_key] if heads_key else None
        if heads_key and (isinstance(heads, bool) or not isinstance(heads, int) or heads < 1):
            raise HParamsError(f"expected a positive int, got {short(heads)}", heads_key)
        projection = True
        if projected_when_sizes_differ:
            projection = hparams["embedding_size"] != hparams["hidden_size"]
        return bert_family_table(
            names, hparams[layers_key], part, segments, heads, projection, shared
        )

    return name_table


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


def _config_of(hparams: Mapping[str, Any], source: Mapping[str, Any]) -> dict:
    """A member's ``config.json`` (its hparams are its config's keys), over the ``source``
    config's other keys."""
    return {**source, **{key: value for key, value in hparams.items() if key != "name"}}


# The transformers class of each member's base model, which its folders are written for.
_CLASSES = {
    "bert": {"bert": "BertModel"},
    "roberta": {"roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel"},
    "electra": {"electra": "ElectraModel"},
    "albert": {"albert": "AlbertModel"},
    "distilbert": {"distilbert": "DistilBertModel"},
}


def _member(name: str, module: type, names: Mapping, **fields: Any) -> Family:
    """Registers a member of the BERT family: a Hugging Face folder whose layers are under
    ``embeddings``, ``encoder`` and ``pooler``, BERT's config keys, sizes and checks, the
    WordPiece tokenizer, written back as its base model, unless ``fields`` say otherwise."""
    defaults = {
        "export": HFExport(_CLASSES[name], _config_of),
        "formats": (_hf_format("embeddings", "encoder", "pooler"),),
        "architecture_keys": _BERT_ARCHITECTURE,
        "name_table": _table(names, "num_hidden_layers"),
        "prefixes": (f"{name}.",),
        "sized": _BERT_SIZED,
        "num_layers_key": "num_hidden_layers",
        "epsilon_keys": ("layer_norm_eps",),
        "check_config": _absolute_positions,
        "tokenizer": BERTTokenizer,
    }
    return register_family(Family(name=name, module=module, **{**defaults, **fields}))


BERT = _member(
    "bert",
    BERTEncoder,
    BERT_NAMES,
    formats=(
        _google_format("bert_config.json", "bert_model.ckpt", r"^bert/"),
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
    config_defaults={"layer_norm_eps": 1e-12},  # Google's configs leave it out
    name_table=_table(BERT_NAMES, "num_hidden_layers", heads_key="num_attention_heads"),
    optional_parts={"pooler": "", "mlm": "mlm_head", "nsp": "nsp_head"},
    models=(BERTClassifier, BERTPretrainer),
)
ROBERTA = _member(
    "roberta",
    RoBERTaEncoder,
    ROBERTA_NAMES,
    model_types=("roberta", "xlm-roberta"),
    architecture_keys=(*_BERT_ARCHITECTURE, "pad_token_id"),
    optional_parts={"pooler": ""},
    tokenizer=GPT2BPETokenizer,
    tokenizer_options={"style": "roberta"},
)
ELECTRA = _member(
    "electra",
    ELECTRAEncoder,
    ELECTRA_NAMES,
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
    architecture_keys=(*_BERT_ARCHITECTURE, "embedding_size"),
    name_table=_table(ELECTRA_NAMES, "num_hidden_layers", projected_when_sizes_differ=True),
    sized=_FACTORIZED_SIZED,
)
ALBERT = _member(
    "albert",
    ALBERTEncoder,
    ALBERT_NAMES,
    formats=(
        _google_format("albert_config.json", "*", r"^bert/(embeddings|encoder|pooler)/"),
        _hf_format("embeddings", "encoder", "pooler"),
    ),  # fmt: skip
    architecture_keys=(
        *_BERT_ARCHITECTURE,
        "embedding_size",
        "num_hidden_groups",
        "inner_group_num",
    ),  # fmt: skip
    config_defaults={"layer_norm_eps": 1e-12},  # Google's configs leave it out
    name_table=_table(ALBERT_NAMES, "num_hidden_layers", shared=True),
    optional_parts={"pooler": ""},
    sized=_FACTORIZED_SIZED,
    num_layers_key=None,  # one shared block: only the count's range is checked
    check_config=_albert_variants,
    tokenizer=SentencePieceTokenizer,
    tokenizer_options={"style": "albert"},
)
DISTILBERT = _member(
    "distilbert",
    DistilBERTEncoder,
    DISTILBERT_NAMES,
    formats=(_hf_format("embeddings", "transformer"),),
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
    name_table=_table(DISTILBERT_NAMES, "n_layers", segments=False),
    sized=(
        (("vocab_size", "dim"), "word_embedder.embedding"),
        (("max_position_embeddings", "dim"), "position_embedder.embedding"),
        *_block_sized("dim", "hidden_dim"),
    ),
    num_layers_key="n_layers",
    epsilon_keys=(),
    check_config=None,
)
