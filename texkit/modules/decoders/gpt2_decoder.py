"""GPT2Decoder: a decoder-only Transformer language model with the GPT-2 architecture.

Token embeddings, learned position embeddings, a pre-norm stack of causal self-attention blocks
(GELU feed-forward, tanh approximation), a final layer norm and an output layer tied to the token
embeddings (Radford et al., 2019). The defaults are GPT-2 small's sizes; a smaller LM is the same
module with other sizes (``examples/language_model/config.yaml``). Weights start from the
initializers, or from a GPT-2 checkpoint (:meth:`GPT2Decoder.from_pretrained`).
"""

from __future__ import annotations

import os
from typing import Any

from texkit import registry
from texkit.hparams import HParamsError
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import DecodeResult
from texkit.modules.decoders.transformer_decoder import TransformerDecoder
from texkit.modules.embedders import WordEmbedder

__all__ = ["GPT2Decoder"]


class GPT2Decoder(DecoderBase):
    """A GPT-style language model: a :class:`WordEmbedder` and a
    :class:`~texkit.modules.TransformerDecoder` without cross-attention, tied to each other.

    Being one module that owns both, it saves and loads from its config (a decoder tied to an
    outside embedder cannot).

    Call arguments:
        inputs: ``[batch, time]`` token ids (teacher forcing: logits of the next token at every
            step, ``logits[:, t]`` predicting ``inputs[:, t + 1]``).
        sequence_length: ``[batch]`` valid lengths.
        decoding_strategy, start_tokens, end_token, context, context_sequence_length,
        max_decoding_length, softmax_temperature, top_k, top_p, seed, sampling_probability,
        straight_through, training: as in
            :class:`~texkit.modules.TransformerDecoder` (``context`` holds prompts).

    Returns:
        ``(DecoderOutput(logits, sample_id, soft_sample), (), lengths)``, as the decoder.

    Example::

        lm = tx.modules.GPT2Decoder({"vocab_size": 8000, "dim": 256,
            "decoder": {"num_blocks": 4, "multihead_attention": {"num_heads": 4},
                        "poswise_feedforward": {"dim": 1024},
                        "position_embedder": {"position_size": 256}}})
        outputs, _, _ = lm(inputs=ids, sequence_length=lengths)
        text, _, _ = lm(decoding_strategy="infer_sample", context=prompt, end_token=eos,
                        max_decoding_length=100, top_p=0.9)
    """

    HPARAMS_DOC = {
        "vocab_size": "Number of tokens.",
        "dim": "Model size: of the embeddings and of every block (embed.dim and decoder.dim are "
        "set to it).",
        **{f"embed.{k}": v for k, v in WordEmbedder.HPARAMS_DOC.items()},
        **{f"decoder.{k}": v for k, v in TransformerDecoder.HPARAMS_DOC.items()},
        "decoder.cross_attention": "Always set to false: a language model has no memory.",
        "name": "Layer name.",
    }

    ACCEPTS_CONTEXT = True

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        epsilon = hp.decoder.layer_norm_epsilon
        if isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and epsilon >= 1:
            raise HParamsError(
                f"expected an epsilon between 0 and 1, got {epsilon!r}",
                "decoder.layer_norm_epsilon",
            )
        embed = {**hp.embed.todict(), "dim": hp.dim, "name": "word_embedder"}
        decoder = {
            **hp.decoder.todict(),
            "dim": hp.dim,
            "cross_attention": False,
            "name": "decoder",
        }
        self.word_embedder = WordEmbedder(hp.vocab_size, hparams=embed, dtype=self.dtype_policy)
        self.decoder = TransformerDecoder(
            output_layer=self.word_embedder, hparams=decoder, dtype=self.dtype_policy
        )
        self.vocab_size = hp.vocab_size
        self.output_layer = self.decoder.output_layer

    @classmethod
    def default_hparams(cls) -> dict:
        decoder = TransformerDecoder.default_hparams()
        embed = WordEmbedder.default_hparams()
        normal = {"type": "RandomNormal", "kwargs": {"stddev": 0.02}}
        decoder.update(
            {
                "dim": 768,
                "num_blocks": 12,
                "cross_attention": False,
                "multihead_attention": {
                    **decoder["multihead_attention"],
                    "num_heads": 12,
                    "initializer": None,
                },
                "poswise_feedforward": {
                    "dim": 3072,
                    "activation": {"type": "gelu", "kwargs": {"approximate": True}},
                },
                "layer_norm_epsilon": 1e-5,
                "initializer": normal,
                "position_embedder": {
                    **decoder["position_embedder"],
                    "type": "learned",
                    "position_size": 1024,
                },
                "scale_embeddings": False,
                "output_layer_bias": False,
                "max_decoding_length_infer": 128,
                "name": "decoder",
            }
        )
        embed.update({"dim": 768, "initializer": normal, "name": "word_embedder"})
        return {
            "vocab_size": 50257,
            "dim": 768,
            "embed": embed,
            "decoder": decoder,
            "name": "gpt2_decoder",
        }

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> GPT2Decoder:
        """Builds a GPT-2 from a checkpoint folder's config and loads its weights.

        Args:
            path: a Hugging Face folder (``config.json`` with ``model_type: gpt2``,
                ``model.safetensors``) or OpenAI's release folder (``hparams.json``,
                ``model.ckpt.*``).
            hparams: optional overrides in this class's names, e.g.
                ``{"decoder": {"residual_dropout": 0.0}}``; a value that contradicts the
                checkpoint's architecture is an error.
            **kwargs: Keras layer arguments, and ``allow_non_finite=True`` (see
                :func:`texkit.pretrained.load_checkpoint`).

        The output layer is the word embedding table (tied), as GPT-2's LM head is.
        """
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    # --- the decoder base's hooks: the inner TransformerDecoder's, with the owned embedder ---

    def build(self, inputs_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        self.word_embedder.build(None)
        self.decoder.build(None)
        self.built = True

    def _parts_built(self, memory_shape: Any) -> bool:
        return self.decoder.blocks[0].built

    def _max_length(self, max_decoding_length: Any) -> int:
        return self.decoder._max_length(max_decoding_length)

    def _own(self, request: DecodeRequest) -> DecodeRequest:
        return self._with_own_embedder(request, self.word_embedder)

    def _teacher_forcing(self, request: DecodeRequest) -> tuple[Any, Any, Any]:
        return self.decoder._teacher_forcing(self._own(request))

    def _inference(self, request: DecodeRequest) -> Inference:
        return self.decoder._inference(self._own(request))

    def _feedback_inference(self, request: DecodeRequest) -> Inference:
        return self.decoder._feedback_inference(self._own(request))

    def _inference_outputs(self, result: DecodeResult) -> tuple[Any, Any]:
        return self.decoder._inference_outputs(result)
