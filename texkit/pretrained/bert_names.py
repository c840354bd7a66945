"""The BERT family's checkpoint name tables, as data: one row per weight.

A row is :class:`~texkit.pretrained.checkpoints.Row`: the texkit attribute path (from the
encoder or the head object), the checkpoint name in each format the family has, the layout,
and whether a Hugging Face model prefix (``bert.``, ``roberta.``, ...) may precede the name.
The texkit side is the same for every family (:class:`~texkit.modules.encoders.bert_family.
BERTFamilyEncoder`'s attributes); a family's data are its checkpoint names for the embeddings,
for one block and for the pooler.

BERT also has KerasHub preset names (``keras_hub=True``): the HDF5 paths of the datasets that
Keras 3 writes for a ``BertBackbone`` (``layers/transformer_encoder_1/_self_attention_layer/
query_dense/vars/0``), named after each layer's class, numbered from the second one on. Its
attention weights are stored per head (the ``HEADS_*`` layouts), which stand for ``DENSE`` and
``SAME`` in the other formats.
"""

from __future__ import annotations

import re

from texkit.pretrained.checkpoints import (
    DENSE,
    GOOGLE,
    HEADS_BIAS,
    HEADS_IN,
    HEADS_OUT,
    HUGGINGFACE,
    KERAS_HUB,
    OUT_IN,
    SAME,
    Row,
)

__all__ = [
    "ALBERT_NAMES",
    "BERT_NAMES",
    "DISTILBERT_NAMES",
    "ELECTRA_NAMES",
    "FamilyNames",
    "ROBERTA_NAMES",
    "bert_name_table",
]


class FamilyNames:
    """A BERT-family member's checkpoint names, and the rows they make.

    Args:
        hf: Hugging Face names: ``embeddings`` (the embedding module), ``projection`` (the
            embedding projection, or ``None``), ``block`` (one block, with ``{i}``; ``shared``
            blocks have none), ``parts`` (the names of the block's sub-layers, below), and
            ``pooler`` (or ``None``).
        google: the same for Google's TF release (``/``-separated), or ``None``.
        shared: one block for all layers (ALBERT).
        keras_hub: the names of KerasHub's ``BertBackbone`` presets too (BERT).

    The block's sub-layers are ``query``, ``key``, ``value``, ``attention_output`` (dense),
    ``attention_norm``, ``ffn_inner``, ``ffn_output`` (dense) and ``ffn_norm``.
    """

    def __init__(
        self, hf: dict, google: dict | None = None, shared: bool = False, keras_hub: bool = False
    ):
        self.formats = {HUGGINGFACE: hf}
        if google is not None:
            self.formats[GOOGLE] = google
        self.shared = shared
        self.keras_hub = keras_hub

    def rows(
        self,
        num_layers: int,
        part: str,
        segments: bool = True,
        heads: int | None = None,
        projection: bool = True,
    ) -> list[Row]:
        """The rows of ``part``: ``encoder`` (embeddings and blocks) or ``pooler``; ``heads``
        (the number of attention heads) is given to every row, for the per-head layouts;
        ``projection``: the embedding projection is there (ELECTRA has none when the embedding
        and hidden sizes are equal)."""
        if part == "pooler":
            per_format = {fmt: _dense("pooler", n["pooler"], fmt) for fmt, n in self._each()}
            if self.keras_hub:
                per_format[KERAS_HUB] = _keras_hub_dense("pooler", "layers/dense")
            return _merge(per_format, heads)
        per_format = {}
        for fmt, names in self._each():
            embeddings = names["embeddings"]
            rows = [
                _embedding("word_embedder", embeddings, "word_embeddings", fmt),
                _embedding("position_embedder", embeddings, "position_embeddings", fmt),
                *_norm("embedding_norm", _join(embeddings, "LayerNorm", fmt), fmt),
            ]
            if segments:
                rows.append(
                    _embedding("segment_embedder", embeddings, "token_type_embeddings", fmt)
                )
            if names.get("projection") and projection:
                rows += _dense("embedding_projection", names["projection"], fmt)
            for i in range(1 if self.shared else num_layers):
                block = names["block"].replace("{i}", str(i))
                parts = names["parts"]
                for attribute in ("query", "key", "value"):
                    name = _join(block, parts[attribute], fmt)
                    rows += _dense(f"blocks.{i}.self_attention.{attribute}", name, fmt)
                rows += _dense(
                    f"blocks.{i}.self_attention.output_dense",
                    _join(block, parts["attention_output"], fmt),
                    fmt,
                )
                rows += _norm(
                    f"blocks.{i}.attention_norm", _join(block, parts["attention_norm"], fmt), fmt
                )
                for attribute in ("ffn_inner", "ffn_output"):
                    rows += _dense(
                        f"blocks.{i}.{attribute}", _join(block, parts[attribute], fmt), fmt
                    )
                rows += _norm(f"blocks.{i}.ffn_norm", _join(block, parts["ffn_norm"], fmt), fmt)
            per_format[fmt] = rows
        if self.keras_hub:
            per_format[KERAS_HUB] = _keras_hub_rows(num_layers, segments)
        return _merge(per_format, heads)

    def _each(self):
        return self.formats.items()


def _join(prefix: str, name: str, fmt: str) -> str:
    return f"{prefix}{'/' if fmt == GOOGLE else '.'}{name}" if prefix else name


def _embedding(attribute: str, embeddings: str, table: str, fmt: str) -> tuple:
    name = _join(embeddings, table, fmt)
    return (f"{attribute}.embedding", name + (".weight" if fmt == HUGGINGFACE else ""), SAME)


def _dense(attribute: str, name: str, fmt: str) -> list[tuple]:
    kernel, bias = ("weight", "bias") if fmt == HUGGINGFACE else ("kernel", "bias")
    return [
        (f"{attribute}.kernel", _join(name, kernel, fmt), DENSE),
        (f"{attribute}.bias", _join(name, bias, fmt), SAME),
    ]


def _norm(attribute: str, name: str, fmt: str) -> list[tuple]:
    gamma, beta = ("weight", "bias") if fmt == HUGGINGFACE else ("gamma", "beta")
    return [
        (f"{attribute}.gamma", _join(name, gamma, fmt), SAME),
        (f"{attribute}.beta", _join(name, beta, fmt), SAME),
    ]


def _keras_hub_dense(attribute: str, name: str, kernel: str = DENSE, bias: str = SAME) -> list:
    return [
        (f"{attribute}.kernel", f"{name}/vars/0", kernel),
        (f"{attribute}.bias", f"{name}/vars/1", bias),
    ]


def _keras_hub_norm(attribute: str, name: str) -> list[tuple]:
    return [
        (f"{attribute}.gamma", f"{name}/vars/0", SAME),
        (f"{attribute}.beta", f"{name}/vars/1", SAME),
    ]


def _keras_hub_rows(num_layers: int, segments: bool) -> list[tuple]:
    """A KerasHub ``BertBackbone``'s encoder entries, in :meth:`FamilyNames.rows`' order."""
    rows = [
        ("word_embedder.embedding", "layers/reversible_embedding/vars/0", SAME),
        ("position_embedder.embedding", "layers/position_embedding/vars/0", SAME),
        *_keras_hub_norm("embedding_norm", "layers/layer_normalization"),
    ]
    if segments:
        rows.append(("segment_embedder.embedding", "layers/embedding/vars/0", SAME))
    for i in range(num_layers):
        block = f"layers/transformer_encoder{f'_{i}' if i else ''}"
        attention = f"{block}/_self_attention_layer"
        for attribute in ("query", "key", "value"):
            rows += _keras_hub_dense(
                f"blocks.{i}.self_attention.{attribute}",
                f"{attention}/{attribute}_dense",
                HEADS_IN,
                HEADS_BIAS,
            )
        rows += _keras_hub_dense(
            f"blocks.{i}.self_attention.output_dense", f"{attention}/output_dense", HEADS_OUT
        )
        rows += _keras_hub_norm(f"blocks.{i}.attention_norm", f"{block}/_self_attention_layer_norm")
        rows += _keras_hub_dense(
            f"blocks.{i}.ffn_inner", f"{block}/_feedforward_intermediate_dense"
        )
        rows += _keras_hub_dense(f"blocks.{i}.ffn_output", f"{block}/_feedforward_output_dense")
        rows += _keras_hub_norm(f"blocks.{i}.ffn_norm", f"{block}/_feedforward_layer_norm")
    return rows


_PLAIN = {HEADS_IN: DENSE, HEADS_BIAS: SAME, HEADS_OUT: DENSE}


def _merge(per_format: dict[str, list[tuple]], heads: int | None = None) -> list[Row]:
    """Rows with every format's name, from one list of ``(attribute, name, layout)`` a format
    (the lists are made in the same order). A per-head layout (KerasHub's) is the row's layout:
    it means ``DENSE`` or ``SAME`` in the other formats."""
    formats = list(per_format)
    rows = []
    for entries in zip(*per_format.values(), strict=True):
        attribute = entries[0][0]
        layouts = [e[2] for e in entries]
        layout = next((x for x in layouts if x in _PLAIN), layouts[0])
        for entry in entries:
            if entry[0] != attribute or _PLAIN.get(entry[2], entry[2]) != _PLAIN.get(
                layout, layout
            ):
                raise AssertionError(f"name tables disagree: {entries}")
        names = {fmt: e[1] for fmt, e in zip(formats, entries, strict=True)}
        rows.append(Row(attribute, names, layout, heads=heads))
    return rows


_BERT_PARTS = {
    HUGGINGFACE: {
        "query": "attention.self.query",
        "key": "attention.self.key",
        "value": "attention.self.value",
        "attention_output": "attention.output.dense",
        "attention_norm": "attention.output.LayerNorm",
        "ffn_inner": "intermediate.dense",
        "ffn_output": "output.dense",
        "ffn_norm": "output.LayerNorm",
    },
}
_BERT_PARTS[GOOGLE] = {k: v.replace(".", "/") for k, v in _BERT_PARTS[HUGGINGFACE].items()}


def _bert_like(projection: str | None = None, pooler: str | None = "pooler.dense") -> dict:
    return {
        "embeddings": "embeddings",
        "projection": projection,
        "block": "encoder.layer.{i}",
        "parts": _BERT_PARTS[HUGGINGFACE],
        "pooler": pooler,
    }


BERT_NAMES = FamilyNames(
    _bert_like(),
    keras_hub=True,
    google={
        "embeddings": "bert/embeddings",
        "block": "bert/encoder/layer_{i}",
        "parts": _BERT_PARTS[GOOGLE],
        "pooler": "bert/pooler/dense",
    },
)
ROBERTA_NAMES = FamilyNames(_bert_like())
ELECTRA_NAMES = FamilyNames(
    _bert_like(projection="embeddings_project", pooler=None),
    google={
        "embeddings": "electra/embeddings",
        "projection": "electra/embeddings_project",
        "block": "electra/encoder/layer_{i}",
        "parts": _BERT_PARTS[GOOGLE],
        "pooler": None,
    },
)
DISTILBERT_NAMES = FamilyNames(
    {
        "embeddings": "embeddings",
        "block": "transformer.layer.{i}",
        "parts": {
            "query": "attention.q_lin",
            "key": "attention.k_lin",
            "value": "attention.v_lin",
            "attention_output": "attention.out_lin",
            "attention_norm": "sa_layer_norm",
            "ffn_inner": "ffn.lin1",
            "ffn_output": "ffn.lin2",
            "ffn_norm": "output_layer_norm",
        },
        "pooler": None,
    }
)
_ALBERT_GOOGLE_PARTS = {
    "query": "attention_1/self/query",
    "key": "attention_1/self/key",
    "value": "attention_1/self/value",
    "attention_output": "attention_1/output/dense",
    "attention_norm": "LayerNorm",
    "ffn_inner": "ffn_1/intermediate/dense",
    "ffn_output": "ffn_1/intermediate/output/dense",
    "ffn_norm": "LayerNorm_1",
}
ALBERT_NAMES = FamilyNames(
    {
        "embeddings": "embeddings",
        "projection": "encoder.embedding_hidden_mapping_in",
        "block": "encoder.albert_layer_groups.0.albert_layers.0",
        "parts": {
            "query": "attention.query",
            "key": "attention.key",
            "value": "attention.value",
            "attention_output": "attention.dense",
            "attention_norm": "attention.LayerNorm",
            "ffn_inner": "ffn",
            "ffn_output": "ffn_output",
            "ffn_norm": "full_layer_layer_norm",
        },
        "pooler": "pooler",
    },
    google={
        "embeddings": "bert/embeddings",
        "projection": "bert/encoder/embedding_hidden_mapping_in",
        "block": "bert/encoder/transformer/group_0/inner_group_0",
        "parts": _ALBERT_GOOGLE_PARTS,
        "pooler": "bert/pooler/dense",
    },
    shared=True,
)

# BERT's pretraining heads (attribute paths start at the head object). Hugging Face keeps them
# outside the ``bert.`` model prefix.
MLM_HEAD = [
    Row("transform.kernel", {GOOGLE: "cls/predictions/transform/dense/kernel",
                             HUGGINGFACE: "cls.predictions.transform.dense.weight"}, DENSE, False),
    Row("transform.bias", {GOOGLE: "cls/predictions/transform/dense/bias",
                           HUGGINGFACE: "cls.predictions.transform.dense.bias"}, SAME, False),
    Row("layer_norm.gamma", {GOOGLE: "cls/predictions/transform/LayerNorm/gamma",
                             HUGGINGFACE: "cls.predictions.transform.LayerNorm.weight"}, SAME,
        False),
    Row("layer_norm.beta", {GOOGLE: "cls/predictions/transform/LayerNorm/beta",
                            HUGGINGFACE: "cls.predictions.transform.LayerNorm.bias"}, SAME, False),
    Row("output_bias", {GOOGLE: "cls/predictions/output_bias",
                        HUGGINGFACE: "cls.predictions.bias"}, SAME, False),
]  # fmt: skip
NSP_HEAD = [
    Row("dense.kernel", {GOOGLE: "cls/seq_relationship/output_weights",
                         HUGGINGFACE: "cls.seq_relationship.weight"}, OUT_IN, False),
    Row("dense.bias", {GOOGLE: "cls/seq_relationship/output_bias",
                       HUGGINGFACE: "cls.seq_relationship.bias"}, SAME, False),
]  # fmt: skip

# Entries that are not weights, or are copies of weights the tables already load.
GOOGLE_SKIPPED = re.compile(r"(^global_step$|/adam_[mv]$|^_CHECKPOINTABLE_OBJECT_GRAPH$)")
HF_SKIPPED = re.compile(
    r"(^embeddings\.(position_ids|token_type_ids)$"  # buffers
    r"|^cls\.predictions\.decoder\.(weight|bias)$)"  # tied copies
)


def bert_name_table(num_layers: int, part: str = "encoder") -> list[tuple[str, str, str, str]]:
    """BERT's name table of one part, with block indices filled in.

    Parts: ``encoder`` (embeddings and blocks), ``pooler``, ``mlm`` and ``nsp`` (the heads).

    Rows are ``(texkit attribute path, Google TF name, Hugging Face name, layout)``.
    """
    if part in ("mlm", "nsp"):
        rows = MLM_HEAD if part == "mlm" else NSP_HEAD
    else:
        rows = BERT_NAMES.rows(num_layers, part)
    return [
        (r.attribute, r.names[GOOGLE], r.names[HUGGINGFACE], _PLAIN.get(r.layout, r.layout))
        for r in rows
    ]
