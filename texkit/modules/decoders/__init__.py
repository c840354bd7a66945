"""Decoders and the decoding algorithms they share."""

from texkit.modules.decoders.decoding import (
    BeamSearchOutput,
    DecodeResult,
    beam_search,
    filter_top_k,
    filter_top_p,
    gnmt_length_penalty,
    greedy_decode,
    sample_decode,
    tile_batch,
)
from texkit.modules.decoders.rnn_decoders import (
    AttentionDecoderOutput,
    AttentionRNNDecoder,
    AttentionState,
    BasicRNNDecoder,
    DecoderOutput,
)

__all__ = [
    "AttentionDecoderOutput",
    "AttentionRNNDecoder",
    "AttentionState",
    "BasicRNNDecoder",
    "BeamSearchOutput",
    "DecodeResult",
    "DecoderOutput",
    "beam_search",
    "filter_top_k",
    "filter_top_p",
    "gnmt_length_penalty",
    "greedy_decode",
    "sample_decode",
    "tile_batch",
]
