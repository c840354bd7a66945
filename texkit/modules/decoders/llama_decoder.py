"""LlamaDecoder: the decoder-only language models of the Llama line, one class for all of them.

Llama 2/3, Mistral, Qwen 2/2.5/3, Gemma 1/2/3 and Phi-3 are the same network with switches::

    x = embed(ids) (* sqrt(dim): Gemma)
    x = block_i(x) for each block  (:class:`~texkit.core.llama_block.LlamaBlock`: RMS norms,
                                    grouped-query causal self-attention with rotary positions,
                                    a gated feed-forward network)
    logits = output(rms_norm(x))   (tied to the embeddings, or its own table)
    logits = cap * tanh(logits / cap)   (Gemma 2: final_logit_softcap)

The switches are hparams (:attr:`LlamaDecoder.HPARAMS_DOC`): key/value heads (grouped or
multi-query attention), ``head_dim`` apart from ``dim``, query/key/value biases (Qwen2),
query/key norms (Qwen3, Gemma 3), the attention scale (Gemma 2/3's ``query_pre_attn_scalar``),
soft-capping (Gemma 2), a sliding window on all blocks (Mistral, Phi-3) or on those
``layer_types`` names (Gemma 2/3), rotary scalings (:mod:`texkit.core.rotary`: ``linear``,
``dynamic``, ``llama3``, ``yarn``, ``longrope``) with another base for the sliding blocks
(Gemma 3), ``partial_rotary_factor`` (Phi-3), Gemma's ``1 + weight`` norms and its norms after
attention and feed-forward. Checkpoints of each family load through their config translation
and name table in :mod:`texkit.pretrained`.

The call is :class:`~texkit.modules.GPT2Decoder`'s: teacher forcing on ids, every decoding
strategy with ``context`` prompts, :meth:`beam_search`, XLA; decoding keeps a key/value cache
of the key/value heads only.
"""

from __future__ import annotations

import math
import os
from typing import Any

import keras
import tensorflow as tf

from texkit import registry
from texkit.core.causal_attention import CausalSelfAttention
from texkit.core.feed_forward import FeedForward
from texkit.core.layers import get_initializer
from texkit.core.llama_block import LlamaBlock
from texkit.core.normalization import RMSNorm
from texkit.core.rotary import RotaryEmbedding
from texkit.core.transformer import TiedOutput
from texkit.hparams import HParamsError, check_positive_int
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import (
    DecodeResult,
    DecoderOutput,
    batch_size_of,
    full_lengths,
    teacher_forced_outputs,
)
from texkit.modules.decoders.transformer_inference import cached_inference, feedback_inference
from texkit.modules.embedders import WordEmbedder

__all__ = ["LAYER_TYPES", "LlamaDecoder"]

# A block's attention: over every earlier step, or over the last ``sliding_window`` steps.
FULL, SLIDING = "full_attention", "sliding_attention"
LAYER_TYPES = (FULL, SLIDING)


def _positive_or_none(hp: Any, path: str) -> None:
    value = hp
    for part in path.split("."):
        value = value[part]
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise HParamsError(f"expected None or a positive number, got {value!r}", path)


def _check_hparams(hp: Any) -> None:
    """Checks what the blocks' constructors would refuse less clearly, naming the key."""
    for key in ("vocab_size", "dim", "num_blocks", "attention.num_heads", "feed_forward.dim",
                "max_position_embeddings", "max_decoding_length_infer"):  # fmt: skip
        check_positive_int(hp, key)
    for key in ("attention.num_kv_heads", "attention.head_dim", "attention.sliding_window"):
        check_positive_int(hp, key, optional=True)
    for key in ("attention.query_pre_attn_scalar", "attention.softcap", "final_logit_softcap",
                "rotary.local_theta"):  # fmt: skip
        _positive_or_none(hp, key)
    att = hp.attention
    kv = att.num_kv_heads or att.num_heads
    if att.num_heads % kv:
        raise HParamsError(
            f"{kv} key/value heads do not divide {att.num_heads} query heads",
            "attention.num_kv_heads",
        )
    if att.head_dim is None and hp.dim % att.num_heads:
        raise HParamsError(
            f"dim={hp.dim} is not a multiple of num_heads={att.num_heads}; set head_dim",
            "attention.head_dim",
        )
    if not 0 < hp.norm.epsilon < 1:
        raise HParamsError(
            f"expected an epsilon in (0, 1), got {hp.norm.epsilon!r}", "norm.epsilon"
        )
    types = att.layer_types
    if types is not None:
        if not isinstance(types, (list, tuple)) or len(types) != hp.num_blocks:
            raise HParamsError(
                f"expected a list of num_blocks={hp.num_blocks} layer types, got {types!r}",
                "attention.layer_types",
            )
        unknown = [t for t in types if t not in LAYER_TYPES]
        if unknown:
            raise HParamsError(
                f"unknown layer type {unknown[0]!r}; expected one of {LAYER_TYPES}",
                "attention.layer_types",
            )
        if SLIDING in types and att.sliding_window is None:
            raise HParamsError("sliding_attention layers need a sliding_window",
                               "attention.sliding_window")  # fmt: skip


class LlamaDecoder(DecoderBase):
    """A decoder-only language model of the Llama line (module docstring).

    Call arguments:
        inputs: ``[batch, time]`` token ids (teacher forcing: ``logits[:, t]`` predicts
            ``inputs[:, t + 1]``).
        sequence_length: ``[batch]`` valid lengths (right padding; causal attention never
            reads past a position, so padding changes nothing before it).
        decoding_strategy, start_tokens, end_token, context, context_sequence_length,
        max_decoding_length, softmax_temperature, top_k, top_p, seed, sampling_probability,
        straight_through, training: as in :class:`~texkit.modules.TransformerDecoder`
            (``context`` holds prompts; ``end_token`` one id or several).

    Returns:
        ``(DecoderOutput(logits, sample_id, soft_sample), (), lengths)``.

    Example::

        lm = tx.pretrained.from_pretrained("path/to/Qwen2.5-0.5B")   # a LlamaDecoder
        outputs, _, lengths = lm(decoding_strategy="infer_greedy", context=prompt_ids,
                                 context_sequence_length=prompt_lengths, end_token=eos_ids,
                                 max_decoding_length=64)
        search = lm.beam_search(4, 0.0, context=prompt_ids, end_token=eos_ids,
                                max_decoding_length=64)
    """

    HPARAMS_DOC = {
        "vocab_size": "Number of tokens.",
        "dim": "Model width (hidden_size).",
        "num_blocks": "Number of blocks (num_hidden_layers).",
        "attention.num_heads": "Number of query heads.",
        "attention.num_kv_heads": "Number of key/value heads (grouped-query attention; 1: "
        "multi-query); None: num_heads.",
        "attention.head_dim": "Size of one head; None: dim // num_heads (Gemma's is 256).",
        "attention.qkv_bias": "Biases on the query, key and value projections (Qwen2).",
        "attention.output_bias": "A bias on the attention's output projection.",
        "attention.query_key_norm": "RMS norms over head_dim on queries and keys (Qwen3, Gemma 3).",
        "attention.query_pre_attn_scalar": "Scores are scaled by its inverse square root (Gemma "
        "2/3); None: head_dim's.",
        "attention.softcap": "None, or c of c * tanh(scores / c) (Gemma 2).",
        "attention.sliding_window": "None, or the steps a sliding block's query sees, itself "
        "included (keys k > q - window).",
        "attention.layer_types": "None (every block slides when sliding_window is set), or a "
        "list of 'full_attention' / 'sliding_attention', one per block (Gemma 2/3).",
        "attention.dropout_rate": "Dropout on the attention weights.",
        "rotary.theta": "The rotary base (rope_theta).",
        "rotary.scaling": "None, or a rope_scaling dict: rope_type linear, dynamic, llama3, yarn "
        "or longrope with its keys (texkit.core.rotary).",
        "rotary.partial_rotary_factor": "The share of each head's dimensions that rotate (Phi-3).",
        "rotary.local_theta": "None, or the base of the sliding blocks (Gemma 3's "
        "rope_local_base_freq), which then use no scaling.",
        "max_position_embeddings": "The context length trained on (the original length of the "
        "dynamic, yarn and longrope scalings unless theirs says otherwise).",
        "feed_forward.dim": "Inner size of the gated feed-forward network (intermediate_size).",
        "feed_forward.activation": "Activation of the gate ('silu': SwiGLU; {type: gelu, kwargs: "
        "{approximate: true}}: GeGLU).",
        "feed_forward.bias": "Biases on the feed-forward projections.",
        "norm.epsilon": "The RMS norms' epsilon.",
        "norm.unit_offset": "The norms store weight - 1 (Gemma).",
        "norm.sandwich": "Norms after the attention and after the feed-forward network too "
        "(Gemma 2/3).",
        "scale_embeddings": "Multiply the word embeddings by sqrt(dim) (Gemma).",
        "tie_embeddings": "The output layer is the embedding table (transposed).",
        "final_logit_softcap": "None, or c of c * tanh(logits / c) (Gemma 2).",
        "residual_dropout": "Dropout on each sub-layer's output.",
        "initializer": "Initializer of every weight ({type, kwargs}).",
        "max_decoding_length_infer": "Steps decoded when a call gives no max_decoding_length.",
        "name": "Layer name.",
    }

    ACCEPTS_CONTEXT = True

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        _check_hparams(hp)
        policy = self.dtype_policy
        initializer = get_initializer(hp.initializer)
        self.vocab_size = hp.vocab_size
        self.head_dim = hp.attention.head_dim or hp.dim // hp.attention.num_heads
        embed = {"dim": hp.dim, "initializer": hp.initializer.todict(), "name": "word_embedder"}
        self.word_embedder = WordEmbedder(hp.vocab_size, hparams=embed, dtype=policy)
        self.rotary = self._rotary(hp.rotary.theta, hp.rotary.scaling)
        self.local_rotary = self.rotary
        if hp.rotary.local_theta is not None:
            self.local_rotary = self._rotary(hp.rotary.local_theta, None)
        self.layer_types = self._layer_types()
        self.blocks = [self._block(i, kind, initializer) for i, kind in enumerate(self.layer_types)]
        self.output_norm = RMSNorm(epsilon=hp.norm.epsilon, unit_offset=hp.norm.unit_offset,
                                   name="output_norm", dtype=policy)  # fmt: skip
        if hp.tie_embeddings:
            self.output_layer = TiedOutput(self.word_embedder, False, name="output_layer",
                                           dtype=policy)  # fmt: skip
        else:
            self.output_layer = keras.layers.Dense(
                hp.vocab_size, use_bias=False, kernel_initializer=initializer,
                name="output_layer", dtype=policy,
            )  # fmt: skip

    @classmethod
    def default_hparams(cls) -> dict:
        """Llama 2 7B's sizes."""
        return {
            "vocab_size": 32000,
            "dim": 4096,
            "num_blocks": 32,
            "attention": {
                "num_heads": 32,
                "num_kv_heads": None,
                "head_dim": None,
                "qkv_bias": False,
                "output_bias": False,
                "query_key_norm": False,
                "query_pre_attn_scalar": None,
                "softcap": None,
                "sliding_window": None,
                "layer_types": None,
                "dropout_rate": 0.0,
            },
            "rotary": {
                "theta": 10000.0,
                "scaling": None,
                "partial_rotary_factor": 1.0,
                "local_theta": None,
            },
            "max_position_embeddings": 4096,
            "feed_forward": {
                "dim": 11008,
                "activation": {"type": "silu", "kwargs": {}},
                "bias": False,
            },
            "norm": {"epsilon": 1e-5, "unit_offset": False, "sandwich": False},
            "scale_embeddings": False,
            "tie_embeddings": False,
            "final_logit_softcap": None,
            "residual_dropout": 0.0,
            "initializer": {"type": "RandomNormal", "kwargs": {"stddev": 0.02}},
            "max_decoding_length_infer": 128,
            "name": "llama_decoder",
        }

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> LlamaDecoder:
        """Builds the model of a Hugging Face folder of the Llama line (``model_type`` llama,
        mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, phi3) and loads its weights.

        Args:
            path: the folder (``config.json``; ``model.safetensors`` or shards with
                ``model.safetensors.index.json``; float32, bfloat16 or float16).
            hparams: optional overrides in this class's names; a value that contradicts the
                checkpoint's architecture is an error.
            **kwargs: Keras layer arguments (``dtype``), and ``allow_non_finite=True``.
        """
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    # --- construction ---------------------------------------------------------------------------

    def _rotary(self, theta: float, scaling: Any) -> RotaryEmbedding:
        hp = self.hparams
        if scaling is not None and not isinstance(scaling, dict):
            scaling = scaling.todict() if hasattr(scaling, "todict") else scaling
        try:
            return RotaryEmbedding(self.head_dim, theta, scaling, hp.rotary.partial_rotary_factor,
                                   hp.max_position_embeddings)  # fmt: skip
        except HParamsError as error:  # rope_scaling.<key> -> rotary.scaling.<key>
            key = error.path.replace("rope_scaling", "rotary.scaling", 1)
            raise HParamsError(error.message, key) from None

    def _layer_types(self) -> list[str]:
        att = self.hparams.attention
        if att.layer_types is not None:
            return list(att.layer_types)
        return [SLIDING if att.sliding_window is not None else FULL] * self.hparams.num_blocks

    def _block(self, index: int, kind: str, initializer: Any) -> LlamaBlock:
        hp, att, policy = self.hparams, self.hparams.attention, self.dtype_policy
        sliding = kind == SLIDING
        scale = None
        if att.query_pre_attn_scalar is not None:
            scale = float(att.query_pre_attn_scalar) ** -0.5
        attention = CausalSelfAttention(
            att.num_heads, att.num_kv_heads, self.head_dim, hp.dim,
            use_qkv_bias=att.qkv_bias, use_output_bias=att.output_bias,
            query_key_norm_epsilon=hp.norm.epsilon if att.query_key_norm else None,
            query_key_norm_unit_offset=hp.norm.unit_offset, scale=scale, softcap=att.softcap,
            sliding_window=att.sliding_window if sliding else None,
            rotary=self.local_rotary if sliding else self.rotary,
            dropout_rate=att.dropout_rate, kernel_initializer=initializer,
            name="self_attention", dtype=policy,
        )  # fmt: skip
        ffn = FeedForward(
            hp.feed_forward.dim, hp.dim, hp.feed_forward.activation.todict(), gated=True,
            use_bias=hp.feed_forward.bias, kernel_initializer=initializer, name="ffn",
            dtype=policy,
        )  # fmt: skip
        return LlamaBlock(attention, ffn, hp.norm.epsilon, hp.norm.unit_offset,
                          hp.norm.sandwich, hp.residual_dropout, name=f"block_{index}",
                          dtype=policy)  # fmt: skip

    def build(self, inputs_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        shape = (None, None, self.hparams.dim)
        self.word_embedder.build(None)
        for layer in (*self.blocks, self.output_norm, self.output_layer):
            if not layer.built:
                layer.build(shape)
        self.built = True

    def _parts_built(self, memory_shape: Any) -> bool:
        return self.blocks[0].built

    # --- the pieces cached and feedback inference read -----------------------------------------

    @property
    def recompute_at(self) -> int | None:
        """The step at which cached decoding runs every token again (``None``: never).

        With ``longrope`` scaling the frequencies of a whole call switch from the short to the
        long factors once it reaches past ``original_max_position_embeddings``; keys cached
        before then were rotated with the short ones, so the step at that position recomputes
        the sequence (and the caches) with the long ones, as Phi-3 does in Hugging Face.
        """
        settings = self.rotary.settings
        if settings.rope_type != "longrope":
            return None
        return int(settings.params["original_max_position_embeddings"])

    def _check_positions(self, length: Any) -> None:
        """Rotary positions have no table: any length runs (quality past the trained context
        is the model's affair)."""
        return None

    def _embed(self, words: Any, positions: Any, training: Any) -> Any:
        x = tf.cast(words, self.compute_dtype)
        if self.hparams.scale_embeddings:  # rounded to the compute dtype first, as Gemma does
            x = x * tf.cast(math.sqrt(self.hparams.dim), self.compute_dtype)
        return x

    def _logits(self, x: Any) -> Any:
        logits = tf.cast(self.output_layer(self.output_norm(x)), tf.float32)
        cap = self.hparams.final_logit_softcap
        return logits if cap is None else cap * tf.tanh(logits / cap)

    def _stack(self, inputs: Any, positions: Any, request: DecodeRequest) -> Any:
        """Word embeddings ``[batch, time, dim]`` through the blocks (causal), before the output
        layer; ``positions`` ``[batch, time]``."""
        x = self._embed(inputs, positions, request.training)
        for block in self.blocks:
            x, _ = block(x, positions, training=request.training)
        return x

    def _own(self, request: DecodeRequest) -> DecodeRequest:
        return self._with_own_embedder(request, self.word_embedder)

    # --- the decoder base's hooks ---------------------------------------------------------------

    def _teacher_forcing(self, request: DecodeRequest) -> tuple[DecoderOutput, tuple, Any]:
        if request.inputs is None:
            raise ValueError(f"{self.name}: train_greedy needs `inputs` (token ids)")
        inputs = tf.convert_to_tensor(request.inputs)
        if not inputs.dtype.is_integer or len(inputs.shape) != 2:
            raise ValueError(
                f"{self.name}: inputs must be [batch, time] token ids, got {inputs.dtype.name} "
                f"of shape {tuple(inputs.shape)}"
            )
        request = self._own(request)
        batch, max_time = batch_size_of(inputs), tf.shape(inputs)[1]
        sequence_length = full_lengths(request.sequence_length, inputs)
        positions = tf.broadcast_to(tf.range(max_time)[None, :], [batch, max_time])
        x = self._stack(self._embed_ids(request.embedding, inputs), positions, request)
        logits = self._logits(x)
        return DecoderOutput(*teacher_forced_outputs(logits, sequence_length)), (), sequence_length

    def _inference(self, request: DecodeRequest) -> Inference:
        return cached_inference(self, self._own(request))

    def _feedback_inference(self, request: DecodeRequest) -> Inference:
        return feedback_inference(self, self._own(request))

    def _inference_outputs(self, result: DecodeResult) -> tuple[DecoderOutput, tuple]:
        return DecoderOutput(result.logits, result.sample_id, result.soft_sample), ()
