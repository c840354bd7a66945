"""RNN cell wrappers: dropout, residual and highway connections around a Keras RNN cell.

Each wrapper is a Keras layer with the wrapped cell's ``state_size`` (and an ``output_size``), so
it goes wherever a cell goes: into ``keras.layers.RNN``, into ``keras.layers.StackedRNNCells``,
or called step by step as ``output, new_states = cell(inputs, states, training=...)``.
:func:`texkit.core.layers.get_rnn_cell` builds them from the ``rnn_cell`` hparams, whose
defaults (:func:`default_rnn_cell_hparams`) and documentation lines (:func:`rnn_cell_hparams_doc`)
are defined here.

Dropout masks (variational dropout)
-----------------------------------
Cells that keep one dropout mask for a whole sequence (:class:`DropoutWrapper` with
``variational_recurrent=True``, and Keras' own cells built with ``dropout`` or
``recurrent_dropout``) follow Keras' protocol: a mask is created once, cached on the cell and
reused at every step until it is reset. ``keras.layers.RNN`` creates the masks before its loop
and resets them after each call, including through these wrappers and through
``StackedRNNCells``. A caller that steps a cell itself must do the same:

* before the first step of a batch of sequences, :func:`prepare_dropout_masks` ``(cell,
  step_inputs, states)``. Inside ``tf.while_loop`` (``tf.function``, XLA) this is required: a mask
  first created inside the loop body would be drawn anew at every step and would then leak out of
  the loop. In eager mode, or in a Python loop, the first step creates the masks if needed.
* after the last step, :func:`reset_dropout_masks` ``(cell)``, so the next batch of sequences
  draws new masks.

(About 440 lines: the wrappers and the mask protocol they keep belong together.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
from keras import ops

from texkit._compat import DropoutRNNCell
from texkit.core.dropout import dropout

__all__ = [
    "DropoutWrapper",
    "HighwayWrapper",
    "RNNCellWrapper",
    "ResidualWrapper",
    "cell_output_size",
    "default_rnn_cell_hparams",
    "prepare_dropout_masks",
    "reset_dropout_masks",
    "rnn_cell_hparams_doc",
]


def default_rnn_cell_hparams() -> dict:
    """The defaults of an ``rnn_cell`` entry: one 256-unit LSTM cell.

    See :func:`texkit.core.layers.get_rnn_cell` for the meaning of each key.
    """
    return {
        "type": "LSTMCell",
        "kwargs": {"units": 256},
        "num_layers": 1,
        "dropout": {
            "input_keep_prob": 1.0,
            "output_keep_prob": 1.0,
            "state_keep_prob": 1.0,
            "variational_recurrent": False,
        },
        "residual": False,
        "highway": False,
    }


def rnn_cell_hparams_doc(path: str = "rnn_cell") -> dict[str, str]:
    """One line of documentation per key of an ``rnn_cell`` entry at ``path``, for HPARAMS_DOC."""
    lines = {
        "": "The cell: {type, kwargs} of a Keras RNN cell (LSTMCell, GRUCell, SimpleRNNCell, or a "
        "registered one); kwargs are the same for every layer.",
        "num_layers": "Number of stacked cells (the output is the top cell's).",
        "dropout.input_keep_prob": "Keep probability of the inputs of every layer (training only).",
        "dropout.output_keep_prob": "Keep probability of the outputs of every layer.",
        "dropout.state_keep_prob": "Keep probability of every layer's new state h (not LSTM's c).",
        "dropout.variational_recurrent": "The same dropout masks at every step of a sequence.",
        "residual": "Residual connections around every layer but the first.",
        "highway": "Highway connections around every layer but the first (not with residual).",
    }
    return {f"{path}.{key}" if key else path: line for key, line in lines.items()}


def cell_output_size(cell: Any) -> int:
    """A cell's output width: its ``output_size``, else its (first) state size."""
    size = getattr(cell, "output_size", None)
    if size is None:
        size = cell.state_size
        size = size[0] if isinstance(size, (list, tuple)) else size
    return int(size)


class RNNCellWrapper(keras.layers.Layer, DropoutRNNCell):
    """Base class of the wrappers: one RNN cell inside, whose state is the wrapper's state.

    Args:
        cell: the wrapped Keras RNN cell (a layer with ``state_size``).
        **kwargs: Keras layer arguments; ``dtype`` defaults to the cell's dtype policy.
    """

    def __init__(self, cell: keras.layers.Layer, **kwargs: Any):
        if not hasattr(cell, "state_size"):
            raise ValueError(
                f"{type(self).__name__}: cell must be an RNN cell with a state_size, got {cell!r}"
            )
        kwargs.setdefault("dtype", getattr(cell, "dtype_policy", None))
        super().__init__(**kwargs)
        self.cell = cell

    @property
    def state_size(self) -> Any:
        return self.cell.state_size

    @property
    def output_size(self) -> int:
        return cell_output_size(self.cell)

    def get_initial_state(self, batch_size: Any = None) -> Any:
        if hasattr(self.cell, "get_initial_state"):
            return self.cell.get_initial_state(batch_size=batch_size)
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [self.state_size]
        return [ops.zeros((batch_size, size), dtype=self.compute_dtype) for size in sizes]

    def build(self, input_shape: Any) -> None:
        if not self.cell.built:
            self.cell.build(input_shape)
            self.cell.built = True
        self.built = True

    def call_cell(self, inputs: Any, states: Any, training: Any) -> tuple[Any, Any]:
        """The wrapped cell's ``(output, new_states)``."""
        if getattr(self.cell, "_call_has_training_arg", False):
            return self.cell(inputs, states, training=training)
        return self.cell(inputs, states)

    # Keras' dropout-mask protocol (see the module docstring), passed on to the wrapped cell.
    def get_dropout_mask(self, step_input: Any) -> Any:
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.get_dropout_mask(step_input)

    def get_recurrent_dropout_mask(self, step_input: Any) -> Any:
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.get_recurrent_dropout_mask(step_input)

    def reset_dropout_mask(self) -> None:
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.reset_dropout_mask()

    def reset_recurrent_dropout_mask(self) -> None:
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.reset_recurrent_dropout_mask()

    def get_config(self) -> dict:
        config = super().get_config()
        config["cell"] = keras.saving.serialize_keras_object(self.cell)
        return config

    @classmethod
    def from_config(cls, config: Mapping, custom_objects: Any = None) -> RNNCellWrapper:
        config = dict(config)
        cell = keras.saving.deserialize_keras_object(
            config.pop("cell"), custom_objects=custom_objects
        )
        return cls(cell, **config)


def _check_keep_prob(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
        raise ValueError(f"DropoutWrapper: {name} must be in (0, 1], got {value!r}")
    return float(value)


@keras.saving.register_keras_serializable(package="texkit")
class DropoutWrapper(RNNCellWrapper):
    """Dropout on a cell's inputs, outputs and output state, in training only.

    A keep probability ``p`` zeroes each unit with probability ``1 - p`` and scales the kept ones
    by ``1 / p``, so the expected value is unchanged; ``p = 1`` disables that dropout.

    * ``input_keep_prob``: on the inputs of each step.
    * ``output_keep_prob``: on the output of each step (what the next layer or the RNN sees).
    * ``state_keep_prob``: on the new state's first part, i.e. ``h`` (for an LSTM cell ``[h, c]``,
      the memory ``c`` is left alone: dropping it would erase the long-term memory, and it is what
      TensorFlow's ``DropoutWrapper`` does by default). For LSTM, GRU and simple RNN cells that is
      the recurrent connection: the ``h`` the next step reads.

    With ``variational_recurrent=True`` (Gal and Ghahramani, 2016) each of the three masks is drawn
    once per sequence and reused at every step; see the module docstring for who resets them.
    Without it, every step draws new masks.

    Args:
        cell: the wrapped RNN cell.
        input_keep_prob, output_keep_prob, state_keep_prob: keep probabilities in (0, 1].
        variational_recurrent: the same masks at every step of a sequence.
        seed: seed of the dropout masks (``None``: random).
        **kwargs: Keras layer arguments.

    Call arguments:
        inputs: ``[batch, input_size]``; states: the cell's states; training: dropout only when
        true.

    Returns:
        ``(output, new_states)``, as the wrapped cell.

    Example:
        >>> cell = DropoutWrapper(keras.layers.LSTMCell(8), output_keep_prob=0.5, seed=1)
        >>> rnn = keras.layers.RNN(cell, return_sequences=True)
        >>> x = tf.ones([2, 5, 4])
        >>> outputs = rnn(x, training=True)
        >>> outputs.shape, bool(tf.reduce_any(outputs == 0))  # about half the outputs dropped
        (TensorShape([2, 5, 8]), True)
        >>> bool(tf.reduce_all(rnn(x) == rnn(x)))  # no dropout outside training
        True
    """

    def __init__(
        self,
        cell: keras.layers.Layer,
        input_keep_prob: float = 1.0,
        output_keep_prob: float = 1.0,
        state_keep_prob: float = 1.0,
        variational_recurrent: bool = False,
        seed: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(cell, **kwargs)
        self.input_keep_prob = _check_keep_prob(input_keep_prob, "input_keep_prob")
        self.output_keep_prob = _check_keep_prob(output_keep_prob, "output_keep_prob")
        self.state_keep_prob = _check_keep_prob(state_keep_prob, "state_keep_prob")
        if not isinstance(variational_recurrent, bool):
            raise ValueError(
                "DropoutWrapper: variational_recurrent must be a bool, "
                f"got {variational_recurrent!r}"
            )
        self.variational_recurrent = variational_recurrent
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        # The cached variational masks, one per part ("input", "state", "output"); None: not drawn.
        self._input_mask = self._state_mask = self._output_mask = None

    def _keep_prob(self, part: str) -> float:
        return getattr(self, f"{part}_keep_prob")

    def _new_mask(self, like: Any, part: str) -> Any:
        rate = 1.0 - self._keep_prob(part)
        return dropout(ops.ones_like(like), rate, True, self.seed_generator)

    def _drop(self, x: Any, part: str) -> Any:
        keep_prob = self._keep_prob(part)
        if keep_prob >= 1.0:
            return x
        if not self.variational_recurrent:
            return dropout(x, 1.0 - keep_prob, True, self.seed_generator)
        mask = getattr(self, f"_{part}_mask")
        if mask is None:  # not prepared: the first step draws it (eager or unrolled stepping)
            mask = self._new_mask(x, part)
            setattr(self, f"_{part}_mask", mask)
        return x * ops.cast(mask, x.dtype)

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, Any]:
        if training:
            inputs = self._drop(inputs, "input")
        output, new_states = self.call_cell(inputs, states, training)
        if training:
            parts = keras.tree.flatten(new_states)
            if self.state_keep_prob < 1.0:
                parts[0] = self._drop(parts[0], "state")
                new_states = keras.tree.pack_sequence_as(new_states, parts)
            output = self._drop(output, "output")
        return output, new_states

    def get_dropout_mask(self, step_input: Any) -> Any:
        super().get_dropout_mask(step_input)
        if not self.variational_recurrent:
            return None
        if self.input_keep_prob < 1.0 and self._input_mask is None:
            self._input_mask = self._new_mask(step_input, "input")
        if self.output_keep_prob < 1.0 and self._output_mask is None:
            batch = ops.shape(step_input)[0]
            like = ops.zeros((batch, self.output_size), dtype=step_input.dtype)
            self._output_mask = self._new_mask(like, "output")
        return self._input_mask

    def get_recurrent_dropout_mask(self, step_input: Any) -> Any:
        super().get_recurrent_dropout_mask(step_input)
        if not self.variational_recurrent:
            return None
        if self.state_keep_prob < 1.0 and self._state_mask is None:
            self._state_mask = self._new_mask(_first_state(step_input), "state")
        return self._state_mask

    def reset_dropout_mask(self) -> None:
        super().reset_dropout_mask()
        self._input_mask = self._output_mask = None

    def reset_recurrent_dropout_mask(self) -> None:
        super().reset_recurrent_dropout_mask()
        self._state_mask = None

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "input_keep_prob": self.input_keep_prob,
            "output_keep_prob": self.output_keep_prob,
            "state_keep_prob": self.state_keep_prob,
            "variational_recurrent": self.variational_recurrent,
            "seed": self.seed,
        }


def _check_same_size(wrapper: RNNCellWrapper, input_shape: Any) -> int:
    input_size, output_size = input_shape[-1], wrapper.output_size
    if input_size != output_size:
        raise ValueError(
            f"{type(wrapper).__name__} ({wrapper.name}): the input size ({input_size}) must equal "
            f"the cell's output size ({output_size}) to add them"
        )
    return output_size


@keras.saving.register_keras_serializable(package="texkit")
class ResidualWrapper(RNNCellWrapper):
    """A residual connection around a cell: ``output = cell_output + inputs``.

    The input size must equal the cell's output size (checked at build). The state is the cell's.

    Example:
        >>> rnn = keras.layers.RNN(ResidualWrapper(keras.layers.GRUCell(16)))
        >>> rnn(tf.ones([2, 5, 16])).shape  # on 16-wide inputs
        TensorShape([2, 16])
        >>> rnn = keras.layers.RNN(ResidualWrapper(keras.layers.GRUCell(16), name="residual"))
        >>> rnn(tf.ones([2, 5, 8]))
        Traceback (most recent call last):
          ...
        ValueError: ResidualWrapper (residual): the input size (8) must equal ... size (16) ...
    """

    def build(self, input_shape: Any) -> None:
        _check_same_size(self, input_shape)
        super().build(input_shape)

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, Any]:
        output, new_states = self.call_cell(inputs, states, training)
        return output + inputs, new_states


@keras.saving.register_keras_serializable(package="texkit")
class HighwayWrapper(RNNCellWrapper):
    """A highway connection around a cell (Srivastava et al., 2015).

    ``output = t * cell_output + (1 - t) * inputs`` with the transform gate
    ``t = sigmoid(inputs @ gate_kernel + gate_bias)``. The gate bias starts at ``transform_bias``
    (negative: the layer starts close to carrying its inputs through, which eases training of deep
    stacks). The input size must equal the cell's output size (checked at build).

    Args:
        cell: the wrapped RNN cell.
        transform_bias: initial value of the gate bias.
        kernel_initializer: initializer of the gate kernel.
        **kwargs: Keras layer arguments.
    """

    def __init__(
        self,
        cell: keras.layers.Layer,
        transform_bias: float = -1.0,
        kernel_initializer: Any = "glorot_uniform",
        **kwargs: Any,
    ):
        super().__init__(cell, **kwargs)
        self.transform_bias = float(transform_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape: Any) -> None:
        size = _check_same_size(self, input_shape)
        self.gate_kernel = self.add_weight(
            shape=(size, size), initializer=self.kernel_initializer, name="gate_kernel"
        )
        self.gate_bias = self.add_weight(
            shape=(size,),
            initializer=keras.initializers.Constant(self.transform_bias),
            name="gate_bias",
        )
        super().build(input_shape)

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, Any]:
        output, new_states = self.call_cell(inputs, states, training)
        transform = ops.sigmoid(ops.matmul(inputs, self.gate_kernel) + self.gate_bias)
        return transform * output + (1 - transform) * inputs, new_states

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "transform_bias": self.transform_bias,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }


def _first_state(states: Any) -> Any:
    return keras.tree.flatten(states)[0]


def prepare_dropout_masks(cell: Any, step_inputs: Any, states: Any) -> None:
    """Draws the per-sequence dropout masks of ``cell`` (wrappers, stacks, Keras cells).

    Call it before stepping ``cell`` through a new batch of sequences, outside any
    ``tf.while_loop`` (see the module docstring); it does what ``keras.layers.RNN`` does before
    its loop. Masks already drawn are kept: call :func:`reset_dropout_masks` first to redraw.

    Args:
        cell: the cell, e.g. from :func:`texkit.core.layers.get_rnn_cell`.
        step_inputs: ``[batch, input_size]``, the inputs of one step (only the shape and dtype
            matter).
        states: the cell's states, as passed to the cell.
    """
    if isinstance(cell, keras.layers.StackedRNNCells):
        inputs = step_inputs
        for layer, layer_states in zip(cell.cells, states, strict=True):
            prepare_dropout_masks(layer, inputs, layer_states)
            batch = ops.shape(step_inputs)[0]
            inputs = ops.zeros((batch, cell_output_size(layer)), dtype=step_inputs.dtype)
        return
    if isinstance(cell, DropoutRNNCell):
        cell.get_dropout_mask(step_inputs)
        cell.get_recurrent_dropout_mask(_first_state(states))


def reset_dropout_masks(cell: Any) -> None:
    """Forgets the per-sequence dropout masks of ``cell`` (wrappers, stacks, Keras cells).

    Call it after the last step of a batch of sequences, so that the next one draws new masks
    (``keras.layers.RNN`` does it after each call).
    """
    if isinstance(cell, keras.layers.StackedRNNCells):
        for layer in cell.cells:
            reset_dropout_masks(layer)
    elif isinstance(cell, DropoutRNNCell):
        cell.reset_dropout_mask()
        cell.reset_recurrent_dropout_mask()
