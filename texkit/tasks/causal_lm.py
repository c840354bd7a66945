"""CausalLM: a decoder-only language model with its tokenizer, text in, text out.

``CausalLM.from_pretrained(folder)`` takes a GPT-2 folder or one of the Llama line (Llama,
Mistral, Qwen 2 / 3, Gemma 1 / 2 / 3, Phi-3); ``generate`` continues prompts (see
:meth:`CausalLM.generate`); ``fit`` fine-tunes on raw text (see
:meth:`CausalLM.preprocess`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from texkit import registry
from texkit.hparams import HParams
from texkit.tasks.generating_task import GENERATION_DOC, GeneratingTask, generation_hparams
from texkit.tasks.language_modeling import LanguageModelTraining

__all__ = ["CausalLM"]


class CausalLM(LanguageModelTraining, GeneratingTask):
    """A decoder-only language model and its tokenizer.

    Example:
        >>> lm = tx.tasks.CausalLM.from_pretrained("gpt2")  # doctest: +SKIP
        >>> lm.generate("The capital of France is", max_new_tokens=5)  # doctest: +SKIP
    """

    MODULE_ATTRIBUTE = "decoder"
    HPARAMS_DOC = {
        "name": "The model's name.",
        "decoder": "The decoder when not from_pretrained: {type, hparams} (GPT2Decoder, "
        "LlamaDecoder...).",
        "tokenizer": "A folder with the tokenizer's files (from_pretrained: the checkpoint's).",
        "sequence_length": "fit: texts are cut to this many tokens.",
        "jit_compile": "Compile generation with XLA.",
        **GENERATION_DOC,
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "name": "causal_lm",
            "decoder": {"type": "LlamaDecoder", "hparams": {}},
            "tokenizer": None,
            "sequence_length": 256,
            "jit_compile": True,
            "generation": generation_hparams(),
        }

    def _build_module(self, hp: HParams) -> Any:
        cls = registry.resolve(hp.decoder.type)
        return cls(hp.decoder.hparams.todict())

    # --- what the generator asks ---------------------------------------------------------------

    @property
    def max_length(self) -> int | None:
        """The most positions the decoder has (``None``: no table, as rotary positions)."""
        inner = getattr(self.decoder, "decoder", self.decoder)
        embedder = inner.hparams.get("position_embedder") if hasattr(inner, "hparams") else None
        return None if embedder is None else embedder.get("position_size")

    def steps_for(self, width: int, max_new_tokens: int) -> int:
        return width - 1 + max_new_tokens

    def first_new_step(self, lengths: Any) -> Any:
        return lengths - 1

    def _memory(self, context: Any, lengths: Any) -> None:
        return None

    def _inference(
        self, context: Any, lengths: Any, max_length: int, beam: int | None, memory: Any = None
    ) -> tuple[Any, Any]:
        run = self.decoder.prepare_inference(
            context=context, context_sequence_length=lengths, max_decoding_length=max_length,
            beam_width=beam,
        )  # fmt: skip
        return run, lengths

    def _step_inference(self, context: Any, lengths: Any, max_length: int, memory: Any) -> Any:
        # Start tokens instead of prompts: no prompt pass; the step reads the prompts (to force
        # them) from the state it is given.
        return self.decoder.prepare_inference(
            start_tokens=tf.zeros(tf.shape(lengths), tf.int32), max_decoding_length=max_length
        )

    def _prompt_ids_graph(self, texts: Any) -> tf.RaggedTensor:
        """``[batch, (tokens)]`` int32: each prompt's ids, the tokenizer's prefix first."""
        prefix, _ = self.tokenizer.single_text_template
        ids = tf.cast(self.tokenizer.tokenize(tf.reshape(texts, [-1])), tf.int32)
        head = tf.constant(list(prefix), tf.int32, shape=[1, len(prefix)])
        head = tf.RaggedTensor.from_tensor(tf.tile(head, tf.stack([ids.nrows(), 1])))
        return tf.concat([tf.cast(head, tf.int32), ids], axis=1)

    def _prompt_ids(self, texts: list[str], truncate: bool = False) -> list[list[int]]:
        prompts = self._prompt_ids_graph(tf.constant(texts)).to_list()
        for index, prompt in enumerate(prompts):
            if not prompt:
                raise ValueError(
                    f"generate: prompt {index} ({texts[index]!r}) has no tokens and the "
                    "tokenizer adds no start token; give some text"
                )
        return prompts

    # --- building -----------------------------------------------------------------------------

    def _build_for_weights(self) -> None:
        self(tf.zeros([1, 2], tf.int32))

    def call(self, token_ids: Any, sequence_length: Any = None, training: Any = None) -> Any:
        """``[batch, time, vocab]`` logits of the next token at every position (teacher
        forcing) of ``token_ids`` (or of :meth:`preprocess`'s features)."""
        if isinstance(token_ids, Mapping):
            token_ids, sequence_length = token_ids["token_ids"], token_ids["sequence_length"]
        if sequence_length is None:
            sequence_length = tf.fill(tf.shape(token_ids)[:1], tf.shape(token_ids)[1])
        outputs, _, _ = self.decoder(
            inputs=token_ids, sequence_length=sequence_length, decoding_strategy="train_greedy",
            training=training,
        )  # fmt: skip
        return outputs.logits
