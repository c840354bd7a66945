"""Helpers of training scripts: ids to text, special-token stripping, Texar's ``get_instance``.

The text helpers follow Texar's ``map_ids_to_strs``, ``strip_eos``, ``strip_bos``,
``strip_special_tokens`` and ``str_join``, and work on two kinds of input:

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

Departures from Texar: Python 2's ``compat`` argument is gone; :func:`map_ids_to_strs` strips by
default the special tokens of the vocabulary it is given (Texar: the literal ``"<PAD>"``,
``"<BOS>"``, ``"<EOS>"``), strips before joining, so a token holding a space stays one token with
``join=False``, and takes ``[max_time]`` or ``[batch, max_time]`` ids (Texar: any rank; for
beam-search ids ``[batch, beam, max_time]`` pass ``ids[:, 0]`` or reshape to ``[batch * beam,
max_time]``). Texar's code replaced PAD and BOS as substrings of the joined text (``"x<PAD> y"``
became ``"xy"``, and a BOS anywhere was removed); here only whole tokens match, and BOS only at
the start, as Texar documented.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from texkit import registry
from texkit.errors import HParamsError

__all__ = [
    "get_instance",
    "map_ids_to_strs",
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
            strips that token, ``None`` or ``False`` strips nothing (see :mod:`texkit.utils`).
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


def get_instance(
    class_or_name: type | str, kwargs: Mapping[str, Any] | None, module_paths: Any = None
) -> Any:
    """Creates an instance of a class given by itself or by name, as Texar's ``get_instance``.

    A name resolves through :mod:`texkit.registry` only: a registered name (``"LSTMCell"``) or a
    dotted path under one of its allowed namespaces (``"keras.layers.Dense"``). With
    ``module_paths``, a name that does not resolve on its own is tried under each path in turn
    (``"Dense"`` under ``"keras.layers"``); each path must itself lie in an allowed namespace.
    Nothing else is imported, unlike Texar, which located any dotted path.

    Args:
        class_or_name: a class, or its registry name or dotted path.
        kwargs: the constructor's keyword arguments (a mapping, an :class:`~texkit.HParams` or
            ``None``); each must be a parameter of the constructor unless it takes ``**kwargs``.
        module_paths: dotted module paths to try the name under, first match wins.

    Returns:
        ``cls(**kwargs)``.

    Raises:
        ValueError: the name resolves nowhere (the message says why for each try), or a kwarg
            the class does not take (naming the ones it does).
        TypeError: the name resolves to something other than a class, or ``kwargs`` is not a
            mapping.

    Example:
        >>> layer = get_instance("Dense", {"units": 3}, module_paths=["keras.layers"])
        >>> type(layer).__name__, layer.units
        ('Dense', 3)
    """
    cls = _get_class(class_or_name, module_paths)
    if kwargs is None:
        kwargs = {}
    elif hasattr(kwargs, "todict"):
        kwargs = kwargs.todict()
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping or None, got {type(kwargs).__name__}")
    kwargs = dict(kwargs)
    parameters = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    accepted = [
        name
        for name, p in parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    unknown = [key for key in kwargs if key not in accepted]
    if unknown and not takes_any:
        raise ValueError(
            f"{cls.__module__}.{cls.__qualname__} takes no argument {', '.join(map(repr, unknown))}"
            f"; it takes {', '.join(accepted) or 'none'}"
        )
    return cls(**kwargs)


def _get_class(class_or_name: Any, module_paths: Any) -> type:
    if inspect.isclass(class_or_name):
        return class_or_name
    if not isinstance(class_or_name, str) or not class_or_name:
        raise TypeError(f"class_or_name must be a class or a name, got {class_or_name!r}")
    if module_paths is None:
        module_paths = []
    elif isinstance(module_paths, str) or not isinstance(module_paths, Sequence):
        raise TypeError(f"module_paths must be a list of dotted paths, got {module_paths!r}")
    for path in module_paths:
        if not isinstance(path, str) or not path:
            raise TypeError(f"module_paths must hold dotted paths, got {path!r}")
    failures = []
    for candidate in [class_or_name] + [f"{path}.{class_or_name}" for path in module_paths]:
        try:
            found = registry.resolve(candidate)
        except HParamsError as error:
            failures.append(f"{candidate!r}: {error.message}")
            continue
        if not inspect.isclass(found):
            raise TypeError(f"{candidate!r} is a function, not a class; get_instance makes objects")
        return found
    raise ValueError(f"cannot find class {class_or_name!r}: " + "; ".join(failures))
