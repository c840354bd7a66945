"""BERT's checkpoint name tables, as data: one row per weight, naming it in each format.

Rows are ``(texkit attribute path, Google TF name, Hugging Face name, layout)``; ``{i}`` stands
for the block index, and attribute paths start at the encoder or the head object. Layouts are
those of :mod:`texkit.pretrained.checkpoints`.
"""

from __future__ import annotations

import re

from texkit.pretrained.checkpoints import DENSE, OUT_IN, SAME

__all__ = ["GOOGLE_ENCODER", "GOOGLE_SKIPPED", "HF_ENCODER", "HF_SKIPPED", "bert_name_table"]

_EMBEDDINGS = [
    ("word_embedder.embedding", "bert/embeddings/word_embeddings",
     "embeddings.word_embeddings.weight", SAME),
    ("segment_embedder.embedding", "bert/embeddings/token_type_embeddings",
     "embeddings.token_type_embeddings.weight", SAME),
    ("position_embedder.embedding", "bert/embeddings/position_embeddings",
     "embeddings.position_embeddings.weight", SAME),
    ("encoder.input_norm.gamma", "bert/embeddings/LayerNorm/gamma",
     "embeddings.LayerNorm.weight", SAME),
    ("encoder.input_norm.beta", "bert/embeddings/LayerNorm/beta",
     "embeddings.LayerNorm.bias", SAME),
]  # fmt: skip
_BLOCK = [
    ("encoder.blocks.{i}.self_attention.query.kernel",
     "bert/encoder/layer_{i}/attention/self/query/kernel",
     "encoder.layer.{i}.attention.self.query.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.query.bias",
     "bert/encoder/layer_{i}/attention/self/query/bias",
     "encoder.layer.{i}.attention.self.query.bias", SAME),
    ("encoder.blocks.{i}.self_attention.key.kernel",
     "bert/encoder/layer_{i}/attention/self/key/kernel",
     "encoder.layer.{i}.attention.self.key.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.key.bias",
     "bert/encoder/layer_{i}/attention/self/key/bias",
     "encoder.layer.{i}.attention.self.key.bias", SAME),
    ("encoder.blocks.{i}.self_attention.value.kernel",
     "bert/encoder/layer_{i}/attention/self/value/kernel",
     "encoder.layer.{i}.attention.self.value.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.value.bias",
     "bert/encoder/layer_{i}/attention/self/value/bias",
     "encoder.layer.{i}.attention.self.value.bias", SAME),
    ("encoder.blocks.{i}.self_attention.output_dense.kernel",
     "bert/encoder/layer_{i}/attention/output/dense/kernel",
     "encoder.layer.{i}.attention.output.dense.weight", DENSE),
    ("encoder.blocks.{i}.self_attention.output_dense.bias",
     "bert/encoder/layer_{i}/attention/output/dense/bias",
     "encoder.layer.{i}.attention.output.dense.bias", SAME),
    ("encoder.blocks.{i}.attention_norm.gamma",
     "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma",
     "encoder.layer.{i}.attention.output.LayerNorm.weight", SAME),
    ("encoder.blocks.{i}.attention_norm.beta",
     "bert/encoder/layer_{i}/attention/output/LayerNorm/beta",
     "encoder.layer.{i}.attention.output.LayerNorm.bias", SAME),
    ("encoder.blocks.{i}.ffn_inner.kernel",
     "bert/encoder/layer_{i}/intermediate/dense/kernel",
     "encoder.layer.{i}.intermediate.dense.weight", DENSE),
    ("encoder.blocks.{i}.ffn_inner.bias",
     "bert/encoder/layer_{i}/intermediate/dense/bias",
     "encoder.layer.{i}.intermediate.dense.bias", SAME),
    ("encoder.blocks.{i}.ffn_output.kernel",
     "bert/encoder/layer_{i}/output/dense/kernel",
     "encoder.layer.{i}.output.dense.weight", DENSE),
    ("encoder.blocks.{i}.ffn_output.bias",
     "bert/encoder/layer_{i}/output/dense/bias",
     "encoder.layer.{i}.output.dense.bias", SAME),
    ("encoder.blocks.{i}.ffn_norm.gamma",
     "bert/encoder/layer_{i}/output/LayerNorm/gamma",
     "encoder.layer.{i}.output.LayerNorm.weight", SAME),
    ("encoder.blocks.{i}.ffn_norm.beta",
     "bert/encoder/layer_{i}/output/LayerNorm/beta",
     "encoder.layer.{i}.output.LayerNorm.bias", SAME),
]  # fmt: skip
_POOLER = [
    ("pooler.kernel", "bert/pooler/dense/kernel", "pooler.dense.weight", DENSE),
    ("pooler.bias", "bert/pooler/dense/bias", "pooler.dense.bias", SAME),
]
_MLM_HEAD = [
    ("transform.kernel", "cls/predictions/transform/dense/kernel",
     "cls.predictions.transform.dense.weight", DENSE),
    ("transform.bias", "cls/predictions/transform/dense/bias",
     "cls.predictions.transform.dense.bias", SAME),
    ("layer_norm.gamma", "cls/predictions/transform/LayerNorm/gamma",
     "cls.predictions.transform.LayerNorm.weight", SAME),
    ("layer_norm.beta", "cls/predictions/transform/LayerNorm/beta",
     "cls.predictions.transform.LayerNorm.bias", SAME),
    ("output_bias", "cls/predictions/output_bias", "cls.predictions.bias", SAME),
]  # fmt: skip
_NSP_HEAD = [
    ("dense.kernel", "cls/seq_relationship/output_weights", "cls.seq_relationship.weight", OUT_IN),
    ("dense.bias", "cls/seq_relationship/output_bias", "cls.seq_relationship.bias", SAME),
]
# Entries that are not weights, or are copies of weights the table already loads.
GOOGLE_SKIPPED = re.compile(r"(^global_step$|/adam_[mv]$|^_CHECKPOINTABLE_OBJECT_GRAPH$)")
HF_SKIPPED = re.compile(
    r"(^embeddings\.position_ids$|^cls\.predictions\.decoder\.(weight|bias)$)"  # tied copies
)
# Names that belong to the encoder: an unknown one of these means the checkpoint and its config
# (or the encoder) disagree.
GOOGLE_ENCODER = re.compile(r"^bert/")
HF_ENCODER = re.compile(r"^(embeddings|encoder|pooler)\.")


def bert_name_table(num_layers: int, part: str = "encoder") -> list[tuple[str, str, str, str]]:
    """The name table of one part, with block indices filled in.

    Parts: ``encoder`` (embeddings and blocks), ``pooler``, ``mlm`` and ``nsp`` (the heads).

    Rows are ``(texkit attribute path, Google TF name, Hugging Face name, layout)``.
    """
    if part == "mlm":
        return list(_MLM_HEAD)
    if part == "nsp":
        return list(_NSP_HEAD)
    if part == "pooler":
        return list(_POOLER)
    rows = list(_EMBEDDINGS)
    for i in range(num_layers):
        rows += [tuple(item.replace("{i}", str(i)) for item in row) for row in _BLOCK]
    return rows
