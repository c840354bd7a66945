"""DecoderBase: the one place a decoder's call is dispatched to a decoding strategy.

Every texkit decoder is called the same way::

    outputs, final_state, lengths = decoder(
        inputs=..., sequence_length=...,                  # the ground truth (train_* strategies)
        memory=..., memory_sequence_length=...,           # what the decoder attends to
        initial_state=...,                                # a recurrent decoder's start state
        decoding_strategy="train_greedy",                 # or another of STRATEGIES, below
        embedding=..., start_tokens=..., end_token=...,   # inference
        context=..., context_sequence_length=...,         # prompts, instead of start_tokens
        max_decoding_length=..., softmax_temperature=..., top_k=..., top_p=..., seed=...,
        sampling_probability=..., straight_through=...,   # scheduled_sampling, gumbel_softmax
    )

The strategies (:data:`STRATEGIES`; Texar's three names, and the ones of Texar's helpers that the
call did not name):

* ``"train_greedy"``: teacher forcing, the ground truth fed at every step (Texar's
  ``TrainingHelper``); ``sample_id`` is the argmax.
* ``"train_sample"``: decodes for the ground truth's length, feeding back at every step a token
  sampled from the decoder's own softmax instead of the next ground-truth token (the first step
  is fed ``inputs[:, 0]``); ``sample_id`` holds the fed samples. Sampling uses
  ``softmax_temperature``, ``top_k``, ``top_p`` and ``seed`` as ``infer_sample`` does.
* ``"scheduled_sampling"``: the same, but each row feeds its sample with probability
  ``sampling_probability`` (a float or a float tensor in [0, 1], scalar or ``[batch]``: a
  schedule changes it between calls without retracing) and the ground truth otherwise (Bengio et
  al., 2015; Texar's ``ScheduledEmbeddingTrainingHelper``); ``sample_id`` is ``-1`` where the
  ground truth was fed. Probability 0 is teacher forcing; probability 1 is ``train_sample`` (the
  same seed draws the same tokens).
* ``"infer_greedy"``, ``"infer_sample"``: decoding from ``start_tokens`` (or prompts) until
  ``end_token`` or ``max_decoding_length``, feeding back the argmax or a sample.
* ``"gumbel_softmax"``: decoding as ``infer_sample`` does, but feeding back the soft embedding
  ``y E`` of the Gumbel-softmax sample ``y = softmax((logits + g) / softmax_temperature)``, so
  gradients flow through the generated sequence (Jang et al., 2017; Texar's
  ``GumbelSoftmaxEmbeddingHelper``, whose ``tau`` is ``softmax_temperature``). With
  ``straight_through=True`` the forward pass feeds the one-hot argmax and the gradient is the
  soft sample's. ``sample_id`` is the argmax (an exact sample of the softmax), which ends a
  sequence at ``end_token``; ``outputs.soft_sample`` holds ``y``.

The ``train_*`` strategies and ``scheduled_sampling`` take ``inputs`` and ``sequence_length``
(the feedback ones need ``embedding``, or the decoder's own embedder, to embed their samples, and
a static time dimension); the others ``start_tokens`` (or ``context``), ``end_token`` and
``max_decoding_length``. Every strategy returns the same ``(outputs, final_state, lengths)``:
``outputs`` has ``logits``, ``sample_id`` and ``soft_sample`` (the one-hot of ``sample_id`` but
under ``gumbel_softmax``), see :class:`~texkit.modules.decoders.DecoderOutput`. Every strategy
compiles with ``tf.function(jit_compile=True)``.

``decoder.beam_search(beam_width, length_penalty, start_tokens, end_token, ...)`` returns a
:class:`~texkit.modules.decoders.BeamSearchOutput`.

``end_token`` is one id (an int or a scalar int tensor) or several (a list or tuple of ints, or a
1-D int tensor: a model with several end-of-sequence ids, ``eos_token_id`` a list); a sequence
ends at the first step that emits any of them, which counts in its length. The first id plays the
end token's other parts: it pads the ids after a sequence's end (and a beam search's empty
hypotheses). A prompt (``context``) ends at its length or at its first end id, any of them, after
its first position. The ids must be in ``[0, vocab_size)``. ``end_token=None`` is no end token:
every sequence runs ``max_decoding_length`` steps (Hugging Face's ``eos_token_id=None``).

The contract. ``call`` and ``beam_search`` build one
:class:`~texkit.modules.decoders.decode_request.DecodeRequest` from their arguments, check it
against the strategy's row of the table
(:data:`~texkit.modules.decoders.strategies.STRATEGY_TABLE`: its function, its ``source``, the
fields it ``needs``, the ``options`` it takes) and hand it to the row's function, which calls the
decoder's hooks with the request as their one argument and runs the algorithms of
:mod:`texkit.modules.decoders.decoding` and :mod:`texkit.modules.decoders.feedback_decoding`. A new
strategy is one function and one row of that table. The base class owns the strategy names and the
argument checks (start and end tokens, prompts, ``max_decoding_length``, ``beam_width``, the
strategy-only options), and the default decoding length. A decoder supplies:

* ``build(inputs_shape, memory_shape)``: creates its weights from the input and memory sizes;
  ``call`` builds it (through ``build``) once those sizes are known;
* ``_check_memory(memory, memory_sequence_length)``: the memory it takes (or refuses);
* ``_input_size(inputs, embedding, start_tokens)``: the size of one step's input;
* ``_teacher_forcing(request)``: the whole ``train_greedy`` pass, ``(outputs, final_state,
  lengths)``;
* ``_inference(request)``: an :class:`Inference`: a step function ``step(token_ids, time, state)
  -> (logits, state)`` with its initial state (for beam search when ``request.beam_width`` is
  set), and, for the strategies that feed back vectors, ``embed(ids) -> inputs`` and
  ``embedded_step(inputs, time, state) -> (logits, state)``; the algorithms do the rest;
* ``_feedback_inference(request)``: the differentiable :class:`Inference` of those strategies
  (by default ``_inference``'s);
* ``_inference_outputs(result)``: the ``(outputs, final_state)`` of a finished decoding;
* ``_decoding(run, request)``: a context entered around a decoding loop (default: nothing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NamedTuple

import keras
import tensorflow as tf

from texkit.configurable import ModuleBase
from texkit.modules.decoders.beam_decoding import beam_search
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoding import BeamSearchOutput, DecodeResult, check_end_token
from texkit.modules.decoders.strategies import OPTIONS, STRATEGY_TABLE, Strategy

__all__ = ["STRATEGIES", "DecoderBase", "Inference"]

# The built-in strategies' names; a row added to STRATEGY_TABLE later runs but is not listed here.
STRATEGIES = tuple(STRATEGY_TABLE)

# beam_search's checks: those of a strategy that decodes from start tokens.
_BEAM_SEARCH = Strategy(None, "start")  # type: ignore[arg-type]


class Inference(NamedTuple):
    """What a decoder hands the decoding algorithms for one inference call.

    Attributes:
        step: ``step(token_ids [rows], time, state) -> (logits [rows, vocab], state)``.
        state: the step's initial state, one row per example (beam search tiles it).
        start_tokens: ``[batch]`` int32, fed at ``start_time``.
        start_time: the first step computed (a prompt's earlier steps were run in one pass).
        forced_ids: ``[batch, >= start_time]`` the tokens of the steps before ``start_time``.
        reorder_state: beam search's ``reorder_state(state, rows)`` (``None``: gather every
            tensor of the state).
        freeze_state: keep a finished sequence's state as it was at its end (greedy and
            sampling); a decoder whose final state is not returned turns it off.
        embed: ``embed(ids [...]) -> inputs [..., dim]``, what a step is fed for a token (word
            embeddings; a Transformer adds positions in its step).
        embedded_step: ``embedded_step(inputs [rows, dim], time, state) -> (logits, state)``,
            the step on vectors (``step`` is ``embedded_step(embed(ids), ...)``): scheduled
            sampling and Gumbel-softmax decoding feed it sampled and soft embeddings. ``None``
            (with ``embed``): the decoder offers only the id strategies.
    """

    step: Callable[[Any, Any, Any], tuple[Any, Any]]
    state: Any
    start_tokens: Any
    start_time: Any = 0
    forced_ids: Any = None
    reorder_state: Callable[[Any, Any], Any] | None = None
    freeze_state: bool = True
    embed: Callable[[Any], Any] | None = None
    embedded_step: Callable[[Any, Any, Any], tuple[Any, Any]] | None = None


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class DecoderBase(ModuleBase):
    """Base class of the decoders: the call's checks and dispatch; see the module docstring.

    Subclasses set ``self.vocab_size`` and ``self.output_layer`` and have a
    ``max_decoding_length_infer`` hparam. ``ACCEPTS_INITIAL_STATE`` and ``ACCEPTS_CONTEXT`` say
    whether the decoder takes an ``initial_state`` and ``context`` prompts; the call refuses them
    otherwise, naming the decoder. ``strategy_table`` maps each ``decoding_strategy`` name to its
    :class:`~texkit.modules.decoders.strategies.Strategy` row (by default the shared
    :data:`~texkit.modules.decoders.strategies.STRATEGY_TABLE`).
    """

    ACCEPTS_INITIAL_STATE: ClassVar[bool] = False
    ACCEPTS_CONTEXT: ClassVar[bool] = False
    strategy_table: ClassVar[dict[str, Strategy]] = STRATEGY_TABLE

    # --- what a decoder supplies ----------------------------------------------------------------

    def _check_memory(self, memory: Any, memory_sequence_length: Any) -> tuple[Any, Any]:
        """``(memory, memory_sequence_length)`` as the decoder reads them; by default, none."""
        if memory is not None:
            raise ValueError(f"{self.name}: takes no memory")
        return None, None

    def _input_size(self, inputs: Any, embedding: Any, start_tokens: Any) -> int | None:
        """The size of one step's input (``None`` if the decoder's weights do not depend on it)."""
        return None

    def _teacher_forcing(self, request: DecodeRequest) -> tuple[Any, Any, Any]:
        """``train_greedy``: ``(outputs, final_state, lengths)`` over ``request.inputs``."""
        raise NotImplementedError

    def _inference(self, request: DecodeRequest) -> Inference:
        """The :class:`Inference` of a decoding from ``request.start_tokens`` (or its prompts);
        beam search's when ``request.beam_width`` is set."""
        raise NotImplementedError

    def _feedback_inference(self, request: DecodeRequest) -> Inference:
        """The :class:`Inference` of the strategies that feed back vectors (``train_sample``,
        ``scheduled_sampling``, ``gumbel_softmax``), with ``embed`` and ``embedded_step``; they
        train through it, so its step must be differentiable. By default, ``_inference``'s."""
        return self._inference(request)

    def _inference_outputs(self, result: DecodeResult) -> tuple[Any, Any]:
        """``(outputs, final_state)`` of a greedy or sampling decode."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _decoding(self, run: Inference, request: DecodeRequest) -> Iterator[None]:
        """Entered around a decoding loop (a recurrent cell draws its dropout masks)."""
        yield

    # --- building -------------------------------------------------------------------------------

    def _ensure_built(self, input_size: int | None, memory: Any) -> None:
        """Builds the decoder through ``build`` once the input and memory sizes are known (Keras
        builds it on the first call's shapes, which an inference call does not have)."""
        memory_shape = None if memory is None else memory.shape
        if not self._parts_built(memory_shape):
            self.build((None, None, input_size), memory_shape=memory_shape)

    def _parts_built(self, memory_shape: Any) -> bool:
        raise NotImplementedError

    def _start_inference(self, request: DecodeRequest, feedback: bool = False) -> Inference:
        """Builds the decoder if the call could not yet (the step input's size comes from
        embedding the first tokens), then asks it for its :class:`Inference` (``feedback``: the
        one of the strategies that feed back vectors)."""
        first = request.start_tokens
        if request.context is not None:
            first = tf.convert_to_tensor(request.context)[:, 0]
        self._ensure_built(self._input_size(None, request.embedding, first), request.memory)
        if not feedback:
            return self._inference(request)
        run = self._feedback_inference(request)
        if run.embed is None or run.embedded_step is None:
            raise ValueError(
                f"{self.name}: the strategies that feed back embeddings need an Inference "
                "with embed and embedded_step"
            )
        return run

    # --- memory and sizes -----------------------------------------------------------------------

    def _as_memory(self, memory: Any) -> Any:
        """``memory`` as a ``[batch, memory_time, dim]`` tensor in the compute dtype, checked."""
        memory = tf.cast(tf.convert_to_tensor(memory), self.compute_dtype)
        if len(memory.shape) != 3 or memory.shape[-1] is None:
            raise ValueError(
                f"{self.name}: memory must be [batch, memory_time, dim] with a known dim, got "
                f"shape {tuple(memory.shape)}"
            )
        return memory

    def _dense_output(self, vocab_size: Any, use_bias: bool) -> keras.layers.Dense:
        """A ``Dense(vocab_size)`` output layer, ``vocab_size`` checked."""
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(
                f"{self.name}: vocab_size must be a positive int (or give output_layer), got "
                f"{vocab_size!r}"
            )
        return keras.layers.Dense(
            vocab_size, use_bias=use_bias, name="output_layer", dtype=self.dtype_policy
        )

    def _with_own_embedder(self, request: DecodeRequest, embedder: Any) -> DecodeRequest:
        """``request`` with the decoder's own word embedder (a language model that owns its
        embeddings takes no other)."""
        if request.embedding is not None:
            raise ValueError(
                f"{self.name}: embeds tokens with its own word_embedder; give no embedding"
            )
        return request._replace(embedding=embedder)

    def _embed_ids(self, embedding: Any, ids: Any) -> Any:
        """``ids`` looked up in ``embedding`` (a layer or a callable, or a ``[vocab, dim]``
        matrix)."""
        if embedding is None:
            raise ValueError(f"{self.name}: token ids need `embedding` (ids -> vectors)")
        if callable(embedding):
            return embedding(ids)
        return tf.gather(embedding, ids)

    def _logits_size(self) -> int | None:
        if self.vocab_size is not None:
            return self.vocab_size
        return getattr(self.output_layer, "units", None)

    def _embedding_matrix(self, embed: Callable[[Any], Any]) -> Any:
        """``[vocab_size, dim]``: the step input of every token (what soft samples weigh)."""
        vocab_size = self._logits_size()
        if vocab_size is None:
            raise ValueError(f"{self.name}: gumbel_softmax needs a known vocab_size")
        return embed(tf.range(vocab_size))

    # --- the checks -----------------------------------------------------------------------------

    def _max_length(self, max_decoding_length: Any) -> int:
        if max_decoding_length is None:
            return self.hparams.max_decoding_length_infer
        if not _is_positive_int(max_decoding_length):
            raise ValueError(
                f"{self.name}: max_decoding_length must be a positive Python int (the buffers are "
                f"preallocated to it), got {max_decoding_length!r}"
            )
        return max_decoding_length

    def _strategy(self, name: str) -> Strategy:
        if name not in self.strategy_table:
            raise ValueError(
                f"{self.name}: decoding_strategy must be one of {tuple(self.strategy_table)}, "
                f"got {name!r}"
            )
        return self.strategy_table[name]

    def _check_options(self, row: Strategy, request: DecodeRequest) -> None:
        """The strategy-only arguments (``OPTIONS``): given only to a row that takes them."""
        if not isinstance(request.straight_through, bool):
            raise ValueError(f"{self.name}: straight_through must be a bool, got "
                             f"{request.straight_through!r}")  # fmt: skip
        for name, absent in OPTIONS.items():
            if getattr(request, name) is not absent and name not in row.options:
                takers = [k for k, other in self.strategy_table.items() if name in other.options]
                raise ValueError(
                    f"{self.name}: {name} is for decoding_strategy="
                    f"{' or '.join(map(repr, takers))}, got it with {request.strategy!r}"
                )
        for name in row.needs:
            if getattr(request, name) is None:
                raise ValueError(f"{self.name}: {request.strategy} needs {name}")

    def _check_start(self, request: DecodeRequest) -> None:
        """The arguments of a decoding from start tokens or prompts."""
        what, context = request.strategy, request.context
        if not self.ACCEPTS_CONTEXT:
            if context is not None:
                raise ValueError(f"{self.name}: takes no context (prompts); give start_tokens")
            if request.start_tokens is None:
                raise ValueError(f"{self.name}: {what} needs start_tokens")
        elif (request.start_tokens is None) == (context is None):
            raise ValueError(f"{self.name}: give exactly one of start_tokens and context")
        check_end_token(request.end_token, self._logits_size(), f"{self.name}: ")

    def _checked(
        self, row: Strategy, request: DecodeRequest, max_decoding_length: Any
    ) -> DecodeRequest:
        """``request`` checked against its strategy's row, with the decoder's memory and (for a
        decoding from start tokens) the decoding length."""
        if row.run is not None:
            self._check_options(row, request)
        memory = self._check_memory(request.memory, request.memory_sequence_length)
        if request.initial_state is not None and not self.ACCEPTS_INITIAL_STATE:
            raise ValueError(f"{self.name}: takes no initial_state (it has no recurrent state)")
        max_length = None
        if row.source == "inputs":
            if request.context is not None:
                raise ValueError(f"{self.name}: {request.strategy} takes no context; give inputs")
        else:
            self._check_start(request)
            max_length = self._max_length(max_decoding_length)
        return request._replace(
            memory=memory[0], memory_sequence_length=memory[1], max_length=max_length
        )

    # --- the calls ------------------------------------------------------------------------------

    def call(
        self,
        inputs: Any = None,
        sequence_length: Any = None,
        memory: Any = None,
        memory_sequence_length: Any = None,
        initial_state: Any = None,
        decoding_strategy: str = "train_greedy",
        embedding: Any = None,
        start_tokens: Any = None,
        end_token: Any = None,
        context: Any = None,
        context_sequence_length: Any = None,
        max_decoding_length: int | None = None,
        softmax_temperature: Any = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: Any = None,
        sampling_probability: Any = None,
        straight_through: bool = False,
        training: Any = None,
    ) -> tuple[Any, Any, Any]:
        """Runs ``decoding_strategy`` (a row of ``strategy_table``); see the module docstring."""
        row = self._strategy(decoding_strategy)
        request = DecodeRequest(
            decoding_strategy, inputs, sequence_length, memory, memory_sequence_length,
            initial_state, embedding, start_tokens, end_token, context, context_sequence_length,
            None, softmax_temperature, top_k, top_p, seed, sampling_probability,
            straight_through, training=training,
        )  # fmt: skip
        return row.run(self, self._checked(row, request, max_decoding_length))

    def prepare_inference(
        self, *, start_tokens: Any = None, context: Any = None,
        context_sequence_length: Any = None, max_decoding_length: int | None = None,
        memory: Any = None, memory_sequence_length: Any = None, beam_width: int | None = None,
        initial_state: Any = None, embedding: Any = None,
    ) -> Inference:  # fmt: skip
        """The checked :class:`Inference` (step and initial state) for a loop written elsewhere
        (:mod:`texkit.tasks`, :mod:`texkit.learning`): prompts end at their lengths only (end
        tokens in a prompt are text), each forced until then; with ``beam_width``, for a state
        tiled to that many rows per example and reordered with ``reorder_state``.
        ``initial_state`` and ``embedding`` are the call's (a recurrent decoder's start state,
        the embedder of a decoder without its own)."""
        request = DecodeRequest(
            "infer_greedy" if beam_width is None else "beam_search", memory=memory,
            memory_sequence_length=memory_sequence_length, start_tokens=start_tokens,
            context=context, context_sequence_length=context_sequence_length,
            beam_width=beam_width, training=False, initial_state=initial_state,
            embedding=embedding,
        )  # fmt: skip
        request = self._checked(_BEAM_SEARCH, request, max_decoding_length)
        return self._start_inference(request)

    def beam_search(
        self,
        beam_width: int,
        length_penalty: float = 0.0,
        start_tokens: Any = None,
        end_token: Any = None,
        max_decoding_length: int | None = None,
        *,
        embedding: Any = None,
        memory: Any = None,
        memory_sequence_length: Any = None,
        initial_state: Any = None,
        context: Any = None,
        context_sequence_length: Any = None,
    ) -> BeamSearchOutput:
        """Beam search (see :func:`~texkit.modules.decoders.beam_search`), in inference mode.

        Args:
            beam_width: hypotheses kept per example.
            length_penalty: the GNMT ``alpha`` (0: plain log-probabilities).
            start_tokens, end_token: ``[batch]`` first tokens (or ``context`` prompts, for a
                decoder that takes them) and the int token that ends a hypothesis, or several
                (a list or a 1-D tensor; see the module docstring).
            max_decoding_length: a Python int (``None``: ``max_decoding_length_infer``).
            embedding, memory, memory_sequence_length, initial_state: as in the call.
            context, context_sequence_length: prompts, as in the call.

        Returns:
            :class:`~texkit.modules.decoders.BeamSearchOutput`: ``ids [batch, beam_width,
            max_decoding_length]``, ``scores`` and ``lengths [batch, beam_width]``, best first.
        """
        if not _is_positive_int(beam_width):
            raise ValueError(f"{self.name}: beam_width must be a positive int, got {beam_width!r}")
        request = DecodeRequest(
            "beam_search", None, None, memory, memory_sequence_length, initial_state, embedding,
            start_tokens, end_token, context, context_sequence_length, beam_width=beam_width,
            length_penalty=length_penalty, training=False,
        )  # fmt: skip
        request = self._checked(_BEAM_SEARCH, request, max_decoding_length)
        run = self._start_inference(request)
        return beam_search(
            run.step, run.start_tokens, end_token, request.max_length, run.state, beam_width,
            length_penalty, start_time=run.start_time, forced_ids=run.forced_ids,
            reorder_state=run.reorder_state,
        )  # fmt: skip
