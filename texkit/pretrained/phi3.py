"""Phi-3 (and Phi-3.5, Phi-4-mini) checkpoints, built as :class:`~texkit.modules.LlamaDecoder`.

Phi-3 stores the query, key and value projections as one ``qkv_proj`` (queries first, then
keys, then values: with fewer key/value heads the three parts are unequal) and the gate and up
projections as one ``gate_up_proj`` (gate first); they load as slices of those entries. Long-context
variants scale the rotary frequencies with ``longrope`` (``short_factor`` / ``long_factor`` lists,
chosen by whether the current call reaches past ``original_max_position_embeddings``, a top-level
key of Phi-3 configs; the first releases call the type ``su``); ``partial_rotary_factor`` rotates
part of each head (Phi-4-mini); a ``sliding_window`` applies to every layer.
"""

from __future__ import annotations

from texkit.pretrained.llama_line import Variant, llama_line_family

__all__ = ["PHI3"]

PHI3 = llama_line_family(
    "phi3",
    Variant(
        fused=True,
        sliding="all",
        defaults={"tie_word_embeddings": False, "rms_norm_eps": 1e-5},
        absent=("head_dim", "attention_bias", "mlp_bias"),
    ),  # fmt: skip
)
