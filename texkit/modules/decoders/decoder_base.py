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
:class:`~texkit.modules.decoders.BeamSearchOutput`. The base class owns what is common to every
decoder: the strategy names and their dispatch, the argument checks (start and end tokens,
prompts, ``max_decoding_length``, ``beam_width``, ``sampling_probability``), the default decoding
length, and the calls to the search algorithms of :mod:`texkit.modules.decoders.decoding` and
:mod:`texkit.modules.decoders.feedback_decoding`. A decoder supplies:

* ``build(inputs_shape, memory_shape)``: creates its weights from the input and memory sizes;
  ``call`` builds it (through ``build``) once those sizes are known;
* ``_check_memory``: the memory it takes (or refuses);
* ``_input_size``: the size of one step's input, from the inputs or from the embedding;
* ``_teacher_forcing``: the whole ``train_greedy`` pass;
* ``_inference``: an :class:`Inference`: a step function ``step(token_ids, time, state) ->
  (logits, state)`` with its initial state, and, for the strategies that feed back vectors,
  ``embed(ids) -> inputs`` and ``embedded_step(inputs, time, state) -> (logits, state)``; the
  algorithms do the rest;
* ``_inference_outputs``: the ``(outputs, final_state)`` of a finished decoding.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NamedTuple

import tensorflow as tf

from texkit.configurable import ModuleBase
from texkit.modules.decoders.beam_decoding import beam_search
from texkit.modules.decoders.decoding import (
    BeamSearchOutput,
    DecodeResult,
    greedy_decode,
    sample_decode,
)
from texkit.modules.decoders.feedback_decoding import (
    gumbel_softmax_decode,
    scheduled_sample_decode,
)

__all__ = ["STRATEGIES", "DecoderBase", "Inference"]

STRATEGIES = (
    "train_greedy",
    "train_sample",
    "scheduled_sampling",
    "infer_greedy",
    "infer_sample",
    "gumbel_softmax",
)
_FEEDBACK_TRAINING = ("train_sample", "scheduled_sampling")


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
    """Base class of the decoders: the call's dispatch and checks; see the module docstring.

    Subclasses set ``self.vocab_size`` and ``self.output_layer`` and have a
    ``max_decoding_length_infer`` hparam. ``ACCEPTS_INITIAL_STATE`` and ``ACCEPTS_CONTEXT`` say
    whether the decoder takes an ``initial_state`` and ``context`` prompts; the call refuses them
    otherwise, naming the decoder.
    """

    ACCEPTS_INITIAL_STATE: ClassVar[bool] = False
    ACCEPTS_CONTEXT: ClassVar[bool] = False

    # --- what a decoder supplies ----------------------------------------------------------------

    def _check_memory(self, memory: Any, memory_sequence_length: Any) -> tuple[Any, Any]:
        """``(memory, memory_sequence_length)`` as the decoder reads them; by default, none."""
        if memory is not None:
            raise ValueError(f"{self.name}: takes no memory")
        return None, None

    def _input_size(self, inputs: Any, embedding: Any, start_tokens: Any) -> int | None:
        """The size of one step's input (``None`` if the decoder's weights do not depend on it)."""
        return None

    def _teacher_forcing(self, inputs: Any, sequence_length: Any, embedding: Any,
                         initial_state: Any, memory: Any, memory_sequence_length: Any,
                         training: Any) -> tuple[Any, Any, Any]:  # fmt: skip
        raise NotImplementedError

    def _inference(self, embedding: Any, start_tokens: Any, end_token: Any, context: Any,
                   context_sequence_length: Any, initial_state: Any, memory: Any,
                   memory_sequence_length: Any, max_length: int, training: Any,
                   beam_width: int | None) -> Inference:  # fmt: skip
        raise NotImplementedError

    def _feedback_inference(self, embedding: Any, start_tokens: Any, end_token: Any,
                            context: Any, context_sequence_length: Any, initial_state: Any,
                            memory: Any, memory_sequence_length: Any, max_length: int,
                            training: Any) -> Inference:  # fmt: skip
        """The :class:`Inference` of the strategies that feed back vectors (``train_sample``,
        ``scheduled_sampling``, ``gumbel_softmax``), with ``embed`` and ``embedded_step``; they
        train through it, so its step must be differentiable. By default, ``_inference``'s."""
        return self._inference(
            embedding, start_tokens, end_token, context, context_sequence_length, initial_state,
            memory, memory_sequence_length, max_length, training, None,
        )  # fmt: skip

    def _inference_outputs(self, result: DecodeResult) -> tuple[Any, Any]:
        """``(outputs, final_state)`` of a greedy or sampling decode."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _decoding(self, run: Inference, embedding: Any, training: Any) -> Iterator[None]:
        """Entered around a greedy or sampling loop (a recurrent cell draws its dropout masks)."""
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

    def _start_inference(self, embedding: Any, start_tokens: Any, end_token: Any, context: Any,
                         context_sequence_length: Any, initial_state: Any, memory: Any,
                         memory_sequence_length: Any, max_length: int, training: Any,
                         beam_width: int | None, feedback: bool = False) -> Inference:  # fmt: skip
        """Builds the decoder if the call could not yet (the step input's size comes from
        embedding the first tokens), then asks it for its :class:`Inference` (``feedback``: the
        one of the strategies that feed back vectors)."""
        first = start_tokens if context is None else tf.convert_to_tensor(context)[:, 0]
        self._ensure_built(self._input_size(None, embedding, first), memory)
        if feedback:
            run = self._feedback_inference(
                embedding, start_tokens, end_token, context, context_sequence_length,
                initial_state, memory, memory_sequence_length, max_length, training,
            )  # fmt: skip
            if run.embed is None or run.embedded_step is None:
                raise ValueError(
                    f"{self.name}: the strategies that feed back embeddings need an Inference "
                    "with embed and embedded_step"
                )
            return run
        return self._inference(
            embedding, start_tokens, end_token, context, context_sequence_length, initial_state,
            memory, memory_sequence_length, max_length, training, beam_width,
        )  # fmt: skip

    # --- memory ---------------------------------------------------------------------------------

    def _as_memory(self, memory: Any) -> Any:
        """``memory`` as a ``[batch, memory_time, dim]`` tensor in the compute dtype, checked."""
        memory = tf.cast(tf.convert_to_tensor(memory), self.compute_dtype)
        if len(memory.shape) != 3 or memory.shape[-1] is None:
            raise ValueError(
                f"{self.name}: memory must be [batch, memory_time, dim] with a known dim, got "
                f"shape {tuple(memory.shape)}"
            )
        return memory

    # --- the call -------------------------------------------------------------------------------

    def _max_length(self, max_decoding_length: Any) -> int:
        if max_decoding_length is None:
            return self.hparams.max_decoding_length_infer
        if not _is_positive_int(max_decoding_length):
            raise ValueError(
                f"{self.name}: max_decoding_length must be a positive Python int (the buffers are "
                f"preallocated to it), got {max_decoding_length!r}"
            )
        return max_decoding_length

    def _check_inference_arguments(
        self, what: str, start_tokens: Any, end_token: Any, context: Any, initial_state: Any
    ) -> None:
        if not self.ACCEPTS_CONTEXT:
            if context is not None:
                raise ValueError(f"{self.name}: takes no context (prompts); give start_tokens")
            if start_tokens is None or end_token is None:
                raise ValueError(f"{self.name}: {what} needs start_tokens and end_token")
        else:
            if end_token is None:
                raise ValueError(f"{self.name}: {what} needs end_token")
            if (start_tokens is None) == (context is None):
                raise ValueError(f"{self.name}: give exactly one of start_tokens and context")
        if initial_state is not None and not self.ACCEPTS_INITIAL_STATE:
            raise ValueError(f"{self.name}: takes no initial_state (it has no recurrent state)")

    def _logits_size(self) -> int | None:
        if self.vocab_size is not None:
            return self.vocab_size
        return getattr(self.output_layer, "units", None)

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
        if decoding_strategy not in STRATEGIES:
            raise ValueError(
                f"{self.name}: decoding_strategy must be one of {STRATEGIES}, got "
                f"{decoding_strategy!r}"
            )
        self._check_strategy_arguments(decoding_strategy, sampling_probability, straight_through)
        memory, memory_sequence_length = self._check_memory(memory, memory_sequence_length)
        if decoding_strategy == "train_greedy" or decoding_strategy in _FEEDBACK_TRAINING:
            if initial_state is not None and not self.ACCEPTS_INITIAL_STATE:
                raise ValueError(f"{self.name}: takes no initial_state (it has no recurrent state)")
            if context is not None:
                raise ValueError(f"{self.name}: {decoding_strategy} takes no context; give inputs")
            if decoding_strategy != "train_greedy":
                if inputs is None:
                    raise ValueError(f"{self.name}: {decoding_strategy} needs `inputs`")
                return self._feedback_training(
                    inputs, sequence_length, embedding, initial_state, memory,
                    memory_sequence_length, sampling_probability, softmax_temperature, top_k,
                    top_p, seed, training,
                )  # fmt: skip
            self._ensure_built(self._input_size(inputs, embedding, None), memory)
            return self._teacher_forcing(
                inputs, sequence_length, embedding, initial_state, memory,
                memory_sequence_length, training,
            )  # fmt: skip
        self._check_inference_arguments(
            decoding_strategy, start_tokens, end_token, context, initial_state
        )
        max_length = self._max_length(max_decoding_length)
        run = self._start_inference(
            embedding, start_tokens, end_token, context, context_sequence_length, initial_state,
            memory, memory_sequence_length, max_length, training, None,
            feedback=decoding_strategy == "gumbel_softmax",
        )  # fmt: skip
        common = {
            "vocab_size": self._logits_size(),
            "freeze_state": run.freeze_state,
            "start_time": run.start_time,
            "forced_ids": run.forced_ids,
        }
        with self._decoding(run, embedding, training):
            if decoding_strategy == "infer_greedy":
                result = greedy_decode(
                    run.step, run.start_tokens, end_token, max_length, run.state, **common
                )
            elif decoding_strategy == "infer_sample":
                result = sample_decode(
                    run.step, run.start_tokens, end_token, max_length, run.state,
                    softmax_temperature=softmax_temperature, top_k=top_k, top_p=top_p, seed=seed,
                    **common,
                )  # fmt: skip
            else:
                result = gumbel_softmax_decode(
                    run.embedded_step, run.embed(run.start_tokens),
                    self._embedding_matrix(run.embed),
                    run.start_tokens, end_token, max_length, run.state,
                    softmax_temperature=softmax_temperature, straight_through=straight_through,
                    seed=seed, **common,
                )  # fmt: skip
        outputs, final_state = self._inference_outputs(result)
        return outputs, final_state, result.lengths

    # --- the strategies that feed back the decoder's own choices --------------------------------

    def _check_strategy_arguments(
        self, strategy: str, sampling_probability: Any, straight_through: Any
    ) -> None:
        if strategy == "scheduled_sampling":
            if sampling_probability is None:
                raise ValueError(f"{self.name}: scheduled_sampling needs sampling_probability")
        elif sampling_probability is not None:
            raise ValueError(
                f"{self.name}: sampling_probability is for decoding_strategy="
                f"'scheduled_sampling', got it with {strategy!r}"
            )
        if not isinstance(straight_through, bool):
            raise ValueError(f"{self.name}: straight_through must be a bool, got "
                             f"{straight_through!r}")  # fmt: skip
        if straight_through and strategy != "gumbel_softmax":
            raise ValueError(
                f"{self.name}: straight_through is for decoding_strategy='gumbel_softmax', got it "
                f"with {strategy!r}"
            )

    def _embedding_matrix(self, embed: Callable[[Any], Any]) -> Any:
        """``[vocab_size, dim]``: the step input of every token (what soft samples weigh)."""
        vocab_size = self._logits_size()
        if vocab_size is None:
            raise ValueError(f"{self.name}: gumbel_softmax needs a known vocab_size")
        return embed(tf.range(vocab_size))

    def _feedback_training(self, inputs: Any, sequence_length: Any, embedding: Any,
                           initial_state: Any, memory: Any, memory_sequence_length: Any,
                           sampling_probability: Any, softmax_temperature: Any, top_k: int,
                           top_p: float, seed: Any,
                           training: Any) -> tuple[Any, Any, Any]:  # fmt: skip
        """``train_sample`` and ``scheduled_sampling``: the inference machinery (step, state)
        for the ground truth's length, run by
        :func:`~texkit.modules.decoders.feedback_decoding.scheduled_sample_decode`."""
        strategy = "train_sample" if sampling_probability is None else "scheduled_sampling"
        inputs = tf.convert_to_tensor(inputs)
        if inputs.shape.rank not in (2, 3) or (inputs.shape.rank == 2) != inputs.dtype.is_integer:
            raise ValueError(
                f"{self.name}: {strategy} needs inputs of token ids [batch, time] or embeddings "
                f"[batch, time, dim], got shape {tuple(inputs.shape)} ({inputs.dtype.name})"
            )
        max_length = inputs.shape[1]
        if max_length is None:
            raise ValueError(
                f"{self.name}: {strategy} needs inputs with a static time dimension (its buffers "
                "are preallocated to it)"
            )
        if inputs.dtype.is_integer:
            start_tokens = tf.cast(inputs[:, 0], tf.int32)
        else:  # only the batch size matters: the first step is fed inputs[:, 0]
            start_tokens = tf.zeros(tf.shape(inputs)[:1], tf.int32)
        run = self._start_inference(
            embedding, start_tokens, None, None, None, initial_state, memory,
            memory_sequence_length, max_length, training, None, feedback=True,
        )  # fmt: skip
        embed = run.embed
        if inputs.dtype.is_integer:
            inputs = embed(inputs)
        with self._decoding(run, embedding, training):
            result = scheduled_sample_decode(
                run.embedded_step, embed, inputs, sequence_length, run.state,
                sampling_probability=sampling_probability,
                softmax_temperature=softmax_temperature, top_k=top_k, top_p=top_p, seed=seed,
                vocab_size=self._logits_size(), freeze_state=run.freeze_state,
            )  # fmt: skip
        outputs, final_state = self._inference_outputs(result)
        return outputs, final_state, result.lengths

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
            start_tokens: ``[batch]`` int tokens fed first (or ``context`` prompts, for a
                decoder that takes them).
            end_token: the int token that ends a hypothesis.
            max_decoding_length: a Python int (``None``: ``max_decoding_length_infer``).
            embedding: ids -> vectors (a ``WordEmbedder`` or a ``[vocab, dim]`` matrix).
            memory, memory_sequence_length: what the decoder attends to.
            initial_state: a recurrent decoder's state (zeros when ``None``).
            context, context_sequence_length: prompts, as in the call.

        Returns:
            :class:`~texkit.modules.decoders.BeamSearchOutput`: ``ids [batch, beam_width,
            max_decoding_length]``, ``scores [batch, beam_width]``, ``lengths [batch,
            beam_width]``, best first.
        """
        if not _is_positive_int(beam_width):
            raise ValueError(f"{self.name}: beam_width must be a positive int, got {beam_width!r}")
        self._check_inference_arguments(
            "beam_search", start_tokens, end_token, context, initial_state
        )
        memory, memory_sequence_length = self._check_memory(memory, memory_sequence_length)
        max_length = self._max_length(max_decoding_length)
        run = self._start_inference(
            embedding, start_tokens, end_token, context, context_sequence_length, initial_state,
            memory, memory_sequence_length, max_length, False, beam_width,
        )  # fmt: skip
        return beam_search(
            run.step, run.start_tokens, end_token, max_length, run.state, beam_width,
            length_penalty, start_time=run.start_time, forced_ids=run.forced_ids,
            reorder_state=run.reorder_state,
        )  # fmt: skip
