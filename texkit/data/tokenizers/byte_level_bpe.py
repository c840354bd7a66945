"""Byte-level BPE from a Hugging Face ``tokenizer.json`` (Llama 3, Qwen2 and 3, Mistral's Tekken,
GPT-2) in the TensorFlow graph, with the ids of the ``tokenizers`` library.

:class:`ByteLevelBPETokenizer` does what the ``tokenizers`` library does with such a file, in
TensorFlow ops (no ``tf.py_function``): eagerly, inside ``tf.function`` and ``tf.data``, and
exported in a SavedModel.

1. Added tokens (``added_tokens``: ``<|begin_of_text|>``, ``<|im_start|>``...) written in a
   text are cut out first and kept whole, the longest at the leftmost place, with the
   whitespace before (``lstrip``) or after (``rstrip``) them when the file says so: first
   those that are not ``normalized`` in the text as written, then the ``normalized`` ones in
   the normalized text between them, as the ``tokenizers`` library does
   (:mod:`~texkit.data.tokenizers.added_tokens`, shared with SentencePiece's ``"llama"``).
2. The text between them is normalized (the file's Unicode normal form, Qwen's NFC; with
   ``tensorflow_text.normalize_utf8``), split by the file's pattern
   (:mod:`~texkit.data.tokenizers.split_patterns`; the pattern is recognized by its exact
   regular expression, an unknown one is refused), and each piece's bytes are merged by
   :mod:`~texkit.data.tokenizers.bpe_merges`, the engine of
   :class:`~texkit.data.tokenizers.GPT2BPETokenizer`. With ``ignore_merges`` (Llama 3) a
   piece that is itself in the vocabulary is that one token.
3. :meth:`ByteLevelBPETokenizer.encode` adds what the file's post-processor adds
   (:mod:`~texkit.data.tokenizers.post_processors`): Llama 3's ``<|begin_of_text|>``, none for
   Qwen. ``add_bos_token`` and ``add_eos_token`` of ``tokenizer_config.json`` are not read:
   transformers' ``PreTrainedTokenizerFast`` (Llama 3's class) follows the file too, while
   ``LlamaTokenizerFast`` rebuilds the post-processor from those flags (for the folders of the
   families above they agree with the file).

Known differences from the ``tokenizers`` library, all at the edges:

* A piece of more than ``max_chars_per_word`` characters (100 by default) is cut into pieces
  of that many before BPE, which keeps the time linear in the text
  (:class:`~texkit.data.tokenizers.GPT2BPETokenizer` says why); ``None`` gives the library's
  ids on every text.
* Letters and digits are classed by Unicode 17.0 (RE2's tables and the additions of
  :mod:`~texkit.data.tokenizers.split_patterns`), the library's by Unicode 16.0: the pieces
  differ next to characters that Unicode 17.0 assigned. Tekken's pattern tells cased letters
  apart; a letter assigned after Unicode 15.0 counts as uncased there (``\\p{Lo}``).
* Bytes that are not UTF-8 are read as U+FFFD (the library takes only valid text).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf
import tensorflow_text as tf_text

from texkit.data.tokenizers.added_tokens import added_token_pattern, around_added
from texkit.data.tokenizers.bpe_merges import bpe_pieces, merge_table
from texkit.data.tokenizers.byte_bpe import (
    _MAX_CUT,
    MAX_CHARS_PER_WORD,
    MAX_VOCAB_SIZE,
    byte_symbols,
)
from texkit.data.tokenizers.chat_templates import ChatTemplateMixin
from texkit.data.tokenizers.reading import present
from texkit.data.tokenizers.split_patterns import SPLIT_PATTERNS, _cut_long_pieces, split_pieces
from texkit.data.tokenizers.templated import (
    TemplateTokenizer,
    setting,
    special_id,
    utf8_or_replacement,
)
from texkit.data.tokenizers.tokenizer_config import SPECIAL_ROLES, read_tokenizer_config
from texkit.data.tokenizers.tokenizer_json import TokenizerJson, read_tokenizer_json

__all__ = ["ByteLevelBPETokenizer"]


class ByteLevelBPETokenizer(ChatTemplateMixin, TemplateTokenizer):
    """A byte-level BPE ``tokenizer.json`` (Llama 3, Qwen2 / Qwen3, Mistral's Tekken, GPT-2) in
    the TensorFlow graph: the ``tokenizers`` library's ids (see
    :mod:`texkit.data.tokenizers.byte_level_bpe` for how, and the few known differences).

    :meth:`tokenize` gives the ids without special tokens (added tokens written in the text are
    kept whole); :meth:`encode` packs them as the file's post-processor does (Llama 3:
    ``<|begin_of_text|> A``, a pair ``<|begin_of_text|> A <|begin_of_text|> B``), padded to a
    static ``max_seq_length``; :meth:`detokenize` gives the text back.

    Args:
        tokenizer_file: The ``tokenizer.json`` (local or any ``tf.io.gfile`` path).
        special_tokens: The special tokens by role (``"bos"``, ``"eos"``, ``"unk"``,
            ``"pad"``), which :attr:`bos_id`, :attr:`eos_id`, :attr:`unk_id` and
            :attr:`pad_id` give (``None`` for a role not named). :meth:`from_pretrained` reads
            them from the folder's ``tokenizer_config.json`` and ``special_tokens_map.json``
            (:mod:`~texkit.data.tokenizers.tokenizer_config`).
        max_seq_length: Length of :meth:`encode`'s outputs, special tokens included.
        pad_token: The padding token. ``None``: the ``"pad"`` of ``special_tokens``, else its
            ``"eos"``, else id 0 (``sequence_length`` says where a text ends).
        max_chars_per_word: A piece longer than this (in characters) is cut into pieces of
            this length before BPE (at most 1,000); ``None``: never.
        name: Name of the ``tf.Module``.

    Example:
        With the small Llama-3-like folder of the tests:

        >>> tokenizer = tx.data.ByteLevelBPETokenizer.from_pretrained(
        ...     "tests/fixtures/tokenizer_json/llama3", max_seq_length=12
        ... )
        >>> ids = tokenizer.tokenize(["<|begin_of_text|>And God said, Let there be light"])
        >>> [tokenizer.id_to_token(i) for i in ids[0].numpy()]  # doctest: +NORMALIZE_WHITESPACE
        ['<|begin_of_text|>', 'And', 'ĠGod', 'Ġsaid', ',', 'ĠL', 'et', 'Ġthere', 'Ġbe', 'Ġl',
         'ight']
        >>> tokenizer.detokenize(ids, skip_special_tokens=True).numpy()
        array([b'And God said, Let there be light'], dtype=object)
        >>> features = tokenizer.encode(["And God said"])  # <|begin_of_text|> first
        >>> features["input_ids"].numpy()
        array([[1005,  338,  478,  481, 1006, 1006, 1006, 1006, 1006, 1006, 1006,
                1006]], dtype=int32)
        >>> features["sequence_length"].numpy()
        array([4], dtype=int32)
    """

    _source_arg = "tokenizer_file"
    _repr_files = ("tokenizer_file",)
    _repr_settings = ("split_pattern", "max_seq_length")

    def __init__(
        self,
        tokenizer_file: str | os.PathLike,
        special_tokens: Mapping[str, str | None] | None = None,
        max_seq_length: int = 512,
        pad_token: str | None = None,
        max_chars_per_word: int | None = MAX_CHARS_PER_WORD,
        name: str = "byte_level_bpe_tokenizer",
    ):
        super().__init__(name=name)
        _check_max_chars(max_chars_per_word)
        path = os.fspath(tokenizer_file)
        spec = read_tokenizer_json(path, type(self).__name__)
        self._settings = {
            "tokenizer_file": path,
            "split_pattern": spec.split_pattern,
            "normalizer": spec.normalizer,
            "ignore_merges": spec.ignore_merges,
            "max_chars_per_word": max_chars_per_word,
            "num_merges": len(spec.merges),
        }
        ids = {**spec.vocab, **{token.content: token.id for token in spec.added_tokens}}
        bound = max(ids.values()) + 1
        if bound > MAX_VOCAB_SIZE:
            raise ValueError(
                f"ByteLevelBPETokenizer: {path!r} holds the id {bound - 1:,}; ids must be below "
                f"{MAX_VOCAB_SIZE:,} (texkit.data.tokenizers.byte_bpe.MAX_VOCAB_SIZE)"
            )
        tokens: list[str | None] = [None] * bound
        for token, token_id in ids.items():
            tokens[token_id] = token
        self._set_vocabulary(tokens, ids)
        symbols = byte_symbols()
        missing = [s for s in symbols if s not in spec.vocab]
        if missing:
            raise ValueError(
                f"ByteLevelBPETokenizer: {path!r} field 'model.vocab' lacks {len(missing)} of "
                f"the 256 byte symbols (e.g. {missing[0]!r}); a byte-level BPE holds them all"
            )
        self._set_special_tokens(spec, special_tokens or {}, pad_token)
        self._set_template(spec.template, spec.second_segment, max_seq_length, "the post-processor")
        self._byte_ids = tf.constant([spec.vocab[s] for s in symbols], tf.int32)
        self._merges = merge_table(spec.vocab, spec.merges, bound)
        self._whole_words = _whole_words(spec.vocab, symbols) if spec.ignore_merges else None
        # The added tokens found in the text as written, then those found in the normalized.
        self._added = tuple(
            added_token_pattern([t for t in spec.added_tokens if t.normalized == normalized])
            for normalized in (False, True)
        )
        self._token_bytes = tf.constant(self._bytes_of_tokens(symbols), tf.string)
        self._compile()

    def _set_special_tokens(
        self, spec: TokenizerJson, special_tokens: Mapping[str, str | None], pad_token: str | None
    ) -> None:
        """:attr:`bos_id`, :attr:`eos_id`, :attr:`unk_id`, :attr:`pad_id` (see the class) and
        :attr:`special_ids` (the added tokens marked ``special``, and the padding)."""
        unknown = sorted(set(special_tokens) - set(SPECIAL_ROLES))
        if unknown:
            raise ValueError(
                f"ByteLevelBPETokenizer: special_tokens has the roles {unknown}; the roles are "
                f"{SPECIAL_ROLES}"
            )
        why = (
            "special_tokens names as the {} token (from_pretrained: the folder's "
            "tokenizer_config.json or special_tokens_map.json)"
        )
        named = {}
        for role in SPECIAL_ROLES:
            token = special_tokens.get(role)
            named[role] = None if token is None else self._required(token, why.format(role))
        if pad_token is not None:
            named["pad"] = self._required(pad_token, "is the pad_token")
        pad = named["pad"] if named["pad"] is not None else named["eos"]
        special = {token.id for token in spec.added_tokens if token.special}
        self._special = {**named, "pad": 0 if pad is None else pad}
        self._special_ids = tuple(sorted(special | ({pad} if pad is not None else set())))

    def _bytes_of_tokens(self, symbols: tuple[str, ...]) -> list[bytes]:
        """Each id's bytes, as the ``ByteLevel`` decoder gives them for every token, added ones
        too: a token of byte symbols is their bytes, another one its UTF-8 (an ASCII special
        token such as ``<|im_start|>`` is both); nothing for an id no token has."""
        byte_of = {symbol: byte for byte, symbol in enumerate(symbols)}
        token_bytes = [b""] * self.vocab_size
        for token_id, token in enumerate(self._tokens):
            if token is None:
                continue
            if all(c in byte_of for c in token):
                token_bytes[token_id] = bytes(byte_of[c] for c in token)
            else:
                token_bytes[token_id] = token.encode("utf-8")
        return token_bytes

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **kwargs: Any) -> ByteLevelBPETokenizer:
        """The tokenizer of a folder holding ``tokenizer.json``, its special tokens named by
        ``tokenizer_config.json`` and ``special_tokens_map.json`` where present.

        Args:
            path: The folder (local or any ``tf.io.gfile`` path).
            **kwargs: The other arguments of :class:`ByteLevelBPETokenizer`.
        """
        folder = os.fspath(path)
        context = "ByteLevelBPETokenizer.from_pretrained"
        if not tf.io.gfile.isdir(folder):
            raise FileNotFoundError(f"{context}: {folder!r} is not a folder")
        tokenizer_file = os.path.join(folder, "tokenizer.json")
        if not present(tokenizer_file):
            raise FileNotFoundError(f"{context}: {folder!r} holds no tokenizer.json")
        if "special_tokens" not in kwargs:
            kwargs["special_tokens"] = read_tokenizer_config(folder, context).tokens
        tokenizer = cls(tokenizer_file, **kwargs)
        tokenizer.attach_chat_templates(folder)
        return tokenizer

    # --- Python-side facts -------------------------------------------------------------------

    tokenizer_file = setting("tokenizer_file")
    split_pattern = setting(
        "split_pattern",
        "The key of :data:`~texkit.data.tokenizers.split_patterns.SPLIT_PATTERNS` the file's "
        "pre-tokenizer names.",
    )
    normalizer = setting("normalizer", '``None`` or the Unicode normal form (``"NFC"``).')
    ignore_merges = setting("ignore_merges", "Whether a piece in the vocabulary is one token.")
    num_merges = setting("num_merges")
    max_chars_per_word = setting(
        "max_chars_per_word", "Pieces longer than this are cut before BPE (``None``: never)."
    )
    bos_id = special_id("bos", 'The ``"bos"`` of ``special_tokens`` (``None`` if none).')
    eos_id = special_id("eos", 'The ``"eos"`` of ``special_tokens`` (``None`` if none).')
    unk_id = special_id("unk", 'The ``"unk"`` of ``special_tokens`` (``None`` if none).')

    # --- graph ops ---------------------------------------------------------------------------

    def detokenize(self, ids: Any, skip_special_tokens: bool = False) -> tf.Tensor:
        """Ids back to text: the bytes of each token, joined, as the ``ByteLevel`` decoder gives
        them.

        Ids cut short or drawn at random can give bytes that are not UTF-8: each maximal
        invalid sequence (the longest start of a character that cannot go on) becomes one
        U+FFFD, as the ``tokenizers`` library's ``decode`` (Rust's lossy UTF-8 decoding).

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop the ids of :attr:`special_ids` (the added tokens marked
                ``special`` and the padding), as the ``tokenizers`` library's ``decode``.

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        ids, single = self._id_rows(ids, skip_special_tokens)
        text = utf8_or_replacement(tf.strings.reduce_join(tf.gather(self._token_bytes, ids), -1))
        return text[0] if single else text

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (a ``tf.function``)."""
        texts = tf.strings.unicode_transcode(
            texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        return around_added(texts, self._added[0], self._normalized_ids)

    def _normalized_ids(self, texts: tf.Tensor, first: tf.Tensor) -> tf.RaggedTensor:
        """``[n]`` texts without the added tokens that are not ``normalized``: normalized, then
        the ``normalized`` added tokens cut out, then the rest merged (``first``, which part
        of a text each is, changes nothing here)."""
        if self.normalizer is not None:
            texts = tf_text.normalize_utf8(texts, self.normalizer)
        return around_added(texts, self._added[1], self._text_ids)

    def _text_ids(self, texts: tf.Tensor, first: tf.Tensor) -> tf.RaggedTensor:
        """``[n]`` normalized texts without added tokens to ``[n, (tokens)]`` ids (``first``
        is not used: byte-level BPE adds no prefix)."""
        pieces = split_pieces(texts, SPLIT_PATTERNS[self.split_pattern])
        if self.max_chars_per_word is not None:
            pieces = _cut_long_pieces(pieces, self.max_chars_per_word)
        return bpe_pieces(pieces, self._byte_ids, self._merges, self.vocab_size, self._whole_words)


def _check_max_chars(max_chars_per_word: int | None) -> None:
    if max_chars_per_word is not None and (
        isinstance(max_chars_per_word, bool)
        or not isinstance(max_chars_per_word, int)
        or not 1 <= max_chars_per_word <= _MAX_CUT
    ):
        raise ValueError(
            f"ByteLevelBPETokenizer: max_chars_per_word must be None or an int from 1 to "
            f"{_MAX_CUT}, got {max_chars_per_word!r}"
        )


def _whole_words(vocab: dict[str, int], symbols: tuple[str, ...]) -> tf.lookup.StaticHashTable:
    """``ignore_merges``: a table from the bytes of each token of byte symbols to its id."""
    byte_of = {symbol: byte for byte, symbol in enumerate(symbols)}
    keys, values = [], []
    for token, token_id in vocab.items():
        if all(c in byte_of for c in token):
            keys.append(bytes(byte_of[c] for c in token))
            values.append(token_id)
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.string), tf.constant(values, tf.int64)
        ),
        default_value=-1,
    )
