"""Entity-level precision, recall and F1 of sequence tagging: of a corpus, and over a dataset.

An entity (chunk) is a type and a span of tokens, read from a tag sequence in one of the schemes
of :mod:`texkit.core.tag_schemes` (IOB1, IOB2/BIO, IOBES, BILOU). A predicted entity is correct
when the reference has an entity of the same type over exactly the same tokens. Precision is the
share of predicted entities that are correct, recall the share of reference entities that were
predicted, F1 their harmonic mean, all micro-averaged over the entities of the corpus (and per
type); a score whose denominator is zero is 0, as ``seqeval`` (``zero_division=0``) and
``conlleval`` report it. The two modes:

* ``mode="default"``: entities read leniently (every tag that is not ``O`` is part of an
  entity), as ``conlleval``, the CoNLL shared tasks' scorer, and ``seqeval``'s default mode count
  them. ``conlleval`` knows only IOB1 and IOB2; on IOBES the reading is ``seqeval``'s default
  mode, and on BILOU the same with ``L`` and ``U`` read as ``E`` and ``S``
  (see :mod:`texkit.core.tag_schemes`).
* ``mode="strict"``: only well-formed entities count, as in ``seqeval``'s strict mode
  (``mode="strict"`` with its scheme class). For IOB2, IOBES and BILOU; IOBES and BILOU results
  are usually reported this way.

:func:`entity_f1` scores lists of tag strings; :class:`EntityF1` accumulates the counts of
batches of tag ids over a dataset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from texkit.core import tag_schemes

__all__ = ["EntityF1", "entity_f1"]

_MODES = ("default", "strict")


def _check_mode(scheme: str, mode: str) -> tuple[str, bool]:
    scheme = tag_schemes.normalize_scheme(scheme)
    if mode not in _MODES:
        raise ValueError(f"mode must be 'default' or 'strict', got {mode!r}")
    if mode == "strict" and scheme == "IOB1":
        raise ValueError("mode='strict' needs scheme IOB2, IOBES or BILOU, got scheme 'IOB1'")
    return scheme, mode == "strict"


def _sequences(corpus: Any, what: str) -> list:
    if isinstance(corpus, (str, bytes)) or not isinstance(corpus, (Sequence, np.ndarray)):
        raise TypeError(f"{what} must be a list of tag sequences, got {type(corpus).__name__}")
    if len(corpus) == 0:
        raise ValueError(f"{what} is empty: there is no tag sequence to score")
    for i, tags in enumerate(corpus):
        if isinstance(tags, (str, bytes)) or not isinstance(tags, (Sequence, np.ndarray)):
            raise TypeError(
                f"{what}[{i}] must be a sequence of tags (a list of strings), got {tags!r}"
            )
    return list(corpus)


def _entities(tags: Sequence[str], scheme: str, strict: bool, what: str) -> set:
    for j, tag in enumerate(tags):
        tag_schemes.parse_tag(tag, scheme, f"{what}[{j}]")
    return set(tag_schemes.entity_spans(list(tags), scheme, strict=strict))


def _count(references: list, predictions: list, scheme: str, strict: bool) -> dict:
    """Per type: [true positives, predicted entities, reference entities]."""
    counts: dict[str, list[int]] = {}
    for i, (gold_tags, guessed_tags) in enumerate(zip(references, predictions, strict=True)):
        if len(gold_tags) != len(guessed_tags):
            raise ValueError(
                f"predictions[{i}] has {len(guessed_tags)} tags but references[{i}] has "
                f"{len(gold_tags)}"
            )
        gold = _entities(gold_tags, scheme, strict, f"references[{i}]")
        guessed = _entities(guessed_tags, scheme, strict, f"predictions[{i}]")
        for column, entities in enumerate((gold & guessed, guessed, gold)):
            for type_, number in Counter(entity[0] for entity in entities).items():
                counts.setdefault(type_, [0, 0, 0])[column] += number
    return counts


def _scores(true_positives: int, predicted: int, support: int) -> dict:
    precision = true_positives / predicted if predicted else 0.0
    recall = true_positives / support if support else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true_positives": true_positives,
        "predicted": predicted,
        "support": support,
    }


def entity_f1(
    references: Sequence[Sequence[str]],
    predictions: Sequence[Sequence[str]],
    scheme: str = "IOB2",
    mode: str = "default",
) -> dict:
    """Entity-level precision, recall and F1 of predicted tag sequences against references.

    Args:
        references: the reference tag sequences, one list of tag strings per sentence.
        predictions: the predicted tag sequences, each as long as its reference.
        scheme: ``"IOB1"``, ``"IOB2"`` (or ``"BIO"``), ``"IOBES"`` or ``"BILOU"``.
        mode: ``"default"`` (lenient, as ``conlleval``) or ``"strict"`` (well-formed entities
            only, as ``seqeval``'s strict mode); see the module docstring.

    Returns:
        A dict: ``precision``, ``recall`` and ``f1`` (floats from 0 to 1, micro-averaged over all
        entities), ``true_positives``, ``predicted`` and ``support`` (the numbers of correct,
        predicted and reference entities) and ``per_type``, a dict from each entity type found
        in either side (sorted) to a dict of the same six keys for that type.

    Raises:
        ValueError: an empty corpus, corpora of different sizes, a pair of sequences of
            different lengths, a tag that is not a tag of ``scheme`` (each naming the argument
            and the index), an unknown ``scheme`` or ``mode``, or ``mode="strict"`` with IOB1.
        TypeError: a corpus that is not a list of tag sequences.

    Example:
        >>> references = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
        >>> predictions = [["B-PER", "I-PER", "O", "B-ORG"], ["O", "I-ORG"]]
        >>> scores = entity_f1(references, predictions)
        >>> scores["true_positives"], scores["predicted"], scores["support"]
        (2, 3, 3)
        >>> entity_f1(references, predictions, mode="strict")["predicted"]  # I-ORG after O
        2
    """
    scheme, strict = _check_mode(scheme, mode)
    references = _sequences(references, "references")
    predictions = _sequences(predictions, "predictions")
    if len(references) != len(predictions):
        raise ValueError(
            f"references has {len(references)} sequences but predictions has {len(predictions)}"
        )
    counts = _count(references, predictions, scheme, strict)
    totals = [sum(column) for column in zip(*counts.values(), strict=True)] or [0, 0, 0]
    result = _scores(*totals)
    result["per_type"] = {type_: _scores(*counts[type_]) for type_ in sorted(counts)}
    return result


@keras.saving.register_keras_serializable(package="texkit")
class EntityF1(keras.metrics.Metric):
    """Entity-level F1 accumulated over batches of tag ids, with its precision and recall.

    The counts of correct, predicted and reference entities of each batch are added up, per
    entity type, so the result is :func:`entity_f1`'s over the whole dataset, however it falls
    into batches. The entities are read on the host: ``update_state`` calls Python through
    ``tf.numpy_function``, so it runs eagerly and in ``tf.function`` but not under XLA
    (``jit_compile=True``), and not in ``model.compile(metrics=...)`` (which passes logits);
    call it from an evaluation loop or a custom ``test_step`` with decoded tag ids. A bad id or
    length raises ``ValueError`` eagerly; in a ``tf.function`` it reaches the caller as
    ``tf.errors.InvalidArgumentError`` holding the same message. A refused batch changes nothing.

    Args:
        tags: the tag strings in id order (id ``i`` is ``tags[i]``), each a tag of ``scheme``;
            an id that stands for padding only ever sits past the sequence lengths, so give it
            any tag of the scheme (``"O"``).
        scheme: ``"IOB1"``, ``"IOB2"`` (or ``"BIO"``), ``"IOBES"`` or ``"BILOU"``.
        mode: ``"default"`` or ``"strict"``, as in :func:`entity_f1`.
        name: the metric's name (default ``"entity_f1"``).
        dtype: the dtype of the results (float32 by default).

    Call ``update_state(reference_tag_ids, predicted_tag_ids, sequence_length=None)`` per batch
    (``[batch, max_time]`` int ids and ``[batch]`` lengths; ``None`` counts every step), then
    ``result()`` (F1), ``precision()`` or ``recall()``; ``reset_state()`` starts over. Before
    anything counted, all three are 0. The variables ``true_positives``, ``predicted`` and
    ``support`` hold the int64 counts per type of ``types`` (sorted).

    Example:
        >>> metric = EntityF1(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
        >>> metric.update_state([[1, 2, 0, 3], [0, 3, 4, 0]], [[1, 2, 0, 0], [0, 3, 4, 2]],
        ...                     sequence_length=[4, 3])  # the last step is padding
        >>> # 2 correct of 2 predicted entities, of 3 in the references
        >>> [round(float(x), 4) for x in (metric.result(), metric.precision(), metric.recall())]
        [0.8, 1.0, 0.6667]
    """

    def __init__(
        self,
        tags: Sequence[str],
        scheme: str = "IOB2",
        mode: str = "default",
        name: str = "entity_f1",
        dtype: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        self.scheme, self._strict = _check_mode(scheme, mode)
        self.mode = mode
        if isinstance(tags, str) or not isinstance(tags, Sequence) or not tags:
            raise ValueError(f"tags must be a non-empty list of tag strings, got {tags!r}")
        parsed = [
            tag_schemes.parse_tag(tag, self.scheme, f"tags[{i}]") for i, tag in enumerate(tags)
        ]
        self.tags = tuple(tags)
        self.types = tuple(sorted({type_ for _, type_ in parsed if type_}))
        self._type_index = {type_: i for i, type_ in enumerate(self.types)}
        for counter in ("true_positives", "predicted", "support"):
            variable = self.add_variable(
                shape=(len(self.types),), initializer="zeros", dtype="int64", name=counter
            )
            setattr(self, counter, variable)

    def _count_batch(self, references: np.ndarray, predictions: np.ndarray, lengths: np.ndarray):
        """[3, num_types] counts of one batch, on the host."""
        counts = np.zeros((3, len(self.types)), np.int64)
        max_time = references.shape[1]
        for b, length in enumerate(lengths):
            if not 0 <= length <= max_time:
                raise ValueError(f"sequence_length[{b}] is {length}, not in [0, {max_time}]")
            rows = []
            for what, ids in (
                ("reference_tag_ids", references),
                ("predicted_tag_ids", predictions),
            ):
                row = ids[b, :length]
                bad = np.flatnonzero((row < 0) | (row >= len(self.tags)))
                if bad.size:
                    raise ValueError(
                        f"{what}[{b}, {bad[0]}] is {row[bad[0]]}, not an id of the "
                        f"{len(self.tags)} tags"
                    )
                tags = [self.tags[i] for i in row]
                rows.append(set(tag_schemes.entity_spans(tags, self.scheme, self._strict)))
            gold, guessed = rows
            for column, entities in enumerate((gold & guessed, guessed, gold)):
                for type_, _, _ in entities:
                    counts[column, self._type_index[type_]] += 1
        return counts

    def update_state(
        self, reference_tag_ids: Any, predicted_tag_ids: Any, sequence_length: Any = None
    ) -> None:
        references = tf.convert_to_tensor(reference_tag_ids)
        predictions = tf.convert_to_tensor(predicted_tag_ids)
        if references.shape.rank != 2 or not references.shape.is_compatible_with(predictions.shape):
            raise ValueError(
                "reference_tag_ids and predicted_tag_ids must be [batch, max_time] ids of one "
                f"shape, got shapes {tuple(references.shape)} and {tuple(predictions.shape)}"
            )
        if not references.dtype.is_integer or not predictions.dtype.is_integer:
            raise ValueError(
                "reference_tag_ids and predicted_tag_ids must be int ids, got dtypes "
                f"{references.dtype.name} and {predictions.dtype.name}"
            )
        shape = tf.shape(references)
        if sequence_length is None:
            sequence_length = tf.fill(shape[:1], shape[1])
        sequence_length = tf.convert_to_tensor(sequence_length)
        if sequence_length.shape.rank != 1 or not sequence_length.dtype.is_integer:
            raise ValueError(
                "sequence_length must be [batch] int lengths, got shape "
                f"{tuple(sequence_length.shape)} and dtype {sequence_length.dtype.name}"
            )
        if not sequence_length.shape.is_compatible_with(references.shape[:1]):
            raise ValueError(
                f"sequence_length must be [batch] with batch {references.shape[0]}, got shape "
                f"{tuple(sequence_length.shape)}"
            )
        counts = tf.numpy_function(
            self._count_batch,
            [tf.cast(references, tf.int64), tf.cast(predictions, tf.int64), sequence_length],
            tf.int64,
            stateful=False,
        )
        counts = tf.ensure_shape(counts, (3, len(self.types)))
        self.true_positives.assign_add(counts[0])
        self.predicted.assign_add(counts[1])
        self.support.assign_add(counts[2])

    def _ratio(self, numerator: Any, denominator: Any) -> Any:
        numerator = tf.cast(tf.reduce_sum(numerator), self.dtype)
        return tf.math.divide_no_nan(numerator, tf.cast(tf.reduce_sum(denominator), self.dtype))

    def result(self) -> Any:
        """The F1 of all entities counted so far (0 when there are none)."""
        return self._ratio(2 * self.true_positives, self.predicted + self.support)

    def precision(self) -> Any:
        """The share of the predicted entities that are correct (0 when none was predicted)."""
        return self._ratio(self.true_positives, self.predicted)

    def recall(self) -> Any:
        """The share of the reference entities that were predicted (0 when there are none)."""
        return self._ratio(self.true_positives, self.support)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(tags=list(self.tags), scheme=self.scheme, mode=self.mode)
        return config
