"""Hugging Face configs from hparams: what the families' config writers share, and the Llama
line's writer.

Each family's ``HFExport.config`` (:class:`~texkit.pretrained.family.HFExport`) is the inverse
of its config translation: the ``config.json`` keys texkit models come from the module's
hparams, in the spelling transformers 5 reads, and the source config's other keys
(``bos_token_id``, a chat model's ``pad_token_id``) carry over. Where two names compute the
same (``gelu_new`` and ``gelu_pytorch_tanh``), the source's is kept. Whether a config says what
the module computes is checked when it is written (:mod:`~texkit.pretrained.hf_export`: texkit
reads it back to the same hparams).

The Llama line's configs (:func:`llama_line_config`) use transformers 5's ``rope_parameters``
(with ``rope_theta``, and for Gemma 3 one dict per layer type) and write ``layer_types`` for the
families that read it; the transformers 4 keys of a source config (``rope_theta``,
``rope_scaling``, ``rope_local_base_freq``, ``sliding_window_pattern``) are replaced by them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from texkit.modules.decoders.llama_decoder import FULL, SLIDING
from texkit.modules.encoders.bert_family import ACTIVATIONS

__all__ = ["activation_name", "initializer_range", "llama_line_config"]


def _spec(activation: Any) -> tuple:
    if isinstance(activation, str):
        return activation, ()
    kwargs = activation.get("kwargs") or {}
    return activation.get("type"), tuple(sorted(kwargs.items()))


def activation_name(activation: Any, preferred: Any = None) -> str:
    """The config's name of a texkit activation (hparams ``"silu"`` or ``{"type": "gelu",
    "kwargs": {"approximate": True}}``): ``preferred`` (the source config's) when it names the
    same function, else the first name that does in
    :data:`~texkit.modules.encoders.bert_family.ACTIVATIONS`.

    Raises:
        ValueError: no config name computes it.
    """
    wanted = _spec(activation)
    names = [name for name, spec in ACTIVATIONS.items() if _spec(spec) == wanted]
    if not names:
        raise ValueError(
            f"activation {activation!r} has no name in a Hugging Face config (known: "
            f"{sorted(ACTIVATIONS)})"
        )
    return preferred if preferred in names else names[0]


def initializer_range(initializer: Any, source: Mapping[str, Any]) -> Any:
    """``initializer_range`` from an initializer's hparams (a ``RandomNormal``'s ``stddev``), else
    the source config's, else transformers' default 0.02."""
    if isinstance(initializer, Mapping) and initializer.get("type") == "RandomNormal":
        stddev = (initializer.get("kwargs") or {}).get("stddev")
        if stddev is not None:
            return stddev
    return source.get("initializer_range", 0.02)


# Keys of a source config that the written one spells otherwise (transformers 4's).
_REPLACED = (
    "rope_theta",
    "rope_scaling",
    "rope_local_base_freq",
    "partial_rotary_factor",
    "sliding_window_pattern",
    "_sliding_window_pattern",
)


def _rope_parameters(rotary: Mapping[str, Any], variant: Any) -> dict:
    scaling = dict(rotary["scaling"] or {})
    kind = scaling.pop("rope_type", None) or scaling.pop("type", None) or "default"
    scaling.pop("type", None)
    params = {"rope_type": kind, "rope_theta": rotary["theta"], **scaling}
    if rotary["partial_rotary_factor"] != 1.0:
        params["partial_rotary_factor"] = rotary["partial_rotary_factor"]
    if not variant.local_rope:
        return params
    local = {"rope_type": "default", "rope_theta": rotary["local_theta"] or 10000.0}
    return {FULL: params, SLIDING: local}


def _sliding(hparams: Mapping[str, Any], variant: Any, source: Mapping[str, Any]) -> dict:
    """The keys that say which layers slide, as the variant's configs say it."""
    attention = hparams["attention"]
    window, given = attention["sliding_window"], attention["layer_types"]
    layers = hparams["num_blocks"]
    if variant.sliding == "all":
        return {"sliding_window": window}
    if variant.sliding == "none":
        return {}
    types = list(given) if given else [FULL] * layers
    keys = {"layer_types": types, "sliding_window": window or source.get("sliding_window")}
    if variant.sliding == "qwen":
        sliding = SLIDING in types
        keys["use_sliding_window"] = sliding
        keys["max_window_layers"] = (
            types.index(SLIDING) if sliding else source.get("max_window_layers", layers)
        )
        if not sliding:
            keys["sliding_window"] = None
    return keys


def llama_line_config(hparams: Mapping[str, Any], source: Mapping[str, Any], variant: Any) -> dict:
    """A ``config.json`` of the Llama line for a :class:`~texkit.modules.LlamaDecoder`'s hparams,
    as the family of ``variant`` (:class:`~texkit.pretrained.llama_line.Variant`) writes it."""
    attention, ffn, norm = hparams["attention"], hparams["feed_forward"], hparams["norm"]
    heads = attention["num_heads"]
    head_dim = attention["head_dim"] or hparams["dim"] // heads
    config = {key: value for key, value in source.items() if key not in _REPLACED}
    config.update(
        {
            "vocab_size": hparams["vocab_size"],
            "hidden_size": hparams["dim"],
            "num_hidden_layers": hparams["num_blocks"],
            "num_attention_heads": heads,
            "num_key_value_heads": attention["num_kv_heads"] or heads,
            "head_dim": head_dim,
            "intermediate_size": ffn["dim"],
            "max_position_embeddings": hparams["max_position_embeddings"],
            "rms_norm_eps": norm["epsilon"],
            "tie_word_embeddings": hparams["tie_embeddings"],
            "attention_dropout": attention["dropout_rate"],
            "attention_bias": attention["output_bias"],
            "mlp_bias": ffn["bias"],
            "initializer_range": initializer_range(hparams["initializer"], source),
            "rope_parameters": _rope_parameters(hparams["rotary"], variant),
            **_sliding(hparams, variant, source),
        }
    )
    preferred = source.get("hidden_activation") or source.get("hidden_act")
    activation = activation_name(ffn["activation"], preferred)
    if variant.gemma:
        config["hidden_activation"] = activation
        if variant.sandwich:
            config.pop("hidden_act", None)
    if not variant.sandwich:
        config["hidden_act"] = activation
    if variant.sandwich:  # Gemma 2 and 3, whose configs default these when they are left out
        config["query_pre_attn_scalar"] = attention["query_pre_attn_scalar"] or head_dim
        config["attn_logit_softcapping"] = attention["softcap"]
        config["final_logit_softcapping"] = hparams["final_logit_softcap"]
    scaling = hparams["rotary"]["scaling"] or {}
    if "original_max_position_embeddings" in scaling and variant.fused:  # Phi-3 says it twice
        config["original_max_position_embeddings"] = scaling["original_max_position_embeddings"]
    for key in variant.absent:
        config.pop(key, None)
    return config


def llama_line_reads_back(hparams: dict, variant: Any) -> dict:
    """A :class:`~texkit.modules.LlamaDecoder`'s hparams as its written config reads back: a
    rotary scaling's ``type`` (transformers 4's first name) is ``rope_type``, and Gemma 2 and 3
    without a ``query_pre_attn_scalar`` scale by ``head_dim``, which the config says."""
    attention, scaling = hparams["attention"], hparams["rotary"]["scaling"]
    if scaling is not None and "type" in scaling:
        scaling = {k: v for k, v in scaling.items() if k != "type"}
        scaling = {"rope_type": hparams["rotary"]["scaling"]["type"], **scaling}
        hparams = {**hparams, "rotary": {**hparams["rotary"], "scaling": scaling}}
    if variant.sandwich and attention["query_pre_attn_scalar"] is None:
        head_dim = attention["head_dim"] or hparams["dim"] // attention["num_heads"]
        hparams = {**hparams, "attention": {**attention, "query_pre_attn_scalar": head_dim}}
    return hparams
