"""Decoding that feeds a decoder its own choices while it trains: scheduled sampling (with
``train_sample``, its always-sample case) and Gumbel-softmax decoding.

Both run over the step contract of :mod:`texkit.modules.decoders.decoding` with vectors in place
of token ids: ``step(inputs [batch, dim], time, state) -> (logits [batch, vocab], state)``, where
``inputs`` are what the decoder's ``embed(ids)`` gives for a token (its word embeddings; a
Transformer adds the positions itself). A sampled token is fed as ``embed(id)``; a Gumbel-softmax
sample ``y [batch, vocab]`` as the soft embedding ``y E``, with ``E = embed(range(vocab))``, so the
gradient flows through the sample into the decoder and the embedding.

* :func:`scheduled_sample_decode` (Bengio et al., 2015, "Scheduled Sampling for Sequence
  Prediction with Recurrent Neural Networks", https://arxiv.org/abs/1506.03099): decodes for the
  ground truth's length; at each step, with probability ``sampling_probability``, the next input
  is a token sampled from the step's softmax instead of the next ground-truth input (Texar's
  ``ScheduledEmbeddingTrainingHelper``); without a probability it always samples
  (``train_sample``). Step ``t`` is fed ``inputs[:, 0]`` at ``t == 0``; after it, each row draws
  a token from ``softmax(logits_t / softmax_temperature)`` (filtered by ``top_k`` and ``top_p``,
  as in :func:`~texkit.modules.decoders.sample_decode`) and, with probability
  ``sampling_probability`` (a coin per row and step), feeds ``embed(token)`` to step ``t + 1``
  instead of ``inputs[:, t + 1]``. The draws of the tokens do not depend on
  ``sampling_probability``, so the same seed gives the same tokens with ``train_sample`` as with
  a probability of 1.
* :func:`gumbel_softmax_decode` (Jang et al., 2017, https://arxiv.org/abs/1611.01144; Maddison
  et al., 2017): decodes from start tokens like sampling, feeding back ``softmax((logits + g) /
  temperature)`` with Gumbel noise ``g``; with ``straight_through`` the forward pass feeds the
  one-hot of its argmax and the gradient is the soft sample's (Texar's
  ``GumbelSoftmaxEmbeddingHelper``). Its argmax is an exact sample of ``softmax(logits)`` (the
  Gumbel-max trick), whatever the temperature.

Like the other algorithms, both preallocate their buffers and run one ``tf.while_loop``, so they
compile with ``tf.function(jit_compile=True)``, and both are differentiable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from texkit.modules.decoders.decoding import (
    DecodeResult,
    Step,
    batch_size_of,
    decode_loop,
    full_lengths,
    one_hot_samples,
    select_rows,
    stacked,
    step_buffers,
    where_batch,
    zero_where,
)
from texkit.modules.decoders.sampling import check_temperature, sample_choice, seed_tensor

__all__ = ["check_probability", "gumbel_softmax_decode", "gumbel_softmax_sample",
           "scheduled_sample_decode"]  # fmt: skip

# The smallest uniform draw: -log(-log(u)) stays finite.
_TINY = 1e-20


def check_probability(sampling_probability: Any) -> Any:
    """``sampling_probability`` as a float32 scalar or ``[batch]`` tensor, checked to be in [0, 1]:
    at once when its value is static, else by an assertion (which XLA does not run)."""
    probability = tf.cast(tf.convert_to_tensor(sampling_probability), tf.float32)
    if probability.shape.rank not in (0, 1):
        raise ValueError(
            f"sampling_probability must be a scalar or a [batch] vector, got shape "
            f"{probability.shape}"
        )
    value = tf.get_static_value(probability)
    if value is not None:
        if not ((value >= 0.0) & (value <= 1.0)).all():
            raise ValueError(f"sampling_probability must be in [0, 1], got {value!r}")
        return probability
    with tf.control_dependencies(
        [
            tf.debugging.assert_greater_equal(
                probability, 0.0, message="sampling_probability must be in [0, 1]"
            ),
            tf.debugging.assert_less_equal(
                probability, 1.0, message="sampling_probability must be in [0, 1]"
            ),
        ]
    ):
        return tf.identity(probability)


def scheduled_sample_decode(
    step: Step,
    embed: Callable[[Any], Any],
    inputs: Any,
    sequence_length: Any,
    initial_state: Any,
    sampling_probability: Any = None,
    softmax_temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: Any = None,
    vocab_size: int | None = None,
    freeze_state: bool = True,
) -> DecodeResult:
    """Scheduled sampling over the ground-truth ``inputs``; always sampling when
    ``sampling_probability`` is ``None`` (``train_sample``).

    Args:
        step: ``step(inputs [batch, dim], time, state) -> (logits, state)``.
        embed: token ids ``[batch]`` -> step inputs ``[batch, dim]``.
        inputs: ``[batch, time, dim]`` the ground truth's step inputs (the embedded tokens).
        sequence_length: ``[batch]`` valid lengths (``None``: all ``time`` steps).
        initial_state: the step's state before the first step.
        sampling_probability: ``None`` (always sample), or a float or float tensor in [0, 1],
            scalar or ``[batch]``; a tensor changes between calls without retracing.
        softmax_temperature, top_k, top_p: the sampling distribution.
        seed: an int or a ``[2]`` int tensor (``None``: a new seed).
        vocab_size, freeze_state: as in :func:`~texkit.modules.decoders.greedy_decode` (a row's
            state is kept from its last valid step).

    Returns:
        :class:`~texkit.modules.decoders.DecodeResult` over ``time`` steps: ``sample_id`` the
        drawn token where it was fed to the next step and ``-1`` where the ground truth was (as
        Texar's helper), ``lengths`` the ``sequence_length``; logits, ids and soft samples are
        zeros at and past a row's length.
    """
    inputs = tf.convert_to_tensor(inputs)
    if inputs.shape.rank != 3:
        raise ValueError(f"inputs must be [batch, time, dim], got shape {inputs.shape}")
    probability = None if sampling_probability is None else check_probability(sampling_probability)
    sample_seed, coin_seed = tf.unstack(tf.random.experimental.stateless_split(seed_tensor(seed)))
    choose = sample_choice(softmax_temperature, top_k, top_p, sample_seed)
    batch = batch_size_of(inputs)
    max_time = inputs.shape[1] if inputs.shape[1] is not None else tf.shape(inputs)[1]
    sequence_length = full_lengths(sequence_length, inputs)
    time_major = tf.transpose(inputs, (1, 0, 2))

    def body(time, fed, buffers, state):
        logits, new_state = step(fed, time, state)
        logits = tf.cast(logits, tf.float32)
        valid = time < sequence_length
        sampled = choose(logits, time)
        use = tf.ones([batch], tf.bool)
        if probability is not None:
            step_seed = tf.random.experimental.stateless_fold_in(coin_seed, time)
            use = tf.random.stateless_uniform([batch], step_seed) < probability
        truth = time_major[tf.minimum(time + 1, max_time - 1)]
        fed = where_batch(use, tf.cast(embed(sampled), fed.dtype), truth)
        buffers = {
            "ids": buffers["ids"].write(time, tf.where(valid, tf.where(use, sampled, -1), 0)),
            "logits": buffers["logits"].write(time, zero_where(~valid, logits)),
        }
        if freeze_state:
            new_state = select_rows(valid, new_state, state)
        return time + 1, fed, buffers, new_state

    buffers = step_buffers(inputs.shape[0], vocab_size, max_time)
    # Steps past every row's length are not computed (they stack as zeros).
    last = tf.minimum(max_time, tf.reduce_max(sequence_length))
    loop_vars = (tf.constant(0), time_major[0], buffers, initial_state)
    _, _, buffers, state = tf.while_loop(
        lambda time, *_: time < last, body, loop_vars, maximum_iterations=max_time
    )
    out = stacked(buffers)
    depth = tf.shape(out["logits"])[-1] if vocab_size is None else vocab_size
    valid = tf.sequence_mask(sequence_length, max_time)
    soft_sample = one_hot_samples(out["ids"], depth, valid)
    return DecodeResult(out["ids"], out["logits"], sequence_length, state, soft_sample)


def gumbel_softmax_sample(
    logits: Any, temperature: Any, seed: Any, straight_through: bool = False
) -> tuple[Any, Any]:
    """``(ids, soft)``: ``soft = softmax((logits + g) / temperature)`` with ``g`` standard Gumbel
    noise drawn from ``seed`` (stateless), ``ids`` its argmax. With ``straight_through``, ``soft``
    is the one-hot of ``ids`` in the forward pass and passes its gradient to the soft sample."""
    uniform = tf.random.stateless_uniform(tf.shape(logits), seed, minval=_TINY, maxval=1.0)
    gumbel = -tf.math.log(-tf.math.log(uniform))
    soft = tf.nn.softmax((tf.cast(logits, tf.float32) + gumbel) / temperature, axis=-1)
    ids = tf.argmax(soft, axis=-1, output_type=tf.int32)
    if straight_through:
        soft = _straight_through(soft, ids)
    return ids, soft


def _straight_through(soft: Any, ids: Any) -> Any:
    @tf.custom_gradient
    def hard(soft: Any) -> Any:
        return tf.one_hot(ids, tf.shape(soft)[-1], dtype=soft.dtype), lambda upstream: upstream

    return hard(soft)


def gumbel_softmax_decode(
    step: Step,
    start_inputs: Any,
    embedding_matrix: Any,
    start_tokens: Any,
    end_token: Any,
    max_decoding_length: int,
    initial_state: Any,
    softmax_temperature: Any = 1.0,
    straight_through: bool = False,
    seed: Any = None,
    vocab_size: int | None = None,
    freeze_state: bool = True,
    start_time: Any = 0,
    forced_ids: Any = None,
) -> DecodeResult:
    """Gumbel-softmax decoding from ``start_tokens``: each step's soft sample ``y`` (see
    :func:`gumbel_softmax_sample`) is recorded as its ``soft_sample`` and fed to the next step as
    ``y @ embedding_matrix``; its argmax is the step's ``sample_id`` and ends a row at
    ``end_token``.

    Args:
        step: ``step(inputs [batch, dim], time, state) -> (logits, state)``.
        start_inputs: ``[batch, dim]`` the embedded ``start_tokens``, fed first.
        embedding_matrix: ``[vocab_size, dim]``, the step input of every token.
        start_tokens, end_token, max_decoding_length: as in
            :func:`~texkit.modules.decoders.greedy_decode`.
        initial_state, vocab_size, freeze_state: as in
            :func:`~texkit.modules.decoders.greedy_decode`.
        start_time, forced_ids: as in :func:`~texkit.modules.decoders.greedy_decode`.
        softmax_temperature: the Gumbel-softmax temperature ``tau > 0`` (a float or a float
            tensor, e.g. annealed between calls without retracing): small values approach the
            one-hot sample.
        straight_through: feed (and record) the one-hot argmax, with the soft sample's gradient.
        seed: an int or a ``[2]`` int tensor for the noise (``None``: a new seed).
    """
    check_temperature(softmax_temperature)
    if not isinstance(straight_through, bool):
        raise ValueError(f"straight_through must be a bool, got {straight_through!r}")
    seed = seed_tensor(seed)

    def choose(logits: Any, time: Any) -> tuple[Any, Any]:
        step_seed = tf.random.experimental.stateless_fold_in(seed, time)
        return gumbel_softmax_sample(logits, softmax_temperature, step_seed, straight_through)

    def feed(ids: Any, soft: Any) -> Any:
        return tf.linalg.matmul(tf.cast(soft, embedding_matrix.dtype), embedding_matrix)

    return decode_loop(
        step, choose, start_tokens, end_token, max_decoding_length, initial_state, vocab_size,
        freeze_state, start_time, forced_ids, feed=feed, start_inputs=start_inputs,
    )  # fmt: skip
