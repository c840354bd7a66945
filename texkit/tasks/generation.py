"""Text in, text out: the generation behind the tasks' ``generate``.

:class:`Generator` turns prompts into ids with the task's tokenizer, runs one of the loops of
:mod:`~texkit.tasks.generation_loops` compiled with XLA, and turns each row's new ids back into
text: the prompt is not repeated; the end token and a stop string end the text and are cut.

**Compiled once per shape bucket.** A batch of prompts is right-padded to a width rounded up to
a multiple of :data:`WIDTH_BUCKET` and to a batch size rounded up to a power of two (padding
rows repeat the first prompt and are dropped), so calls with other prompts of similar sizes
reuse the compiled function: one function per bucket, per strategy and its options, per
``max_new_tokens``; the sampling seed is an input, not a constant. ``Generator.traces`` counts
the functions traced.

**Streaming** (``stream=True``, greedy and sampling) cannot run the whole loop as one compiled
function, which returns only at its end. It runs the same loop body as two compiled functions:
``start`` (the prompt's pass, which fills the key/value caches) and ``advance``
(:data:`STREAM_STEPS` steps, unrolled), the loop's whole state (every block's cache, each row's
step, token and count) passed out of one call and into the next as tensors. Each call costs
a dispatch and a copy of the caches (TensorFlow does not let a compiled function write its
inputs in place), which the steps of a call share; the text of each token is still yielded on
its own. ``benchmarks/generation_streaming.py`` measures the cost per token against the whole
loop. Texts are
yielded through :class:`~texkit.data.tokenizers.incremental.IncrementalDecoder`, whole UTF-8
characters only, so the concatenation of the pieces is the text ``generate`` returns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.modules.decoders.sampling import sample_choice
from texkit.tasks.generation_loops import beam_loop, early_stopping_flags, token_loop
from texkit.tasks.generation_settings import GenerationSettings
from texkit.tasks.text_output import cut_at_stop_strings, new_text, stop_prefix_length

__all__ = ["STREAM_STEPS", "WIDTH_BUCKET", "Generator", "beam_inputs", "bucket", "generation_loop"]

WIDTH_BUCKET = 16
# Steps of a streamed loop per compiled call: each call costs a dispatch and a copy of the
# caches, which a few steps share (benchmarks/generation_streaming.py).
STREAM_STEPS = 4


def bucket(size: int, step: int) -> int:
    """``size`` rounded up to a multiple of ``step``."""
    return -(-size // step) * step


def _batch_bucket(size: int) -> int:
    return 1 << (size - 1).bit_length()


class Generator:
    """The generation of one task (see the module).

    Args:
        task: the task: its ``tokenizer``, its decoder, ``_prompt_ids(texts)`` (the ids of
            each prompt, as lists) and ``_inference(context, lengths, beam_width)`` (the
            decoder's :class:`~texkit.modules.decoders.decoder_base.Inference` and the rows'
            prompt lengths, inside a compiled function; an encoder-decoder's ``memory``, from
            ``_memory(context, lengths)``, may be given: ``None`` computes it), and
            ``_step_inference(context, lengths, max_length, memory)`` (an Inference whose step
            serves a state made by ``_inference``, without the prompt's pass).
    """

    def __init__(self, task: Any):
        self.task = task
        self._compiled: dict[tuple, Any] = {}
        self.traces = 0

    # --- prompts ------------------------------------------------------------------------------

    def _padded(self, prompts: list[list[int]], max_new_tokens: int) -> tuple[np.ndarray, ...]:
        """``(context [B, W], lengths [B], max_length)`` of the prompts, padded to buckets."""
        longest = max(len(p) for p in prompts)
        limit = self.task.max_length
        width = bucket(longest, WIDTH_BUCKET)
        if limit is not None:
            if longest + max_new_tokens > limit:
                raise ValueError(
                    f"generate: a prompt of {longest} tokens and max_new_tokens="
                    f"{max_new_tokens} need {longest + max_new_tokens} positions, more than the "
                    f"model's {limit}; give a shorter prompt or fewer new tokens (or "
                    "truncate_prompts=True to keep the end of each prompt)"
                )
            width = min(width, limit - max_new_tokens)
        rows = _batch_bucket(len(prompts))
        context = np.full([rows, width], self.task.pad_id, np.int32)
        lengths = np.zeros([rows], np.int32)
        for i in range(rows):
            prompt = prompts[i] if i < len(prompts) else prompts[0]
            context[i, : len(prompt)] = prompt
            lengths[i] = len(prompt)
        return context, lengths, self.task.steps_for(width, max_new_tokens)

    # --- the compiled loops -------------------------------------------------------------------

    def _loop(self, settings: GenerationSettings, context: Any, lengths: Any, seed: Any,
              beam_options: tuple, max_length: int) -> tuple[Any, Any]:  # fmt: skip
        self.traces += 1
        return generation_loop(self.task, settings, context, lengths, seed, beam_options,
                               max_length)  # fmt: skip

    def _function(self, key: tuple, build: Any) -> Any:
        if key not in self._compiled:
            # No AutoGraph: the loops are written with tf.while_loop (and it would warn about
            # the closures of these inner functions).
            self._compiled[key] = tf.function(
                build, jit_compile=self.task.generation_xla, autograph=False
            )
        return self._compiled[key]

    def _seed(self, settings: GenerationSettings) -> tf.Tensor:
        if settings.seed is None:
            return tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)
        return tf.constant([settings.seed, 0], tf.int32)

    # --- generate -----------------------------------------------------------------------------

    def generate_ids(
        self, prompts: list[list[int]], settings: GenerationSettings
    ) -> list[list[int]]:
        """The new ids of each prompt, its end token included when it generated one."""
        context, lengths, max_length = self._padded(prompts, settings.max_new_tokens)
        key = ("whole", settings.compiled_key(), context.shape, max_length)

        def build(context: Any, lengths: Any, seed: Any, beam_options: tuple) -> tuple:
            return self._loop(settings, context, lengths, seed, beam_options, max_length)

        ids, counts = self._function(key, build)(
            context, lengths, self._seed(settings), beam_inputs(settings)
        )
        ids, counts = ids.numpy(), counts.numpy()
        offsets = self.task.first_new_step(lengths)
        return [ids[i, offsets[i] : offsets[i] + counts[i]].tolist() for i in range(len(prompts))]

    def generate(self, prompts: list[list[int]], settings: GenerationSettings) -> list[str]:
        """The text each prompt's ids continue with (see :meth:`texkit.tasks.CausalLM.generate`)."""
        return [self._text(new, settings) for new in self.generate_ids(prompts, settings)]

    def _text(self, new_ids: list[int], settings: GenerationSettings) -> str:
        if new_ids and new_ids[-1] in settings.end_token_ids:
            new_ids = new_ids[:-1]
        text = new_text(self.task.tokenizer, new_ids)
        return cut_at_stop_strings(text, settings.stop_strings)

    # --- streaming ----------------------------------------------------------------------------

    def _stream_functions(self, settings: GenerationSettings, shape: tuple, max_length: int):
        """The compiled ``start(context, lengths, seed) -> carry`` and ``advance(carry, seed)
        -> (carry, chosen, new)`` of a streamed greedy or sampling loop."""
        s, pad = settings, self.task.pad_id
        ends = tf.constant(list(s.end_token_ids) or [-1], tf.int32)

        def choose_fn(seed: Any) -> Any:
            if s.strategy == "greedy":
                return _argmax
            return sample_choice(s.temperature, s.top_k, s.top_p, seed)

        def start(context: Any, lengths: Any, seed: Any) -> dict:
            self.traces += 1
            memory = self.task._memory(context, lengths)
            run, prompt_lengths = self.task._inference(context, lengths, max_length, None, memory)
            batch = tf.shape(lengths)[0]
            carry = {"time": tf.cast(run.start_time, tf.int32), "fed": run.start_tokens,
                     "done": tf.zeros([batch], tf.bool), "counts": tf.zeros([batch], tf.int32),
                     "lengths": prompt_lengths, "state": run.state}  # fmt: skip
            if memory is not None:  # an encoder's outputs, computed once
                carry["memory"] = memory
            return carry

        def advance(context: Any, lengths: Any, carry: dict, seed: Any) -> tuple:
            self.traces += 1
            # The step function of the same decoding, without its prompt's pass: the state
            # (caches, prompts) comes in the carry.
            run = self.task._step_inference(context, lengths, max_length, carry.get("memory"))
            all_chosen, all_new = [], []
            for _ in range(STREAM_STEPS):  # unrolled: a few steps per call
                time, done, counts = carry["time"], carry["done"], carry["counts"]
                logits, state = run.step(carry["fed"], tf.minimum(time, max_length - 1),
                                         carry["state"])  # fmt: skip
                chosen = tf.cast(choose_fn(seed)(tf.cast(logits, tf.float32), time), tf.int32)
                chosen = tf.where(done, pad, chosen)
                new = (time + 1 >= carry["lengths"]) & ~done
                counts += tf.cast(new, tf.int32)
                ended = tf.reduce_any(chosen[:, None] == ends[None, :], axis=1)
                done |= new & (ended | (counts >= s.max_new_tokens) | (time + 1 >= max_length))
                carry = {**carry, "time": time + 1, "fed": chosen, "done": done,
                         "counts": counts, "state": state}  # fmt: skip
                all_chosen.append(chosen)
                all_new.append(new)
            return carry, tf.stack(all_chosen, axis=1), tf.stack(all_new, axis=1)

        key = ("stream", s.compiled_key(), shape, max_length)
        return self._function(key + ("start",), start), self._function(key + ("advance",), advance)

    def stream(
        self, prompts: list[list[int]], settings: GenerationSettings, single: bool
    ) -> Iterator[Any]:
        """Yields text pieces as tokens arrive: a string per step for one prompt (``single``),
        else a list with one (maybe empty) string per prompt."""
        from texkit.data.tokenizers.incremental import IncrementalDecoder

        if settings.strategy == "beam":
            raise ValueError(
                "generate: stream=True streams greedy decoding and sampling; beam search's best "
                "hypothesis is known only at its end (use stream=False)"
            )
        context, lengths, max_length = self._padded(prompts, settings.max_new_tokens)
        start, advance = self._stream_functions(settings, context.shape, max_length)
        seed = self._seed(settings)
        carry = start(context, lengths, seed)
        rows = range(len(prompts))
        streams = [_RowStream(IncrementalDecoder(self.task.tokenizer), settings) for _ in rows]
        for _ in range(-(-(max_length - int(carry["time"])) // STREAM_STEPS)):
            carry, chosen, new = advance(context, lengths, carry, seed)
            chosen, new = chosen.numpy(), new.numpy()
            for step in range(STREAM_STEPS):
                pieces = [
                    streams[i].push(int(chosen[i, step])) if new[i, step] else "" for i in rows
                ]
                if any(pieces):
                    yield pieces[0] if single else pieces
            if carry["done"].numpy()[: len(prompts)].all():
                break
        pieces = [stream.finish() for stream in streams]
        if any(pieces):
            yield pieces[0] if single else pieces


def beam_inputs(settings: GenerationSettings) -> tuple:
    """The beam search's settings that are inputs of its compiled function (not constants):
    the length penalty and the early-stopping flags."""
    flags = early_stopping_flags(settings.early_stopping)
    return (tf.constant(float(settings.length_penalty)), *map(tf.constant, flags))


def generation_loop(
    task: Any, settings: GenerationSettings, context: Any, lengths: Any, seed: Any,
    beam_options: tuple, max_length: int,
) -> tuple[Any, Any]:  # fmt: skip
    """The loop ``settings`` ask for over the task's decoder (inside a compiled function):
    ``(ids [batch, max_length], counts [batch])`` of :mod:`~texkit.tasks.generation_loops`."""
    s = settings
    ends = list(s.end_token_ids) or None
    beam = s.beam_width if s.strategy == "beam" else None
    run, prompt_lengths = task._inference(context, lengths, max_length, beam)
    if beam is not None:
        penalty, *stopping = beam_options
        return beam_loop(
            run, ends, prompt_lengths, s.max_new_tokens, max_length, task.pad_id, beam,
            penalty, tuple(stopping),
        )  # fmt: skip
    if s.strategy == "greedy":
        choose = _argmax
    else:
        choose = sample_choice(s.temperature, s.top_k, s.top_p, seed)
    return token_loop(run, choose, ends, prompt_lengths, s.max_new_tokens, max_length,
                      task.pad_id)  # fmt: skip


def _argmax(logits: Any, time: Any = None) -> Any:
    return tf.argmax(logits, axis=-1, output_type=tf.int32)


class _RowStream:
    """One row's streamed text: new ids through the incremental decoder, the end token cut,
    text held back while it may be the start of a stop string, nothing after one."""

    def __init__(self, decoder: Any, settings: GenerationSettings):
        self.decoder, self.settings = decoder, settings
        self.pending, self.stopped = "", False

    def push(self, token: int) -> str:
        if self.stopped:
            return ""
        if token in self.settings.end_token_ids:
            self.stopped = True
            return self._release(self.decoder.flush(), final=True)
        return self._release(self.decoder.push([token]), final=False)

    def finish(self) -> str:
        if self.stopped:
            return ""
        self.stopped = True
        return self._release(self.decoder.flush(), final=True)

    def _release(self, text: str, final: bool) -> str:
        text = self.pending + text
        cut = cut_at_stop_strings(text, self.settings.stop_strings)
        if len(cut) < len(text):
            self.stopped, self.pending = True, ""
            return cut
        keep = 0 if final else stop_prefix_length(text, self.settings.stop_strings)
        self.pending = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]


def as_prompts(texts: Any) -> tuple[list[str], bool]:
    """``texts`` as a list of prompts and whether a single string was given; an empty list or
    a non-string is refused."""
    if isinstance(texts, str):
        return [texts], True
    if not isinstance(texts, Sequence) or not texts:
        raise ValueError(f"generate: give a string or a non-empty list of strings, got {texts!r}")
    for text in texts:
        if not isinstance(text, str):
            raise ValueError(f"generate: every prompt must be a string, got {text!r}")
    return list(texts), False
