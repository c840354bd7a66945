"""The Transformer decoder's inference steps: cached (greedy, sampling, beam search) and
differentiable (the strategies that feed back vectors).

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
``scheduled_sampling``, ``gumbel_softmax``) are trained through, and the cache's in-place writes
have no gradient in TensorFlow: their steps keep the fed inputs instead and run the blocks over
all of them (causal), so a step costs a teacher-forced pass over ``max_decoding_length`` (or the
inputs') positions.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import tensorflow as tf

from texkit.core.attention import attention_mask
from texkit.modules.decoders.beam_decoding import gather_rows
from texkit.modules.decoders.decode_request import DecodeRequest
from texkit.modules.decoders.decoder_base import Inference
from texkit.modules.decoders.decoding import (
    batch_size_of,
    end_ids,
    forced_logits,
    is_end,
    where_batch,
)

__all__ = ["cached_inference", "feedback_inference"]


class Prompt(NamedTuple):
    """Where a decoding starts: its start tokens and step, and the prompts that force steps."""

    start_tokens: Any
    start_time: Any = 0
    forced_ids: Any = None
    context: Any = None
    context_length: Any = None


def _check_context(name: str, context: Any, context_length: Any, max_length: int) -> tuple:
    context = tf.cast(tf.convert_to_tensor(context), tf.int32)
    if len(context.shape) != 2:
        raise ValueError(
            f"{name}: context must be [batch, time] token ids, got shape {tuple(context.shape)}"
        )
    if context.shape[1] is not None and context.shape[1] > max_length:
        raise ValueError(
            f"{name}: a context of {context.shape[1]} tokens does not fit in "
            f"max_decoding_length={max_length} steps"
        )
    if context_length is None:
        context_length = tf.fill([batch_size_of(context)], tf.shape(context)[1])
    return context, tf.cast(context_length, tf.int32)


def prompt_of(decoder: Any, request: DecodeRequest) -> Prompt:
    """The :class:`Prompt` of a request: its start tokens, or its prompts checked, where the loop
    starts at the last step every row's prompt still forces (a prompt ends at its length or at
    its first end token, any of ``end_token``'s ids, after the first position)."""
    decoder._check_positions(request.max_length)
    if request.context is None:
        return Prompt(tf.cast(tf.convert_to_tensor(request.start_tokens), tf.int32))
    context, context_length = _check_context(
        decoder.name, request.context, request.context_sequence_length, request.max_length
    )
    width = tf.shape(context)[1]
    steps = tf.range(width)[None, :]
    ends = is_end(context, end_ids(request.end_token))
    prompt_end = tf.where((steps > 0) & ends, steps, width)
    forced_until = tf.minimum(tf.reduce_min(prompt_end, axis=1), context_length)
    start_time = tf.maximum(tf.reduce_min(forced_until) - 1, 0)
    start_tokens = tf.gather(context, start_time, axis=1)
    return Prompt(start_tokens, start_time, context[:, 1:], context, context_length)


def _force_context(logits: Any, time: Any, context: Any, context_length: Any) -> Any:
    """At step ``time``, rows whose context goes on past ``time`` get the
    :func:`~texkit.modules.decoders.forced_logits` of its next token (0 for it, ``-1e9`` for every
    other), so every algorithm picks it with probability 1 and it adds nothing to a hypothesis'
    log-probability."""
    if context is None:
        return logits
    position = time + 1
    forced = position < context_length
    index = tf.minimum(position, tf.shape(context)[1] - 1)
    token = tf.gather(context, index, axis=1)
    return where_batch(forced, forced_logits(token, tf.shape(logits)[-1]), logits)


def _block_runner(decoder: Any, request: DecodeRequest) -> Any:
    """``run_blocks(words, time, caches, ancestry=None) -> (x, caches)``: word embeddings
    ``[rows, steps, dim]`` at steps ``time ..`` through the blocks and their caches, against the
    memory projected once (outside the loop; the steps read it as a constant). With
    ``ancestry``, the rows are beam search's ``request.beam_width`` hypotheses per example."""
    memory, training = request.memory, request.training
    memory_kv, memory_mask = [None] * len(decoder.blocks), None
    if memory is not None:
        memory_kv = [block.cross_attention.project_memory(memory) for block in decoder.blocks]
        lengths = request.memory_sequence_length
        if lengths is None:
            lengths = tf.fill([batch_size_of(memory)], tf.shape(memory)[1])
        memory_mask = attention_mask(1, tf.shape(memory)[1], lengths)

    def run_blocks(words: Any, time: Any, caches: list, ancestry: Any = None) -> tuple:
        shape = tf.shape(words)[:2]
        positions = time + tf.broadcast_to(tf.range(shape[1]), shape)
        x = decoder._embed(words, positions, training)
        width = None if ancestry is None else request.beam_width
        written = []
        for block, cache, kv in zip(decoder.blocks, caches, memory_kv, strict=True):
            x, cache = block.step(x, cache, time, kv, memory_mask, training, width, ancestry)
            written.append(cache)
        return x, written

    return run_blocks


def _token_buffer(context: Any, batch: Any, max_length: int) -> Any:
    """``[batch, max_length]`` int32: the prompts, then zeros (steps write their tokens)."""
    if context is None:
        return tf.zeros([batch, max_length], tf.int32)
    padded = tf.pad(context, [[0, 0], [0, max_length - tf.shape(context)[1]]])
    return tf.ensure_shape(padded, [context.shape[0], max_length])


def _step_or_rerun(run_blocks: Any, embed: Any, token_ids: Any, tokens: Any, time: Any,
                   state: dict, recompute_at: int, beam_width: int | None) -> tuple:  # fmt: skip
    """One step through the caches, except at step ``recompute_at``: there every token fed so far
    runs through the blocks again in one pass that rewrites the caches (a model whose rotary
    frequencies change once the sequence passes a length, LongRoPE's ``original_max_position_
    embeddings``, as Phi-3 does in Hugging Face). Beam search's hypotheses each rewrite their
    own slot, which then holds their whole history."""

    def one_step() -> tuple:
        return run_blocks(embed(token_ids)[:, None], time, state["cache"], state.get("ancestry"))

    def rerun() -> tuple:
        x, caches = run_blocks(embed(tokens), 0, state["cache"])
        return tf.gather(x, time[None], axis=1), caches

    x, caches = tf.cond(tf.equal(time, recompute_at), rerun, one_step)
    if beam_width is not None:
        slot = tf.range(tf.shape(token_ids)[0]) % beam_width
        rewritten = (tf.range(tf.shape(tokens)[1]) <= time)[None, :] & (time == recompute_at)
        state = {**state, "ancestry": tf.where(rewritten, slot[:, None], state["ancestry"])}
    return x, caches, state


def _reorder_beams(state: dict, rows: Any) -> dict:
    # Everything follows its hypothesis but the caches, which stay where they were written; the
    # ancestry table says where.
    moved = gather_rows({k: v for k, v in state.items() if k != "cache"}, rows)
    return {**moved, "cache": state["cache"]}


def cached_inference(decoder: Any, request: DecodeRequest) -> Inference:
    """The step over token ids and its initial state (each block's cache, ``[batch, heads,
    max_length, depth]``, filled with the prompt); beam search's when ``request.beam_width`` is
    set, whose step reads the caches through the ancestry table."""
    prompt = prompt_of(decoder, request)
    max_length, beam_width = request.max_length, request.beam_width
    batch = batch_size_of(prompt.start_tokens)
    embed = functools.partial(decoder._embed_ids, request.embedding)
    run_blocks = _block_runner(decoder, request)
    caches = [block.init_cache(batch, max_length) for block in decoder.blocks]
    context = prompt.context
    if context is not None and (context.shape[1] is None or context.shape[1] > 1):
        # The prompts go through the blocks in one pass, all but their last token; rows with
        # shorter prompts are padded. The loop starts at the last step every row's prompt still
        # forces, so it rewrites whatever a padded row's pass left past its own prompt before
        # reading it.
        _, caches = run_blocks(embed(context[:, :-1]), 0, caches)
    state: dict = {"cache": caches}
    if context is not None:  # in the state: beam search tiles and reorders it
        state["context"], state["context_length"] = context, prompt.context_length
    recompute_at = getattr(decoder, "recompute_at", None)
    if recompute_at is not None:  # the tokens fed so far, to run them all again there
        state["tokens"] = _token_buffer(context, batch, max_length)

    def step(token_ids: Any, time: Any, loop_state: dict) -> tuple[Any, dict]:
        ancestry = None
        now = tf.equal(tf.range(max_length), time)[None, :]
        if beam_width is not None:  # this step writes each hypothesis' own slot
            slot = tf.range(tf.shape(token_ids)[0]) % beam_width
            ancestry = tf.where(now, slot[:, None], loop_state["ancestry"])
            loop_state = {**loop_state, "ancestry": ancestry}
        if recompute_at is None:
            x, caches = run_blocks(embed(token_ids)[:, None], time, loop_state["cache"], ancestry)
        else:
            tokens = tf.where(now, token_ids[:, None], loop_state["tokens"])
            loop_state = {**loop_state, "tokens": tokens}
            x, caches, loop_state = _step_or_rerun(
                run_blocks, embed, token_ids, tokens, time, loop_state, recompute_at, beam_width
            )
        logits = _force_context(
            decoder._logits(x)[:, 0], time, loop_state.get("context"),
            loop_state.get("context_length"),
        )  # fmt: skip
        return logits, {**loop_state, "cache": caches}

    start = (prompt.start_tokens, prompt.start_time, prompt.forced_ids)
    if beam_width is None:
        return Inference(step, state, *start, freeze_state=False)
    state["ancestry"] = tf.zeros([batch, max_length], tf.int32)
    return Inference(step, state, *start, _reorder_beams)


def feedback_inference(decoder: Any, request: DecodeRequest) -> Inference:
    """The differentiable steps of the strategies that feed back vectors.

    The key/value cache is written in place (``dynamic_update_slice``, which has no gradient in
    TensorFlow), so these steps keep the step inputs instead, ``[batch, max_length, dim]``
    (written with a differentiable select), and run the blocks over all of them, as teacher
    forcing does, reading the logits at the current step (later positions are masked).
    """
    prompt = prompt_of(decoder, request)
    max_length = request.max_length
    batch = batch_size_of(prompt.start_tokens)
    embed = functools.partial(decoder._embed_ids, request.embedding)
    dtype = embed(prompt.start_tokens[:1]).dtype
    inputs = tf.zeros([batch, max_length, decoder.hparams.dim], dtype)
    if prompt.context is not None:  # the prompts' steps before start_time are never computed
        prompts = tf.cast(embed(prompt.context), dtype)
        padding = max_length - tf.shape(prompts)[1]
        inputs = tf.ensure_shape(tf.pad(prompts, [[0, 0], [0, padding], [0, 0]]), inputs.shape)
    positions = tf.broadcast_to(tf.range(max_length)[None, :], [batch, max_length])

    def embedded_step(words: Any, time: Any, state: dict) -> tuple[Any, dict]:
        now = tf.equal(tf.range(max_length), time)[None, :, None]
        inputs = tf.where(now, tf.cast(words, dtype)[:, None, :], state["inputs"])
        x = decoder._stack(inputs, positions, request)
        logits = decoder._logits(tf.gather(x, time[None], axis=1))[:, 0]
        logits = _force_context(logits, time, prompt.context, prompt.context_length)
        return logits, {"inputs": inputs}

    def step(token_ids: Any, time: Any, state: dict) -> tuple[Any, dict]:
        return embedded_step(embed(token_ids), time, state)

    return Inference(
        step, {"inputs": inputs}, prompt.start_tokens, prompt.start_time, prompt.forced_ids,
        freeze_state=False, embed=embed, embedded_step=embedded_step,
    )  # fmt: skip
