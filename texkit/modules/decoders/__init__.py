"""Decoders and the decoding algorithms they share."""

from texkit.modules.decoders.decoding import (
    BeamSearchOutput,
    DecodeResult,
    DecoderOutput,
    beam_search,
    filter_top_k,
    filter_top_p,
    forced_logits,
    gather_rows,
    gnmt_length_penalty,
    greedy_decode,
    sample_decode,
    tile_batch,
)
from texkit.modules.decoders.gpt2_decoder import GPT2Decoder
from texkit.modules.decoders.rnn_decoders import (
    AttentionDecoderOutput,
    AttentionRNNDecoder,
    AttentionState,
    BasicRNNDecoder,
)
from texkit.modules.decoders.transformer_decoder import TransformerDecoder

__all__ = [
    "AttentionDecoderOutput",
    "AttentionRNNDecoder",
    "AttentionState",
    "BasicRNNDecoder",
    "BeamSearchOutput",
    "DecodeResult",
    "DecoderOutput",
    "GPT2Decoder",
    "TransformerDecoder",
    "beam_search",
    "filter_top_k",
    "filter_top_p",
    "forced_logits",
    "gather_rows",
    "gnmt_length_penalty",
    "greedy_decode",
    "sample_decode",
    "tile_batch",
]
