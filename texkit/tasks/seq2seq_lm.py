"""Seq2SeqLM: an encoder-decoder (T5) with its tokenizer, text in, text out.

``Seq2SeqLM.from_pretrained(folder)`` takes a T5 folder (T5 1.0 or 1.1); ``generate`` encodes
each input (tokenized as T5's tokenizer does, its end token last) and decodes from the decoder's
start token (see :meth:`~texkit.tasks.generating_task.GeneratingTask.generate`). Streaming keeps
the encoder's outputs between steps; each streamed step projects them again for the
cross-attention (the whole-loop form projects them once).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit import registry
from texkit.hparams import HParams
from texkit.tasks.generating_task import GENERATION_DOC, GeneratingTask, generation_hparams

__all__ = ["Seq2SeqLM"]


class Seq2SeqLM(GeneratingTask):
    """An encoder-decoder language model (T5) and its tokenizer.

    Attributes:
        model: the :class:`~texkit.modules.T5EncoderDecoder`; ``encoder`` and ``decoder`` are
            its parts.

    Example:
        >>> t5 = tx.tasks.Seq2SeqLM.from_pretrained("t5-small")  # doctest: +SKIP
        >>> t5.generate("translate English to German: Hello", max_new_tokens=10)  # doctest: +SKIP
    """

    MODULE_ATTRIBUTE = "model"
    HPARAMS_DOC = {
        "name": "The model's name.",
        "model": "The encoder-decoder when not from_pretrained: {type, hparams}.",
        "tokenizer": "A folder with the tokenizer's files (from_pretrained: the checkpoint's).",
        "jit_compile": "Compile generation with XLA.",
        **GENERATION_DOC,
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "name": "seq2seq_lm",
            "model": {"type": "T5EncoderDecoder", "hparams": {}},
            "tokenizer": None,
            "jit_compile": True,
            "generation": generation_hparams(),
        }

    def _build_module(self, hp: HParams) -> Any:
        return registry.resolve(hp.model.type)(hp.model.hparams.todict())

    @property
    def encoder(self) -> Any:
        return self.model.encoder

    @property
    def decoder(self) -> Any:
        return self.model.decoder

    # --- what the generator asks ---------------------------------------------------------------

    @property
    def max_length(self) -> None:
        return None  # relative positions: no table

    def steps_for(self, width: int, max_new_tokens: int) -> int:
        return max_new_tokens

    def first_new_step(self, lengths: Any) -> Any:
        return lengths * 0

    def _memory(self, context: Any, lengths: Any) -> Any:
        return self.model.encode(context, lengths)

    def _inference(
        self, context: Any, lengths: Any, max_length: int, beam: int | None, memory: Any = None
    ) -> tuple[Any, Any]:
        if memory is None:
            memory = self._memory(context, lengths)
        batch = context.shape[0]
        run = self.decoder.prepare_inference(
            start_tokens=self.model.start_tokens(batch), memory=memory,
            memory_sequence_length=lengths, max_decoding_length=max_length, beam_width=beam,
        )  # fmt: skip
        return run, tf.ones([batch], tf.int32)

    def _step_inference(self, context: Any, lengths: Any, max_length: int, memory: Any) -> Any:
        return self._inference(context, lengths, max_length, None, memory)[0]

    def _prompt_ids_graph(self, texts: Any) -> tf.RaggedTensor:
        """``[batch, (tokens)]`` int32: each input's ids between the tokenizer's prefix and
        suffix (T5's end token)."""
        prefix, suffix = self.tokenizer.single_text_template
        ids = tf.cast(self.tokenizer.tokenize(tf.reshape(texts, [-1])), tf.int32)
        rows = tf.stack([ids.nrows(), 1])
        parts = [
            tf.RaggedTensor.from_tensor(tf.tile(tf.constant(list(p), tf.int32, [1, len(p)]), rows))
            for p in (prefix, suffix)
        ]
        return tf.concat([parts[0], ids, parts[1]], axis=1)

    def _prompt_ids(self, texts: list[str]) -> list[list[int]]:
        return self._prompt_ids_graph(tf.constant(texts)).to_list()

    def _vocab_size(self) -> int:
        return self.model.hparams.vocab_size

    def _build_for_weights(self) -> None:
        ids = tf.zeros([1, 2], tf.int32)
        self(ids, decoder_input_ids=ids)

    def call(
        self, input_ids: Any, sequence_length: Any = None, decoder_input_ids: Any = None,
        decoder_sequence_length: Any = None, training: Any = None,
    ) -> Any:  # fmt: skip
        """The decoder's ``[batch, target_time, vocab]`` logits under teacher forcing."""
        return self.model(
            input_ids, sequence_length, decoder_input_ids, decoder_sequence_length,
            training=training,
        ).logits  # fmt: skip
