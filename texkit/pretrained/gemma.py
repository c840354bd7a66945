"""Gemma, Gemma 2 and Gemma 3 (text) checkpoints, built as :class:`~texkit.modules.LlamaDecoder`.

All Gemmas store RMS norm weights as offsets from 1, scale the embeddings by
``sqrt(hidden_size)`` (rounded to the model's dtype first), use GeGLU with the tanh
approximation (``hidden_activation``; Gemma 1 configs that say ``hidden_act: gelu`` run it too)
and tie the output layer to the embeddings; ``head_dim`` is its own size (256 in the released
models). Gemma 2 adds norms after attention and feed-forward, ``query_pre_attn_scalar`` as the
attention scale, soft-capping of attention scores and final logits, and a sliding window on
every other layer (the first slides). Gemma 3 drops the soft-capping, adds query/key norms, and
slides on five layers of six (``sliding_window_pattern``, or ``layer_types``); its sliding
layers have their own rotary base (``rope_local_base_freq``, unscaled) and its full layers the
model's ``rope_theta`` and scaling.

A multimodal Gemma 3 folder (``model_type: gemma3``, ``Gemma3ForConditionalGeneration``: Gemma 3
4B, 12B, 27B) loads its language model, read from the config's ``text_config`` and the file's
``language_model.model.`` (or ``model.language_model.``) names; the vision tower and projector
are left out and reported in ``load_report.unused``. Gemma 3 embedding models
(``use_bidirectional_attention``) are refused: texkit builds the causal decoder only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import CheckpointError
from texkit.pretrained.llama_line import Variant, llama_line_family

__all__ = ["GEMMA", "GEMMA2", "GEMMA3", "GEMMA3_TEXT"]

_DEFAULTS = {"tie_word_embeddings": True, "rms_norm_eps": 1e-6}

_ABSENT = ("mlp_bias",)
GEMMA = llama_line_family("gemma", Variant(gemma=True, defaults=_DEFAULTS, absent=_ABSENT))
GEMMA2 = llama_line_family(
    "gemma2",
    Variant(gemma=True, sandwich=True, sliding="pattern", default_pattern=2, defaults=_DEFAULTS,
            absent=_ABSENT),
)  # fmt: skip
_GEMMA3 = Variant(
    gemma=True, sandwich=True, query_key_norm=True, sliding="pattern", default_pattern=6,
    local_rope=True, defaults=_DEFAULTS, absent=_ABSENT,
)  # fmt: skip


def _causal_only(config: Mapping[str, Any], source: str) -> None:
    if config.get("use_bidirectional_attention"):
        raise CheckpointError(
            f"{source}: use_bidirectional_attention={short(config['use_bidirectional_attention'])}"
            " (an embedding model); texkit loads Gemma 3's causal language models"
        )


def _text_config(config: dict) -> dict:
    """A multimodal Gemma 3 config's language model part."""
    text = config.get("text_config")
    if not isinstance(text, Mapping):
        raise CheckpointError("a gemma3 config without a text_config object")
    return {"tie_word_embeddings": config.get("tie_word_embeddings", True), **text}


GEMMA3_TEXT = llama_line_family("gemma3_text", _GEMMA3, check_config=_causal_only)
GEMMA3 = llama_line_family(
    "gemma3", _GEMMA3, check_config=_causal_only, config_translate=_text_config,
    prefixes=("language_model.model.", "model.language_model.", "model."),
    classes={"gemma3_text": "Gemma3ForCausalLM"},  # exported as its language model
)  # fmt: skip
