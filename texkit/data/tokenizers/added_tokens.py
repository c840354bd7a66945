"""Added tokens kept whole in a text, in TensorFlow ops: what
:class:`~texkit.data.tokenizers.ByteLevelBPETokenizer` and the ``"llama"`` style of
:class:`~texkit.data.tokenizers.SentencePieceTokenizer` do before their own tokenization.

As Hugging Face's ``tokenizers`` library: the added tokens written in a text are found left to
right, the longest at each place, each with the whitespace before it (``lstrip``) or after it
(``rstrip``) when its entry says so (that whitespace is dropped); each is its id, and the text
between them is tokenized on its own. :func:`added_token_pattern` makes the RE2 pattern and the
table of ids once, :func:`around_added` cuts a batch of texts with them (``single_word`` is not
reproduced; the readers of the files refuse it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.reading import shown
from texkit.data.tokenizers.tokenizer_json import AddedToken

__all__ = ["added_token_flags", "added_token_pattern", "around_added"]

# Unicode White_Space, for an added token's lstrip / rstrip (Rust's char::is_whitespace).
_WHITESPACE = (
    r"[\t\n\x0B\x0C\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
    r"\x{205F}\x{3000}]"
)
# The characters RE2 reads as syntax, escaped in an added token's text.
_RE2_SPECIAL = frozenset("\\.^$|?*+()[]{}")
# Brackets each added token in a text: not UTF-8, so in no text after transcoding.
_MARK = b"\xff"


def added_token_pattern(
    tokens: Sequence[AddedToken],
) -> tuple[str, tf.lookup.StaticHashTable] | None:
    """The RE2 pattern that matches one of ``tokens`` (the longest first, with the whitespace
    its ``lstrip`` / ``rstrip`` take), and the table from a token's text to its id; ``None``
    for no tokens."""
    if not tokens:
        return None
    alternatives = []
    for token in sorted(tokens, key=lambda t: -len(t.content.encode("utf-8"))):
        text = "".join("\\" + c if c in _RE2_SPECIAL else c for c in token.content)
        lead = f"{_WHITESPACE}*" if token.lstrip else ""
        tail = f"{_WHITESPACE}*" if token.rstrip else ""
        alternatives.append(f"{lead}{text}{tail}")
    ids = {token.content: token.id for token in tokens}
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(ids), tf.string), tf.constant(list(ids.values()), tf.int64)
        ),
        default_value=-1,
    )
    return "|".join(alternatives), table


def added_token_flags(config: Mapping[str, Any], file: str) -> dict[int, tuple[bool, bool]]:
    """The ``lstrip`` and ``rstrip`` of each entry of a ``tokenizer_config.json``'s
    ``added_tokens_decoder`` (``config``, read from ``file``), by id; absent flags are false.

    :func:`~texkit.data.tokenizers.tokenizer_config.read_tokenizer_config` checks the ids and
    ``content`` of the entries; this checks their flags.

    Raises:
        ValueError: a flag that is not true or false, or ``single_word`` true (a token matched
            only as a whole word, which is not reproduced); the message names the file and the
            entry.
    """
    flags = {}
    for key, entry in (config.get("added_tokens_decoder") or {}).items():
        where = f"{file!r}: added_tokens_decoder[{key!r}]"
        for flag in ("lstrip", "rstrip", "normalized", "single_word"):
            if not isinstance(entry.get(flag, False), bool):
                raise ValueError(f"{where}.{flag} must be true or false, got {shown(entry[flag])}")
        if entry.get("single_word", False):
            raise ValueError(
                f"{where}.single_word is true; a token kept whole only as a word of its own is "
                "not supported"
            )
        flags[int(key)] = (entry.get("lstrip", False), entry.get("rstrip", False))
    return flags


def around_added(
    texts: tf.Tensor,
    added: tuple[str, tf.lookup.StaticHashTable] | None,
    text_ids: Callable[[tf.Tensor, tf.Tensor], tf.RaggedTensor],
) -> tf.RaggedTensor:
    """``[n]`` texts to ``[n, (tokens)]`` ids: the added tokens of ``added`` (a pattern and the
    table of their ids, from :func:`added_token_pattern`, or ``None``) kept whole, the text
    between them given to ``text_ids(parts, first)``, where ``first`` (bool, one per part) says
    which part is a text's first, before any added token (all of them for ``added=None``)."""
    if added is None:
        return text_ids(texts, tf.ones(tf.shape(texts), tf.bool))
    pattern, table = added
    # MARK token MARK around each added token: the parts of a text alternate text, token.
    marked = tf.strings.regex_replace(texts, pattern, _MARK + rb"\0" + _MARK)
    parts = tf.strings.split(marked, _MARK)
    flat = parts.flat_values
    position = tf.range(tf.size(flat, out_type=tf.int64)) - tf.gather(
        parts.row_starts(), parts.value_rowids()
    )
    is_token = position % 2 == 1
    between = text_ids(tf.where(is_token, "", flat), position == 0)
    token = table.lookup(flat)
    # A token that took the whitespace around it (lstrip, rstrip), without it.
    bare = tf.strings.regex_replace(flat, f"^{_WHITESPACE}+|{_WHITESPACE}+$", "")
    token = tf.where(token < 0, table.lookup(bare), token)
    tokens = tf.RaggedTensor.from_row_lengths(
        tf.cast(tf.boolean_mask(token, is_token), tf.int32), tf.cast(is_token, tf.int64)
    )
    return parts.with_flat_values(tf.concat([between, tokens], axis=1)).merge_dims(1, 2)
