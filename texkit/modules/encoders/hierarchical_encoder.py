"""HierarchicalRNNEncoder: an RNN encoder over the final states of another (Texar's).

The minor encoder reads each low-level sequence (the tokens of one turn of a dialog, the words of
one sentence of a paragraph); its final states, flattened by a ``medium``, are the inputs of the
major encoder, which reads them in order (the turns of a dialog).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
from keras import ops

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.hparams import HParamsError, hparams_scope
from texkit.modules.encoders.rnn_encoders import BidirectionalRNNEncoder, UnidirectionalRNNEncoder

__all__ = ["HierarchicalRNNEncoder"]

_ENCODERS = (UnidirectionalRNNEncoder, BidirectionalRNNEncoder)
# The permutation that brings inputs of each order to [batch, turns, tokens, dim], and whether
# the minor encoder's flat batch is turn-major (index turn * batch + example) in that order.
_ORDERS = {
    "btu": ((0, 1, 2, 3), False),
    "utb": ((2, 1, 0, 3), True),
    "tbu": ((1, 0, 2, 3), True),
    "ubt": ((1, 2, 0, 3), False),
}
# The major encoder is time-major (outputs [turns, batch, ...]) in these orders, as in Texar.
_MAJOR_TIME_MAJOR = ("utb", "tbu")
_SUFFIXES = ("_minor", "_major")
_RESERVED = ("sequence_length", "time_major", "training")


def _flatten_state(state: Any) -> Any:
    if not isinstance(state, (list, tuple)):
        return state
    if all(not isinstance(part, (list, tuple)) for part in state):
        return state[0]  # one cell's state: its output part (h of [h, c])
    return ops.concatenate([_flatten_state(part) for part in state], axis=-1)


def _split_kwargs(name: str, kwargs: dict) -> tuple[dict, dict]:
    """Keyword arguments for (minor, major): ``x_minor`` to the minor encoder as ``x``,
    ``x_major`` to the major one, any other to both."""
    minor, major = {}, {}
    for key, value in kwargs.items():
        base, target = key, (minor, major)
        for suffix, side in zip(_SUFFIXES, ((minor,), (major,)), strict=True):
            if key.endswith(suffix):
                base, target = key[: -len(suffix)], side
        if base in _RESERVED:
            raise ValueError(
                f"{name}: {key!r} is not a keyword argument of the call: sequence lengths are "
                "sequence_length_minor and sequence_length_major, the time axis follows order, "
                "training is passed to both encoders"
            )
        for side in target:
            side[base] = value
    return minor, major


class HierarchicalRNNEncoder(ModuleBase):
    """A hierarchical encoder: a minor RNN encoder over the tokens of each turn, a major RNN
    encoder over the turns' final states.

    The two encoders are texkit's RNN encoders (``UnidirectionalRNNEncoder`` or
    ``BidirectionalRNNEncoder``), configured by ``encoder_major_hparams`` and
    ``encoder_minor_hparams`` (with ``config_share``, the minor encoder has the major one's type
    and hparams, with weights of its own).

    Call arguments:
        inputs: ``[batch, turns, tokens, dim]`` float, the first three axes in the ``order``
            given.
        order: ``'btu'`` (neither encoder time-major), ``'utb'`` (both), ``'tbu'`` (the major
            encoder time-major), ``'ubt'`` (the minor encoder time-major), as in Texar: the
            axes of ``inputs``, of a 2-D ``sequence_length_minor`` and of the major outputs
            follow it.
        medium: a callable, or a list of callables and ``'flatten'``, applied in turn to the
            minor encoder's final states to give the major encoder's inputs ``[batch * turns,
            width]``; ``None``: :meth:`flatten`.
        sequence_length_major: ``[batch]`` int numbers of turns; ``None``: every turn counts.
        sequence_length_minor: int numbers of tokens of each turn: ``[batch, turns]`` (or
            ``[turns, batch]`` in orders ``'utb'`` and ``'tbu'``), or flat in the same order;
            ``None``: every token counts.
        training: Keras' training flag, passed to both encoders.
        **kwargs: more keyword arguments of the encoders (``initial_state``): one ending in
            ``_minor`` goes to the minor encoder without the suffix (``initial_state_minor``, with
            a batch of ``batch * turns`` in the order's flattening; see
            :meth:`tile_initial_state_minor`), one ending in ``_major`` to the major encoder, any
            other to both.

    Returns:
        The major encoder's ``(outputs, final_state)``: ``outputs`` ``[batch, turns, width]``
        (``[turns, batch, width]`` in orders ``'utb'`` and ``'tbu'``; a pair of them for a
        bidirectional major encoder), ``final_state`` in its structure.

    Example:
        >>> encoder = HierarchicalRNNEncoder({
        ...     "encoder_minor_hparams": {"rnn_cell": {"kwargs": {"units": 16}}},
        ...     "encoder_major_hparams": {"rnn_cell": {"kwargs": {"units": 32}}}})
        >>> outputs, (h, c) = encoder(tf.zeros([2, 4, 9, 8]))
        >>> outputs.shape, h.shape
        (TensorShape([2, 4, 32]), TensorShape([2, 32]))
    """

    HPARAMS_DOC = {
        "encoder_major_type": (
            "The major (high-level) encoder: UnidirectionalRNNEncoder or BidirectionalRNNEncoder."
        ),
        "encoder_major_hparams": "The major encoder's hparams (its defaults where not given).",
        "encoder_minor_type": "The minor (low-level) encoder, as encoder_major_type.",
        "encoder_minor_hparams": "The minor encoder's hparams.",
        "config_share": (
            "The minor encoder is configured by encoder_major_type and encoder_major_hparams "
            "(weights of its own); encoder_minor_* are ignored."
        ),
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        minor = "encoder_major" if hp.config_share else "encoder_minor"
        self.encoder_major = self._encoder("encoder_major", "encoder_major")
        self.encoder_minor = self._encoder(minor, "encoder_minor")

    def _encoder(self, key: str, name: str) -> ModuleBase:
        hp = self.hparams
        with hparams_scope(f"{key}_type"):
            cls = registry.resolve(hp[f"{key}_type"])
            if not (isinstance(cls, type) and issubclass(cls, _ENCODERS)):
                names = [encoder.__name__ for encoder in _ENCODERS]
                raise HParamsError(f"expected one of {names}, got {hp[f'{key}_type']!r}")
        with hparams_scope(f"{key}_hparams"):
            return cls(hp[f"{key}_hparams"].todict(), name=name, dtype=self.dtype_policy)

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "encoder_major_type": "UnidirectionalRNNEncoder",
            "encoder_major_hparams": {},
            "encoder_minor_type": "UnidirectionalRNNEncoder",
            "encoder_minor_hparams": {},
            "config_share": False,
            "name": "hierarchical_rnn_encoder",
        }

    @staticmethod
    def flatten(state: Any) -> Any:
        """A final state as one ``[batch, width]`` tensor: a cell's state gives its output part
        (``h`` of an LSTM's ``[h, c]``, as Texar took ``LSTMStateTuple.h``), the states of
        several layers or directions are concatenated."""
        return _flatten_state(state)

    @staticmethod
    def tile_initial_state_minor(initial_state: Any, order: str, inputs_shape: Any) -> Any:
        """Repeats an initial state of batch ``turns`` (one per turn position) to the minor
        encoder's batch ``batch * turns`` in ``order``'s flattening.

        Args:
            initial_state: a state structure of tensors ``[turns, ...]``.
            order: the call's ``order``.
            inputs_shape: the shape of the call's ``inputs``.
        """
        if order not in _ORDERS:
            raise ValueError(f"order must be one of {sorted(_ORDERS)}, got {order!r}")
        perm, turn_major = _ORDERS[order]
        batch = inputs_shape[perm[0]]  # the input axis that becomes the batch axis
        if turn_major:
            return keras.tree.map_structure(lambda x: ops.repeat(x, batch, axis=0), initial_state)
        return keras.tree.map_structure(
            lambda x: ops.tile(x, [batch] + [1] * (len(x.shape) - 1)), initial_state
        )

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        # Built at the first call, where the medium and the order are known.
        pass

    def _apply_medium(self, states: Any, medium: Any) -> Any:
        if medium is None:
            return _flatten_state(states)
        steps = medium if isinstance(medium, Sequence) and not isinstance(medium, str) else [medium]
        for step in steps:
            if isinstance(step, str) and step == "flatten":
                states = _flatten_state(states)
            elif isinstance(step, Callable):
                states = step(states)
            else:
                raise ValueError(
                    f"{self.name}: medium must be callables or 'flatten', got {step!r}"
                )
        return states

    def call(
        self,
        inputs: Any,
        order: str = "btu",
        medium: Any = None,
        sequence_length_major: Any = None,
        sequence_length_minor: Any = None,
        training: Any = None,
        **kwargs: Any,
    ) -> tuple[Any, Any]:
        if order not in _ORDERS:
            raise ValueError(f"{self.name}: order must be one of {sorted(_ORDERS)}, got {order!r}")
        if len(inputs.shape) != 4:
            raise ValueError(
                f"{self.name}: inputs must be [batch, turns, tokens, dim], got {inputs.shape}"
            )
        perm, turn_major = _ORDERS[order]
        kwargs_minor, kwargs_major = _split_kwargs(self.name, kwargs)
        inputs = ops.transpose(inputs, perm)
        batch, turns, tokens = (ops.shape(inputs)[i] for i in range(3))
        flat = ops.reshape(inputs, (batch * turns, tokens, inputs.shape[3]))

        def example_major(x: Any) -> Any:
            """A flat batch in the order's flattening -> example-major (b * turns + t)."""
            if not turn_major:
                return x
            x = ops.reshape(x, (turns, batch, *ops.shape(x)[1:]))
            return ops.reshape(ops.swapaxes(x, 0, 1), (batch * turns, *ops.shape(x)[2:]))

        if sequence_length_minor is not None:
            sequence_length_minor = example_major(ops.reshape(sequence_length_minor, (-1,)))
        if "initial_state" in kwargs_minor and kwargs_minor["initial_state"] is not None:
            kwargs_minor["initial_state"] = keras.tree.map_structure(
                example_major, kwargs_minor["initial_state"]
            )
        _, states = self.encoder_minor(
            flat, sequence_length=sequence_length_minor, training=training, **kwargs_minor
        )
        states = self._apply_medium(states, medium)
        states = ops.reshape(states, (batch, turns, *ops.shape(states)[1:]))
        outputs, final_state = self.encoder_major(
            states, sequence_length=sequence_length_major, training=training, **kwargs_major
        )
        if order in _MAJOR_TIME_MAJOR:
            outputs = keras.tree.map_structure(lambda x: ops.swapaxes(x, 0, 1), outputs)
        return outputs, final_state
