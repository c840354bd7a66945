"""ALBERT's text around SentencePiece, in TensorFlow ops, as Hugging Face's slow
``AlbertTokenizer`` (transformers 4: Python, on the ``sentencepiece`` library) with its defaults
``do_lower_case=True``, ``remove_space=True``, ``keep_accents=False``, and with the other values
of the three (:data:`ALBERT_OPTIONS`).

Before SentencePiece it (:func:`albert_preprocess`)

1. lowercases every character on its own (``PreTrainedTokenizer.tokenize``, ``str.lower``
   one character at a time), when ``do_lower_case``;
2. cuts the whitespace at both ends and makes every run of it one space
   (``" ".join(text.strip().split())``), when ``remove_space``;
3. turns two backticks, and two apostrophes, into ``"``;
4. NFKD-normalizes and deletes the characters of nonzero canonical combining class
   (``unicodedata.combining``), unless ``keep_accents``;
5. lowercases the text again, whole (``str.lower``: a capital sigma at the end of a word is
   ``ς``; after step 1 only one that step 4 made can be), when ``do_lower_case``;

and after SentencePiece it splits a piece that ends with a digit and a comma (``▁1999,``) into
the pieces of the digits, encoded again without the ``▁`` (kept only if the piece had it), and
``,`` (the rule of Google's ALBERT for ``9,9``; :func:`digit_comma_expansion`), then maps
pieces to ids with ``PieceToId`` (a piece not in the vocabulary is ``<unk>``).

How, in TensorFlow (ALBERT's steps):

* Whitespace is Python's ``str.isspace`` (29 characters; RE2's ``\\s`` is 5), as a character
  class of ``tf.strings.regex_replace``.
* ``str.lower`` is ``tf.strings.lower(..., encoding="utf-8")`` (ICU's full lowercase mapping,
  which gives ``İ`` two characters as Python does) with three repairs: a text is lowercased
  between its NUL characters (the op stops at the first one); step 1 turns every ``Σ`` into
  ``σ`` first (ICU, as ``str.lower`` of the whole text, makes a final one ``ς``); and the 40
  capital letters whose lowercase Unicode 14.0 added (Vithkuqi, Glagolitic, Latin), which ICU in
  TensorFlow 2.21 does not know, are mapped by code point in the batches that hold one.
* NFKD is ``tensorflow_text.normalize_utf8``; the combining characters are a character class
  (``_COMBINING``: every code point whose canonical combining class is not 0 in Python 3.11's
  ``unicodedata``, Unicode 14.0; not the category Mn, which holds many of class 0).
* The digit-and-comma rule depends on the piece only: the model's pieces that end with a digit
  (``str.isdigit``) and a comma are encoded again once, when the tokenizer is made, and the ids
  of a batch are replaced through a table (``tf.gather`` of a ragged row per id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf
import tensorflow_text as tf_text

__all__ = ["ALBERT_OPTIONS", "albert_preprocess", "digit_comma_expansion"]

# ALBERT's preprocessing options and the slow AlbertTokenizer's defaults.
ALBERT_OPTIONS = {"do_lower_case": True, "keep_accents": False, "remove_space": True}
_SPACE_SYMBOL = "\u2581"

# Python's str.isspace, what str.split() and str.strip() cut at.
_WHITESPACE = (
    r"\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
    r"\x{205F}\x{3000}"
)
# Every code point of nonzero canonical combining class in Python 3.11 (Unicode 14.0):
# unicodedata.combining(c) != 0.
_COMBINING = (
    r"\x{300}-\x{34E}\x{350}-\x{36F}\x{483}-\x{487}\x{591}-\x{5BD}\x{5BF}\x{5C1}-\x{5C2}"
    r"\x{5C4}-\x{5C5}\x{5C7}\x{610}-\x{61A}\x{64B}-\x{65F}\x{670}\x{6D6}-\x{6DC}\x{6DF}-\x{6E4}"
    r"\x{6E7}-\x{6E8}\x{6EA}-\x{6ED}\x{711}\x{730}-\x{74A}\x{7EB}-\x{7F3}\x{7FD}\x{816}-\x{819}"
    r"\x{81B}-\x{823}\x{825}-\x{827}\x{829}-\x{82D}\x{859}-\x{85B}\x{898}-\x{89F}\x{8CA}-\x{8E1}"
    r"\x{8E3}-\x{8FF}\x{93C}\x{94D}\x{951}-\x{954}\x{9BC}\x{9CD}\x{9FE}\x{A3C}\x{A4D}\x{ABC}"
    r"\x{ACD}\x{B3C}\x{B4D}\x{BCD}\x{C3C}\x{C4D}\x{C55}-\x{C56}\x{CBC}\x{CCD}\x{D3B}-\x{D3C}"
    r"\x{D4D}\x{DCA}\x{E38}-\x{E3A}\x{E48}-\x{E4B}\x{EB8}-\x{EBA}\x{EC8}-\x{ECB}\x{F18}-\x{F19}"
    r"\x{F35}\x{F37}\x{F39}\x{F71}-\x{F72}\x{F74}\x{F7A}-\x{F7D}\x{F80}\x{F82}-\x{F84}"
    r"\x{F86}-\x{F87}\x{FC6}\x{1037}\x{1039}-\x{103A}\x{108D}\x{135D}-\x{135F}\x{1714}-\x{1715}"
    r"\x{1734}\x{17D2}\x{17DD}\x{18A9}\x{1939}-\x{193B}\x{1A17}-\x{1A18}\x{1A60}"
    r"\x{1A75}-\x{1A7C}\x{1A7F}\x{1AB0}-\x{1ABD}\x{1ABF}-\x{1ACE}\x{1B34}\x{1B44}"
    r"\x{1B6B}-\x{1B73}\x{1BAA}-\x{1BAB}\x{1BE6}\x{1BF2}-\x{1BF3}\x{1C37}\x{1CD0}-\x{1CD2}"
    r"\x{1CD4}-\x{1CE0}\x{1CE2}-\x{1CE8}\x{1CED}\x{1CF4}\x{1CF8}-\x{1CF9}\x{1DC0}-\x{1DFF}"
    r"\x{20D0}-\x{20DC}\x{20E1}\x{20E5}-\x{20F0}\x{2CEF}-\x{2CF1}\x{2D7F}\x{2DE0}-\x{2DFF}"
    r"\x{302A}-\x{302F}\x{3099}-\x{309A}\x{A66F}\x{A674}-\x{A67D}\x{A69E}-\x{A69F}"
    r"\x{A6F0}-\x{A6F1}\x{A806}\x{A82C}\x{A8C4}\x{A8E0}-\x{A8F1}\x{A92B}-\x{A92D}\x{A953}"
    r"\x{A9B3}\x{A9C0}\x{AAB0}\x{AAB2}-\x{AAB4}\x{AAB7}-\x{AAB8}\x{AABE}-\x{AABF}\x{AAC1}"
    r"\x{AAF6}\x{ABED}\x{FB1E}\x{FE20}-\x{FE2F}\x{101FD}\x{102E0}\x{10376}-\x{1037A}\x{10A0D}"
    r"\x{10A0F}\x{10A38}-\x{10A3A}\x{10A3F}\x{10AE5}-\x{10AE6}\x{10D24}-\x{10D27}"
    r"\x{10EAB}-\x{10EAC}\x{10F46}-\x{10F50}\x{10F82}-\x{10F85}\x{11046}\x{11070}\x{1107F}"
    r"\x{110B9}-\x{110BA}\x{11100}-\x{11102}\x{11133}-\x{11134}\x{11173}\x{111C0}\x{111CA}"
    r"\x{11235}-\x{11236}\x{112E9}-\x{112EA}\x{1133B}-\x{1133C}\x{1134D}\x{11366}-\x{1136C}"
    r"\x{11370}-\x{11374}\x{11442}\x{11446}\x{1145E}\x{114C2}-\x{114C3}\x{115BF}-\x{115C0}"
    r"\x{1163F}\x{116B6}-\x{116B7}\x{1172B}\x{11839}-\x{1183A}\x{1193D}-\x{1193E}\x{11943}"
    r"\x{119E0}\x{11A34}\x{11A47}\x{11A99}\x{11C3F}\x{11D42}\x{11D44}-\x{11D45}\x{11D97}"
    r"\x{16AF0}-\x{16AF4}\x{16B30}-\x{16B36}\x{16FF0}-\x{16FF1}\x{1BC9E}\x{1D165}-\x{1D169}"
    r"\x{1D16D}-\x{1D172}\x{1D17B}-\x{1D182}\x{1D185}-\x{1D18B}\x{1D1AA}-\x{1D1AD}"
    r"\x{1D242}-\x{1D244}\x{1E000}-\x{1E006}\x{1E008}-\x{1E018}\x{1E01B}-\x{1E021}"
    r"\x{1E023}-\x{1E024}\x{1E026}-\x{1E02A}\x{1E130}-\x{1E136}\x{1E2AE}\x{1E2EC}-\x{1E2EF}"
    r"\x{1E8D0}-\x{1E8D6}\x{1E944}-\x{1E94A}"
)
# Capital letters whose lowercase Unicode 14.0 added and tf.strings.lower (ICU) does not know:
# (first, last, lowercase - capital).
_RECENT_CAPITALS = (
    (0x2C2F, 0x2C2F, 0x30),
    (0xA7C0, 0xA7C0, 1),
    (0xA7D0, 0xA7D0, 1),
    (0xA7D6, 0xA7D6, 1),
    (0xA7D8, 0xA7D8, 1),
    (0x10570, 0x1057A, 0x27),
    (0x1057C, 0x1058A, 0x27),
    (0x1058C, 0x10592, 0x27),
    (0x10594, 0x10595, 0x27),
)
_RECENT_CAPITALS_CLASS = "".join(
    rf"\x{{{first:X}}}-\x{{{last:X}}}" for first, last, _ in _RECENT_CAPITALS
)


def albert_preprocess(texts: tf.Tensor, options: Mapping[str, Any]) -> tf.Tensor:
    """The slow ``AlbertTokenizer``'s text before SentencePiece (steps 1 to 5 of the module's
    list), with the ``options`` of :data:`ALBERT_OPTIONS`."""
    if options["do_lower_case"]:
        # PreTrainedTokenizer.tokenize: str.lower one character at a time (no final sigma).
        texts = _lower(tf.strings.regex_replace(texts, "\u03a3", "\u03c3"))
    if options["remove_space"]:
        texts = tf.strings.regex_replace(texts, f"[{_WHITESPACE}]+", " ")
        texts = tf.strings.regex_replace(texts, "^ | $", "")
    texts = tf.strings.regex_replace(texts, "``|''", '"')
    if not options["keep_accents"]:
        texts = tf_text.normalize_utf8(texts, "NFKD")
        texts = tf.strings.regex_replace(texts, f"[{_COMBINING}]+", "")
    if options["do_lower_case"]:
        texts = _lower(texts)  # str.lower of the whole text
    return texts


def digit_comma_expansion(
    model: bytes, pieces: tuple[str, ...], ids: dict[str, int], unk_id: int
) -> tf.RaggedTensor | None:
    """For each id, the ids the slow ``AlbertTokenizer`` puts in its place: its own, but for
    the pieces that end with a digit and a comma (``None`` when the model has none).

    Args:
        model: The SentencePiece model's bytes.
        pieces: Its pieces, by id.
        ids: Each piece's id.
        unk_id: The id of ``<unk>``.
    """
    flagged = [
        i
        for i, piece in enumerate(pieces)
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()
    ]
    if not flagged:
        return None
    strings = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
    digits = [pieces[i][:-1].replace(_SPACE_SYMBOL, "") for i in flagged]
    encoded = strings.tokenize(tf.constant(digits)).to_list()
    rows = [[i] for i in range(len(pieces))]
    for token_id, parts in zip(flagged, encoded, strict=True):
        parts = [part.decode("utf-8") for part in parts]
        if not pieces[token_id].startswith(_SPACE_SYMBOL) and parts[0][0] == (_SPACE_SYMBOL):
            parts = parts[1:] if len(parts[0]) == 1 else [parts[0][1:], *parts[1:]]
        parts.append(",")
        rows[token_id] = [ids.get(part, unk_id) for part in parts]
    return tf.ragged.constant(rows, dtype=tf.int32, row_splits_dtype=tf.int64)


def _lower(texts: tf.Tensor) -> tf.Tensor:
    """Python's ``str.lower`` of ``[batch]`` UTF-8 strings (Unicode 14.0; see the module)."""
    # tf.strings.lower stops at a NUL: lowercase the parts between them.
    parts = tf.strings.split(texts, "\x00")
    lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
    lowered = tf.strings.join([lowered, tf.constant("\x00")])
    joined = tf.strings.reduce_join(parts.with_flat_values(lowered), axis=-1)
    length = tf.strings.length(joined)
    texts = tf.strings.substr(joined, tf.zeros_like(length), length - 1)
    recent = tf.strings.regex_full_match(texts, f"(?s).*[{_RECENT_CAPITALS_CLASS}].*")
    return tf.cond(tf.reduce_any(recent), lambda: _lower_recent_capitals(texts), lambda: texts)


def _lower_recent_capitals(texts: tf.Tensor) -> tf.Tensor:
    """``texts`` with the capitals of ``_RECENT_CAPITALS`` lowercased, by code point."""
    code_points = tf.strings.unicode_decode(texts, "UTF-8")
    values = code_points.flat_values
    for first, last, offset in _RECENT_CAPITALS:
        values = tf.where((values >= first) & (values <= last), values + offset, values)
    return tf.strings.unicode_encode(code_points.with_flat_values(values), "UTF-8")
