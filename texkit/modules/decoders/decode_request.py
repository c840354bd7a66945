"""DecodeRequest: everything one decoder call asks for, as one value handed to the hooks.

:class:`~texkit.modules.decoders.DecoderBase` builds one request per call (``decoder(...)`` or
``decoder.beam_search(...)``), checks it, and passes it to the strategy that runs it and to the
decoder's hooks (``_teacher_forcing(request)``, ``_inference(request)``,
``_feedback_inference(request)``). A hook reads the fields it needs and ignores the others; a
hook that needs a variant (another embedding, another length) makes one with
``request._replace(...)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["DecodeRequest"]


class DecodeRequest(NamedTuple):
    """One decoder call's arguments, checked (a frozen value).

    Attributes:
        strategy: the decoding strategy's name (``"beam_search"`` for ``beam_search``).
        inputs, sequence_length: the ground truth, ``[batch, time]`` ids or ``[batch, time,
            dim]`` embeddings, and its ``[batch]`` lengths (the ``train_*`` strategies).
        memory, memory_sequence_length: what the decoder attends to, as its ``_check_memory``
            returned them.
        initial_state: a recurrent decoder's start state (``None``: zeros).
        embedding: ids -> vectors (a layer, a callable or a ``[vocab, dim]`` matrix).
        start_tokens, end_token: ``[batch]`` first tokens and the int token that ends a sequence
            (or several: a list of ints or a 1-D int tensor).
        context, context_sequence_length: prompts, instead of ``start_tokens``, and their lengths.
        max_length: a Python int, the steps decoded (``None`` for teacher forcing).
        softmax_temperature, top_k, top_p, seed: the sampling settings.
        sampling_probability: ``scheduled_sampling``'s probability of feeding a sample.
        straight_through: ``gumbel_softmax`` feeds the one-hot argmax.
        beam_width, length_penalty: beam search's (``beam_width`` is ``None`` otherwise).
        training: Keras' training flag.
    """

    strategy: str
    inputs: Any = None
    sequence_length: Any = None
    memory: Any = None
    memory_sequence_length: Any = None
    initial_state: Any = None
    embedding: Any = None
    start_tokens: Any = None
    end_token: Any = None
    context: Any = None
    context_sequence_length: Any = None
    max_length: int | None = None
    softmax_temperature: Any = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: Any = None
    sampling_probability: Any = None
    straight_through: bool = False
    beam_width: int | None = None
    length_penalty: float = 0.0
    training: Any = None
