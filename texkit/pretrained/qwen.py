"""Qwen 2, 2.5 and 3 checkpoints, built as :class:`~texkit.modules.LlamaDecoder`.

Qwen2 (and 2.5, which is the same architecture) has biases on the query, key and value
projections, not on the output; Qwen3 has none but RMS-normalizes each head's queries and keys
(``q_norm``, ``k_norm``) before the rotary embedding, and sets ``head_dim`` itself. Both may
slide a window over the layers from ``max_window_layers`` on when ``use_sliding_window`` is true
(no released checkpoint does). Small models tie their output layer to the embeddings.
"""

from __future__ import annotations

from texkit.pretrained.llama_line import Variant, llama_line_family

__all__ = ["QWEN2", "QWEN3"]

_DEFAULTS = {"tie_word_embeddings": False, "rms_norm_eps": 1e-6}

QWEN2 = llama_line_family(
    "qwen2",
    Variant(qkv_bias=True, sliding="qwen", defaults=_DEFAULTS,
            absent=("head_dim", "attention_bias", "mlp_bias")),
)  # fmt: skip
QWEN3 = llama_line_family(
    "qwen3",
    Variant(query_key_norm=True, sliding="qwen", defaults=_DEFAULTS, absent=("mlp_bias",)),
)
