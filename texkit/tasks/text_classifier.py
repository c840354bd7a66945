"""TextClassifier: a BERT-family encoder with a classification head and its tokenizer.

``TextClassifier.from_pretrained(folder, num_classes=5)`` takes a BERT, RoBERTa, DistilBERT,
ALBERT or ELECTRA folder; the head (a new output layer) starts from random weights. The model
takes raw texts: ``classifier(texts)`` returns logits, ``fit`` trains on ``(texts, labels)``
(each text, or ``(first, second)`` pair of texts, tokenized inside the graph, cut to
``sequence_length`` tokens), and ``predict_labels`` / ``predict_proba`` classify texts.
:class:`~texkit.modules.BERTClassifier` is the module it wraps (``classifier``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.hparams import HParams
from texkit.modules import BERTClassifier
from texkit.tasks.task import Task

__all__ = ["TextClassifier"]


class TextClassifier(Task):
    """A text classifier on a BERT-family encoder (see the module).

    Example:
        >>> clf = tx.tasks.TextClassifier.from_pretrained(  # doctest: +SKIP
        ...     "all-MiniLM-L6-v2", num_classes=5)
        >>> clf.compile(optimizer="adam", loss=clf.loss_function())  # doctest: +SKIP
        >>> clf.fit(dataset_of_texts_and_labels)  # doctest: +SKIP
    """

    MODULE_ATTRIBUTE = "classifier"
    HPARAMS_DOC = {
        "name": "The model's name.",
        "classifier": "The BERTClassifier's hparams (from_pretrained: the checkpoint's encoder).",
        "tokenizer": "A folder with the tokenizer's files (from_pretrained: the checkpoint's).",
        "sequence_length": "Texts (or pairs) are cut to this many tokens, special tokens included.",
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "name": "text_classifier",
            "classifier": {"num_classes": 2},
            "tokenizer": None,
            "sequence_length": 128,
        }

    def __init__(self, hparams: Mapping | HParams | None = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        self._check_tokenizer_length()

    def _check_tokenizer_length(self) -> None:
        if self.tokenizer.max_seq_length != self.hparams.sequence_length:
            self.tokenizer = type(self.tokenizer).from_pretrained(
                self.tokenizer_folder, max_seq_length=int(self.hparams.sequence_length)
            ) if self.tokenizer_folder else self.tokenizer  # fmt: skip

    def _build_module(self, hp: HParams) -> Any:
        return BERTClassifier(hp.classifier.todict())

    @classmethod
    def from_pretrained(  # type: ignore[override]
        cls, folder: Any, hparams: Mapping | None = None, num_classes: int | None = None,
        **kwargs: Any,
    ) -> TextClassifier:  # fmt: skip
        """The classifier over a BERT-family checkpoint folder (the head is new).

        Args:
            folder: the checkpoint folder.
            hparams: the task's hparams (``classifier``: the BERTClassifier's, e.g.
                ``clas_strategy``; ``sequence_length``).
            num_classes: the number of classes (or ``hparams["classifier"]["num_classes"]``).
        """
        hparams = dict(hparams or {})
        classifier = dict(hparams.get("classifier") or {})
        if num_classes is not None:
            classifier["num_classes"] = num_classes
        hparams["classifier"] = classifier
        return super().from_pretrained(folder, hparams, **kwargs)

    @classmethod
    def _module_from_pretrained(cls, folder: str, hparams: Mapping, **kwargs: Any) -> Any:
        return BERTClassifier.from_pretrained(folder, hparams.get("classifier"), **kwargs)

    @classmethod
    def _pretrained_hparams(cls, folder: str, hparams: Mapping | None) -> dict:
        return {"tokenizer": folder, **dict(hparams or {})}

    # --- calls --------------------------------------------------------------------------------

    def features(self, texts: Any, second_texts: Any = None) -> dict[str, Any]:
        """The encoder's inputs of raw texts (or pairs), tokenized in the graph."""
        return self.tokenizer.encode(texts, second_texts)

    def call(self, inputs: Any, training: Any = None) -> Any:
        """``[batch, num_classes]`` logits of ``inputs``: ``[batch]`` strings, a
        ``(first, second)`` pair of them, or the features of :meth:`features`."""
        if isinstance(inputs, Mapping):
            features = inputs
        elif isinstance(inputs, (tuple, list)):
            features = self.features(inputs[0], inputs[1])
        else:
            features = self.features(inputs)
        logits, _ = self.classifier(
            features["input_ids"], sequence_length=features["sequence_length"],
            segment_ids=features["segment_ids"], training=training,
        )  # fmt: skip
        return logits

    def loss_function(self) -> Any:
        """The loss for ``compile``: cross-entropy of integer labels (binary for one class)."""
        if self.classifier.hparams.num_classes == 1:
            return tf.keras.losses.BinaryCrossentropy(from_logits=True)
        return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def predict_proba(self, texts: Any, batch_size: int = 32) -> np.ndarray:
        """Class probabilities ``[n, num_classes]`` of a list of texts."""
        logits = np.concatenate([
            self(tf.constant(texts[i : i + batch_size]), training=False).numpy()
            for i in range(0, len(texts), batch_size)
        ])  # fmt: skip
        if self.classifier.hparams.num_classes == 1:
            return 1.0 / (1.0 + np.exp(-logits))
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)

    def predict_labels(self, texts: Any, batch_size: int = 32) -> np.ndarray:
        """The most likely class of each text of a list."""
        proba = self.predict_proba(list(texts), batch_size)
        if proba.ndim == 1:
            return (proba > 0.5).astype(np.int32)
        return proba.argmax(axis=-1).astype(np.int32)

    def _build_for_weights(self) -> None:
        self(tf.constant(["a"]))
