"""What the tokenizers share: raw texts to ids, ids packed in a template, the vocabulary's facts.

:class:`TemplateTokenizer` is the base of :class:`~texkit.data.tokenizers.BERTTokenizer`,
:class:`~texkit.data.tokenizers.GPT2BPETokenizer` and
:class:`~texkit.data.tokenizers.SentencePieceTokenizer`. A subclass sets, in its constructor:

* ``_tokenize_batch``: a method from ``[batch]`` strings to ``[batch, (tokens)]`` int32 ids
  (:meth:`TemplateTokenizer._compile` makes it a ``tf.function``);
* ``_settings``: the files and options it was made with, by argument name (:func:`setting`
  makes a property of one; ``repr`` shows them);
* the vocabulary (:meth:`TemplateTokenizer._set_vocabulary`): the tokens by id, the file they
  come from (the setting ``_source_arg``), and ``_special``, the ids of the special tokens by
  role (``"pad"``, ``"cls"``, ``"eos"``...; :func:`special_id` makes a property of one) and
  ``_special_ids``, the ids that ``detokenize`` skips;
* the template (:meth:`TemplateTokenizer._set_template`): ``(first prefix, first suffix, second
  prefix, second suffix)``, tuples of ids (RoBERTa: ``((<s>,), (</s>,), (</s>,), (</s>,))``),
  the segment id of the second text's part (1, or 0 for models with a single token type) and
  ``max_seq_length``.

Packing is :func:`texkit.data.tokenizers.packing._pack`: dense, position by position, pairs
truncated by BERT's rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.packing import _pack

__all__ = ["TemplateTokenizer", "as_batch", "setting", "special_id", "utf8_or_replacement"]


def as_batch(texts: Any, name: str, owner: str) -> tuple[tf.Tensor, bool]:
    """``texts`` as a [batch] string tensor, and whether it was a single (scalar) string."""
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    rank = texts.shape.rank
    if rank == 0:
        return texts[tf.newaxis], True
    if rank != 1:
        raise ValueError(
            f"{owner}: {name} must be a string or a [batch] of strings, got shape {texts.shape}"
        )
    return texts, False


def utf8_or_replacement(text: tf.Tensor) -> tf.Tensor:
    """Strings with each maximal invalid UTF-8 sequence (the longest start of a character that
    cannot go on; a lone byte that starts none) as one U+FFFD, as Python's
    ``bytes.decode("utf-8", "replace")`` and Rust's ``String::from_utf8_lossy``."""
    return tf.strings.unicode_transcode(
        text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD,
        replace_control_characters=False,
    )  # fmt: skip


def setting(name: str, doc: str | None = None) -> property:
    """A read-only property: the tokenizer's setting ``name`` (a key of its ``_settings``: the
    files and options it was made with)."""
    return property(lambda self: self._settings[name], doc=doc)


def special_id(role: str, doc: str | None = None) -> property:
    """A read-only property: the id of the tokenizer's special token of ``role`` (a key of its
    ``_special``: ``"cls"``, ``"eos"``...), ``None`` when it has none."""
    return property(lambda self: self._special[role], doc=doc)


class TemplateTokenizer(tf.Module):
    """Base class: :meth:`tokenize`, :meth:`encode` / :meth:`pack` in a template, the
    vocabulary's facts (:meth:`token_to_id`, :meth:`id_to_token`, :attr:`vocab_size`,
    :attr:`pad_id`, :attr:`special_ids`), :attr:`max_seq_length` and ``repr`` (see the module
    for what a subclass sets)."""

    # What the errors and repr say: the argument naming the tokenizer's file, what its
    # vocabulary holds ("token", "piece"), and the settings repr shows (the files without
    # their names).
    _source_arg = "vocab_file"
    _entry = "token"
    _repr_files: tuple[str, ...] = ("vocab_file",)
    _repr_settings: tuple[str, ...] = ("max_seq_length",)

    _settings: dict[str, Any]
    _source: str
    _tokens: tuple[str | None, ...]
    _ids: dict[str, int]
    _special: dict[str, int | None]
    _special_ids: tuple[int, ...]
    _template: tuple[tuple[int, ...], ...]
    _second_segment: int
    _max_seq_length: int

    @property
    def _owner(self) -> str:
        return type(self).__name__

    # --- construction ------------------------------------------------------------------------

    def _set_vocabulary(
        self, tokens: Sequence[str | None], ids: dict[str, int] | None = None
    ) -> None:
        """The tokens by id (``None`` for an id no token has) read from the file of the setting
        ``_source_arg``, and each token's id (by default its first id)."""
        self._source = self._settings[self._source_arg]
        self._tokens = tuple(tokens)
        if ids is None:
            ids = {}
            for token_id, token in enumerate(self._tokens):
                if token is not None:
                    ids.setdefault(token, token_id)
        self._ids = ids

    def _required(self, token: str, why: str) -> int:
        """The id of ``token``, which the tokenizer needs (``why``: ``"style='t5' needs"``)."""
        if token not in self._ids:
            raise ValueError(
                f"{self._owner}: {self._source_arg} {self._source!r} has no {token!r} "
                f"{self._entry}, which {why}"
            )
        return self._ids[token]

    def _set_template(
        self,
        template: tuple[tuple[int, ...], ...],
        second_segment: int,
        max_seq_length: int,
        style: str,
    ) -> None:
        """The template of :meth:`pack`, the second part's segment id, and ``max_seq_length``
        (checked: at least the first text's special tokens and one token)."""
        least = max(1, len(template[0]) + len(template[1]))
        if isinstance(max_seq_length, bool) or not isinstance(max_seq_length, int):
            raise ValueError(
                f"{self._owner}: max_seq_length must be an int, got {max_seq_length!r}"
            )
        if max_seq_length < least:
            raise ValueError(
                f"{self._owner}: max_seq_length must be >= {least} (the special tokens of "
                f"{style} and one token), got {max_seq_length}"
            )
        self._template = template
        self._second_segment = second_segment
        self._max_seq_length = max_seq_length

    def _compile(self) -> None:
        """Makes :meth:`_tokenize_fn` a ``tf.function`` of ``[None]`` strings."""
        self._tokenize_fn = tf.function(
            self._tokenize_batch,
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,
        )

    def _tokenize_fn(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (see :meth:`_compile`)."""
        return self._tokenize_batch(texts)

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        raise NotImplementedError

    # --- Python-side facts -------------------------------------------------------------------

    @property
    def single_text_template(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(prefix, suffix)``: the special-token ids :meth:`encode` puts before and after a
        single text (``((bos,), ())`` for Llama's, ``((), (eos,))`` for T5's)."""
        return tuple(self._template[0]), tuple(self._template[1])

    @property
    def max_seq_length(self) -> int:
        """The length of :meth:`encode`'s outputs, special tokens included."""
        return self._max_seq_length

    @property
    def vocab_size(self) -> int:
        """One more than the largest id: the size of an embedding table for the ids (the
        number of tokens, unless a BPE vocabulary leaves ids out)."""
        return len(self._tokens)

    pad_id = special_id("pad", "The padding's id.")

    @property
    def special_ids(self) -> tuple[int, ...]:
        """The ids :meth:`detokenize` skips: the special tokens (see the class) and the
        padding."""
        return self._special_ids

    def token_to_id(self, token: str) -> int:
        """The id of a vocabulary entry (KeyError naming it if absent)."""
        try:
            return self._ids[token]
        except KeyError:
            where = "a piece of" if self._entry == "piece" else "in the vocabulary"
            raise KeyError(f"{token!r} is not {where} {self._source!r}") from None

    def id_to_token(self, token_id: int) -> str:
        """The vocabulary entry of an id (IndexError naming it if no entry has it)."""
        index = int(token_id)
        inside = 0 <= index < len(self._tokens)
        if not inside or self._tokens[index] is None:
            raise IndexError(
                f"no {self._entry} of {self._source!r} has the id {token_id}"
                + ("" if inside else f": it is outside the vocabulary [0, {len(self._tokens)})")
            )
        token = self._tokens[index]
        return token

    def __repr__(self) -> str:
        values = {**self._settings, "max_seq_length": self._max_seq_length}
        parts = [repr(values[name]) for name in self._repr_files]
        for name in self._repr_settings:
            value = values[name]
            if value is not None:
                parts.append(f"{name}={value!r}")
        return f"{self._owner}({', '.join(parts)}, vocab_size={self.vocab_size})"

    # --- graph ops ---------------------------------------------------------------------------

    def tokenize(self, texts: Any) -> tf.Tensor | tf.RaggedTensor:
        """Ids (int32) of raw texts, without special tokens.

        Args:
            texts: A string or a [batch] of strings (Python or string tensor).

        Returns:
            ``[batch, (tokens)]`` int32 ``tf.RaggedTensor``; for a single string a ``[tokens]``
            ``tf.Tensor``.
        """
        batch, single = as_batch(texts, "texts", self._owner)
        ids = self._tokenize_fn(batch)
        return ids[0] if single else ids

    def encode(self, texts: Any, second_texts: Any = None) -> dict[str, tf.Tensor]:
        """The model's inputs for single texts or text pairs, padded to ``max_seq_length``.

        Texts are packed in the style's template (see the class). What does not fit is cut
        from the end; a pair longest first: a token is dropped from the longer of ``A`` and ``B``
        (from ``B`` when they are as long) until the pair fits, as BERT's
        ``_truncate_seq_pair`` (:func:`~texkit.data.tokenizers.packing._longest_first`).
        Hugging Face's ``longest_first`` differs in one case: when both texts are cut and the
        room left for them is odd, it gives the odd token to the longer text (to ``B`` when
        they are as long), BERT's rule to ``A``.

        Args:
            texts: The first texts: a string or a [batch] of strings.
            second_texts: ``None``, or the second texts, of the same shape as ``texts``.

        Returns:
            A dict of int32 tensors, ``[batch, max_seq_length]`` (``[max_seq_length]`` for a
            single string, e.g. in ``dataset.map``): ``input_ids`` (padded with ``pad_id``),
            ``segment_ids`` (see the class) and ``sequence_length`` (``[batch]``, ``[]`` for a
            single string: the packed length, special tokens included).
        """
        first, single = as_batch(texts, "texts", self._owner)
        if second_texts is None:
            features = self.pack(self._tokenize_fn(first))
        else:
            second, second_single = as_batch(second_texts, "second_texts", self._owner)
            if second_single != single or not first.shape.is_compatible_with(second.shape):
                raise ValueError(
                    f"{self._owner}: texts and second_texts must have the same shape, got "
                    f"{tf.convert_to_tensor(texts, tf.string).shape} and "
                    f"{tf.convert_to_tensor(second_texts, tf.string).shape}"
                )
            same_size = tf.debugging.assert_equal(
                tf.shape(first),
                tf.shape(second),
                message=f"{self._owner}: texts and second_texts differ in batch size",
            )
            with tf.control_dependencies([same_size]):
                second = tf.identity(second)
            features = self.pack(self._tokenize_fn(first), self._tokenize_fn(second))
        if single:
            features = {key: value[0] for key, value in features.items()}
        return features

    def pack(
        self, ids: tf.RaggedTensor, second_ids: tf.RaggedTensor | None = None
    ) -> dict[str, tf.Tensor]:
        """:meth:`encode` for ids: the model's inputs from :meth:`tokenize`'s output.

        Args:
            ids: ``[batch, (tokens)]`` ids (a ``tf.RaggedTensor``), without special tokens.
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
                    f"{self._owner}.pack: {arg} must be a [batch, (tokens)] tf.RaggedTensor "
                    f"(what tokenize gives for a batch), got {value!r}"
                )
            segments.append(tf.cast(value, tf.int32))
        return _pack(
            segments,
            self._template,
            self._second_segment,
            self._max_seq_length,
            self.pad_id,
            self._owner,
        )

    def _id_rows(
        self, ids: Any, skip_special_tokens: bool, skipped: tuple[int, ...] | None = None
    ) -> tuple[tf.RaggedTensor, bool]:
        """:meth:`detokenize`'s ``ids`` as ``[batch, (time)]`` int32, without ``skipped``
        (by default :attr:`special_ids`) when ``skip_special_tokens``, and whether they were
        ``[time]``."""
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
            if ids.shape.rank not in (1, 2):
                raise ValueError(
                    f"{self._owner}.detokenize: ids must be [time] or [batch, time], got shape "
                    f"{ids.shape}"
                )
            single = ids.shape.rank == 1
            ids = tf.RaggedTensor.from_tensor(ids[tf.newaxis] if single else ids)
        else:
            single = False
        ids = tf.cast(ids, tf.int32)
        if skip_special_tokens:
            special = tf.reduce_any(
                ids.flat_values[:, tf.newaxis]
                == tf.constant(self._special_ids if skipped is None else skipped, tf.int32),
                axis=1,
            )
            ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(~special))
        return ids, single
