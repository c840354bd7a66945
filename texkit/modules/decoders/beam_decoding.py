"""Beam search over a decoder's step function (the step contract of
:mod:`texkit.modules.decoders.decoding`), with the GNMT length penalty and a set of finished
hypotheses.

At every step each of the ``beam_width`` live hypotheses is extended by every token, and the
``2 * beam_width`` most likely extensions are considered, so that ``beam_width`` of them go on
even when others end (Hugging Face's rule, as in ``generate``). Those among the ``beam_width``
most likely that end (with ``end_token``, or by reaching ``max_decoding_length``) enter the
finished set, scored ``log P(y) / ((5 + |y|) / 6) ** length_penalty`` (Wu et al., 2016), which
keeps the ``beam_width`` best finished hypotheses; the ``beam_width`` most likely candidates that
do not end stay live. (tensor2tensor and Texar let any of the ``2 * beam_width`` end.) With
``beam_width=1`` and ``length_penalty=0`` this is greedy decoding (up to float rounding between
near-tied tokens, which beam search ranks by summed log-probabilities). The search stops when no
live hypothesis is left, or when the set is full and no live hypothesis can still beat its worst
member (live log-probabilities only fall, and with ``length_penalty >= 0`` the penalty is at most
that of ``max_decoding_length``). The vocabulary must have at least 2 tokens. An ``end_token`` of
several ids ends a hypothesis at any of them; the first pads the ids after an end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from texkit.modules.decoders.decoding import (
    BeamSearchOutput,
    Step,
    batch_size_of,
    check_length,
    check_start,
    end_ids,
    is_end,
    with_forced_steps,
)
from texkit.modules.decoders.sampling import NEG_INF, is_int

__all__ = ["beam_search", "gather_rows", "gnmt_length_penalty", "tile_batch"]


def gnmt_length_penalty(length: Any, alpha: float) -> Any:
    """The length penalty of Wu et al. (2016), ``((5 + length) / 6) ** alpha``, in float32."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, alpha)


def tile_batch(structure: Any, multiplier: int) -> Any:
    """Repeats every tensor of ``structure`` ``multiplier`` times along the batch axis.

    ``[batch, ...]`` becomes ``[batch * multiplier, ...]`` with the copies of each example next to
    each other (the layout :func:`beam_search` uses for its state).
    """
    return tf.nest.map_structure(lambda t: tf.repeat(t, multiplier, axis=0), structure)


def gather_rows(state: Any, rows: Any) -> Any:
    """Every tensor of ``state`` gathered along its first axis at ``rows`` (beam search's default
    reordering)."""
    return tf.nest.map_structure(lambda s: tf.gather(s, rows, axis=0), state)


def _merge_finished(finished: tuple, ids: Any, scores: Any, length: Any) -> tuple:
    """The finished set ``(ids, scores, lengths)`` (``[batch, width, ...]``) merged with the
    candidates ``ids [batch, candidates, max_length]`` that end now at ``length`` (the others
    scored ``-inf``): the best ``width`` of both."""
    finished_ids, finished_scores, finished_lengths = finished
    merged_scores, keep = tf.math.top_k(
        tf.concat([finished_scores, scores], axis=1), k=finished_scores.shape[1]
    )
    new_lengths = tf.fill(tf.shape(scores), length)
    merged = [tf.concat(pair, axis=1) for pair in ((finished_ids, ids),
                                                  (finished_lengths, new_lengths))]  # fmt: skip
    return (
        tf.gather(merged[0], keep, batch_dims=1),
        merged_scores,
        tf.gather(merged[1], keep, batch_dims=1),
    )


def _extend(logits: Any, alive_ids: Any, alive_log_probs: Any, time: Any) -> tuple:
    """The ``2 * width`` most likely extensions of the live hypotheses ``alive_ids [batch, width,
    max_length]`` by the step's ``logits [batch * width, vocab]``: their log-probabilities, the
    beam each extends, their token and their ids ``[batch, 2 * width, max_length]``."""
    batch, width, max_length = alive_ids.shape[0] or tf.shape(alive_ids)[0], *alive_ids.shape[1:]
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    vocab_size = tf.shape(log_probs)[-1]
    log_probs = alive_log_probs[:, :, None] + tf.reshape(log_probs, [batch, width, -1])
    top_log_probs, flat_index = tf.math.top_k(tf.reshape(log_probs, [batch, -1]), k=2 * width)
    origin, tokens = flat_index // vocab_size, flat_index % vocab_size
    ids = tf.gather(alive_ids, origin, batch_dims=1)
    ids = tf.where(tf.equal(tf.range(max_length)[None, None, :], time), tokens[:, :, None], ids)
    return top_log_probs, origin, tokens, ids


def _start(
    start_tokens: Any, pad_id: Any, initial_state: Any, width: int, max_length: int,
    start_time: Any, forced_ids: Any,
) -> tuple[tuple, tuple]:  # fmt: skip
    """The loop's first ``alive`` (ids, tokens, log-probabilities, state: the first beam live, the
    others empty) and ``finished`` (ids, scores, lengths: empty) hypotheses."""
    batch = batch_size_of(start_tokens)
    no_ids = tf.fill([batch, max_length], pad_id)
    if forced_ids is not None:
        no_ids = with_forced_steps(no_ids, forced_ids, start_time, lambda ids: ids)
    no_ids = tf.tile(no_ids[:, None, :], [1, width, 1])
    only_first = tf.range(width)[None, :] > 0
    alive = (
        no_ids,
        tf.tile(start_tokens[:, None], [1, width]),
        tf.where(only_first, NEG_INF, tf.zeros([batch, width])),
        tile_batch(initial_state, width),
    )
    return alive, (no_ids, tf.fill([batch, width], NEG_INF), tf.zeros([batch, width], tf.int32))


def beam_search(
    step: Step,
    start_tokens: Any,
    end_token: Any,
    max_decoding_length: int,
    initial_state: Any,
    beam_width: int,
    length_penalty: float = 0.0,
    start_time: Any = 0,
    forced_ids: Any = None,
    reorder_state: Callable[[Any, Any], Any] | None = None,
) -> BeamSearchOutput:
    """Beam search with a finished-hypothesis set, the GNMT length penalty and early stopping
    (the rules: the module docstring).

    Args:
        step, start_tokens, end_token, max_decoding_length: as in :func:`greedy_decode`.
        initial_state: the state for one hypothesis per example (``[batch, ...]`` tensors); it is
            tiled to ``[batch * beam_width, ...]`` (copies of an example next to each other) and
            reordered along that axis as hypotheses are kept.
        beam_width: a positive Python int.
        length_penalty: the GNMT ``alpha`` (0: plain log-probabilities); must be >= 0.
        start_time, forced_ids: as in :func:`greedy_decode`; the forced steps are the same in
            every hypothesis.
        reorder_state: ``reorder_state(state, rows) -> state``, called after every step with
            ``rows [batch * beam_width]``, the row of the hypothesis each kept one extends
            (default :func:`gather_rows`; a step that keeps caches in place passes its own).

    Returns:
        :class:`BeamSearchOutput`, hypotheses sorted best first.
    """
    max_length = check_length(max_decoding_length)
    start_time, forced_ids = check_start(start_time, forced_ids, max_length)
    reorder_state = gather_rows if reorder_state is None else reorder_state
    if not is_int(beam_width) or beam_width < 1:
        raise ValueError(f"beam_width must be a positive int, got {beam_width!r}")
    if not length_penalty >= 0:
        raise ValueError(f"length_penalty must be >= 0, got {length_penalty!r}")
    width = int(beam_width)
    start_tokens = tf.cast(tf.convert_to_tensor(start_tokens), tf.int32)
    ends = end_ids(end_token)
    batch = batch_size_of(start_tokens)
    # Offsets that turn a beam index [batch, width] into a row of the [batch * width] state.
    row_offsets = tf.range(batch)[:, None] * width
    max_penalty = gnmt_length_penalty(max_length, length_penalty)
    candidates = 2 * width

    def body(time, alive, finished):
        alive_ids, alive_tokens, alive_log_probs, state = alive
        logits, new_state = step(tf.reshape(alive_tokens, [-1]), time, state)
        top_log_probs, origin, tokens, ids = _extend(logits, alive_ids, alive_log_probs, time)
        ends_here = tf.logical_or(is_end(tokens, ends), time + 1 >= max_length)
        ranked = tf.range(candidates)[None, :] < width  # may finish: the `width` most likely
        may_finish = ends_here & ranked & (top_log_probs > NEG_INF)
        scores = top_log_probs / gnmt_length_penalty(time + 1, length_penalty)
        scores = tf.where(may_finish, scores, NEG_INF)
        finished = _merge_finished(finished, ids, scores, time + 1)

        # Alive: the `width` most likely candidates that go on (-inf: an empty slot).
        alive_log_probs, pick = tf.math.top_k(tf.where(ends_here, NEG_INF, top_log_probs), k=width)
        origin, tokens, ids = (tf.gather(t, pick, batch_dims=1) for t in (origin, tokens, ids))
        state = reorder_state(new_state, tf.reshape(origin + row_offsets, [-1]))
        return time + 1, (ids, tokens, alive_log_probs, state), finished

    def not_done(time, alive, finished):
        # Some live hypothesis can still beat the worst finished one.
        best_alive = tf.reduce_max(alive[2], axis=1) / max_penalty
        can_improve = best_alive > tf.reduce_min(finished[1], axis=1)
        return tf.logical_and(time < max_length, tf.reduce_any(can_improve))

    alive, finished = _start(start_tokens, ends[0], initial_state, width, max_length,
                             start_time, forced_ids)  # fmt: skip
    _, _, finished = tf.while_loop(
        not_done, body, (start_time, alive, finished), maximum_iterations=max_length
    )
    ids, scores, lengths = finished
    return BeamSearchOutput(ids, scores, tf.where(tf.equal(scores, NEG_INF), 0, lengths))
