"""Building blocks shared by texkit's modules."""

from texkit.core import addressing_attention, attention_mechanisms, fused, layers
from texkit.core.causal_attention import CausalSelfAttention
from texkit.core.diagonal_gaussian import DiagonalGaussian
from texkit.core.feed_forward import FeedForward
from texkit.core.layers import (
    MaskedMeanPooling,
    get_activation,
    get_initializer,
    get_instance,
    get_layer,
)
from texkit.core.normalization import RMSNorm
from texkit.core.relative_attention import RelativeAttention
from texkit.core.relative_position import RelativePositionBias, relative_position_bucket
from texkit.core.rotary import (
    RotaryEmbedding,
    apply_rotary,
    rope_settings,
    rotary_cos_sin,
    rotary_inverse_frequencies,
)
from texkit.core.tag_schemes import (
    SCHEMES,
    allowed_transitions,
    entity_spans,
    normalize_scheme,
    parse_tag,
)

__all__ = [
    "SCHEMES",
    "allowed_transitions",
    "entity_spans",
    "normalize_scheme",
    "parse_tag",
    "addressing_attention",
    "attention_mechanisms",
    "fused",
    "layers",
    "CausalSelfAttention",
    "DiagonalGaussian",
    "FeedForward",
    "MaskedMeanPooling",
    "RMSNorm",
    "RelativeAttention",
    "RelativePositionBias",
    "RotaryEmbedding",
    "apply_rotary",
    "get_activation",
    "get_initializer",
    "get_instance",
    "get_layer",
    "relative_position_bucket",
    "rope_settings",
    "rotary_cos_sin",
    "rotary_inverse_frequencies",
]
