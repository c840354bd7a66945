"""What the families of the Llama line share: config reading, name table and family record.

Llama, Mistral, Qwen 2/3, Gemma 1/2/3 and Phi-3 folders are all built as one
:class:`~texkit.modules.LlamaDecoder`; each family's file (``llama.py``, ``qwen.py``,
``gemma.py``, ``phi3.py``) says how its ``config.json`` differs, by a :class:`Variant`, and
registers its family with :func:`llama_line_family`.

Configs come in two spellings, both read: transformers 5 writes ``rope_parameters`` (holding
``rope_theta`` and the scaling; for Gemma 3 one dict per layer type) and ``dtype``;
transformers 4, which most hub checkpoints were saved with, writes ``rope_theta`` and
``rope_scaling`` (its type under ``type`` or ``rope_type``) and ``torch_dtype``.

Names (Hugging Face's ``*ForCausalLM``, after the ``model.`` prefix)::

    embed_tokens.weight                      word_embedder.embedding
    layers.{i}.input_layernorm.weight        blocks.{i}.attention_norm.scale
    layers.{i}.self_attn.{q,k,v,o}_proj.*    blocks.{i}.self_attention.{query,key,value,
                                                                     output_dense}
    layers.{i}.self_attn.{q,k}_norm.weight   blocks.{i}.self_attention.{query,key}_norm.scale
    layers.{i}.post_attention_layernorm      blocks.{i}.ffn_norm (Gemma 2/3: post_attention_norm)
    layers.{i}.pre_feedforward_layernorm     blocks.{i}.ffn_norm            (Gemma 2/3)
    layers.{i}.post_feedforward_layernorm    blocks.{i}.post_ffn_norm       (Gemma 2/3)
    layers.{i}.mlp.{gate,up,down}_proj       blocks.{i}.ffn.{inner.0,inner.1,output_dense}
    norm.weight                              output_norm.scale
    lm_head.weight (no prefix)               output_layer.kernel (absent when tied)

Phi-3 fuses ``qkv_proj`` (query, key and value rows one after another: with grouped-query
attention, unequal parts) and ``gate_up_proj`` (gate, then up); they load as slices.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from texkit.core.rotary import rope_settings
from texkit.errors import HParamsError
from texkit.hparams.rules import short
from texkit.modules.decoders import LlamaDecoder
from texkit.modules.decoders.llama_decoder import FULL, LAYER_TYPES, SLIDING
from texkit.modules.encoders.bert_family import ACTIVATIONS
from texkit.pretrained.checkpoints import HUGGINGFACE, CheckpointError, Row
from texkit.pretrained.family import Family, HFExport, huggingface_format, register_family
from texkit.pretrained.hf_configs import llama_line_config, llama_line_reads_back
from texkit.pretrained.names import NameTable
from texkit.pretrained.tokenizers import FolderTokenizer

__all__ = ["Variant", "llama_line_family", "llama_line_hparams", "llama_line_name_table"]


@dataclass(frozen=True)
class Variant:
    """How one family's configs and checkpoints differ from Llama's.

    Attributes:
        qkv_bias: ``True``/``False``: the query/key/value projections always/never have biases
            (Qwen2: always); ``None``: the config's ``attention_bias`` says, for the output
            projection too (Llama).
        query_key_norm: query/key RMS norms (Qwen3, Gemma 3).
        gemma: Gemma's conventions: norms store ``weight - 1``, embeddings scaled by
            ``sqrt(hidden_size)``, ``hidden_activation``, tied embeddings.
        sandwich: norms after attention and feed-forward (Gemma 2/3).
        fused: fused ``qkv_proj`` and ``gate_up_proj`` (Phi-3).
        sliding: how the config asks for sliding-window attention: ``"all"`` (``sliding_window``
            on every layer: Mistral, Phi-3), ``"qwen"`` (``use_sliding_window`` from
            ``max_window_layers`` on), ``"pattern"`` (``layer_types``, else every
            ``sliding_window_pattern``-th layer is full: Gemma 2 (pattern 2), Gemma 3), or
            ``"none"``.
        default_pattern: the pattern when the config gives neither ``layer_types`` nor
            ``sliding_window_pattern``.
        local_rope: the sliding layers have their own rotary base (Gemma 3's
            ``rope_local_base_freq``).
        defaults: values of keys a config may leave out.
        absent: ``config.json`` keys the family's transformers config does not have, left out
            of an export (a module that needs one is refused: texkit would read it, transformers
            would not).
    """

    qkv_bias: bool | None = None
    query_key_norm: bool = False
    gemma: bool = False
    sandwich: bool = False
    fused: bool = False
    sliding: str = "none"
    default_pattern: int = 2
    local_rope: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)
    absent: tuple[str, ...] = ()


def _get(config: Mapping, key: str, source: str, variant: Variant) -> Any:
    if config.get(key) is not None:
        return config[key]
    if key in variant.defaults:
        return variant.defaults[key]
    raise CheckpointError(f"{source}: missing {key!r}")


def _activation(config: Mapping, source: str, variant: Variant) -> dict:
    key = "hidden_activation" if variant.gemma and config.get("hidden_activation") else "hidden_act"
    name = _get(config, key, source, variant)
    if variant.gemma and key == "hidden_act" and name == "gelu":
        name = "gelu_pytorch_tanh"  # Gemma 1 configs say "gelu"; transformers runs the tanh form
    spec = ACTIVATIONS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise CheckpointError(
            f"{source}: unknown {key} {short(name)}; expected one of {sorted(ACTIVATIONS)}"
        )
    return {"type": spec, "kwargs": {}} if isinstance(spec, str) else dict(spec)


def _rope(config: Mapping, source: str, variant: Variant, head_dim: int) -> dict:
    """``rotary`` hparams from either spelling."""
    params = config.get("rope_parameters")
    local_theta = None
    if isinstance(params, Mapping) and set(params) & set(LAYER_TYPES):  # per layer type (Gemma 3)
        local = dict(params.get(SLIDING) or {})
        params = params.get(FULL)
        if (local.get("rope_type") or local.get("type") or "default") != "default":
            raise CheckpointError(
                f"{source}: rope_parameters.{SLIDING} has rope_type "
                f"{short(local.get('rope_type'))}; texkit scales only the full-attention layers"
            )
        local_theta = local.get("rope_theta")
    if params is None:
        params = config.get("rope_scaling")
    scaling = dict(params or {}) if isinstance(params, Mapping) else params
    if scaling is not None and not isinstance(scaling, dict):
        raise CheckpointError(f"{source}: rope_scaling={short(scaling)}, expected an object")
    scaling = scaling or {}
    theta = scaling.pop("rope_theta", None) or config.get("rope_theta") or 10000.0
    partial = scaling.pop("partial_rotary_factor", None) or config.get("partial_rotary_factor")
    if scaling.get("type") == "su":  # the first name of Phi-3's longrope
        scaling["type"] = "longrope"
    kind = scaling.get("rope_type") or scaling.get("type") or "default"
    if kind in ("longrope", "dynamic", "yarn") and "original_max_position_embeddings" in config:
        scaling.setdefault(
            "original_max_position_embeddings", config["original_max_position_embeddings"]
        )
    if variant.local_rope:
        local_theta = local_theta or config.get("rope_local_base_freq") or 10000.0
    try:  # checked here, so that the error names the config's keys
        rope_settings(
            head_dim, theta, scaling or None, partial, config.get("max_position_embeddings")
        )
    except HParamsError as error:
        raise CheckpointError(f"{source}: {error}") from None
    return {
        "theta": float(theta),
        "scaling": None if kind == "default" else scaling,
        "partial_rotary_factor": float(partial or 1.0),
        "local_theta": None if local_theta is None else float(local_theta),
    }


def _layer_types(config: Mapping, layers: int, source: str, variant: Variant) -> list | None:
    """The per-layer attention kinds, or ``None`` when the config gives or implies none that
    slides (``"all"`` families then slide on every layer by ``sliding_window`` alone)."""
    window = config.get("sliding_window")
    given = config.get("layer_types")
    if variant.sliding == "qwen":
        if not config.get("use_sliding_window") or window is None:
            return None
        first = config.get("max_window_layers", layers)
        given = given or [SLIDING if i >= first else FULL for i in range(layers)]
    elif variant.sliding == "pattern":
        pattern = config.get("sliding_window_pattern") or variant.default_pattern
        given = given or [SLIDING if (i + 1) % pattern else FULL for i in range(layers)]
    if given is None:
        return None
    if not isinstance(given, list) or len(given) != layers or set(given) - set(LAYER_TYPES):
        raise CheckpointError(
            f"{source}: layer_types={short(given)}, expected {layers} of {LAYER_TYPES}"
        )
    return given if SLIDING in given else None


def _window(config: Mapping, variant: Variant, layer_types: list | None) -> int | None:
    if variant.sliding == "none":
        return None
    if variant.sliding in ("qwen", "pattern") and layer_types is None:
        return None
    return config.get("sliding_window")


def llama_line_hparams(config: Mapping, source: str, variant: Variant) -> dict:
    """:class:`~texkit.modules.LlamaDecoder` hparams from a ``config.json`` of the Llama line
    (either spelling), read as ``variant`` says."""
    hidden = _get(config, "hidden_size", source, variant)
    heads = _get(config, "num_attention_heads", source, variant)
    layers = _get(config, "num_hidden_layers", source, variant)
    head_dim = config.get("head_dim")
    if head_dim is None and isinstance(hidden, int) and isinstance(heads, int) and heads:
        head_dim = hidden // heads
    bias = variant.qkv_bias
    output_bias = bool(config.get("attention_bias", False)) if bias is None else False
    layer_types = _layer_types(config, layers, source, variant)
    tied = config.get("tie_word_embeddings", variant.defaults.get("tie_word_embeddings", True))
    stddev = config.get("initializer_range", 0.02)
    attention = {
        "num_heads": heads,
        "num_kv_heads": config.get("num_key_value_heads") or heads,
        "head_dim": head_dim,
        "qkv_bias": output_bias if bias is None else bias,
        "output_bias": output_bias,
        "query_key_norm": variant.query_key_norm,
        "query_pre_attn_scalar": config.get("query_pre_attn_scalar"),
        "softcap": config.get("attn_logit_softcapping"),
        "sliding_window": _window(config, variant, layer_types),
        "layer_types": layer_types,
        "dropout_rate": float(config.get("attention_dropout", 0.0) or 0.0),
    }
    return {
        "vocab_size": _get(config, "vocab_size", source, variant),
        "dim": hidden,
        "num_blocks": layers,
        "attention": attention,
        "rotary": _rope(config, source, variant, head_dim),
        "max_position_embeddings": _get(config, "max_position_embeddings", source, variant),
        "feed_forward": {
            "dim": _get(config, "intermediate_size", source, variant),
            "activation": _activation(config, source, variant),
            "bias": bool(config.get("mlp_bias", False)),
        },
        "norm": {
            "epsilon": _get(config, "rms_norm_eps", source, variant),
            "unit_offset": variant.gemma,
            "sandwich": variant.sandwich,
        },
        "scale_embeddings": variant.gemma,
        "tie_embeddings": bool(tied),
        "final_logit_softcap": config.get("final_logit_softcapping"),
        "residual_dropout": 0.0,
        "initializer": {"type": "RandomNormal", "kwargs": {"stddev": stddev}},
    }


def llama_line_name_table(hparams: Mapping, variant: Variant) -> list[Row]:
    """The rows of a :class:`~texkit.modules.LlamaDecoder` with these hparams, in Hugging Face
    names (without the ``model.`` prefix, but ``lm_head``)."""
    table = NameTable((HUGGINGFACE,))
    table.weight("word_embedder.embedding", {HUGGINGFACE: "embed_tokens"})
    att = hparams["attention"]
    heads, kv = att["num_heads"], att["num_kv_heads"] or att["num_heads"]
    parts = (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"))
    # Phi-3's qkv_proj in units of one key/value head's rows: heads / kv units of queries.
    units = heads // kv + 2
    fused_q = (0, heads // kv, units)
    fused = {
        "query": fused_q,
        "key": (units - 2, units - 1, units),
        "value": (units - 1, units, units),
    }
    for i in range(hparams["num_blocks"]):
        block, hf = f"blocks.{i}", f"layers.{i}"

        def at(path: str) -> dict[str, str]:
            return {HUGGINGFACE: f"{hf}.{path}"}  # noqa: B023 (called at once)

        table.weight(f"{block}.attention_norm.scale", at("input_layernorm"))
        bias = None if not att["qkv_bias"] else "same"
        for mine, theirs in parts:
            if variant.fused:
                table.dense(f"{block}.self_attention.{mine}", at("self_attn.qkv_proj"),
                            bias=bias, split=fused[mine])  # fmt: skip
            else:
                table.dense(f"{block}.self_attention.{mine}", at(f"self_attn.{theirs}"), bias=bias)
        table.dense(f"{block}.self_attention.output_dense", at("self_attn.o_proj"),
                    bias="same" if att["output_bias"] else None)  # fmt: skip
        if att["query_key_norm"]:
            table.weight(f"{block}.self_attention.query_norm.scale", at("self_attn.q_norm"))
            table.weight(f"{block}.self_attention.key_norm.scale", at("self_attn.k_norm"))
        if variant.sandwich:
            table.weight(f"{block}.post_attention_norm.scale", at("post_attention_layernorm"))
            table.weight(f"{block}.ffn_norm.scale", at("pre_feedforward_layernorm"))
            table.weight(f"{block}.post_ffn_norm.scale", at("post_feedforward_layernorm"))
        else:
            table.weight(f"{block}.ffn_norm.scale", at("post_attention_layernorm"))
        bias = "same" if hparams["feed_forward"]["bias"] else None
        for index, name in enumerate(("gate_proj", "up_proj")):
            if variant.fused:
                table.dense(f"{block}.ffn.inner.{index}", at("mlp.gate_up_proj"), bias=bias,
                            split=(index, 2))  # fmt: skip
            else:
                table.dense(f"{block}.ffn.inner.{index}", at(f"mlp.{name}"), bias=bias)
        table.dense(f"{block}.ffn.output_dense", at("mlp.down_proj"), bias=bias)
    table.weight("output_norm.scale", {HUGGINGFACE: "norm"})
    if not hparams["tie_embeddings"]:
        head = NameTable((HUGGINGFACE,), prefixed=False)
        table.rows += head.dense("output_layer", {HUGGINGFACE: "lm_head"}, bias=None).rows
    return table.rows


_Q = ("attention.num_heads", "attention.head_dim")  # the queries' width: a product
_KV = ("attention.num_kv_heads", "attention.head_dim")
_SIZED = (
    (("vocab_size", "dim"), "word_embedder.embedding"),
    (("dim", _Q), "blocks.0.self_attention.query.kernel"),
    (("dim", _KV), "blocks.0.self_attention.key.kernel"),
    (("dim", _KV), "blocks.0.self_attention.value.kernel"),
    ((_Q, "dim"), "blocks.0.self_attention.output_dense.kernel"),
    (("dim", "feed_forward.dim"), "blocks.0.ffn.inner.0.kernel"),
    (("dim", "feed_forward.dim"), "blocks.0.ffn.inner.1.kernel"),
    (("feed_forward.dim", "dim"), "blocks.0.ffn.output_dense.kernel"),
)

_ARCHITECTURE = (
    "vocab_size", "dim", "num_blocks", "attention.num_heads", "attention.num_kv_heads",
    "attention.head_dim", "attention.qkv_bias", "attention.output_bias",
    "attention.query_key_norm", "attention.query_pre_attn_scalar", "attention.softcap",
    "attention.sliding_window", "attention.layer_types", "rotary.theta", "rotary.scaling",
    "rotary.partial_rotary_factor", "rotary.local_theta", "max_position_embeddings",
    "feed_forward.dim", "feed_forward.activation", "feed_forward.bias", "norm.epsilon",
    "norm.unit_offset", "norm.sandwich", "scale_embeddings", "tie_embeddings",
    "final_logit_softcap",
)  # fmt: skip


def llama_line_family(
    name: str,
    variant: Variant,
    model_types: tuple[str, ...] = (),
    tokenizer: type | None = FolderTokenizer,
    check_config: Callable[[Mapping, str], None] | None = None,
    prefixes: tuple[str, ...] = ("model.",),
    config_translate: Callable[[dict], dict] | None = None,
    classes: Mapping[str, str] | None = None,
) -> Family:
    """Registers (and returns) the family ``name`` of the Llama line, read as ``variant``
    (``prefixes``: of the model's names in the file; ``config_translate``: the part of a raw
    config that describes the language model, e.g. a multimodal folder's ``text_config``;
    ``classes``: ``{model_type: transformers class}`` of its exports, by default ``{name:
    <Name>ForCausalLM}`` with the name's spelling in transformers)."""

    def translate(config: Mapping, source: str) -> dict:
        try:
            return llama_line_hparams(config, source, variant)
        except HParamsError as error:
            raise CheckpointError(f"{source}: {error}") from None

    return register_family(
        Family(
            name=name,
            model_types=model_types,
            module=LlamaDecoder,
            formats=(
                huggingface_format(
                    re.compile(r"^(model\.)?layers\.\d+\.self_attn\.rotary_emb\.inv_freq$"),
                    re.compile(r"^(embed_tokens|norm|layers\.\d+)\."),
                    config_translate=config_translate,
                ),
            ),
            architecture_keys=_ARCHITECTURE,
            name_table=lambda hparams, part: llama_line_name_table(hparams, variant),
            prefixes=prefixes,
            sized=_SIZED,
            num_layers_key="num_blocks",
            epsilon_keys=("norm.epsilon",),
            layer_pattern=re.compile(r"(?:^|\.)layers\.(\d+)\."),
            check_config=check_config,
            translate=translate,
            tokenizer=tokenizer,
            export=HFExport(
                classes or {name: _CLASS_NAMES[name]},
                lambda hparams, source: llama_line_config(hparams, source, variant),
                prefix="model.",
                generates=True,
                reads_back=lambda hparams: llama_line_reads_back(hparams, variant),
            ),
        )
    )


# The transformers class of each family's causal language model.
_CLASS_NAMES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "phi3": "Phi3ForCausalLM",
}
