"""Character-level word features: :class:`CharCNNEmbedder` (a word's characters, embedded, then a
CNN with max-pooling or a BiLSTM) and :class:`WordCharEmbedder` (word embeddings concatenated
with them).

The two encoders of the sequence-labelling literature:

* ``"cnn"`` (Ma and Hovy, 2016, "End-to-end Sequence Labeling via Bi-directional
  LSTM-CNNs-CRF"): ``Conv1D`` over each word's characters (one branch per kernel size,
  ``"same"`` padding: windows reaching past the word see zero vectors), then the maximum over
  the word's characters; pads never win the maximum.
* ``"bilstm"`` (Lample et al., 2016, "Neural Architectures for Named Entity Recognition"): a
  forward LSTM over the word's characters and a backward one over them reversed; the feature is
  the two final outputs concatenated.

Character ids come from :meth:`texkit.data.CharVocab.words_to_char_ids` (string ops, in
``tf.data``); the embedders take the ids, so they run under XLA.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
from keras import ops

from texkit.configurable import ModuleBase
from texkit.core.dropout import dropout
from texkit.core.layers import get_activation, get_initializer, masked_max_pool
from texkit.errors import hparams_scope
from texkit.hparams import HParams, HParamsError, check_rate, check_table_size, check_width
from texkit.hparams import core as limits
from texkit.modules.embedders import WordEmbedder
from texkit.modules.embedding_table import gather, is_int

__all__ = ["CharCNNEmbedder", "WordCharEmbedder"]

_ENCODERS = ("cnn", "bilstm")


def _check_size(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _check(hp: HParams) -> None:
    check_width(hp, "dim", "cnn.filters", "bilstm.units")
    check_rate(hp, "dropout_rate")
    if hp.encoder not in _ENCODERS:
        raise HParamsError(f"expected one of {list(_ENCODERS)}, got {hp.encoder!r}", "encoder")
    if not hp.cnn.kernel_sizes:
        raise HParamsError("expected at least one kernel size, got []", "cnn.kernel_sizes")
    for index, size in enumerate(hp.cnn.kernel_sizes):
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= limits.MAX_DIM:
            raise HParamsError(
                f"expected a positive int, got {size!r}", f"cnn.kernel_sizes.{index}"
            )


class CharCNNEmbedder(ModuleBase):
    """Embeds words from their characters: a character table, then a CNN with max-pooling over
    the characters (``encoder: cnn``) or a character BiLSTM (``encoder: bilstm``).

    In order: the characters' embeddings (pad positions set to zero), dropout in training, then
    the encoder applied to each word on its own (see :mod:`texkit.modules.char_embedders`). A
    word without characters (a padding word: all ids 0) gives zeros.

    Args:
        vocab_size: rows of the character table (``CharVocab.size``).
        hparams: see the table below.

    Call arguments:
        char_ids: int ``[..., max_word_length]``, e.g. ``[batch, time, max_word_length]`` from
            :meth:`texkit.data.CharVocab.words_to_char_ids`: each word's character ids, padded
            on the right with 0 (the id of ``<PAD>``, which never counts as a character).
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``[..., output_dim]``: ``output_dim`` is ``cnn.filters * len(cnn.kernel_sizes)`` or
        ``2 * bilstm.units``.

    Example (beside word embeddings: or use :class:`WordCharEmbedder`)::

        chars = CharCNNEmbedder(char_vocab.size, {"cnn": {"filters": 30}})
        char_ids = char_vocab.words_to_char_ids(batch["text"], max_word_length=16)  # in tf.data
        features = tf.concat([word_embedder(batch["text_ids"]), chars(char_ids)], axis=-1)
    """

    HPARAMS_DOC = {
        "dim": "Size of each character embedding.",
        "initializer": "Initializer of the character table ({type, kwargs}).",
        "dropout_rate": "Dropout on the character embeddings, in [0, 1) (training only).",
        "encoder": "'cnn' (Ma and Hovy 2016) or 'bilstm' (Lample et al. 2016).",
        "cnn.filters": "Filters of each convolution branch.",
        "cnn.kernel_sizes": "Kernel size (in characters) of each parallel branch.",
        "cnn.activation": "Activation of the convolutions (a registered name; 'linear': none).",
        "bilstm.units": "Units of each direction's LSTM.",
        "name": "Layer name.",
    }

    def __init__(
        self,
        vocab_size: int | None = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        vocab_size = _check_size(vocab_size, "vocab_size")
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        _check(hp)
        check_table_size(vocab_size, hp.dim, "dim", "a character table")
        self._vocab_size = vocab_size
        self._initializer = get_initializer(hp.initializer)
        layer = {"dtype": self.dtype_policy}
        self.convs: list[keras.layers.Conv1D] = []
        self.rnn_fw = self.rnn_bw = None
        if hp.encoder == "cnn":
            activation = get_activation(hp.cnn.activation, "cnn.activation")
            self.convs = [
                keras.layers.Conv1D(
                    hp.cnn.filters,
                    size,
                    padding="same",
                    activation=activation,
                    name=f"conv_{index}",
                    **layer,
                )
                for index, size in enumerate(hp.cnn.kernel_sizes)
            ]
        else:
            self.rnn_fw, self.rnn_bw = (
                keras.layers.RNN(
                    keras.layers.LSTMCell(hp.bilstm.units, **layer),
                    go_backwards=backwards,
                    name=name,
                    **layer,
                )
                for backwards, name in ((False, "lstm_fw"), (True, "lstm_bw"))
            )
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout_rate > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "dim": 30,
            "initializer": {
                "type": "RandomUniform",
                "kwargs": {"minval": -0.1, "maxval": 0.1, "seed": None},
            },
            "dropout_rate": 0.0,
            "encoder": "cnn",
            "cnn": {"filters": 30, "kernel_sizes": [3], "activation": "tanh"},
            "bilstm": {"units": 25},
            "name": "char_cnn_embedder",
        }

    @property
    def vocab_size(self) -> int:
        """Rows of the character table."""
        return self._vocab_size

    @property
    def output_dim(self) -> int:
        """The size of each word's feature vector."""
        hp = self.hparams
        if hp.encoder == "cnn":
            return hp.cnn.filters * len(hp.cnn.kernel_sizes)
        return 2 * hp.bilstm.units

    def build(self, char_ids_shape: Any = None, *args: Any, **kwargs: Any) -> None:
        dim = self.hparams.dim
        self.embedding = self.add_weight(
            name="embedding", shape=(self._vocab_size, dim), initializer=self._initializer
        )
        for conv in self.convs:
            conv.build((None, None, dim))
        if self.rnn_fw is not None:
            self.rnn_fw.build((None, None, dim))
            self.rnn_bw.build((None, None, dim))
        self.built = True

    def call(self, char_ids: Any, training: Any = None) -> Any:
        if not is_int(char_ids):
            dtype = keras.backend.standardize_dtype(char_ids.dtype)
            raise TypeError(f"{self.name}: char_ids must be integers, got dtype {dtype}")
        if len(char_ids.shape) < 2:
            raise ValueError(
                f"{self.name}: char_ids must be [..., max_word_length], got shape {char_ids.shape}"
            )
        outer = ops.shape(char_ids)[:-1]
        width = char_ids.shape[-1] if char_ids.shape[-1] is not None else ops.shape(char_ids)[-1]
        ids = ops.reshape(char_ids, (-1, width))
        valid = ops.not_equal(ids, 0)
        embedded = gather(ops.cast(self.embedding, self.compute_dtype), ids)
        embedded = embedded * ops.cast(valid, embedded.dtype)[:, :, None]
        embedded = dropout(embedded, self.hparams.dropout_rate, training, self.seed_generator)
        if self.convs:
            pooled = [masked_max_pool(conv(embedded), valid) for conv in self.convs]
            features = ops.concatenate(pooled, axis=-1) if len(pooled) > 1 else pooled[0]
        else:
            # Masked steps are skipped (the backward RNN reads the valid characters last to
            # first), so a word without characters keeps the zero initial state: zeros.
            forward = self.rnn_fw(embedded, mask=valid, training=training)
            backward = self.rnn_bw(embedded, mask=valid, training=training)
            features = ops.concatenate([forward, backward], axis=-1)
        return ops.reshape(features, (*outer, self.output_dim))

    def compute_output_shape(self, char_ids_shape: Any) -> tuple:
        return (*tuple(char_ids_shape)[:-1], self.output_dim)

    def get_config(self) -> dict:
        return {**super().get_config(), "vocab_size": self._vocab_size}


def _prefixed(docs: Mapping[str, str], prefix: str, what: str) -> dict[str, str]:
    return {
        f"{prefix}.{key}": (f"Name of the {what}." if key == "name" else doc)
        for key, doc in docs.items()
    }


class WordCharEmbedder(ModuleBase):
    """Word embeddings and character features of the same words, concatenated: the input layer
    of a BiLSTM-CNN(-CRF) tagger (Ma and Hovy 2016; Lample et al. 2016).

    ``outputs = concat([WordEmbedder(ids), CharCNNEmbedder(char_ids)], axis=-1)``, with the two
    embedders configured by ``word`` and ``char``.

    Args:
        vocab_size: rows of the word table; optional when ``init_value`` is given.
        char_vocab_size: rows of the character table (``CharVocab.size``).
        init_value: a ``[vocab_size, dim]`` matrix for the word table (e.g. from
            ``texkit.data.load_glove``); ``word.dim`` is then taken from its shape.
        hparams: see the table below.

    Call arguments:
        ids: int ``[..., time]`` word ids.
        char_ids: int ``[..., time, max_word_length]`` character ids of the same words
            (:meth:`texkit.data.CharVocab.words_to_char_ids`).
        training: Keras' training flag.

    Returns:
        ``[..., time, word.dim + char output_dim]``.

    Example::

        embedder = WordCharEmbedder(vocab.size, char_vocab.size,
                                    hparams={"word": {"dim": 100}, "char": {"encoder": "cnn"}})
        char_ids = char_vocab.words_to_char_ids(batch["text"], max_word_length=16)
        inputs = embedder(batch["text_ids"], char_ids)          # [batch, time, 100 + 30]
    """

    HPARAMS_DOC = {
        **_prefixed(WordEmbedder.HPARAMS_DOC, "word", "word embedder"),
        **_prefixed(CharCNNEmbedder.HPARAMS_DOC, "char", "character embedder"),
        "name": "Layer name.",
    }

    def __init__(
        self,
        vocab_size: int | None = None,
        char_vocab_size: int | None = None,
        init_value: Any = None,
        hparams: Mapping | HParams | None = None,
        **kwargs: Any,
    ):
        char_vocab_size = _check_size(char_vocab_size, "char_vocab_size")
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        layer = {"dtype": self.dtype_policy}
        with hparams_scope("word"):
            self.word_embedder = WordEmbedder(vocab_size, init_value, hp.word.todict(), **layer)
        with hparams_scope("char"):
            self.char_embedder = CharCNNEmbedder(char_vocab_size, hp.char.todict(), **layer)
        if self.word_embedder.hparams.dim != hp.word.dim:  # taken from init_value
            self._hparams = hp.replace(**{"word.dim": self.word_embedder.hparams.dim})

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "word": WordEmbedder.default_hparams(),
            "char": CharCNNEmbedder.default_hparams(),
            "name": "word_char_embedder",
        }

    @property
    def output_dim(self) -> int:
        """Word embedding size plus the character features' size."""
        return self.word_embedder.hparams.dim + self.char_embedder.output_dim

    def build(self, ids_shape: Any = None, char_ids_shape: Any = None) -> None:
        self.word_embedder.build(ids_shape)
        self.char_embedder.build(char_ids_shape)
        self.built = True

    def call(self, ids: Any, char_ids: Any, training: Any = None) -> Any:
        words = self.word_embedder(ids, training=training)
        chars = self.char_embedder(char_ids, training=training)
        return ops.concatenate([words, ops.cast(chars, words.dtype)], axis=-1)

    def compute_output_shape(self, ids_shape: Any, char_ids_shape: Any = None) -> tuple:
        return (*tuple(ids_shape), self.output_dim)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocab_size": self.word_embedder.vocab_size,
            "char_vocab_size": self.char_embedder.vocab_size,
        }
