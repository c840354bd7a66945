"""TransformerDecoder: masked self-attention, cross-attention to a memory, and a key/value cache.

Called like the RNN decoders::

    outputs, final_state, lengths = decoder(
        inputs=..., sequence_length=...,                  # train_greedy (teacher forcing)
        memory=..., memory_sequence_length=...,           # with cross_attention (translation)
        decoding_strategy="train_greedy",                 # or any of DecoderBase's strategies
        embedding=..., start_tokens=..., end_token=...,   # inference
        context=..., context_sequence_length=...,         # prompts, instead of start_tokens
        max_decoding_length=..., softmax_temperature=..., top_k=..., top_p=..., seed=...,
        sampling_probability=..., straight_through=...,   # scheduled_sampling, gumbel_softmax
    )

and always returns ``(DecoderOutput(logits, sample_id, soft_sample), (), lengths)``: a
Transformer has no
recurrent state to hand back, so ``final_state`` is always the empty structure ``()`` (not
``None``, which a Keras functional model cannot return). ``decoder.beam_search(...)``
returns :class:`~texkit.modules.decoders.BeamSearchOutput`.

The decoder embeds tokens itself, the same way in training and in every decoding step:
``x = word_embedding * sqrt(dim) (if scale_embeddings) + position_embedding``, then embedding
dropout. ``inputs`` are token ids (looked up in ``embedding``) or word embeddings ``[batch, time,
dim]``; the decoder adds the positions ``0, 1, ...`` in both cases.

Inference keeps, for every block, a :class:`~texkit.core.attention.KVCache` of the self-attention
keys and values preallocated to ``max_decoding_length`` steps and written in place at each step,
and the cross-attention keys and values of the memory projected once. A step therefore computes
one token's projections and attends over a fixed-size buffer (masked past the current step)
instead of recomputing the prefix: its cost does not grow with the prefix, and every shape is
static, so decoding compiles with ``jit_compile=True``. A prompt (``context``) is run through the
blocks in one pass that fills the caches; the decoding loop starts where every row's prompt is
still forced (rows with longer prompts keep being forced token by token).

Beam search never moves the caches: each hypothesis writes its steps into its own slot, and a
table of ancestors (``[batch * beam_width, max_length]`` int32, reordered with the hypotheses)
tells which slot holds each earlier step of its history
(:meth:`~texkit.core.attention.MultiHeadAttention.call_cached_beams`). Reordering costs a gather
of that table instead of one of every cache, and the memory is not tiled: every hypothesis of an
example attends to the example's one projected memory.

The strategies that feed back the decoder's own choices (``train_sample``,
``scheduled_sampling``, ``gumbel_softmax``; see :mod:`texkit.modules.decoders.decoder_base`) are
trained through, and the cache's in-place writes have no gradient in TensorFlow: their steps keep
the fed inputs instead and run the blocks over all of them (causal), so a step costs a
teacher-forced pass over ``max_decoding_length`` (or the inputs') positions.

(One file of about 600 lines: the cached inference, the feedback steps and the teacher-forced
pass share the embedding, block and output code the decoder is made of.)
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf

from texkit.core.attention import attention_mask
from texkit.core.dropout import dropout
from texkit.core.layers import get_initializer
from texkit.core.transformer import (
    STACK_HPARAMS_DOC,
    DecoderBlock,
    TiedOutput,
    check_stack_hparams,
    default_stack_hparams,
    layer_norm,
)
from texkit.hparams import HParamsError, check_positive_int, check_table_size
from texkit.modules.decoders.beam_decoding import gather_rows
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import (
    DecodeResult,
    DecoderOutput,
    batch_size_of,
    forced_logits,
    one_hot_samples,
    where_batch,
)
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder

__all__ = ["TransformerDecoder"]

_POSITION_TYPES = ("sinusoids", "learned")


class TransformerDecoder(DecoderBase):
    """The Transformer decoder (Vaswani et al., 2017); without cross-attention, a GPT-style LM.

    Args:
        vocab_size: size of the output vocabulary (of a ``Dense(vocab_size)`` output layer).
        output_layer: instead of that layer: a :class:`~texkit.modules.WordEmbedder` to tie the
            output to its embeddings (``logits = x E^T``, plus a bias if ``output_layer_bias``;
            the usual choice, with the same embedder as ``embedding``), or any Keras layer
            mapping ``[..., dim]`` to ``[..., vocab_size]``.
        hparams: see the table below.

    Each block is causal self-attention, cross-attention to ``memory`` (when ``cross_attention``
    is true) and a feed-forward network, with dropout and residual connections in pre-norm (a
    final layer norm after the last block) or post-norm order, as in
    :class:`~texkit.modules.TransformerEncoder`. The module docstring tells more about the call.

    Call arguments:
        inputs: ``[batch, time]`` token ids (with ``embedding``) or ``[batch, time, dim]`` word
            embeddings, starting with the start token (teacher forcing).
        sequence_length: ``[batch]`` valid lengths; logits and ``sample_id`` are zero past them.
        memory, memory_sequence_length: ``[batch, memory_time, memory_dim]`` and its lengths,
            attended to by every block when ``cross_attention`` is true (required then).
        decoding_strategy: one of :data:`~texkit.modules.decoders.decoder_base.STRATEGIES`
            (``train_greedy``, ``train_sample``, ``scheduled_sampling``, ``infer_greedy``,
            ``infer_sample``, ``gumbel_softmax``).
        embedding: ids -> vectors: a ``WordEmbedder`` (or a layer or callable), or a ``[vocab,
            dim]`` matrix. Needed for ids and for inference.
        start_tokens: ``[batch]`` first tokens for inference.
        end_token: the int token that ends a sequence.
        context: ``[batch, context_time]`` prompts, instead of ``start_tokens``: decoding starts
            from ``context[:, 0]`` and the next ``context_sequence_length - 1`` tokens of each
            example are forced (their logits are 0 for the forced token and ``-1e9`` for the
            others), then the decoder continues on its own. ``sample_id`` and ``lengths``
            include the forced tokens. The prompts go through the blocks in one pass (up to
            the first ``end_token`` in a prompt, which ends that row as a chosen one would).
        context_sequence_length: ``[batch]`` lengths of the prompts (default: all of them).
        max_decoding_length: a Python int, the steps decoded (``None``:
            ``max_decoding_length_infer``); the cache is preallocated to it.
        softmax_temperature, top_k, top_p, seed: sampling, as in
            :func:`~texkit.modules.decoders.sample_decode` (``softmax_temperature`` is also
            Gumbel-softmax's temperature).
        sampling_probability: ``scheduled_sampling``'s probability of feeding a sample.
        straight_through: ``gumbel_softmax`` feeds the one-hot argmax (soft gradient).
        training: Keras' training flag (dropout).

    Returns:
        ``(DecoderOutput(logits [batch, time, vocab] float32, sample_id [batch, time] int32,
        soft_sample [batch, time, vocab] float32), (), lengths [batch] int32)``.

    Example::

        embedder = tx.modules.WordEmbedder(vocab_size=1000, hparams={"dim": 64})
        decoder = tx.modules.TransformerDecoder(output_layer=embedder, hparams={
            "dim": 64, "num_blocks": 2, "poswise_feedforward": {"dim": 256}})
        outputs, _, _ = decoder(inputs=ids, sequence_length=lengths, embedding=embedder,
                                memory=encoded, memory_sequence_length=source_lengths)
        search = decoder.beam_search(4, 0.6, start_tokens=bos, end_token=eos,
                                     embedding=embedder, memory=encoded,
                                     memory_sequence_length=source_lengths)
    """

    HPARAMS_DOC = {
        **{k: v for k, v in STACK_HPARAMS_DOC.items() if k != "norm"},
        "norm": "'pre' (layer norm, then sub-layer; a final layer norm after the last block) or "
        "'post' (add, then layer norm; Vaswani et al.).",
        "cross_attention": "Whether each block attends to a memory (translation); false makes a "
        "decoder-only language model.",
        "embedding_dropout": "Dropout on the scaled word plus position embeddings.",
        "position_embedder.type": "'sinusoids' (fixed, any position) or 'learned' (a table of "
        "position_size rows).",
        "position_embedder.position_size": "Number of positions: required for 'learned'; for "
        "'sinusoids', None computes them on the fly. Decoding lengths must stay within it.",
        "position_embedder.max_timescale": "The sinusoids' base wavelength.",
        "position_embedder.initializer": "Initializer of the learned table ({type, kwargs}).",
        "scale_embeddings": "Multiply the word embeddings by sqrt(dim) (Vaswani et al., with "
        "embeddings tied to the output layer); GPT-2 does not.",
        "output_layer_bias": "Whether the output layer (Dense or tied) has a bias.",
        "max_decoding_length_infer": "Steps decoded in inference and beam search when the call "
        "gives no max_decoding_length (the cache is preallocated to it).",
        "name": "Layer name.",
    }

    ACCEPTS_CONTEXT = True

    def __init__(
        self,
        vocab_size: int | None = None,
        output_layer: Any = None,
        hparams: Any = None,
        **kwargs: Any,
    ):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_stack_hparams(hp)
        check_positive_int(hp, "max_decoding_length_infer")
        # Decoding preallocates [batch, max_decoding_length_infer, dim] buffers.
        check_table_size(
            hp.max_decoding_length_infer, hp.dim, "max_decoding_length_infer", "a decoding buffer"
        )
        positions = hp.position_embedder
        if positions.type not in _POSITION_TYPES:
            raise HParamsError(
                f"expected one of {_POSITION_TYPES}, got {positions.type!r}",
                "position_embedder.type",
            )
        check_positive_int(hp, "position_embedder.position_size", optional=True)
        if positions.position_size is not None:
            check_table_size(
                positions.position_size, hp.dim, "position_embedder.position_size", "a table"
            )
        if positions.type == "learned" and positions.position_size is None:
            raise HParamsError(
                "learned position embeddings need a position_size",
                "position_embedder.position_size",
            )
        if isinstance(output_layer, dict):  # from get_config
            output_layer = keras.saving.deserialize_keras_object(output_layer)
        self._user_output_layer = output_layer
        self._tied = isinstance(output_layer, WordEmbedder)
        if self._tied:
            if vocab_size is not None and vocab_size != output_layer.vocab_size:
                raise ValueError(
                    f"{self.name}: vocab_size={vocab_size} disagrees with the tied embedder's "
                    f"vocab_size={output_layer.vocab_size}"
                )
            if output_layer.dim != hp.dim:
                raise ValueError(
                    f"{self.name}: the tied embedder has dim={output_layer.dim}, the decoder "
                    f"dim={hp.dim}"
                )
            vocab_size = output_layer.vocab_size
            output_layer = TiedOutput(
                output_layer, hp.output_layer_bias, name="output_layer", dtype=self.dtype_policy
            )
        elif output_layer is None:
            if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
                raise ValueError(
                    f"{self.name}: vocab_size must be a positive int (or give output_layer), got "
                    f"{vocab_size!r}"
                )
            output_layer = keras.layers.Dense(
                vocab_size, use_bias=hp.output_layer_bias, name="output_layer",
                dtype=self.dtype_policy,
            )  # fmt: skip
        elif not isinstance(output_layer, keras.layers.Layer):
            raise TypeError(
                f"{self.name}: output_layer must be a WordEmbedder (tied) or a Keras layer, got "
                f"{type(output_layer).__name__}"
            )
        self.vocab_size = vocab_size
        self.output_layer = output_layer

        if positions.type == "sinusoids":
            self.position_embedder = SinusoidsPositionEmbedder(
                positions.position_size,
                hparams={"dim": hp.dim, "max_timescale": positions.max_timescale},
                name="position_embedder",
                dtype=self.dtype_policy,
            )
        else:
            self.position_embedder = PositionEmbedder(
                positions.position_size,
                hparams={"dim": hp.dim, "initializer": positions.initializer},
                name="position_embedder",
                dtype=self.dtype_policy,
            )
        initializer = get_initializer(hp.initializer)
        self.blocks = [
            DecoderBlock(
                hp,
                initializer,
                hp.norm,
                hp.cross_attention,
                name=f"block_{i}",
                dtype=self.dtype_policy,
            )  # fmt: skip
            for i in range(hp.num_blocks)
        ]
        self.output_norm = None
        if hp.norm == "pre":
            self.output_norm = layer_norm(hp.layer_norm_epsilon, "output_norm", self.dtype_policy)
        self.seed_generator = keras.random.SeedGenerator() if hp.embedding_dropout > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        encoder = default_stack_hparams()
        return {
            **{k: encoder[k] for k in ("dim", "num_blocks", "multihead_attention")},
            "poswise_feedforward": encoder["poswise_feedforward"],
            "cross_attention": True,
            "embedding_dropout": 0.1,
            "residual_dropout": 0.1,
            "norm": "pre",
            "layer_norm_epsilon": 1e-6,
            "initializer": encoder["initializer"],
            "position_embedder": {
                "type": "sinusoids",
                "position_size": None,
                "max_timescale": 10000.0,
                "initializer": {"type": "RandomNormal", "kwargs": {"stddev": 0.01}},
            },
            "scale_embeddings": True,
            "output_layer_bias": False,
            "max_decoding_length_infer": 64,
            "name": "transformer_decoder",
        }

    def get_config(self) -> dict:
        config = {**super().get_config(), "vocab_size": self.vocab_size}
        if self._user_output_layer is not None:
            if self._tied:
                raise NotImplementedError(
                    f"{self.name}: a decoder tied to a WordEmbedder cannot be rebuilt from its "
                    "config alone; save the weights (checkpoints, save_weights), or use "
                    "GPT2Decoder, which owns its embedder"
                )
            config["output_layer"] = keras.saving.serialize_keras_object(self._user_output_layer)
        return config

    # --- building -------------------------------------------------------------------------------

    def build(self, inputs_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        """Creates every weight; with cross-attention, once ``memory_shape`` is known (Keras
        calls it on the first call's shapes, the call itself once it has the memory)."""
        memory_shape = kwargs.get("memory_shape")
        if self._parts_built(memory_shape):
            return
        if not self.hparams.cross_attention or memory_shape is not None:
            self._build_parts(None if memory_shape is None else memory_shape[-1])
        self.built = True

    def _parts_built(self, memory_shape: Any) -> bool:
        return self.blocks[0].built

    def _build_parts(self, memory_dim: int | None) -> None:
        shape = (None, None, self.hparams.dim)
        memory_shape = None if memory_dim is None else (None, None, memory_dim)
        for block in self.blocks:
            block.build(shape, memory_shape)
        if not self.position_embedder.built:
            self.position_embedder.build((None, None))
        if self.output_norm is not None:
            self.output_norm.build(shape)
        if not self.output_layer.built:
            self.output_layer.build(shape)

    # --- pieces ---------------------------------------------------------------------------------

    def _check_memory(self, memory: Any, memory_sequence_length: Any) -> tuple[Any, Any]:
        if not self.hparams.cross_attention:
            if memory is not None:
                raise ValueError(
                    f"{self.name}: got a memory, but cross_attention is false (a language model)"
                )
            return None, None
        if memory is None:
            raise ValueError(
                f"{self.name}: needs `memory` [batch, memory_time, dim] (set cross_attention: "
                "false for a decoder-only language model)"
            )
        memory = self._as_memory(memory)
        if memory_sequence_length is not None:
            memory_sequence_length = tf.cast(memory_sequence_length, tf.int32)
        return memory, memory_sequence_length

    def _word_embeddings(self, embedding: Any, ids: Any) -> Any:
        if embedding is None:
            raise ValueError(f"{self.name}: token ids need `embedding` (ids -> vectors)")
        if callable(embedding):
            return embedding(ids)
        return tf.gather(embedding, ids)

    def _check_positions(self, length: Any) -> None:
        size = self.hparams.position_embedder.position_size
        if size is not None and isinstance(length, int) and length > size:
            raise ValueError(
                f"{self.name}: {length} steps exceed position_embedder.position_size={size}"
            )

    def _embed(self, words: Any, positions: Any, training: Any) -> Any:
        hp = self.hparams
        if words.shape[-1] != hp.dim:
            raise ValueError(
                f"{self.name}: word embeddings have size {words.shape[-1]}, expected dim={hp.dim}"
            )
        x = tf.cast(words, self.compute_dtype)
        if hp.scale_embeddings:
            x = x * tf.cast(math.sqrt(hp.dim), self.compute_dtype)
        x = x + self.position_embedder(positions=positions)
        return dropout(x, hp.embedding_dropout, training, self.seed_generator)

    def _logits(self, x: Any) -> Any:
        if self.output_norm is not None:
            x = self.output_norm(x)
        return tf.cast(self.output_layer(x), tf.float32)

    # --- running --------------------------------------------------------------------------------

    def _check_context(self, context: Any, context_sequence_length: Any, max_length: int) -> tuple:
        context = tf.cast(tf.convert_to_tensor(context), tf.int32)
        if len(context.shape) != 2:
            raise ValueError(
                f"{self.name}: context must be [batch, time] token ids, got shape "
                f"{tuple(context.shape)}"
            )
        if context.shape[1] is not None and context.shape[1] > max_length:
            raise ValueError(
                f"{self.name}: a context of {context.shape[1]} tokens does not fit in "
                f"max_decoding_length={max_length} steps"
            )
        if context_sequence_length is None:
            context_sequence_length = tf.fill([batch_size_of(context)], tf.shape(context)[1])
        return context, tf.cast(context_sequence_length, tf.int32)

    def _inference(
        self,
        embedding: Any,
        start_tokens: Any,
        end_token: Any,
        context: Any,
        context_sequence_length: Any,
        initial_state: Any,
        memory: Any,
        memory_sequence_length: Any,
        max_length: int,
        training: Any,
        beam_width: int | None,
    ) -> Inference:
        """What a decoding algorithm needs: the step function, its initial state (each block's
        cache, ``[batch, heads, max_length, depth]``, filled with the prompt), where to start.
        Beam search's step reads the caches through the ancestry table (module docstring).
        """
        self._check_positions(max_length)
        if context is not None:
            context, context_length = self._check_context(
                context, context_sequence_length, max_length
            )
            start_tokens = context[:, 0]
        start_tokens = tf.cast(tf.convert_to_tensor(start_tokens), tf.int32)
        batch = batch_size_of(start_tokens)
        memory_kv, memory_mask = None, None
        if memory is not None:
            # Projected once, outside the loop; the steps read them as constants.
            memory_kv = [block.cross_attention.project_memory(memory) for block in self.blocks]
            if memory_sequence_length is None:
                memory_sequence_length = tf.fill([batch_size_of(memory)], tf.shape(memory)[1])
            memory_mask = attention_mask(1, tf.shape(memory)[1], memory_sequence_length)

        def embed(ids: Any) -> Any:
            return self._word_embeddings(embedding, ids)

        def run_blocks(words: Any, time: Any, caches: list, beams: Any = None) -> tuple:
            """Word embeddings ``[rows, steps, dim]`` at steps ``time ..`` through the blocks and
            the cache."""
            shape = tf.shape(words)[:2]
            positions = time + tf.broadcast_to(tf.range(shape[1]), shape)
            x = self._embed(words, positions, training)
            written = []
            for index, block in enumerate(self.blocks):
                kv = None if memory_kv is None else memory_kv[index]
                x, cache = block.step(x, caches[index], time, kv, memory_mask, training, beams)
                written.append(cache)
            return x, written

        state: dict = {
            "cache": [block.self_attention.init_cache(batch, max_length) for block in self.blocks]
        }
        start_time, forced_ids = 0, None
        if context is not None:
            state["context"], state["context_length"] = context, context_length
            # The prompts go through the blocks in one pass, all but their last token, up to
            # the first end token in a prompt (whose row ends there); rows with shorter prompts
            # are padded. The loop starts at the last step every row's prompt still forces, so
            # it rewrites whatever a padded row's pass left past its own prompt before reading
            # it.
            start_time, forced_ids, start_tokens = _prompt_start(context, context_length, end_token)
            if context.shape[1] is None or context.shape[1] > 1:
                _, state["cache"] = run_blocks(embed(context[:, :-1]), 0, state["cache"])

        def make_step(beam_width: int | None = None) -> Any:
            def embedded_step(words: Any, time: Any, loop_state: dict) -> tuple[Any, dict]:
                beams = None
                if beam_width is not None:
                    # This step writes each hypothesis' own slot.
                    slot = tf.range(tf.shape(words)[0]) % beam_width
                    now = tf.equal(tf.range(max_length), time)[None, :]
                    ancestry = tf.where(now, slot[:, None], loop_state["ancestry"])
                    loop_state = {**loop_state, "ancestry": ancestry}
                    beams = (beam_width, ancestry)
                x, caches = run_blocks(words[:, None], time, loop_state["cache"], beams)
                logits = self._logits(x)[:, 0]
                if "context" in loop_state:
                    logits = _force_context(
                        logits, time, loop_state["context"], loop_state["context_length"]
                    )
                return logits, {**loop_state, "cache": caches}

            def step(token_ids: Any, time: Any, loop_state: dict) -> tuple[Any, dict]:
                return embedded_step(embed(token_ids), time, loop_state)

            return step

        if beam_width is None:
            return Inference(
                make_step(), state, start_tokens, start_time, forced_ids, freeze_state=False
            )

        def reorder(state: dict, rows: Any) -> dict:
            # Everything follows its hypothesis but the caches, which stay where they were
            # written; the ancestry table says where.
            moved = gather_rows({k: v for k, v in state.items() if k != "cache"}, rows)
            return {**moved, "cache": state["cache"]}

        state["ancestry"] = tf.zeros([batch, max_length], tf.int32)
        return Inference(
            make_step(beam_width), state, start_tokens, start_time, forced_ids, reorder
        )

    def _feedback_inference(
        self,
        embedding: Any,
        start_tokens: Any,
        end_token: Any,
        context: Any,
        context_sequence_length: Any,
        initial_state: Any,
        memory: Any,
        memory_sequence_length: Any,
        max_length: int,
        training: Any,
    ) -> Inference:
        """The differentiable steps of the strategies that feed back vectors.

        The key/value cache is written in place (``dynamic_update_slice``, which has no gradient
        in TensorFlow), so these steps keep the step inputs instead, ``[batch, max_length, dim]``
        (written with a differentiable select), and run the blocks over all of them, as teacher
        forcing does, reading the logits at the current step (later positions are masked). A
        step costs a teacher-forced pass over ``max_length`` positions.
        """
        self._check_positions(max_length)
        start_time, forced_ids, context_length = 0, None, None
        if context is not None:
            context, context_length = self._check_context(
                context, context_sequence_length, max_length
            )
            start_time, forced_ids, start_tokens = _prompt_start(context, context_length, end_token)
        start_tokens = tf.cast(tf.convert_to_tensor(start_tokens), tf.int32)
        batch = batch_size_of(start_tokens)

        def embed(ids: Any) -> Any:
            return self._word_embeddings(embedding, ids)

        dtype = embed(start_tokens[:1]).dtype
        inputs = tf.zeros([batch, max_length, self.hparams.dim], dtype)
        if context is not None:  # the prompts' steps before start_time are never computed
            prompts = tf.cast(embed(context), dtype)
            padding = max_length - tf.shape(prompts)[1]
            inputs = tf.ensure_shape(tf.pad(prompts, [[0, 0], [0, padding], [0, 0]]), inputs.shape)
        positions = tf.broadcast_to(tf.range(max_length)[None, :], [batch, max_length])

        def embedded_step(words: Any, time: Any, state: dict) -> tuple[Any, dict]:
            now = tf.equal(tf.range(max_length), time)[None, :, None]
            inputs = tf.where(now, tf.cast(words, dtype)[:, None, :], state["inputs"])
            x = self._embed(inputs, positions, training)
            for block in self.blocks:
                x = block(x, memory=memory, memory_sequence_length=memory_sequence_length,
                          training=training)  # fmt: skip
            logits = self._logits(tf.gather(x, time[None], axis=1))[:, 0]
            if context is not None:
                logits = _force_context(logits, time, context, context_length)
            return logits, {"inputs": inputs}

        def step(token_ids: Any, time: Any, state: dict) -> tuple[Any, dict]:
            return embedded_step(embed(token_ids), time, state)

        return Inference(
            step, {"inputs": inputs}, start_tokens, start_time, forced_ids, freeze_state=False,
            embed=embed, embedded_step=embedded_step,
        )  # fmt: skip

    def _inference_outputs(self, result: DecodeResult) -> tuple[DecoderOutput, tuple]:
        # The final state (the caches) is not returned: a Transformer has no recurrent state.
        return DecoderOutput(result.logits, result.sample_id, result.soft_sample), ()

    def _teacher_forcing(
        self,
        inputs: Any,
        sequence_length: Any,
        embedding: Any,
        initial_state: Any,
        memory: Any,
        memory_sequence_length: Any,
        training: Any,
    ) -> tuple[DecoderOutput, tuple, Any]:
        if inputs is None:
            raise ValueError(f"{self.name}: train_greedy needs `inputs` (ids or embeddings)")
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype.is_integer:
            if len(inputs.shape) != 2:
                raise ValueError(
                    f"{self.name}: token ids must be [batch, time], got shape {tuple(inputs.shape)}"
                )
            inputs = self._word_embeddings(embedding, inputs)
        if len(inputs.shape) != 3:
            raise ValueError(
                f"{self.name}: inputs must be [batch, time, dim] (or token ids with `embedding`), "
                f"got shape {tuple(inputs.shape)}"
            )
        self._check_positions(inputs.shape[1])
        batch, max_time = batch_size_of(inputs), tf.shape(inputs)[1]
        if sequence_length is None:
            sequence_length = tf.fill([batch], max_time)
        sequence_length = tf.cast(sequence_length, tf.int32)
        positions = tf.broadcast_to(tf.range(max_time)[None, :], [batch, max_time])
        x = self._embed(inputs, positions, training)
        for block in self.blocks:
            x = block(
                x, memory=memory, memory_sequence_length=memory_sequence_length, training=training
            )
        logits = self._logits(x)
        valid = tf.sequence_mask(sequence_length, max_time)
        logits = tf.where(valid[:, :, None], logits, 0.0)
        sample_id = tf.where(valid, tf.argmax(logits, axis=-1, output_type=tf.int32), 0)
        soft_sample = one_hot_samples(sample_id, tf.shape(logits)[-1], valid)
        return DecoderOutput(logits, sample_id, soft_sample), (), sequence_length


def _prompt_start(context: Any, context_length: Any, end_token: Any) -> tuple[Any, Any, Any]:
    """``(start_time, forced_ids, start_tokens)`` of decoding after prompts: the loop starts at
    the last step every row's prompt still forces (a prompt ends at its length or at its first
    end token after the first position)."""
    width = tf.shape(context)[1]
    steps = tf.range(width)[None, :]
    prompt_end = tf.where((steps > 0) & tf.equal(context, end_token), steps, width)
    forced_until = tf.minimum(tf.reduce_min(prompt_end, axis=1), context_length)
    start_time = tf.maximum(tf.reduce_min(forced_until) - 1, 0)
    return start_time, context[:, 1:], tf.gather(context, start_time, axis=1)


def _force_context(logits: Any, time: Any, context: Any, context_length: Any) -> Any:
    """At step ``time``, rows whose context goes on past ``time`` get the
    :func:`~texkit.modules.decoders.forced_logits` of its next token (0 for it, ``-1e9`` for every
    other), so every algorithm picks it with probability 1 and it adds nothing to a hypothesis'
    log-probability."""
    position = time + 1
    forced = position < context_length
    index = tf.minimum(position, tf.shape(context)[1] - 1)
    token = tf.gather(context, index, axis=1)
    return where_batch(forced, forced_logits(token, tf.shape(logits)[-1]), logits)
