"""Generated ids to text: the tokenizer's decode, and stop strings.

A stop string ends a generated text where it first begins and is cut with everything after
it (``transformers``' ``generate`` stops there too but keeps the string and the rest of the
token that completed it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["cut_at_stop_strings", "new_text", "stop_prefix_length"]


def new_text(tokenizer: Any, ids: Sequence[int]) -> str:
    """The text of ``ids``, special tokens skipped, as the tokenizer's ``detokenize`` gives it
    (bytes that are no whole UTF-8 character become U+FFFD, as the reference tokenizers do)."""
    if not ids:
        return ""
    text = tokenizer.detokenize([list(ids)], skip_special_tokens=True)
    return text.numpy()[0].decode("utf-8", errors="replace")


def cut_at_stop_strings(text: str, stop_strings: Sequence[str]) -> str:
    """``text`` up to the earliest of ``stop_strings`` in it (all of it when none occurs)."""
    cut = len(text)
    for stop in stop_strings:
        at = text.find(stop)
        if at != -1:
            cut = min(cut, at)
    return text[:cut]


def stop_prefix_length(text: str, stop_strings: Sequence[str]) -> int:
    """The length of the longest end of ``text`` that begins some stop string (the text a
    stream holds back until the next tokens tell whether a stop string follows)."""
    longest = 0
    for stop in stop_strings:
        for size in range(min(len(stop) - 1, len(text)), longest, -1):
            if stop.startswith(text[len(text) - size :]):
                longest = size
                break
    return longest
