"""SentencePiece tokenizers in the TensorFlow graph (ALBERT's, T5's; Llama 2's, Mistral's and
Gemma's byte-fallback models), with the reference's ids.

:class:`SentencePieceTokenizer` turns raw strings into the ids of a SentencePiece model (a
``spiece.model`` or ``tokenizer.model``) and packs them with static shapes, in one of three
styles. Every step is a TensorFlow op (no ``tf.py_function``):
``tensorflow_text.SentencepieceTokenizer`` runs the model (the SentencePiece C++ library, with
the model's own normalization), so the tokenizer runs eagerly, inside ``tf.function`` and
``tf.data`` pipelines, and is exported with a model in a SavedModel.

The references:

* ``"t5"``: the ``sentencepiece`` library's ``encode(text)``, nothing before it; Hugging Face's
  slow ``T5Tokenizer`` (transformers 4, default ``legacy``) gives the same ids.
* ``"llama"``: the ``sentencepiece`` library's ``encode(text)`` on a model with byte fallback
  (characters the vocabulary lacks become ``<0xNN>`` byte pieces), whatever its normalizer
  says (Llama 2 and Mistral add a dummy prefix, Gemma does not: the model holds it, and
  ``tensorflow_text`` follows it); ``decode`` of the library too
  (:mod:`~texkit.data.tokenizers.sentencepiece_decode`). :meth:`SentencePieceTokenizer.encode`
  adds BOS and EOS as Hugging Face's ``LlamaTokenizer`` and ``GemmaTokenizer``
  (``add_bos_token``, default true, ``add_eos_token``, default false, from the folder's
  ``tokenizer_config.json``). Hugging Face's fast tokenizers (the ``tokenizer.json`` these
  folders also hold) give the same ids except on whitespace at the start of a text (all three
  test models), runs of whitespace the model holds as pieces (Gemma) and a ``▁`` written in
  the text: there the ids are the library's, which the model was trained with.

  Added tokens written in a text (the folder's ``added_tokens_decoder``: ``<s>``, ``[INST]``,
  ``<|user|>``, ``<start_of_turn>``; and the special tokens) are kept whole, as Hugging Face's
  tokenizers (transformers 5) do: cut out first, the longest at the leftmost place, with the
  whitespace their ``lstrip`` / ``rstrip`` take (:mod:`~texkit.data.tokenizers.added_tokens`);
  the text between them goes to SentencePiece. The text before the first is encoded as the
  library does; the text after one gets the model's dummy prefix ``▁`` only with ``legacy``
  true in ``tokenizer_config.json``, and not when it begins with a space (``"<s>Hi"`` and
  ``"<s> Hi"``: ``<s> ▁Hi``), never with ``legacy`` false or absent (``"<s>Hi"``: ``<s> H
  i``): Hugging Face's ``Metaspace`` ``prepend_scheme`` ``"always"`` or ``"first"``. A model
  that removes extra whitespace encodes each part as the library does. Checked on 1,033 texts
  of five folders (Llama 2 with either ``legacy``, Phi-3, Mistral, Gemma) and their chat
  templates; Hugging Face's ids differ only on Gemma's runs of spaces, as above.
* ``"albert"``: Hugging Face's slow ``AlbertTokenizer`` (transformers 4: Python, on the
  ``sentencepiece`` library) with its defaults ``do_lower_case=True``, ``remove_space=True``,
  ``keep_accents=False``, and with the other values of the three: its text before
  SentencePiece and its split of the pieces that end with a digit and a comma, in
  :mod:`texkit.data.tokenizers.albert_text`.

:meth:`SentencePieceTokenizer.detokenize` is the ``sentencepiece`` package's ``decode`` in
every style, in TensorFlow ops of texkit's own
(:mod:`~texkit.data.tokenizers.sentencepiece_decode`): ``tensorflow_text``'s ``detokenize``
drops every space at the start of a text, which the package does only for a model that removes
extra whitespace (ALBERT's, T5's), not for one that only adds a dummy prefix.

Known differences from the references, all rare or deliberate:

* ``tensorflow_text`` 2.21 builds in its own SentencePiece library, which breaks ties between
  segmentations of exactly the same score otherwise than the ``sentencepiece`` 0.2.3 package:
  in a run of a letter that the vocabulary has single and doubled (``lll``: ``l`` + ``ll`` or
  ``ll`` + ``l``) the two give the same pieces in another order. 1 of the 10,257 texts of the
  tests, for T5 (none for ALBERT, none of 10,202 for the three byte-fallback models).
* ``"albert"``, ``"t5"``: the strings of special tokens in a text (``"[CLS]"``, ``"</s>"``)
  are ordinary text, as in the ``sentencepiece`` library and Google's ALBERT; Hugging Face's
  tokenizers turn them into their ids (``"llama"`` does too, above).
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
:data:`texkit.files.MAX_CONFIG_BYTES`, read strictly (:func:`texkit.files.read_json`): see
:mod:`texkit.data.tokenizers.sentencepiece_files`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf
import tensorflow_text as tf_text

from texkit.data.tokenizers.added_tokens import added_token_pattern, around_added
from texkit.data.tokenizers.albert_text import (
    ALBERT_OPTIONS,
    albert_preprocess,
    digit_comma_expansion,
)
from texkit.data.tokenizers.chat_templates import ChatTemplateMixin
from texkit.data.tokenizers.sentencepiece_decode import PieceDecoder
from texkit.data.tokenizers.sentencepiece_files import (
    _CONTROL,
    _UNKNOWN,
    _folder_settings,
    _llama_cut,
    _llama_specials,
    _read_model,
    _unknown_runs,
    _without_dummy_prefix,
)
from texkit.data.tokenizers.sentencepiece_options import STYLES, _albert_options, _llama_options
from texkit.data.tokenizers.templated import TemplateTokenizer, setting, special_id
from texkit.data.tokenizers.unknown_runs import cut_unknown_runs

__all__ = ["STYLES", "SentencePieceTokenizer"]


# --- the class -----------------------------------------------------------------------------------


class SentencePieceTokenizer(ChatTemplateMixin, TemplateTokenizer):
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
    * ``"llama"``: SentencePiece between the added tokens; ``<s> A`` and ``<s> A <s> B``
      (``add_eos_token``: ``<s> A </s>``, ``<s> A </s> <s> B </s>``; without ``add_bos_token``
      no ``<s>``), padded with the pad token, else EOS; ``segment_ids`` 1 for the second
      text's part, as Hugging Face's ``LlamaTokenizer`` and ``GemmaTokenizer``.

    Args:
        model_file: A SentencePiece model (``spiece.model``, ``tokenizer.model``; local or any
            ``tf.io.gfile`` path). ``"albert"`` needs the pieces ``[CLS]``, ``[SEP]`` and
            ``<pad>``, ``"t5"`` ``</s>`` and ``<pad>``, ``"llama"`` the BOS and EOS it adds.
        style: ``"albert"``, ``"t5"`` or ``"llama"``, as above.
        max_seq_length: Length of :meth:`encode`'s outputs, special tokens included (512 by
            default, as both models).
        do_lower_case: ``"albert"`` only: lowercase (``None``: ``True``, ALBERT's default).
        keep_accents: ``"albert"`` only: skip NFKD and the deletion of combining marks
            (``None``: ``False``).
        remove_space: ``"albert"`` only: strip the text and make each whitespace run one space
            (``None``: ``True``).
        add_bos_token: ``"llama"`` only: :meth:`encode` adds BOS (``None``: ``True``).
        add_eos_token: ``"llama"`` only: :meth:`encode` adds EOS (``None``: ``False``).
        special_tokens: ``"llama"`` only: the text of the ``"bos"``, ``"eos"``, ``"unk"`` and
            ``"pad"`` tokens (``None``: none); a role left out is the model's own piece
            (``bos_piece``... of its ``trainer_spec``) when the model has it as a control piece.
        added_tokens: ``"llama"`` only: ``{id: (text, special)}`` or ``{id: (text, special,
            lstrip, rstrip)}``, Hugging Face's ``added_tokens_decoder``: an id of the model
            must be its piece; a special token after the model's pieces extends the vocabulary
            (a pad token a fine-tune added); special tokens are skipped by :meth:`detokenize`.
            Written in a text, these and the special tokens are kept whole (see the module).
        legacy: ``"llama"`` only: Hugging Face's ``legacy``: whether the text after an added
            token gets SentencePiece's ``▁`` before it (``None``: ``False``, transformers 5's
            default).
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

        A byte-fallback model (the Llama-2-like one of the tests): characters the vocabulary
        lacks become byte pieces, and :meth:`encode` adds ``<s>`` (and pads with ``</s>``: the
        folder names no pad token).

        >>> llama = tx.data.SentencePieceTokenizer.from_pretrained(
        ...     "tests/fixtures/sentencepiece_byte/llama", max_seq_length=8
        ... )
        >>> [llama.id_to_token(i) for i in llama.tokenize("God 神").numpy()]
        ['▁God', '▁', '<0xE7>', '<0xA5>', '<0x9E>']
        >>> llama.encode("God 神")["input_ids"].numpy()
        array([  1, 478, 934, 234, 168, 161,   2,   2], dtype=int32)
        >>> llama.detokenize(llama.tokenize("God 神")).numpy().decode()
        'God 神'
    """

    _source_arg = "model_file"
    _entry = "piece"
    _repr_files = ("model_file",)
    _repr_settings = ("style", "max_seq_length", *ALBERT_OPTIONS, "add_bos_token", "add_eos_token")

    def __init__(
        self,
        model_file: str | os.PathLike,
        style: str,
        max_seq_length: int = 512,
        do_lower_case: bool | None = None,
        keep_accents: bool | None = None,
        remove_space: bool | None = None,
        add_bos_token: bool | None = None,
        add_eos_token: bool | None = None,
        special_tokens: Mapping[str, str | None] | None = None,
        added_tokens: Mapping[int, tuple] | None = None,
        legacy: bool | None = None,
        name: str = "sentencepiece_tokenizer",
    ):
        super().__init__(name=name)
        options = _albert_options(
            style, do_lower_case=do_lower_case, keep_accents=keep_accents, remove_space=remove_space
        )
        flags = _llama_options(
            style, add_bos_token, add_eos_token, special_tokens, added_tokens, legacy
        )
        self._settings = {"model_file": os.fspath(model_file), "style": style, **options, **flags}
        model, pieces, specs = _read_model(self.model_file)
        # "llama": the dummy prefix written as a space where Hugging Face has one (the model
        # then adds none), unless the model removes extra whitespace (leading spaces too).
        self._prefix = style == "llama" and specs["add_dummy_prefix"]
        self._prefix &= not specs["remove_extra_whitespaces"]
        if self._prefix:
            model = _without_dummy_prefix(model)
        if style == "llama":
            template = self._set_llama(pieces, specs, special_tokens or {}, added_tokens or {})
        else:
            template = self._set_albert_t5(pieces, style)
            self._decoder = PieceDecoder(pieces, specs, [], set(self._special_ids))
        # ALBERT: B [SEP] is segment 1; Llama: <s> B </s> is segment 1; T5 has no segments.
        self._set_template(template, int(style != "t5"), max_seq_length, f"style={style!r}")
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            model=model, out_type=tf.int32, add_bos=False, add_eos=False, reverse=False
        )
        self._unknown_run = _unknown_runs(pieces, specs, self.model_file)
        # ALBERT's split of the pieces that end with a digit and a comma: each id's ids.
        self._expansion = None
        if style == "albert":
            with tf.init_scope():
                self._expansion = digit_comma_expansion(model, self._tokens, self._ids, self.unk_id)
        self._compile()

    def _set_albert_t5(
        self, pieces: list[tuple[str, float, int]], style: str
    ) -> tuple[tuple[int, ...], ...]:
        """The vocabulary and special ids of ALBERT's or T5's style, and its template."""
        self._set_vocabulary([piece for piece, _, _ in pieces])
        needs = f"style={style!r} needs"
        self._special = {
            "pad": self._required("<pad>", needs),
            "unk": next(i for i, (_, _, kind) in enumerate(pieces) if kind == _UNKNOWN),
            "bos": None,
        }
        if style == "albert":
            cls_id, sep_id = self._required("[CLS]", needs), self._required("[SEP]", needs)
            self._special.update(cls=cls_id, sep=sep_id, mask=self._ids.get("[MASK]"), eos=None)
            # [first prefix, first suffix, second prefix, second suffix] of encode.
            template = ((cls_id,), (sep_id,), (), (sep_id,))
        else:
            eos_id = self._required("</s>", needs)
            self._special.update(cls=None, sep=None, mask=None, eos=eos_id)
            template = ((), (eos_id,), (), (eos_id,))
        self._special["pad_token"] = self._special["pad"]
        controls = {i for i, (_, _, kind) in enumerate(pieces) if kind == _CONTROL}
        self._special_ids = tuple(sorted({*controls, self.pad_id}))
        return template

    def _set_llama(
        self,
        pieces: list[tuple[str, float, int]],
        specs: dict[str, Any],
        special_tokens: Mapping[str, str | None],
        added_tokens: Mapping[int, tuple],
    ) -> tuple[tuple[int, ...], ...]:
        """The vocabulary, special ids, decoder, template and added tokens of the ``"llama"``
        style."""
        vocabulary, special, special_added = _llama_specials(
            pieces, specs, dict(special_tokens), dict(added_tokens), self.model_file
        )
        self._set_vocabulary(vocabulary)
        for flag, role in (("add_bos_token", "bos"), ("add_eos_token", "eos")):
            if self._settings[flag] and special[role] is None:
                raise ValueError(
                    f"SentencePieceTokenizer: {flag} is true but model_file "
                    f"{self.model_file!r} has no {role} token (give special_tokens={{{role!r}: "
                    f"...}} or {flag}=False)"
                )
        # Padding: the pad token, else EOS (a control piece, skipped as padding is), else <unk>.
        pad = next(
            i for i in (special["pad_token"], special["eos"], special["unk"]) if i is not None
        )
        self._special = {**special, "pad": pad, "cls": None, "sep": None, "mask": None}
        controls = {i for i, (_, _, kind) in enumerate(pieces) if kind == _CONTROL}
        # <unk> decodes as the library's " ⁇ " even when added_tokens_decoder marks it special.
        skipped = {*controls, *special_added, pad} - {special["unk"]}
        self._special_ids = tuple(sorted(skipped))
        added = [token or "" for token in vocabulary[len(pieces) :]]
        self._decoder = PieceDecoder(pieces, specs, added, set(self._special_ids))
        with tf.init_scope():
            self._added = added_token_pattern(_llama_cut(added_tokens, special, vocabulary))
        bos = (special["bos"],) if self._settings["add_bos_token"] else ()
        eos = (special["eos"],) if self._settings["add_eos_token"] else ()
        return (bos, eos, bos, eos)

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, style: str | None = None, **kwargs: Any
    ) -> SentencePieceTokenizer:
        """The tokenizer of a folder holding ``spiece.model`` (ALBERT's and T5's Hugging Face
        folders), ``tokenizer.model`` (Llama 2's, Mistral's, Gemma's) or a single other
        ``*.model``.

        The folder's ``tokenizer_config.json`` (Hugging Face), when there is one, gives the
        ``"albert"`` options ``do_lower_case``, ``keep_accents`` and ``remove_space`` that
        ``kwargs`` do not; a value that is not a bool, ``sp_model_kwargs`` that are not empty
        (sampling) and ``add_prefix_space: false`` are refused. For ``"llama"``, it and
        ``special_tokens_map.json`` give ``add_bos_token``, ``add_eos_token``, ``legacy``, the
        special tokens and the added tokens with their ``lstrip`` and ``rstrip``
        (:func:`~texkit.data.tokenizers.tokenizer_config.read_tokenizer_config`,
        :func:`~texkit.data.tokenizers.added_tokens.added_token_flags`).

        Args:
            path: The folder (local or any ``tf.io.gfile`` path).
            style: ``"albert"``, ``"t5"`` or ``"llama"``; ``None``: from ``tokenizer_class`` in
                ``tokenizer_config.json`` (``AlbertTokenizer``, ``T5Tokenizer``,
                ``LlamaTokenizer``, ``GemmaTokenizer``, or their ``Fast``), else ``model_type``
                in ``config.json`` (``albert``, ``t5``, ``mt5``, ``umt5``, ``llama``,
                ``mistral``, ``gemma``...), else ``"llama"`` for a ``tokenizer.model``.
            **kwargs: The other arguments of :class:`SentencePieceTokenizer`.
        """
        model_file, style, kwargs = _folder_settings(path, style, kwargs)
        tokenizer = cls(model_file, style=style, **kwargs)
        if style == "llama":  # the chat models' folders
            tokenizer.attach_chat_templates(os.path.dirname(model_file))
        return tokenizer

    # --- Python-side facts -------------------------------------------------------------------

    model_file = setting("model_file")
    style = setting("style")
    do_lower_case = setting("do_lower_case", """ALBERT's option (``None`` for ``"t5"``).""")
    keep_accents = setting("keep_accents", """ALBERT's option (``None`` for ``"t5"``).""")
    remove_space = setting("remove_space", """ALBERT's option (``None`` for ``"t5"``).""")

    unk_id = special_id("unk", "``<unk>``.")
    cls_id = special_id("cls", """``[CLS]`` (``None`` for ``"t5"``).""")
    sep_id = special_id("sep", """``[SEP]`` (``None`` for ``"t5"``).""")
    mask_id = special_id("mask", """``[MASK]`` (``None`` for ``"t5"`` or a model without it).""")
    eos_id = special_id("eos", """``</s>`` (``None`` for ``"albert"``).""")
    add_bos_token = setting("add_bos_token", """``"llama"``: whether encode adds BOS.""")
    add_eos_token = setting("add_eos_token", """``"llama"``: whether encode adds EOS.""")
    bos_token_id = special_id("bos", """``"llama"``: the BOS token (``None`` if none).""")
    eos_token_id = special_id("eos", """The EOS token (``None`` if none): as :attr:`eos_id`.""")
    pad_token_id = special_id(
        "pad_token",
        """The pad token the folder names (``None`` if none: ``"llama"`` then pads with
        :attr:`pad_id`, the EOS token).""",
    )

    # --- graph ops ---------------------------------------------------------------------------

    def detokenize(self, ids: Any, skip_special_tokens: bool = True) -> tf.Tensor:
        """Ids back to text, as the ``sentencepiece`` library's ``decode``.

        With ``skip_special_tokens``: the pieces joined, ``▁`` as spaces, ``<unk>`` as the
        model's ``unk_surface`` (`` ⁇ ``), the control pieces, the padding and (``"llama"``)
        the special added tokens as nothing, byte pieces reassembled into UTF-8 (one U+FFFD per
        byte of a run that is not UTF-8), and the space of the dummy prefix dropped: only the
        first piece's (all the leading ones for a model that removes extra whitespace), in
        TensorFlow ops (:mod:`~texkit.data.tokenizers.sentencepiece_decode`, which says why
        not ``tensorflow_text``'s ``detokenize``). The text is the one SentencePiece saw: for
        ``"albert"``, lowercased and without accents.

        Args:
            ids: ``[time]`` or ``[batch, time]`` ids: a list, an array, a tensor or a ragged
                tensor.
            skip_special_tokens: Drop the ids of :attr:`special_ids` (as ``decode`` does: they
                still end a run of byte pieces); otherwise every id gives its piece's text
                (``[CLS]``, ``</s>``, ``<pad>``, ``<unk>`` too), ``▁`` as spaces, less the
                text's first space when the model adds a dummy prefix.

        Returns:
            A string tensor: a scalar for ``[time]`` ids, ``[batch]`` otherwise.
        """
        ids, single = self._id_rows(ids, skip_special_tokens=False)
        text = self._decoder.decode(ids, skip_special_tokens)
        return text[0] if single else text

    # --- the work ----------------------------------------------------------------------------

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[batch]`` strings to ``[batch, (tokens)]`` int32 ids (a ``tf.function``)."""
        texts = tf.strings.unicode_transcode(
            texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        if self.style == "albert":
            texts = self._albert_preprocess(texts)
        if self.style == "llama":
            return around_added(texts, self._added, self._part_ids)
        return self._piece_ids(texts)

    def _part_ids(self, texts: tf.Tensor, first: tf.Tensor) -> tf.RaggedTensor:
        """``"llama"``: the ids of ``[n]`` texts between added tokens; ``first``: which are the
        start of a text. With a dummy prefix, a space before the start of a text (as the
        library), and with ``legacy`` before a text after an added token that does not begin
        with a space or a ``▁`` (as Hugging Face's ``Metaspace``)."""
        if self._prefix:
            space = first
            if self._settings["legacy"]:
                space |= ~tf.strings.regex_full_match(texts, "(?s)[ \u2581].*")
            space &= tf.strings.length(texts) > 0
            texts = tf.where(space, tf.strings.join([" ", texts]), texts)
        return self._piece_ids(texts)

    def _piece_ids(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """``[n]`` texts to their ``[n, (tokens)]`` ids with SentencePiece."""
        if self._unknown_run is not None:
            texts = cut_unknown_runs(texts, self._unknown_run)
        ids = self._sentencepiece.tokenize(texts)
        ids = tf.RaggedTensor.from_row_splits(
            tf.cast(ids.flat_values, tf.int32), tf.cast(ids.row_splits, tf.int64)
        )
        if self._expansion is not None:
            parts = tf.gather(self._expansion, ids.flat_values)
            ids = tf.RaggedTensor.from_row_splits(parts, ids.row_splits).merge_dims(1, 2)
        return ids

    def _albert_preprocess(self, texts: tf.Tensor) -> tf.Tensor:
        """The slow ``AlbertTokenizer``'s text before SentencePiece, with this tokenizer's
        options (:func:`~texkit.data.tokenizers.albert_text.albert_preprocess`)."""
        return albert_preprocess(texts, self._settings)
