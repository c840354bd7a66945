"""Decoding algorithms, written once over a step function.

A decoder supplies ``step(token_ids, time, state) -> (logits, state)``:

* ``token_ids``: ``[batch]`` int32, the tokens chosen at the previous step (the start tokens at
  ``time == 0``);
* ``time``: a scalar int32 tensor, the step being computed (0-based);
* ``state``: any nested structure of tensors whose first axis is the batch (beam search tiles
  and, unless told otherwise by ``reorder_state``, reorders every tensor along that axis, so
  constant parts such as an attention memory may travel in the state too); the structure and
  shapes must not change between steps;
* ``logits``: ``[batch, vocab_size]`` scores of the next token.

Every algorithm preallocates its output buffers to ``max_decoding_length`` (a Python int) and runs
in one ``tf.while_loop`` that stops early once every sequence has ended, so it compiles with
``tf.function(jit_compile=True)``. Sequences end with ``end_token``, which counts in their length;
a sequence that never emits it stops at ``max_decoding_length``. Positions after a sequence's end
hold ``end_token`` (ids) and zeros (logits), and its state stays as it was at its own last step.
``end_token`` may be several ids (a list or a 1-D tensor, :func:`end_ids`): a sequence ends at the
first of them it emits, and the first of them pads. ``end_token=None``: no end token, every
sequence runs ``max_decoding_length`` steps.

A caller that has already computed the first steps (a decoder that runs a prompt through its
model in one pass, say) passes ``start_time``, the first step the loop computes, and
``forced_ids``: ``[batch, >= start_time]``, the token each row chose at each earlier step. The
loop then starts from ``start_tokens`` at ``start_time``; the earlier steps appear in the outputs
as forced ones (their ids, the :func:`forced_logits`), add nothing to a hypothesis'
log-probability, and must not hold ``end_token``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

# filter_top_k and filter_top_p live in texkit.modules.decoders.sampling; imported here too, so
# that their old import path still works.
from texkit.modules.decoders.sampling import (  # noqa: F401
    filter_top_k,
    filter_top_p,
    is_int,
    sample_choice,
)

__all__ = [
    "Step",
    "BeamSearchOutput",
    "DecodeResult",
    "DecoderOutput",
    "batch_size_of",
    "check_end_token",
    "decode_loop",
    "end_ids",
    "forced_logits",
    "greedy_choice",
    "greedy_decode",
    "is_end",
    "one_hot_samples",
    "sample_decode",
    "where_batch",
]

Step = Callable[[Any, Any, Any], tuple[Any, Any]]

# The logit of every token but the forced one at a forced step: exp() underflows to exactly 0, so
# the forced token has probability 1 and log-probability 0 under every algorithm.
FORCED_OUT = -1e9


class DecoderOutput(NamedTuple):
    """What decoders return per step, under every decoding strategy.

    Attributes:
        logits: ``[batch, time, vocab_size]`` float32.
        sample_id: ``[batch, time]`` int32, the token chosen at each step (the argmax in
            ``train_greedy``; ``-1`` where ``scheduled_sampling`` fed the ground truth).
        soft_sample: ``[batch, time, vocab_size]`` float32, the chosen token as a distribution
            over the vocabulary: the Gumbel-softmax sample under ``gumbel_softmax`` (with
            ``straight_through``, the one-hot of ``sample_id`` whose gradient is the soft
            sample's), the one-hot of ``sample_id`` under every other strategy. Zeros where
            ``sample_id`` is ``-1`` and past each sequence's end (its length).
            Always present, so the output's structure never depends on the strategy; under
            ``tf.function`` it costs nothing when unused (the one-hot is pruned).
    """

    logits: Any
    sample_id: Any
    soft_sample: Any


class DecodeResult(NamedTuple):
    """What greedy decoding and sampling return.

    Attributes:
        sample_id: ``[batch, max_decoding_length]`` int32 tokens; ``end_token`` after each end.
        logits: ``[batch, max_decoding_length, vocab_size]`` float32 step logits (as the step
            function gave them, before temperature and filtering); zeros after each end.
        lengths: ``[batch]`` int32 decoded lengths, the end token included.
        final_state: the state after each sequence's own last step.
        soft_sample: ``[batch, max_decoding_length, vocab_size]`` float32: the one-hot of
            ``sample_id``, or the soft samples of Gumbel-softmax decoding; zeros after each end.
    """

    sample_id: Any
    logits: Any
    lengths: Any
    final_state: Any
    soft_sample: Any


class BeamSearchOutput(NamedTuple):
    """What beam search returns, best hypothesis first.

    Attributes:
        ids: ``[batch, beam_width, max_decoding_length]`` int32; ``end_token`` after each end.
        scores: ``[batch, beam_width]`` float32 log-probabilities divided by the length penalty;
            ``-inf`` marks an empty slot (only when fewer hypotheses than beams exist, e.g. a
            vocabulary smaller than the beam).
        lengths: ``[batch, beam_width]`` int32, the end token included (0 for an empty slot).
    """

    ids: Any
    scores: Any
    lengths: Any


def check_length(max_decoding_length: Any) -> int:
    if not is_int(max_decoding_length):
        raise ValueError(
            "max_decoding_length must be a Python int (buffers are preallocated to it), got "
            f"{max_decoding_length!r}"
        )
    if max_decoding_length < 1:
        raise ValueError(f"max_decoding_length must be positive, got {max_decoding_length}")
    return int(max_decoding_length)


def check_end_token(end_token: Any, vocab_size: int | None = None, where: str = "") -> None:
    """Checks ``end_token``: one id (an int or a scalar int tensor) or several (a non-empty
    list or tuple of ints, or a 1-D int tensor); ids must be in ``[0, vocab_size)`` (a tensor's
    when its value is static). ``where`` prefixes the messages."""
    name = f"{where}end_token"
    if end_token is None:  # no end token: every sequence runs all its steps
        return
    if isinstance(end_token, (list, tuple)):
        if not end_token or not all(is_int(i) for i in end_token):
            raise ValueError(f"{name} must be an int id or a non-empty list of int ids, got "
                             f"{end_token!r}")  # fmt: skip
        values = list(end_token)
    elif is_int(end_token):
        values = [end_token]
    else:
        try:
            tensor = tf.convert_to_tensor(end_token)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name} must be an int id or a list of int ids, got "
                             f"{end_token!r}") from error  # fmt: skip
        if (
            not tensor.dtype.is_integer
            or tensor.shape.rank not in (0, 1)
            or (tensor.shape.rank == 1 and tensor.shape[0] == 0)
        ):
            raise ValueError(
                f"{name} must be an int id, a non-empty list of int ids or a scalar or 1-D int "
                f"tensor, got shape {tuple(tensor.shape)} ({tensor.dtype.name})"
            )
        static = tf.get_static_value(tensor)
        values = [] if static is None else [int(i) for i in static.reshape(-1)]
    for i in values:
        if i < 0 or (vocab_size is not None and i >= vocab_size):
            raise ValueError(f"{name} ids must be in [0, vocab_size={vocab_size}), got {i}")


def end_ids(end_token: Any) -> Any:
    """``end_token`` (one id or several, see :func:`check_end_token`) as ``[n]`` int32 ids; the
    first, ``end_ids(...)[0]``, is the one that pads finished sequences."""
    if end_token is None:  # no end token: an id no token has
        return tf.constant([-1], tf.int32)
    ids = tf.cast(tf.convert_to_tensor(end_token), tf.int32)
    if ids.shape.rank not in (0, 1):
        raise ValueError(f"end_token must be a scalar or 1-D, got shape {tuple(ids.shape)}")
    return tf.reshape(ids, [-1])


def is_end(ids: Any, ends: Any) -> Any:
    """Whether each of ``ids`` (any shape) is one of the end ids ``ends [n]``."""
    return tf.reduce_any(tf.equal(ids[..., None], ends), axis=-1)


def batch_size_of(tokens: Any) -> Any:
    """The static batch size when known (so loop shapes stay static), else the dynamic one."""
    return tokens.shape[0] if tokens.shape[0] is not None else tf.shape(tokens)[0]


def where_batch(condition: Any, x: Any, y: Any) -> Any:
    """``where`` with a ``[batch]`` condition broadcast over the other axes of ``x`` and ``y``."""
    condition = tf.reshape(condition, [-1] + [1] * (len(x.shape) - 1))
    return tf.where(condition, x, y)


def select_rows(condition: Any, x: Any, y: Any) -> Any:
    """:func:`where_batch` over every tensor of the structures ``x`` and ``y`` (a loop state)."""
    return tf.nest.map_structure(lambda a, b: where_batch(condition, a, b), x, y)


def zero_where(condition: Any, x: Any) -> Any:
    """``x`` with the rows where ``condition`` (``[batch]``) holds set to zeros."""
    return where_batch(condition, tf.zeros_like(x), x)


def forced_logits(tokens: Any, vocab_size: Any) -> Any:
    """The logits of a step whose token is forced to ``tokens`` (any int shape): 0 for it,
    :data:`FORCED_OUT` (``-1e9``) for every other; float32, ``[*tokens.shape, vocab_size]``."""
    one_hot = tf.one_hot(tokens, vocab_size, on_value=True, off_value=False)
    return tf.where(one_hot, 0.0, FORCED_OUT)


def check_start(start_time: Any, forced_ids: Any, max_length: int) -> tuple[Any, Any]:
    """``start_time`` as an int32 scalar and ``forced_ids`` padded or cut to ``max_length``."""
    if forced_ids is None:
        if not (is_int(start_time) and start_time == 0):
            raise ValueError("start_time needs the forced_ids of the steps before it")
        return tf.constant(0), None
    if is_int(start_time) and not 0 <= start_time < max_length:
        raise ValueError(
            f"start_time must be in [0, max_decoding_length={max_length}), got {start_time}"
        )
    forced_ids = tf.cast(tf.convert_to_tensor(forced_ids), tf.int32)
    if forced_ids.shape.rank != 2:
        raise ValueError(f"forced_ids must be [batch, time], got shape {forced_ids.shape}")
    return tf.cast(start_time, tf.int32), forced_ids[:, :max_length]


def with_forced_steps(values: Any, forced: Any, start_time: Any, fill: Callable) -> Any:
    """``values [batch, max_length, ...]`` with the steps before ``start_time`` replaced by
    ``fill(forced)``, over the width of ``forced [batch, width]`` only."""
    width = tf.shape(forced)[1]
    before = tf.range(width)[None, :] < start_time
    head = values[:, :width]
    before = tf.reshape(before, [1, -1] + [1] * (len(head.shape) - 2))
    return tf.concat([tf.where(before, fill(forced), head), values[:, width:]], axis=1)


def one_hot_samples(sample_id: Any, vocab_size: Any, valid: Any) -> Any:
    """``soft_sample`` for hard choices: the float32 one-hot of ``sample_id [batch, time]``
    where ``valid`` (``[batch, time]`` bool), zeros elsewhere (and where an id is ``-1``)."""
    one_hot = tf.one_hot(sample_id, vocab_size, dtype=tf.float32)
    return tf.where(valid[:, :, None], one_hot, 0.0)


def full_lengths(sequence_length: Any, inputs: Any) -> Any:
    """``sequence_length`` as int32, or every row's full length ``inputs.shape[1]`` if ``None``."""
    if sequence_length is None:
        return tf.fill([batch_size_of(inputs)], tf.shape(inputs)[1])
    return tf.cast(sequence_length, tf.int32)


def teacher_forced_outputs(logits: Any, sequence_length: Any) -> tuple[Any, Any, Any]:
    """``(logits, sample_id, soft_sample)`` of a teacher-forced pass over ``logits [batch, time,
    vocab]``: zeros past each row's ``sequence_length``, the argmax as ``sample_id``."""
    valid = tf.sequence_mask(sequence_length, tf.shape(logits)[1])
    logits = tf.where(valid[:, :, None], logits, 0.0)
    sample_id = tf.where(valid, tf.argmax(logits, axis=-1, output_type=tf.int32), 0)
    return logits, sample_id, one_hot_samples(sample_id, tf.shape(logits)[-1], valid)


def step_buffers(rows: int | None, vocab_size: int | None, size: int, soft: bool = False) -> dict:
    """The loops' output buffers: TensorArrays of ``size`` steps of ``ids [rows]`` and ``logits
    [rows, vocab_size]`` (and ``soft``, like the logits). Written in place, both by TensorFlow's
    kernels and by XLA (a tensor updated with a scatter would be copied whole at every step
    without XLA); steps never written stack as zeros."""
    per_step = tf.TensorShape([rows, vocab_size])
    buffers = {
        "ids": tf.TensorArray(tf.int32, size=size, element_shape=tf.TensorShape([rows])),
        "logits": tf.TensorArray(tf.float32, size=size, element_shape=per_step),
    }
    if soft:
        buffers["soft"] = tf.TensorArray(tf.float32, size=size, element_shape=per_step)
    return buffers


def stacked(buffers: dict) -> dict:
    """The buffers of :func:`step_buffers` as batch-major ``[rows, steps, ...]`` tensors."""
    return {
        name: tf.transpose(array.stack(), (1, 0, 2) if name != "ids" else (1, 0))
        for name, array in buffers.items()
    }


def decode_loop(
    step: Step,
    choose: Callable[[Any, Any], Any],
    start_tokens: Any,
    end_token: Any,
    max_decoding_length: int,
    initial_state: Any,
    vocab_size: int | None,
    freeze_state: bool,
    start_time: Any,
    forced_ids: Any,
    feed: Callable[[Any, Any], Any] | None = None,
    start_inputs: Any = None,
) -> DecodeResult:
    """The loop shared by greedy decoding, sampling and Gumbel-softmax decoding.

    ``choose(logits, time) -> ids``; or, with ``feed``, ``choose(logits, time) -> (ids, soft)``
    where ``soft [batch, vocab]`` is recorded as the step's ``soft_sample``, and the step is fed
    vectors instead of ids: ``start_inputs`` (the embedded ``start_tokens``) first, then
    ``feed(ids, soft)``.
    """
    max_length = check_length(max_decoding_length)
    start_time, forced_ids = check_start(start_time, forced_ids, max_length)
    start_tokens = tf.cast(tf.convert_to_tensor(start_tokens), tf.int32)
    ends = end_ids(end_token)
    batch = batch_size_of(start_tokens)

    def body(time, fed, finished, lengths, buffers, state):
        logits, new_state = step(fed, time, state)
        logits = tf.cast(logits, tf.float32)
        chosen, soft = choose(logits, time) if feed is not None else (choose(logits, time), None)
        chosen = tf.where(finished, ends[0], tf.cast(chosen, tf.int32))
        records = {"ids": chosen, "logits": zero_where(finished, logits)}
        if soft is not None:
            records["soft"] = zero_where(finished, tf.cast(soft, tf.float32))
        written = {name: buffers[name].write(time, value) for name, value in records.items()}
        if freeze_state:
            new_state = select_rows(finished, state, new_state)
        lengths = tf.where(finished, lengths, time + 1)
        finished = tf.logical_or(finished, is_end(chosen, ends))
        fed = chosen if feed is None else tf.cast(feed(chosen, soft), fed.dtype)
        return time + 1, fed, finished, lengths, written, new_state

    fed = start_tokens if feed is None else start_inputs
    buffers = step_buffers(start_tokens.shape[0], vocab_size, max_length, soft=feed is not None)
    loop_vars = (start_time, fed, tf.zeros([batch], tf.bool), tf.fill([batch], start_time),
                 buffers, initial_state)  # fmt: skip
    steps, _, _, lengths, buffers, state = tf.while_loop(
        lambda time, _fed, finished, *_: tf.logical_and(
            time < max_length, tf.logical_not(tf.reduce_all(finished))
        ),
        body,
        loop_vars,
        maximum_iterations=max_length,
    )
    out = stacked(buffers)
    written = tf.range(max_length)[None, :] < steps
    out["ids"] = tf.where(written, out["ids"], ends[0])
    depth = tf.shape(out["logits"])[-1] if vocab_size is None else vocab_size
    if forced_ids is not None:
        fills = {"ids": lambda ids: ids, "logits": lambda ids: forced_logits(ids, depth),
                 "soft": lambda ids: tf.one_hot(ids, depth)}  # fmt: skip
        out = {
            name: with_forced_steps(value, forced_ids, start_time, fills[name])
            for name, value in out.items()
        }
    if feed is None:
        valid = tf.range(max_length)[None, :] < lengths[:, None]
        out["soft"] = one_hot_samples(out["ids"], depth, valid)
    return DecodeResult(out["ids"], out["logits"], lengths, state, out["soft"])


def greedy_choice(logits: Any, time: Any = None) -> Any:
    """The most likely token of each row of ``logits``."""
    return tf.argmax(logits, axis=-1, output_type=tf.int32)


def greedy_decode(
    step: Step,
    start_tokens: Any,
    end_token: Any,
    max_decoding_length: int,
    initial_state: Any,
    vocab_size: int | None = None,
    freeze_state: bool = True,
    start_time: Any = 0,
    forced_ids: Any = None,
) -> DecodeResult:
    """Greedy decoding: the most likely token at every step.

    Args:
        step: ``step(token_ids, time, state) -> (logits, state)`` (see the module docstring).
        start_tokens: ``[batch]`` int tokens fed at the first step.
        end_token: the int token that ends a sequence, or several (a list of ints or a 1-D
            int tensor): a sequence ends at the first of them it emits.
        max_decoding_length: a Python int, the most steps decoded.
        initial_state: the step function's state before the first step.
        vocab_size: the size of the logits (a Python int), when known: it makes the logits'
            shape static.
        freeze_state: keep each sequence's state as it was when the sequence ended, so that
            ``final_state`` is every sequence's own last state (default). A caller that discards
            the final state passes ``False``: a state as large as a Transformer's key/value
            caches is then not selected row by row at every step (which under XLA would also
            turn the caches' in-place writes into copies).
        start_time: the first step computed (a scalar int or int tensor; default 0), with
            ``forced_ids``, ``[batch, >= start_time]`` int, the tokens of the steps before it (see
            the module docstring); ``start_tokens`` are then fed at ``start_time``.
    """
    return decode_loop(
        step, greedy_choice, start_tokens, end_token, max_decoding_length, initial_state,
        vocab_size, freeze_state, start_time, forced_ids,
    )  # fmt: skip


def sample_decode(
    step: Step,
    start_tokens: Any,
    end_token: Any,
    max_decoding_length: int,
    initial_state: Any,
    softmax_temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: Any = None,
    vocab_size: int | None = None,
    freeze_state: bool = True,
    start_time: Any = 0,
    forced_ids: Any = None,
) -> DecodeResult:
    """Sampling: each token drawn from ``softmax(logits / softmax_temperature)``, optionally
    restricted to the ``top_k`` most likely tokens and then to the top-``top_p`` nucleus.

    Args:
        step, start_tokens, end_token, max_decoding_length, initial_state, vocab_size:
            as in :func:`greedy_decode`.
        freeze_state, start_time, forced_ids: as in :func:`greedy_decode`.
        softmax_temperature: positive; below 1 sharpens, above 1 flattens the distribution.
        top_k: keep the ``top_k`` most likely tokens (0: all).
        top_p: keep the smallest set of tokens whose mass reaches ``top_p`` (1: all).
        seed: an int, or a ``[2]`` int tensor, for reproducible draws (stateless sampling: the
            same seed gives the same tokens on the same device and compiler; XLA draws other
            numbers than the TensorFlow kernels); ``None`` draws a new seed.
    """
    choose = sample_choice(softmax_temperature, top_k, top_p, seed)
    return decode_loop(
        step, choose, start_tokens, end_token, max_decoding_length, initial_state, vocab_size,
        freeze_state, start_time, forced_ids,
    )  # fmt: skip
