"""GPT-2's and RoBERTa's byte-level BPE tokenizer in the TensorFlow graph, with the reference's ids.

:class:`GPT2BPETokenizer` turns raw strings into the ids of a byte-level BPE vocabulary (GPT-2's,
RoBERTa's, or one trained with Hugging Face's ``ByteLevelBPETokenizer``) and packs them with
static shapes. Every step is a TensorFlow op (no ``tf.py_function``), so it runs eagerly, inside
``tf.function`` and ``tf.data`` pipelines, and is exported with a model in a SavedModel.

The reference is the algorithm of OpenAI's GPT-2 ``encoder.py`` (which Hugging Face's
``GPT2Tokenizer``, ``RobertaTokenizer`` and the Rust ``tokenizers`` follow):

1. Split the text with GPT-2's pattern
   ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
   (Python's ``regex`` module).
2. Map each piece's UTF-8 bytes to GPT-2's printable byte symbols (:func:`byte_symbols`).
3. BPE: merge the adjacent pair of symbols with the lowest rank in ``merges.txt`` (every
   occurrence of that pair in the piece, left to right) until no adjacent pair is a merge.
4. Look the symbols up in ``vocab.json``.

How, in TensorFlow:

* TensorFlow's regular expressions are RE2's, which have no lookahead, so ``\\s+(?!\\S)`` (a run
  of whitespace, less its last character when a non-space follows) takes a pass of its own. A
  first ``tf.strings.regex_replace`` puts a ``0xFF`` byte (never part of UTF-8, and matched by
  no pattern) before the last whitespace character of every run of two or more that a
  non-space follows; a second one puts the byte after every match of the pattern without the
  lookahead; ``tf.strings.split`` cuts at the bytes. Between two cuts of the first pass a
  whitespace run always ends the part (followed in the text by whitespace, or at the end),
  where ``\\s+`` takes it whole as ``\\s+(?!\\S)`` would, and the whitespace character that
  begins a part is the one the reference leaves to the next piece (`` ?\\p{L}+`` and the like
  when it is a space, ``\\s+`` alone otherwise); no piece of the reference crosses such a cut,
  so the pieces are the reference's. (``tensorflow_text.regex_split`` would do the second pass,
  but it stops at the first NUL character of a text.)
* ``\\s`` is spelled out as the ``regex`` module's (Unicode White_Space: 25 characters; RE2's
  ``\\s`` is 5 ASCII ones). ``\\p{L}`` and ``\\p{N}`` are RE2's tables (Unicode 15.0 in
  TensorFlow 2.21) plus the letters and digits that Unicode 15.1, 16.0 and 17.0 added
  (``_RECENT_LETTERS``, ``_RECENT_NUMBERS``), so that every code point is classed as the
  ``regex`` module of 2026 (Unicode 17.0) classes it.
* BPE works on vocabulary ids, not strings: a piece's bytes become the ids of their symbols, and
  the merges are a ``tf.lookup.StaticHashTable`` from a pair of ids to the merge's rank and the
  merged token's id (so every part and result of a merge must be in the vocabulary, as the
  ``tokenizers`` library also requires). The distinct pieces of a batch (``tf.unique``: the
  batch's cache of seen words) are merged together in a ``tf.while_loop``: each round finds, in
  every piece, the pair of lowest rank (a segment min over the flat pairs), merges each of its
  occurrences (of two overlapping ones, as in ``aaa``, the left), and moves the pieces with no
  merge left out of the loop, so a round costs what the unfinished pieces hold.

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
  ``tokenizer.json`` into their ids.
* Code points assigned after Unicode 17.0 are neither letters nor numbers here until RE2 knows
  them. Hugging Face's ``tokenizers`` 0.23 (Oniguruma's tables, Unicode 16.0) does not know the
  letters and digits of Unicode 17.0, and cuts pieces next to them otherwise than the reference
  (the ids rarely differ: that needs a merge across the cut).

(About 720 lines, most of them documentation and the checks of the two files.)
"""

from __future__ import annotations

import json
import os
from typing import Any

import tensorflow as tf

from texkit import files
from texkit.data.tokenizers.templated import TemplateTokenizer
from texkit.data.tokenizers.vocab_file import _quoted, _shown
from texkit.errors import MAX_DIGITS

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

# The regex module's \s (Unicode White_Space), as RE2 class items.
_WHITESPACE = (
    r"\t\n\x0B\x0C\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}"
    r"\x{3000}"
)
# The letters (L*) and numbers (N*) of Unicode 15.1, 16.0 and 17.0 that RE2's \p{L} and \p{N}
# (Unicode 15.0) do not hold: every code point where the regex module 2026.11.15 (Unicode 17.0)
# and RE2 in TensorFlow 2.21 disagree on being a letter or a number (RE2 never says so where
# the regex module does not).
_RECENT_LETTERS = (
    r"\x{558}\x{58B}-\x{58C}\x{88F}\x{C5C}\x{CDC}\x{1C89}-\x{1C8A}\x{208F}\x{209D}-\x{209F}"
    r"\x{A7CB}-\x{A7CF}\x{A7D2}\x{A7D4}\x{A7DA}-\x{A7DD}\x{A7E2}\x{A7F1}\x{AB6C}-\x{AB6D}"
    r"\x{105C0}-\x{105F3}\x{107BB}-\x{107BF}\x{10940}-\x{10959}\x{10D4A}-\x{10D65}"
    r"\x{10D6F}-\x{10D85}\x{10EC2}-\x{10EC7}\x{10ED9}-\x{10EEE}\x{11380}-\x{11389}\x{1138B}"
    r"\x{1138E}\x{11390}-\x{113B5}\x{113B7}\x{113D1}\x{113D3}\x{11B0A}\x{11BC0}-\x{11BE0}"
    r"\x{11DB0}-\x{11DDB}\x{11DF1}\x{13460}-\x{143FA}\x{16100}-\x{1611D}\x{16D40}-\x{16D6C}"
    r"\x{16EA0}-\x{16EB8}\x{16EBB}-\x{16ED3}\x{16FF2}-\x{16FF3}\x{187F8}-\x{187FF}"
    r"\x{18CD6}-\x{18CDA}\x{18CFF}\x{18D09}-\x{18D20}\x{18D80}-\x{18DF2}\x{18E00}-\x{19191}"
    r"\x{191A0}-\x{191D2}\x{1B123}-\x{1B128}\x{1B168}\x{1D6A6}\x{1DF1F}-\x{1DF24}"
    r"\x{1DF2B}-\x{1DF81}\x{1DF90}-\x{1DF96}\x{1DFCD}-\x{1DFFF}\x{1E5D0}-\x{1E5ED}\x{1E5F0}"
    r"\x{1E6C0}-\x{1E6DE}\x{1E6E0}-\x{1E6E2}\x{1E6E4}-\x{1E6E5}\x{1E6E7}-\x{1E6ED}"
    r"\x{1E6F0}-\x{1E6F4}\x{1E6FE}-\x{1E6FF}\x{2B73A}-\x{2B73F}\x{2B81E}\x{2CEA2}-\x{2CEAD}"
    r"\x{2EBF0}-\x{2EE5D}\x{323B0}-\x{33479}\x{3D000}-\x{3FC3F}"
)
_RECENT_NUMBERS = (
    r"\x{10D40}-\x{10D49}\x{116D0}-\x{116E3}\x{11BF0}-\x{11BF9}\x{11DE0}-\x{11DE9}\x{1246F}"
    r"\x{12475}-\x{1247F}\x{12550}-\x{12686}\x{16130}-\x{16139}\x{16D70}-\x{16D79}"
    r"\x{16FF4}-\x{16FF6}\x{1CCF0}-\x{1CCF9}\x{1E5F1}-\x{1E5FA}"
)
_LETTER = rf"[\p{{L}}{_RECENT_LETTERS}]"
_NUMBER = rf"[\p{{N}}{_RECENT_NUMBERS}]"
_OTHER = rf"[^{_WHITESPACE}\p{{L}}\p{{N}}{_RECENT_LETTERS}{_RECENT_NUMBERS}]"
_SPACE = rf"[{_WHITESPACE}]"
# GPT-2's pattern less the lookahead alternative \s+(?!\S), which the cut below stands for.
_PIECE_PATTERN = rf"'s|'t|'re|'ve|'m|'ll|'d| ?{_LETTER}+| ?{_NUMBER}+| ?{_OTHER}+|{_SPACE}+"
# The last whitespace character of a run of two or more before a non-space; the cut goes before.
_CUT_PATTERN = rf"({_SPACE})({_SPACE}[^{_WHITESPACE}])"
_MARK = b"\xff"

_NO_MERGE = tf.int64.max

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


def _read(path: str, what: str) -> str:
    """The UTF-8 text of a file (any ``tf.io.gfile`` path), with errors naming it: a regular
    file (never a FIFO or a device) of at most :data:`texkit.files.MAX_JSON_BYTES` bytes."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"GPT2BPETokenizer: {what} {path!r} does not exist")
    if tf.io.gfile.isdir(path):
        raise IsADirectoryError(
            f"GPT2BPETokenizer: {what} {path!r} is a folder; give the file, or use "
            "GPT2BPETokenizer.from_pretrained(folder)"
        )
    data = files.read_bytes(
        path,
        files.MAX_JSON_BYTES,
        context=f"GPT2BPETokenizer {what}",
        what="tokenizer file (texkit.files.MAX_JSON_BYTES)",
    )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"GPT2BPETokenizer: {what} {path!r} is not UTF-8 ({e.reason} at byte {e.start:,})"
        ) from None


def _read_vocab(path: str) -> dict[str, int]:
    """A ``vocab.json`` / ``encoder.json``: a JSON object from each token to its id, the ids
    below :data:`MAX_VOCAB_SIZE`."""
    where = f"GPT2BPETokenizer: vocab_file {path!r}"

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"{where} repeats the token {_quoted(key)}")
            seen[key] = value
        return seen

    def bounded_int(text: str) -> int:
        if len(text.lstrip("-")) > MAX_DIGITS:
            raise ValueError(f"{where} holds an integer of {len(text.lstrip('-')):,} digits")
        return int(text)

    try:
        vocab = json.loads(
            _read(path, "vocab_file"), object_pairs_hook=no_repeats, parse_int=bounded_int
        )
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{where} is not JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except RecursionError:
        raise ValueError(
            f"{where} nests JSON values too deeply; it must hold a flat object from each token "
            "to its id"
        ) from None
    if not isinstance(vocab, dict):
        raise ValueError(
            f"GPT2BPETokenizer: vocab_file {path!r} must hold a JSON object from each token to "
            f'its id ({{"token": 0, ...}}), got a {type(vocab).__name__}'
        )
    if not vocab:
        raise ValueError(f"GPT2BPETokenizer: vocab_file {path!r} is an empty object")
    token_of: dict[int, str] = {}
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise ValueError(
                f"{where} gives the token {_quoted(token)} the id {_shown(token_id)}; ids must "
                "be ints >= 0"
            )
        if token_id >= MAX_VOCAB_SIZE:
            raise ValueError(
                f"{where} gives the token {_quoted(token)} the id {token_id:,}; ids must be below "
                f"{MAX_VOCAB_SIZE:,} (texkit.data.tokenizers.byte_bpe.MAX_VOCAB_SIZE, which a "
                "larger vocabulary may raise)"
            )
        if token_id in token_of:
            raise ValueError(
                f"{where} gives the id {token_id} to both {_quoted(token_of[token_id])} and "
                f"{_quoted(token)}"
            )
        token_of[token_id] = token
    return vocab


def _read_merges(path: str, vocab: dict[str, int]) -> list[tuple[str, str]]:
    """A ``merges.txt`` / ``vocab.bpe``: one merge ``left right`` a line, the first line first.

    Lines that start with ``#version`` are skipped, as the empty last line after the final
    newline. The two parts and their concatenation must be in ``vocab``.
    """
    lines = _read(path, "merges_file").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    merges: list[tuple[str, str]] = []
    first_line: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"GPT2BPETokenizer: merges_file {path!r} line {number} is {_quoted(line)}; every "
                "line must be two tokens separated by one space (or a first '#version' line)"
            )
        pair = (parts[0], parts[1])
        if pair in first_line:
            raise ValueError(
                f"GPT2BPETokenizer: merges_file {path!r} line {number} repeats the merge of "
                f"line {first_line[pair]}: {_quoted(line)}"
            )
        first_line[pair] = number
        for token in (*pair, pair[0] + pair[1]):
            if token not in vocab:
                raise ValueError(
                    f"GPT2BPETokenizer: merges_file {path!r} line {number} ({_quoted(line)}): the "
                    f"token {_quoted(token)} is not in the vocabulary"
                )
        merges.append(pair)
    return merges


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

    def __init__(
        self,
        vocab_file: str | os.PathLike,
        merges_file: str | os.PathLike,
        style: str = "gpt2",
        add_special_tokens: bool | None = None,
        max_seq_length: int = 512,
        pad_token: str | None = None,
        max_chars_per_word: int | None = MAX_CHARS_PER_WORD,
        name: str = "gpt2_bpe_tokenizer",
    ):
        super().__init__(name=name)
        if style not in STYLES:
            raise ValueError(f"GPT2BPETokenizer: style must be one of {STYLES}, got {style!r}")
        if add_special_tokens is None:
            add_special_tokens = style == "roberta"
        if not isinstance(add_special_tokens, bool):
            raise TypeError(
                f"GPT2BPETokenizer: add_special_tokens must be a bool or None, got "
                f"{add_special_tokens!r}"
            )
        self._vocab_file = os.fspath(vocab_file)
        self._merges_file = os.fspath(merges_file)
        self._style = style
        # GPT-2 style: the second text is segment 1; RoBERTa has one token type: all 0, as
        # Hugging Face gives.
        self._second_segment = 1 if style == "gpt2" else 0
        self._add_special_tokens = add_special_tokens
        vocab = _read_vocab(self._vocab_file)
        merges = _read_merges(self._merges_file, vocab)
        self._ids = vocab
        self._tokens = {token_id: token for token, token_id in vocab.items()}
        self._num_merges = len(merges)

        symbols = byte_symbols()
        missing = [s for s in symbols if s not in vocab]
        if missing:
            raise ValueError(
                f"GPT2BPETokenizer: vocab_file {self._vocab_file!r} lacks {len(missing)} of the "
                f"256 byte symbols (e.g. {missing[0]!r}, byte "
                f"{symbols.index(missing[0]):#04x}); a byte-level BPE vocabulary holds them all"
            )

        # The special tokens of the style.
        def required(token: str, why: str) -> int:
            if token not in vocab:
                raise ValueError(
                    f"GPT2BPETokenizer: vocab_file {self._vocab_file!r} has no {token!r} token, "
                    f"which {why}"
                )
            return vocab[token]

        if style == "roberta":
            self._bos_id = required(_ROBERTA_TOKENS["bos"], "style='roberta' needs")
            self._eos_id = required(_ROBERTA_TOKENS["eos"], "style='roberta' needs")
            specials = [vocab[t] for t in _ROBERTA_TOKENS.values() if t in vocab]
            default_pad = _ROBERTA_TOKENS["pad"]
        else:
            if add_special_tokens:
                required(ENDOFTEXT_TOKEN, "style='gpt2' adds with add_special_tokens=True")
            self._bos_id = self._eos_id = vocab.get(ENDOFTEXT_TOKEN)
            specials = [vocab[ENDOFTEXT_TOKEN]] if ENDOFTEXT_TOKEN in vocab else []
            default_pad = ENDOFTEXT_TOKEN
        if pad_token is None:
            pad_token = default_pad
            self._pad_id = required(pad_token, f"pads style={style!r} (or give pad_token)")
        else:
            self._pad_id = required(pad_token, "is the pad_token")
        self._special_ids = tuple(sorted({*specials, self._pad_id}))

        # [first prefix, first suffix, second prefix, second suffix] of encode.
        if not add_special_tokens:
            self._template: tuple[tuple[int, ...], ...] = ((), (), (), ())
        elif style == "roberta":
            self._template = ((self._bos_id,), (self._eos_id,), (self._eos_id,), (self._eos_id,))
        else:
            self._template = ((), (self._eos_id,), (), (self._eos_id,))
        least = max(1, len(self._template[0]) + len(self._template[1]))
        if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int):
            raise ValueError(
                f"GPT2BPETokenizer: max_seq_length must be an int, got {max_seq_length!r}"
            )
        if max_seq_length < least:
            raise ValueError(
                f"GPT2BPETokenizer: max_seq_length must be >= {least} (the special tokens of "
                f"style={style!r} and one token), got {max_seq_length}"
            )
        self._max_seq_length = max_seq_length
        if max_chars_per_word is not None and (
            isinstance(max_chars_per_word, bool)
            or not isinstance(max_chars_per_word, int)
            or not 1 <= max_chars_per_word <= _MAX_CUT
        ):
            raise ValueError(
                f"GPT2BPETokenizer: max_chars_per_word must be None or an int from 1 to "
                f"{_MAX_CUT}, got {max_chars_per_word!r}"
            )
        self._max_chars_per_word = max_chars_per_word

        # Graph constants: the byte symbols' ids, the merges, each id's bytes.
        self._bound = max(vocab.values()) + 1
        self._byte_ids = tf.constant([vocab[s] for s in symbols], tf.int32)
        bound = self._bound
        keys = [vocab[left] * bound + vocab[right] for left, right in merges]
        values = [rank * bound + vocab[left + right] for rank, (left, right) in enumerate(merges)]
        if not merges:  # a table cannot be empty; no pair of ids is -1
            keys, values = [-1], [_NO_MERGE]
        self._merges = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, tf.int64), tf.constant(values, tf.int64)
            ),
            default_value=_NO_MERGE,
        )
        byte_of = {symbol: byte for byte, symbol in enumerate(symbols)}
        token_bytes = [b""] * bound
        for token, token_id in vocab.items():
            if token_id in self._special_ids or not all(c in byte_of for c in token):
                token_bytes[token_id] = token.encode("utf-8")
            else:
                token_bytes[token_id] = bytes(byte_of[c] for c in token)
        self._token_bytes = tf.constant(token_bytes, tf.string)
        self._tokenize_fn = tf.function(
            self._tokenize_batch,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **kwargs: Any) -> GPT2BPETokenizer:
        """The tokenizer of a folder holding ``vocab.json`` + ``merges.txt`` (Hugging Face) or
        ``encoder.json`` + ``vocab.bpe`` (OpenAI's GPT-2 release); the first pair if both.

        Args:
            path: The folder (local or any ``tf.io.gfile`` path).
            **kwargs: The other arguments of :class:`GPT2BPETokenizer` (``style``, ...).
        """
        folder = os.fspath(path)
        if not tf.io.gfile.isdir(folder):
            raise FileNotFoundError(f"GPT2BPETokenizer.from_pretrained: {folder!r} is not a folder")
        for vocab_name, merges_name in (
            ("vocab.json", "merges.txt"),
            ("encoder.json", "vocab.bpe"),
        ):
            vocab_file = os.path.join(folder, vocab_name)
            merges_file = os.path.join(folder, merges_name)
            if tf.io.gfile.exists(vocab_file) and tf.io.gfile.exists(merges_file):
                return cls(vocab_file, merges_file, **kwargs)
        raise FileNotFoundError(
            f"GPT2BPETokenizer.from_pretrained: {folder!r} holds neither vocab.json + merges.txt "
            "(Hugging Face) nor encoder.json + vocab.bpe (OpenAI)"
        )

    # --- Python-side facts -------------------------------------------------------------------

    @property
    def vocab_file(self) -> str:
        return self._vocab_file

    @property
    def merges_file(self) -> str:
        return self._merges_file

    @property
    def style(self) -> str:
        return self._style

    @property
    def add_special_tokens(self) -> bool:
        return self._add_special_tokens

    @property
    def vocab_size(self) -> int:
        """One more than the largest id (the size of an embedding table for the ids)."""
        return self._bound

    @property
    def num_merges(self) -> int:
        return self._num_merges

    @property
    def max_seq_length(self) -> int:
        return self._max_seq_length

    @property
    def max_chars_per_word(self) -> int | None:
        """Pieces longer than this are cut before BPE (``None``: never)."""
        return self._max_chars_per_word

    @property
    def bos_id(self) -> int | None:
        """``<s>`` (RoBERTa) or ``<|endoftext|>`` (GPT-2; ``None`` if the vocabulary has none)."""
        return self._bos_id

    @property
    def eos_id(self) -> int | None:
        """``</s>`` (RoBERTa) or ``<|endoftext|>`` (GPT-2; ``None`` if the vocabulary has none)."""
        return self._eos_id

    @property
    def pad_id(self) -> int:
        return self._pad_id

    @property
    def special_ids(self) -> tuple[int, ...]:
        """The ids :meth:`detokenize` skips: the style's special tokens in the vocabulary
        (``<|endoftext|>``; ``<s> <pad> </s> <unk> <mask>``) and the padding."""
        return self._special_ids

    def token_to_id(self, token: str) -> int:
        """The id of a vocabulary entry (KeyError naming it if absent)."""
        try:
            return self._ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary {self._vocab_file!r}") from None

    def id_to_token(self, token_id: int) -> str:
        """The vocabulary entry of an id (IndexError naming it if no token has it)."""
        try:
            return self._tokens[int(token_id)]
        except KeyError:
            raise IndexError(f"no token of {self._vocab_file!r} has the id {token_id}") from None

    def __repr__(self) -> str:
        return (
            f"GPT2BPETokenizer({self._vocab_file!r}, {self._merges_file!r}, "
            f"style={self._style!r}, max_seq_length={self._max_seq_length}, "
            f"vocab_size={self.vocab_size})"
        )

    # --- graph ops ---------------------------------------------------------------------------

    def detokenize(self, ids: Any, skip_special_tokens: bool = True) -> tf.Tensor:
        """Ids back to text: the bytes of each token, joined.

        :meth:`tokenize` then ``detokenize`` gives back the text (its UTF-8 bytes) exactly.
        Ids cut short can end inside a character, and give bytes that are not UTF-8
        (``tf.strings.unicode_transcode(..., errors="replace")`` repairs them).

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop the ids of :attr:`special_ids` (the padding included);
                otherwise a special token gives its own text (``<|endoftext|>``).

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
            if ids.shape.rank not in (1, 2):
                raise ValueError(
                    "GPT2BPETokenizer.detokenize: ids must be [time] or [batch, time], got shape "
                    f"{ids.shape}"
                )
            single = ids.shape.rank == 1
            ids = tf.RaggedTensor.from_tensor(ids[tf.newaxis] if single else ids)
        else:
            single = False
        ids = tf.cast(ids, tf.int32)
        if skip_special_tokens and self._special_ids:
            special = tf.reduce_any(
                ids.flat_values[:, tf.newaxis] == tf.constant(self._special_ids, tf.int32), axis=1
            )
            ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(~special))
        text = tf.strings.reduce_join(tf.gather(self._token_bytes, ids), axis=-1)
        return text[0] if single else text

    # --- the work ----------------------------------------------------------------------------

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (a ``tf.function``)."""
        words = _pieces(texts)
        if self._max_chars_per_word is not None:
            words = _cut_long_pieces(words, self._max_chars_per_word)
        unique, index = tf.unique(words.flat_values)
        ids = tf.gather(self._bpe(unique), index)
        return words.with_flat_values(ids).merge_dims(1, 2)

    def _bpe(self, words: tf.Tensor) -> tf.RaggedTensor:
        """``[words]`` distinct pieces to ``[words, (tokens)]`` int32 ids: GPT-2's BPE."""
        lengths = tf.strings.length(words)
        data = tf.io.decode_raw(tf.strings.reduce_join(words), tf.uint8)
        symbols = tf.gather(self._byte_ids, tf.cast(data, tf.int32))
        word_of = tf.repeat(tf.range(tf.size(words)), lengths)
        bound = tf.constant(self._bound, tf.int64)
        done_symbols = tf.TensorArray(tf.int32, size=1, dynamic_size=True, infer_shape=False)
        done_words = tf.TensorArray(tf.int32, size=1, dynamic_size=True, infer_shape=False)
        empty = tf.zeros([0], tf.int32)
        done_symbols = done_symbols.write(0, empty)
        done_words = done_words.write(0, empty)

        def merge_round(step, symbols, word_of, done_symbols, done_words):
            # Pairs of adjacent symbols of one word, as their merge: rank * bound + merged id.
            same_word = word_of[1:] == word_of[:-1]
            pairs = tf.cast(symbols[:-1], tf.int64) * bound + tf.cast(symbols[1:], tf.int64)
            merges = tf.where(same_word, self._merges.lookup(pairs), _NO_MERGE)
            starts = tf.concat([[True], tf.logical_not(same_word)], 0)
            local = tf.cumsum(tf.cast(starts, tf.int32)) - 1  # each symbol's word, from 0
            best = tf.math.unsorted_segment_min(merges, local[:-1], local[-1] + 1)
            merging = best != _NO_MERGE  # [words]: the words with a merge left
            chosen = (merges == tf.gather(best, local[:-1])) & tf.gather(merging, local[:-1])
            # Of overlapping occurrences (x x x for the merge x+x), every other from the left.
            follows = tf.concat([[False], chosen[:-1]], 0)
            chosen = tf.cond(
                tf.reduce_any(chosen & follows),
                lambda: chosen & _even_in_run(chosen, follows),
                lambda: chosen,
            )
            merged = tf.cast(tf.gather(best, local[:-1]) % bound, tf.int32)
            symbols = tf.where(
                tf.concat([chosen, [False]], 0), tf.concat([merged, [0]], 0), symbols
            )
            unfinished = tf.gather(merging, local)
            finished = tf.logical_not(unfinished)
            done_symbols = done_symbols.write(step, tf.boolean_mask(symbols, finished))
            done_words = done_words.write(step, tf.boolean_mask(word_of, finished))
            kept = unfinished & tf.logical_not(tf.concat([[False], chosen], 0))
            return (
                step + 1,
                tf.boolean_mask(symbols, kept),
                tf.boolean_mask(word_of, kept),
                done_symbols,
                done_words,
            )

        _, _, _, done_symbols, done_words = tf.while_loop(
            lambda step, symbols, *_: tf.size(symbols) > 0,
            merge_round,
            (tf.constant(1), symbols, word_of, done_symbols, done_words),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                tf.TensorShape(None),
                tf.TensorShape(None),
            ),
        )
        symbols = tf.reshape(done_symbols.concat(), [-1])
        word_of = tf.reshape(done_words.concat(), [-1])
        order = tf.argsort(word_of, stable=True)
        return tf.RaggedTensor.from_value_rowids(
            tf.gather(symbols, order),
            tf.cast(tf.gather(word_of, order), tf.int64),
            nrows=tf.size(words, out_type=tf.int64),
        )


def _pieces(texts: tf.Tensor) -> tf.RaggedTensor:
    """``[batch]`` strings to ``[batch, (pieces)]``: GPT-2's pre-tokenization (see the module)."""
    texts = tf.strings.unicode_transcode(
        texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    # A 0xFF byte (not UTF-8, so in no text and matched by no pattern) before each cut and after
    # each piece; RE2 matches no piece across one.
    marked = tf.strings.regex_replace(texts, _CUT_PATTERN, rb"\1" + _MARK + rb"\2")
    marked = tf.strings.regex_replace(marked, _PIECE_PATTERN, rb"\0" + _MARK)
    pieces = tf.strings.split(marked, _MARK)
    return tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)


def _cut_long_pieces(pieces: tf.RaggedTensor, limit: int) -> tf.RaggedTensor:
    """``[batch, (pieces)]`` with every piece of more than ``limit`` characters cut into pieces
    of ``limit`` characters (the last one shorter), which BPE merges apart."""
    flat = pieces.flat_values

    def cut() -> tf.RaggedTensor:
        marked = tf.strings.regex_replace(flat, f"(?s).{{1,{limit}}}", rb"\0" + _MARK)
        parts = tf.strings.split(marked, _MARK)
        parts = tf.ragged.boolean_mask(parts, tf.strings.length(parts) > 0)
        return pieces.with_flat_values(parts).merge_dims(1, 2)

    # A piece of more than `limit` characters has more than `limit` bytes.
    return tf.cond(tf.reduce_any(tf.strings.length(flat) > limit), cut, lambda: pieces)


def _even_in_run(chosen: tf.Tensor, follows: tf.Tensor) -> tf.Tensor:
    """Whether each position is at an even offset in its run of consecutive ``chosen``."""
    starts = chosen & tf.logical_not(follows)
    position = tf.range(tf.size(chosen))
    run = tf.maximum(tf.cumsum(tf.cast(starts, tf.int32)) - 1, 0)
    offset = position - tf.gather(tf.boolean_mask(position, starts), run)
    return offset % 2 == 0
