"""Rotary position embeddings (RoPE) and the frequency scalings checkpoints use.

A query or key vector at position ``p`` has its first ``rotary_dim`` dimensions rotated in pairs
``(i, i + rotary_dim / 2)`` (the "half-split" pairing of Llama in Hugging Face) by the angles
``p * inv_freq[i]``; the remaining dimensions pass unchanged (``partial_rotary_factor``, Phi)::

    rotary_dim  = int(head_dim * partial_rotary_factor)
    inv_freq[i] = theta ** (-2 i / rotary_dim),  i < rotary_dim / 2        ("default")
    y = attention_scaling * (x cos(p inv_freq) + rotate_half(x) sin(p inv_freq))

The scalings (``rope_type``), with ``L`` the original context length
(``original_max_position_embeddings``) and ``s`` the longest position of the current call plus one:

- ``linear``: ``inv_freq / factor``.
- ``dynamic`` (NTK-aware): the default frequencies with ``theta`` replaced by
  ``theta * (factor * max(s, L) / L - (factor - 1)) ** (rotary_dim / (rotary_dim - 2))``.
- ``llama3``: wavelengths ``2 pi / inv_freq`` longer than ``L / low_freq_factor`` are divided by
  ``factor``, those shorter than ``L / high_freq_factor`` kept, the band between interpolated with
  ``smooth = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)`` as
  ``(1 - smooth) * inv_freq / factor + smooth * inv_freq``.
- ``yarn``: ``inv_freq / factor`` and ``inv_freq`` blended by a linear ramp over the dimension
  index between the dimensions where ``L`` spans ``beta_fast`` and ``beta_slow`` rotations
  (``d(r) = rotary_dim * ln(L / (2 pi r)) / (2 ln theta)``, floored and ceiled unless
  ``truncate`` is false); ``attention_scaling = 0.1 ln(factor) + 1``, or with ``mscale`` and
  ``mscale_all_dim`` (DeepSeek) the ratio of ``0.1 m ln(factor) + 1`` for the two.
- ``longrope`` (Phi-3): ``inv_freq / long_factor`` when ``s > L``, else ``inv_freq /
  short_factor`` (per-frequency lists); ``attention_scaling = sqrt(1 + ln(factor) / ln(L))`` with
  ``factor = max_position_embeddings / L`` unless the settings give one.

``dynamic`` and ``longrope`` switch by ``s`` with tensor ops (a compiled loop crossing ``L``
follows; cached keys keep their frequencies). Settings are dicts like Hugging Face's
``rope_scaling``; ``attention_factor`` overrides ``yarn``'s and ``longrope``'s scaling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from texkit.errors import HParamsError

__all__ = [
    "ROPE_TYPES",
    "RopeSettings",
    "RotaryEmbedding",
    "apply_rotary",
    "apply_rotary_cos_sin",
    "rope_settings",
    "rotary_cos_sin",
    "rotary_inverse_frequencies",
]

# Per rope_type: the keys it requires, and its optional keys with their defaults.
_YARN = {"original_max_position_embeddings": None, "beta_fast": 32.0, "beta_slow": 1.0}
_YARN.update(mscale=None, mscale_all_dim=None, attention_factor=None, truncate=True)
_LONGROPE = {"factor": None, "original_max_position_embeddings": None, "attention_factor": None}
_LLAMA3 = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
_KEYS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "default": ((), {}),
    "linear": (("factor",), {}),
    "dynamic": (("factor",), {"original_max_position_embeddings": None}),
    "llama3": (_LLAMA3, {}),
    "yarn": (("factor",), _YARN),
    "longrope": (("short_factor", "long_factor"), _LONGROPE),
}
ROPE_TYPES = tuple(_KEYS)
# Keys every settings dict may hold: its type, and transformers 5's theta and partial factor.
_GENERAL_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor")


class RopeSettings(NamedTuple):
    """Validated settings (:func:`rope_settings`): ``rope_type``, ``theta``, ``rotary_dim`` (how
    many leading dimensions of a head rotate) and ``params`` (the type's keys, defaults filled)."""

    rope_type: str
    theta: float
    rotary_dim: int
    params: dict[str, Any]


def rope_settings(
    head_dim: int,
    theta: float | None = None,
    scaling: Mapping[str, Any] | None = None,
    partial_rotary_factor: float | None = None,
    max_position_embeddings: int | None = None,
) -> RopeSettings:
    """Validates ``scaling`` (a ``rope_scaling`` / ``rope_parameters`` dict, or ``None``).

    ``theta`` and ``partial_rotary_factor`` come from the arguments, else from the dict's
    ``rope_theta`` and ``partial_rotary_factor`` (transformers 5), else 10000 and 1; the two
    places must agree when both give one. ``max_position_embeddings`` is the model's context
    length: the original length of ``dynamic``, ``yarn`` and ``longrope`` when the dict has no
    ``original_max_position_embeddings``, and the numerator of ``longrope``'s default factor.

    Raises:
        HParamsError: naming the key (``rope_scaling.<key>``) that is unknown, missing or invalid.
    """
    if scaling is not None and not isinstance(scaling, Mapping):
        raise HParamsError(f"expected a dict or null, got {scaling!r}", "rope_scaling")
    scaling = dict(scaling or {})
    rope_type = scaling.get("rope_type") or scaling.get("type") or "default"
    if not isinstance(rope_type, str) or rope_type not in _KEYS:
        key = "rope_type" if "rope_type" in scaling else "type"
        raise HParamsError(
            f"unknown rope type {rope_type!r}; supported: {', '.join(ROPE_TYPES)}", _key(key)
        )
    required, optional = _KEYS[rope_type]
    unknown = sorted(set(scaling) - set(required) - set(optional) - set(_GENERAL_KEYS))
    if unknown:
        accepted = ", ".join([*required, *optional]) or "none"
        raise HParamsError(
            f"not a setting of rope type {rope_type!r} (its keys: {accepted})", _key(unknown[0])
        )
    for key in required:
        if scaling.get(key) is None:
            raise HParamsError(f"rope type {rope_type!r} requires it", _key(key))
    theta = _agreeing(theta, scaling.get("rope_theta"), "rope_theta", 10000.0)
    factor = _agreeing(
        partial_rotary_factor, scaling.get("partial_rotary_factor"), "partial_rotary_factor", 1.0
    )
    _positive("rope_theta", theta)
    rotary_dim = int(head_dim * factor)
    if not 0.0 < factor <= 1.0 or rotary_dim < 2 or rotary_dim % 2:
        raise HParamsError(
            f"{factor!r} of head_dim {head_dim} gives {rotary_dim} rotated dimensions; expected "
            "a factor in (0, 1] giving an even number of at least 2",
            _key("partial_rotary_factor"),
        )
    given = {k: v for k, v in scaling.items() if v is not None and k not in _GENERAL_KEYS}
    params = {**optional, **given}  # a key set to None takes its default, as in transformers
    _check_values(rope_type, params, rotary_dim, max_position_embeddings)
    return RopeSettings(rope_type, float(theta), rotary_dim, params)


def _key(key: str) -> str:
    return f"rope_scaling.{key}"


def _agreeing(argument: Any, in_dict: Any, key: str, default: float) -> float:
    if argument is not None and in_dict is not None and float(argument) != float(in_dict):
        raise HParamsError(f"{in_dict!r} disagrees with the argument's {argument!r}", _key(key))
    value = argument if argument is not None else in_dict
    return default if value is None else _number(key, value)


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HParamsError(f"expected a finite number, got {value!r}", _key(key))
    return float(value)


def _positive(key: str, value: Any) -> float:
    if _number(key, value) <= 0:
        raise HParamsError(f"expected a positive number, got {value!r}", _key(key))
    return float(value)


def _check_values(
    rope_type: str, params: dict[str, Any], rotary_dim: int, max_position_embeddings: int | None
) -> None:
    """Checks each value of ``params``; fills the original length and longrope's factor."""
    for key, value in params.items():
        if key == "truncate" and not isinstance(value, bool):
            raise HParamsError(f"expected true or false, got {value!r}", _key(key))
        if value is None or key == "truncate":
            continue
        if key in ("short_factor", "long_factor"):
            if not isinstance(value, (list, tuple)) or len(value) != rotary_dim // 2:
                raise HParamsError(
                    f"expected a list of {rotary_dim // 2} numbers (one per frequency)", _key(key)
                )
            params[key] = [_positive(key, item) for item in value]
        elif key == "original_max_position_embeddings":
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise HParamsError(f"expected a positive integer, got {value!r}", _key(key))
        elif key in ("factor", "beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor"):
            params[key] = _positive(key, value)
        else:
            params[key] = _number(key, value)
    if rope_type == "llama3" and params["high_freq_factor"] <= params["low_freq_factor"]:
        raise HParamsError("must be greater than low_freq_factor", _key("high_freq_factor"))
    if rope_type == "dynamic" and rotary_dim <= 2:
        raise HParamsError("dynamic needs over 2 rotated dimensions", _key("partial_rotary_factor"))
    if rope_type in ("dynamic", "yarn", "longrope"):
        _from_model(params, "original_max_position_embeddings", max_position_embeddings, rope_type)
    if rope_type == "longrope":
        original = params["original_max_position_embeddings"]
        ratio = None if max_position_embeddings is None else max_position_embeddings / original
        _from_model(params, "factor", ratio, rope_type)


def _from_model(params: dict[str, Any], key: str, value: Any, rope_type: str) -> None:
    if params[key] is None:
        if value is None:
            raise HParamsError(
                f"rope type {rope_type!r} needs it (or the model's max_position_embeddings)",
                _key(key),
            )
        params[key] = value


def rotary_inverse_frequencies(
    head_dim: int,
    theta: float | None = None,
    scaling: Mapping[str, Any] | None = None,
    partial_rotary_factor: float | None = None,
    max_position_embeddings: int | None = None,
    sequence_length: Any = None,
) -> tuple[tf.Tensor, float]:
    """The inverse frequencies and the attention scaling of a rotary embedding.

    Args:
        head_dim: the size of each attention head.
        theta: the base of the frequencies (``rope_theta``; default: the dict's, else 10000).
        scaling: a ``rope_scaling`` / ``rope_parameters`` dict (``rope_type`` or ``type`` one of
            :data:`ROPE_TYPES`), or ``None`` for the default.
        partial_rotary_factor: the fraction of ``head_dim`` rotated (default: the dict's, else 1).
        max_position_embeddings: the model's context length (see :func:`rope_settings`).
        sequence_length: the longest position of the current call plus one, a Python int or a
            scalar integer tensor; only ``dynamic`` and ``longrope`` use it (``None``: within the
            original length).

    Returns:
        ``(inverse_frequencies, attention_scaling)``: float32 ``[rotary_dim // 2]`` and a float.

    >>> import numpy as np
    >>> frequencies, scaling = rotary_inverse_frequencies(8, theta=10000.0)
    >>> np.round(frequencies.numpy(), 4), scaling
    (array([1.   , 0.1  , 0.01 , 0.001], dtype=float32), 1.0)
    """
    settings = rope_settings(
        head_dim, theta, scaling, partial_rotary_factor, max_position_embeddings
    )
    return _frequencies(settings, sequence_length), _attention_scaling(settings)


def _default_frequencies(settings: RopeSettings) -> np.ndarray:
    exponents = np.arange(0, settings.rotary_dim, 2, dtype=np.float64) / settings.rotary_dim
    return settings.theta**-exponents


def _frequencies(settings: RopeSettings, sequence_length: Any) -> tf.Tensor:
    """The inverse frequencies for a call whose longest position is ``sequence_length - 1``."""
    inverse = _default_frequencies(settings)
    params, rope_type = settings.params, settings.rope_type
    if rope_type == "linear":
        inverse = inverse / params["factor"]
    elif rope_type == "llama3":
        inverse = _llama3(inverse, params)
    elif rope_type == "yarn":
        inverse = _yarn(inverse, params, settings.theta, settings.rotary_dim)
    elif rope_type == "longrope":
        original = params["original_max_position_embeddings"]
        short = tf.constant(inverse / np.asarray(params["short_factor"]), tf.float32)
        long = tf.constant(inverse / np.asarray(params["long_factor"]), tf.float32)
        if sequence_length is None:
            return short
        return tf.where(tf.convert_to_tensor(sequence_length) > original, long, short)
    elif rope_type == "dynamic" and sequence_length is not None:
        return _dynamic(inverse, params, settings.rotary_dim, sequence_length)
    return tf.constant(inverse, tf.float32)


def _llama3(inverse: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """Llama 3.1: long wavelengths divided by ``factor``, short ones kept, a band between."""
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    original = params["original_max_position_embeddings"]
    wavelength = 2 * math.pi / inverse
    smooth = (original / wavelength - low) / (high - low)
    between = (1 - smooth) * inverse / factor + smooth * inverse
    kept_or_between = np.where(wavelength < original / high, inverse, between)
    return np.where(wavelength > original / low, inverse / factor, kept_or_between)


def _yarn(inverse: np.ndarray, params: dict[str, Any], theta: float, dim: int) -> np.ndarray:
    """YaRN: ``inverse / factor`` and ``inverse`` blended by a ramp over the dimension index."""
    original = params["original_max_position_embeddings"]

    def dimension_of(rotations: float) -> float:
        # The dimension whose wavelength fits ``rotations`` times in the original length.
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = dimension_of(params["beta_fast"]), dimension_of(params["beta_slow"])
    if params["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    return inverse / params["factor"] * ramp + inverse * (1 - ramp)


def _dynamic(inverse: np.ndarray, params: dict[str, Any], dim: int, sequence_length: Any) -> Any:
    """NTK-aware: theta grows with the call's length past the original one (tensor ops)."""
    factor, original = params["factor"], float(params["original_max_position_embeddings"])
    length = tf.cast(sequence_length, tf.float32)
    ratio = tf.maximum(factor * length / original - (factor - 1.0), 1.0)
    # (theta * ratio ** (dim / (dim - 2))) ** -exponent = theta ** -exponent * ratio ** (...).
    exponents = tf.constant(np.arange(0, dim, 2) / dim, tf.float32)
    scaled = tf.constant(inverse, tf.float32) * tf.exp(
        -exponents * (dim / (dim - 2)) * tf.math.log(ratio)
    )
    return tf.where(length > original, scaled, tf.constant(inverse, tf.float32))


def _attention_scaling(settings: RopeSettings) -> float:
    """The factor on cos and sin: YaRN's mscale, LongRoPE's, or 1."""
    params = settings.params
    if settings.rope_type not in ("yarn", "longrope"):
        return 1.0
    if params["attention_factor"] is not None:
        return float(params["attention_factor"])
    factor = params["factor"]
    if settings.rope_type == "longrope":
        original = params["original_max_position_embeddings"]
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))

    def magnitude(m: float = 1.0) -> float:
        return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0

    if params["mscale"] and params["mscale_all_dim"]:
        return magnitude(params["mscale"]) / magnitude(params["mscale_all_dim"])
    return magnitude()


def rotary_cos_sin(
    positions: Any, inverse_frequencies: Any, attention_scaling: float = 1.0
) -> tuple[tf.Tensor, tf.Tensor]:
    """Cosines and sines of the angles ``position * inverse_frequency``, in float32.

    Args:
        positions: integer positions, ``[time]`` or ``[batch, time]``.
        inverse_frequencies: ``[rotary_dim // 2]``.
        attention_scaling: multiplies both (YaRN's and LongRoPE's attention factor).

    Returns:
        ``(cos, sin)``, each ``[1 or batch, 1, time, rotary_dim]`` (the angles twice, for the
        half-split pairing), broadcasting over ``[batch, heads, time, head_dim]``.
    """
    positions = tf.convert_to_tensor(positions)
    if positions.shape.rank not in (1, 2):
        raise ValueError(f"positions must be [time] or [batch, time], got shape {positions.shape}")
    angles = tf.cast(positions, tf.float32)[..., None] * tf.cast(inverse_frequencies, tf.float32)
    angles = tf.concat([angles, angles], axis=-1)
    angles = angles[None, None] if positions.shape.rank == 1 else angles[:, None]
    return tf.cos(angles) * attention_scaling, tf.sin(angles) * attention_scaling


def apply_rotary_cos_sin(x: Any, cos: Any, sin: Any) -> tf.Tensor:
    """Rotates the first ``cos.shape[-1]`` dimensions of ``x`` (half-split pairs) in float32.

    Args:
        x: ``[batch, heads, time, head_dim]`` queries or keys.
        cos: from :func:`rotary_cos_sin`.
        sin: from :func:`rotary_cos_sin`.

    Returns:
        ``x`` rotated, in ``x``'s dtype; dimensions past ``rotary_dim`` unchanged.
    """
    x = tf.convert_to_tensor(x)
    rotary_dim = cos.shape[-1]
    if x.shape[-1] is not None and x.shape[-1] < rotary_dim:
        raise ValueError(f"head_dim {x.shape[-1]} is smaller than rotary_dim {rotary_dim}")
    full = tf.cast(x, tf.float32)
    rotated, passed = full[..., :rotary_dim], full[..., rotary_dim:]
    first, second = rotated[..., : rotary_dim // 2], rotated[..., rotary_dim // 2 :]
    rotated = rotated * cos + tf.concat([-second, first], axis=-1) * sin
    if x.shape[-1] != rotary_dim:
        rotated = tf.concat([rotated, passed], axis=-1)
    return tf.cast(rotated, x.dtype)


def apply_rotary(
    x: Any, positions: Any, inverse_frequencies: Any, attention_scaling: float = 1.0
) -> tf.Tensor:
    """Rotary position embedding of ``x`` at ``positions``.

    Args:
        x: ``[batch, heads, time, head_dim]`` (the layout of :mod:`texkit.core.attention` after
            its heads are split); any float dtype, computed in float32 and cast back.
        positions: integer ``[batch, time]`` or ``[time]`` (in cached decoding, the current
            position(s)).
        inverse_frequencies: ``[rotary_dim // 2]`` (:func:`rotary_inverse_frequencies`); the first
            ``rotary_dim`` dimensions of each head are rotated, the rest pass unchanged.
        attention_scaling: multiplies the rotated dimensions.

    Returns:
        ``x`` rotated, same shape and dtype.

    >>> import numpy as np
    >>> x = np.ones([1, 1, 2, 2], "float32")  # one pair, at positions 0 and 1
    >>> np.round(apply_rotary(x, [0, 1], [np.pi / 2]).numpy()[0, 0], 4)
    array([[ 1.,  1.],
           [-1.,  1.]], dtype=float32)
    """
    cos, sin = rotary_cos_sin(positions, inverse_frequencies, attention_scaling)
    return apply_rotary_cos_sin(x, cos, sin)


class RotaryEmbedding:
    """One model's rotary embedding: settings validated once, frequencies chosen per call.

    The arguments are those of :func:`rope_settings`. ``dynamic`` and ``longrope`` take the
    call's length from its positions (``max(positions) + 1``), with tensor operations, so eager
    calls, ``tf.function`` and XLA agree.

    >>> rope = RotaryEmbedding(64, 10000.0, {"rope_type": "linear", "factor": 2.0})
    >>> rope(tf.zeros([1, 4, 3, 64]), tf.range(3)).shape
    TensorShape([1, 4, 3, 64])
    """

    def __init__(
        self,
        head_dim: int,
        theta: float | None = None,
        scaling: Mapping[str, Any] | None = None,
        partial_rotary_factor: float | None = None,
        max_position_embeddings: int | None = None,
    ):
        self.settings = rope_settings(
            head_dim, theta, scaling, partial_rotary_factor, max_position_embeddings
        )
        self.attention_scaling = _attention_scaling(self.settings)

    @property
    def rotary_dim(self) -> int:
        """How many leading dimensions of each head are rotated."""
        return self.settings.rotary_dim

    def inverse_frequencies(self, positions: Any = None) -> tf.Tensor:
        """``[rotary_dim // 2]`` float32 for a call at ``positions`` (``None``: short calls)."""
        length = None
        if positions is not None and self.settings.rope_type in ("dynamic", "longrope"):
            length = tf.reduce_max(tf.convert_to_tensor(positions)) + 1
        return _frequencies(self.settings, length)

    def cos_sin(self, positions: Any) -> tuple[tf.Tensor, tf.Tensor]:
        """:func:`rotary_cos_sin` at ``positions``, to share between queries, keys and layers."""
        return rotary_cos_sin(
            positions, self.inverse_frequencies(positions), self.attention_scaling
        )

    def __call__(self, x: Any, positions: Any) -> tf.Tensor:
        """``x`` (``[batch, heads, time, head_dim]``) rotated at ``positions``."""
        return apply_rotary_cos_sin(x, *self.cos_sin(positions))
