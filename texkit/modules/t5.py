"""T5 (Raffel et al., 2020): an encoder-decoder Transformer with relative position buckets.

What sets T5 apart from the Transformer of :mod:`texkit.core.transformer`, and the blocks of
:mod:`texkit.core` it is built from:

* **No position embeddings.** Each attention adds a learned bias per head to its scores, looked
  up by the *bucket* of the distance between key and query
  (:class:`~texkit.core.relative_position.RelativePositionBias`): small distances get a bucket
  each, larger ones share logarithmically wider buckets up to
  ``relative_attention_max_distance``. The encoder's buckets tell left from right; the
  decoder's self-attention looks back only. The first block's table serves every block of its
  stack; cross-attention has none.
* **RMS norm** without mean or bias (``x / sqrt(mean(x^2) + eps) * scale``,
  :class:`~texkit.core.normalization.RMSNorm`), before each sub-layer (pre-norm), and once after
  each stack.
* **No biases** in any projection, and **no** ``1 / sqrt(depth)`` **scaling** of the scores (the
  initialization absorbs it): :class:`~texkit.core.relative_attention.RelativeAttention`.
* **Feed-forward** (:class:`~texkit.core.feed_forward.FeedForward`): ``relu`` (T5 1.0) or
  gated, ``gelu_new(x W0) * (x W1)`` (``gated-gelu``, T5 1.1 and later).
* **Output**: T5 1.0 ties the output layer to the shared embeddings and scales the decoder's
  output by ``d_model ** -0.5`` first; T5 1.1 has its own ``lm_head`` (``tie_word_embeddings:
  false``) and no scaling.

:class:`T5EncoderDecoder` owns the shared embeddings, a
:class:`~texkit.modules.encoders.t5_encoder.T5Encoder` (with the stack both sides share) and a
:class:`~texkit.modules.decoders.t5_decoder.T5Decoder`; the decoder is a
:class:`~texkit.modules.decoders.DecoderBase`, so it decodes greedily, by sampling and by beam
search like every texkit decoder. Both stay importable from this module.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.core import relative_position
from texkit.deprecation import deprecated_alias
from texkit.hparams import HParamsError, check_positive, check_positive_int, check_rate
from texkit.modules.decoders.t5_decoder import T5Decoder
from texkit.modules.embedders import WordEmbedder
from texkit.modules.encoders.t5_encoder import FEED_FORWARD, T5Encoder

# T5Encoder and T5Decoder are importable from here as before.
__all__ = ["T5EncoderDecoder"]

relative_position_bucket = deprecated_alias(
    relative_position.relative_position_bucket,
    "texkit.modules.t5.relative_position_bucket",
    "texkit.core.relative_position.relative_position_bucket",
)


def _check(hp: Any) -> None:
    check_positive_int(
        hp, "vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_heads",
        "relative_attention_num_buckets", "relative_attention_max_distance",
    )  # fmt: skip
    check_positive_int(hp, "num_decoder_layers", optional=True)
    check_rate(hp, "dropout_rate")
    check_positive(hp, "layer_norm_epsilon", "initializer_factor")
    if not hp.layer_norm_epsilon < 1:
        raise HParamsError(
            f"expected an epsilon between 0 and 1, got {hp.layer_norm_epsilon!r}",
            "layer_norm_epsilon",
        )
    for key in ("decoder_start_token_id", "eos_token_id", "pad_token_id"):
        token = hp[key]
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < hp.vocab_size:
            raise HParamsError(
                f"expected a token id, an int in [0, vocab_size={hp.vocab_size}), got {token!r}",
                key,
            )
    if hp.feed_forward_proj not in FEED_FORWARD:
        raise HParamsError(
            f"expected one of {sorted(FEED_FORWARD)}, got {hp.feed_forward_proj!r}",
            "feed_forward_proj",
        )
    if hp.relative_attention_num_buckets < 4:
        raise HParamsError("at least 4 buckets are needed", "relative_attention_num_buckets")


class T5EncoderDecoder(ModuleBase):
    """T5: shared embeddings, a ``T5Encoder`` and a ``T5Decoder`` (module docstring).

    The hparams are the keys of a Hugging Face T5 ``config.json``; :meth:`from_pretrained` builds
    one from a checkpoint folder.

    Call arguments:
        input_ids: ``[batch, time]`` encoder ids; ``sequence_length``: their ``[batch]`` lengths.
        decoder_input_ids: ``[batch, target_time]`` decoder ids, starting with
            ``decoder_start_token_id`` (teacher forcing); ``decoder_sequence_length``: lengths.
        training: Keras' training flag.

    Returns:
        ``DecoderOutput(logits [batch, target_time, vocab_size] float32, sample_id,
        soft_sample)``.

    Generation: ``memory = t5.encode(ids, lengths)``, then ``t5.decoder(decoding_strategy=
    "infer_greedy", memory=memory, memory_sequence_length=lengths, start_tokens=...,
    end_token=t5.hparams.eos_token_id, max_decoding_length=...)`` or ``t5.decoder.beam_search(
    ...)``; :meth:`start_tokens` gives the start tokens.
    """

    HPARAMS_DOC = {
        "vocab_size": "Number of token ids (shared by the encoder and the decoder).",
        "d_model": "Size of the embeddings and of every layer's outputs.",
        "d_kv": "Size of one attention head (num_heads * d_kv need not equal d_model).",
        "d_ff": "Inner size of the feed-forward networks.",
        "num_layers": "Number of encoder blocks.",
        "num_decoder_layers": "Number of decoder blocks; None: num_layers.",
        "num_heads": "Number of attention heads.",
        "relative_attention_num_buckets": "Number of relative position buckets.",
        "relative_attention_max_distance": "Distance from which all positions share a bucket.",
        "dropout_rate": "Dropout on embeddings, sub-layer outputs and attention weights.",
        "layer_norm_epsilon": "Epsilon of every RMS norm.",
        "initializer_factor": "Scale of every initializer's stddev.",
        "feed_forward_proj": "'relu' (T5 1.0), 'gated-gelu' (T5 1.1), 'gated-relu' or 'gelu'.",
        "tie_word_embeddings": "Output layer tied to the shared embeddings, with the decoder's "
        "output scaled by d_model ** -0.5 (T5 1.0); false: its own lm_head.",
        "decoder_start_token_id": "The decoder's first input token.",
        "eos_token_id": "The token that ends a sequence.",
        "pad_token_id": "The padding token.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        _check(hp)
        policy = self.dtype_policy
        self.shared = WordEmbedder(
            hp.vocab_size,
            hparams={"dim": hp.d_model, "name": "shared",
                     "initializer": {"type": "RandomNormal",
                                     "kwargs": {"stddev": hp.initializer_factor}}},
            dtype=policy,
        )  # fmt: skip
        self.encoder = T5Encoder(hp, self.shared, name="encoder", dtype=policy)
        self.decoder = T5Decoder(hp, self.shared, name="decoder", dtype=policy)

    @classmethod
    def default_hparams(cls) -> dict:
        # t5-v1_1-small.
        return {
            "vocab_size": 32128,
            "d_model": 512,
            "d_kv": 64,
            "d_ff": 1024,
            "num_layers": 8,
            "num_decoder_layers": None,
            "num_heads": 6,
            "relative_attention_num_buckets": 32,
            "relative_attention_max_distance": 128,
            "dropout_rate": 0.1,
            "layer_norm_epsilon": 1e-6,
            "initializer_factor": 1.0,
            "feed_forward_proj": "gated-gelu",
            "tie_word_embeddings": False,
            "decoder_start_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 0,
            "name": "t5",
        }

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> T5EncoderDecoder:
        """Builds T5 from a Hugging Face folder (``config.json`` with ``model_type: t5``,
        ``model.safetensors``) and loads its weights, all or nothing
        (:func:`texkit.pretrained.load_checkpoint`); ``hparams`` may change dropout."""
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    @property
    def output_size(self) -> int:
        return self.hparams.d_model

    def build(self, input_ids_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        self.shared.build(None)
        self.encoder.build(input_ids_shape)
        self.decoder.build(None)
        self.built = True

    def start_tokens(self, batch_size: Any) -> Any:
        """``[batch_size]`` int32 ``decoder_start_token_id``."""
        return tf.fill([batch_size], tf.constant(self.hparams.decoder_start_token_id, tf.int32))

    def encode(self, input_ids: Any, sequence_length: Any = None, training: Any = None) -> Any:
        """The encoder's outputs ``[batch, time, d_model]`` (the decoder's ``memory``)."""
        return self.encoder(input_ids, sequence_length=sequence_length, training=training)

    def call(self, input_ids: Any, sequence_length: Any = None, decoder_input_ids: Any = None,
             decoder_sequence_length: Any = None, training: Any = None) -> Any:  # fmt: skip
        if decoder_input_ids is None:
            raise ValueError(f"{self.name}: needs decoder_input_ids (teacher forcing)")
        memory = self.encode(input_ids, sequence_length, training)
        outputs, _, _ = self.decoder(
            inputs=decoder_input_ids, sequence_length=decoder_sequence_length, memory=memory,
            memory_sequence_length=sequence_length, training=training,
        )  # fmt: skip
        return outputs
