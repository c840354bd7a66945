"""The decoding strategies: one function and one row of :data:`STRATEGY_TABLE` each.

A strategy is ``run(decoder, request) -> (outputs, final_state, lengths)``, where ``request`` is
the call's checked :class:`~texkit.modules.decoders.decode_request.DecodeRequest`. It asks the
decoder for what it needs through the decoder's hooks (``_teacher_forcing(request)``, or
``_start_inference(request)`` for an :class:`~texkit.modules.decoders.decoder_base.Inference`)
and runs one of the algorithms of :mod:`texkit.modules.decoders.decoding` and
:mod:`texkit.modules.decoders.feedback_decoding` over it. Its row says, as data, which arguments
it needs, so that :class:`~texkit.modules.decoders.DecoderBase` checks every call from the table:

* ``source``: ``"inputs"`` (it decodes over the ground truth ``inputs``; prompts and, for a
  decoder without recurrent state, ``initial_state`` are refused) or ``"start"`` (it decodes from
  ``start_tokens`` or ``context`` prompts until ``end_token`` or ``max_length``);
* ``needs``: the request fields it cannot do without;
* ``options``: the strategy-only arguments (:data:`OPTIONS`) it takes; the others refuse them.

A new strategy is one function and one row: for instance a greedy variant that feeds back the
top-1 sample is::

    def infer_top1(decoder, request):
        return run_inference(decoder, request, lambda run, loop: sample_decode(
            run.step, run.start_tokens, top_k=1, seed=request.seed, **loop))

    STRATEGY_TABLE["infer_top1"] = Strategy(infer_top1, "start")

after which ``decoder(decoding_strategy="infer_top1", start_tokens=..., end_token=...)`` runs it
on every decoder (with the argument checks of its row). ``decoder_base.STRATEGIES`` names the
built-in strategies only; the table is what the call reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoding import DecodeResult, greedy_decode, sample_decode
from texkit.modules.decoders.feedback_decoding import (
    gumbel_softmax_decode,
    scheduled_sample_decode,
)

__all__ = ["OPTIONS", "STRATEGY_TABLE", "Strategy", "finish", "run_inference"]

# The strategy-only arguments and the value that means "not given".
OPTIONS = {"sampling_probability": None, "straight_through": False}


class Strategy(NamedTuple):
    """One row of the strategy table (see the module docstring)."""

    run: Callable[[Any, DecodeRequest], tuple[Any, Any, Any]]
    source: str
    needs: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


def finish(decoder: Any, result: DecodeResult) -> tuple[Any, Any, Any]:
    """``(outputs, final_state, lengths)`` of a finished decoding, through the decoder's hook."""
    outputs, final_state = decoder._inference_outputs(result)
    return outputs, final_state, result.lengths


def run_inference(
    decoder: Any,
    request: DecodeRequest,
    algorithm: Callable[[Any, dict], DecodeResult],
    feedback: bool = False,
) -> tuple[Any, Any, Any]:
    """Runs ``algorithm(run, loop)`` over the decoder's
    :class:`~texkit.modules.decoders.decoder_base.Inference` ``run`` (the one that feeds back
    vectors when ``feedback``), where ``loop`` holds the keyword arguments every decoding loop of
    :mod:`~texkit.modules.decoders.decoding` takes (end token, length, state, start)."""
    run = decoder._start_inference(request, feedback=feedback)
    loop = {
        "end_token": request.end_token,
        "max_decoding_length": request.max_length,
        "initial_state": run.state,
        "vocab_size": decoder._logits_size(),
        "freeze_state": run.freeze_state,
        "start_time": run.start_time,
        "forced_ids": run.forced_ids,
    }
    with decoder._decoding(run, request):
        return finish(decoder, algorithm(run, loop))


def teacher_forcing(decoder: Any, request: DecodeRequest) -> tuple[Any, Any, Any]:
    """``train_greedy``: the decoder's own ``_teacher_forcing``, once it is built."""
    size = decoder._input_size(request.inputs, request.embedding, None)
    decoder._ensure_built(size, request.memory)
    return decoder._teacher_forcing(request)


def feedback_training(decoder: Any, request: DecodeRequest) -> tuple[Any, Any, Any]:
    """``train_sample`` and ``scheduled_sampling``: the feedback :class:`Inference` for the ground
    truth's length, run by
    :func:`~texkit.modules.decoders.feedback_decoding.scheduled_sample_decode`."""
    inputs = tf.convert_to_tensor(request.inputs)
    where = f"{decoder.name}: {request.strategy} needs"
    if inputs.shape.rank not in (2, 3) or (inputs.shape.rank == 2) != inputs.dtype.is_integer:
        raise ValueError(
            f"{where} inputs of token ids [batch, time] or embeddings [batch, time, dim], got "
            f"shape {tuple(inputs.shape)} ({inputs.dtype.name})"
        )
    if inputs.shape[1] is None:
        raise ValueError(
            f"{where} inputs with a static time dimension (its buffers are preallocated to it)"
        )
    if inputs.dtype.is_integer:
        start_tokens = tf.cast(inputs[:, 0], tf.int32)
    else:  # only the batch size matters: the first step is fed inputs[:, 0]
        start_tokens = tf.zeros(tf.shape(inputs)[:1], tf.int32)
    request = request._replace(start_tokens=start_tokens, max_length=inputs.shape[1])
    run = decoder._start_inference(request, feedback=True)
    if inputs.dtype.is_integer:
        inputs = run.embed(inputs)
    r = request
    with decoder._decoding(run, request):
        result = scheduled_sample_decode(
            run.embedded_step, run.embed, inputs, r.sequence_length, run.state,
            sampling_probability=r.sampling_probability,
            softmax_temperature=r.softmax_temperature, top_k=r.top_k, top_p=r.top_p, seed=r.seed,
            vocab_size=decoder._logits_size(), freeze_state=run.freeze_state,
        )  # fmt: skip
    return finish(decoder, result)


def infer_greedy(decoder: Any, request: DecodeRequest) -> tuple[Any, Any, Any]:
    """``infer_greedy``: :func:`~texkit.modules.decoders.greedy_decode`."""
    return run_inference(
        decoder, request, lambda run, loop: greedy_decode(run.step, run.start_tokens, **loop)
    )


def infer_sample(decoder: Any, request: DecodeRequest) -> tuple[Any, Any, Any]:
    """``infer_sample``: :func:`~texkit.modules.decoders.sample_decode`."""
    r = request

    def algorithm(run: Any, loop: dict) -> DecodeResult:
        return sample_decode(
            run.step, run.start_tokens, softmax_temperature=r.softmax_temperature,
            top_k=r.top_k, top_p=r.top_p, seed=r.seed, **loop,
        )  # fmt: skip

    return run_inference(decoder, request, algorithm)


def gumbel_softmax(decoder: Any, request: DecodeRequest) -> tuple[Any, Any, Any]:
    """``gumbel_softmax``: :func:`~texkit.modules.decoders.gumbel_softmax_decode` over the
    feedback :class:`Inference`, feeding soft embeddings."""
    r = request

    def algorithm(run: Any, loop: dict) -> DecodeResult:
        return gumbel_softmax_decode(
            run.embedded_step, run.embed(run.start_tokens), decoder._embedding_matrix(run.embed),
            run.start_tokens, softmax_temperature=r.softmax_temperature,
            straight_through=r.straight_through, seed=r.seed, **loop,
        )  # fmt: skip

    return run_inference(decoder, request, algorithm, feedback=True)


STRATEGY_TABLE: dict[str, Strategy] = {
    "train_greedy": Strategy(teacher_forcing, "inputs"),
    "train_sample": Strategy(feedback_training, "inputs", needs=("inputs",)),
    "scheduled_sampling": Strategy(
        feedback_training, "inputs", ("sampling_probability", "inputs"), ("sampling_probability",)
    ),
    "infer_greedy": Strategy(infer_greedy, "start"),
    "infer_sample": Strategy(infer_sample, "start"),
    "gumbel_softmax": Strategy(gumbel_softmax, "start", options=("straight_through",)),
}
