"""Reading a Hugging Face ``tokenizer.json`` of a byte-level BPE (GPT-2, Llama 3, Qwen2 and 3,
Mistral's Tekken), with errors that name the file and the field.

:func:`read_tokenizer_json` gives a :class:`TokenizerJson`: the BPE model (vocabulary, merges,
``ignore_merges``), the split pattern (a key of
:data:`~texkit.data.tokenizers.split_patterns.SPLIT_PATTERNS`, found by the exact regular
expression of the file's ``Split`` pre-tokenizer, or ``"gpt2"`` for ``ByteLevel`` with
``use_regex``), the normalizer, the added tokens and the template of the post-processor.
What texkit does not implement is refused, naming the field: another model type (WordPiece,
Unigram), BPE dropout, subword prefixes or suffixes, byte fallback, a pre-tokenizer other than
those two forms, ``add_prefix_space``, an unknown split pattern, a normalizer other than the
Unicode normal forms, a decoder other than ``ByteLevel``, an added token with ``single_word``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from texkit import files
from texkit.data.tokenizers.post_processors import read_template
from texkit.data.tokenizers.reading import quoted, shown
from texkit.data.tokenizers.split_patterns import SPLIT_PATTERNS, pattern_named

__all__ = ["AddedToken", "NORMALIZERS", "TokenizerJson", "read_tokenizer_json"]

# The normalizers texkit applies (tensorflow_text.normalize_utf8's forms).
NORMALIZERS = ("NFC", "NFKC", "NFD", "NFKD")


@dataclasses.dataclass(frozen=True)
class AddedToken:
    """An entry of ``added_tokens``: kept whole where it is written in a text.

    Attributes:
        content: Its text.
        id: Its id.
        special: Whether ``detokenize(..., skip_special_tokens=True)`` drops it.
        lstrip: Whether the whitespace before it is part of it (and dropped).
        rstrip: Whether the whitespace after it is part of it (and dropped).
        normalized: Whether it is found in the normalized text (after the tokens that are
            not, as the ``tokenizers`` library does).
    """

    content: str
    id: int
    special: bool
    lstrip: bool
    rstrip: bool
    normalized: bool


@dataclasses.dataclass(frozen=True)
class TokenizerJson:
    """What a byte-level BPE ``tokenizer.json`` holds (see the module).

    Attributes:
        path: The file.
        vocab: ``model.vocab``: each token to its id.
        merges: ``model.merges``, by rank.
        ignore_merges: ``model.ignore_merges``.
        split_pattern: The key of ``SPLIT_PATTERNS``.
        normalizer: ``None`` or one of :data:`NORMALIZERS`.
        added_tokens: ``added_tokens``.
        template: ``(first prefix, first suffix, second prefix, second suffix)`` ids of the
            post-processor.
        second_segment: The segment id of the second text's part.
    """

    path: str
    vocab: dict[str, int]
    merges: list[tuple[str, str]]
    ignore_merges: bool
    split_pattern: str
    normalizer: str | None
    added_tokens: tuple[AddedToken, ...]
    template: tuple[tuple[int, ...], ...]
    second_segment: int


class _Fields:
    """Reads the fields of one JSON file, each error naming the file and the field."""

    def __init__(self, path: str, owner: str):
        self.path = path
        self.owner = owner

    def error(self, field: str, problem: str) -> ValueError:
        return ValueError(f"{self.owner}: {self.path!r} field {field!r} {problem}")

    def get(self, value: dict[str, Any], key: str, field: str, kind: type | tuple) -> Any:
        if not isinstance(value, dict) or key not in value:
            raise self.error(field, "is missing")
        found = value[key]
        if not isinstance(found, kind) or (kind is int and isinstance(found, bool)):
            names = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise self.error(field, f"must be a {names}, got {shown(found)}")
        return found

    def flag(self, value: dict[str, Any], key: str, field: str, default: bool = False) -> bool:
        if key not in value or value[key] is None:
            return default
        return self.get(value, key, field, bool)

    def require(self, condition: bool, field: str, problem: str) -> None:
        if not condition:
            raise self.error(field, problem)


def read_tokenizer_json(path: str, owner: str) -> TokenizerJson:
    """The :class:`TokenizerJson` of the file ``path`` (``owner``: the class the errors
    name)."""
    data = files.read_json(
        path, limit=files.MAX_JSON_BYTES, context=owner, what="tokenizer file (MAX_JSON_BYTES)"
    )
    fields = _Fields(path, owner)
    fields.require(isinstance(data, dict), "(top level)", "must be a JSON object")
    model = fields.get(data, "model", "model", dict)
    kind = model.get("type", "BPE" if "merges" in model else None)
    fields.require(
        kind == "BPE",
        "model.type",
        f"is {shown(kind)}; texkit reads byte-level BPE tokenizer.json files only (SentencePiece "
        "folders: SentencePieceTokenizer)",
    )
    vocab, merges = _read_model(fields, model)
    added = _read_added_tokens(fields, data.get("added_tokens") or [], vocab)
    token_ids = {**vocab, **{token.content: token.id for token in added}}
    _check_decoder(fields, data.get("decoder"))
    template, second_segment = read_template(fields, data.get("post_processor"), token_ids)
    return TokenizerJson(
        path=path,
        vocab=vocab,
        merges=merges,
        ignore_merges=fields.flag(model, "ignore_merges", "model.ignore_merges"),
        split_pattern=_read_pre_tokenizer(fields, data.get("pre_tokenizer")),
        normalizer=_read_normalizer(fields, data.get("normalizer")),
        added_tokens=added,
        template=template,
        second_segment=second_segment,
    )


def _read_model(fields: _Fields, model: dict[str, Any]) -> tuple[dict[str, int], list]:
    """``model.vocab`` and ``model.merges`` (``"a b"`` strings or ``["a", "b"]`` pairs), and
    the options texkit does not implement refused."""
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        fields.require(
            model.get(key) in (None, ""),
            f"model.{key}",
            f"is {shown(model.get(key))}; texkit implements byte-level BPE without it (null)",
        )
    fields.require(
        not fields.flag(model, "byte_fallback", "model.byte_fallback"),
        "model.byte_fallback",
        "is true; a byte-level BPE needs no byte fallback",
    )
    vocab = fields.get(model, "vocab", "model.vocab", dict)
    seen: dict[int, str] = {}
    for token, token_id in vocab.items():
        fields.require(
            isinstance(token_id, int) and not isinstance(token_id, bool) and token_id >= 0,
            "model.vocab",
            f"gives {quoted(token)} the id {shown(token_id)}; ids must be ints >= 0",
        )
        fields.require(
            token_id not in seen,
            "model.vocab",
            f"gives the id {token_id} to {quoted(seen.get(token_id, ''))} and {quoted(token)}",
        )
        seen[token_id] = token
    merges = []
    for rank, merge in enumerate(fields.get(model, "merges", "model.merges", list)):
        field = f"model.merges[{rank}]"
        if isinstance(merge, str) and merge.count(" ") == 1:
            merge = merge.split(" ")
        fields.require(
            isinstance(merge, list) and len(merge) == 2 and all(isinstance(p, str) for p in merge),
            field,
            f'is {shown(merge)}; a merge is "left right" or ["left", "right"]',
        )
        for token in (merge[0], merge[1], merge[0] + merge[1]):
            fields.require(token in vocab, field, f"names {quoted(token)}, not in model.vocab")
        merges.append((merge[0], merge[1]))
    return vocab, merges


def _read_added_tokens(
    fields: _Fields, entries: Any, vocab: dict[str, int]
) -> tuple[AddedToken, ...]:
    """``added_tokens``: each one's text, id and flags (``single_word`` refused)."""
    fields.require(isinstance(entries, list), "added_tokens", "must be a list")
    tokens = []
    contents: dict[int, str] = {token_id: token for token, token_id in vocab.items()}
    for index, entry in enumerate(entries):
        field = f"added_tokens[{index}]"
        content = fields.get(entry, "content", f"{field}.content", str)
        token_id = fields.get(entry, "id", f"{field}.id", int)
        fields.require(content != "", f"{field}.content", "is empty")
        fields.require(
            contents.get(token_id, content) == content,
            f"{field}.id",
            f"is {token_id}, the id of {quoted(contents.get(token_id, ''))} too",
        )
        contents[token_id] = content
        fields.require(
            not fields.flag(entry, "single_word", f"{field}.single_word"),
            f"{field}.single_word",
            "is true, which texkit does not implement",
        )
        special = fields.flag(entry, "special", f"{field}.special")
        tokens.append(
            AddedToken(
                content=content,
                id=token_id,
                special=special,
                lstrip=fields.flag(entry, "lstrip", f"{field}.lstrip"),
                rstrip=fields.flag(entry, "rstrip", f"{field}.rstrip"),
                normalized=fields.flag(
                    entry, "normalized", f"{field}.normalized", default=not special
                ),
            )
        )
    return tuple(tokens)


def _read_pre_tokenizer(fields: _Fields, pre_tokenizer: Any) -> str:
    """The split pattern's name: ``ByteLevel`` with ``use_regex`` (GPT-2's), or ``Split`` of
    a known pattern (``Isolated``) then ``ByteLevel`` without it."""
    field = "pre_tokenizer"
    fields.require(isinstance(pre_tokenizer, dict), field, "must be a JSON object")
    steps = [pre_tokenizer]
    if pre_tokenizer.get("type") == "Sequence":
        steps = fields.get(pre_tokenizer, "pretokenizers", f"{field}.pretokenizers", list)
        field = f"{field}.pretokenizers"
    shapes = "ByteLevel with use_regex, or a Sequence of Split (Isolated) and ByteLevel"
    fields.require(
        1 <= len(steps) <= 2 and all(isinstance(step, dict) for step in steps),
        field,
        f"must be {shapes}",
    )
    last = f"{field}[{len(steps) - 1}]" if len(steps) > 1 or field != "pre_tokenizer" else field
    byte_level = steps[-1]
    fields.require(
        byte_level.get("type") == "ByteLevel",
        f"{last}.type",
        f"is {shown(byte_level.get('type'))}; texkit reads {shapes}",
    )
    fields.require(
        not fields.flag(byte_level, "add_prefix_space", f"{last}.add_prefix_space"),
        f"{last}.add_prefix_space",
        "is true, which texkit does not implement",
    )
    use_regex = fields.flag(byte_level, "use_regex", f"{last}.use_regex", default=True)
    if len(steps) == 1:
        fields.require(use_regex, f"{last}.use_regex", "is false, and no Split comes before")
        return "gpt2"
    fields.require(not use_regex, f"{last}.use_regex", "is true after a Split")
    split = steps[0]
    where = f"{field}[0]"
    fields.require(split.get("type") == "Split", f"{where}.type", f"must be Split ({shapes})")
    fields.require(
        split.get("behavior") == "Isolated" and not split.get("invert", False),
        f"{where}.behavior",
        f"is {shown(split.get('behavior'))} (invert {shown(split.get('invert'))}); texkit "
        "implements Isolated, not inverted",
    )
    pattern = fields.get(split, "pattern", f"{where}.pattern", dict)
    regex = fields.get(pattern, "Regex", f"{where}.pattern.Regex", str)
    name = pattern_named(regex)
    known = ", ".join(SPLIT_PATTERNS)
    fields.require(
        name is not None,
        f"{where}.pattern.Regex",
        f"is {quoted(regex, 200)}, not a pattern texkit knows ({known}: "
        "texkit.data.tokenizers.split_patterns.SPLIT_PATTERNS)",
    )
    return name


def _read_normalizer(fields: _Fields, normalizer: Any) -> str | None:
    """``None`` or a Unicode normal form (a ``Sequence`` of at most one of them)."""
    if normalizer is None:
        return None
    field = "normalizer"
    fields.require(isinstance(normalizer, dict), field, "must be null or a JSON object")
    if normalizer.get("type") == "Sequence":
        steps = fields.get(normalizer, "normalizers", f"{field}.normalizers", list)
        fields.require(len(steps) <= 1, f"{field}.normalizers", "must hold at most one normalizer")
        if not steps:
            return None
        normalizer, field = steps[0], f"{field}.normalizers[0]"
    kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
    fields.require(
        kind in NORMALIZERS,
        f"{field}.type",
        f"is {shown(kind)}; texkit implements no normalizer or one of {', '.join(NORMALIZERS)}",
    )
    return kind


def _check_decoder(fields: _Fields, decoder: Any) -> None:
    """The decoder must be ``ByteLevel`` (or none, as some files leave it)."""
    kind = decoder.get("type") if isinstance(decoder, dict) else decoder
    fields.require(
        kind in (None, "ByteLevel"),
        "decoder.type",
        f"is {shown(kind)}; a byte-level BPE decodes with ByteLevel",
    )
