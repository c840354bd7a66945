"""T5 as data: its Hugging Face folder format, config translation and name table.

Folder: ``config.json`` (``model_type: t5``) and ``model.safetensors``; names like
``encoder.block.0.layer.0.SelfAttention.q.weight`` (projections stored ``[out, in]``), the
relative position tables in each stack's first block, RMS norm weights as ``layer_norm.weight``.
``encoder.embed_tokens.weight`` and ``decoder.embed_tokens.weight`` are the shared table again
(tied) and are not loaded twice. T5 1.0 (``feed_forward_proj: relu``, tied output) and T5 1.1
(``gated-gelu``, its own ``lm_head``) are both read; :class:`~texkit.modules.T5EncoderDecoder`'s
hparams are the config's keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from texkit.data.tokenizers import SentencePieceTokenizer
from texkit.hparams.rules import short
from texkit.modules import T5EncoderDecoder
from texkit.pretrained.checkpoints import HUGGINGFACE, CheckpointError, Row
from texkit.pretrained.family import Family, HFExport, huggingface_format, register_family
from texkit.pretrained.names import NameTable

__all__ = ["T5", "t5_config_from_hparams", "t5_name_table"]

_ATTENTION = (("q", "query"), ("k", "key"), ("v", "value"), ("o", "output_dense"))


def _at(path: str) -> dict[str, str]:
    return {HUGGINGFACE: path}


def t5_name_table(hparams: Mapping) -> list[Row]:
    """T5's rows, from a :class:`~texkit.modules.T5EncoderDecoder` with these hparams."""
    inner = ["wi_0", "wi_1"] if hparams["feed_forward_proj"].startswith("gated") else ["wi"]
    table = NameTable((HUGGINGFACE,)).weight("shared.embedding", _at("shared"))
    for side, layers in (
        ("encoder", hparams["num_layers"]),
        ("decoder", hparams["num_decoder_layers"] or hparams["num_layers"]),
    ):
        stack = f"{side}.stack"
        table.weight(
            f"{stack}.relative_bias.embeddings",
            _at(f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias"),
        )
        for i in range(layers):
            block, hf = f"{stack}.blocks.{i}", f"{side}.block.{i}.layer"
            attentions = [("self_attention", f"{hf}.0.SelfAttention", f"{hf}.0.layer_norm")]
            if side == "decoder":
                attentions.append(
                    ("cross_attention", f"{hf}.1.EncDecAttention", f"{hf}.1.layer_norm")
                )
            for attention, path, norm in attentions:
                for theirs, mine in _ATTENTION:
                    table.dense(f"{block}.{attention}.{mine}", _at(f"{path}.{theirs}"), bias=None)
                table.weight(f"{block}.{attention}_norm.scale", _at(norm))
            ffn = f"{hf}.{len(attentions)}"
            for index, name in enumerate(inner):
                table.dense(f"{block}.ffn.inner.{index}", _at(f"{ffn}.DenseReluDense.{name}"),
                            bias=None)  # fmt: skip
            table.dense(f"{block}.ffn.output_dense", _at(f"{ffn}.DenseReluDense.wo"), bias=None)
            table.weight(f"{block}.ffn_norm.scale", _at(f"{ffn}.layer_norm"))
        table.weight(f"{stack}.final_norm.scale", _at(f"{side}.final_layer_norm"))
    if not hparams["tie_word_embeddings"]:
        table.dense("decoder.lm_head", _at("lm_head"), bias=None)
    return table.rows


def _check_config(config: Mapping[str, Any], source: str) -> None:
    tied = config.get("tie_word_embeddings", True)
    scaled = config.get("scale_decoder_outputs", tied)
    if scaled != tied:
        raise CheckpointError(
            f"{source}: scale_decoder_outputs={short(scaled)} with "
            f"tie_word_embeddings={short(tied)} is "
            "not supported (T5 scales the decoder's output exactly when the output is tied)"
        )


def t5_config_from_hparams(hparams: Mapping[str, Any], source: Mapping[str, Any]) -> dict:
    """A Hugging Face ``config.json`` for a :class:`~texkit.modules.T5EncoderDecoder`'s hparams
    (its config's keys), over the ``source`` config's other keys, with the keys transformers
    derives from them (``dense_act_fn``, ``is_gated_act``, ``scale_decoder_outputs``)."""
    config = {**source, **{key: value for key, value in hparams.items() if key != "name"}}
    proj = hparams["feed_forward_proj"]
    config["is_gated_act"] = proj.startswith("gated-")
    config["dense_act_fn"] = "gelu_new" if proj == "gated-gelu" else proj.split("-")[-1]
    config["scale_decoder_outputs"] = hparams["tie_word_embeddings"]
    config["is_encoder_decoder"] = True
    return config


_HEADS = ("num_heads", "d_kv")  # the attention's inner size is their product


def _stack_sized(side: str, cross: bool) -> tuple:
    """The sized weights of one stack: its relative position table, and in each block the
    attentions' projections and the feed-forward network (``inner.1``: gated only)."""
    stack = f"{side}.stack"
    sized = [(("relative_attention_num_buckets", "num_heads"), f"{stack}.relative_bias.embeddings")]
    for attention in ("self_attention", "cross_attention") if cross else ("self_attention",):
        block = f"{stack}.blocks.0.{attention}"
        sized += [
            (("d_model", _HEADS), f"{block}.{part}.kernel") for part in ("query", "key", "value")
        ]
        sized.append(((_HEADS, "d_model"), f"{block}.output_dense.kernel"))
    ffn = f"{stack}.blocks.0.ffn"
    sized += [(("d_model", "d_ff"), f"{ffn}.inner.{i}.kernel") for i in (0, 1)]
    sized.append((("d_ff", "d_model"), f"{ffn}.output_dense.kernel"))
    return tuple(sized)


T5 = register_family(
    Family(
        name="t5",
        module=T5EncoderDecoder,
        formats=(
            huggingface_format(
                re.compile(r"^(encoder|decoder)\.embed_tokens\.weight$"),  # the shared table
                re.compile(r"^(shared|encoder|decoder)\."),
            ),
        ),
        architecture_keys=tuple(
            k
            for k in T5EncoderDecoder.default_hparams()
            if k not in ("name", "dropout_rate", "initializer_factor")
        ),
        config_defaults={
            "num_decoder_layers": None,
            "feed_forward_proj": "relu",  # configs older than T5 1.1 do not say
            "tie_word_embeddings": True,
            "relative_attention_max_distance": 128,
            "initializer_factor": 1.0,
            "decoder_start_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 0,
            "dropout_rate": 0.1,
            "layer_norm_epsilon": 1e-6,
        },
        name_table=lambda hparams, part: t5_name_table(hparams),
        sized=(
            (("vocab_size", "d_model"), "shared.embedding"),
            *_stack_sized("encoder", cross=False),
            *_stack_sized("decoder", cross=True),
            (("d_model", "vocab_size"), "decoder.lm_head.kernel"),
        ),
        num_layers_key="num_layers",
        epsilon_keys=("layer_norm_epsilon",),
        layer_pattern=re.compile(r"^encoder\.block\.(\d+)\."),
        more_layer_counts=(("num_decoder_layers", re.compile(r"^decoder\.block\.(\d+)\.")),),
        check_config=_check_config,
        tokenizer=SentencePieceTokenizer,
        tokenizer_options={"style": "t5"},
        export=HFExport(
            {"t5": "T5ForConditionalGeneration"}, t5_config_from_hparams, generates=True
        ),
    )
)
