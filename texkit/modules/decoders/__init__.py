"""Decoders and the decoding algorithms they share."""

from texkit.modules.decoders.attention_rnn_decoder import (
    AttentionDecoderOutput,
    AttentionRNNDecoder,
    AttentionState,
)
from texkit.modules.decoders.beam_decoding import (
    beam_search,
    gather_rows,
    gnmt_length_penalty,
    tile_batch,
)
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import (
    BeamSearchOutput,
    DecodeResult,
    DecoderOutput,
    forced_logits,
    greedy_decode,
    sample_decode,
)
from texkit.modules.decoders.feedback_decoding import (
    gumbel_softmax_decode,
    gumbel_softmax_sample,
    scheduled_sample_decode,
)
from texkit.modules.decoders.gpt2_decoder import GPT2Decoder
from texkit.modules.decoders.llama_decoder import LlamaDecoder
from texkit.modules.decoders.rnn_decoders import BasicRNNDecoder
from texkit.modules.decoders.sampling import filter_top_k, filter_top_p
from texkit.modules.decoders.t5_decoder import T5Decoder
from texkit.modules.decoders.transformer_decoder import TransformerDecoder

__all__ = [
    "AttentionDecoderOutput",
    "AttentionRNNDecoder",
    "AttentionState",
    "BasicRNNDecoder",
    "BeamSearchOutput",
    "DecodeRequest",
    "DecodeResult",
    "DecoderBase",
    "DecoderOutput",
    "GPT2Decoder",
    "Inference",
    "LlamaDecoder",
    "T5Decoder",
    "TransformerDecoder",
    "beam_search",
    "filter_top_k",
    "filter_top_p",
    "forced_logits",
    "gather_rows",
    "gnmt_length_penalty",
    "greedy_decode",
    "gumbel_softmax_decode",
    "gumbel_softmax_sample",
    "sample_decode",
    "scheduled_sample_decode",
    "tile_batch",
]
