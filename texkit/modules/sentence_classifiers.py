"""Sentence classifiers on embedded inputs: Conv1DClassifier and UnidirectionalRNNClassifier.

Both are called on ``[batch, time, dim]`` float inputs (word embeddings) with ``sequence_length``
and return ``(logits, preds)`` like :class:`~texkit.modules.BERTClassifier`: ``[batch,
num_classes]`` logits and ``[batch]`` int32 predictions, or with ``num_classes: 1`` a single
binary logit ``[batch]`` and ``preds = logits > 0``.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.core.layers import (
    default_rnn_cell_hparams,
    get_initializer,
    get_rnn_cell,
    masked_max_pool,
    masked_mean_pool,
    rnn_cell_hparams_doc,
)
from texkit.hparams import HParamsError, check_positive_int, check_rate
from texkit.modules.encoders.conv_encoder import DENSE_STACK_DOC, Conv1DEncoder, dense_stack

__all__ = ["Conv1DClassifier", "UnidirectionalRNNClassifier"]

_RNN_STRATEGIES = ("final_state", "mean_time", "max_time")


def _logits_layer(num_classes: int, initializer: Any, dtype: Any) -> keras.layers.Dense:
    extra = {} if initializer is None else {"kernel_initializer": initializer}
    return keras.layers.Dense(num_classes, name="logits", dtype=dtype, **extra)


def _logits_and_preds(logits: Any, num_classes: int) -> tuple[Any, Any]:
    if num_classes == 1:
        logits = ops.squeeze(logits, -1)
        return logits, ops.cast(logits > 0, "int32")
    return logits, ops.cast(ops.argmax(logits, axis=-1), "int32")


def _output_shapes(batch: Any, num_classes: int) -> tuple[tuple, tuple]:
    classes = () if num_classes == 1 else (num_classes,)
    return (batch, *classes), (batch,)


def _check_dense_hparams(hp: Any) -> None:
    check_positive_int(hp, "num_classes", "dense_size")
    if hp.num_dense_layers < 0:
        raise HParamsError(f"expected an int >= 0, got {hp.num_dense_layers!r}", "num_dense_layers")
    check_rate(hp, "dropout_rate")


class Conv1DClassifier(ModuleBase):
    """A convolutional sentence classifier (Kim, 2014): a Conv1DEncoder and an output layer.

    The hparams are those of :class:`~texkit.modules.Conv1DEncoder`, flat as in Texar, plus
    ``num_classes``; ``initializer`` also initializes the output layer.

    Call arguments:
        inputs: ``[batch, time, dim]`` float, e.g. word embeddings.
        sequence_length: ``[batch]`` int valid lengths; ``None``: nothing is padded.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``(logits, preds)``: ``[batch, num_classes]`` logits in the compute dtype and ``[batch]``
        int32 predictions (``num_classes: 1``: ``[batch]`` logits and ``preds = logits > 0``).

    Example, the bag-of-embeddings model as a deep averaging network (Iyyer et al., 2015): no
    convolution, the mean of the word vectors (a random 30% of the words left out in training),
    two dense layers::

        num_conv_layers: 0
        pooling: mean
        num_dense_layers: 2
        dense_size: 300
        token_dropout: 0.3
        num_classes: 5

    >>> classifier = Conv1DClassifier({"filters": 16, "num_classes": 3})
    >>> logits, preds = classifier(tf.zeros([2, 7, 32]), sequence_length=tf.constant([7, 3]))
    >>> logits.shape, preds.shape
    (TensorShape([2, 3]), TensorShape([2]))
    """

    HPARAMS_DOC = {
        **{k: v for k, v in Conv1DEncoder.HPARAMS_DOC.items() if k != "name"},
        "initializer": "Kernel initializer of the convolutions, dense and output layers.",
        "num_classes": "Number of classes (1: a single binary logit).",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_positive_int(hp, "num_classes")
        encoder_hparams = {k: v for k, v in hp.todict().items() if k != "num_classes"}
        # The encoder's hparams are this module's own (flat), so its errors name keys as written.
        self.encoder = Conv1DEncoder(
            {**encoder_hparams, "name": "encoder"}, dtype=self.dtype_policy
        )
        self.logits_layer = _logits_layer(
            hp.num_classes, get_initializer(hp.initializer), self.dtype_policy
        )

    @classmethod
    def default_hparams(cls) -> dict:
        defaults = {k: v for k, v in Conv1DEncoder.default_hparams().items() if k != "name"}
        return {**defaults, "num_classes": 2, "name": "conv1d_classifier"}

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        self.encoder.build(inputs_shape)
        self.logits_layer.build(self.encoder.compute_output_shape(inputs_shape))
        self.built = True

    def call(
        self, inputs: Any, sequence_length: Any = None, training: Any = None
    ) -> tuple[Any, Any]:
        features = self.encoder(inputs, sequence_length=sequence_length, training=training)
        return _logits_and_preds(self.logits_layer(features), self.hparams.num_classes)

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return _output_shapes(inputs_shape[0], self.hparams.num_classes)


class UnidirectionalRNNClassifier(ModuleBase):
    """A sentence classifier on a unidirectional RNN.

    The cell (``rnn_cell``, see :func:`texkit.core.layers.get_rnn_cell`) runs over the inputs
    under a mask built from ``sequence_length``; ``clas_strategy`` picks the features:

    * ``final_state``: the state at each sequence's own last valid step (the top cell's first
      state part: ``h`` for an LSTM; the initial state for a sequence of length 0);
    * ``mean_time`` / ``max_time``: the mean / max of the outputs over the valid steps (zeros for
      a sequence of length 0).

    Dropout (``dropout_rate``) follows, then ``num_dense_layers`` dense layers (each followed by
    dropout) and the output layer.

    Call arguments:
        inputs: ``[batch, time, dim]`` float, e.g. word embeddings.
        sequence_length: ``[batch]`` int valid lengths; ``None``: nothing is padded.
        initial_state: the cell's initial state (a list, as ``keras.layers.RNN`` takes it);
            ``None``: zeros.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``(logits, preds)``: ``[batch, num_classes]`` logits in the compute dtype and ``[batch]``
        int32 predictions (``num_classes: 1``: ``[batch]`` logits and ``preds = logits > 0``).

    Example:
        >>> classifier = UnidirectionalRNNClassifier(
        ...     {"rnn_cell": {"type": "GRUCell", "kwargs": {"units": 32}}, "num_classes": 3})
        >>> logits, preds = classifier(tf.zeros([2, 7, 16]), sequence_length=tf.constant([7, 3]))
        >>> logits.shape
        TensorShape([2, 3])
    """

    HPARAMS_DOC = {
        **rnn_cell_hparams_doc("rnn_cell"),
        "clas_strategy": "'final_state', 'mean_time' or 'max_time' (see above).",
        "dropout_rate": "Dropout on the RNN features and after every dense layer.",
        "num_dense_layers": "Number of dense layers between the RNN and the output layer.",
        **DENSE_STACK_DOC,
        "num_classes": "Number of classes (1: a single binary logit).",
        "initializer": "Kernel initializer of the dense layers and output layer ({type, kwargs}).",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        if hp.clas_strategy not in _RNN_STRATEGIES:
            raise HParamsError(
                f"expected one of {_RNN_STRATEGIES}, got {hp.clas_strategy!r}", "clas_strategy"
            )
        _check_dense_hparams(hp)
        cell = get_rnn_cell(hp.rnn_cell, "rnn_cell", dtype=self.dtype_policy)
        self.rnn = keras.layers.RNN(
            cell, return_sequences=True, return_state=True, name="rnn", dtype=self.dtype_policy
        )
        initializer = get_initializer(hp.initializer)
        extra = {} if initializer is None else {"kernel_initializer": initializer}
        self.dense_layers = dense_stack(hp, {"dtype": self.dtype_policy, **extra})
        self.logits_layer = _logits_layer(hp.num_classes, initializer, self.dtype_policy)
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout_rate > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "rnn_cell": default_rnn_cell_hparams(),
            "clas_strategy": "final_state",
            "dropout_rate": 0.0,
            "num_dense_layers": 0,
            "dense_size": 128,
            "dense_activation": {"type": "relu", "kwargs": {}},
            "num_classes": 2,
            "initializer": {"type": "GlorotUniform", "kwargs": {}},
            "name": "unidirectional_rnn_classifier",
        }

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        self.rnn.build(tuple(inputs_shape))
        width = self.rnn.cell.output_size
        for dense in self.dense_layers:
            dense.build((None, width))
            width = dense.units
        self.logits_layer.build((None, width))
        self.built = True

    def call(
        self,
        inputs: Any,
        sequence_length: Any = None,
        initial_state: Any = None,
        training: Any = None,
    ) -> tuple[Any, Any]:
        hp = self.hparams
        time = ops.shape(inputs)[1]
        if sequence_length is None:
            sequence_length = ops.full((ops.shape(inputs)[0],), time, dtype="int32")
        valid = sequence_mask(sequence_length, time)
        # Masked steps carry the state over, so the final state is each sequence's own.
        outputs, *states = self.rnn(
            inputs, mask=valid, initial_state=initial_state, training=training
        )
        if hp.clas_strategy == "final_state":
            top = states[-1] if hp.rnn_cell.num_layers > 1 else states
            features = keras.tree.flatten(top)[0]
        elif hp.clas_strategy == "mean_time":
            features = masked_mean_pool(outputs, valid)
        else:
            features = masked_max_pool(outputs, valid)
        features = dropout(features, hp.dropout_rate, training, self.seed_generator)
        for dense in self.dense_layers:
            features = dropout(dense(features), hp.dropout_rate, training, self.seed_generator)
        return _logits_and_preds(self.logits_layer(features), hp.num_classes)

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return _output_shapes(inputs_shape[0], self.hparams.num_classes)
