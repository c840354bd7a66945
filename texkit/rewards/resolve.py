"""as_reward: a reward from what a user or a config gives (a reward, a function, hparams).

Names resolve through :mod:`texkit.registry` only, so a config names a reward class
(``SentenceBLEU``, ``ExactMatch``, ``ClassifierProbability``, ``FunctionReward``,
``CombinedReward``, or a ``Reward`` subclass the user registered) or a Python function the user
registered with ``texkit.registry.register(fn)``; nothing else is imported.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from texkit import registry
from texkit.errors import HParamsError
from texkit.rewards.base import Reward
from texkit.rewards.function import FunctionReward
from texkit.utils.instances import get_instance

__all__ = ["as_reward"]


def as_reward(value: Any, what: str = "reward") -> Reward:
    """``value`` as a :class:`~texkit.rewards.Reward`.

    Args:
        value: one of

            * a :class:`~texkit.rewards.Reward`, returned as it is;
            * a Python function ``fn(texts, features)``: a
              :class:`~texkit.rewards.FunctionReward` over texts, on the host;
            * hparams ``{"type": name, "kwargs": {...}}`` (or just the name): ``name`` is a
              registered reward class, made with ``kwargs``, or a function registered with
              ``texkit.registry.register``, wrapped in a ``FunctionReward`` with ``kwargs``
              (e.g. ``{"over": "ids"}``).
        what: how errors name ``value`` (e.g. ``"reward"`` or an hparams path).

    Raises:
        HParamsError: hparams with an unknown key, a name that is not registered or not a
            reward, or kwargs the reward does not take (the error's ``path`` says where).
        TypeError: ``value`` is none of the above.

    Example:
        >>> as_reward({"type": "ExactMatch", "kwargs": {"reference_key": "answer"}})
        <ExactMatch>
    """
    if isinstance(value, Reward):
        return value
    if isinstance(value, str):
        value = {"type": value}
    if hasattr(value, "todict"):
        value = value.todict()
    if isinstance(value, Mapping):
        return _from_hparams(value, what)
    if callable(value) and not inspect.isclass(value):
        return FunctionReward(value)
    raise TypeError(
        f"{what} must be a texkit.rewards.Reward, a Python function (texts, features) -> scores, "
        f"or hparams {{'type': name, 'kwargs': {{...}}}}; got {type(value).__name__}"
    )


def _from_hparams(hparams: Mapping, what: str) -> Reward:
    unknown = [key for key in hparams if key not in ("type", "kwargs")]
    if unknown:
        raise HParamsError(
            f"unknown key {unknown[0]!r} in a reward's hparams; they are 'type' and 'kwargs'",
            f"{what}.{unknown[0]}",
        )
    name = hparams.get("type")
    if not isinstance(name, str) or not name:
        raise HParamsError(
            f"a reward's type must be a registered name, got {name!r}", f"{what}.type"
        )
    kwargs = hparams.get("kwargs") or {}
    if hasattr(kwargs, "todict"):
        kwargs = kwargs.todict()
    if not isinstance(kwargs, Mapping):
        raise HParamsError(f"kwargs must be a dict, got {kwargs!r}", f"{what}.kwargs")
    try:
        target = registry.resolve(name)
    except HParamsError as error:
        raise HParamsError(error.message, f"{what}.type") from None
    if inspect.isclass(target):
        if not issubclass(target, Reward):
            raise HParamsError(
                f"{name!r} names {target.__module__}.{target.__qualname__}, which is not a "
                "texkit.rewards.Reward",
                f"{what}.type",
            )
        return _make(target, kwargs, what)
    if "." in name:
        raise HParamsError(
            f"{name!r} is a function of a library; a reward function must be one of yours, "
            "registered with texkit.registry.register(fn)",
            f"{what}.type",
        )
    if "fn" in kwargs:
        raise HParamsError("the function is the type; kwargs cannot hold 'fn'", f"{what}.kwargs")
    return _make(FunctionReward, {"fn": target, **kwargs}, what)


def _make(cls: type, kwargs: Mapping, what: str) -> Reward:
    try:
        return get_instance(cls, kwargs)
    except (TypeError, ValueError) as error:
        if isinstance(error, HParamsError):
            raise HParamsError(error.message, f"{what}.kwargs.{error.path}") from None
        raise HParamsError(f"{cls.__name__}: {error}", f"{what}.kwargs") from error
