"""GPT-2's and RoBERTa's byte-level BPE tokenizer in the TensorFlow graph, with the reference's ids.

:class:`GPT2BPETokenizer` turns raw strings into the ids of a byte-level BPE vocabulary (GPT-2's,
RoBERTa's, or one trained with Hugging Face's ``ByteLevelBPETokenizer``) and packs them with
static shapes. Every step is a TensorFlow op (no ``tf.py_function``), so it runs eagerly, inside
``tf.function`` and ``tf.data`` pipelines, and is exported with a model in a SavedModel.

The reference is the algorithm of OpenAI's GPT-2 ``encoder.py`` (which Hugging Face's
``GPT2Tokenizer``, ``RobertaTokenizer`` and the Rust ``tokenizers`` follow):

1. Split the text with GPT-2's pattern (``split_pattern="gpt2"``, an entry of
   :data:`~texkit.data.tokenizers.split_patterns.SPLIT_PATTERNS`).
2. Map each piece's UTF-8 bytes to GPT-2's printable byte symbols (:func:`byte_symbols`).
3. BPE: merge the adjacent pair of symbols with the lowest rank in ``merges.txt`` (every
   occurrence of that pair in the piece, left to right) until no adjacent pair is a merge.
4. Look the symbols up in ``vocab.json``.

How, in TensorFlow: the split in :mod:`texkit.data.tokenizers.split_patterns` (the patterns as
data; RE2 has no lookahead), BPE in :mod:`texkit.data.tokenizers.bpe_merges` (on vocabulary ids,
the distinct pieces of a batch together in a ``tf.while_loop``), the files in
:mod:`texkit.data.tokenizers.bpe_files`.

Known differences from the reference, all deliberate or negligible:

* A piece of more than ``max_chars_per_word`` characters (100 by default) is cut into pieces of
  that many characters (the last one shorter), which are merged apart. A round of merges costs
  what the unfinished pieces hold, and a piece of ``n`` characters takes up to ``n`` rounds, so
  without the cut one long piece (a megabyte of letters without a space) takes minutes; with it
  the time is linear in the text (a megabyte of letters: about 2 s). The reference and Hugging
  Face's ``tokenizers`` have no such limit (Llama 3's tokenizer cuts its texts into runs of at
  most 25,000 characters for ``tiktoken``, for the same reason); ``max_chars_per_word=None``
  gives their ids on every text, at a cost that grows with the square of the longest piece.
  Pieces of a text rarely pass 100 characters: none of the tests' 10,000 texts has one longer
  than 83 bytes.
* Bytes that are not UTF-8 are read as U+FFFD (the reference takes only Python strings, i.e.
  valid text); ICU decides how many U+FFFD an invalid sequence gives.
* Special tokens written in a text (``"<|endoftext|>"``, ``"<s>"``) are ordinary text, as in
  OpenAI's ``encoder.py``; Hugging Face's tokenizers turn the added special tokens of a
  ``tokenizer.json`` into their ids, as :class:`~texkit.data.tokenizers.ByteLevelBPETokenizer`
  does from that file.
* Code points assigned after Unicode 17.0 are neither letters nor numbers here until RE2 knows
  them. Hugging Face's ``tokenizers`` 0.23 (Oniguruma's tables, Unicode 16.0) does not know the
  letters and digits of Unicode 17.0, and cuts pieces next to them otherwise than the reference
  (the ids rarely differ: that needs a merge across the cut).

"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.bpe_files import _find_files, _read_merges, _read_vocab
from texkit.data.tokenizers.bpe_merges import bpe_pieces, merge_table
from texkit.data.tokenizers.split_patterns import SPLIT_PATTERNS, _cut_long_pieces, split_pieces
from texkit.data.tokenizers.templated import (
    TemplateTokenizer,
    setting,
    special_id,
    utf8_or_replacement,
)

__all__ = [
    "ENDOFTEXT_TOKEN",
    "GPT2BPETokenizer",
    "MAX_CHARS_PER_WORD",
    "MAX_VOCAB_SIZE",
    "STYLES",
    "byte_symbols",
]

ENDOFTEXT_TOKEN = "<|endoftext|>"
STYLES = ("gpt2", "roberta")
# RoBERTa's special tokens (fairseq's dictionary: <s>=0, <pad>=1, </s>=2, <unk>=3).
_ROBERTA_TOKENS = {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>", "mask": "<mask>"}

# The default max_chars_per_word: a longer piece is cut into pieces of this many characters.
MAX_CHARS_PER_WORD = 100
# RE2's largest repetition count, which the cut is written with.
_MAX_CUT = 1000
# Ids of vocab.json must be below this: the tokenizer holds a table of every id up to the
# largest (GPT-2 and RoBERTa have about 50,000; the largest released vocabularies 262,144).
MAX_VOCAB_SIZE = 1 << 22


def byte_symbols() -> tuple[str, ...]:
    """GPT-2's printable symbol for each byte value (the index), its ``bytes_to_unicode``.

    The 188 bytes that are printable Latin-1 characters (``!`` to ``~``, ``¡`` to ``¬``, ``®`` to
    ``ÿ``) stand for themselves; the 68 others (controls, space, DEL, NBSP, soft hyphen) take the
    code points from U+0100 up, in byte order: the space is ``Ġ`` (U+0120), the newline ``Ċ``.

    >>> symbols = byte_symbols()
    >>> symbols[ord("a")], symbols[ord(" ")], symbols[ord("\\n")], symbols[0xA0]
    ('a', 'Ġ', 'Ċ', 'ł')
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = (byte for byte in range(256) if byte not in printable)
    code_points = dict(zip(printable, printable, strict=True))
    code_points.update((byte, 0x100 + n) for n, byte in enumerate(others))
    return tuple(chr(code_points[byte]) for byte in range(256))


class GPT2BPETokenizer(TemplateTokenizer):
    """GPT-2's / RoBERTa's byte-level BPE tokenizer and input packing, in the TensorFlow graph.

    Gives the ids of OpenAI's GPT-2 ``encoder.py`` algorithm (see
    :mod:`texkit.data.tokenizers.byte_bpe` for how, and for the few known differences) and packs
    them, padded to a static ``max_seq_length``, as one of two styles:

    * ``"gpt2"``: ``A`` and ``A B`` without special tokens (GPT-2 has none in its inputs);
      with ``add_special_tokens=True``, ``A <|endoftext|>`` and
      ``A <|endoftext|> B <|endoftext|>``. Padding: ``pad_token``, by default ``<|endoftext|>``
      (GPT-2 has no padding token; ``sequence_length`` says where the text ends).
    * ``"roberta"``: ``<s> A </s>`` and ``<s> A </s></s> B </s>``, padded with ``<pad>``, as
      Hugging Face's ``RobertaTokenizer``.

    ``segment_ids``: in the ``"gpt2"`` style, 0 for the first text, its special tokens and the
    padding, and 1 for the second text and its special tokens; in the ``"roberta"`` style all 0,
    as Hugging Face gives them (RoBERTa checkpoints have a single token type).

    Args:
        vocab_file: ``vocab.json`` (Hugging Face) or ``encoder.json`` (OpenAI): a JSON object
            from each token to its id (local or any ``tf.io.gfile`` path). It must hold the 256
            byte symbols and the style's special tokens, and no id twice.
        merges_file: ``merges.txt`` (Hugging Face) or ``vocab.bpe`` (OpenAI): one merge
            ``left right`` a line, by rank, after an optional ``#version`` line. Both parts and
            their concatenation must be in the vocabulary.
        style: ``"gpt2"`` or ``"roberta"``: the special tokens, as above.
        add_special_tokens: Whether :meth:`encode` and :meth:`pack` add the style's special
            tokens. ``None``: ``True`` for ``"roberta"``, ``False`` for ``"gpt2"``.
        max_seq_length: Length of :meth:`encode`'s outputs, special tokens included (512 by
            default; GPT-2 was trained on 1024, RoBERTa on 512).
        pad_token: The padding token; ``None``: ``<|endoftext|>`` for ``"gpt2"``, ``<pad>`` for
            ``"roberta"``.
        max_chars_per_word: A piece of GPT-2's pre-tokenization longer than this (in
            characters) is cut into pieces of this length before BPE, which keeps the time
            linear in the text (see the module); at most 1,000. ``None``: no cut, the
            reference's ids on every text, in time quadratic in the longest piece.
        split_pattern: The pre-tokenization pattern, by name: a key of
            :data:`~texkit.data.tokenizers.split_patterns.SPLIT_PATTERNS` (``"gpt2"``, GPT-2's
            and RoBERTa's).
        name: Name of the ``tf.Module``.

    Limits: ``vocab_file`` and ``merges_file`` must be regular files (a FIFO or a device is
    refused, never waited on) of at most :data:`texkit.files.MAX_JSON_BYTES` bytes (256 MiB;
    raise that constant for a larger file), the ids of ``vocab_file`` below
    :data:`MAX_VOCAB_SIZE` (4,194,304; the tokenizer holds a table of every id up to the
    largest). Errors name the file (and the line of ``merges_file``) and quote at most 60
    characters of a token or line.

    Example:
        With the small vocabulary of the tests (trained on the Bible corpus of the examples);
        GPT-2's or RoBERTa's own files work the same, e.g. ``from_pretrained("gpt2")`` for a
        folder ``gpt2`` holding ``vocab.json`` and ``merges.txt``, or OpenAI's
        ``encoder.json`` and ``vocab.bpe``:

        >>> tokenizer = tx.data.GPT2BPETokenizer.from_pretrained(
        ...     "tests/fixtures/bpe", style="roberta", max_seq_length=16
        ... )
        >>> ids = tokenizer.tokenize(["In the beginning God created the heaven."])
        >>> [tokenizer.id_to_token(i) for i in ids[0].numpy()]
        ['In', 'Ġthe', 'Ġbeg', 'in', 'n', 'ing', 'ĠGod', 'Ġc', 'reat', 'ed', 'Ġthe', 'Ġheaven', '.']
        >>> tokenizer.detokenize(ids).numpy()
        array([b'In the beginning God created the heaven.'], dtype=object)
        >>> features = tokenizer.encode(["Let there be light"], ["and there was light."])
        >>> features["input_ids"].numpy()  # <s> A </s> </s> B </s> <pad> <pad>
        array([[   0,   48,  480,  476,  336, 1722,    2,    2,  490,  476,  459,
                1722,   18,    2,    1,    1]], dtype=int32)
        >>> features["segment_ids"].numpy()
        array([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], dtype=int32)
        >>> features["sequence_length"].numpy()
        array([14], dtype=int32)
        >>> texts = tf.data.Dataset.from_tensor_slices(["Hello, world!", "¿Qué tal?"])
        >>> next(iter(texts.batch(2).map(tokenizer.encode)))["input_ids"].shape
        TensorShape([2, 16])
    """

    _repr_files = ("vocab_file", "merges_file")
    _repr_settings = ("style", "max_seq_length")

    def __init__(
        self,
        vocab_file: str | os.PathLike,
        merges_file: str | os.PathLike,
        style: str = "gpt2",
        add_special_tokens: bool | None = None,
        max_seq_length: int = 512,
        pad_token: str | None = None,
        max_chars_per_word: int | None = MAX_CHARS_PER_WORD,
        split_pattern: str = "gpt2",
        name: str = "gpt2_bpe_tokenizer",
    ):
        super().__init__(name=name)
        if add_special_tokens is None:
            add_special_tokens = style == "roberta"
        _check_arguments(style, add_special_tokens, max_chars_per_word, split_pattern)
        self._settings = {
            "vocab_file": os.fspath(vocab_file),
            "merges_file": os.fspath(merges_file),
            "style": style,
            "add_special_tokens": add_special_tokens,
            "max_chars_per_word": max_chars_per_word,
            "split_pattern": split_pattern,
        }
        vocab = _read_vocab(self.vocab_file, MAX_VOCAB_SIZE)
        merges = _read_merges(self.merges_file, vocab)
        self._settings["num_merges"] = len(merges)
        bound = max(vocab.values()) + 1
        tokens: list[str | None] = [None] * bound
        for token, token_id in vocab.items():
            tokens[token_id] = token
        self._set_vocabulary(tokens, vocab)
        symbols = byte_symbols()
        missing = [s for s in symbols if s not in vocab]
        if missing:
            raise ValueError(
                f"GPT2BPETokenizer: vocab_file {self.vocab_file!r} lacks {len(missing)} of the "
                f"256 byte symbols (e.g. {missing[0]!r}, byte "
                f"{symbols.index(missing[0]):#04x}); a byte-level BPE vocabulary holds them all"
            )
        self._set_special_tokens(style, add_special_tokens, pad_token)
        # [first prefix, first suffix, second prefix, second suffix] of encode.
        bos, eos = (self.bos_id,), (self.eos_id,)
        if not add_special_tokens:
            template: tuple[tuple[int, ...], ...] = ((), (), (), ())
        elif style == "roberta":
            template = (bos, eos, eos, eos)
        else:
            template = ((), eos, (), eos)
        # GPT-2 style: the second text is segment 1; RoBERTa has one token type: all 0, as
        # Hugging Face gives.
        self._set_template(template, int(style == "gpt2"), max_seq_length, f"style={style!r}")

        # Graph constants: the byte symbols' ids, the merges, each id's bytes.
        self._byte_ids = tf.constant([vocab[s] for s in symbols], tf.int32)
        self._merges = merge_table(vocab, merges, bound)
        self._token_bytes = tf.constant(self._bytes_of_tokens(symbols), tf.string)
        self._compile()

    def _set_special_tokens(self, style: str, add_special_tokens: bool, pad_token: str | None):
        """The ids of the style's special tokens (``_special``), which it needs, and
        :attr:`special_ids`."""
        ids = self._ids
        if style == "roberta":
            needs = "style='roberta' needs"
            self._special = {
                "bos": self._required(_ROBERTA_TOKENS["bos"], needs),
                "eos": self._required(_ROBERTA_TOKENS["eos"], needs),
            }
            specials = [ids[t] for t in _ROBERTA_TOKENS.values() if t in ids]
            default_pad = _ROBERTA_TOKENS["pad"]
        else:
            if add_special_tokens:
                self._required(ENDOFTEXT_TOKEN, "style='gpt2' adds with add_special_tokens=True")
            bos = eos = ids.get(ENDOFTEXT_TOKEN)
            self._special = {"bos": bos, "eos": eos}
            specials = [ids[ENDOFTEXT_TOKEN]] if ENDOFTEXT_TOKEN in ids else []
            default_pad = ENDOFTEXT_TOKEN
        if pad_token is None:
            pad = self._required(default_pad, f"pads style={style!r} (or give pad_token)")
        else:
            pad = self._required(pad_token, "is the pad_token")
        self._special["pad"] = pad
        self._special_ids = tuple(sorted({*specials, pad}))

    def _bytes_of_tokens(self, symbols: tuple[str, ...]) -> list[bytes]:
        """Each id's bytes (a special token's or a token not of byte symbols: its UTF-8 text;
        an id no token has: nothing)."""
        byte_of = {symbol: byte for byte, symbol in enumerate(symbols)}
        token_bytes = [b""] * self.vocab_size
        for token, token_id in self._ids.items():
            if token_id in self._special_ids or not all(c in byte_of for c in token):
                token_bytes[token_id] = token.encode("utf-8")
            else:
                token_bytes[token_id] = bytes(byte_of[c] for c in token)
        return token_bytes

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **kwargs: Any) -> GPT2BPETokenizer:
        """The tokenizer of a folder holding ``vocab.json`` + ``merges.txt`` (Hugging Face) or
        ``encoder.json`` + ``vocab.bpe`` (OpenAI's GPT-2 release); the first pair if both.

        Args:
            path: The folder (local or any ``tf.io.gfile`` path).
            **kwargs: The other arguments of :class:`GPT2BPETokenizer` (``style``, ...).
        """
        return cls(*_find_files(path), **kwargs)

    # --- Python-side facts -------------------------------------------------------------------

    vocab_file = setting("vocab_file")
    merges_file = setting("merges_file")
    style = setting("style")
    add_special_tokens = setting("add_special_tokens")
    split_pattern = setting(
        "split_pattern",
        """The name of the pre-tokenization pattern (a key of
        :data:`~texkit.data.tokenizers.split_patterns.SPLIT_PATTERNS`).""",
    )
    num_merges = setting("num_merges")
    max_chars_per_word = setting(
        "max_chars_per_word", "Pieces longer than this are cut before BPE (``None``: never)."
    )

    bos_id = special_id(
        "bos",
        "``<s>`` (RoBERTa) or ``<|endoftext|>`` (GPT-2; ``None`` if the vocabulary has none).",
    )
    eos_id = special_id(
        "eos",
        "``</s>`` (RoBERTa) or ``<|endoftext|>`` (GPT-2; ``None`` if the vocabulary has none).",
    )

    # --- graph ops ---------------------------------------------------------------------------

    def detokenize(self, ids: Any, skip_special_tokens: bool = True) -> tf.Tensor:
        """Ids back to text: the bytes of each token, joined, as Hugging Face's
        ``GPT2Tokenizer`` and ``RobertaTokenizer`` ``decode``.

        :meth:`tokenize` then ``detokenize`` gives back the text (its UTF-8 bytes) exactly.
        Ids cut short or drawn at random can give bytes that are not UTF-8: each maximal
        invalid sequence (the longest start of a character that cannot go on) becomes one
        U+FFFD, as Python's and Rust's lossy UTF-8 decoding, which the references use.

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop the ids of :attr:`special_ids` (the padding included);
                otherwise a special token gives its own text (``<|endoftext|>``).

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        ids, single = self._id_rows(ids, skip_special_tokens)
        text = utf8_or_replacement(tf.strings.reduce_join(tf.gather(self._token_bytes, ids), -1))
        return text[0] if single else text

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (a ``tf.function``)."""
        words = split_pieces(texts, SPLIT_PATTERNS[self.split_pattern])
        if self.max_chars_per_word is not None:
            words = _cut_long_pieces(words, self.max_chars_per_word)
        return bpe_pieces(words, self._byte_ids, self._merges, self.vocab_size)


def _check_arguments(
    style: str, add_special_tokens: bool, max_chars_per_word: int | None, split_pattern: str
) -> None:
    """Errors naming the arguments of :class:`GPT2BPETokenizer` that are not valid."""
    if style not in STYLES:
        raise ValueError(f"GPT2BPETokenizer: style must be one of {STYLES}, got {style!r}")
    if not isinstance(add_special_tokens, bool):
        raise TypeError(
            f"GPT2BPETokenizer: add_special_tokens must be a bool or None, got "
            f"{add_special_tokens!r}"
        )
    if max_chars_per_word is not None and (
        isinstance(max_chars_per_word, bool)
        or not isinstance(max_chars_per_word, int)
        or not 1 <= max_chars_per_word <= _MAX_CUT
    ):
        raise ValueError(
            f"GPT2BPETokenizer: max_chars_per_word must be None or an int from 1 to "
            f"{_MAX_CUT}, got {max_chars_per_word!r}"
        )
    if split_pattern not in SPLIT_PATTERNS:
        raise ValueError(
            f"GPT2BPETokenizer: split_pattern must be one of {tuple(SPLIT_PATTERNS)}, got "
            f"{split_pattern!r}"
        )
