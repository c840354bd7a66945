"""Policies: a texkit decoder seen as something that writes sequences and scores them.

A :class:`DecoderPolicy` wraps any texkit decoder (RNN and attention decoders, the Transformer
decoder, GPT-2, T5's decoder, the Llama line) for sequence-level learning. It does two things:

* :meth:`DecoderPolicy.rollout`: writes ``num_samples`` sequences per input with a token chooser
  (sampling with the row's own random numbers, or greedy decoding), without gradients, through
  the decoder's :class:`~texkit.modules.decoders.Inference` and the task loop of
  :func:`texkit.tasks.generation_loops.token_loop` (prompts forced, end tokens counted);
* :meth:`DecoderPolicy.logits`: the decoder's logits for the tokens of a rollout, teacher
  forced, with gradients: the same network, so ``log_softmax(logits)`` at the chosen ids is
  the sequence's log-probability under the current weights.

What a sequence is conditioned on comes from the batch's features: ``condition(features,
training)`` returns the decoder's ``memory``, ``memory_sequence_length`` and ``initial_state``
(an encoder's outputs, a connector's state: computed once per input, then repeated for its
samples), and ``prompt=(ids_key, lengths_key)`` names prompts to continue (a decoder-only
language model); without prompts every sequence starts from ``start_token``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import keras
import tensorflow as tf

from texkit.tasks.generation_loops import token_loop

__all__ = ["DecoderPolicy", "Rollout", "greedy_choice", "repeat_rows", "vocab_detokenizer"]

_CONDITION_KEYS = ("memory", "memory_sequence_length", "initial_state")


class Rollout(NamedTuple):
    """Sequences written by a policy, ``n = batch * num_samples`` rows (row ``i * k + j`` is
    input ``i``'s ``j``-th).

    Attributes:
        ids: ``[n, max_new_tokens]`` int32, the written tokens (``pad_id`` after each length).
        lengths: ``[n]`` int32, the tokens written (an end token, when written, counts).
        prompt_ids: ``[n, prompt_width]`` int32, what each row continued (its start token,
            or its prompt).
        prompt_lengths: ``[n]`` int32.
    """

    ids: Any
    lengths: Any
    prompt_ids: Any
    prompt_lengths: Any


def repeat_rows(structure: Any, times: int) -> Any:
    """Every tensor of ``structure`` with each row repeated ``times`` times (``None`` kept)."""
    if times == 1:
        return structure
    return tf.nest.map_structure(
        lambda t: None if t is None else tf.repeat(tf.convert_to_tensor(t), times, axis=0),
        structure,
    )


def greedy_choice(logits: Any, time: Any = None) -> Any:
    """The chooser of greedy decoding: the argmax of each row."""
    return tf.argmax(logits, axis=-1, output_type=tf.int32)


def vocab_detokenizer(vocab: Any, separator: str = " ") -> Callable[[Any, Any], Any]:
    """``detokenize(ids [n, T], lengths [n]) -> tf.string [n]`` for a
    :class:`~texkit.data.Vocab`: the tokens of each row up to its length, joined by
    ``separator``."""

    def detokenize(ids: Any, lengths: Any) -> Any:
        tokens = vocab.map_ids_to_tokens(tf.cast(ids, tf.int64))
        return tf.strings.reduce_join(
            tf.RaggedTensor.from_tensor(tokens, lengths=lengths), axis=1, separator=separator
        )

    return detokenize


class DecoderPolicy:
    """A texkit decoder as a policy over token sequences (see the module docstring).

    Args:
        decoder: a texkit decoder (a :class:`~texkit.modules.decoders.DecoderBase`).
        max_new_tokens: the most tokens a rollout writes (a Python int: buffers are static).
        end_token: the id (or ids) that end a sequence, ``None`` for none.
        start_token: the first token of every sequence, when there are no prompts.
        prompt: ``(ids_key, lengths_key)``: the features holding ``[batch, width]`` prompts
            (a static width) and their ``[batch]`` lengths; or a function ``prompt(features) ->
            (ids, lengths)`` making them (e.g. tokenizing texts); or ``None``.
        embedding: the embedder of a decoder that has none of its own (its inputs are then
            embedded by it), else ``None``.
        condition: ``condition(features, training) -> dict`` with any of ``memory``,
            ``memory_sequence_length``, ``initial_state``, or ``None``.
        detokenize: ``detokenize(ids, lengths) -> tf.string [n]`` (e.g.
            :func:`vocab_detokenizer`), for rewards over texts; ``None``: no texts.
        model: the Keras layer or model that owns every weight the policy trains (the
            decoder, its embedder, the encoder behind ``condition``); default the decoder.
        pad_id: the id written after a sequence's end.
        vocab_size: the decoder's output size (default: read from the decoder).
    """

    def __init__(
        self,
        decoder: Any,
        *,
        max_new_tokens: int,
        end_token: Any,
        start_token: int | None = None,
        prompt: tuple[str, str] | None = None,
        embedding: Any = None,
        condition: Callable[[Mapping[str, Any], Any], Mapping[str, Any]] | None = None,
        detokenize: Callable[[Any, Any], Any] | None = None,
        model: Any = None,
        pad_id: int = 0,
        vocab_size: int | None = None,
    ):
        if (
            not isinstance(max_new_tokens, int)
            or isinstance(max_new_tokens, bool)
            or (max_new_tokens < 1)
        ):
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        if (start_token is None) == (prompt is None):
            raise ValueError("give exactly one of start_token and prompt=(ids_key, lengths_key)")
        if (
            prompt is not None
            and not callable(prompt)
            and (not isinstance(prompt, (tuple, list)) or len(prompt) != 2)
        ):
            raise ValueError(f"prompt must be (ids_key, lengths_key) or a function, got {prompt!r}")
        self.decoder = decoder
        self.max_new_tokens = max_new_tokens
        self.end_token = end_token
        self.start_token = start_token
        self.prompt = tuple(prompt) if isinstance(prompt, (tuple, list)) else prompt
        self.embedding = embedding
        self.condition = condition
        self.detokenize = detokenize
        self.model = decoder if model is None else model
        self.pad_id = int(pad_id)
        self._vocab_size = vocab_size

    @property
    def vocab_size(self) -> int:
        """The number of tokens the decoder scores."""
        size = self._vocab_size or getattr(self.decoder, "vocab_size", None)
        if size is None:
            size = getattr(getattr(self.decoder, "output_layer", None), "units", None)
        if size is None:
            raise ValueError(f"{self.decoder.name}: its vocabulary size is not known yet")
        return int(size)

    def prefix(self, features: Mapping[str, Any]) -> tuple[Any, Any]:
        """``(prompt_ids [batch, width], prompt_lengths [batch])`` of a batch (its start
        tokens as prompts of one token when there are no prompts)."""
        if self.prompt is None:
            batch = _batch_size(features)
            return tf.fill([batch, 1], int(self.start_token)), tf.ones([batch], tf.int32)
        if callable(self.prompt):
            ids, lengths = self.prompt(features)
            what = "the prompt function's ids"
        else:
            ids_key, lengths_key = self.prompt
            for key in (ids_key, lengths_key):
                if key not in features:
                    raise KeyError(
                        f"prompt: no feature {key!r}; the features are {sorted(features)}"
                    )
            ids, lengths = features[ids_key], features[lengths_key]
            what = f"feature {ids_key!r}"
        ids = tf.cast(ids, tf.int32)
        if ids.shape.rank != 2 or ids.shape[1] is None:
            raise ValueError(
                f"prompt: {what} must be [batch, width] ids with a static width, got shape "
                f"{tuple(ids.shape)}"
            )
        return ids, tf.cast(lengths, tf.int32)

    def conditioning(self, features: Mapping[str, Any], num_samples: int, training: Any) -> dict:
        """The decoder's ``memory``, ``memory_sequence_length`` and ``initial_state`` for the
        rollout's rows (computed per input, repeated per sample)."""
        if self.condition is None:
            return {}
        given = dict(self.condition(features, training))
        unknown = sorted(set(given) - set(_CONDITION_KEYS))
        if unknown:
            raise ValueError(
                f"condition: returned {unknown}; it may return only {list(_CONDITION_KEYS)}"
            )
        return {k: repeat_rows(v, num_samples) for k, v in given.items()}

    def rollout(
        self, features: Mapping[str, Any], num_samples: int, choose: Callable[[Any, Any], Any]
    ) -> Rollout:
        """``num_samples`` sequences per input of ``features``, each token picked by
        ``choose(logits [n, vocab], time) -> ids [n]`` (no gradients flow)."""
        prompt_ids, prompt_lengths = self.prefix(features)
        prompt_ids = repeat_rows(prompt_ids, num_samples)
        prompt_lengths = repeat_rows(prompt_lengths, num_samples)
        condition = self.conditioning(features, num_samples, training=False)
        width = int(prompt_ids.shape[1])
        max_length = width - 1 + self.max_new_tokens
        if self.prompt is None:
            start = {"start_tokens": prompt_ids[:, 0]}
        else:
            start = {"context": prompt_ids, "context_sequence_length": prompt_lengths}
        run = self.decoder.prepare_inference(
            **start, max_decoding_length=max_length, embedding=self.embedding, **condition
        )
        ids, counts = token_loop(
            run, choose, self.end_token, prompt_lengths, self.max_new_tokens, max_length,
            self.pad_id,
        )  # fmt: skip
        positions = (prompt_lengths - 1)[:, None] + tf.range(self.max_new_tokens)[None, :]
        written = tf.gather(ids, tf.minimum(positions, max_length - 1), batch_dims=1)
        valid = tf.range(self.max_new_tokens)[None, :] < counts[:, None]
        written = tf.where(valid, written, self.pad_id)
        return Rollout(
            tf.stop_gradient(written), tf.stop_gradient(counts), prompt_ids, prompt_lengths
        )

    def logits(
        self,
        features: Mapping[str, Any],
        num_samples: int,
        rollout: Rollout,
        training: Any = None,
    ) -> Any:
        """``[n, max_new_tokens, vocab]`` float32: the decoder's logits for each written
        token (teacher forced on the prompt and the rollout's tokens), with gradients."""
        condition = self.conditioning(features, num_samples, training)
        width = int(rollout.prompt_ids.shape[1])
        steps = rollout.ids.shape[1] or tf.shape(rollout.ids)[1]  # static when it can be
        prompts = tf.RaggedTensor.from_tensor(rollout.prompt_ids, lengths=rollout.prompt_lengths)
        written = tf.RaggedTensor.from_tensor(rollout.ids, lengths=rollout.lengths)
        tokens = tf.concat([prompts, written], axis=1).to_tensor(default_value=self.pad_id)
        room = width + steps - tf.shape(tokens)[1]  # rows that all end early leave room
        tokens = tf.pad(tokens, [[0, 0], [0, room]], constant_values=self.pad_id)
        if isinstance(steps, int):
            tokens = tf.ensure_shape(tokens, [None, width + steps])
        inputs = tokens[:, : width + steps - 1]
        if self.embedding is not None:
            inputs = self.embedding(inputs)
        lengths = tf.maximum(rollout.prompt_lengths + rollout.lengths - 1, 1)
        outputs, _, _ = self.decoder(
            inputs=inputs, sequence_length=lengths, training=training, **condition
        )
        positions = (rollout.prompt_lengths - 1)[:, None] + tf.range(steps)[None, :]
        return tf.cast(tf.gather(outputs.logits, positions, batch_dims=1), tf.float32)

    def texts(self, rollout: Rollout) -> Any:
        """``[n]`` tf.string: each rollout's text (its end token left out), or ``None`` when
        the policy has no ``detokenize``."""
        if self.detokenize is None:
            return None
        ended = _ends_with_end(rollout, self.end_token)
        lengths = rollout.lengths - tf.cast(ended, tf.int32)
        ids = tf.where(tf.range(tf.shape(rollout.ids)[1])[None, :] < lengths[:, None],
                       rollout.ids, self.pad_id)  # fmt: skip
        return self.detokenize(ids, lengths)

    def weights_of(self) -> list:
        """The trainable weights of the policy's model."""
        model = self.model
        return list(model.trainable_weights) if isinstance(model, keras.layers.Layer) else []


def _ends_with_end(rollout: Rollout, end_token: Any) -> Any:
    """``[n]`` bool: the rows whose last written token is an end token."""
    if end_token is None:
        return tf.zeros_like(rollout.lengths, tf.bool)
    ends = tf.reshape(tf.constant(end_token, tf.int32), [-1])
    last = tf.gather(rollout.ids, tf.maximum(rollout.lengths - 1, 0), batch_dims=1)
    hit = tf.reduce_any(tf.equal(last[:, None], ends[None, :]), axis=1)
    return hit & (rollout.lengths > 0)


def _batch_size(features: Mapping[str, Any]) -> Any:
    if not features:
        raise ValueError("features: empty; a policy needs at least one feature per input")
    first = tf.convert_to_tensor(features[sorted(features)[0]])
    return first.shape[0] if first.shape[0] is not None else tf.shape(first)[0]
