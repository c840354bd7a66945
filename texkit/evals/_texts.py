"""Batches of texts as Python strings, for the metrics that score text on the host.

A batch is a list or tuple of ``str`` or UTF-8 ``bytes``, a 1-D NumPy array of them, or a 1-D
``tf.string`` tensor (eager); references may also hold several texts per item (a list, or one
row of a 2-D array, tensor or ragged tensor). Every refusal names the argument and the item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["as_items", "as_reference_lists", "as_text", "as_texts", "check_corpus"]


def as_text(value: Any, what: str) -> str:
    """One text: ``str``, or UTF-8 ``bytes`` (what TensorFlow gives for ``tf.string``)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{what} is not valid UTF-8: {error}") from None
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} must be a string (str or UTF-8 bytes), got {type(value).__name__}")


def as_items(value: Any, what: str) -> list[Any]:
    """The items of a batch: of a list, a NumPy array, or an eager (ragged) tensor."""
    if isinstance(value, (tf.Tensor, tf.Variable, tf.RaggedTensor)):
        if not tf.executing_eagerly():
            raise TypeError(f"{what} is a symbolic tensor; pass an eager tensor or Python texts")
        value = value.to_list() if isinstance(value, tf.RaggedTensor) else value.numpy()
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            raise ValueError(f"{what} must be a batch of texts, got a single value {value!r}")
        return list(value)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be a list of texts, got a single text {value!r}")
    if not isinstance(value, Sequence):
        raise TypeError(f"{what} must be a list of texts, got {type(value).__name__}")
    return list(value)


def as_texts(value: Any, what: str) -> list[str]:
    """A batch of texts as a list of ``str``; ``what`` names the argument in errors."""
    items = as_items(value, what)
    return [as_text(item, f"{what}[{i}]") for i, item in enumerate(items)]


def as_reference_lists(value: Any, num_hypotheses: int, what: str) -> list[list[str]]:
    """One non-empty list of reference texts per hypothesis.

    An item of ``value`` is a text (one reference) or a sequence of texts (several); ``value``
    must have ``num_hypotheses`` items.
    """
    items = as_items(value, what)
    if len(items) != num_hypotheses:
        raise ValueError(
            f"{what} must have one item per hypothesis: got {len(items)} for "
            f"{num_hypotheses} hypotheses"
        )
    references = []
    for i, item in enumerate(items):
        if isinstance(item, np.ndarray) and item.ndim == 0:
            item = item.item()
        if isinstance(item, (str, bytes)):
            references.append([as_text(item, f"{what}[{i}]")])
            continue
        if not isinstance(item, (Sequence, np.ndarray)) or len(item) == 0:
            raise TypeError(
                f"{what}[{i}] must be a text or a non-empty list of texts, got {item!r}"
            )
        references.append([as_text(text, f"{what}[{i}][{j}]") for j, text in enumerate(item)])
    return references


def check_corpus(hypotheses: list[str], what: str) -> None:
    """Refuse an empty corpus: a score over no text is undefined."""
    if not hypotheses:
        raise ValueError(f"{what} is empty: the score needs at least one text")
