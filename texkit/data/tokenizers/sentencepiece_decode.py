"""The ``sentencepiece`` library's ``decode`` of a byte-fallback model, in TensorFlow ops.

``tensorflow_text.SentencepieceTokenizer.detokenize`` runs the SentencePiece library that
``tensorflow_text`` builds in, an older one than the ``sentencepiece`` 0.2 package: with a
dummy prefix it drops every space at the start of a text (``"  leading"`` comes back as
``"leading"``), where the package drops only the dummy prefix's (as Hugging Face's Llama
decoder does): 485 of the 10,202 test texts for the Llama-2-like test model. :class:`PieceDecoder`
decodes as the package does (all 10,202, for the three test models), from tables of the
model's pieces:

* a normal, user-defined or unused piece gives its text with ``▁`` as a space; the first piece
  of a text loses one leading ``▁`` when the model adds a dummy prefix or removes extra
  whitespace (with ``remove_extra_whitespaces``, pieces that are only ``▁`` at the start give
  nothing and the next piece loses its ``▁``);
* a byte piece (``<0xE3>``) gives its byte; a run of byte pieces (any other piece ends it, a
  skipped control piece too) that is not UTF-8 gives one U+FFFD per byte (ICU, which
  TensorFlow decodes with, gives one per maximal invalid sequence: the count is restored from
  the sequence's length);
* ``<unk>`` gives the model's ``unk_surface`` (by default ``⁇`` between two spaces); control
  pieces nothing.

Not reproduced: a ``denormalizer_spec`` and ``treat_whitespace_as_suffix``, which no
byte-fallback model of the Llama line sets.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["PieceDecoder"]

_SPACE = "\u2581"
# SentencePiece's piece types (sentencepiece_model.proto).
_UNKNOWN, _CONTROL, _BYTE = 2, 3, 6


def _byte_of(piece: str) -> bytes:
    """The byte of a byte piece, ``<0xNN>``."""
    return bytes([int(piece[3:5], 16)])


class PieceDecoder:
    """Ids of a SentencePiece model back to text, as the ``sentencepiece`` package's ``decode``
    (see the module).

    Args:
        pieces: the model's (text, score, type) pieces.
        specs: what :func:`~texkit.data.tokenizers.sentencepiece_files._read_model` read of its
            specs (``add_dummy_prefix``, ``remove_extra_whitespaces``, ``unk_surface``).
        added: the texts of tokens with ids after the model's pieces (special added tokens).
        skipped: the ids that :meth:`decode` drops with ``skip_special_tokens`` (the control
            pieces, which the package drops too, the padding and special added tokens).
    """

    def __init__(
        self,
        pieces: list[tuple[str, float, int]],
        specs: dict[str, Any],
        added: list[str],
        skipped: set[int],
    ):
        surface, stripped, literal, is_byte = [], [], [], []
        for token_id, (text, _, kind) in enumerate(pieces):
            is_byte.append(kind == _BYTE)
            if kind == _BYTE:
                value = _byte_of(text)
                plain = first = value
            elif kind == _UNKNOWN:
                value = text.encode("utf-8")
                plain = first = specs["unk_surface"].encode("utf-8")
            else:
                value = plain = text.replace(_SPACE, " ").encode("utf-8")
                first = text.removeprefix(_SPACE).replace(_SPACE, " ").encode("utf-8")
            if token_id in skipped or kind == _CONTROL:
                plain = first = b""
            surface.append(plain)
            stripped.append(first)
            literal.append(value)
        for token_id, text in enumerate(added, start=len(pieces)):
            value = text.encode("utf-8")
            plain = b"" if token_id in skipped else value
            surface.append(plain)
            stripped.append(plain)
            literal.append(value)
            is_byte.append(False)
        blank = [i in skipped for i in range(len(surface))]
        if specs["remove_extra_whitespaces"]:
            # Pieces that are only "▁" at the start give nothing, and the next loses its "▁".
            for token_id, (text, _, _) in enumerate(pieces):
                blank[token_id] = blank[token_id] or text == _SPACE
        self._dummy_prefix = bool(specs["add_dummy_prefix"])
        self._strip = self._dummy_prefix or bool(specs["remove_extra_whitespaces"])
        with tf.init_scope():
            self._surface = tf.constant(surface, tf.string)
            self._stripped = tf.constant(stripped, tf.string)
            self._literal = tf.constant(literal, tf.string)
            self._is_byte = tf.constant(is_byte, tf.bool)
            self._blank = tf.constant(blank, tf.bool)

    def decode(self, ids: tf.RaggedTensor, skip_special_tokens: bool) -> tf.Tensor:
        """``[batch, (time)]`` int32 ids to ``[batch]`` texts.

        Args:
            ids: the ids.
            skip_special_tokens: the package's ``decode`` (see the module), less the ``skipped``
                ids; otherwise every id gives its piece's text (control pieces and ``<unk>``
                too, bytes as bytes) and the text loses one leading space when the model adds
                a dummy prefix, as Hugging Face's Llama decoder.
        """
        flat = ids.flat_values
        rows = ids.value_rowids()
        positions = tf.ragged.range(ids.row_lengths()).flat_values
        if not skip_special_tokens:
            parts = tf.gather(self._literal, flat)
        elif not self._strip:
            parts = tf.gather(self._surface, flat)
        else:
            # The first piece that gives text loses its leading "▁" (those before give none).
            others = tf.where(tf.gather(self._blank, flat), tf.int64.max, positions)
            first = tf.math.unsorted_segment_min(others, rows, ids.nrows())
            strip = positions <= tf.gather(first, rows)
            parts = tf.where(strip, tf.gather(self._stripped, flat), tf.gather(self._surface, flat))
        # A run of byte pieces is one segment (decoded as UTF-8 alone), every other piece one.
        is_byte = tf.gather(self._is_byte, flat)
        previous = tf.concat([[False], is_byte[:-1]], 0)[: tf.size(is_byte)]
        starts = ~(is_byte & previous & (positions > 0))
        segment = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        count = tf.reduce_sum(tf.cast(starts, tf.int64))
        segments = tf.strings.unsorted_segment_join(parts, segment, count)
        segments = self._bytes_as_utf8(segments)
        segment_rows = tf.boolean_mask(rows, starts)
        text = tf.strings.reduce_join(
            tf.RaggedTensor.from_value_rowids(segments, segment_rows, ids.nrows()), -1
        )
        if not skip_special_tokens and self._dummy_prefix:
            text = tf.strings.regex_replace(text, "^ ", "")
        return text

    @staticmethod
    def _bytes_as_utf8(text: tf.Tensor) -> tf.Tensor:
        """``[n]`` strings with each byte of an invalid UTF-8 sequence (only byte pieces make
        one) as a U+FFFD, as the package: ICU's replacement (one per maximal invalid sequence)
        found by decoding twice with two replacement characters, then repeated once per
        byte."""
        points, starts = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        other = tf.strings.unicode_decode(text, "UTF-8", errors="replace", replacement_char=0xFFFE)
        invalid = points.flat_values != other.flat_values
        rows = points.value_rowids()
        flat_starts = starts.flat_values
        last = tf.ragged.range(points.row_lengths()).flat_values == tf.gather(
            points.row_lengths() - 1, rows
        )
        following = tf.concat([flat_starts[1:], tf.zeros([1], flat_starts.dtype)], 0)
        lengths = tf.cast(tf.strings.length(text), tf.int64)
        ends = tf.where(last, tf.gather(lengths, rows), following[: tf.size(flat_starts)])
        counts = tf.where(invalid, ends - flat_starts, tf.ones_like(flat_starts))
        repeated = tf.repeat(points.flat_values, counts)
        sizes = tf.math.unsorted_segment_sum(counts, rows, points.nrows())
        return tf.strings.unicode_encode(tf.RaggedTensor.from_row_lengths(repeated, sizes), "UTF-8")
