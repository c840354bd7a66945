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

A caller that has already computed the first steps (a decoder that runs a prompt through its
model in one pass, say) passes ``start_time``, the first step the loop computes, and
``forced_ids``: ``[batch, >= start_time]``, the token each row chose at each earlier step. The
loop then starts from ``start_tokens`` at ``start_time``; the earlier steps appear in the outputs
as forced ones (their ids, the :func:`forced_logits`), add nothing to a hypothesis'
log-probability, and must not hold ``end_token``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

__all__ = [
    "Step",
    "BeamSearchOutput",
    "DecodeResult",
    "DecoderOutput",
    "batch_size_of",
    "decode_loop",
    "filter_top_k",
    "filter_top_p",
    "forced_logits",
    "greedy_choice",
    "greedy_decode",
    "one_hot_samples",
    "sample_choice",
    "sample_decode",
    "where_batch",
]

Step = Callable[[Any, Any, Any], tuple[Any, Any]]

NEG_INF = float("-inf")

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


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_length(max_decoding_length: Any) -> int:
    if not is_int(max_decoding_length):
        raise ValueError(
            "max_decoding_length must be a Python int (buffers are preallocated to it), got "
            f"{max_decoding_length!r}"
        )
    if max_decoding_length < 1:
        raise ValueError(f"max_decoding_length must be positive, got {max_decoding_length}")
    return int(max_decoding_length)


def check_temperature(softmax_temperature: Any) -> None:
    """A temperature must be positive; a tensor is checked when its value is static."""
    value = softmax_temperature
    if isinstance(value, (tf.Tensor, tf.Variable)):
        value = tf.get_static_value(value)
        if value is None:
            return
    if not (isinstance(value, numbers.Real) or hasattr(value, "dtype")) or not value > 0:
        raise ValueError(f"softmax_temperature must be positive, got {softmax_temperature!r}")


def seed_tensor(seed: Any) -> Any:
    """A ``[2]`` int32 seed for the stateless samplers from an int, a pair, or ``None``."""
    if seed is None:
        return tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)
    if is_int(seed):
        if not 0 <= seed < 2**31:
            raise ValueError(f"seed must be in [0, 2**31), got {seed}")
        return tf.constant([int(seed), 0], tf.int32)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int32)
    if seed.shape.rank != 1 or seed.shape[0] != 2:
        raise ValueError(f"seed must be an int or a [2] int tensor, got shape {seed.shape}")
    return seed


def batch_size_of(tokens: Any) -> Any:
    """The static batch size when known (so loop shapes stay static), else the dynamic one."""
    return tokens.shape[0] if tokens.shape[0] is not None else tf.shape(tokens)[0]


def where_batch(condition: Any, x: Any, y: Any) -> Any:
    """``where`` with a ``[batch]`` condition broadcast over the other axes of ``x`` and ``y``."""
    condition = tf.reshape(condition, [-1] + [1] * (len(x.shape) - 1))
    return tf.where(condition, x, y)


def _check_top_k(top_k: Any) -> None:
    if not is_int(top_k) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative int, got {top_k!r}")


def _check_top_p(top_p: Any) -> None:
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")


def filter_top_k(logits: Any, top_k: int) -> Any:
    """``logits`` with all but the ``top_k`` largest of each row set to ``-inf`` (0: no filter).

    Ties with the ``top_k``-th largest value are kept.
    """
    _check_top_k(top_k)
    if top_k == 0:
        return logits
    top_k = min(int(top_k), logits.shape[-1] or int(top_k))
    kth = tf.math.top_k(logits, k=top_k).values[..., -1:]
    return tf.where(logits < kth, tf.cast(NEG_INF, logits.dtype), logits)


def filter_top_p(logits: Any, top_p: float) -> Any:
    """Nucleus filtering (Holtzman et al., 2020): keeps the most likely tokens up to the first
    whose cumulative probability mass reaches ``top_p``, sets the other logits to ``-inf``.

    A token is kept when the mass of the tokens more likely than it is below ``top_p``, so the
    most likely token always stays and, without ties, the kept set is the smallest one whose mass
    reaches ``top_p``. Tokens tied with the last kept one are kept too, and the masses are summed
    in float32, so at an exact boundary rounding may keep one more token. ``top_p >= 1`` keeps
    everything.
    """
    _check_top_p(top_p)
    if top_p >= 1.0:
        return logits
    logits = tf.cast(logits, tf.float32)
    ordered = tf.sort(logits, axis=-1, direction="DESCENDING")
    mass_before = tf.math.cumsum(tf.nn.softmax(ordered, axis=-1), axis=-1, exclusive=True)
    kept = tf.where(mass_before < top_p, ordered, tf.cast(float("inf"), tf.float32))
    threshold = tf.reduce_min(kept, axis=-1, keepdims=True)
    return tf.where(logits < threshold, NEG_INF, logits)


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
    end_token = tf.cast(end_token, tf.int32)
    batch = batch_size_of(start_tokens)
    rows = start_tokens.shape[0]

    def body(time, fed, finished, lengths, buffers, state):
        logits, new_state = step(fed, time, state)
        logits = tf.cast(logits, tf.float32)
        if feed is None:
            chosen, soft = choose(logits, time), None
        else:
            chosen, soft = choose(logits, time)
        chosen = tf.where(finished, end_token, tf.cast(chosen, tf.int32))
        written = {
            "ids": buffers["ids"].write(time, chosen),
            "logits": buffers["logits"].write(
                time, where_batch(finished, tf.zeros_like(logits), logits)
            ),
        }
        if soft is not None:
            soft = tf.cast(soft, tf.float32)
            written["soft"] = buffers["soft"].write(
                time, where_batch(finished, tf.zeros_like(soft), soft)
            )
        if freeze_state:
            new_state = tf.nest.map_structure(
                lambda new, old: where_batch(finished, old, new), new_state, state
            )
        lengths = tf.where(finished, lengths, time + 1)
        finished = tf.logical_or(finished, tf.equal(chosen, end_token))
        fed = chosen if feed is None else tf.cast(feed(chosen, soft), fed.dtype)
        return time + 1, fed, finished, lengths, written, new_state

    # TensorArrays of max_length steps: written in place, both by TensorFlow's kernels and by XLA
    # (a tensor updated with a scatter would be copied whole at every step without XLA). Steps
    # never written (after every sequence has ended) stack as zeros.
    buffers = {
        "ids": tf.TensorArray(tf.int32, size=max_length, element_shape=tf.TensorShape([rows])),
        "logits": tf.TensorArray(
            tf.float32, size=max_length, element_shape=tf.TensorShape([rows, vocab_size])
        ),
    }
    if feed is not None:
        buffers["soft"] = tf.TensorArray(
            tf.float32, size=max_length, element_shape=tf.TensorShape([rows, vocab_size])
        )
    loop_vars = (
        start_time,
        start_tokens if feed is None else start_inputs,
        tf.zeros([batch], tf.bool),
        tf.fill([batch], start_time),
        buffers,
        initial_state,
    )
    steps, _, _, lengths, buffers, state = tf.while_loop(
        lambda time, _fed, finished, *_: tf.logical_and(
            time < max_length, tf.logical_not(tf.reduce_all(finished))
        ),
        body,
        loop_vars,
        maximum_iterations=max_length,
    )
    written = tf.range(max_length)[None, :] < steps
    sample_id = tf.where(written, tf.transpose(buffers["ids"].stack()), end_token)
    logits = tf.transpose(buffers["logits"].stack(), (1, 0, 2))
    depth = tf.shape(logits)[-1] if vocab_size is None else vocab_size
    if feed is not None:
        soft = tf.transpose(buffers["soft"].stack(), (1, 0, 2))
    if forced_ids is not None:
        sample_id = with_forced_steps(sample_id, forced_ids, start_time, lambda ids: ids)
        logits = with_forced_steps(
            logits, forced_ids, start_time, lambda ids: forced_logits(ids, depth)
        )
        if feed is not None:
            soft = with_forced_steps(
                soft, forced_ids, start_time, lambda ids: tf.one_hot(ids, depth)
            )
    if feed is None:
        soft = one_hot_samples(sample_id, depth, tf.range(max_length)[None, :] < lengths[:, None])
    return DecodeResult(
        sample_id=sample_id, logits=logits, lengths=lengths, final_state=state, soft_sample=soft
    )


def greedy_choice(logits: Any, time: Any = None) -> Any:
    """The most likely token of each row of ``logits``."""
    return tf.argmax(logits, axis=-1, output_type=tf.int32)


def sample_choice(
    softmax_temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, seed: Any = None
) -> Callable[[Any, Any], Any]:
    """``choose(logits, time) -> ids``: a token drawn from ``softmax(logits /
    softmax_temperature)`` restricted to the ``top_k`` and the top-``top_p`` tokens, with a seed
    folded with ``time`` (see :func:`sample_decode`). Checks the arguments at once."""
    check_temperature(softmax_temperature)
    _check_top_k(top_k)  # before tracing the loop
    _check_top_p(top_p)
    seed = seed_tensor(seed)

    def choose(logits: Any, time: Any) -> Any:
        logits = filter_top_p(filter_top_k(logits / softmax_temperature, top_k), top_p)
        step_seed = tf.random.experimental.stateless_fold_in(seed, time)
        return tf.random.stateless_categorical(logits, 1, step_seed, dtype=tf.int32)[:, 0]

    return choose


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
        end_token: the int token that ends a sequence.
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
        step,
        greedy_choice,
        start_tokens,
        end_token,
        max_decoding_length,
        initial_state,
        vocab_size,
        freeze_state,
        start_time,
        forced_ids,
    )


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
        step,
        choose,
        start_tokens,
        end_token,
        max_decoding_length,
        initial_state,
        vocab_size,
        freeze_state,
        start_time,
        forced_ids,
    )
