"""The arguments of :class:`~texkit.data.tokenizers.SentencePieceTokenizer`, checked: its style,
ALBERT's options and the ``"llama"`` flags, with their defaults."""

from __future__ import annotations

from collections.abc import Mapping

from texkit.data.tokenizers.albert_text import ALBERT_OPTIONS

__all__ = ["STYLES"]

STYLES = ("albert", "t5", "llama")


def _albert_options(style: str, **options: bool | None) -> dict[str, bool | None]:
    """ALBERT's options, checked, with their defaults for ``"albert"`` (``None`` for ``"t5"``);
    ``style`` checked too."""
    if style not in STYLES:
        raise ValueError(f"SentencePieceTokenizer: style must be one of {STYLES}, got {style!r}")
    for option, value in options.items():
        if value is None:
            options[option] = ALBERT_OPTIONS[option] if style == "albert" else None
        elif style != "albert":
            raise ValueError(
                f"SentencePieceTokenizer: {option} is ALBERT's preprocessing; style={style!r} "
                "has none (leave it None)"
            )
        elif not isinstance(value, bool):
            raise TypeError(
                f"SentencePieceTokenizer: {option} must be a bool or None, got {value!r}"
            )
    return options


def _llama_options(
    style: str,
    add_bos_token: bool | None,
    add_eos_token: bool | None,
    special_tokens: Mapping[str, str | None] | None,
    added_tokens: Mapping[int, tuple] | None,
    legacy: bool | None = None,
) -> dict[str, bool | None]:
    """The ``"llama"`` flags, checked, with Hugging Face's ``LlamaTokenizer`` defaults (BOS
    added, EOS not, ``legacy`` false as in transformers 5); ``None`` for the other styles,
    which take none of these arguments."""
    given = {"add_bos_token": add_bos_token, "add_eos_token": add_eos_token, "legacy": legacy}
    if style != "llama":
        extra = {"special_tokens": special_tokens, "added_tokens": added_tokens, **given}
        named = [key for key, value in extra.items() if value is not None]
        if named:
            raise ValueError(
                f"SentencePieceTokenizer: {', '.join(named)} belong to style='llama'; "
                f"style={style!r} has its own special tokens (leave them None)"
            )
        return dict.fromkeys(given)
    for flag, value in given.items():
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"SentencePieceTokenizer: {flag} must be a bool or None, got {value!r}")
    roles = ("bos", "eos", "unk", "pad")
    for role, text in (special_tokens or {}).items():
        if role not in roles or (text is not None and not isinstance(text, str)):
            raise ValueError(
                f"SentencePieceTokenizer: special_tokens maps {roles} to a token's text or None, "
                f"got {role!r}: {text!r}"
            )
    for token_id, entry in (added_tokens or {}).items():
        kinds = (str, bool, bool, bool)
        if not (
            isinstance(entry, tuple)
            and len(entry) in (2, 4)
            and all(isinstance(v, kind) for v, kind in zip(entry, kinds, strict=False))
        ):
            raise ValueError(
                "SentencePieceTokenizer: added_tokens maps ids to (text, special) or (text, "
                f"special, lstrip, rstrip), got {token_id!r}: {entry!r}"
            )
    return {
        "add_bos_token": True if add_bos_token is None else add_bos_token,
        "add_eos_token": False if add_eos_token is None else add_eos_token,
        "legacy": bool(legacy),
    }
