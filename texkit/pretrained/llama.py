"""Llama (2, 3, 3.1-3.3) and Mistral checkpoints: the Llama line's plainest members.

Llama: ``attention_bias`` puts biases on all four attention projections, ``mlp_bias`` on the
feed-forward ones; ``rope_scaling`` of Llama 3.1-3.3 is ``llama3``, of older long-context
variants ``linear`` or ``dynamic``. Mistral: ``sliding_window`` (``null`` in v0.2 and later)
applies to every layer. Both build :class:`~texkit.modules.LlamaDecoder`
(:mod:`~texkit.pretrained.llama_line`).
"""

from __future__ import annotations

from texkit.pretrained.llama_line import Variant, llama_line_family

__all__ = ["LLAMA", "MISTRAL"]

_UNTIED = {"tie_word_embeddings": False, "rms_norm_eps": 1e-6}

LLAMA = llama_line_family("llama", Variant(defaults=_UNTIED))
MISTRAL = llama_line_family(
    "mistral", Variant(sliding="all", defaults=_UNTIED, absent=("attention_bias", "mlp_bias"))
)
