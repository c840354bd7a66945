"""Text of training scripts: special-token stripping and joining tokens, as Texar's
``strip_eos``, ``strip_bos``, ``strip_special_tokens`` and ``str_join``.

These helpers (and :func:`texkit.utils.ids.map_ids_to_strs`, built on them) work on two kinds of
input:

* TensorFlow tensors (dense or ragged, eager or in a graph: inside ``tf.function`` and
  ``tf.data.Dataset.map``), giving tensors: string tensors of sentences, or ragged tensors of
  tokens, since stripping leaves sequences of different lengths;
* NumPy arrays and (nested) Python lists, giving NumPy arrays of ``str`` and Python lists
  (token lists, ragged, always come back as lists). ``bytes`` (what ``tensor.numpy()`` holds)
  are decoded as UTF-8.

Text is either sentences, strings of tokens separated by ASCII whitespace (space, tab, newline,
carriage return, vertical tab, form feed: the splitting of :func:`texkit.data.split_tokens`), or,
with ``is_token_list=True``, sequences of tokens along the last axis. Stripping works on whole
tokens, in this order:

1. the first EOS token and everything after it are removed;
2. every PAD token is removed (Texar's documentation said leading and trailing ones; its code
   removed them all, and PAD is never content);
3. the BOS tokens before the first other token are removed.

Empty tokens (the padding of a dense string tensor) are dropped too, and the remaining tokens are
joined with single spaces, so sentences come back with normalized whitespace, as in Texar.

Departures from Texar: Python 2's ``compat`` argument is gone. Texar's code replaced PAD and BOS
as substrings of the joined text (``"x<PAD> y"`` became ``"xy"``, and a BOS anywhere was
removed); here only whole tokens match, and BOS only at the start, as Texar documented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = [
    "str_join",
    "strip_bos",
    "strip_eos",
    "strip_special_tokens",
    "strip_token",
]

# The whitespace tf.strings.split splits on, so the Python path splits sentences the same way.
_WHITESPACE = re.compile(r"[ \t\n\r\v\f]+")


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.RaggedTensor, tf.Variable))


def _is_str(value: Any) -> bool:
    return isinstance(value, (str, bytes, np.str_, np.bytes_))


def _text(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"{what} must hold strings, got {type(value).__name__} {value!r}")


def _check_token(token: Any, what: str) -> str | None:
    """A token to strip (``None``/``False``: do not strip)."""
    if token is None or token is False:
        return None
    return _required_token(token, what, " or None or False")


def _required_token(token: Any, what: str, alternatives: str = "") -> str:
    if not isinstance(token, str) or not token:
        raise ValueError(f"{what} must be a non-empty token string{alternatives}, got {token!r}")
    return token


# -- in the graph -----------------------------------------------------------------------------


def _check_string_tensor(value: Any, what: str) -> Any:
    if not isinstance(value, tf.RaggedTensor):
        value = tf.convert_to_tensor(value)
    if value.dtype != tf.string:
        raise TypeError(f"{what} must be a string tensor, got dtype {value.dtype.name}")
    return value


def _strip_graph(
    tokens: Any, pad: str | None, bos: str | None, eos: str | None, what: str = "tokens"
) -> Any:
    """Strips ``[..., max_time]`` string tokens (dense or ragged, rank >= 1) along the last axis.

    Returns a ragged tensor ``[..., None]`` (a dense ``[None]`` one for rank 1).
    """
    if isinstance(tokens, tf.RaggedTensor):
        valid = tf.ones_like(tokens, dtype=tf.bool).to_tensor(default_value=False)
        dense = tokens.to_tensor(default_value="")
    else:
        dense = tokens
        valid = tf.ones_like(dense, dtype=tf.bool)
    if dense.shape.rank == 0:
        raise ValueError(f"{what} must have rank >= 1 ([..., max_time]), got a scalar")
    keep = valid & tf.not_equal(dense, "")
    if eos is not None:
        seen_eos = tf.cumsum(tf.cast(keep & tf.equal(dense, eos), tf.int32), axis=-1)
        keep &= tf.equal(seen_eos, 0)
    if pad is not None:
        keep &= tf.not_equal(dense, pad)
    if bos is not None:
        is_bos = tf.equal(dense, bos)
        content_so_far = tf.cumsum(tf.cast(keep & ~is_bos, tf.int32), axis=-1)
        keep &= ~(is_bos & tf.equal(content_so_far, 0))
    if dense.shape.rank == 1:
        return tf.boolean_mask(dense, keep)
    return tf.ragged.boolean_mask(dense, keep)


def _strip_text_graph(
    text: Any, pad: str | None, bos: str | None, eos: str | None, is_token_list: bool
) -> Any:
    text = _check_string_tensor(text, "text")
    if is_token_list:
        return _strip_graph(text, pad, bos, eos, "text (token lists)")
    tokens = _strip_graph(tf.strings.split(text), pad, bos, eos)
    return tf.strings.reduce_join(tokens, axis=-1, separator=" ")


# -- in Python --------------------------------------------------------------------------------


def _strip_list(tokens: list[str], pad: str | None, bos: str | None, eos: str | None) -> list:
    tokens = [token for token in tokens if token]
    if eos is not None and eos in tokens:
        tokens = tokens[: tokens.index(eos)]
    if pad is not None:
        tokens = [token for token in tokens if token != pad]
    if bos is not None:
        start = 0
        while start < len(tokens) and tokens[start] == bos:
            start += 1
        tokens = tokens[start:]
    return tokens


def _split(sentence: str) -> list[str]:
    return [token for token in _WHITESPACE.split(sentence) if token]


def _map_sentences(text: Any, function: Any, what: str) -> Any:
    """``function`` on each sentence of a str, a nested list or an array, keeping the structure."""
    if isinstance(text, np.ndarray):
        if text.ndim == 0:
            return function(_text(text.item(), what))
        out = np.empty(text.shape, dtype=object)
        for index, sentence in np.ndenumerate(text):
            out[index] = function(_text(sentence, f"{what}{list(index)}"))
        return out
    if _is_str(text):
        return function(_text(text, what))
    if isinstance(text, Sequence):
        return [_map_sentences(item, function, f"{what}[{i}]") for i, item in enumerate(text)]
    raise TypeError(
        f"{what} must be a string, a (nested) list or array of strings, or a string tensor; got "
        f"{type(text).__name__}"
    )


def _map_token_lists(tokens: Any, function: Any, what: str) -> Any:
    """``function`` on each token list (the innermost lists) of nested lists or an array."""
    if isinstance(tokens, np.ndarray):
        if tokens.ndim == 0:
            raise ValueError(f"{what} must be token lists ([..., max_time]), got a scalar array")
        tokens = tokens.tolist()
    if _is_str(tokens) or not isinstance(tokens, Sequence):
        raise TypeError(
            f"{what} must be a sequence of tokens or nested sequences of them, got "
            f"{type(tokens).__name__} {tokens!r}"
        )
    if len(tokens) == 0 or _is_str(tokens[0]):
        return function([_text(token, f"{what}[{i}]") for i, token in enumerate(tokens)])
    return [_map_token_lists(item, function, f"{what}[{i}]") for i, item in enumerate(tokens)]


def _strip_text_py(
    text: Any, pad: str | None, bos: str | None, eos: str | None, is_token_list: bool
) -> Any:
    if is_token_list:
        return _map_token_lists(text, lambda tokens: _strip_list(tokens, pad, bos, eos), "text")
    return _map_sentences(
        text, lambda sentence: " ".join(_strip_list(_split(sentence), pad, bos, eos)), "text"
    )


# -- public -----------------------------------------------------------------------------------


def strip_special_tokens(
    text: Any,
    strip_pad: str | None = "<PAD>",
    strip_bos: str | None = "<BOS>",
    strip_eos: str | None = "<EOS>",
    is_token_list: bool = False,
) -> Any:
    """Removes EOS and what follows it, every PAD, and the leading BOS tokens.

    Args:
        text: sentences (a string, or a nested list, array or string tensor of them), or with
            ``is_token_list`` token sequences along the last axis (nested lists, an array, a
            dense or ragged string tensor).
        strip_pad, strip_bos, strip_eos: the tokens to strip; ``None`` or ``False`` keeps them.
        is_token_list: whether the last axis of ``text`` holds tokens.

    Returns:
        For sentences, the stripped sentences in the structure of ``text`` (a string tensor of the
        same shape in the graph). For token lists, nested Python lists of tokens, or in the graph a
        ragged tensor ``[..., None]`` (a ``[None]`` tensor for one sequence).

    Example:
        >>> strip_special_tokens("<BOS> a cat <EOS> <PAD> <PAD>")
        'a cat'
        >>> strip_special_tokens(tf.constant([["<BOS>", "sat", "<EOS>"], ["ran", "<PAD>", ""]]),
        ...                      is_token_list=True).to_list()
        [[b'sat'], [b'ran']]
    """
    pad = _check_token(strip_pad, "strip_pad")
    bos = _check_token(strip_bos, "strip_bos")
    eos = _check_token(strip_eos, "strip_eos")
    if _is_tensor(text):
        return _strip_text_graph(text, pad, bos, eos, is_token_list)
    return _strip_text_py(text, pad, bos, eos, is_token_list)


def strip_eos(text: Any, eos_token: str = "<EOS>", is_token_list: bool = False) -> Any:
    """Removes the first ``eos_token`` and every token after it.

    Arguments and results as in :func:`strip_special_tokens`.

    Example:
        >>> strip_eos(["a cat <EOS> <PAD>", "no end"])
        ['a cat', 'no end']
    """
    return strip_special_tokens(
        text, None, None, _required_token(eos_token, "eos_token"), is_token_list
    )


def strip_bos(text: Any, bos_token: str = "<BOS>", is_token_list: bool = False) -> Any:
    """Removes the ``bos_token`` tokens at the start.

    Arguments and results as in :func:`strip_special_tokens`.

    Example:
        >>> strip_bos([["<BOS>", "<BOS>", "a", "<BOS>"]], is_token_list=True)
        [['a', '<BOS>']]
    """
    return strip_special_tokens(
        text, None, _required_token(bos_token, "bos_token"), None, is_token_list
    )


def strip_token(text: Any, token: str, is_token_list: bool = False) -> Any:
    """Removes every occurrence of ``token`` (e.g. ``"<PAD>"``).

    Arguments and results as in :func:`strip_special_tokens`.
    """
    return strip_special_tokens(text, _required_token(token, "token"), None, None, is_token_list)


def str_join(tokens: Any, sep: str = " ") -> Any:
    """Joins the tokens of the last axis with ``sep``: ``[..., max_time]`` -> ``[...]``.

    Nothing is stripped; see :func:`strip_special_tokens` for that.

    Args:
        tokens: a sequence of tokens, nested lists or an array of them, or a dense or ragged
            string tensor.
        sep: the separator.

    Returns:
        In the graph a string tensor of one rank less; otherwise a ``str`` for one sequence, and
        nested lists (for lists) or an array of ``str`` (for an array) for several.

    Example:
        >>> str_join([["a", "cat"], ["sat"]])
        ['a cat', 'sat']
        >>> str_join(tf.ragged.constant([["a", "cat"], ["sat"]]), sep="_").numpy()
        array([b'a_cat', b'sat'], dtype=object)
    """
    if not isinstance(sep, str):
        raise TypeError(f"sep must be a str, got {type(sep).__name__}")
    if _is_tensor(tokens):
        tokens = _check_string_tensor(tokens, "tokens")
        if tokens.shape.rank == 0:
            raise ValueError("tokens must have rank >= 1 ([..., max_time]), got a scalar")
        return tf.strings.reduce_join(tokens, axis=-1, separator=sep)
    if isinstance(tokens, np.ndarray) and tokens.ndim >= 2:
        rows = tokens.reshape(-1, tokens.shape[-1])
        joined = [sep.join(_text(t, "tokens") for t in row) for row in rows]
        return np.array(joined, dtype=object).reshape(tokens.shape[:-1])
    return _map_token_lists(tokens, sep.join, "tokens")
