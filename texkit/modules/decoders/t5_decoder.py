"""T5's decoder: a :class:`~texkit.modules.encoders.t5_encoder.T5Stack` that attends to the
encoder's outputs, and the output layer (the model: :mod:`texkit.modules.t5`)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.attention import attention_mask, dense_2d
from texkit.core.dropout import dropout
from texkit.core.quantized_table import is_quantized_table, table_logits
from texkit.modules.decoders.beam_decoding import gather_rows
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import (
    DecodeResult,
    DecoderOutput,
    batch_size_of,
    one_hot_samples,
)
from texkit.modules.embedders import WordEmbedder
from texkit.modules.encoders.t5_encoder import T5Stack, normal_initializer

__all__ = ["T5Decoder"]


class T5Decoder(DecoderBase):
    """T5's decoder: the decoder stack, attending to the encoder's outputs, and the output layer.

    A :class:`~texkit.modules.decoders.DecoderBase` (built by
    :class:`~texkit.modules.t5.T5EncoderDecoder`, which passes its shared embeddings):
    ``train_greedy``, ``train_sample`` and
    ``scheduled_sampling`` on ``inputs`` (ids starting with ``decoder_start_token_id``),
    ``infer_greedy``/``infer_sample``/``gumbel_softmax`` from ``start_tokens``, and
    :meth:`beam_search`, each with ``memory`` (the encoder's outputs) and
    ``memory_sequence_length``. Inference steps reuse cached keys and values of the earlier
    steps; the strategies that feed back embeddings, which are trained through, rerun the stack
    over every fed input instead (the cache's in-place writes have no gradient).

    Returns:
        ``(DecoderOutput(logits, sample_id, soft_sample), (), lengths)``, as every texkit
        decoder.
    """

    REGISTERED = False  # built by T5EncoderDecoder, from its hparams

    def __init__(self, hparams: Any, embedder: WordEmbedder, **kwargs: Any):
        ModuleBase.__init__(self, {"name": kwargs.pop("name", "decoder")}, **kwargs)
        self.t5 = hparams
        self.embedder = embedder
        self.rate = hparams.dropout_rate
        policy = self.dtype_policy
        layers = hparams.num_decoder_layers or hparams.num_layers
        self.stack = T5Stack(hparams, layers, True, name="stack", dtype=policy)
        self.vocab_size = hparams.vocab_size
        self.tied = hparams.tie_word_embeddings
        self.lm_head = None
        if not self.tied:
            self.lm_head = keras.layers.Dense(
                hparams.vocab_size, use_bias=False,
                kernel_initializer=normal_initializer(hparams.initializer_factor), name="lm_head",
                dtype=policy,
            )  # fmt: skip
        self.output_layer = self.lm_head or embedder
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {"name": "decoder"}

    HPARAMS_DOC = {"name": "Layer name (the decoder takes T5EncoderDecoder's hparams)."}

    def build(self, inputs_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        shape = (None, None, self.t5.d_model)
        self.stack.build(shape)
        if self.lm_head is not None:
            self.lm_head.build(shape)
        self.built = True

    def _parts_built(self, memory_shape: Any) -> bool:
        return self.stack.built

    def _check_memory(self, memory: Any, memory_sequence_length: Any) -> tuple[Any, Any]:
        if memory is None:
            raise ValueError(f"{self.name}: needs `memory`, the encoder's outputs")
        memory = self._as_memory(memory)
        if memory_sequence_length is not None:
            memory_sequence_length = tf.cast(memory_sequence_length, tf.int32)
        return memory, memory_sequence_length

    def _max_length(self, max_decoding_length: Any) -> int:
        if max_decoding_length is None:
            raise ValueError(f"{self.name}: give max_decoding_length")
        return super()._max_length(max_decoding_length)

    def _logits(self, x: Any) -> Any:
        x = self.stack.finish(x, None)
        if self.tied:
            x = x * ops.cast(self.t5.d_model**-0.5, x.dtype)
            if is_quantized_table(self.embedder):
                return tf.cast(table_logits(x, self.embedder), tf.float32)
            table = ops.cast(self.embedder.embedding, x.dtype)
            return tf.cast(tf.linalg.matmul(x, table, transpose_b=True), tf.float32)
        return tf.cast(dense_2d(self.lm_head, x), tf.float32)

    def _memory(self, memory: Any, memory_sequence_length: Any) -> tuple[list, Any]:
        kv = [block.cross_attention.project(memory) for block in self.stack.blocks]
        mask = attention_mask(1, ops.shape(memory)[1], memory_sequence_length)
        return kv, mask

    def _teacher_forcing(self, request: DecodeRequest) -> tuple[Any, Any, Any]:
        r = request
        inputs, sequence_length, training = r.inputs, r.sequence_length, r.training
        memory, memory_sequence_length = r.memory, r.memory_sequence_length
        if inputs is None:
            raise ValueError(f"{self.name}: train_greedy needs `inputs` (decoder token ids)")
        inputs = tf.cast(inputs, tf.int32)
        self._ensure_built(self.t5.d_model, memory)
        x = dropout(self.embedder(inputs), self.rate, training, self.seed_generator)
        time = ops.shape(inputs)[1]
        positions = ops.arange(time, dtype="int32")
        bias = self.stack.position_bias(positions, positions)
        mask = attention_mask(time, time, sequence_length, causal=True)
        memory_kv, memory_mask = self._memory(memory, memory_sequence_length)
        for block, kv in zip(self.stack.blocks, memory_kv, strict=True):
            x = block(x, None, bias, mask, kv, memory_mask, training=training)
        logits = self._logits(x)
        if sequence_length is None:
            sequence_length = tf.fill([batch_size_of(inputs)], time)
        sequence_length = tf.cast(sequence_length, tf.int32)
        ids = tf.cast(tf.argmax(logits, -1), tf.int32)
        valid = tf.sequence_mask(sequence_length, time)
        soft_sample = one_hot_samples(ids, tf.shape(logits)[-1], valid)
        return DecoderOutput(logits, ids, soft_sample), (), sequence_length

    def _inference(self, request: DecodeRequest) -> Inference:
        r = request
        start_tokens, max_length, training = r.start_tokens, r.max_length, r.training
        memory, memory_sequence_length = r.memory, r.memory_sequence_length
        start_tokens = tf.cast(tf.convert_to_tensor(start_tokens), tf.int32)
        batch = batch_size_of(memory)
        heads, depth = self.t5.num_heads, self.t5.d_kv
        memory_kv, memory_mask = self._memory(memory, memory_sequence_length)
        zeros = tf.zeros([batch, heads, max_length, depth], self.compute_dtype)
        state = {
            "cache": [(zeros, zeros) for _ in self.stack.blocks],
            "memory": memory_kv,
            "memory_mask": memory_mask,
        }
        key_positions = tf.range(max_length)

        def step(token_ids: Any, time: Any, loop_state: dict) -> tuple[Any, dict]:
            x = self.embedder(token_ids[:, None])
            bias = self.stack.position_bias(time[None], key_positions)
            allowed = (key_positions <= time)[None, None, None, :]
            caches = []
            for block, cache, kv in zip(
                self.stack.blocks, loop_state["cache"], loop_state["memory"], strict=True
            ):
                y = block.self_attention_norm(x)
                cache = tuple(block.self_attention.write_cache(y, cache, time))
                caches.append(cache)
                x = block(x, cache, bias, allowed, kv, loop_state["memory_mask"], training=training)
            logits = self._logits(x)[:, 0]
            return logits, {**loop_state, "cache": caches}

        def reorder(loop_state: dict, rows: Any) -> dict:
            # Only the caches differ between an example's hypotheses.
            return {**loop_state, "cache": gather_rows(loop_state["cache"], rows)}

        return Inference(step, state, start_tokens, reorder_state=reorder, freeze_state=False)

    def _feedback_inference(self, request: DecodeRequest) -> Inference:
        """Differentiable steps (the cache's in-place writes have no gradient): the step inputs
        are kept, ``[batch, max_length, d_model]``, and every step runs the stack over all of
        them as teacher forcing does (causal), reading the logits at the current step."""
        r = request
        start_tokens, max_length, training = r.start_tokens, r.max_length, r.training
        memory, memory_sequence_length = r.memory, r.memory_sequence_length
        start_tokens = tf.cast(tf.convert_to_tensor(start_tokens), tf.int32)
        batch = batch_size_of(memory)
        memory_kv, memory_mask = self._memory(memory, memory_sequence_length)
        positions = tf.range(max_length)
        bias = self.stack.position_bias(positions, positions)
        mask = attention_mask(max_length, max_length, None, causal=True)
        inputs = tf.zeros([batch, max_length, self.t5.d_model], self.compute_dtype)

        def embedded_step(words: Any, time: Any, state: dict) -> tuple[Any, dict]:
            now = tf.equal(positions, time)[None, :, None]
            fed = tf.where(now, tf.cast(words, inputs.dtype)[:, None, :], state["inputs"])
            x = dropout(fed, self.rate, training, self.seed_generator)
            for block, kv in zip(self.stack.blocks, memory_kv, strict=True):
                x = block(x, None, bias, mask, kv, memory_mask, training=training)
            return self._logits(tf.gather(x, time[None], axis=1))[:, 0], {"inputs": fed}

        def step(token_ids: Any, time: Any, state: dict) -> tuple[Any, dict]:
            return embedded_step(self.embedder(token_ids), time, state)

        return Inference(step, {"inputs": inputs}, start_tokens, freeze_state=False,
                         embed=self.embedder, embedded_step=embedded_step)  # fmt: skip

    def _inference_outputs(self, result: DecodeResult) -> tuple[Any, Any]:
        return DecoderOutput(result.logits, result.sample_id, result.soft_sample), ()
