"""A generating task as a SavedModel that serves text in, text out.

:func:`generation_server` wraps a :class:`~texkit.tasks.CausalLM` or
:class:`~texkit.tasks.Seq2SeqLM` in a ``tf.Module`` whose ``serve`` signature takes a ``[batch]``
string tensor of prompts and returns ``{"text": [batch] strings}``: tokenization, the prompt's
special tokens, generation (greedy, sampling or beam search, the loops of
:mod:`~texkit.tasks.generation_loops`) and detokenization all run inside the graph, so TF
Serving or ``tf.saved_model.load`` needs neither texkit nor Python tokenizers.

A SavedModel holds one shape budget: prompts are cut to their last ``max_prompt_tokens`` tokens
and ``max_new_tokens`` tokens are generated at most, with the end token cut from the text; stop
strings are applied by ``generate`` only (``serve`` returns the text up to the end token). A call
takes up to ``batch_size`` prompts (the batch is padded to it, so every shape is static).
"""

from __future__ import annotations

import os
from typing import Any

import keras
import tensorflow as tf

from texkit.modules.decoders.sampling import seed_tensor
from texkit.tasks.generation import beam_inputs, generation_loop
from texkit.tasks.generation_settings import GenerationSettings

__all__ = ["export_generation", "generation_server"]


def _prompts(task: Any, texts: Any, width: int) -> tuple[Any, Any]:
    """``([batch, width] ids, [batch] lengths)`` of raw prompts, each cut to its last
    ``width`` tokens (special tokens of the task's prompts included)."""
    ids = task._prompt_ids_graph(texts)
    lengths = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), width)
    starts = tf.cast(ids.row_lengths(), tf.int32) - lengths
    rows = tf.ragged.range(starts, starts + lengths)
    kept = tf.gather(ids, rows, batch_dims=1)
    return kept.to_tensor(default_value=task.pad_id, shape=[None, width]), lengths


class _Server(tf.Module):
    def __init__(self, task: Any, settings: GenerationSettings, max_prompt_tokens: int,
                 batch_size: int):  # fmt: skip
        super().__init__(name="texkit_generation")
        self.task, self.tokenizer = task, task.tokenizer
        self.settings, self.width = settings, int(max_prompt_tokens)
        self.batch_size = int(batch_size)
        self.max_length = task.steps_for(self.width, settings.max_new_tokens)
        self.serve = tf.function(
            self._serve, input_signature=[tf.TensorSpec([None], tf.string, name="texts")]
        )

    def _serve(self, texts: Any) -> dict[str, Any]:
        count = tf.shape(texts)[0]
        check = tf.debugging.assert_less_equal(
            count, self.batch_size, message=f"serve: at most {self.batch_size} prompts a call"
        )
        with tf.control_dependencies([check]):
            # Static shapes throughout: the batch is padded to its budget (padding rows repeat
            # nothing: empty prompts, dropped at the end).
            texts = tf.pad(texts, [[0, self.batch_size - count]])
        texts = tf.ensure_shape(texts, [self.batch_size])
        context, lengths = _prompts(self.task, texts, self.width)
        context = tf.ensure_shape(context, [self.batch_size, self.width])
        lengths = tf.ensure_shape(tf.maximum(lengths, 1), [self.batch_size])
        seed = seed_tensor(self.settings.seed)
        ids, counts = generation_loop(self.task, self.settings, context, lengths, seed,
                                      beam_inputs(self.settings), self.max_length)  # fmt: skip
        first = tf.cast(self.task.first_new_step(lengths), tf.int32)
        new = tf.gather(ids, tf.ragged.range(first, first + counts), batch_dims=1)
        ends = tf.constant(list(self.settings.end_token_ids) or [-1], tf.int32)
        last = tf.gather(new, tf.maximum(tf.cast(new.row_lengths(), tf.int32) - 1, 0), batch_dims=1)
        ended = (counts > 0) & tf.reduce_any(last[:, None] == ends[None, :], axis=1)
        new = tf.ragged.boolean_mask(
            new,
            tf.ragged.range(tf.cast(new.row_lengths(), tf.int32))
            < (counts - tf.cast(ended, tf.int32))[:, None],
        )
        texts = self.tokenizer.detokenize(new, skip_special_tokens=True)
        return {"text": texts[:count]}


def generation_server(
    task: Any, max_prompt_tokens: int | None = None, settings: GenerationSettings | None = None,
    batch_size: int = 8,
) -> tf.Module:  # fmt: skip
    """A ``tf.Module`` whose ``serve(texts)`` generates in the graph (see the module) for up to
    ``batch_size`` prompts a call; ``settings``: the task's ``generation`` defaults when
    ``None``; ``max_prompt_tokens``: 128, or fewer when the model's positions leave fewer."""
    from texkit.tasks.generation_settings import settings_from

    if settings is None:
        settings = settings_from(task.hparams.generation.todict(), {}, task._vocab_size())
    limit = task.max_length
    if max_prompt_tokens is None:  # 128, or what the model's positions leave
        room = 128 if limit is None else limit - settings.max_new_tokens
        max_prompt_tokens = min(128, room)
    for name, value in (("max_prompt_tokens", max_prompt_tokens), ("batch_size", batch_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if limit is not None and max_prompt_tokens + settings.max_new_tokens > limit:
        raise ValueError(
            f"max_prompt_tokens={max_prompt_tokens} and max_new_tokens="
            f"{settings.max_new_tokens} need more than the model's {limit} positions"
        )
    task._build_for_weights()
    return _Server(task, settings, max_prompt_tokens, batch_size)


def export_generation(
    task: Any, path: str | os.PathLike, max_prompt_tokens: int | None = None, batch_size: int = 8,
    **settings: Any,
) -> str:  # fmt: skip
    """Writes the task's :func:`generation_server` as a SavedModel at ``path`` (a new or empty
    folder; ``texkit.run.export`` rules) and returns it. ``settings``: ``generate``'s
    (``max_new_tokens``, ``strategy``...) over the task's defaults."""
    from texkit.tasks.generation_settings import settings_from

    path = os.fspath(path)
    if tf.io.gfile.exists(path) and tf.io.gfile.listdir(path):
        raise FileExistsError(f"{path!r} is not empty; give a new or empty folder")
    checked = settings_from(task.hparams.generation.todict(), settings, task._vocab_size())
    server = generation_server(task, max_prompt_tokens, checked, batch_size)
    archive = keras.export.ExportArchive()
    # The endpoint tracks the variables it reads; the tokenizer's lookup tables are tracked
    # here. (Tracking the Keras model itself would also save its default signature, a call on
    # the shapes it was built with, which a task's call does not take.)
    archive.track(task.tokenizer)
    signature = [tf.TensorSpec([None], tf.string, name="texts")]
    archive.add_endpoint("serve", server._serve, input_signature=signature)
    archive.write_out(path, verbose=False)
    return path
