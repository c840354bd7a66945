"""The loops of text generation, with Hugging Face ``generate``'s rules, over a decoder's
:class:`~texkit.modules.decoders.decoder_base.Inference`.

The decoders' own strategies (``infer_greedy``, ``beam_search``...) follow Texar: one maximum
length for the whole batch, a prompt that ends at its first end token, the GNMT length penalty.
Generating text from a prompt asks for other rules, those of ``transformers``' ``generate``,
which these loops implement:

* every row generates at most ``max_new_tokens`` tokens after *its own* prompt, whatever the
  other rows' prompt lengths (a batch gives what each prompt gives alone);
* end tokens inside a prompt are text (a chat prompt holds them); only a generated end token
  ends a row, and it counts among the new tokens;
* beam search scores a finished hypothesis ``sum log p / new_tokens ** length_penalty`` and
  stops as ``generate``'s ``early_stopping`` says (``False``: once the best live hypothesis,
  scored at its current length, cannot beat the worst of a full finished set; ``True``: once
  the set is full; ``"never"``: scoring the live one at the longest length when the penalty is
  positive). It keeps ``max(2, 1 + n_end_ids) * beam_width`` candidates per step, of which the
  ``beam_width`` most likely may finish.

Row ``i``'s prompt is ``prompt_lengths[i]`` tokens (1 for an encoder-decoder, its start token);
step ``t`` feeds the token at position ``t`` and picks the one at ``t + 1``, so row ``i``
generates at steps ``prompt_lengths[i] - 1`` on. The loops return the ids picked at every step,
``[batch, max_length]``, and how many each row generated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from texkit.modules.decoders.beam_decoding import gather_rows, tile_batch
from texkit.modules.decoders.decoder_base import Inference
from texkit.modules.decoders.decoding import end_ids, is_end

__all__ = ["EARLY_STOPPING", "beam_loop", "early_stopping_flags", "token_loop"]

EARLY_STOPPING = (False, True, "never")

# An empty or excluded score: far below any sum of log-probabilities, but finite (so that
# divisions and comparisons stay ordinary numbers), as transformers' beam search uses.
_LOW = -1.0e9


def _generating(time: Any, prompt_lengths: Any) -> Any:
    """``[batch]``: the rows whose step ``time`` picks a new token (their prompt is fed)."""
    return time + 1 >= prompt_lengths


def token_loop(
    run: Inference,
    choose: Callable[[Any, Any], Any],
    end_token: Any,
    prompt_lengths: Any,
    max_new_tokens: int,
    max_length: int,
    pad_id: int,
) -> tuple[Any, Any]:
    """Greedy decoding or sampling (``choose(logits, time) -> ids``) until each row emits an
    end token or has ``max_new_tokens`` new tokens.

    Returns:
        ``ids [batch, max_length]`` int32, the token picked at every step (``pad_id`` after a
        row's end), and ``counts [batch]``, the tokens each row generated (its end included).
    """
    ends = end_ids(end_token)
    prompt_lengths = tf.cast(prompt_lengths, tf.int32)
    batch = prompt_lengths.shape[0] or tf.shape(prompt_lengths)[0]

    def body(time, fed, done, counts, ids, state):
        logits, state = run.step(fed, time, state)
        chosen = tf.cast(choose(tf.cast(logits, tf.float32), time), tf.int32)
        chosen = tf.where(done, pad_id, chosen)
        new = _generating(time, prompt_lengths) & ~done
        counts += tf.cast(new, tf.int32)
        done |= new & (is_end(chosen, ends) | (counts >= max_new_tokens))
        return time + 1, chosen, done, counts, ids.write(time, chosen), state

    ids = tf.TensorArray(tf.int32, size=max_length, element_shape=prompt_lengths.shape)
    start = (tf.cast(run.start_time, tf.int32), tf.cast(run.start_tokens, tf.int32),
             tf.zeros([batch], tf.bool), tf.zeros([batch], tf.int32), ids, run.state)  # fmt: skip
    time, _, _, counts, ids, _ = tf.while_loop(
        lambda time, _, done, *rest: (time < max_length) & ~tf.reduce_all(done),
        body,
        start,
        maximum_iterations=max_length,
    )
    ids = tf.transpose(ids.stack())
    return tf.where(tf.range(max_length)[None, :] < time, ids, pad_id), counts


def _penalized(log_probs: Any, lengths: Any, length_penalty: float) -> Any:
    return log_probs / tf.pow(tf.cast(tf.maximum(lengths, 1), tf.float32), length_penalty)


def _merge(finished: tuple, ids: Any, scores: Any, counts: Any, width: int) -> tuple:
    """The ``width`` best of the finished set ``(ids, scores, counts, valid)`` and the candidates
    (``scores`` of ``-inf`` do not finish)."""
    old_ids, old_scores, old_counts, old_valid = finished
    all_scores = tf.concat([old_scores, scores], axis=1)
    best, keep = tf.math.top_k(all_scores, k=width)
    valid = tf.concat([old_valid, scores > float("-inf")], axis=1)

    def pick(a: Any, b: Any) -> Any:
        return tf.gather(tf.concat([a, b], axis=1), keep, batch_dims=1)

    return pick(old_ids, ids), best, pick(old_counts, counts), tf.gather(valid, keep, batch_dims=1)


def _stopping_flags(early_stopping: Any) -> tuple[Any, Any]:
    """``(stop_when_full, never)`` booleans of an ``early_stopping`` rule, given as the rule
    (``True``, ``False``, ``"never"``) or as those two booleans (tensors)."""
    if isinstance(early_stopping, (bool, str)):
        return tf.constant(early_stopping is True), tf.constant(early_stopping == "never")
    return early_stopping


def early_stopping_flags(early_stopping: bool | str) -> tuple[bool, bool]:
    """``(stop_when_full, never)`` of a rule, for :func:`beam_loop` as inputs."""
    return early_stopping is True, early_stopping == "never"


def beam_loop(
    run: Inference,
    end_token: Any,
    prompt_lengths: Any,
    max_new_tokens: int,
    max_length: int,
    pad_id: int,
    beam_width: int,
    length_penalty: Any = 1.0,
    early_stopping: Any = False,
) -> tuple[Any, Any]:
    """Beam search with ``generate``'s rules (see the module). ``run`` is the decoder's
    beam-search :class:`Inference` (one state row per example; tiled here).
    ``length_penalty`` may be a tensor, and ``early_stopping`` the pair of boolean tensors
    :func:`early_stopping_flags` gives, so that one compiled search serves them all.

    Returns:
        The best hypothesis of each row: ``ids [batch, max_length]`` (the tokens picked at every
        step; ``pad_id`` where it has none) and ``counts [batch]``, its new tokens.

    The loop is written as one function (about 90 lines because the step's candidate ranking,
    finishing, early-stopping test and row freezing read the same tensors).
    """
    if isinstance(early_stopping, (bool, str)) and early_stopping not in EARLY_STOPPING:
        raise ValueError(f"early_stopping must be True, False or 'never', got {early_stopping!r}")
    # Tensors, so that one compiled search serves every penalty and stopping rule.
    length_penalty = tf.cast(length_penalty, tf.float32)
    stop_when_full, never = _stopping_flags(early_stopping)
    width = int(beam_width)
    ends = end_ids(end_token)
    n_ends = 0 if end_token is None else int(ends.shape[0] or 1)
    candidates = max(2, 1 + n_ends) * width
    prompt_lengths = tf.cast(prompt_lengths, tf.int32)
    batch = prompt_lengths.shape[0] or tf.shape(prompt_lengths)[0]
    reorder = run.reorder_state or gather_rows
    offsets = tf.range(batch)[:, None] * width
    rank_may_finish = tf.range(candidates)[None, :] < width

    def body(time, alive, finished, open_rows, improvable):
        alive_ids, alive_tokens, alive_scores, state = alive
        logits, new_state = run.step(tf.reshape(alive_tokens, [-1]), time, state)
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
        vocab = tf.shape(log_probs)[-1]
        total = tf.reshape(log_probs, [batch, width, -1]) + alive_scores[:, :, None]
        top_scores, index = tf.math.top_k(tf.reshape(total, [batch, -1]), k=candidates)
        origin, tokens = index // vocab, index % vocab
        ids = tf.gather(alive_ids, origin, batch_dims=1)
        ids = tf.where(tf.range(max_length)[None, None, :] == time, tokens[:, :, None], ids)
        generating = _generating(time, prompt_lengths)
        new_count = time + 2 - prompt_lengths  # new tokens of a hypothesis extended now
        hits = generating[:, None] & (is_end(tokens, ends) | (new_count >= max_new_tokens)[:, None])
        # Live: the `width` best candidates that do not end.
        live_scores, pick = tf.math.top_k(top_scores + tf.cast(hits, tf.float32) * _LOW, k=width)
        picked = [tf.gather(t, pick, batch_dims=1) for t in (origin, tokens, ids)]
        # Finished: the candidates among the `width` best that end, while the row may improve.
        full = tf.reduce_all(finished[3], axis=1)
        may_add = open_rows & improvable & ~(full & stop_when_full)
        finishing = hits & rank_may_finish & may_add[:, None]
        scores = _penalized(top_scores, new_count[:, None], length_penalty)
        scores = tf.where(finishing, scores, float("-inf"))
        counts = tf.broadcast_to(new_count[:, None], tf.shape(scores))
        merged = _merge(finished, ids, scores, counts, width)
        finished = tuple(
            tf.where(tf.reshape(open_rows, [-1] + [1] * (len(new.shape) - 1)), new, old)
            for new, old in zip(merged, finished, strict=True)
        )
        state = reorder(new_state, tf.reshape(picked[0] + offsets, [-1]))
        alive = (picked[2], picked[1], live_scores, state)
        # Whether each row may still improve, then which rows go on.
        longest = never & (length_penalty > 0)
        hypothetical = tf.where(longest, tf.fill([batch], max_new_tokens), new_count)
        best_live = _penalized(live_scores[:, 0], hypothetical, length_penalty)
        full = tf.reduce_all(finished[3], axis=1)
        worst = tf.where(full, tf.reduce_min(finished[1], axis=1), _LOW)
        improvable &= ~(generating & open_rows) | (best_live > worst)
        ended = ~improvable | (full & stop_when_full) | tf.reduce_all(hits, axis=1)
        open_rows &= ~(generating & ended)
        return time + 1, alive, finished, open_rows, improvable

    empty_ids = tf.fill([batch, width, max_length], pad_id)
    first = tf.where(tf.range(width)[None, :] > 0, _LOW, 0.0)
    alive = (empty_ids, tf.tile(tf.cast(run.start_tokens, tf.int32)[:, None], [1, width]),
             tf.tile(first, [batch, 1]), tile_batch(run.state, width))  # fmt: skip
    finished = (empty_ids, tf.fill([batch, width], _LOW), tf.zeros([batch, width], tf.int32),
                tf.zeros([batch, width], tf.bool))  # fmt: skip
    rows = tf.ones([batch], tf.bool)
    _, _, finished, _, _ = tf.while_loop(
        lambda time, alive, finished, open_rows, _: (time < max_length) & tf.reduce_any(open_rows),
        body,
        (tf.cast(run.start_time, tf.int32), alive, finished, rows, rows),
        maximum_iterations=max_length,
    )
    return finished[0][:, 0], finished[2][:, 0]
