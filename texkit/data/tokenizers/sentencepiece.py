"""ALBERT's and T5's SentencePiece tokenizers in the TensorFlow graph, with the reference's ids.

:class:`SentencePieceTokenizer` turns raw strings into the ids of a SentencePiece model (a
``spiece.model``) and packs them with static shapes, in one of two styles. Every step is a
TensorFlow op (no ``tf.py_function``): ``tensorflow_text.SentencepieceTokenizer`` runs the model
(the SentencePiece C++ library, with the model's own normalization), so the tokenizer runs
eagerly, inside ``tf.function`` and ``tf.data`` pipelines, and is exported with a model in a
SavedModel.

The references:

* ``"t5"``: the ``sentencepiece`` library's ``encode(text)``, nothing before it; Hugging Face's
  slow ``T5Tokenizer`` (transformers 4, default ``legacy``) gives the same ids.
* ``"albert"``: Hugging Face's slow ``AlbertTokenizer`` (transformers 4: Python, on the
  ``sentencepiece`` library) with its defaults ``do_lower_case=True``, ``remove_space=True``,
  ``keep_accents=False``, and with the other values of the three. Before SentencePiece it

  1. lowercases every character on its own (``PreTrainedTokenizer.tokenize``, ``str.lower``
     one character at a time), when ``do_lower_case``;
  2. cuts the whitespace at both ends and makes every run of it one space
     (``" ".join(text.strip().split())``), when ``remove_space``;
  3. turns two backticks, and two apostrophes, into ``"``;
  4. NFKD-normalizes and deletes the characters of nonzero canonical combining class
     (``unicodedata.combining``), unless ``keep_accents``;
  5. lowercases the text again, whole (``str.lower``: a capital sigma at the end of a word is
     ``ς``; after step 1 only one that step 4 made can be), when ``do_lower_case``;

  and after SentencePiece it splits a piece that ends with a digit and a comma (``▁1999,``)
  into the pieces of the digits, encoded again without the ``▁`` (kept only if the piece had
  it), and ``,`` (the rule of Google's ALBERT for ``9,9``), then maps pieces to ids with
  ``PieceToId`` (a piece not in the vocabulary is ``<unk>``).

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

Known differences from the references, all rare or deliberate:

* ``tensorflow_text`` 2.21 builds in its own SentencePiece library, which breaks ties between
  segmentations of exactly the same score otherwise than the ``sentencepiece`` 0.2.3 package:
  in a run of a letter that the vocabulary has single and doubled (``lll``: ``l`` + ``ll`` or
  ``ll`` + ``l``) the two give the same pieces in another order. 1 of the 10,257 texts of the
  tests, for T5 (none for ALBERT).
* The strings of special tokens in a text (``"[CLS]"``, ``"</s>"``) are ordinary text, as in
  the ``sentencepiece`` library and Google's ALBERT; Hugging Face's tokenizers turn them into
  their ids.
* The tables are Unicode 14.0 (Python 3.11's ``unicodedata``, the version of the reference);
  ``normalize_utf8`` is ICU's Unicode 16.0, which decomposes 118 characters that Unicode 15.0
  and 16.0 added and Python 3.11 leaves whole (a newer Python decomposes those its Unicode
  version has, and its reference differs from this one on them and on its other additions).
* Google's own ALBERT ``tokenization.py`` lowercases only the whole text (step 5, not step 1):
  a capital sigma at the end of a word is ``ς`` there, ``σ`` here and in Hugging Face's.
* Bytes that are not UTF-8 are read as U+FFFD (the reference takes only Python strings).
* A piece of unknown characters (``<unk>``) is left whole even when its text would end with a
  digit and a comma; the reference could split it only for a model without a ``,`` piece.
* Pairs are truncated by BERT's rule, not Hugging Face's ``longest_first`` (see
  :meth:`SentencePieceTokenizer.encode`).

Limits. The SentencePiece library takes time in the square of a run of unknown characters (a
million ``!`` that the model lacks: a minute); in a text of more than 4,096 bytes, every run of
more than a few (the longest normalization rule, 4 characters for NFKC) keeps its first few
before SentencePiece sees it, which gives the same ids (one ``<unk>``) in linear time: see
:mod:`texkit.data.tokenizers.unknown_runs`. The model file must be a regular file (a FIFO or a
device is refused, never waited on) of at most :data:`texkit.files.MAX_JSON_BYTES` bytes,
``tokenizer_config.json`` and ``config.json`` (read by ``from_pretrained``) at most
:data:`texkit.files.MAX_CONFIG_BYTES`, read strictly (:func:`texkit.files.read_json`).

(About 700 lines, most of them documentation, ALBERT's preprocessing and the model file's
checks; one tokenizer, two styles.)
"""

from __future__ import annotations

import os
import struct
from typing import Any

import tensorflow as tf
import tensorflow_text as tf_text

from texkit import files
from texkit.data.tokenizers.templated import TemplateTokenizer
from texkit.data.tokenizers.unknown_runs import unknown_run_pattern
from texkit.data.tokenizers.vocab_file import _shown

__all__ = ["STYLES", "SentencePieceTokenizer"]

STYLES = ("albert", "t5")
# ALBERT's preprocessing options and the slow AlbertTokenizer's defaults.
_ALBERT_OPTIONS = {"do_lower_case": True, "keep_accents": False, "remove_space": True}
# Tokenizer classes and model types of Hugging Face folders, to a style.
_STYLE_OF_CLASS = {
    "AlbertTokenizer": "albert",
    "AlbertTokenizerFast": "albert",
    "T5Tokenizer": "t5",
    "T5TokenizerFast": "t5",
}
_STYLE_OF_MODEL_TYPE = {"albert": "albert", "t5": "t5", "mt5": "t5", "umt5": "t5"}

# SentencePiece's piece types (sentencepiece_model.proto).
_NORMAL, _UNKNOWN, _CONTROL = 1, 2, 3
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
# Texts longer than this have their runs of unknown characters cut (see unknown_runs.py).
_CUT_ABOVE_BYTES = 4096
_RECENT_CAPITALS_CLASS = "".join(
    rf"\x{{{first:X}}}-\x{{{last:X}}}" for first, last, _ in _RECENT_CAPITALS
)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a varint runs past the end")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (field number, wire type, value) of a protocol buffer message, in order."""
    fields = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        else:
            raise ValueError(f"wire type {wire}")
        if pos > len(data):
            raise ValueError("a field runs past the end")
        fields.append((number, wire, value))
    return fields


def _read_model(path: str) -> tuple[bytes, list[tuple[str, float, int]], dict[str, Any]]:
    """A ``spiece.model``'s bytes, its pieces: (text, score, type), the id the index, and what
    its normalization needs: ``charsmap`` (``normalizer_spec.precompiled_charsmap``) and
    ``byte_fallback`` (``trainer_spec.byte_fallback``).

    The pieces are read from the serialized ``ModelProto`` (field 1, each a ``SentencePiece``:
    1 ``piece``, 2 ``score``, 3 ``type``; 2 ``trainer_spec``, 3 ``normalizer_spec``) without
    the ``sentencepiece`` package. The file must be a regular file (not a FIFO or a device) of
    at most :data:`texkit.files.MAX_JSON_BYTES` bytes.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"SentencePieceTokenizer: model_file {path!r} does not exist")
    if tf.io.gfile.isdir(path):
        raise IsADirectoryError(
            f"SentencePieceTokenizer: model_file {path!r} is a folder; give the file, or use "
            "SentencePieceTokenizer.from_pretrained(folder)"
        )
    data = files.read_bytes(
        path,
        files.MAX_JSON_BYTES,
        context="SentencePieceTokenizer model_file",
        what="tokenizer file (texkit.files.MAX_JSON_BYTES)",
    )
    pieces = []
    specs: dict[str, Any] = {"charsmap": b"", "byte_fallback": False}
    try:
        for number, wire, value in _fields(data):
            if number in (2, 3) and wire == 2:  # trainer_spec, normalizer_spec
                for field, field_wire, field_value in _fields(value):
                    if (number, field, field_wire) == (2, 35, 0):
                        specs["byte_fallback"] = bool(field_value)
                    elif (number, field, field_wire) == (3, 2, 2):
                        specs["charsmap"] = field_value
            if number != 1:
                continue
            if wire != 2:
                raise ValueError("field 1 (pieces) is not a message")
            piece: list[Any] = [None, 0.0, _NORMAL]
            for field, field_wire, field_value in _fields(value):
                if (field, field_wire) == (1, 2):
                    piece[0] = field_value.decode("utf-8")
                elif (field, field_wire) == (2, 5):
                    piece[1] = struct.unpack("<f", field_value)[0]
                elif (field, field_wire) == (3, 0):
                    piece[2] = field_value
            if piece[0] is None:
                raise ValueError(f"piece {len(pieces)} has no text")
            pieces.append(tuple(piece))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(
            f"SentencePieceTokenizer: model_file {path!r} is not a SentencePiece model ({e})"
        ) from None
    unknown = [i for i, (_, _, kind) in enumerate(pieces) if kind == _UNKNOWN]
    if not pieces or len(unknown) != 1:
        raise ValueError(
            f"SentencePieceTokenizer: model_file {path!r} is not a SentencePiece model (it holds "
            f"{len(pieces)} pieces, {len(unknown)} of them <unk>; a model has exactly one)"
        )
    return data, pieces, specs


def _read_json(path: str) -> dict[str, Any]:
    """A JSON object file (``tokenizer_config.json``, ``config.json``), errors naming it: read
    strictly by :func:`texkit.files.read_json` (a regular file of at most
    :data:`texkit.files.MAX_CONFIG_BYTES` bytes, no repeated keys, bounded nesting)."""
    value = files.read_json(
        path,
        limit=files.MAX_CONFIG_BYTES,
        context="SentencePieceTokenizer.from_pretrained",
        what="tokenizer config (texkit.files.MAX_CONFIG_BYTES)",
    )
    if not isinstance(value, dict):
        raise ValueError(
            f"SentencePieceTokenizer.from_pretrained: {path!r} must hold a JSON object, got a "
            f"{type(value).__name__}"
        )
    return value


def _text(value: Any) -> str | None:
    """``value`` if it is a string (a config's name of a class or a model type), else ``None``."""
    return value if isinstance(value, str) else None


def _present(path: str) -> bool:
    """Whether a folder holds the optional file ``path``: a symbolic link to nothing is there
    (and an error when read), not absent."""
    return tf.io.gfile.exists(path) or os.path.islink(path)


# --- the class -----------------------------------------------------------------------------------


class SentencePieceTokenizer(TemplateTokenizer):
    """ALBERT's or T5's SentencePiece tokenizer and input packing, in the TensorFlow graph.

    Gives the ids of the style's reference (see :mod:`texkit.data.tokenizers.sentencepiece` for
    what is reproduced, how, and the few known differences) and packs them, padded to a static
    ``max_seq_length``:

    * ``"albert"``: ALBERT's preprocessing (lowercase, whitespace, accents: the three options)
      before SentencePiece; ``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]``, padded with
      ``<pad>``; ``segment_ids`` 0 up to the first ``[SEP]`` and on the padding, 1 for
      ``B [SEP]``, as Hugging Face's ``AlbertTokenizer`` and BERT.
    * ``"t5"``: SentencePiece alone; ``A </s>`` and ``A </s> B </s>``, padded with ``<pad>``
      (id 0); ``segment_ids`` all 0 (T5 has no segments), as Hugging Face's ``T5Tokenizer``.

    Args:
        model_file: A SentencePiece model (``spiece.model``; local or any ``tf.io.gfile`` path).
            ``"albert"`` needs the pieces ``[CLS]``, ``[SEP]`` and ``<pad>``, ``"t5"`` ``</s>``
            and ``<pad>``.
        style: ``"albert"`` or ``"t5"``, as above.
        max_seq_length: Length of :meth:`encode`'s outputs, special tokens included (512 by
            default, as both models).
        do_lower_case: ``"albert"`` only: lowercase (``None``: ``True``, ALBERT's default).
        keep_accents: ``"albert"`` only: skip NFKD and the deletion of combining marks
            (``None``: ``False``).
        remove_space: ``"albert"`` only: strip the text and make each whitespace run one space
            (``None``: ``True``).
        name: Name of the ``tf.Module``.

    Example:
        With the small ALBERT-like model of the tests (1,000 pieces trained on the Bible corpus
        of the examples). ALBERT's and T5's Hugging Face folders work the same, and say their
        style in ``tokenizer_config.json``: ``from_pretrained("albert-base-v2")`` for a folder
        ``albert-base-v2`` holding ``spiece.model``.

        >>> tokenizer = tx.data.SentencePieceTokenizer.from_pretrained(
        ...     "tests/fixtures/sentencepiece/albert", style="albert", max_seq_length=16
        ... )
        >>> ids = tokenizer.tokenize(["In the Beginning, God  créated 12,000"])
        >>> [tokenizer.id_to_token(i) for i in ids[0].numpy()]  # ▁12, is split again
        ['▁in', '▁the', '▁be', 'g', 'in', 'n', 'ing', ',', '▁god', '▁c', 're', 'a', 'ted', '▁1',
         '2', ',', '0', '0', '0']
        >>> tokenizer.detokenize(ids).numpy()
        array([b'in the beginning, god created 12,000'], dtype=object)
        >>> features = tokenizer.encode(["Let there be light"], ["and there was light."])
        >>> features["input_ids"].numpy()  # [CLS] A [SEP] B [SEP] <pad>...
        array([[  2, 336, 239,  52, 827,   3,  18, 239, 132, 827,   9,   3,   0,
                  0,   0,   0]], dtype=int32)
        >>> features["segment_ids"].numpy()
        array([[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]], dtype=int32)
        >>> features["sequence_length"].numpy()
        array([12], dtype=int32)
        >>> texts = tf.data.Dataset.from_tensor_slices(["Hello, world!", "¿Qué tal?"])
        >>> next(iter(texts.batch(2).map(tokenizer.encode)))["input_ids"].shape
        TensorShape([2, 16])
    """

    def __init__(
        self,
        model_file: str | os.PathLike,
        style: str,
        max_seq_length: int = 512,
        do_lower_case: bool | None = None,
        keep_accents: bool | None = None,
        remove_space: bool | None = None,
        name: str = "sentencepiece_tokenizer",
    ):
        super().__init__(name=name)
        if style not in STYLES:
            raise ValueError(
                f"SentencePieceTokenizer: style must be one of {STYLES}, got {style!r}"
            )
        options = {
            "do_lower_case": do_lower_case,
            "keep_accents": keep_accents,
            "remove_space": remove_space,
        }
        for option, value in options.items():
            if value is None:
                options[option] = _ALBERT_OPTIONS[option] if style == "albert" else None
            elif style != "albert":
                raise ValueError(
                    f"SentencePieceTokenizer: {option} is ALBERT's preprocessing; style={style!r} "
                    "has none (leave it None)"
                )
            elif not isinstance(value, bool):
                raise TypeError(
                    f"SentencePieceTokenizer: {option} must be a bool or None, got {value!r}"
                )
        self._options = options
        self._model_file = os.fspath(model_file)
        self._style = style
        self._second_segment = 1 if style == "albert" else 0  # B [SEP]; T5 has no segments
        model, pieces, specs = _read_model(self._model_file)
        self._pieces = tuple(piece for piece, _, _ in pieces)
        ids: dict[str, int] = {}
        for token_id, piece in enumerate(self._pieces):
            ids.setdefault(piece, token_id)
        self._ids = ids
        self._unk_id = next(i for i, (_, _, kind) in enumerate(pieces) if kind == _UNKNOWN)

        def required(token: str) -> int:
            if token not in self._ids:
                raise ValueError(
                    f"SentencePieceTokenizer: model_file {self._model_file!r} has no {token!r} "
                    f"piece, which style={style!r} needs"
                )
            return self._ids[token]

        self._pad_id = required("<pad>")
        if style == "albert":
            self._cls_id, self._sep_id = required("[CLS]"), required("[SEP]")
            self._eos_id = None
            self._mask_id = self._ids.get("[MASK]")
            # [first prefix, first suffix, second prefix, second suffix] of encode.
            self._template = ((self._cls_id,), (self._sep_id,), (), (self._sep_id,))
        else:
            self._eos_id = required("</s>")
            self._cls_id = self._sep_id = self._mask_id = None
            self._template = ((), (self._eos_id,), (), (self._eos_id,))
        controls = {i for i, (_, _, kind) in enumerate(pieces) if kind == _CONTROL}
        self._special_ids = tuple(sorted({*controls, self._pad_id}))
        least = max(1, len(self._template[0]) + len(self._template[1]))
        if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int):
            raise ValueError(
                f"SentencePieceTokenizer: max_seq_length must be an int, got {max_seq_length!r}"
            )
        if max_seq_length < least:
            raise ValueError(
                f"SentencePieceTokenizer: max_seq_length must be >= {least} (the special tokens "
                f"of style={style!r} and one token), got {max_seq_length}"
            )
        self._max_seq_length = max_seq_length

        self._sentencepiece = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        # Runs of unknown characters cut to what gives SentencePiece the same ids in linear time.
        try:
            self._unknown_run = unknown_run_pattern(
                pieces, specs["charsmap"], specs["byte_fallback"]
            )
        except ValueError as e:
            raise ValueError(
                f"SentencePieceTokenizer: model_file {self._model_file!r}: {e}"
            ) from None
        if self._unknown_run is not None:
            with tf.init_scope():
                try:  # RE2 compiles it here, not in the middle of a pipeline
                    tf.strings.regex_replace([""], self._unknown_run, r"\1")
                except tf.errors.InvalidArgumentError as e:
                    raise ValueError(
                        f"SentencePieceTokenizer: model_file {self._model_file!r}: its characters "
                        f"make a pattern RE2 cannot compile ({e.message})"
                    ) from None
        self._piece_texts = tf.constant(self._pieces)
        # ALBERT's split of the pieces that end with a digit and a comma: each id's ids.
        self._expansion = None
        if style == "albert":
            with tf.init_scope():
                self._expansion = self._digit_comma_expansion(model)

        self._tokenize_fn = tf.function(
            self._tokenize_batch,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )

    def _digit_comma_expansion(self, model: bytes) -> tf.RaggedTensor | None:
        """For each id, the ids the slow ``AlbertTokenizer`` puts in its place: its own, but for
        the pieces that end with a digit and a comma (``None`` when the model has none)."""
        flagged = [
            i
            for i, piece in enumerate(self._pieces)
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()
        ]
        if not flagged:
            return None
        strings = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
        digits = [self._pieces[i][:-1].replace(_SPACE_SYMBOL, "") for i in flagged]
        encoded = strings.tokenize(tf.constant(digits)).to_list()
        rows = [[i] for i in range(len(self._pieces))]
        for token_id, parts in zip(flagged, encoded, strict=True):
            parts = [part.decode("utf-8") for part in parts]
            if not self._pieces[token_id].startswith(_SPACE_SYMBOL) and parts[0][0] == (
                _SPACE_SYMBOL
            ):
                parts = parts[1:] if len(parts[0]) == 1 else [parts[0][1:], *parts[1:]]
            parts.append(",")
            rows[token_id] = [self._ids.get(part, self._unk_id) for part in parts]
        return tf.ragged.constant(rows, dtype=tf.int32, row_splits_dtype=tf.int64)

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, style: str | None = None, **kwargs: Any
    ) -> SentencePieceTokenizer:
        """The tokenizer of a folder holding ``spiece.model`` (ALBERT's and T5's Hugging Face
        folders) or a single other ``*.model``.

        The folder's ``tokenizer_config.json`` (Hugging Face), when there is one, gives the
        ``"albert"`` options ``do_lower_case``, ``keep_accents`` and ``remove_space`` that
        ``kwargs`` do not; a value that is not a bool, ``sp_model_kwargs`` that are not empty
        (sampling) and ``add_prefix_space: false`` are refused.

        Args:
            path: The folder (local or any ``tf.io.gfile`` path).
            style: ``"albert"`` or ``"t5"``; ``None``: from ``tokenizer_class`` in
                ``tokenizer_config.json`` (``AlbertTokenizer``, ``T5Tokenizer``, or their
                ``Fast``), else ``model_type`` in ``config.json`` (``albert``, ``t5``, ``mt5``,
                ``umt5``).
            **kwargs: The other arguments of :class:`SentencePieceTokenizer`.
        """
        folder = os.fspath(path)
        where = "SentencePieceTokenizer.from_pretrained"
        if not tf.io.gfile.isdir(folder):
            raise FileNotFoundError(f"{where}: {folder!r} is not a folder")
        model_file = os.path.join(folder, "spiece.model")
        if not tf.io.gfile.exists(model_file):
            models = sorted(
                name
                for name in tf.io.gfile.listdir(folder)
                if name.endswith(".model") and not tf.io.gfile.isdir(os.path.join(folder, name))
            )
            if len(models) != 1:
                raise FileNotFoundError(
                    f"{where}: {folder!r} holds no spiece.model and "
                    + (f"several *.model files {models}; give one" if models else "no *.model")
                    + " (the SentencePiece model of ALBERT and T5 folders)"
                )
            model_file = os.path.join(folder, models[0])
        config_file = os.path.join(folder, "tokenizer_config.json")
        config = _read_json(config_file) if _present(config_file) else {}
        if style is None:
            style = _STYLE_OF_CLASS.get(_text(config.get("tokenizer_class")))
        if style is None:
            model_config = os.path.join(folder, "config.json")
            if _present(model_config):
                model_type = _read_json(model_config).get("model_type")
                style = _STYLE_OF_MODEL_TYPE.get(_text(model_type))
        if style is None:
            raise ValueError(
                f"{where}: {folder!r} does not say whether it is ALBERT's or T5's (no known "
                "tokenizer_class in tokenizer_config.json, no known model_type in config.json); "
                "give style='albert' or style='t5'"
            )
        if config.get("sp_model_kwargs"):
            raise ValueError(
                f"{where}: {config_file!r} sets sp_model_kwargs="
                f"{_shown(config['sp_model_kwargs'])}; "
                "only SentencePiece's plain encoding (no sampling) is supported"
            )
        if config.get("add_prefix_space") is False:
            raise ValueError(
                f"{where}: {config_file!r} sets add_prefix_space=false; SentencePiece's own "
                "(a '▁' before the text) is the only one supported"
            )
        if style == "albert":
            for option in _ALBERT_OPTIONS:
                if option in config and kwargs.get(option) is None:
                    value = config[option]
                    if not isinstance(value, bool):
                        raise ValueError(
                            f"{where}: {config_file!r} sets {option}="
                            f"{_shown(value)}; it must be true "
                            "or false"
                        )
                    kwargs[option] = value
        return cls(model_file, style=style, **kwargs)

    # --- Python-side facts -------------------------------------------------------------------

    @property
    def model_file(self) -> str:
        return self._model_file

    @property
    def style(self) -> str:
        return self._style

    @property
    def vocab_size(self) -> int:
        """The number of pieces (ids run from 0 to ``vocab_size - 1``)."""
        return len(self._pieces)

    @property
    def max_seq_length(self) -> int:
        return self._max_seq_length

    @property
    def do_lower_case(self) -> bool | None:
        """ALBERT's option (``None`` for ``"t5"``)."""
        return self._options["do_lower_case"]

    @property
    def keep_accents(self) -> bool | None:
        """ALBERT's option (``None`` for ``"t5"``)."""
        return self._options["keep_accents"]

    @property
    def remove_space(self) -> bool | None:
        """ALBERT's option (``None`` for ``"t5"``)."""
        return self._options["remove_space"]

    @property
    def pad_id(self) -> int:
        return self._pad_id

    @property
    def unk_id(self) -> int:
        return self._unk_id

    @property
    def cls_id(self) -> int | None:
        """``[CLS]`` (``None`` for ``"t5"``)."""
        return self._cls_id

    @property
    def sep_id(self) -> int | None:
        """``[SEP]`` (``None`` for ``"t5"``)."""
        return self._sep_id

    @property
    def mask_id(self) -> int | None:
        """``[MASK]`` (``None`` for ``"t5"`` or a model without it)."""
        return self._mask_id

    @property
    def eos_id(self) -> int | None:
        """``</s>`` (``None`` for ``"albert"``)."""
        return self._eos_id

    @property
    def special_ids(self) -> tuple[int, ...]:
        """The ids :meth:`detokenize` skips: the model's control symbols (``<pad>``, ``[CLS]``,
        ``[SEP]``, ``[MASK]``; ``</s>``) and the padding. ``<unk>`` is not one of them."""
        return self._special_ids

    def token_to_id(self, token: str) -> int:
        """The id of a piece (KeyError naming it if absent)."""
        try:
            return self._ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not a piece of {self._model_file!r}") from None

    def id_to_token(self, token_id: int) -> str:
        """The piece of an id (IndexError naming it if out of range)."""
        if not 0 <= int(token_id) < len(self._pieces):
            raise IndexError(f"id {token_id} is outside the vocabulary [0, {len(self._pieces)})")
        return self._pieces[int(token_id)]

    def __repr__(self) -> str:
        options = "".join(
            f", {option}={value}" for option, value in self._options.items() if value is not None
        )
        return (
            f"SentencePieceTokenizer({self._model_file!r}, style={self._style!r}, "
            f"max_seq_length={self._max_seq_length}{options}, vocab_size={self.vocab_size})"
        )

    # --- graph ops ---------------------------------------------------------------------------

    def detokenize(self, ids: Any, skip_special_tokens: bool = True) -> tf.Tensor:
        """Ids back to text.

        With ``skip_special_tokens``, the ``sentencepiece`` library's ``decode`` (through
        ``tensorflow_text``): the pieces joined, ``▁`` as spaces, the text's first space
        dropped, ``<unk>`` as `` ⁇ ``, the control symbols and the padding as nothing. The text
        is the one SentencePiece saw: for ``"albert"``, lowercased and without accents.

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop the ids of :attr:`special_ids` (as ``decode`` does);
                otherwise every id gives its piece's text (``[CLS]``, ``</s>``, ``<pad>``,
                ``<unk>`` too), ``▁`` as spaces, less the first space of the text.

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
            if ids.shape.rank not in (1, 2):
                raise ValueError(
                    "SentencePieceTokenizer.detokenize: ids must be [time] or [batch, time], got "
                    f"shape {ids.shape}"
                )
            single = ids.shape.rank == 1
            ids = tf.RaggedTensor.from_tensor(ids[tf.newaxis] if single else ids)
        else:
            single = False
        ids = tf.cast(ids, tf.int32)
        if skip_special_tokens:
            special = tf.reduce_any(
                ids.flat_values[:, tf.newaxis] == tf.constant(self._special_ids, tf.int32), axis=1
            )
            ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(~special))
            text = self._sentencepiece.detokenize(ids)
        else:
            text = tf.strings.reduce_join(tf.gather(self._piece_texts, ids), axis=-1)
            text = tf.strings.regex_replace(text, "^" + _SPACE_SYMBOL, "")
            text = tf.strings.regex_replace(text, _SPACE_SYMBOL, " ")
        return text[0] if single else text

    # --- the work ----------------------------------------------------------------------------

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (a ``tf.function``)."""
        texts = tf.strings.unicode_transcode(
            texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        if self._style == "albert":
            texts = self._albert_preprocess(texts)
        if self._unknown_run is not None:
            texts = _cut_unknown_runs(texts, self._unknown_run)
        ids = self._sentencepiece.tokenize(texts)
        ids = tf.RaggedTensor.from_row_splits(
            tf.cast(ids.flat_values, tf.int32), tf.cast(ids.row_splits, tf.int64)
        )
        if self._expansion is not None:
            parts = tf.gather(self._expansion, ids.flat_values)
            ids = tf.RaggedTensor.from_row_splits(parts, ids.row_splits).merge_dims(1, 2)
        return ids

    def _albert_preprocess(self, texts: tf.Tensor) -> tf.Tensor:
        """The slow ``AlbertTokenizer``'s text before SentencePiece (steps 1 to 5 of the
        module's list)."""
        options = self._options
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


def _cut_unknown_runs(texts: tf.Tensor, pattern: str) -> tf.Tensor:
    """``texts`` with the runs of unknown characters that ``pattern`` matches cut to its group
    1, in the texts of more than :data:`_CUT_ABOVE_BYTES` bytes: in a shorter one a run costs
    SentencePiece a millisecond at most, less than the pattern would."""
    long = tf.cast(tf.strings.length(texts) > _CUT_ABOVE_BYTES, tf.int32)
    parts = tf.dynamic_partition(texts, long, 2)
    positions = tf.dynamic_partition(tf.range(tf.size(texts)), long, 2)
    cut = tf.strings.regex_replace(parts[1], pattern, r"\1")
    return tf.reshape(tf.dynamic_stitch(positions, [parts[0], cut]), tf.shape(texts))


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
