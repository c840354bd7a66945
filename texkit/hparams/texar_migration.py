"""Texar hparams to texkit hparams: :func:`from_texar` and :func:`optimization_from_texar`.

texkit keeps Texar's hparams layout, so most of a Texar config carries over as it is. What
differs is translated, and every change is reported (:class:`Change`), the ones that change
what the config means included:

* Keras' names: ``num_units`` -> ``units`` and ``forget_bias`` -> ``unit_forget_bias`` (a
  learned bias starting at 1, or at 0 for ``forget_bias: 0``) in a ``kwargs``; TF 1 class and
  function names in a ``type`` (``BasicLSTMCell``, ``LSTMBlockCell``,
  ``random_uniform_initializer``, ``AdamOptimizer``, ...) -> Keras'
  (:data:`~texkit.hparams.texar_names.TEXAR_TYPES`); ``variance_scaling_initializer``'s
  ``distribution: normal`` (a truncated normal in TF 1) -> ``truncated_normal``.
* Keys texkit names otherwise: ``kernel_size`` -> ``kernel_sizes`` (a list), Texar's pooling
  layers -> ``pooling: max | mean``, ``allow_smaller_final_batch`` -> ``drop_remainder``
  (inverted), ``use_bert_config`` -> ``norm: post | pre``, the Transformer's position-wise
  network (a list of layers) -> ``poswise_feedforward: {dim, activation}``.
* Keys texkit drops: ``dropout.input_size`` (masks come from the inputs' shape),
  ``helper_train`` / ``helper_infer`` (the decoding strategy is a call argument),
  ``max_decoding_length_train``, ``multihead_attention.output_dim`` (the model's ``dim``),
  ``pretrained_model_name`` (``from_pretrained``), ``loss_label_confidence`` (a loss argument:
  ``label_smoothing = 1 - c``, spread over all V classes in texkit, over V - 1 in Texar).
* Texar's defaults that texkit does not share, made explicit so the config means what it meant:
  an ``AttentionRNNDecoder`` without ``attention_layer_size`` had no attention layer in Texar
  (``use_attention_layer: false``; texkit's default adds one, which learns far better).
* A single string where Texar accepted "a string or a list" (``files``) becomes the list.

The result is validated against the module's defaults when a class is given, every problem in
one :class:`~texkit.hparams.HParamsError`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, NamedTuple

from texkit.errors import HParamsError, join_path
from texkit.hparams.core import HParams
from texkit.hparams.rules import short
from texkit.hparams.texar_names import TEXAR_TYPES

__all__ = ["Change", "Migration", "from_texar", "optimization_from_texar"]


class Change(NamedTuple):
    """One change :func:`from_texar` made.

    Attributes:
        path: the dotted path in Texar's hparams.
        texar: Texar's value (``None`` for a key added).
        texkit: texkit's value (``None`` for a key removed).
        note: what it means, when more than a rename.
    """

    path: str
    texar: Any
    texkit: Any
    note: str = ""

    def __str__(self) -> str:
        text = f"{self.path}: {short(self.texar)} -> {short(self.texkit)}"
        return f"{text} ({self.note})" if self.note else text


class Migration(NamedTuple):
    """What :func:`from_texar` returns: texkit's ``hparams`` and the ``changes`` made."""

    hparams: dict
    changes: list[Change]


_DROPPED = {
    "helper_train": "texkit chooses the decoding strategy at call time (decoding_strategy=)",
    "helper_infer": "texkit chooses the decoding strategy at call time (decoding_strategy=)",
    "max_decoding_length_train": "texkit's teacher forcing runs for the targets' length",
    "pretrained_model_name": "load pretrained weights with the class's from_pretrained(path)",
    "cache_dir": "load pretrained weights with the class's from_pretrained(path)",
}
_FORGET_BIAS = (
    "Keras' unit_forget_bias: TF 1 added forget_bias to the forget gate at every step; Keras "
    "starts the gate's bias at 1 (true) or 0 (false) and learns it"
)
_POOLING = {"MaxPooling1D": "max", "AveragePooling1D": "mean", "AvgPool1D": "mean"}
_KEEP_AS_LIST = ("files",)
_CONV_KEYS = ("dropout_conv", "dropout_dense", "pool_size")


def _single_type(name: Any) -> str | None:
    mapped = TEXAR_TYPES.get(name.rsplit(".", 1)[-1]) if isinstance(name, str) else None
    return mapped if mapped is not None and " " not in mapped else None


def _poswise(value: Mapping, path: str, changes: list[Change]) -> dict:
    """Texar's position-wise network (a list of Dense/Dropout layers) as texkit's
    ``{dim, activation}``; anything else is refused."""
    layers = value.get("layers")
    dense = [layer for layer in layers or () if layer.get("type") == "Dense"]
    if len(dense) != 2 or any(layer.get("type") not in ("Dense", "Dropout") for layer in layers):
        raise HParamsError(
            "texkit's position-wise network is two dense layers (dim, activation); this one is "
            f"{[layer.get('type') for layer in layers or ()]}",
            path,
        )
    first = dense[0].get("kwargs", {})
    converted = {"dim": first.get("units"), "activation": first.get("activation") or "linear"}
    changes.append(
        Change(
            path,
            value,
            converted,
            "the inner size and activation of the two dense layers; "
            "the dropout between them is texkit's residual_dropout",
        )  # fmt: skip
    )
    return converted


def _translate(node: Any, path: str, changes: list[Change], in_kwargs: bool = False) -> Any:
    if isinstance(node, list):
        return [_translate(v, join_path(path, i), changes, in_kwargs) for i, v in enumerate(node)]
    if not isinstance(node, Mapping):
        return node
    out: dict = {}
    for key, value in node.items():
        where = join_path(path, key)
        if in_kwargs and key == "num_units":
            changes.append(Change(where, value, value, "Keras' name: units"))
            out["units"] = value
        elif in_kwargs and key == "forget_bias":
            out["unit_forget_bias"] = bool(value)
            changes.append(Change(where, value, bool(value), _FORGET_BIAS))
        elif key == "type" and _single_type(value) is not None:
            changes.append(Change(where, value, _single_type(value)))
            out["type"] = _single_type(value)
        elif key in _DROPPED:
            changes.append(Change(where, value, None, _DROPPED[key]))
        elif key == "input_size" and path.endswith("dropout"):
            changes.append(Change(where, value, None, "texkit's masks come from the inputs"))
        elif key == "kernel_size":
            sizes = list(value) if isinstance(value, (list, tuple)) else [value]
            changes.append(Change(where, value, sizes, "texkit's key: kernel_sizes"))
            out["kernel_sizes"] = sizes
        elif key == "pooling" and value in _POOLING:
            changes.append(Change(where, value, _POOLING[value]))
            out["pooling"] = _POOLING[value]
        elif key == "allow_smaller_final_batch":
            changes.append(Change(where, value, not value, "inverted: drop_remainder"))
            out["drop_remainder"] = not value
        elif key == "use_bert_config":
            norm = "post" if value else "pre"
            changes.append(Change(where, value, norm, "texkit's key: norm"))
            out["norm"] = norm
        elif key == "loss_label_confidence":
            changes.append(
                Change(
                    where,
                    value,
                    None,
                    f"a loss argument in texkit: label_smoothing="
                    f"{round(1 - value, 12):g}, spread over all V classes (Texar: over V - 1)",
                )  # fmt: skip
            )
        elif key == "output_dim" and path.endswith("multihead_attention"):
            changes.append(Change(where, value, None, "texkit's attention output is dim"))
        elif key == "poswise_feedforward" and isinstance(value, Mapping) and "layers" in value:
            out[key] = _poswise(value, where, changes)
        elif key in ("dropout_conv", "dropout_dense", "pool_size"):
            _conv_option(node, key, value, where, changes)
        elif key in _KEEP_AS_LIST and isinstance(value, str):
            changes.append(Change(where, value, [value], "a list of files"))
            out[key] = [value]
        else:
            out[key] = _translate(value, where, changes, in_kwargs=key == "kwargs")
    _distribution(out, path, changes)
    return out


def _conv_option(node: Mapping, key: str, value: Any, where: str, changes: list[Change]) -> None:
    """Texar's ``Conv1DNetwork`` options that texkit's fixed layout covers, else an error."""
    if key == "dropout_conv" and list(value or []) == [node.get("num_conv_layers", 1)]:
        note = "dropout after the last convolution: texkit's dropout_rate on the pooled features"
    elif key == "dropout_dense" and (not value or node.get("num_dense_layers", 0) == 0):
        note = "no dense layer gets dropout"
    elif key == "pool_size" and value is None:
        note = "texkit pools over the whole sequence"
    else:
        raise HParamsError(f"texkit's Conv1DClassifier has no equivalent of {value!r}", where)
    changes.append(Change(where, value, None, note))


def _distribution(node: dict, path: str, changes: list[Change]) -> None:
    """TF 1's variance scaling ``distribution: normal`` was a truncated normal."""
    if node.get("type") == "VarianceScaling":
        kwargs = node.get("kwargs")
        if isinstance(kwargs, dict) and kwargs.get("distribution") == "normal":
            kwargs["distribution"] = "truncated_normal"
            where = join_path(path, "kwargs.distribution")
            changes.append(Change(where, "normal", "truncated_normal", "TF 1's meaning"))


def from_texar(texar_hparams: Mapping, module_class: type | None = None) -> Migration:
    """Translates a Texar module's hparams into texkit's, listing every change.

    Args:
        texar_hparams: the hparams as a Texar config gives them to the module (a dict).
        module_class: the texkit class they are for (e.g. ``tx.modules.AttentionRNNDecoder``):
            Texar defaults that texkit does not share are made explicit, and the result is
            validated against its defaults. ``None``: translated only.

    Returns:
        a :class:`Migration`: ``hparams`` for the texkit class, and the ``changes`` made.

    Raises:
        HParamsError: the translated hparams do not fit ``module_class`` (every problem
            listed), or a part texkit cannot express (named by its path).

    Example:
        >>> from texkit.modules import AttentionRNNDecoder
        >>> texar = {"rnn_cell": {"type": "BasicLSTMCell", "kwargs": {"num_units": 64}},
        ...          "attention": {"kwargs": {"num_units": 64}}}
        >>> hparams, changes = from_texar(texar, AttentionRNNDecoder)
        >>> hparams["rnn_cell"]
        {'type': 'LSTMCell', 'kwargs': {'units': 64}}
        >>> hparams["attention"]
        {'kwargs': {'units': 64}, 'use_attention_layer': False}
        >>> print(changes[0])
        rnn_cell.type: 'BasicLSTMCell' -> 'LSTMCell'
    """
    if not isinstance(texar_hparams, Mapping):
        raise HParamsError(f"expected a dict of Texar hparams, got {type(texar_hparams).__name__}")
    changes: list[Change] = []
    texar_hparams = dict(texar_hparams)
    # Texar's own dropout and pooling keys stay as they are for a module that has them
    # (Conv1DNetwork); for the others (Conv1DClassifier) _conv_option translates or refuses them.
    own: dict = {}
    if module_class is not None:
        defaults = module_class.default_hparams()
        own = {k: texar_hparams.pop(k) for k in _CONV_KEYS if k in defaults and k in texar_hparams}
    hparams = _translate(copy.deepcopy(texar_hparams), "", changes)
    hparams.update(copy.deepcopy(own))
    if module_class is not None:
        _texar_defaults(hparams, module_class, changes)
        HParams(hparams, module_class.default_hparams())
    return Migration(hparams, changes)


def _texar_defaults(hparams: dict, module_class: type, changes: list[Change]) -> None:
    """Makes explicit the Texar defaults that texkit does not share."""
    defaults = module_class.default_hparams()
    attention = defaults.get("attention")
    if isinstance(attention, Mapping) and "use_attention_layer" in attention:
        given = hparams.setdefault("attention", {})
        if given.get("attention_layer_size") is None and "use_attention_layer" not in given:
            given["use_attention_layer"] = False
            changes.append(
                Change(
                    "attention.attention_layer_size",
                    None,
                    None,
                    "Texar's default: no "
                    "attention layer, the output is the context alone (use_attention_layer: "
                    "false); texkit's default adds one, which learns far better",
                )  # fmt: skip
            )


def optimization_from_texar(texar_opt: Mapping) -> Migration:
    """Translates Texar's optimization hparams (``opt``: ``optimizer``, ``learning_rate_decay``,
    ``gradient_clip``) into the ``optimization`` section of a texkit experiment.

    The optimizer's ``learning_rate`` moves to ``optimization.learning_rate``; Adam's ``beta1`` /
    ``beta2`` become Keras' ``beta_1`` / ``beta_2``; a ``clip_by_*`` gradient clip becomes
    ``gradient_clip: {mode, value}``; a learning-rate decay becomes
    ``learning_rate_schedule`` (its ``learning_rate`` argument the section's).

    Example:
        >>> opt = {"optimizer": {"type": "AdamOptimizer", "kwargs": {"learning_rate": 0.001}},
        ...        "gradient_clip": {"type": "clip_by_global_norm", "kwargs": {"clip_norm": 5.0}}}
        >>> optimization_from_texar(opt).hparams
        {'optimizer': {'type': 'Adam', 'kwargs': {}}, 'learning_rate': 0.001, 'gradient_clip': {'mode': 'global_norm', 'value': 5.0}}
    """  # noqa: E501
    if not isinstance(texar_opt, Mapping):
        raise HParamsError(f"expected Texar's opt dict, got {type(texar_opt).__name__}")
    changes: list[Change] = []
    out: dict = {}
    optimizer = dict(texar_opt.get("optimizer") or {"type": "AdamOptimizer", "kwargs": {}})
    name = optimizer.get("type", "AdamOptimizer")
    kwargs = dict(optimizer.get("kwargs") or {})
    new_name = _single_type(name) or name
    if new_name != name:
        changes.append(Change("optimizer.type", name, new_name))
    for old, new in (("beta1", "beta_1"), ("beta2", "beta_2")):
        if old in kwargs:
            kwargs[new] = kwargs.pop(old)
            changes.append(Change(f"optimizer.kwargs.{old}", kwargs[new], kwargs[new], new))
    given = "learning_rate" in kwargs
    learning_rate = kwargs.pop("learning_rate", 0.001)  # Texar's default
    changes.append(
        Change(
            "optimizer.kwargs.learning_rate",
            learning_rate if given else None,
            learning_rate,
            "moved to optimization.learning_rate" if given else "Texar's default",
        )  # fmt: skip
    )
    out["optimizer"] = {"type": new_name, "kwargs": kwargs}
    out["learning_rate"] = learning_rate
    decay = texar_opt.get("learning_rate_decay") or {}
    if decay.get("type"):
        schedule = _single_type(decay["type"])
        if schedule is None:
            raise HParamsError(
                f"no texkit schedule for Texar's {decay['type']!r}", "learning_rate_decay.type"
            )
        decay_kwargs = {
            k: v for k, v in (decay.get("kwargs") or {}).items() if k != "learning_rate"
        }
        out["learning_rate_schedule"] = {"type": schedule, "kwargs": decay_kwargs}
        changes.append(Change("learning_rate_decay", dict(decay), out["learning_rate_schedule"]))
    clip = texar_opt.get("gradient_clip") or {}
    if clip.get("type"):
        modes = {"clip_by_global_norm": ("global_norm", "clip_norm"),
                 "clip_by_norm": ("norm", "clip_norm"),
                 "clip_by_value": ("value", "clip_value_max")}  # fmt: skip
        short = str(clip["type"]).rsplit(".", 1)[-1]
        if short not in modes:
            raise HParamsError(
                f"no texkit gradient clip for {clip['type']!r}", "gradient_clip.type"
            )
        mode, argument = modes[short]
        value = (clip.get("kwargs") or {}).get(argument)
        out["gradient_clip"] = {"mode": mode, "value": value}
        changes.append(Change("gradient_clip", dict(clip), out["gradient_clip"]))
    if texar_opt.get("gradient_noise_scale") is not None:
        raise HParamsError("texkit has no gradient noise", "gradient_noise_scale")
    return Migration(out, changes)
