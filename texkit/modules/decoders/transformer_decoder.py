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

Inference keeps a key/value cache per block, written in place, so a step costs O(current
length) and decoding compiles with ``jit_compile=True``; beam search reads the caches through a
table of ancestors instead of moving them; the strategies that feed back vectors (trained
through) rerun the blocks over the fed inputs instead. How:
:mod:`~texkit.modules.decoders.transformer_inference`.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf

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
from texkit.modules.embedders import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder

__all__ = ["TransformerDecoder"]

_POSITION_TYPES = ("sinusoids", "learned")


def _check_hparams(hp: Any) -> None:
    """Checks the decoder's hparams, naming the bad key."""
    check_stack_hparams(hp)
    check_positive_int(hp, "max_decoding_length_infer")
    # Decoding preallocates [batch, max_decoding_length_infer, dim] buffers.
    check_table_size(
        hp.max_decoding_length_infer, hp.dim, "max_decoding_length_infer", "a decoding buffer"
    )
    positions = hp.position_embedder
    if positions.type not in _POSITION_TYPES:
        raise HParamsError(
            f"expected one of {_POSITION_TYPES}, got {positions.type!r}", "position_embedder.type"
        )
    check_positive_int(hp, "position_embedder.position_size", optional=True)
    if positions.position_size is not None:
        check_table_size(
            positions.position_size, hp.dim, "position_embedder.position_size", "a table"
        )
    if positions.type == "learned" and positions.position_size is None:
        raise HParamsError(
            "learned position embeddings need a position_size", "position_embedder.position_size"
        )


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
        end_token: the int token that ends a sequence, or several (a list or a 1-D tensor).
        context: ``[batch, context_time]`` prompts, instead of ``start_tokens``: decoding starts
            from ``context[:, 0]`` and the next ``context_sequence_length - 1`` tokens of each
            example are forced (their logits are 0 for the forced token and ``-1e9`` for the
            others), then the decoder continues on its own. ``sample_id`` and ``lengths``
            include the forced tokens. The prompts go through the blocks in one pass (up to
            the first end token in a prompt, which ends that row as a chosen one would).
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
        _check_hparams(hp)
        self.vocab_size, self.output_layer = self._make_output_layer(vocab_size, output_layer)
        self.position_embedder = self._make_position_embedder()
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

    def _make_output_layer(self, vocab_size: Any, output_layer: Any) -> tuple[int | None, Any]:
        """``(vocab_size, output_layer)``: tied to a ``WordEmbedder``, a ``Dense(vocab_size)``, or
        the given Keras layer (``get_config`` gives it serialized)."""
        hp = self.hparams
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
            tied = TiedOutput(
                output_layer, hp.output_layer_bias, name="output_layer", dtype=self.dtype_policy
            )
            return output_layer.vocab_size, tied
        if output_layer is None:
            return vocab_size, self._dense_output(vocab_size, hp.output_layer_bias)
        if not isinstance(output_layer, keras.layers.Layer):
            raise TypeError(
                f"{self.name}: output_layer must be a WordEmbedder (tied) or a Keras layer, got "
                f"{type(output_layer).__name__}"
            )
        return vocab_size, output_layer

    def _make_position_embedder(self) -> Any:
        hp, positions = self.hparams, self.hparams.position_embedder
        if positions.type == "sinusoids":
            return SinusoidsPositionEmbedder(
                positions.position_size,
                hparams={"dim": hp.dim, "max_timescale": positions.max_timescale},
                name="position_embedder",
                dtype=self.dtype_policy,
            )
        return PositionEmbedder(
            positions.position_size,
            hparams={"dim": hp.dim, "initializer": positions.initializer},
            name="position_embedder",
            dtype=self.dtype_policy,
        )

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

    def _inference(self, request: DecodeRequest) -> Inference:
        return cached_inference(self, request)

    def _feedback_inference(self, request: DecodeRequest) -> Inference:
        return feedback_inference(self, request)

    def _inference_outputs(self, result: DecodeResult) -> tuple[DecoderOutput, tuple]:
        # The final state (the caches) is not returned: a Transformer has no recurrent state.
        return DecoderOutput(result.logits, result.sample_id, result.soft_sample), ()

    def _stack(self, inputs: Any, positions: Any, request: DecodeRequest) -> Any:
        """Step inputs ``[batch, time, dim]`` at ``positions`` through the embedding and the blocks
        (all steps at once, causal), before the output layer."""
        x = self._embed(inputs, positions, request.training)
        for block in self.blocks:
            x = block(x, memory=request.memory, training=request.training,
                      memory_sequence_length=request.memory_sequence_length)  # fmt: skip
        return x

    def _teacher_forcing(self, request: DecodeRequest) -> tuple[DecoderOutput, tuple, Any]:
        if request.inputs is None:
            raise ValueError(f"{self.name}: train_greedy needs `inputs` (ids or embeddings)")
        inputs = tf.convert_to_tensor(request.inputs)
        if inputs.dtype.is_integer:
            if len(inputs.shape) != 2:
                raise ValueError(
                    f"{self.name}: token ids must be [batch, time], got shape {tuple(inputs.shape)}"
                )
            inputs = self._embed_ids(request.embedding, inputs)
        if len(inputs.shape) != 3:
            raise ValueError(
                f"{self.name}: inputs must be [batch, time, dim] (or token ids with `embedding`), "
                f"got shape {tuple(inputs.shape)}"
            )
        self._check_positions(inputs.shape[1])
        batch, max_time = batch_size_of(inputs), tf.shape(inputs)[1]
        sequence_length = full_lengths(request.sequence_length, inputs)
        positions = tf.broadcast_to(tf.range(max_time)[None, :], [batch, max_time])
        logits = self._logits(self._stack(inputs, positions, request))
        return DecoderOutput(*teacher_forced_outputs(logits, sequence_length)), (), sequence_length
