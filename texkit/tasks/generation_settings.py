"""The settings of one ``generate`` call, checked before anything runs.

:class:`GenerationSettings` holds what a call asks for (a strategy and its options, the length,
the end tokens, stop strings); :func:`settings_from` merges a call's arguments over a task's
defaults (its ``generation`` hparams, themselves read from a checkpoint folder's
``generation_config.json`` by ``from_pretrained``) and checks them, naming the argument that is
wrong.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from texkit.tasks.generation_loops import EARLY_STOPPING

__all__ = ["STRATEGIES", "GenerationSettings", "settings_from"]

STRATEGIES = ("greedy", "sample", "beam")


@dataclass(frozen=True)
class GenerationSettings:
    """One ``generate`` call's settings (see :meth:`texkit.tasks.CausalLM.generate`)."""

    max_new_tokens: int = 32
    strategy: str = "greedy"
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    beam_width: int = 4
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    end_token_ids: tuple[int, ...] = ()
    stop_strings: tuple[str, ...] = ()
    seed: int | None = None

    def compiled_key(self) -> tuple:
        """What a compiled generation function depends on (the seed is one of its inputs)."""
        if self.strategy == "greedy":
            options: tuple = ()
        elif self.strategy == "sample":
            options = (self.temperature, self.top_k, self.top_p)
        else:  # the length penalty and early stopping are inputs
            options = (self.beam_width,)
        return (self.strategy, self.max_new_tokens, self.end_token_ids, options)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _ids(name: str, value: Any, vocab_size: int | None) -> tuple[int, ...]:
    if value is None:
        return ()
    values = [value] if _is_int(value) else value
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise ValueError(f"{name} must be an id or a list of ids, got {value!r}")
    for i in values:
        if not _is_int(i) or i < 0 or (vocab_size is not None and i >= vocab_size):
            raise ValueError(f"{name}: ids must be ints in [0, {vocab_size}), got {i!r}")
    return tuple(int(i) for i in values)


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, Sequence) or not all(isinstance(s, str) and s for s in values):
        raise ValueError(
            f"stop_strings must be a non-empty string or a list of them, got {value!r}"
        )
    return tuple(values)


def _check(settings: GenerationSettings) -> None:
    s = settings
    if not _is_int(s.max_new_tokens) or s.max_new_tokens <= 0:
        raise ValueError(f"max_new_tokens must be a positive int, got {s.max_new_tokens!r}")
    if s.strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {s.strategy!r}")
    if not isinstance(s.temperature, numbers.Real) or not s.temperature > 0:
        raise ValueError(f"temperature must be a positive number, got {s.temperature!r}")
    if not _is_int(s.top_k) or s.top_k < 0:
        raise ValueError(f"top_k must be an int >= 0 (0: no top-k filter), got {s.top_k!r}")
    if not isinstance(s.top_p, numbers.Real) or not 0 < s.top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {s.top_p!r}")
    if not _is_int(s.beam_width) or s.beam_width < 1:
        raise ValueError(f"beam_width must be a positive int, got {s.beam_width!r}")
    if not isinstance(s.length_penalty, numbers.Real):
        raise ValueError(f"length_penalty must be a number, got {s.length_penalty!r}")
    if (
        s.early_stopping not in EARLY_STOPPING
        or isinstance(s.early_stopping, int)
        and not (isinstance(s.early_stopping, bool))
    ):
        raise ValueError(f"early_stopping must be True, False or 'never', got {s.early_stopping!r}")
    if s.seed is not None and (not _is_int(s.seed) or not 0 <= s.seed < 2**31):
        raise ValueError(f"seed must be an int in [0, 2**31) or None, got {s.seed!r}")


def settings_from(
    defaults: Mapping[str, Any], arguments: Mapping[str, Any], vocab_size: int | None
) -> GenerationSettings:
    """A call's settings: ``arguments`` (the call's, ``None`` meaning "the default") over
    ``defaults`` (the task's ``generation`` hparams), checked.

    ``stop_token_ids`` add to the task's end tokens (``end_token_ids``, from the checkpoint's
    ``eos_token_id``).
    """
    known = {f for f in GenerationSettings.__dataclass_fields__} | {"stop_token_ids"}
    for name in list(defaults) + list(arguments):
        if name not in known:
            raise ValueError(f"generate: unknown setting {name!r}; known: {sorted(known)}")
    merged = {k: v for k, v in defaults.items() if v is not None}
    merged.update({k: v for k, v in arguments.items() if v is not None})
    ends = _ids("end_token_ids", merged.pop("end_token_ids", None), vocab_size)
    extra = _ids("stop_token_ids", merged.pop("stop_token_ids", None), vocab_size)
    merged["stop_strings"] = _strings(merged.get("stop_strings"))
    settings = replace(GenerationSettings(), **merged)
    settings = replace(settings, end_token_ids=tuple(dict.fromkeys(ends + extra)))
    _check(settings)
    return settings
