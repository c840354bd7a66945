"""The BERT family's name table: where each member keeps the layers of one network.

BERT, RoBERTa, DistilBERT, ALBERT and ELECTRA share one texkit network
(:class:`~texkit.modules.encoders.bert_family.BERTFamilyEncoder`'s attributes); a member's data
is the path of each of its layers in each of its formats (:data:`BERT_NAMES`, ...), from which
:func:`bert_family_table` writes the rows with a :class:`~texkit.pretrained.names.NameTable`
(the formats' conventions name the weights: Hugging Face's ``weight``/``bias``, Google's
``kernel``/``bias`` and ``gamma``/``beta``, KerasHub's ``vars/0``/``vars/1``).

A block's path has ``{i}`` for the block's index (a function of it for KerasHub, which numbers
its blocks from the second on); a member with one shared block (ALBERT) has one. BERT also has
KerasHub preset names: the HDF5 paths of the datasets that Keras 3 writes for a ``BertBackbone``
(``layers/transformer_encoder_1/_self_attention_layer/query_dense/vars/0``); its attention
weights are stored per head (the ``HEADS_*`` layouts), which stand for ``DENSE`` and ``SAME``
in the other formats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from texkit.pretrained.checkpoints import (
    DENSE,
    GOOGLE,
    HEADS_BIAS,
    HEADS_IN,
    HEADS_OUT,
    HUGGINGFACE,
    KERAS_HUB,
    OUT_IN,
    PER_HEAD,
    SAME,
    Row,
)
from texkit.pretrained.names import MODULE, NAMINGS, NameTable

__all__ = [
    "ALBERT_NAMES",
    "BERT_NAMES",
    "DISTILBERT_NAMES",
    "ELECTRA_NAMES",
    "ROBERTA_NAMES",
    "bert_family_table",
    "bert_name_table",
    "heads_table",
]

# The layers of a block, in table order: (texkit attribute, key of a member's paths, kernel
# layout, bias layout).
_BLOCK = (
    ("self_attention.query", "query", HEADS_IN, HEADS_BIAS),
    ("self_attention.key", "key", HEADS_IN, HEADS_BIAS),
    ("self_attention.value", "value", HEADS_IN, HEADS_BIAS),
    ("self_attention.output_dense", "attention_output", HEADS_OUT, SAME),
    ("attention_norm", "attention_norm", None, None),
    ("ffn_inner", "ffn_inner", DENSE, SAME),
    ("ffn_output", "ffn_output", DENSE, SAME),
    ("ffn_norm", "ffn_norm", None, None),
)


def bert_family_table(
    names: Mapping[str, Mapping], num_layers: int, part: str, segments: bool = True,
    heads: int | None = None, projection: bool = True, shared: bool = False,
) -> list[Row]:  # fmt: skip
    """A member's rows of ``part``: :data:`~texkit.pretrained.names.MODULE` (embeddings and
    blocks) or ``"pooler"``.

    Args:
        names: ``{format: {layer key: path}}``, the member's paths (:data:`BERT_NAMES`).
        num_layers: the number of blocks (one if ``shared``).
        segments: the member has segment embeddings (DistilBERT has none).
        heads: the number of attention heads, given to every row (KerasHub's per-head layouts).
        projection: the embedding projection is there (ELECTRA has none when the embedding and
            hidden sizes are equal).
        shared: one block for all layers (ALBERT).
    """
    table = NameTable(names, heads=heads)

    def paths(key: str, i: int | None = None) -> dict[str, str]:
        found = {}
        for fmt, member in names.items():
            path = member[key]
            if i is not None:
                block = member["block"]
                block = block(i) if callable(block) else block.replace("{i}", str(i))
                path = f"{block}{NAMINGS[fmt].separator}{path}"
            found[fmt] = path
        return found

    if part == "pooler":
        return table.dense("pooler", paths("pooler")).rows
    table.weight("word_embedder.embedding", paths("word"))
    table.weight("position_embedder.embedding", paths("position"))
    table.norm("embedding_norm", paths("embedding_norm"))
    if segments:
        table.weight("segment_embedder.embedding", paths("segment"))
    if projection and all(member.get("projection") for member in names.values()):
        table.dense("embedding_projection", paths("projection"))
    for i in range(1 if shared else num_layers):
        for attribute, key, kernel, bias in _BLOCK:
            if kernel is None:
                table.norm(f"blocks.{i}.{attribute}", paths(key, i))
            else:
                table.dense(f"blocks.{i}.{attribute}", paths(key, i), kernel, bias)
    return table.rows


def _member(block: str | Callable[[int], str], parts: Mapping[str, str], **layers: str | None
            ) -> dict:  # fmt: skip
    return {"block": block, **parts, **layers}


_HF_PARTS = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "attention_output": "attention.output.dense",
    "attention_norm": "attention.output.LayerNorm",
    "ffn_inner": "intermediate.dense",
    "ffn_output": "output.dense",
    "ffn_norm": "output.LayerNorm",
}
_GOOGLE_PARTS = {k: v.replace(".", "/") for k, v in _HF_PARTS.items()}


def _embeddings(root: str, sep: str = ".") -> dict[str, str]:
    """BERT's embedding layers under ``root`` (Hugging Face's and Google's names)."""
    return {
        "word": f"{root}{sep}word_embeddings",
        "position": f"{root}{sep}position_embeddings",
        "segment": f"{root}{sep}token_type_embeddings",
        "embedding_norm": f"{root}{sep}LayerNorm",
    }


def _hf_bert(projection: str | None = None, pooler: str | None = "pooler.dense") -> dict:
    return _member("encoder.layer.{i}", _HF_PARTS, **_embeddings("embeddings"),
                   projection=projection, pooler=pooler)  # fmt: skip


def _google_bert(root: str, projection: str | None = None, pooler: str | None = None) -> dict:
    return _member(f"{root}/encoder/layer_{{i}}", _GOOGLE_PARTS,
                   **_embeddings(f"{root}/embeddings", "/"), projection=projection,
                   pooler=pooler)  # fmt: skip


_KERAS_HUB_BERT = _member(
    lambda i: f"layers/transformer_encoder{f'_{i}' if i else ''}",
    {
        "query": "_self_attention_layer/query_dense",
        "key": "_self_attention_layer/key_dense",
        "value": "_self_attention_layer/value_dense",
        "attention_output": "_self_attention_layer/output_dense",
        "attention_norm": "_self_attention_layer_norm",
        "ffn_inner": "_feedforward_intermediate_dense",
        "ffn_output": "_feedforward_output_dense",
        "ffn_norm": "_feedforward_layer_norm",
    },
    word="layers/reversible_embedding",
    position="layers/position_embedding",
    segment="layers/embedding",
    embedding_norm="layers/layer_normalization",
    pooler="layers/dense",
)

BERT_NAMES = {
    GOOGLE: _google_bert("bert", pooler="bert/pooler/dense"),
    HUGGINGFACE: _hf_bert(),
    KERAS_HUB: _KERAS_HUB_BERT,
}
ROBERTA_NAMES = {HUGGINGFACE: _hf_bert()}
ELECTRA_NAMES = {
    HUGGINGFACE: _hf_bert(projection="embeddings_project", pooler=None),
    GOOGLE: _google_bert("electra", projection="electra/embeddings_project"),
}
DISTILBERT_NAMES = {
    HUGGINGFACE: _member(
        "transformer.layer.{i}",
        {
            "query": "attention.q_lin",
            "key": "attention.k_lin",
            "value": "attention.v_lin",
            "attention_output": "attention.out_lin",
            "attention_norm": "sa_layer_norm",
            "ffn_inner": "ffn.lin1",
            "ffn_output": "ffn.lin2",
            "ffn_norm": "output_layer_norm",
        },
        **_embeddings("embeddings"),
    )
}
# ALBERT's block: each layer's (Hugging Face, Google) path.
_ALBERT_PARTS = {
    "query": ("attention.query", "attention_1/self/query"),
    "key": ("attention.key", "attention_1/self/key"),
    "value": ("attention.value", "attention_1/self/value"),
    "attention_output": ("attention.dense", "attention_1/output/dense"),
    "attention_norm": ("attention.LayerNorm", "LayerNorm"),
    "ffn_inner": ("ffn", "ffn_1/intermediate/dense"),
    "ffn_output": ("ffn_output", "ffn_1/intermediate/output/dense"),
    "ffn_norm": ("full_layer_layer_norm", "LayerNorm_1"),
}
ALBERT_NAMES = {
    HUGGINGFACE: _member(
        "encoder.albert_layer_groups.0.albert_layers.0",
        {key: hf for key, (hf, _) in _ALBERT_PARTS.items()},
        **_embeddings("embeddings"),
        projection="encoder.embedding_hidden_mapping_in",
        pooler="pooler",
    ),
    GOOGLE: _member(
        "bert/encoder/transformer/group_0/inner_group_0",
        {key: google for key, (_, google) in _ALBERT_PARTS.items()},
        **_embeddings("bert/embeddings", "/"),
        projection="bert/encoder/embedding_hidden_mapping_in",
        pooler="bert/pooler/dense",
    ),
}


def heads_table(part: str) -> list[Row]:
    """BERT's pretraining heads: ``"mlm"`` or ``"nsp"`` (attribute paths start at the head
    object). Hugging Face keeps them outside the ``bert.`` model prefix."""
    table = NameTable((GOOGLE, HUGGINGFACE), prefixed=False)
    if part == "mlm":
        table.dense("transform", {GOOGLE: "cls/predictions/transform/dense",
                                  HUGGINGFACE: "cls.predictions.transform.dense"})  # fmt: skip
        table.norm("layer_norm", {GOOGLE: "cls/predictions/transform/LayerNorm",
                                  HUGGINGFACE: "cls.predictions.transform.LayerNorm"})  # fmt: skip
        return table.entry("output_bias", {GOOGLE: "cls/predictions/output_bias",
                                           HUGGINGFACE: "cls.predictions.bias"}).rows  # fmt: skip
    if part == "nsp":
        table.entry(
            "dense.kernel",
            {
                GOOGLE: "cls/seq_relationship/output_weights",
                HUGGINGFACE: "cls.seq_relationship.weight",
            },
            OUT_IN,
        )
        return table.entry(
            "dense.bias",
            {GOOGLE: "cls/seq_relationship/output_bias", HUGGINGFACE: "cls.seq_relationship.bias"},
        ).rows
    raise ValueError(f"no BERT head {part!r} (expected 'mlm' or 'nsp')")


# Entries that are not weights, or are copies of weights the tables already load.
GOOGLE_SKIPPED = re.compile(r"(^global_step$|/adam_[mv]$|^_CHECKPOINTABLE_OBJECT_GRAPH$)")
HF_SKIPPED = re.compile(
    r"(^embeddings\.(position_ids|token_type_ids)$"  # buffers
    r"|^cls\.predictions\.decoder\.(weight|bias)$)"  # tied copies
)


def bert_name_table(num_layers: int, part: str = "module") -> list[tuple[str, str, str, str]]:
    """BERT's name table of one part, with block indices filled in.

    Parts: ``module`` (embeddings and blocks; ``encoder`` is the same), ``pooler``, ``mlm`` and
    ``nsp`` (the heads).

    Rows are ``(texkit attribute path, Google TF name, Hugging Face name, layout)``.
    """
    if part in ("mlm", "nsp"):
        rows = heads_table(part)
    else:
        rows = bert_family_table(BERT_NAMES, num_layers, "pooler" if part == "pooler" else MODULE)
    return [
        (r.attribute, r.names[GOOGLE], r.names[HUGGINGFACE], PER_HEAD.get(r.layout, r.layout))
        for r in rows
    ]
