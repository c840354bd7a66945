"""Pre-tokenization patterns as data: the regular expressions that split a text into the pieces
byte-level BPE merges apart, and the split itself in TensorFlow ops.

:data:`SPLIT_PATTERNS` names each pattern (:class:`SplitPattern`); a tokenizer chooses one by
name (:class:`~texkit.data.tokenizers.GPT2BPETokenizer`'s ``split_pattern``), or by the exact
regular expression a ``tokenizer.json`` writes (:func:`pattern_named`, for
:class:`~texkit.data.tokenizers.ByteLevelBPETokenizer`). ``"gpt2"`` is GPT-2's (and RoBERTa's),
in Python's ``regex`` module:
``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``;
``"llama3"`` is Llama 3's (case-insensitive contractions, a word led by one character that is
no line break, letter or digit, digits by three, ``\\s*[\\r\\n]+`` before the lookahead),
``"qwen2"`` Qwen2's and Qwen3's (Llama 3's with digits one by one), ``"tekken"`` Mistral's Tekken
(Mistral NeMo and later: words cut where lowercase turns to uppercase, no contractions).

How, in TensorFlow:

* TensorFlow's regular expressions are RE2's, which have no lookahead, so ``\\s+(?!\\S)`` (a run
  of whitespace, less its last character when a non-space follows) takes a pass of its own. A
  first ``tf.strings.regex_replace`` puts a ``0xFF`` byte (never part of UTF-8, and matched by
  no pattern) before the last whitespace character of every run of two or more that a
  non-space follows (:attr:`SplitPattern.cut`); a second one puts the byte after every match of
  the pattern without the lookahead (:attr:`SplitPattern.pieces`); ``tf.strings.split`` cuts at
  the bytes. Between two cuts of the first pass a whitespace run always ends the part (followed
  in the text by whitespace, or at the end), where ``\\s+`` takes it whole as ``\\s+(?!\\S)``
  would, and the whitespace character that begins a part is the one the reference leaves to the
  next piece (`` ?\\p{L}+`` and the like when it is a space, ``\\s+`` alone otherwise); no piece
  of the reference crosses such a cut, so the pieces are the reference's.
  (``tensorflow_text.regex_split`` would do the second pass, but it stops at the first NUL
  character of a text.)
* In Llama 3's, Qwen2's and Tekken's patterns ``\\s*[\\r\\n]+`` comes before the lookahead: a
  whitespace run that ends in ``\\r`` or ``\\n`` before a non-space is one piece, which that
  alternative takes whole. Their cut leaves such runs alone (:attr:`SplitPattern.cut` puts no
  mark before a last character that is ``\\r`` or ``\\n``; GPT-2's cut would part ``" \\n\\n"``
  before a letter into ``" \\n"`` and ``"\\n"``). With it the ids equal the ``tokenizers``
  library's on every text of ``tests/data/test_byte_level_bpe.py`` (10,900 a pattern).
* ``\\s`` is spelled out as the ``regex`` module's (Unicode White_Space: 25 characters; RE2's
  ``\\s`` is 5 ASCII ones). ``\\p{L}`` and ``\\p{N}`` are RE2's tables (Unicode 15.0 in
  TensorFlow 2.21) plus the letters and digits that Unicode 15.1, 16.0 and 17.0 added
  (``_RECENT_LETTERS``, ``_RECENT_NUMBERS``), so that every code point is classed as the
  ``regex`` module of 2026 (Unicode 17.0) classes it.
* A piece longer than a tokenizer's ``max_chars_per_word`` is cut into pieces of that many
  characters (:func:`_cut_long_pieces`).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

__all__ = ["SPLIT_PATTERNS", "SplitPattern", "pattern_named", "split_pieces"]


@dataclasses.dataclass(frozen=True)
class SplitPattern:
    """A pre-tokenization pattern, as two RE2 patterns (see the module).

    Attributes:
        reference: The pattern as its reference writes it (Python's ``regex`` module), for
            the documentation and errors.
        pieces: The pattern without its lookahead alternative: each match is a piece.
        cut: Where a piece ends that the lookahead decides: a match of two groups is cut
            between them, before the pieces are matched.
    """

    reference: str
    pieces: str
    cut: str


# The regex module's \s (Unicode White_Space), as RE2 class items.
_WHITESPACE_BUT_LINE_BREAKS = (
    r"\t\x0B\x0C \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
)
_WHITESPACE = r"\n\r" + _WHITESPACE_BUT_LINE_BREAKS
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

# An optional character before a word in Llama 3's and later patterns: [^\r\n\p{L}\p{N}].
_WORD_LEAD = rf"[^\r\n\p{{L}}\p{{N}}{_RECENT_LETTERS}{_RECENT_NUMBERS}]"
_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
# Tekken's cased classes; a letter Unicode assigned after 15.0 counts as \p{Lo} (in both).
_UPPER_OR_CASELESS = rf"[\p{{Lu}}\p{{Lt}}\p{{Lm}}\p{{Lo}}\p{{M}}{_RECENT_LETTERS}]"
_LOWER_OR_CASELESS = rf"[\p{{Ll}}\p{{Lm}}\p{{Lo}}\p{{M}}{_RECENT_LETTERS}]"
# The cut of the patterns where \s*[\r\n]+ comes before \s+(?!\S): a run whose last
# whitespace character is \r or \n ends in a line break, which that alternative takes whole.
_CUT_BEFORE_LINE_BREAKS = rf"({_SPACE})([{_WHITESPACE_BUT_LINE_BREAKS}][^{_WHITESPACE}])"
_LINE_BREAKS = rf"{_SPACE}*[\r\n]+"

SPLIT_PATTERNS = {
    "gpt2": SplitPattern(
        reference=(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"),
        # Less the lookahead alternative \s+(?!\S), which the cut stands for.
        pieces=rf"'s|'t|'re|'ve|'m|'ll|'d| ?{_LETTER}+| ?{_NUMBER}+| ?{_OTHER}+|{_SPACE}+",
        # The last whitespace character of a run of two or more before a non-space.
        cut=rf"({_SPACE})({_SPACE}[^{_WHITESPACE}])",
    ),
    "llama3": SplitPattern(
        reference=(
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
            r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
        ),
        pieces=(
            rf"{_CONTRACTIONS}|{_WORD_LEAD}?{_LETTER}+|{_NUMBER}{{1,3}}| ?{_OTHER}+[\r\n]*"
            rf"|{_LINE_BREAKS}|{_SPACE}+"
        ),
        cut=_CUT_BEFORE_LINE_BREAKS,
    ),
    "qwen2": SplitPattern(
        reference=(
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
            r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
        ),
        pieces=(
            rf"{_CONTRACTIONS}|{_WORD_LEAD}?{_LETTER}+|{_NUMBER}| ?{_OTHER}+[\r\n]*"
            rf"|{_LINE_BREAKS}|{_SPACE}+"
        ),
        cut=_CUT_BEFORE_LINE_BREAKS,
    ),
    "tekken": SplitPattern(
        reference=(
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
            r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
        ),
        # The second alternative comes into play only where the first finds no lowercase or
        # caseless letter or mark after the lead: there it takes the run of upper- and
        # titlecase letters, which [\p{Lu}\p{Lt}]+ says alone (the same pieces; RE2 finds them
        # three times faster on text of many scripts).
        pieces=(
            rf"{_WORD_LEAD}?{_UPPER_OR_CASELESS}*{_LOWER_OR_CASELESS}+"
            rf"|{_WORD_LEAD}?[\p{{Lu}}\p{{Lt}}]+"
            rf"|{_NUMBER}| ?{_OTHER}+[\r\n/]*|{_LINE_BREAKS}|{_SPACE}+"
        ),
        cut=_CUT_BEFORE_LINE_BREAKS,
    ),
}


def pattern_named(reference: str) -> str | None:
    """The key of :data:`SPLIT_PATTERNS` whose reference pattern is ``reference`` (as a
    ``tokenizer.json`` writes it), or ``None``."""
    for name, pattern in SPLIT_PATTERNS.items():
        if pattern.reference == reference:
            return name
    return None


# Marks the cuts: not UTF-8, so in no text and matched by no pattern.
_MARK = b"\xff"


def split_pieces(texts: tf.Tensor, pattern: SplitPattern) -> tf.RaggedTensor:
    """``[batch]`` strings to ``[batch, (pieces)]``: the pre-tokenization of ``pattern`` (see
    the module)."""
    texts = tf.strings.unicode_transcode(
        texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    # A 0xFF byte (not UTF-8, so in no text and matched by no pattern) before each cut and after
    # each piece; RE2 matches no piece across one.
    marked = tf.strings.regex_replace(texts, pattern.cut, rb"\1" + _MARK + rb"\2")
    marked = tf.strings.regex_replace(marked, pattern.pieces, rb"\0" + _MARK)
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
