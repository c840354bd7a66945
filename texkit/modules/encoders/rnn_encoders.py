"""RNN encoders: UnidirectionalRNNEncoder and BidirectionalRNNEncoder (as in Texar).

Both run cells built by :func:`texkit.core.layers.get_rnn_cell` with ``keras.layers.RNN`` under a
mask built from ``sequence_length``: at a padded step the state is carried over unchanged and the
output is zero, so the final state is each sequence's state at its own last valid step and
padding never changes a result. An optional stack of dense layers (``output_layer``) is then
applied to the outputs at every step, and padded steps are zeroed again.

The backward direction of :class:`BidirectionalRNNEncoder` reads each sequence's valid part
reversed (``tf.reverse_sequence``) and its outputs are reversed back, so ``outputs_bw[:, t]``
belongs to input step ``t`` and has read the steps ``t .. length - 1``.

States have Keras' structure (the one ``initial_state`` takes and the cells return), a list:

* one cell: its state parts, ``[h, c]`` for ``LSTMCell``, ``[h]`` for ``GRUCell`` and
  ``SimpleRNNCell``, each ``[batch, units]``;
* ``num_layers > 1`` cells: one such list per layer, bottom first: ``[[h0, c0], [h1, c1]]``.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.core.layers import (
    default_rnn_cell_hparams,
    get_activation,
    get_rnn_cell,
    rnn_cell_hparams_doc,
)
from texkit.hparams import HParams, HParamsError, check_rate, hparams_scope

__all__ = [
    "BidirectionalRNNEncoder",
    "UnidirectionalRNNEncoder",
    "default_output_layer_hparams",
]

# Keys of other_dense_kwargs that the other output_layer keys already set.
_RESERVED_DENSE_KWARGS = ("units", "activation", "name", "dtype")


def default_output_layer_hparams() -> dict:
    """The defaults of an ``output_layer`` entry: no dense layers."""
    return {
        "num_layers": 0,
        "layer_size": 128,
        "activation": None,
        "final_layer_activation": None,
        "other_dense_kwargs": None,
        "dropout_layer_ids": [],
        "dropout_rate": 0.5,
        "variational_dropout": False,
    }


def _output_layer_doc(path: str) -> dict[str, str]:
    lines = {
        "num_layers": "Number of dense layers applied to the RNN output at every step (0: none).",
        "layer_size": "Output size of every dense layer.",
        "activation": "Activation of every dense layer but the last (None: linear; a name or "
        "{type, kwargs}).",
        "final_layer_activation": "Activation of the last dense layer (None: linear).",
        "other_dense_kwargs": "Other keras.layers.Dense arguments (use_bias, kernel_initializer, "
        "...), a dict, or None.",
        "dropout_layer_ids": "Indices of the dense layers whose inputs get dropout; num_layers: "
        "dropout on the last layer's output.",
        "dropout_rate": "Rate of that dropout (training only), in [0, 1).",
        "variational_dropout": "The same dropout mask at every time step of a sequence.",
    }
    return {f"{path}.{key}": line for key, line in lines.items()}


def _backward_doc(docs: dict[str, str], entry: str) -> dict[str, str]:
    return {
        path: f"As {path.replace('_bw', '_fw', 1)}, for the backward direction (ignored with "
        f"{entry}_share_config)."
        for path in docs
    }


def _build_output_layers(hp: Any, path: str, dtype: Any, name: str) -> list[keras.layers.Layer]:
    """The dense layers of an ``output_layer`` entry at ``path``, validated."""
    if hp.num_layers < 0:
        raise HParamsError(f"expected an int >= 0, got {hp.num_layers!r}", f"{path}.num_layers")
    if hp.layer_size < 1:
        raise HParamsError(f"expected a positive int, got {hp.layer_size!r}", f"{path}.layer_size")
    with hparams_scope(path):
        check_rate(hp, "dropout_rate")
    for index, layer_id in enumerate(hp.dropout_layer_ids):
        if isinstance(layer_id, bool) or not isinstance(layer_id, int):
            raise HParamsError(f"expected an int, got {layer_id!r}", f"{path}.dropout_layer_ids")
        if not 0 <= layer_id <= hp.num_layers:
            raise HParamsError(
                f"expected layer ids in [0, num_layers={hp.num_layers}], got {layer_id!r}",
                f"{path}.dropout_layer_ids.{index}",
            )
    activation = get_activation(hp.activation, f"{path}.activation")
    final_activation = get_activation(hp.final_layer_activation, f"{path}.final_layer_activation")
    other = hp.other_dense_kwargs
    other = {} if other is None else other.todict() if isinstance(other, HParams) else other
    if not isinstance(other, dict):
        raise HParamsError(f"expected a dict or None, got {other!r}", f"{path}.other_dense_kwargs")
    for key in other:
        if key in _RESERVED_DENSE_KWARGS:
            raise HParamsError(
                f"{key!r} is set by the other output_layer keys", f"{path}.other_dense_kwargs.{key}"
            )
    layers = []
    for depth in range(hp.num_layers):
        last = depth == hp.num_layers - 1
        try:
            layer = keras.layers.Dense(
                hp.layer_size,
                activation=final_activation if last else activation,
                name=f"{name}_{depth}",
                dtype=dtype,
                **other,
            )
        except (TypeError, ValueError) as error:
            where = f"{path}.other_dense_kwargs"
            raise HParamsError(f"Dense({other!r}) failed: {error}", where) from error
        layers.append(layer)
    return layers


def _apply_output_layers(
    outputs: Any, layers: list, hp: Any, valid: Any, training: Any, seed: Any
) -> Any:
    """The dense layers at every step, with dropout before the listed ones; padding zeroed."""

    def drop(x: Any) -> Any:
        shape = ops.shape(x)
        noise_shape = (shape[0], 1, shape[2]) if hp.variational_dropout else None
        return dropout(x, hp.dropout_rate, training, seed, noise_shape)

    for depth, layer in enumerate(layers):
        if depth in hp.dropout_layer_ids:
            outputs = drop(outputs)
        outputs = layer(outputs)
    if len(layers) in hp.dropout_layer_ids:
        outputs = drop(outputs)
    return outputs * ops.cast(valid, outputs.dtype)[:, :, None]


def _needs_seed(hp: Any) -> bool:
    return hp.dropout_rate > 0 and bool(hp.dropout_layer_ids)


def _lengths_and_mask(inputs: Any, sequence_length: Any) -> tuple[Any, Any]:
    time = ops.shape(inputs)[1]
    if sequence_length is None:
        sequence_length = ops.full((ops.shape(inputs)[0],), time, dtype="int32")
    sequence_length = ops.cast(sequence_length, "int32")
    return sequence_length, sequence_mask(sequence_length, time)


def _run(rnn: keras.layers.RNN, inputs: Any, valid: Any, initial_state: Any, training: Any):
    outputs, *states = rnn(inputs, mask=valid, initial_state=initial_state, training=training)
    return outputs, list(states)


def _output_width(cell: Any, layers: list) -> int:
    if layers:
        return layers[-1].units
    return cell.output_size


def _build_direction(rnn: Any, output_layers: list, inputs_shape: Any) -> None:
    """Builds one direction: its RNN on the inputs, then its output layers in turn."""
    rnn.build(tuple(inputs_shape))
    width = rnn.cell.output_size
    for layer in output_layers:
        layer.build((None, None, width))
        width = layer.units


class UnidirectionalRNNEncoder(ModuleBase):
    """A unidirectional RNN encoder: a (stacked) RNN cell over time, then optional dense layers.

    Call arguments:
        inputs: ``[batch, time, dim]`` float, e.g. word embeddings.
        sequence_length: ``[batch]`` int valid lengths; ``None``: nothing is padded. A sequence
            of length 0 gives zero outputs and keeps its initial state.
        initial_state: the cell's initial state in Keras' structure (see below); ``None``: zeros.
        training: Keras' training flag (dropout in the cell and output layer only in training).

    Returns:
        ``(outputs, final_state)``:

        * ``outputs``: ``[batch, time, output_dim]`` in the compute dtype, zero at padded steps;
          ``output_dim`` is ``output_layer.layer_size`` with dense layers, else the cell's
          output size (``units``).
        * ``final_state``: the cell's state at each sequence's own last valid step, a list:
          ``[h, c]`` for one LSTM cell, ``[h]`` for one GRU or simple RNN cell; with
          ``num_layers > 1`` one such list per layer (bottom first), e.g. ``[[h0, c0], [h1, c1]]``.

    Example:
        >>> encoder = UnidirectionalRNNEncoder({"rnn_cell": {"kwargs": {"units": 32}}})
        >>> outputs, (h, c) = encoder(tf.zeros([2, 7, 16]), sequence_length=tf.constant([7, 3]))
        >>> outputs.shape, h.shape
        (TensorShape([2, 7, 32]), TensorShape([2, 32]))
    """

    HPARAMS_DOC = {
        **rnn_cell_hparams_doc("rnn_cell"),
        **_output_layer_doc("output_layer"),
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        dtype = self.dtype_policy
        cell = get_rnn_cell(hp.rnn_cell, "rnn_cell", dtype=dtype)
        self.rnn = keras.layers.RNN(
            cell,
            return_sequences=True,
            return_state=True,
            zero_output_for_mask=True,
            name="rnn",
            dtype=dtype,
        )
        self.output_layers = _build_output_layers(
            hp.output_layer, "output_layer", dtype, "output_dense"
        )
        self.seed_generator = keras.random.SeedGenerator() if _needs_seed(hp.output_layer) else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "rnn_cell": default_rnn_cell_hparams(),
            "output_layer": default_output_layer_hparams(),
            "name": "unidirectional_rnn_encoder",
        }

    @property
    def output_size(self) -> int:
        """The last axis of ``outputs``."""
        return _output_width(self.rnn.cell, self.output_layers)

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        _build_direction(self.rnn, self.output_layers, inputs_shape)
        self.built = True

    def call(
        self,
        inputs: Any,
        sequence_length: Any = None,
        initial_state: Any = None,
        training: Any = None,
    ) -> tuple[Any, list]:
        _, valid = _lengths_and_mask(inputs, sequence_length)
        outputs, final_state = _run(self.rnn, inputs, valid, initial_state, training)
        outputs = _apply_output_layers(
            outputs, self.output_layers, self.hparams.output_layer, valid, training,
            self.seed_generator,
        )  # fmt: skip
        return outputs, final_state


class BidirectionalRNNEncoder(ModuleBase):
    """A bidirectional RNN encoder: a forward and a backward RNN, each with optional dense layers.

    The backward RNN reads each sequence's valid part reversed; its outputs are reversed back, so
    both directions' outputs are aligned with the input steps. The two directions have their own
    weights; with ``rnn_cell_share_config`` (``output_layer_share_config``) the backward cell
    (output layer) is configured by ``rnn_cell_fw`` (``output_layer_fw``) and the ``_bw`` entry is
    ignored.

    Call arguments:
        inputs: ``[batch, time, dim]`` float, e.g. word embeddings.
        sequence_length: ``[batch]`` int valid lengths; ``None``: nothing is padded. A sequence
            of length 0 gives zero outputs and keeps its initial states.
        initial_state: ``None`` (zeros) or a pair ``(initial_state_fw, initial_state_bw)``, each
            ``None`` or a state of that direction's cell in Keras' structure (see below).
        training: Keras' training flag (dropout in the cells and output layers only in training).

    Returns:
        ``((outputs_fw, outputs_bw), (final_state_fw, final_state_bw))``:

        * ``outputs_fw``, ``outputs_bw``: ``[batch, time, output_dim]`` (each direction's own
          output size), zero at padded steps; ``outputs_bw[:, t]`` is the backward RNN's output
          after reading steps ``length - 1`` down to ``t``.
        * ``final_state_fw``: the forward cell's state after step ``length - 1``;
          ``final_state_bw``: the backward cell's state after step 0 (it has read the whole
          sequence). Each is a list in Keras' structure: ``[h, c]`` for one LSTM cell, ``[h]``
          for one GRU or simple RNN cell, one such list per layer with ``num_layers > 1``.

    Example:
        >>> encoder = BidirectionalRNNEncoder({"rnn_cell_fw": {"kwargs": {"units": 32}}})
        >>> (out_fw, out_bw), (state_fw, state_bw) = encoder(
        ...     tf.zeros([2, 7, 16]), sequence_length=tf.constant([7, 3]))
        >>> features = tf.concat([out_fw, out_bw], axis=-1)
        >>> features.shape, len(state_fw)  # an LSTM's state: [h, c]
        (TensorShape([2, 7, 64]), 2)
    """

    HPARAMS_DOC = {
        **rnn_cell_hparams_doc("rnn_cell_fw"),
        **_backward_doc(rnn_cell_hparams_doc("rnn_cell_bw"), "rnn_cell"),
        "rnn_cell_share_config": "The backward cell is configured by rnn_cell_fw (own weights).",
        **_output_layer_doc("output_layer_fw"),
        **_backward_doc(_output_layer_doc("output_layer_bw"), "output_layer"),
        "output_layer_share_config": "output_layer_bw is ignored; output_layer_fw configures both.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        dtype = self.dtype_policy
        cell_bw_key = "rnn_cell_fw" if hp.rnn_cell_share_config else "rnn_cell_bw"
        output_bw_key = "output_layer_fw" if hp.output_layer_share_config else "output_layer_bw"
        self.rnn_fw, self.rnn_bw = (
            keras.layers.RNN(
                get_rnn_cell(hp[key], key, dtype=dtype),
                return_sequences=True,
                return_state=True,
                zero_output_for_mask=True,
                name=name,
                dtype=dtype,
            )
            for key, name in (("rnn_cell_fw", "rnn_fw"), (cell_bw_key, "rnn_bw"))
        )
        self.output_layers_fw = _build_output_layers(
            hp.output_layer_fw, "output_layer_fw", dtype, "output_fw_dense"
        )
        self.output_layers_bw = _build_output_layers(
            hp[output_bw_key], output_bw_key, dtype, "output_bw_dense"
        )
        self._output_bw_key = output_bw_key
        needs_seed = _needs_seed(hp.output_layer_fw) or _needs_seed(hp[output_bw_key])
        self.seed_generator = keras.random.SeedGenerator() if needs_seed else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "rnn_cell_fw": default_rnn_cell_hparams(),
            "rnn_cell_bw": default_rnn_cell_hparams(),
            "rnn_cell_share_config": True,
            "output_layer_fw": default_output_layer_hparams(),
            "output_layer_bw": default_output_layer_hparams(),
            "output_layer_share_config": True,
            "name": "bidirectional_rnn_encoder",
        }

    @property
    def output_size(self) -> tuple[int, int]:
        """The last axes of ``(outputs_fw, outputs_bw)``."""
        return (
            _output_width(self.rnn_fw.cell, self.output_layers_fw),
            _output_width(self.rnn_bw.cell, self.output_layers_bw),
        )

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        _build_direction(self.rnn_fw, self.output_layers_fw, inputs_shape)
        _build_direction(self.rnn_bw, self.output_layers_bw, inputs_shape)
        self.built = True

    def call(
        self,
        inputs: Any,
        sequence_length: Any = None,
        initial_state: Any = None,
        training: Any = None,
    ) -> tuple[tuple[Any, Any], tuple[list, list]]:
        hp = self.hparams
        if initial_state is None:
            initial_state = (None, None)
        if not isinstance(initial_state, (tuple, list)) or len(initial_state) != 2:
            raise ValueError(
                f"{self.name}: initial_state must be None or a pair "
                f"(initial_state_fw, initial_state_bw), got {initial_state!r}"
            )
        initial_fw, initial_bw = initial_state
        lengths, valid = _lengths_and_mask(inputs, sequence_length)
        outputs_fw, state_fw = _run(self.rnn_fw, inputs, valid, initial_fw, training)
        reversed_inputs = tf.reverse_sequence(inputs, lengths, seq_axis=1, batch_axis=0)
        outputs_bw, state_bw = _run(self.rnn_bw, reversed_inputs, valid, initial_bw, training)
        outputs_bw = tf.reverse_sequence(outputs_bw, lengths, seq_axis=1, batch_axis=0)
        outputs_fw = _apply_output_layers(
            outputs_fw, self.output_layers_fw, hp.output_layer_fw, valid, training,
            self.seed_generator,
        )  # fmt: skip
        outputs_bw = _apply_output_layers(
            outputs_bw, self.output_layers_bw, hp[self._output_bw_key], valid, training,
            self.seed_generator,
        )  # fmt: skip
        return (outputs_fw, outputs_bw), (state_fw, state_bw)
