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

A multimodal Gemma 3 folder (``model_type: gemma3``) is refused with a clear error: texkit loads
the text-only ``gemma3_text`` checkpoints (``Gemma3ForCausalLM``), e.g. Gemma 3 1B.
"""

from __future__ import annotations

from texkit.pretrained.llama_line import Variant, llama_line_family

__all__ = ["GEMMA", "GEMMA2", "GEMMA3_TEXT"]

_DEFAULTS = {"tie_word_embeddings": True, "rms_norm_eps": 1e-6}

GEMMA = llama_line_family("gemma", Variant(gemma=True, defaults=_DEFAULTS))
GEMMA2 = llama_line_family(
    "gemma2",
    Variant(gemma=True, sandwich=True, sliding="pattern", default_pattern=2, defaults=_DEFAULTS),
)
GEMMA3_TEXT = llama_line_family(
    "gemma3_text",
    Variant(
        gemma=True,
        sandwich=True,
        query_key_norm=True,
        sliding="pattern",
        default_pattern=6,
        local_rope=True,
        defaults=_DEFAULTS,
    ),  # fmt: skip
)
