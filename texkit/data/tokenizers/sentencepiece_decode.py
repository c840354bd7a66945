"""The ``sentencepiece`` library's ``decode``, in TensorFlow ops.

``tensorflow_text.SentencepieceTokenizer.detokenize`` runs the SentencePiece library that
``tensorflow_text`` builds in, an older one than the ``sentencepiece`` 0.2 package: with a
dummy prefix it drops every space at the start of a text (``"  leading"`` comes back as
``"leading"``). The package drops all of them only for a model that removes extra whitespace
(``remove_extra_whitespaces``: ALBERT's and T5's models, where the two agree), and otherwise
only the dummy prefix's (as Hugging Face's Llama decoder does): 485 of the 10,202 test texts
for the Llama-2-like test model, and most random id sequences that start with a ``▁`` piece
for T5's test model without ``remove_extra_whitespaces``. :class:`PieceDecoder` decodes as the
package does, for every style of
:class:`~texkit.data.tokenizers.SentencePieceTokenizer`, from tables of the model's pieces
(:class:`PieceTables`, which :mod:`~texkit.data.tokenizers.incremental` reads too):

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

Not reproduced: a ``denormalizer_spec`` and ``treat_whitespace_as_suffix``, which neither
ALBERT's, T5's nor the byte-fallback models of the Llama line set.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import tensorflow as tf

__all__ = ["PieceDecoder", "PieceTables"]

_SPACE = "\u2581"
# SentencePiece's piece types (sentencepiece_model.proto).
_UNKNOWN, _CONTROL, _BYTE = 2, 3, 6


class PieceTables(NamedTuple):
    """What each id gives when decoded (lists indexed by id) and the model's rule for the
    first space.

    Attributes:
        surface: the bytes of the id with ``skip_special_tokens`` (``b""`` for a skipped id).
        stripped: the same for the first piece that gives text (less its leading space).
        literal: the bytes without ``skip_special_tokens`` (every piece's own text).
        is_byte: whether the id is a byte piece (runs of them are decoded as UTF-8 together).
        blank: whether the id gives nothing at the start of a text (skipped ids; with
            ``remove_extra_whitespaces``, the ``▁`` piece too), so that the next one is first.
        dummy_prefix: whether the model adds a dummy prefix (the text's first space is
            dropped without ``skip_special_tokens``).
        strip: whether the first piece that gives text loses its leading space.
    """

    surface: list[bytes]
    stripped: list[bytes]
    literal: list[bytes]
    is_byte: list[bool]
    blank: list[bool]
    dummy_prefix: bool
    strip: bool


def _byte_of(piece: str) -> bytes:
    """The byte of a byte piece, ``<0xNN>``."""
    return bytes([int(piece[3:5], 16)])


class PieceDecoder:
    """Ids of a SentencePiece model back to text, as the ``sentencepiece`` package's ``decode``
    (see the module); :attr:`tables` holds what it decodes with.

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
        self.tables = PieceTables(
            surface, stripped, literal, is_byte, blank, self._dummy_prefix, self._strip
        )
        with tf.init_scope():
            self._surface = tf.constant(surface, tf.string)
            self._stripped = tf.constant(stripped, tf.string)
            self._literal = tf.constant(literal, tf.string)
            self._is_byte = tf.constant(is_byte, tf.bool)
            self._blank = tf.constant(blank, tf.bool)
        # One graph per flag: in eager mode the ops one by one cost some 50 ms a call.
        spec = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1, row_splits_dtype=tf.int64)
        self._compiled = {
            skip: tf.function(
                functools.partial(self._decode, skip_special_tokens=skip),
                input_signature=[spec],
                autograph=False,
            )
            for skip in (False, True)
        }

    def decode(self, ids: tf.RaggedTensor, skip_special_tokens: bool) -> tf.Tensor:
        """``[batch, (time)]`` int32 ids to ``[batch]`` texts (:meth:`_decode`, compiled).

        Args:
            ids: the ids.
            skip_special_tokens: as :meth:`_decode`'s.
        """
        return self._compiled[bool(skip_special_tokens)](ids.with_row_splits_dtype(tf.int64))

    def _decode(self, ids: tf.RaggedTensor, skip_special_tokens: bool) -> tf.Tensor:
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
