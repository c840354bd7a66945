"""Argument checks shared by the BERT pretraining steps, with errors that name the argument."""

from __future__ import annotations

from typing import Any

import numpy as np


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_rate(name: str, value: Any, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not (0.0 < value <= 1.0 if low_open else 0.0 <= value <= 1.0):
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return float(value)
