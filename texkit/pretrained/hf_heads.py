"""Heads written with their encoder: a :class:`~texkit.modules.BERTClassifier` as transformers'
``*ForSequenceClassification``.

transformers' BERT and ALBERT classifiers compute what ``BERTClassifier`` with
``clas_strategy="cls_time"`` does: the pooler's output, dropout, one dense layer to the labels
(``classifier.weight`` ``[labels, hidden]``, ``classifier.bias``), the encoder's entries under
the model prefix (``bert.``, ``albert.``). The other members' classifiers put other layers
between the encoder and the labels (RoBERTa's and ELECTRA's ``classifier.dense`` and
``out_proj``, DistilBERT's ``pre_classifier``), and texkit's other strategies (``mean_time``,
``all_time``) have no transformers counterpart: those are refused, as is a single output (a
regression head, which transformers configures by ``problem_type``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from texkit.modules.classifiers import BERTClassifier
from texkit.pretrained.checkpoints import HUGGINGFACE
from texkit.pretrained.names import NameTable
from texkit.pretrained.safetensors_writer import Entry

__all__ = ["Head", "sequence_classifier"]

# The members whose transformers classifier is the pooler and one dense layer:
# family -> (class, model prefix, the config's key of the classifier's dropout).
_CLASSIFIERS = {
    "bert": ("BertForSequenceClassification", "bert.", "classifier_dropout"),
    "albert": ("AlbertForSequenceClassification", "albert.", "classifier_dropout_prob"),
}


@dataclass(frozen=True)
class Head:
    """A model written as its encoder's family with a head.

    Attributes:
        encoder: the family module inside the model.
        architecture: the transformers class of the folder.
        prefix: the model prefix of the encoder's entries.
        config: the head's ``config.json`` keys.
        entries: the head's entries (written after the encoder's).
    """

    encoder: Any
    architecture: str
    prefix: str
    config: dict
    entries: list[Entry]


def sequence_classifier(model: BERTClassifier, family_name: str) -> Head:
    """The :class:`Head` of a ``BERTClassifier`` whose encoder is of ``family_name``.

    Raises:
        ValueError: a classifier that transformers' classifiers do not compute (see the
            module), naming the hparam.
    """
    hparams = model.hparams
    if family_name not in _CLASSIFIERS:
        raise ValueError(
            f"save_pretrained: a BERTClassifier over {hparams.encoder_type} has no transformers "
            f"counterpart (its *ForSequenceClassification adds layers before the labels); "
            f"classifiers over {', '.join(sorted(_CLASSIFIERS))} encoders are written"
        )
    if hparams.clas_strategy != "cls_time":
        raise ValueError(
            f"save_pretrained: clas_strategy={hparams.clas_strategy!r} has no transformers "
            "counterpart (its classifiers read the pooled first token: 'cls_time')"
        )
    if hparams.num_classes < 2:
        raise ValueError(
            "save_pretrained: num_classes=1 (a regression head) is not written; transformers "
            "reads a single label by its problem_type"
        )
    architecture, prefix, dropout_key = _CLASSIFIERS[family_name]
    labels = {str(i): f"LABEL_{i}" for i in range(hparams.num_classes)}
    config = {
        "id2label": labels,
        "label2id": {name: int(i) for i, name in labels.items()},
        dropout_key: hparams.dropout,
    }
    (kernel, bias) = (
        NameTable((HUGGINGFACE,), prefixed=False)
        .dense("logits_layer", {HUGGINGFACE: "classifier"})
        .rows
    )
    layer = model.logits_layer
    entries = [
        Entry(kernel.names[HUGGINGFACE], tuple(layer.kernel.shape[::-1]),
              lambda: np.asarray(layer.kernel.numpy()).T),
        Entry(bias.names[HUGGINGFACE], tuple(layer.bias.shape),
              lambda: np.asarray(layer.bias.numpy())),
    ]  # fmt: skip
    return Head(model.encoder, architecture, prefix, config, entries)
