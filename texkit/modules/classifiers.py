"""Classifiers: BERTClassifier (sequence classification and token tagging on a BERT encoder).

The sentence classifiers on embedded inputs, Conv1DClassifier and UnidirectionalRNNClassifier,
live in :mod:`texkit.modules.sentence_classifiers` and are re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import keras
from keras import ops

from texkit import registry
from texkit.configurable import ModuleBase
from texkit.core.attention import sequence_mask
from texkit.core.dropout import dropout
from texkit.core.layers import MaskedMeanPooling
from texkit.hparams import HParams, HParamsError, check_positive_int, check_rate, hparams_scope
from texkit.modules.encoders.bert_encoder import BERTEncoder
from texkit.modules.encoders.bert_family import BERTFamilyEncoder
from texkit.modules.sentence_classifiers import Conv1DClassifier, UnidirectionalRNNClassifier

__all__ = ["BERTClassifier", "Conv1DClassifier", "UnidirectionalRNNClassifier"]

_STRATEGIES = ("cls_time", "mean_time", "all_time", "time_wise")


def _encoder_doc() -> dict:
    return {f"encoder.{k}": v for k, v in BERTEncoder.HPARAMS_DOC.items()}


def _encoder_defaults() -> dict:
    return BERTEncoder.default_hparams()


def encoder_class(name: Any) -> type:
    """The BERT-family encoder class an ``encoder_type`` names (an error naming the key)."""
    try:
        cls = registry.resolve(name) if isinstance(name, str) else None
    except HParamsError:
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, BERTFamilyEncoder)):
        known = sorted(
            n
            for n in registry.registered_names()
            if isinstance(registry.resolve(n), type)
            and issubclass(registry.resolve(n), BERTFamilyEncoder)
            and registry.resolve(n) is not BERTFamilyEncoder
        )
        raise HParamsError(
            f"expected a BERT-family encoder class ({', '.join(known)}), got {name!r}",
            "encoder_type",
        )
    return cls


class BERTClassifier(ModuleBase):
    """A classifier on a BERT-family encoder: sequence classification or per-token tagging.

    The encoder is ``encoder_type`` (``BERTEncoder``, ``RoBERTaEncoder``, ``DistilBERTEncoder``,
    ``ALBERTEncoder`` or ``ELECTRAEncoder``) with the hparams ``encoder``, which are that
    class's (the table below lists BERT's); :meth:`from_pretrained` sets both from the
    checkpoint.

    ``clas_strategy`` picks what is classified:

    * ``cls_time``: the pooled output (the pooler on the first, ``[CLS]``, token), as in BERT.
      An encoder without a pooler (DistilBERT, ELECTRA) gives the first token's hidden state.
    * ``mean_time``: the mean of the outputs over the valid steps (sentence-embedding models
      such as all-MiniLM-L6-v2 were trained with this pooling).
    * ``all_time``: all outputs, padded to ``max_seq_length`` with zeros and concatenated.
    * ``time_wise``: every step on its own: token tagging (e.g. named entities). Logits and
      predictions then have a time axis.

    Only ``cls_time`` reads the pooler: with the other strategies the encoder is built without
    one (``add_pooling_layer=False``), so no weight goes untrained, and
    :meth:`from_pretrained` reports a checkpoint's pooler weights as unused
    (``load_report.unused``). ``add_pooling_layer: true`` keeps it whatever the strategy, as
    texkit 0.1.0 did: set it to evaluate, predict with, export or resume a run that version
    wrote with another strategy (its checkpoints hold the pooler, and the optimizer's state
    lists the variables by position).

    Dropout (``dropout``) precedes the output layer. With ``num_classes: 1`` the logits lose
    their class axis and the predictions are ``logits > 0`` (binary).

    Call arguments:
        input_ids, sequence_length, segment_ids, training: as for
            :class:`~texkit.modules.BERTEncoder`.

    Returns:
        ``(logits, preds)``: ``[batch, num_classes]`` float and ``[batch]`` int32 predictions
        (``time_wise``: ``[batch, time, num_classes]`` and ``[batch, time]``).

    Build one on a pretrained encoder with :meth:`from_pretrained`.
    """

    HPARAMS_DOC = {
        "encoder_type": "The encoder's class (a BERT-family encoder; see above).",
        **_encoder_doc(),
        "num_classes": "Number of classes (1: a single binary logit).",
        "clas_strategy": "'cls_time', 'mean_time', 'all_time' or 'time_wise' (see above).",
        "max_seq_length": "Static input length; required by 'all_time', else unused.",
        "dropout": "Dropout rate before the output layer.",
        "add_pooling_layer": "Build the encoder's pooler: null (only for 'cls_time', which reads "
        "it), true or false.",
        "name": "Layer name.",
    }

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        if hp.clas_strategy not in _STRATEGIES:
            raise HParamsError(
                f"expected one of {_STRATEGIES}, got {hp.clas_strategy!r}", "clas_strategy"
            )
        check_positive_int(hp, "num_classes")
        check_positive_int(hp, "max_seq_length", optional=True)
        if hp.clas_strategy == "all_time" and not hp.max_seq_length:
            raise HParamsError("clas_strategy 'all_time' needs max_seq_length", "max_seq_length")
        check_rate(hp, "dropout")
        if hp.add_pooling_layer not in (None, True, False):
            raise HParamsError(
                f"expected null, true or false, got {hp.add_pooling_layer!r}", "add_pooling_layer"
            )
        pooler = hp.add_pooling_layer
        with hparams_scope("encoder"):
            self.encoder = encoder_class(hp.encoder_type)(
                hp.encoder,
                add_pooling_layer=hp.clas_strategy == "cls_time" if pooler is None else pooler,
                dtype=self.dtype_policy,
            )
        self.pooling = MaskedMeanPooling(dtype=self.dtype_policy)
        self.logits_layer = keras.layers.Dense(
            hp.num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.encoder.arch.initializer_range
            ),
            name="logits",
            dtype=self.dtype_policy,
        )
        self.seed_generator = keras.random.SeedGenerator() if hp.dropout > 0 else None

    @classmethod
    def make_hparams(cls, hparams: Any) -> HParams:
        """Validates ``encoder`` against the defaults of the class ``encoder_type`` names."""
        defaults = cls.default_hparams()
        if isinstance(hparams, Mapping) and "encoder_type" in hparams:
            encoder = encoder_class(hparams["encoder_type"])
            defaults["encoder_type"] = hparams["encoder_type"]
            defaults["encoder"] = encoder.default_hparams()
        return HParams(hparams, defaults)

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "encoder_type": "BERTEncoder",
            "encoder": _encoder_defaults(),
            "num_classes": 2,
            "clas_strategy": "cls_time",
            "max_seq_length": None,
            "dropout": 0.1,
            "add_pooling_layer": None,
            "name": "bert_classifier",
        }

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, hparams: Any = None, **kwargs: Any
    ) -> BERTClassifier:
        """A classifier whose encoder is built from a checkpoint folder of any BERT-family
        member and loaded from it.

        ``encoder_type`` is set from the checkpoint's family; ``hparams["encoder"]`` may override
        dropout rates; architecture values that contradict the checkpoint's config are an error.
        The output layer starts from random weights.
        """
        return registry.loader_for(cls)(cls, path, hparams, **kwargs)

    def build(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> None:
        hidden = self.encoder.output_size
        self.encoder.build(input_ids_shape)
        width = hidden
        if self.hparams.clas_strategy == "all_time":
            width = hidden * self.hparams.max_seq_length
        self.logits_layer.build((None, width))
        self.built = True

    def call(
        self,
        input_ids: Any,
        sequence_length: Any = None,
        segment_ids: Any = None,
        training: Any = None,
    ) -> tuple[Any, Any]:
        hp = self.hparams
        outputs, pooled = self.encoder(
            input_ids, sequence_length=sequence_length, segment_ids=segment_ids, training=training
        )
        time = ops.shape(outputs)[1]
        if sequence_length is None:
            sequence_length = ops.full((ops.shape(outputs)[0],), time, dtype="int32")
        strategy = hp.clas_strategy
        if strategy == "cls_time":
            features = pooled
        elif strategy == "mean_time":
            features = self.pooling(outputs, sequence_length)
        else:
            mask = ops.cast(sequence_mask(sequence_length, time), outputs.dtype)
            features = outputs * mask[:, :, None]
            if strategy == "all_time":
                features = self._flatten(features, input_ids)
        features = dropout(features, hp.dropout, training, self.seed_generator)
        logits = self.logits_layer(features)
        if hp.num_classes == 1:
            logits = ops.squeeze(logits, -1)
            preds = ops.cast(logits > 0, "int32")
        else:
            preds = ops.cast(ops.argmax(logits, axis=-1), "int32")
        return logits, preds

    def _flatten(self, features: Any, input_ids: Any) -> Any:
        limit = self.hparams.max_seq_length
        time = input_ids.shape[1]
        if time is not None and time > limit:
            raise ValueError(
                f"{self.name}: inputs have {time} steps, more than max_seq_length={limit}"
            )
        features = ops.pad(features, [[0, 0], [0, limit - ops.shape(features)[1]], [0, 0]])
        return ops.reshape(features, (-1, limit * self.encoder.output_size))

    def compute_output_shape(self, input_ids_shape: Any, *args: Any, **kwargs: Any) -> Any:
        batch = input_ids_shape[0]
        classes = () if self.hparams.num_classes == 1 else (self.hparams.num_classes,)
        if self.hparams.clas_strategy == "time_wise":
            return (batch, input_ids_shape[1], *classes), (batch, input_ids_shape[1])
        return (batch, *classes), (batch,)
