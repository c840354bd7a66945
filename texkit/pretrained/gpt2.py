"""GPT-2 as data: its two folder formats, config translation and name table.

* **Hugging Face**: ``config.json`` (``model_type: gpt2``), ``model.safetensors``; names like
  ``h.0.attn.c_attn.weight``, with or without ``transformer.``. GPT-2's layers are 1x1
  convolutions stored ``[in, out]``; ``c_attn`` holds the query, key and value projections side
  by side (``[dim, 3 * dim]``), loaded as three slices. ``lm_head.weight`` is the word
  embedding table again (tied), and the attention-mask buffers of old files are not weights.
* **OpenAI's TF release** (``hparams.json``, ``model.ckpt.*``, ``encoder.json``,
  ``vocab.bpe``): names like ``model/h0/attn/c_attn/w``, the convolutions stored
  ``[1, in, out]``, layer norms as ``g``/``b``.

:class:`~texkit.modules.GPT2Decoder` keeps texkit's hparam names (it is a composed module), so
the config is translated: ``n_embd`` to ``dim``, ``n_layer`` to ``decoder.num_blocks``, and so
on (:func:`gpt2_hparams_from_config`). Its output layer is tied to the word embeddings, as
GPT-2's LM head is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from texkit.data.tokenizers import GPT2BPETokenizer
from texkit.hparams.rules import short
from texkit.modules.decoders import GPT2Decoder
from texkit.modules.encoders.bert_family import ACTIVATIONS
from texkit.pretrained.checkpoints import CONV1D, HUGGINGFACE, OPENAI, CheckpointError, Row
from texkit.pretrained.family import Family, Format, HFExport, huggingface_format, register_family
from texkit.pretrained.hf_configs import activation_name, initializer_range
from texkit.pretrained.names import NameTable

__all__ = ["GPT2", "gpt2_config_from_hparams", "gpt2_hparams_from_config", "gpt2_name_table"]

# Hugging Face options that change the network; texkit builds their GPT-2 values only.
_FIXED = {
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "add_cross_attention": False,
    "tie_word_embeddings": True,
}


def gpt2_hparams_from_config(config: Mapping[str, Any], source: str = "config") -> dict:
    """:class:`~texkit.modules.GPT2Decoder` hparams from a Hugging Face ``config.json`` or
    OpenAI's ``hparams.json`` (``n_vocab``, ``n_ctx``, ``n_embd``, ``n_head``, ``n_layer``)."""
    for key, value in _FIXED.items():
        if key in config and config[key] != value:
            raise CheckpointError(
                f"{source}: {key}={short(config[key])} is not supported ({value})"
            )
    openai = "n_vocab" in config

    def need(key: str) -> Any:
        if key not in config:
            raise CheckpointError(f"{source}: missing {key!r}")
        return config[key]

    dim = need("n_embd")
    inner = config.get("n_inner") or 4 * dim if isinstance(dim, int) else None
    activation = config.get("activation_function", "gelu_new")
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise CheckpointError(
            f"{source}: unknown activation_function {short(activation)}; expected one of "
            f"{sorted(ACTIVATIONS)}"
        )
    stddev = config.get("initializer_range", 0.02)
    # Given to the initializer's free-form kwargs, which hparams do not type-check.
    if (
        isinstance(stddev, bool)
        or not isinstance(stddev, (int, float))
        or not (0 < stddev < math.inf)
    ):
        raise CheckpointError(
            f"{source}: initializer_range={short(stddev)}, but it is a positive number"
        )
    normal = {"type": "RandomNormal", "kwargs": {"stddev": stddev}}
    return {
        "vocab_size": need("n_vocab" if openai else "vocab_size"),
        "dim": dim,
        "embed": {"initializer": normal},
        "decoder": {
            "num_blocks": need("n_layer"),
            "multihead_attention": {
                "num_heads": need("n_head"),
                "dropout_rate": config.get("attn_pdrop", 0.1),
            },
            "poswise_feedforward": {"dim": inner, "activation": ACTIVATIONS[activation]},
            "embedding_dropout": config.get("embd_pdrop", 0.1),
            "residual_dropout": config.get("resid_pdrop", 0.1),
            "layer_norm_epsilon": config.get("layer_norm_epsilon", 1e-5),
            "position_embedder": {
                "position_size": need("n_ctx" if openai else "n_positions"),
            },
            "initializer": normal,
        },
    }


def gpt2_config_from_hparams(hparams: Mapping[str, Any], source: Mapping[str, Any]) -> dict:
    """A Hugging Face ``config.json`` for a :class:`~texkit.modules.GPT2Decoder`'s hparams (the
    inverse of :func:`gpt2_hparams_from_config`), over the ``source`` config's other keys."""
    decoder = hparams["decoder"]
    attention, ffn = decoder["multihead_attention"], decoder["poswise_feedforward"]
    inner = ffn["dim"]
    if source.get("n_inner") is None and inner == 4 * hparams["dim"]:
        inner = None  # the config's way of saying 4 * n_embd
    config = {key: value for key, value in source.items() if key not in ("n_vocab", "n_ctx")}
    config.update(
        {
            "vocab_size": hparams["vocab_size"],
            "n_embd": hparams["dim"],
            "n_layer": decoder["num_blocks"],
            "n_head": attention["num_heads"],
            "n_inner": inner,
            "n_positions": decoder["position_embedder"]["position_size"],
            "activation_function": activation_name(
                ffn["activation"], source.get("activation_function")
            ),
            "attn_pdrop": attention["dropout_rate"],
            "embd_pdrop": decoder["embedding_dropout"],
            "resid_pdrop": decoder["residual_dropout"],
            "layer_norm_epsilon": decoder["layer_norm_epsilon"],
            "initializer_range": initializer_range(hparams["embed"]["initializer"], source),
            **_FIXED,
        }
    )
    return config


def gpt2_name_table(num_blocks: int) -> list[Row]:
    """GPT-2's rows, from a :class:`~texkit.modules.GPT2Decoder`."""
    table = NameTable((HUGGINGFACE, OPENAI))

    def at(hf: str, openai: str) -> dict[str, str]:
        return {HUGGINGFACE: hf, OPENAI: openai}

    table.weight("word_embedder.embedding", at("wte", "model/wte"))
    table.weight("decoder.position_embedder.embedding", at("wpe", "model/wpe"))
    for i in range(num_blocks):
        block, hf, openai = f"decoder.blocks.{i}", f"h.{i}", f"model/h{i}"
        table.norm(f"{block}.attention_norm", at(f"{hf}.ln_1", f"{openai}/ln_1"))
        fused = at(f"{hf}.attn.c_attn", f"{openai}/attn/c_attn")
        for index, part in enumerate(("query", "key", "value")):
            table.dense(f"{block}.self_attention.{part}", fused, CONV1D, split=(index, 3))
        table.dense(f"{block}.self_attention.output_dense",
                    at(f"{hf}.attn.c_proj", f"{openai}/attn/c_proj"), CONV1D)  # fmt: skip
        table.norm(f"{block}.ffn_norm", at(f"{hf}.ln_2", f"{openai}/ln_2"))
        table.dense(f"{block}.ffn_inner", at(f"{hf}.mlp.c_fc", f"{openai}/mlp/c_fc"), CONV1D)
        table.dense(f"{block}.ffn_output", at(f"{hf}.mlp.c_proj", f"{openai}/mlp/c_proj"), CONV1D)
    return table.norm("decoder.output_norm", at("ln_f", "model/ln_f")).rows


GPT2 = register_family(
    Family(
        name="gpt2",
        module=GPT2Decoder,
        formats=(
            huggingface_format(
                # Attention-mask buffers of old files, and the tied copy of wte.
                re.compile(r"^(h\.\d+\.attn\.(bias|masked_bias)|lm_head\.weight)$"),
                re.compile(r"^(wte|wpe|ln_f|h\.\d+)\."),
            ),
            Format(OPENAI, "hparams.json", "model.ckpt", re.compile(r"^$"), re.compile("^model/")),
        ),
        architecture_keys=(
            "vocab_size",
            "dim",
            "decoder.num_blocks",
            "decoder.multihead_attention.num_heads",
            "decoder.poswise_feedforward.dim",
            "decoder.poswise_feedforward.activation",
            "decoder.position_embedder.position_size",
            "decoder.layer_norm_epsilon",
        ),
        name_table=lambda hparams, part: gpt2_name_table(hparams["decoder"]["num_blocks"]),
        prefixes=("transformer.",),
        sized=(
            (("vocab_size", "dim"), "word_embedder.embedding"),
            (
                ("decoder.position_embedder.position_size", "dim"),
                "decoder.position_embedder.embedding",
            ),
            *(
                (("dim", "dim"), f"decoder.blocks.0.self_attention.{part}.kernel")
                for part in ("query", "key", "value", "output_dense")
            ),
            (("dim", "decoder.poswise_feedforward.dim"), "decoder.blocks.0.ffn_inner.kernel"),
            (("decoder.poswise_feedforward.dim", "dim"), "decoder.blocks.0.ffn_output.kernel"),
        ),  # fmt: skip
        num_layers_key="decoder.num_blocks",
        epsilon_keys=("decoder.layer_norm_epsilon",),
        layer_pattern=re.compile(r"(?:^|[./])h\.?(\d+)[./]"),
        translate=gpt2_hparams_from_config,
        tokenizer=GPT2BPETokenizer,
        tokenizer_options={"style": "gpt2"},
        export=HFExport(
            {"gpt2": "GPT2LMHeadModel"}, gpt2_config_from_hparams, "transformer.", generates=True
        ),
    )
)
