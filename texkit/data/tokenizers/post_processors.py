"""The post-processor of a Hugging Face ``tokenizer.json`` as texkit's packing template.

``encode`` adds the special tokens the post-processor of the file adds, as Hugging Face's fast
tokenizer does: :func:`read_template` turns it into the template of
:class:`~texkit.data.tokenizers.templated.TemplateTokenizer` (first prefix, first suffix,
second prefix, second suffix; the second part's segment id). Read:

* ``null`` and ``ByteLevel`` (which only moves offsets): no special tokens;
* ``TemplateProcessing``: ``single`` is ``prefix $A suffix``; ``pair`` must begin as ``single``
  does and hold ``$B`` after it (Llama 3: ``<|begin_of_text|> $A <|begin_of_text|>:1 $B:1``);
  the tokens from the end of ``single``'s suffix to the end are the second part, of ``$B``'s
  type id, and the ones before of type 0 (another layout is refused);
* ``RobertaProcessing`` (``<s> A </s></s> B </s>``, all type 0) and ``BertProcessing``
  (``[CLS] A [SEP] B [SEP]``, ``B [SEP]`` of type 1);
* a ``Sequence`` of these, at most one of them adding tokens.
"""

from __future__ import annotations

from typing import Any

__all__ = ["read_template"]

_NONE = ((), (), (), ())


def read_template(
    fields: Any, post_processor: Any, token_ids: dict[str, int]
) -> tuple[tuple[tuple[int, ...], ...], int]:
    """The template and second segment id of ``post_processor`` (``fields``: the reader of
    :mod:`~texkit.data.tokenizers.tokenizer_json`, whose errors name the file and field;
    ``token_ids``: the file's tokens and added tokens, by text)."""
    if post_processor is None:
        return _NONE, 1
    field = "post_processor"
    fields.require(isinstance(post_processor, dict), field, "must be null or a JSON object")
    steps = [(post_processor, field)]
    if post_processor.get("type") == "Sequence":
        listed = fields.get(post_processor, "processors", f"{field}.processors", list)
        steps = [(step, f"{field}.processors[{i}]") for i, step in enumerate(listed)]
    found = [_one(fields, step, where, token_ids) for step, where in steps]
    adding = [result for result in found if result[0] != _NONE]
    fields.require(len(adding) <= 1, field, "holds more than one processor that adds tokens")
    return adding[0] if adding else (_NONE, 1)


def _one(
    fields: Any, step: Any, field: str, token_ids: dict[str, int]
) -> tuple[tuple[tuple[int, ...], ...], int]:
    fields.require(isinstance(step, dict), field, "must be a JSON object")
    kind = step.get("type")
    if kind == "ByteLevel":
        return _NONE, 1
    if kind in ("RobertaProcessing", "BertProcessing"):
        ends = []
        for key in ("cls", "sep"):
            pair = fields.get(step, key, f"{field}.{key}", list)
            fields.require(
                len(pair) == 2 and isinstance(pair[1], int), f"{field}.{key}", "must be [token, id]"
            )
            ends.append((pair[1],))
        cls, sep = ends
        if kind == "RobertaProcessing":
            return (cls, sep, sep, sep), 0
        return (cls, sep, (), sep), 1
    fields.require(
        kind == "TemplateProcessing",
        f"{field}.type",
        f"is {kind!r}; texkit reads TemplateProcessing, RobertaProcessing, BertProcessing, "
        "ByteLevel or a Sequence of them",
    )
    specials = fields.get(step, "special_tokens", f"{field}.special_tokens", dict)
    single = _items(fields, step, "single", field, specials)
    pair = _items(fields, step, "pair", field, specials)
    return _layout(fields, single, pair, field)


def _items(
    fields: Any, step: dict, key: str, field: str, specials: dict
) -> list[tuple[str, tuple[int, ...], int]]:
    """``step[key]`` as ``(kind, ids, type id)``: kind ``"A"``, ``"B"`` or ``"special"``."""
    items = []
    for index, item in enumerate(fields.get(step, key, f"{field}.{key}", list)):
        where = f"{field}.{key}[{index}]"
        fields.require(isinstance(item, dict) and len(item) == 1, where, "must hold one entry")
        ((kind, body),) = item.items()
        name = fields.get(body, "id", f"{where}.{kind}.id", str)
        type_id = fields.get(body, "type_id", f"{where}.{kind}.type_id", int)
        if kind == "Sequence":
            fields.require(name in ("A", "B"), f"{where}.Sequence.id", "must be 'A' or 'B'")
            items.append((name, (), type_id))
            continue
        fields.require(kind == "SpecialToken", where, "must be a Sequence or a SpecialToken")
        fields.require(
            name in specials, f"{where}.SpecialToken.id", f"names {name!r}, not in special_tokens"
        )
        ids = fields.get(specials[name], "ids", f"{field}.special_tokens.{name}.ids", list)
        fields.require(
            all(isinstance(i, int) and not isinstance(i, bool) for i in ids),
            f"{field}.special_tokens.{name}.ids",
            "must be a list of ints",
        )
        items.append(("special", tuple(ids), type_id))
    return items


def _layout(fields: Any, single: list, pair: list, field: str):
    """``single`` and ``pair`` as texkit's template (see the module), or an error."""
    kinds = [kind for kind, _, _ in single if kind != "special"]
    fields.require(kinds == ["A"], f"{field}.single", "must hold $A once and no $B")
    where = next(i for i, (kind, _, _) in enumerate(single) if kind == "A")
    prefix = tuple(i for _, ids, _ in single[:where] for i in ids)
    suffix = tuple(i for _, ids, _ in single[where + 1 :] for i in ids)
    fields.require(
        all(type_id == 0 for _, _, type_id in single), f"{field}.single", "must be of type id 0"
    )
    layout = "texkit packs a pair as single's prefix $A suffix, then the second part"
    kinds = [kind for kind, _, _ in pair if kind != "special"]
    fields.require(kinds == ["A", "B"], f"{field}.pair", "must hold $A then $B")
    a = next(i for i, (kind, _, _) in enumerate(pair) if kind == "A")
    b = next(i for i, (kind, _, _) in enumerate(pair) if kind == "B")
    between = tuple(i for _, ids, _ in pair[a + 1 : b] for i in ids)
    fields.require(
        tuple(i for _, ids, _ in pair[:a] for i in ids) == prefix
        and between[: len(suffix)] == suffix,
        f"{field}.pair",
        f"does not begin as single; {layout}",
    )
    second_type = pair[b][2]
    types = [t for _, ids, t in pair for _ in (ids or (None,))]
    expected = [0] * (len(prefix) + 1 + len(suffix))
    expected += [second_type] * (len(types) - len(expected))
    fields.require(types == expected, f"{field}.pair", f"has other type ids; {layout}")
    second_prefix = between[len(suffix) :]
    second_suffix = tuple(i for _, ids, _ in pair[b + 1 :] for i in ids)
    return (prefix, suffix, second_prefix, second_suffix), second_type
