"""RNN decoders: BasicRNNDecoder and AttentionRNNDecoder (Texar's names and call signature).

Both are called as::

    outputs, final_state, lengths = decoder(
        inputs=..., sequence_length=...,                  # train_greedy (teacher forcing)
        memory=..., memory_sequence_length=...,           # AttentionRNNDecoder only
        initial_state=...,                                # the cell's state; zeros if None
        decoding_strategy="train_greedy",                 # or any of DecoderBase's strategies
        embedding=..., start_tokens=..., end_token=...,   # inference
        max_decoding_length=..., softmax_temperature=..., top_k=..., top_p=..., seed=...,
        sampling_probability=..., straight_through=...,   # scheduled_sampling, gumbel_softmax
    )

(the strategies: :mod:`texkit.modules.decoders.decoder_base`) and always return ``(outputs,
final_state, lengths)``:

* ``outputs``: :class:`DecoderOutput` (``logits [batch, time, vocab]`` float32, ``sample_id
  [batch, time]`` int32 and ``soft_sample [batch, time, vocab]`` float32); the attention
  decoder's :class:`AttentionDecoderOutput` adds ``attention_scores [batch, time,
  memory_time]``. In training (``train_*``, ``scheduled_sampling``) ``time`` is the inputs'
  length and steps at or past ``sequence_length`` hold zeros; in inference ``time`` is
  ``max_decoding_length`` and steps after a sequence's end hold ``end_token`` (and zero logits,
  soft samples and scores).
* ``final_state``: the cell state at each sequence's own last step (the attention decoder's
  :class:`AttentionState`).
* ``lengths``: ``[batch]`` int32, ``sequence_length`` in training, the decoded lengths (end token
  included) in inference.

``decoder.beam_search(...)`` returns :class:`~texkit.modules.decoders.BeamSearchOutput`. The
search algorithms are those of :mod:`texkit.modules.decoders.decoding` and
:mod:`~texkit.modules.decoders.feedback_decoding`; a decoder supplies only its step function
(on ids and on embeddings) and initial state, so everything here compiles with
``jit_compile=True``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras
import tensorflow as tf

from texkit.core.layers import (
    default_rnn_cell_hparams,
    get_rnn_cell,
    rnn_cell_hparams_doc,
)
from texkit.core.rnn_cells import prepare_dropout_masks, reset_dropout_masks
from texkit.hparams import check_positive_int
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoder_base import DecoderBase, Inference
from texkit.modules.decoders.decoding import (
    DecodeResult,
    DecoderOutput,
    batch_size_of,
    full_lengths,
    select_rows,
    teacher_forced_outputs,
    where_batch,
)

__all__ = ["BasicRNNDecoder", "DecoderOutput", "RNNDecoderBase"]


def flatten_like(structure: Any, values: Any) -> Any:
    """``values`` repacked into ``structure`` (Keras cells may return lists for tuples)."""
    return tf.nest.pack_sequence_as(structure, tf.nest.flatten(values))


class RNNDecoderBase(DecoderBase):
    """What both RNN decoders share: the cell, the output layer, and the ways to run them.

    A subclass supplies the step (``_cell_step``), its state, and what it records per step.
    """

    ACCEPTS_INITIAL_STATE = True

    def __init__(
        self,
        vocab_size: int | None = None,
        output_layer: keras.layers.Layer | None = None,
        hparams: Any = None,
        **kwargs: Any,
    ):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_positive_int(hp, "max_decoding_length_infer")
        if output_layer is None:
            output_layer = self._dense_output(vocab_size, hp.output_layer_bias)
        self.vocab_size = vocab_size
        self.output_layer = output_layer
        self.cell = get_rnn_cell(hp.rnn_cell, "rnn_cell", dtype=self.dtype_policy)

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "rnn_cell": default_rnn_cell_hparams(),
            "output_layer_bias": True,
            "max_decoding_length_infer": 64,
            "name": "rnn_decoder",
        }

    def get_config(self) -> dict:
        return {**super().get_config(), "vocab_size": self.vocab_size}

    # --- building -------------------------------------------------------------------------------

    def build(self, inputs_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        """Creates the cell's and output layer's weights from the step input's size (the last
        axis of ``inputs_shape``) and, for the attention decoder, ``memory_shape``'s. Keras calls
        it on the first call's shapes; a call that does not have them (token ids, inference)
        calls it once it knows them."""
        memory_shape = kwargs.get("memory_shape")
        input_size = None
        if inputs_shape is not None and len(inputs_shape) == 3:
            input_size = inputs_shape[-1]
        memory_size = None if memory_shape is None else memory_shape[-1]
        if input_size is not None and self._sizes_known(memory_size) and not self.cell.built:
            self._build_parts(input_size, memory_size)
        self.built = True

    def _sizes_known(self, memory_size: int | None) -> bool:
        return True

    def _parts_built(self, memory_shape: Any) -> bool:
        return self.cell.built

    def _build_parts(self, input_size: int, memory_size: int | None) -> None:
        self.cell.build((None, input_size + self._fed_back_size(memory_size)))
        if not self.output_layer.built:
            self.output_layer.build((None, self._output_size(memory_size)))

    def _fed_back_size(self, memory_size: int | None) -> int:
        """Size of what the step feeds back into the cell besides the input."""
        return 0

    def _output_size(self, memory_size: int | None) -> int:
        return self._cell_output_size()

    def _cell_output_size(self) -> int:
        size = self.cell.output_size
        return size if isinstance(size, int) else tf.nest.flatten(size)[-1]

    # --- what a subclass supplies ---------------------------------------------------------------

    def _check_memory(self, memory: Any, memory_sequence_length: Any) -> tuple[Any, Any]:
        if memory is not None:
            raise ValueError(f"{self.name}: takes no memory; use AttentionRNNDecoder")
        return None, None

    def _memory_parts(self, memory: Any, memory_sequence_length: Any) -> dict | None:
        """The memory tensors the step reads (``None`` for a decoder without memory)."""
        return None

    def _memory_size(self, memory_parts: dict | None) -> int | None:
        return None

    def _input_size(self, inputs: Any, embedding: Any, start_tokens: Any) -> int | None:
        if inputs is None:
            if start_tokens is None:
                return None
            return self._embed_ids(embedding, tf.convert_to_tensor(start_tokens)[:1]).shape[-1]
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype.is_integer and len(inputs.shape) == 2:
            return self._embed_ids(embedding, inputs[:1, :1]).shape[-1]
        return inputs.shape[-1]

    def _initial_state(self, initial_state: Any, batch_size: Any, memory: dict | None) -> Any:
        """The step's state from the user's initial cell state (zeros when ``None``), in the
        compute dtype (a loop's state must keep its dtype, and the cell computes in that one)."""
        if initial_state is None:
            return self.cell.get_initial_state(batch_size=batch_size)
        return tf.nest.map_structure(
            lambda s: tf.cast(s, self.compute_dtype) if s.dtype.is_floating else s,
            tf.nest.map_structure(tf.convert_to_tensor, initial_state),
        )

    def _cell_step(
        self, inputs: Any, state: Any, memory: dict | None, training: Any
    ) -> tuple[Any, dict, Any]:
        """One step on embedded ``inputs [batch, dim]``: ``(output, records, new_state)``."""
        output, new_state = self.cell(inputs, state, training=training)
        return output, {}, flatten_like(state, new_state)

    def _records(self, batch_size: Any, memory: dict | None) -> dict:
        """Zero values of what a step records besides its output: ``{name: [batch, ...]}``."""
        return {}

    def _public_state(self, state: Any, history: dict) -> Any:
        """The ``final_state`` users get; ``history`` holds each record over time."""
        return state

    def _outputs(self, logits: Any, sample_id: Any, soft_sample: Any, history: dict) -> Any:
        return DecoderOutput(logits, sample_id, soft_sample)

    # --- running --------------------------------------------------------------------------------

    def _cell_state(self, state: Any) -> Any:
        """The cell's own part of the step's state."""
        return state

    def _draw_dropout_masks(self, inputs: Any, state: Any) -> None:
        """Draws the cell's per-sequence dropout masks before a loop, as keras.layers.RNN does
        (they only act in training); ``inputs`` are one step's ``[batch, dim]`` inputs."""
        fed_back = self._fed_back_size_of(state)
        cell_inputs = tf.zeros(
            [tf.shape(inputs)[0], inputs.shape[-1] + fed_back], self.compute_dtype
        )
        reset_dropout_masks(self.cell)
        prepare_dropout_masks(self.cell, cell_inputs, self._cell_state(state))

    def _fed_back_size_of(self, state: Any) -> int:
        return 0

    def _inference(self, request: DecodeRequest) -> Inference:
        """The step function over token ids, and its initial state.

        The memory travels in the state, so beam search tiles and reorders it with the rest.
        Greedy and sampling (not beam search) also keep ``[batch, max_length, ...]`` buffers of
        each step's records (the attention scores) in the state.
        """
        start_tokens = tf.cast(tf.convert_to_tensor(request.start_tokens), tf.int32)
        memory = self._memory_parts(request.memory, request.memory_sequence_length)
        embedding, training = request.embedding, request.training
        # Beam search keeps no records.
        max_length = None if request.beam_width is not None else request.max_length
        batch = batch_size_of(start_tokens)
        state = {
            "decoder": self._initial_state(request.initial_state, batch, memory),
            "memory": memory,
        }
        state["records"] = {}
        if max_length is not None:
            state["records"] = {
                name: tf.zeros(
                    tf.concat([[batch, max_length], tf.shape(value)[1:]], 0), value.dtype
                )
                for name, value in self._records(batch, memory).items()
            }
        if memory is None:
            del state["memory"]

        def embed(ids: Any) -> Any:
            return self._embed_ids(embedding, ids)

        def embedded_step(inputs: Any, time: Any, loop_state: dict) -> tuple[Any, dict]:
            output, records, new_state = self._cell_step(
                inputs,
                loop_state["decoder"],
                loop_state.get("memory"),
                training,
            )
            new_loop_state = {**loop_state, "decoder": new_state}
            if loop_state["records"]:
                rows = tf.range(tf.shape(inputs)[0])
                where = tf.stack([rows, tf.fill(tf.shape(rows), time)], axis=1)
                new_loop_state["records"] = {
                    name: tf.tensor_scatter_nd_update(buffer, where, records[name])
                    for name, buffer in loop_state["records"].items()
                }
            return self.output_layer(output), new_loop_state

        def step(token_ids: Any, time: Any, loop_state: dict) -> tuple[Any, dict]:
            return embedded_step(embed(token_ids), time, loop_state)

        return Inference(step, state, start_tokens, embed=embed, embedded_step=embedded_step)

    @contextlib.contextmanager
    def _decoding(self, run: Inference, request: DecodeRequest) -> Iterator[None]:
        # The cell's per-sequence dropout masks, drawn before the loop as keras.layers.RNN does.
        try:
            first = self._embed_ids(request.embedding, run.start_tokens)
            self._draw_dropout_masks(first, run.state["decoder"])
            yield
        finally:
            reset_dropout_masks(self.cell)

    def _inference_outputs(self, result: DecodeResult) -> tuple[Any, Any]:
        history = result.final_state["records"]
        outputs = self._outputs(result.logits, result.sample_id, result.soft_sample, history)
        return outputs, self._public_state(result.final_state["decoder"], history)

    def _teacher_forcing(self, request: DecodeRequest) -> tuple[Any, Any, Any]:
        inputs, embedding, training = request.inputs, request.embedding, request.training
        if inputs is None:
            raise ValueError(f"{self.name}: train_greedy needs `inputs` [batch, time, dim]")
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype.is_integer:
            inputs = self._embed_ids(embedding, inputs)
        if len(inputs.shape) != 3:
            raise ValueError(
                f"{self.name}: inputs must be [batch, time, dim] (or token ids with `embedding`), "
                f"got shape {tuple(inputs.shape)}"
            )
        inputs = tf.cast(inputs, self.compute_dtype)
        memory = self._memory_parts(request.memory, request.memory_sequence_length)
        batch, max_time = batch_size_of(inputs), tf.shape(inputs)[1]
        sequence_length = full_lengths(request.sequence_length, inputs)
        state = self._initial_state(request.initial_state, batch, memory)
        time_major = tf.transpose(inputs, (1, 0, 2))
        zero_records = self._records(batch, memory)
        output_zeros = tf.zeros([batch, self._output_size(self._memory_size(memory))],
                                self.compute_dtype)  # fmt: skip
        outputs = {"output": output_zeros, **zero_records}
        arrays = tf.nest.map_structure(
            lambda x: tf.TensorArray(x.dtype, size=max_time, element_shape=x.shape), outputs
        )

        def body(time: Any, state: Any, arrays: Any) -> tuple[Any, Any, Any]:
            output, records, new_state = self._cell_step(time_major[time], state, memory, training)
            valid = time < sequence_length
            # Past its length a sequence keeps its state and outputs zeros.
            new_state = select_rows(valid, new_state, state)
            step_outputs = {"output": output, **records}
            arrays = {
                name: arrays[name].write(time, where_batch(valid, value, tf.zeros_like(value)))
                for name, value in step_outputs.items()
            }
            return time + 1, new_state, arrays

        # A static bound lets XLA size the loop's gradient accumulators.
        static_time = inputs.shape[1]
        try:
            self._draw_dropout_masks(inputs[:, 0], state)
            _, state, arrays = tf.while_loop(
                lambda time, *_: time < max_time,
                body,
                (tf.constant(0), state, arrays),
                maximum_iterations=static_time if static_time is not None else max_time,
            )
        finally:
            reset_dropout_masks(self.cell)
        history = {
            name: tf.transpose(array.stack(), [1, 0, *range(2, len(array.element_shape) + 1)])
            for name, array in arrays.items()
        }
        logits = tf.cast(self.output_layer(history.pop("output")), tf.float32)
        # As in inference: zeros past the end.
        logits, sample_id, soft_sample = teacher_forced_outputs(logits, sequence_length)
        outputs = self._outputs(logits, sample_id, soft_sample, history)
        return outputs, self._public_state(state, history), sequence_length


class BasicRNNDecoder(RNNDecoderBase):
    """An RNN decoder with an output layer to the vocabulary (Texar's ``BasicRNNDecoder``).

    ``BasicRNNDecoder(vocab_size, hparams=...)``; ``output_layer`` may replace the
    ``Dense(vocab_size)`` projection. The call arguments and the outputs are in the module
    docstring; ``final_state`` is the cell's state (a Keras cell's structure, e.g. ``[h, c]``).

    Example::

        embedder = tx.modules.WordEmbedder(vocab_size=100, hparams={"dim": 32})
        decoder = tx.modules.BasicRNNDecoder(100, hparams={"rnn_cell": {"kwargs": {"units": 32}}})
        outputs, state, lengths = decoder(inputs=embedder(ids), sequence_length=lengths)
        outputs, state, lengths = decoder(
            decoding_strategy="infer_greedy", embedding=embedder, start_tokens=bos,
            end_token=2, max_decoding_length=20)
    """

    HPARAMS_DOC = {
        **rnn_cell_hparams_doc("rnn_cell"),
        "output_layer_bias": "Whether the Dense(vocab_size) output layer has a bias.",
        "max_decoding_length_infer": "Steps decoded in inference and beam search when the call "
        "gives no max_decoding_length (buffers are preallocated to it).",
        "name": "Layer name.",
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {**super().default_hparams(), "name": "basic_rnn_decoder"}
