"""T5 (Raffel et al., 2020): an encoder-decoder Transformer with relative position buckets.

What sets T5 apart from the Transformer of :mod:`texkit.core.transformer`:

* **No position embeddings.** Each attention adds a learned bias per head to its scores, looked
  up by the *bucket* of the distance between key and query (:func:`relative_position_bucket`):
  small distances get a bucket each, larger ones share logarithmically wider buckets up to
  ``relative_attention_max_distance``. The encoder's buckets tell left from right; the
  decoder's self-attention looks back only. The first block's table serves every block of its
  stack; cross-attention has none.
* **RMS norm** without mean or bias (``x / sqrt(mean(x^2) + eps) * scale``), before each
  sub-layer (pre-norm), and once after each stack.
* **No biases** in any projection, and **no** ``1 / sqrt(depth)`` **scaling** of the scores (the
  initialization absorbs it).
* **Feed-forward**: ``relu`` (T5 1.0) or gated, ``gelu_new(x W0) * (x W1)`` (``gated-gelu``,
  T5 1.1 and later).
* **Output**: T5 1.0 ties the output layer to the shared embeddings and scales the decoder's
  output by ``d_model ** -0.5`` first; T5 1.1 has its own ``lm_head`` (``tie_word_embeddings:
  false``) and no scaling.

:class:`T5EncoderDecoder` owns the shared embeddings, a :class:`T5Encoder` and a
:class:`T5Decoder`; the decoder is a :class:`~texkit.modules.decoders.DecoderBase`, so it
decodes greedily, by sampling and by beam search like every texkit decoder.

(About 630 lines: one model, whose attention, feed-forward, norm and blocks differ from
:mod:`texkit.core.transformer`'s in the ways listed above and are kept beside it.)
"""

from __future__ import annotations

import math
import os
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.core.attention import MASK_BIAS, attention_mask, dense_2d
from texkit.core.dropout import dropout
from texkit.core.layers import get_activation
from texkit.hparams import HParamsError, check_positive, check_positive_int, check_rate
from texkit.modules.decoders.beam_decoding import gather_rows
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import (
    DecodeResult,
    DecoderOutput,
    batch_size_of,
    one_hot_samples,
)
from texkit.modules.embedders import WordEmbedder

__all__ = ["T5Decoder", "T5Encoder", "T5EncoderDecoder", "relative_position_bucket"]

_FEED_FORWARD = {"relu": ("relu", False), "gated-gelu": ("gelu_new", True),
                 "gated-relu": ("relu", True), "gelu": ("gelu_new", False)}  # fmt: skip
_ACTIVATIONS = {"relu": "relu", "gelu_new": {"type": "gelu", "kwargs": {"approximate": True}}}


def relative_position_bucket(
    relative_position: Any, bidirectional: bool, num_buckets: int, max_distance: int
) -> Any:
    """T5's bucket of each ``relative_position`` (key position minus query position), int32.

    Bidirectional: half the buckets for keys at or before the query, half for keys after it.
    Within each half, distances below half of its buckets get one bucket each; larger ones
    share buckets whose widths grow logarithmically up to ``max_distance``, and all farther
    ones the last bucket. Looking back only (``bidirectional=False``), keys after the query
    fall into bucket 0.
    """
    relative_position = tf.cast(relative_position, tf.int32)
    buckets = tf.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += tf.cast(relative_position > 0, tf.int32) * num_buckets
        distance = tf.abs(relative_position)
    else:
        distance = -tf.minimum(relative_position, 0)
    exact = num_buckets // 2
    # The logarithmic part in float32, as the reference computes it.
    scaled = tf.math.log(tf.cast(tf.maximum(distance, 1), tf.float32) / exact) / math.log(
        max_distance / exact
    )
    large = exact + tf.cast(scaled * (num_buckets - exact), tf.int32)
    large = tf.minimum(large, num_buckets - 1)
    return buckets + tf.where(distance < exact, distance, large)


def _normal(stddev: float) -> keras.initializers.Initializer:
    return keras.initializers.RandomNormal(stddev=stddev)


class _RMSNorm(keras.layers.RMSNormalization):
    """Keras' RMS norm, computed in float32 whatever the compute dtype (as T5's reference)."""

    def call(self, x: Any) -> Any:
        y = ops.rms_normalization(
            ops.cast(x, "float32"), scale=ops.cast(self.scale, "float32"), axis=self.axis,
            epsilon=self.epsilon,
        )  # fmt: skip
        return ops.cast(y, self.compute_dtype)


def _rms_norm(epsilon: float, name: str, dtype: Any) -> keras.layers.Layer:
    return _RMSNorm(epsilon=epsilon, name=name, dtype=dtype)


class _Attention(keras.layers.Layer):
    """T5's multi-head attention: no biases, no score scaling, an optional additive bias."""

    def __init__(self, hp: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.heads, self.depth = hp.num_heads, hp.d_kv
        self.rate = hp.dropout_rate
        units, factor, policy = hp.num_heads * hp.d_kv, hp.initializer_factor, self.dtype_policy

        def dense(size: int, stddev: float, name: str) -> keras.layers.Dense:
            return keras.layers.Dense(
                size, use_bias=False, kernel_initializer=_normal(factor * stddev), name=name,
                dtype=policy,
            )  # fmt: skip

        self.query = dense(units, (hp.d_model * hp.d_kv) ** -0.5, "q")
        self.key = dense(units, hp.d_model**-0.5, "k")
        self.value = dense(units, hp.d_model**-0.5, "v")
        self.output_dense = dense(hp.d_model, units**-0.5, "o")
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        for layer in (self.query, self.key, self.value):
            layer.build(shape)
        self.output_dense.build((*shape[:-1], self.heads * self.depth))
        self.built = True

    def split(self, x: Any) -> Any:
        """``[batch, time, heads * depth]`` -> ``[batch, heads, time, depth]``."""
        x = ops.reshape(x, (ops.shape(x)[0], ops.shape(x)[1], self.heads, self.depth))
        return ops.transpose(x, (0, 2, 1, 3))

    def project(self, memory: Any) -> tuple[Any, Any]:
        return self.split(dense_2d(self.key, memory)), self.split(dense_2d(self.value, memory))

    def attend(self, x: Any, keys: Any, values: Any, bias: Any, mask: Any, training: Any) -> Any:
        """``x [batch, time, d_model]`` attends to ``keys``/``values``; ``bias`` (float32, added
        to the scores) and ``mask`` (booleans, true where allowed) broadcast to ``[batch,
        heads, time, key_time]``; either may be ``None``."""
        q = self.split(dense_2d(self.query, x))
        scores = ops.cast(tf.linalg.matmul(q, keys, transpose_b=True), "float32")
        if bias is not None:
            scores = scores + ops.cast(bias, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, MASK_BIAS)
        weights = dropout(tf.nn.softmax(scores, axis=-1), self.rate, training, self.seed_generator)
        context = ops.matmul(ops.cast(weights, self.compute_dtype), values)
        context = ops.transpose(context, (0, 2, 1, 3))
        context = ops.reshape(context, (ops.shape(x)[0], ops.shape(x)[1], self.heads * self.depth))
        return dense_2d(self.output_dense, context)


class _FeedForward(keras.layers.Layer):
    def __init__(self, hp: Any, **kwargs: Any):
        super().__init__(**kwargs)
        activation, self.gated = _FEED_FORWARD[hp.feed_forward_proj]
        self.activation = get_activation(_ACTIVATIONS[activation], "feed_forward_proj")
        self.rate = hp.dropout_rate
        factor, policy = hp.initializer_factor, self.dtype_policy

        def dense(size: int, stddev: float, name: str) -> keras.layers.Dense:
            return keras.layers.Dense(
                size, use_bias=False, kernel_initializer=_normal(factor * stddev), name=name,
                dtype=policy,
            )  # fmt: skip

        self.inner = [dense(hp.d_ff, hp.d_model**-0.5, f"wi_{i}") for i in range(1 + self.gated)]
        self.output_dense = dense(hp.d_model, hp.d_ff**-0.5, "wo")
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        for layer in self.inner:
            layer.build(shape)
        self.output_dense.build((*shape[:-1], self.inner[0].units))
        self.built = True

    def call(self, x: Any, training: Any = None) -> Any:
        hidden = dense_2d(self.inner[0], x, self.activation)
        if self.gated:
            hidden = hidden * dense_2d(self.inner[1], x)
        hidden = dropout(hidden, self.rate, training, self.seed_generator)
        return dense_2d(self.output_dense, hidden)


class _Block(keras.layers.Layer):
    """Self-attention, cross-attention (decoder), feed-forward; each pre-normed and residual."""

    def __init__(self, hp: Any, cross: bool, **kwargs: Any):
        super().__init__(**kwargs)
        policy, eps = self.dtype_policy, hp.layer_norm_epsilon
        self.rate = hp.dropout_rate
        self.self_attention = _Attention(hp, name="self_attention", dtype=policy)
        self.self_attention_norm = _rms_norm(eps, "self_attention_norm", policy)
        self.cross_attention = self.cross_attention_norm = None
        if cross:
            self.cross_attention = _Attention(hp, name="cross_attention", dtype=policy)
            self.cross_attention_norm = _rms_norm(eps, "cross_attention_norm", policy)
        self.ffn = _FeedForward(hp, name="ffn", dtype=policy)
        self.ffn_norm = _rms_norm(eps, "ffn_norm", policy)
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        for layer in (self.self_attention, self.self_attention_norm, self.ffn, self.ffn_norm,
                      self.cross_attention, self.cross_attention_norm):  # fmt: skip
            if layer is not None:
                layer.build(shape)
        self.built = True

    def residual(self, x: Any, y: Any, training: Any) -> Any:
        return x + dropout(y, self.rate, training, self.seed_generator)

    def call(self, x: Any, self_kv: Any, bias: Any, mask: Any, memory_kv: Any = None,
             memory_mask: Any = None, training: Any = None) -> Any:  # fmt: skip
        """``self_kv``: the keys and values to attend to (``None``: ``x``'s own)."""
        y = self.self_attention_norm(x)
        keys, values = self.self_attention.project(y) if self_kv is None else self_kv
        x = self.residual(x, self.self_attention.attend(y, keys, values, bias, mask, training),
                          training)  # fmt: skip
        if self.cross_attention is not None:
            y = self.cross_attention_norm(x)
            keys, values = memory_kv
            attended = self.cross_attention.attend(y, keys, values, None, memory_mask, training)
            x = self.residual(x, attended, training)
        return self.residual(x, self.ffn(self.ffn_norm(x), training=training), training)


class _Stack(keras.layers.Layer):
    """The blocks of one side, the relative position table and the final norm."""

    def __init__(self, hp: Any, num_blocks: int, decoder: bool, **kwargs: Any):
        super().__init__(**kwargs)
        policy = self.dtype_policy
        self.decoder = decoder
        self.num_buckets = hp.relative_attention_num_buckets
        self.max_distance = hp.relative_attention_max_distance
        self.rate = hp.dropout_rate
        self.relative_bias = keras.layers.Embedding(
            self.num_buckets, hp.num_heads,
            embeddings_initializer=_normal(hp.initializer_factor * hp.d_model**-0.5),
            name="relative_attention_bias", dtype=policy,
        )  # fmt: skip
        self.blocks = [_Block(hp, decoder, name=f"block_{i}", dtype=policy)
                       for i in range(num_blocks)]  # fmt: skip
        self.final_norm = _rms_norm(hp.layer_norm_epsilon, "final_norm", policy)
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, shape: Any, *args: Any, **kwargs: Any) -> None:
        self.relative_bias.build(None)
        for block in self.blocks:
            block.build(shape)
        self.final_norm.build(shape)
        self.built = True

    def position_bias(self, query_positions: Any, key_positions: Any) -> Any:
        """float32 ``[1, heads, queries, keys]`` for int ``[queries]`` and ``[keys]`` positions."""
        relative = key_positions[None, :] - query_positions[:, None]
        buckets = relative_position_bucket(
            relative, not self.decoder, self.num_buckets, self.max_distance
        )
        bias = ops.cast(self.relative_bias(buckets), "float32")  # [queries, keys, heads]
        return ops.transpose(bias, (2, 0, 1))[None]

    def finish(self, x: Any, training: Any) -> Any:
        return dropout(self.final_norm(x), self.rate, training, self.seed_generator)


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
    if hp.feed_forward_proj not in _FEED_FORWARD:
        raise HParamsError(
            f"expected one of {sorted(_FEED_FORWARD)}, got {hp.feed_forward_proj!r}",
            "feed_forward_proj",
        )
    if hp.relative_attention_num_buckets < 4:
        raise HParamsError("at least 4 buckets are needed", "relative_attention_num_buckets")


class T5Encoder(keras.layers.Layer):
    """T5's encoder stack on the shared embeddings (built by :class:`T5EncoderDecoder`).

    Call arguments:
        input_ids: ``[batch, time]`` int ids.
        sequence_length: ``[batch]`` valid lengths (``None``: nothing is padded).
        training: Keras' training flag.

    Returns:
        ``[batch, time, d_model]``: the stack's outputs after its final norm.
    """

    def __init__(self, hparams: Any, embedder: WordEmbedder, **kwargs: Any):
        super().__init__(**kwargs)
        self.embedder = embedder
        self.rate = hparams.dropout_rate
        self.stack = _Stack(
            hparams, hparams.num_layers, False, name="stack", dtype=self.dtype_policy
        )
        self.seed_generator = keras.random.SeedGenerator() if self.rate > 0 else None

    def build(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> None:
        self.stack.build((None, None, self.embedder.dim))
        self.built = True

    def call(self, input_ids: Any, sequence_length: Any = None, training: Any = None) -> Any:
        x = dropout(self.embedder(input_ids), self.rate, training, self.seed_generator)
        time = ops.shape(input_ids)[1]
        positions = ops.arange(time, dtype="int32")
        bias = self.stack.position_bias(positions, positions)
        mask = attention_mask(time, time, sequence_length)
        for block in self.stack.blocks:
            x = block(x, None, bias, mask, training=training)
        return self.stack.finish(x, training)


class T5Decoder(DecoderBase):
    """T5's decoder: the decoder stack, attending to the encoder's outputs, and the output layer.

    A :class:`~texkit.modules.decoders.DecoderBase` (built by :class:`T5EncoderDecoder`, which
    passes its shared embeddings): ``train_greedy``, ``train_sample`` and
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
        self.stack = _Stack(hparams, layers, True, name="stack", dtype=policy)
        self.vocab_size = hparams.vocab_size
        self.tied = hparams.tie_word_embeddings
        self.lm_head = None
        if not self.tied:
            self.lm_head = keras.layers.Dense(
                hparams.vocab_size, use_bias=False,
                kernel_initializer=_normal(hparams.initializer_factor), name="lm_head",
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
            table = ops.cast(self.embedder.embedding, x.dtype)
            return tf.cast(tf.linalg.matmul(x, table, transpose_b=True), tf.float32)
        return tf.cast(dense_2d(self.lm_head, x), tf.float32)

    def _memory(self, memory: Any, memory_sequence_length: Any) -> tuple[list, Any]:
        kv = [block.cross_attention.project(memory) for block in self.stack.blocks]
        mask = attention_mask(1, ops.shape(memory)[1], memory_sequence_length)
        return kv, mask

    def _teacher_forcing(self, inputs: Any, sequence_length: Any, embedding: Any,
                         initial_state: Any, memory: Any, memory_sequence_length: Any,
                         training: Any) -> tuple[Any, Any, Any]:  # fmt: skip
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

    def _inference(self, embedding: Any, start_tokens: Any, end_token: Any, context: Any,
                   context_sequence_length: Any, initial_state: Any, memory: Any,
                   memory_sequence_length: Any, max_length: int, training: Any,
                   beam_width: int | None) -> Inference:  # fmt: skip
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
            for block, (keys, values), kv in zip(
                self.stack.blocks, loop_state["cache"], loop_state["memory"], strict=True
            ):
                new_keys, new_values = block.self_attention.project(block.self_attention_norm(x))
                start = [0, 0, time, 0]
                keys = ops.slice_update(keys, start, ops.cast(new_keys, keys.dtype))
                values = ops.slice_update(values, start, ops.cast(new_values, values.dtype))
                caches.append((keys, values))
                x = block(x, (keys, values), bias, allowed, kv, loop_state["memory_mask"],
                          training=training)  # fmt: skip
            logits = self._logits(x)[:, 0]
            return logits, {**loop_state, "cache": caches}

        def reorder(loop_state: dict, rows: Any) -> dict:
            # Only the caches differ between an example's hypotheses.
            return {**loop_state, "cache": gather_rows(loop_state["cache"], rows)}

        return Inference(step, state, start_tokens, reorder_state=reorder, freeze_state=False)

    def _feedback_inference(self, embedding: Any, start_tokens: Any, end_token: Any,
                            context: Any, context_sequence_length: Any, initial_state: Any,
                            memory: Any, memory_sequence_length: Any, max_length: int,
                            training: Any) -> Inference:  # fmt: skip
        """Differentiable steps (the cache's in-place writes have no gradient): the step inputs
        are kept, ``[batch, max_length, d_model]``, and every step runs the stack over all of
        them as teacher forcing does (causal), reading the logits at the current step."""
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


class T5EncoderDecoder(ModuleBase):
    """T5: shared embeddings, :class:`T5Encoder` and :class:`T5Decoder` (module docstring).

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
