"""FunctionReward: a user's function as a reward, in Python on the host or in TensorFlow.

* ``python=True`` (the default): the function runs on the host (``in_graph`` is ``False``, see
  :mod:`texkit.rewards.base`) on NumPy data, strings decoded to ``str``:
  ``fn(texts: list[str], features: dict[str, np.ndarray]) -> sequence of n floats`` over texts,
  ``fn(ids: np.ndarray [n, T], lengths: np.ndarray [n], features) -> ...`` over ids.
  ``features`` holds the samples' dense features (ragged and sparse ones are left out).
* ``python=False``: ``fn(samples: Samples) -> tf.Tensor [n]`` made of TensorFlow ops, run in the
  graph (``in_graph`` is ``True``; with XLA and on TPUs if its ops allow).

Either way the values are checked: floats (an int or bool result is refused rather than
converted), shape ``[n]``, finite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.rewards.base import Samples, register
from texkit.rewards.host import HostReward

__all__ = ["FunctionReward"]

_OVER = ("texts", "ids")
_FEATURE = "feature:"


@register
class FunctionReward(HostReward):
    """A reward computed by ``fn``.

    Args:
        fn: the function (see the module docstring for its signatures).
        over: ``"texts"`` or ``"ids"``: what a Python ``fn`` receives; with ``python=False``,
            ``"texts"`` only requires ``samples.texts`` to be given.
        python: run ``fn`` in Python on the host (``True``) or as TensorFlow ops of the samples
            (``False``).
        name: the name errors and logs use (default: the function's name).

    Example:
        >>> def short(texts, features):
        ...     return [1.0 / (1 + len(t.split())) for t in texts]
        >>> reward = FunctionReward(short)
        >>> samples = Samples(ids=tf.zeros([2, 3], tf.int32), lengths=tf.constant([1, 3]),
        ...                   texts=tf.constant(["hi", "a b c"]))
        >>> reward(samples).numpy().tolist()
        [0.5, 0.25]
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        over: str = "texts",
        python: bool = True,
        name: str | None = None,
    ):
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if over not in _OVER:
            raise ValueError(f"over must be one of {_OVER}, got {over!r}")
        if not isinstance(python, bool):
            raise TypeError(f"python must be a bool, got {python!r}")
        if name is None:
            own = getattr(fn, "__name__", None)
            name = own if isinstance(own, str) and own.isidentifier() else None
        super().__init__(name)
        self.fn = fn
        self.over = over
        self.python = python
        self.in_graph = not python

    @property
    def display_name(self) -> str:
        return f"FunctionReward {self.name!r}" if self.name != "FunctionReward" else self.name

    def _check_texts(self, samples: Samples) -> None:
        if self.over == "texts" and samples.texts is None:
            raise ValueError(
                f"{self.display_name}: over='texts', but samples.texts is None: the policy must "
                "detokenize its samples, or score ids (over='ids')"
            )

    def compute(self, samples: Samples) -> Any:
        self._check_texts(samples)
        if self.python:
            return super().compute(samples)
        return self.fn(samples)

    def host_inputs(self, samples: Samples) -> dict[str, tf.Tensor]:
        if self.over == "texts":
            inputs = {"texts": samples.texts}
        else:
            inputs = {"ids": samples.ids, "lengths": samples.lengths}
        for key, value in (samples.features or {}).items():
            if isinstance(value, tf.Tensor):  # ragged and sparse features are not handed over
                inputs[_FEATURE + key] = value
        return inputs

    def score(self, arrays: Mapping[str, np.ndarray], n: int) -> Any:
        features = {
            key[len(_FEATURE) :]: value for key, value in arrays.items() if key.startswith(_FEATURE)
        }
        if self.over == "texts":
            return self.fn(list(arrays["texts"]), features)
        return self.fn(arrays["ids"], arrays["lengths"], features)

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments (the function as itself)."""
        return {"fn": self.fn, "over": self.over, "python": self.python, "name": self.name}
