"""Ids to text: :func:`map_ids_to_strs`, as Texar's, over a :class:`texkit.data.Vocab`.

It looks the tokens up, strips the special tokens and joins the rest, with the stripping of
:mod:`texkit.utils.text`, on tensors (also in a graph) and on NumPy arrays and Python lists.

Departures from Texar: it strips by default the special tokens of the vocabulary it is given
(Texar: the literal ``"<PAD>"``, ``"<BOS>"``, ``"<EOS>"``), strips before joining, so a token
holding a space stays one token with ``join=False``, and takes ``[max_time]`` or ``[batch,
max_time]`` ids (Texar: any rank; for beam-search ids ``[batch, beam, max_time]`` pass
``ids[:, 0]`` or reshape to ``[batch * beam, max_time]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.utils.text import _check_token, _is_str, _is_tensor, _strip_graph, _strip_list, _text

__all__ = ["map_ids_to_strs"]


def _check_vocab(vocab: Any) -> None:
    needed = ("map_ids_to_tokens", "map_ids_to_tokens_py", "pad_token", "bos_token", "eos_token")
    missing = [name for name in needed if not hasattr(vocab, name)]
    if missing:
        raise TypeError(
            "vocab must be a texkit.data.Vocab (or have its map_ids_to_tokens, "
            f"map_ids_to_tokens_py and pad/bos/eos tokens), got {type(vocab).__name__} "
            f"without {', '.join(missing)}"
        )


def _special(strip: Any, default: str, what: str) -> str | None:
    """``True``: the vocabulary's token; a string: that token; ``None``/``False``: none."""
    return default if strip is True else _check_token(strip, what)


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _id_rows(ids: Any) -> tuple[list[np.ndarray], bool]:
    """The id sequences of NumPy or Python ``ids``, and whether ``ids`` is one sequence."""
    if isinstance(ids, np.ndarray):
        if not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"ids must be integer ids, got an array of dtype {ids.dtype}")
        if ids.ndim not in (1, 2):
            raise ValueError(
                f"ids must be [max_time] or [batch, max_time], got shape {ids.shape}; for "
                "beam-search ids [batch, beam, max_time], pass ids[:, 0] or reshape them"
            )
        return (list(ids) if ids.ndim == 2 else [ids]), ids.ndim == 1
    if not isinstance(ids, Sequence) or _is_str(ids):
        raise TypeError(
            f"ids must be a tensor, an array or a (nested) list of int ids, got "
            f"{type(ids).__name__}"
        )
    if all(_is_id(i) for i in ids):
        return [np.asarray(ids, dtype=np.int64)], True
    rows = []
    for i, row in enumerate(ids):
        row = np.asarray(row) if isinstance(row, (Sequence, np.ndarray)) else None
        if row is None or row.ndim != 1 or (row.size and not np.issubdtype(row.dtype, np.integer)):
            raise ValueError(
                f"ids must be [max_time] or [batch, max_time] int ids: ids[{i}] is not a sequence "
                "of ints (for beam-search ids [batch, beam, max_time], pass ids[:, 0])"
            )
        rows.append(row.astype(np.int64))
    return rows, False


def map_ids_to_strs(
    ids: Any,
    vocab: Any,
    join: bool = True,
    strip_pad: bool | str | None = True,
    strip_bos: bool | str | None = True,
    strip_eos: bool | str | None = True,
    sep: str = " ",
) -> Any:
    """Turns ids into text: looks the tokens up, strips special tokens and joins the rest.

    Args:
        ids: ``[max_time]`` or ``[batch, max_time]`` int ids: a tensor (dense or ragged, also in
            a graph), a NumPy array, or (nested, possibly ragged) lists.
        vocab: a :class:`texkit.data.Vocab`.
        join: join each sequence's tokens into one string with ``sep``.
        strip_pad, strip_bos, strip_eos: ``True`` strips the vocabulary's special token, a string
            strips that token, ``None`` or ``False`` strips nothing (see :mod:`texkit.utils.text`).
        sep: the separator of the joined tokens.

    Returns:
        With ``join``: for tensor ids, a string tensor ``[]`` or ``[batch]``; otherwise a ``str``,
        or a NumPy array of ``str`` (for an array) or a list of ``str`` (for lists). Without
        ``join``: the tokens, as a ragged tensor ``[batch, None]`` (``[None]`` for one sequence),
        or Python lists. In the graph, ids outside the vocabulary give its UNK token; in Python
        they raise the vocabulary's ``ValueError``.

    Raises:
        TypeError: ``vocab`` is not a vocabulary, or ``ids`` are not integers.
        ValueError: ``ids`` of another rank, or a bad token to strip.

    Example:
        >>> vocab = tx.data.Vocab.from_tokens(["a", "cat", "sat"])  # ids 4, 5, 6
        >>> ids = [[1, 4, 5, 2, 0], [1, 6, 2, 0, 0]]
        >>> map_ids_to_strs(ids, vocab)
        ['a cat', 'sat']
        >>> map_ids_to_strs(np.array(ids), vocab, join=False, strip_pad=False)
        [['a', 'cat'], ['sat']]
        >>> dataset = tf.data.Dataset.from_tensor_slices(ids).batch(2)
        >>> [text.numpy() for text in dataset.map(lambda i: map_ids_to_strs(i, vocab))]
        [array([b'a cat', b'sat'], dtype=object)]
    """
    _check_vocab(vocab)
    if not isinstance(sep, str):
        raise TypeError(f"sep must be a str, got {type(sep).__name__}")
    pad = _special(strip_pad, vocab.pad_token, "strip_pad")
    bos = _special(strip_bos, vocab.bos_token, "strip_bos")
    eos = _special(strip_eos, vocab.eos_token, "strip_eos")
    if _is_tensor(ids):
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        if not ids.dtype.is_integer:
            raise TypeError(f"ids must be integer ids, got dtype {ids.dtype.name}")
        if ids.shape.rank not in (1, 2):
            raise ValueError(
                f"ids must be [max_time] or [batch, max_time], got shape {tuple(ids.shape)}; "
                "for beam-search ids [batch, beam, max_time], pass ids[:, 0] or reshape them"
            )
        tokens = _strip_graph(vocab.map_ids_to_tokens(ids), pad, bos, eos)
        return tf.strings.reduce_join(tokens, axis=-1, separator=sep) if join else tokens
    rows, single = _id_rows(ids)
    token_rows = [
        _strip_list([_text(t, "token") for t in vocab.map_ids_to_tokens_py(row)], pad, bos, eos)
        for row in rows
    ]
    if not join:
        return token_rows[0] if single else token_rows
    texts = [sep.join(tokens) for tokens in token_rows]
    if single:
        return texts[0]
    return np.array(texts, dtype=object) if isinstance(ids, np.ndarray) else texts
