"""LoRA: low-rank adapters on the dense layers of any texkit module, merged back when done.

LoRA (Hu et al., 2021) keeps a pretrained kernel ``W`` frozen and learns ``W + (alpha/rank) A B``
with ``A [d_in, rank]`` and ``B [rank, d_out]``: ``rank * (d_in + d_out)`` parameters a layer
instead of ``d_in * d_out``. ``B`` starts at zeros, so the adapted model computes exactly what the
base computes until the first update; ``A`` starts as Keras initializes it (He uniform).

**Design.** The adapters are Keras' own (``Dense.enable_lora`` / ``EinsumDense.enable_lora``):
the layer's ``kernel`` is then ``W + (alpha/rank) A B``, computed in the graph at each call, so
every path that calls the layer (:func:`~texkit.core.attention.dense_2d` included), XLA
compilation and mixed precision work unchanged. What Keras lacks is texkit's: choosing layers by
their texkit attribute path, freezing everything else (Keras leaves biases, norms and
embeddings trainable), :func:`merge_lora` (Keras can neither merge nor remove adapters: here the
kernel gets ``W + (alpha/rank) A B``, the two adapter variables are untracked as Keras' own
quantization untracks a replaced kernel, and every variable's ``trainable`` flag is restored to
what it was before :func:`enable_lora`), and adapter files
(:mod:`~texkit.tasks.lora_files`). Keras folds the adapters into the kernel when a model with
LoRA is saved whole (``.keras``, ``.weights.h5``) and zeroes them when it loads one: save the
adapters with :func:`~texkit.tasks.save_adapters`, or merge first.

**Naming the layers.** A target names a ``Dense`` (or ``EinsumDense``) layer by its attribute
path in the texkit module, the path the checkpoint name tables use
(``decoder.blocks.0.self_attention.query``): a target matches every dense layer whose path
equals it or ends with ``.`` + target, so ``query`` matches the query projection of every block,
``self_attention.output_dense`` only the self-attention outputs, ``inner.0`` the first
feed-forward projection of every gated block. A list of layers is numbered (``blocks.3``); a
layer that only Keras tracks (a functional model's layers) is named by its Keras name. The Keras
layer names differ from the attributes in places (the attention output is the attribute
``output_dense`` but the layer ``output``; Llama's feed-forward ``inner.0``, ``inner.1`` and
``output_dense`` are ``gate``, ``up`` and ``down``): a target that matches only Keras names is
refused with the attribute to use. The dense layers per family:

==================  ===========================================================================
module              dense layers a target may name (Keras layer name where it differs)
==================  ===========================================================================
BERT family         ``query``, ``key``, ``value``, ``output_dense`` (``output``), ``ffn_inner``,
                    ``ffn_output``, ``pooler``, ``embedding_projection`` (ALBERT, ELECTRA); the
                    same in a ``TransformerEncoder``
BERTClassifier      its ``encoder``'s, and ``logits_layer`` (``logits``), the new head
GPT2Decoder         ``query``, ``key``, ``value``, ``output_dense`` (``output``), ``ffn_inner``,
                    ``ffn_output``; the same in a ``TransformerDecoder``
LlamaDecoder        ``query``, ``key``, ``value``, ``self_attention.output_dense`` (``output``),
                    ``inner.0`` (``gate``), ``inner.1`` (``up``), ``ffn.output_dense``
                    (``down``), ``output_layer`` when not tied; for Llama, Mistral, Qwen, Phi-3
                    and Gemma
T5EncoderDecoder    ``query``, ``key``, ``value``, ``output_dense`` (``q``, ``k``, ``v``, ``o``)
                    of ``self_attention`` and ``cross_attention``; ``inner.0``, ``inner.1``
                    when gated, ``ffn.output_dense`` (``wi``/``wi_0``, ``wi_1``, ``wo``);
                    ``lm_head`` when not tied
==================  ===========================================================================

``output_dense`` alone matches both attention and (Llama, T5) feed-forward outputs; prefix it
(``self_attention.output_dense``, ``ffn.output_dense``) to choose one.

**Trainability.** After :func:`enable_lora` only the adapters are trainable, and the layers
named by ``train`` (a new head, e.g. ``train=("logits_layer",)`` for a ``BERTClassifier``;
same naming as the targets, any layer). Only ``module``'s own variables are frozen: a layer
outside it (e.g. the output layer of a classifier whose ``encoder`` was given) keeps its flag.
:func:`merge_lora` restores every flag that :func:`enable_lora` changed.

Every function checks everything before changing anything: a refused call leaves the module as
it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from texkit import _compat
from texkit.errors import HParamsError

__all__ = [
    "DEFAULT_TARGETS",
    "LoRAState",
    "adapted_layers",
    "enable_lora",
    "layer_paths",
    "lora_enabled",
    "lora_from_hparams",
    "lora_parameter_count",
    "lora_state",
    "merge_lora",
]

DEFAULT_TARGETS = ("query", "value")
_DENSE = (keras.layers.Dense, keras.layers.EinsumDense)
_STATE = "_texkit_lora_state"


@dataclass(frozen=True)
class LoRAState:
    """What :func:`enable_lora` did to a module, kept on it for :func:`merge_lora` and the
    adapter files.

    Attributes:
        rank: the adapters' rank.
        alpha: their scale's numerator (the scale is ``alpha / rank``).
        targets: the targets as given.
        paths: the adapted layers' attribute paths.
        train: the ``train`` names as given (layers left trainable).
        flags: every variable of the module with its ``trainable`` flag before enabling.
    """

    rank: int
    alpha: float
    targets: tuple[str, ...]
    paths: tuple[str, ...]
    train: tuple[str, ...]
    flags: tuple[tuple[Any, bool], ...]


def layer_paths(module: keras.layers.Layer) -> list[tuple[str, keras.layers.Layer]]:
    """Every layer under ``module`` (not itself) with its attribute path, parents first; a layer
    reachable twice (a tied output layer) is listed once, under its first path."""
    seen = {id(module)}
    found: list[tuple[str, keras.layers.Layer]] = []

    def walk(layer: keras.layers.Layer, prefix: str) -> None:
        for name, child in _children(layer):
            if id(child) in seen:
                continue
            seen.add(id(child))
            path = f"{prefix}{name}"
            found.append((path, child))
            walk(child, f"{path}.")

    walk(module, "")
    return found


def _children(layer: keras.layers.Layer) -> Iterator[tuple[str, keras.layers.Layer]]:
    """``(attribute, layer)`` for the public attributes holding layers (lists numbered), then
    the layers Keras tracks that no public attribute holds, by their Keras names."""
    named = set()
    for name, value in vars(layer).items():
        if name.startswith("_"):
            continue
        if isinstance(value, keras.layers.Layer):
            named.add(id(value))
            yield name, value
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                if isinstance(item, keras.layers.Layer):
                    named.add(id(item))
                    yield f"{name}.{index}", item
    for child in _compat.sublayers(layer, recursive=False):
        if id(child) not in named:
            yield child.name, child


def _matches(path: str, target: str) -> bool:
    return path == target or path.endswith(f".{target}")


def adapted_layers(module: keras.layers.Layer) -> list[tuple[str, keras.layers.Layer]]:
    """The dense layers under ``module`` that have LoRA adapters, with their paths."""
    return [(p, layer) for p, layer in layer_paths(module) if getattr(layer, "lora_enabled", False)]


def lora_enabled(module: keras.layers.Layer) -> bool:
    """Whether any layer under ``module`` (or ``module`` itself) has LoRA adapters."""
    return bool(getattr(module, "lora_enabled", False)) or bool(adapted_layers(module))


def lora_parameter_count(module: keras.layers.Layer) -> int:
    """The number of adapter parameters under ``module``: ``rank * (d_in + d_out)`` per adapted
    ``Dense`` layer."""
    return sum(
        int(np.prod(v.shape))
        for _, layer in adapted_layers(module)
        for v in (layer.lora_kernel_a, layer.lora_kernel_b)
    )


def _as_names(value: Any, argument: str) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value or ())
    bad = [n for n in names if not isinstance(n, str) or not n.strip(".")]
    if bad:
        raise ValueError(f"{argument}: expected layer names (strings), got {bad[0]!r}")
    return names


def _check_rank_alpha(rank: Any, alpha: Any) -> float:
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank <= 0:
        raise ValueError(f"rank: expected a positive integer, got {rank!r}")
    if alpha is None:
        return float(rank)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        raise ValueError(f"alpha: expected a positive number (or None for the rank), got {alpha!r}")
    return float(alpha)


def _attribute(path: str) -> str:
    """The attribute a path ends with (``inner.0`` for a numbered list item)."""
    parts = path.split(".")
    return ".".join(parts[-2:]) if parts[-1].isdigit() and len(parts) > 1 else parts[-1]


def _keras_name_hint(target: str, paths: Sequence[tuple[str, Any]]) -> str:
    """``; ... use ...`` when ``target`` names Keras layers whose attributes differ."""
    attributes = sorted(
        {_attribute(p) for p, layer in paths if isinstance(layer, _DENSE) and layer.name == target}
    )
    if not attributes:
        return ""
    return f"; {target!r} is the Keras name of the attribute {' / '.join(attributes)}: use that"


def _resolve(module: Any, names: Sequence[str], argument: str, dense_only: bool
             ) -> list[tuple[str, keras.layers.Layer]]:  # fmt: skip
    """The layers that ``names`` match (each must match one at least), in module order."""
    paths = layer_paths(module)
    candidates = [(p, la) for p, la in paths if isinstance(la, _DENSE) or not dense_only]
    for name in names:
        if any(_matches(p, name) for p, _ in candidates):
            continue
        other = [(p, la) for p, la in paths if _matches(p, name)]
        if other:
            p, layer = other[0]
            raise ValueError(
                f"{argument}: {name!r} matches {p!r}, a {type(layer).__name__}, not a Dense "
                "layer: name its Dense layers (see texkit.tasks.lora)"
            )
        known = sorted({_attribute(p) for p, la in paths if isinstance(la, _DENSE)})
        raise ValueError(
            f"{argument}: no layer of {module.name} matches {name!r}"
            f"{_keras_name_hint(name, paths)}; its Dense layers end with {known}"
        )
    return [(p, la) for p, la in candidates if any(_matches(p, n) for n in names)]


def _check_module(module: Any) -> None:
    if not isinstance(module, keras.layers.Layer):
        raise TypeError(f"module: expected a Keras layer (a texkit module), got {module!r}")
    if not module.built:
        raise ValueError(
            f"module: {module.name} is not built; build it (call it once, or load it with "
            "from_pretrained) before enable_lora"
        )


def enable_lora(
    module: keras.layers.Layer,
    rank: int,
    alpha: float | None = None,
    targets: str | Iterable[str] = DEFAULT_TARGETS,
    train: str | Iterable[str] = (),
) -> list[str]:
    """Adds LoRA adapters to the dense layers ``targets`` names and freezes everything else.

    Args:
        module: a built texkit module (any Keras layer tree).
        rank: the adapters' rank, a positive integer.
        alpha: the scale's numerator (scale ``alpha / rank``); ``None``: the rank (scale 1).
        targets: layer names (see the module docstring: an attribute path or its suffix).
        train: layers that stay trainable (a new head), named the same way.

    The adapters are new variables: under a ``tf.distribute`` strategy, call this inside the
    strategy's scope, as the model was built. ``A`` is drawn by Keras' He-uniform initializer
    (``keras.utils.set_random_seed`` makes it reproducible).

    Returns:
        the adapted layers' attribute paths.

    Raises:
        ValueError: a target or ``train`` name that matches no layer (or a Keras layer name,
            with the attribute to use), a rank or alpha out of range, a module not built, or
            one that already has adapters. Nothing is changed then.
    """
    _check_module(module)
    alpha = _check_rank_alpha(rank, alpha)
    targets, train = _as_names(targets, "targets"), _as_names(train, "train")
    if not targets:
        raise ValueError("targets: expected at least one layer name")
    layers = _resolve(module, targets, "targets", dense_only=True)
    kept = _resolve(module, train, "train", dense_only=False)
    already = adapted_layers(module)
    if already or getattr(module, "lora_enabled", False):
        where = already[0][0] if already else module.name
        raise ValueError(
            f"module: LoRA is already enabled on {where}; merge_lora first (one set of "
            "adapters per module)"
        )
    for path, layer in layers:
        if not layer.built:
            raise ValueError(f"module: {path} is not built; call the module once first")
        if getattr(layer, "kernel_constraint", None) is not None:
            raise ValueError(f"targets: {path} has a kernel_constraint, which LoRA cannot keep")
        if getattr(layer, "quantization_mode", None) is not None:
            raise ValueError(
                f"targets: {path} is quantized ({layer.quantization_mode}); enable LoRA first"
            )
        if id(layer) in {id(k) for _, k in kept}:
            raise ValueError(f"train: {path} is also a target; a layer is one or the other")
    variables = _unique(module.weights)
    flags = tuple((v, bool(v.trainable)) for v in variables)
    trained = {id(v) for _, layer in kept for v in layer.weights}
    for variable in variables:
        if id(variable) not in trained:
            variable.trainable = False
    for _, layer in layers:
        layer.enable_lora(int(rank), lora_alpha=alpha)
    paths = tuple(p for p, _ in layers)
    state = LoRAState(int(rank), alpha, targets, paths, train, flags)
    object.__setattr__(module, _STATE, state)
    return list(paths)


def _unique(variables: Iterable[Any]) -> list[Any]:
    seen, unique = set(), []
    for variable in variables:
        if id(variable) not in seen:
            seen.add(id(variable))
            unique.append(variable)
    return unique


def lora_state(module: keras.layers.Layer) -> LoRAState | None:
    """The :class:`LoRAState` :func:`enable_lora` left on ``module`` (``None``: none)."""
    return getattr(module, _STATE, None)


def _merged_kernel(layer: keras.layers.Layer) -> np.ndarray:
    """``W + (alpha/rank) A B`` of an adapted layer, in its kernel's dtype and layout."""
    kernel = _compat.dense_kernel(layer)
    delta = (layer.lora_alpha / layer.lora_rank) * np.matmul(
        np.asarray(layer.lora_kernel_a.numpy(), np.float32),
        np.asarray(layer.lora_kernel_b.numpy(), np.float32),
    )
    merged = np.asarray(keras.ops.convert_to_numpy(kernel), np.float32) + delta
    return merged.astype(keras.backend.standardize_dtype(kernel.dtype))


def _remove_adapters(layer: keras.layers.Layer) -> None:
    """Untracks and deletes an adapted layer's adapters (its kernel unchanged)."""
    for name in ("lora_kernel_a", "lora_kernel_b"):
        # What Keras' Layer.__delattr__ does for a variable, without the full gc.collect() it
        # runs after each one (seconds in a process holding a large model).
        _compat.remove_variable(layer, name)
    layer.lora_enabled = False
    layer.lora_rank = None
    layer.lora_alpha = None


def merge_lora(module: keras.layers.Layer) -> list[str]:
    """Folds every adapter under ``module`` into its kernel (``W += (alpha/rank) A B``), removes
    the adapters and restores the ``trainable`` flags :func:`enable_lora` changed.

    The layers are plain ``Dense`` layers again (``lora_enabled`` false, no adapter variables
    in ``module.weights``), and compute what the adapted model computed.

    Returns:
        the merged layers' attribute paths.

    Raises:
        ValueError: ``module`` has no adapters, or an adapted layer is quantized (its kernel
            is not a float variable to add to); nothing is changed then.
    """
    _check_module(module)
    layers = adapted_layers(module)
    if not layers:
        raise ValueError(f"module: {module.name} has no LoRA adapters to merge")
    for path, layer in layers:
        if getattr(layer, "quantization_mode", None) is not None:
            raise ValueError(
                f"module: {path} is quantized ({layer.quantization_mode}); LoRA merges into "
                "float kernels only"
            )
    merged = [(layer, _merged_kernel(layer)) for _, layer in layers]
    for layer, kernel in merged:
        _compat.dense_kernel(layer).assign(kernel)
        _remove_adapters(layer)
    states = [s for s in [lora_state(module)] + [lora_state(la) for _, la in layer_paths(module)]
              if s is not None]  # fmt: skip
    for state in states:
        for variable, flag in state.flags:
            variable.trainable = flag
    for owner in [module] + [la for _, la in layer_paths(module)]:
        if lora_state(owner) is not None:
            object.__delattr__(owner, _STATE)
    return [p for p, _ in layers]


_HPARAMS_KEYS = ("rank", "alpha", "targets", "train")


def lora_from_hparams(module: keras.layers.Layer, hparams: Any) -> list[str]:
    """Applies ``lora: {rank, alpha, targets, train}`` hparams with :func:`enable_lora`.

    ``None`` or an empty mapping does nothing (returns ``[]``). ``rank`` is required;
    ``alpha`` (default: the rank), ``targets`` (default ``[query, value]``) and ``train``
    (default none) are optional.

    Raises:
        HParamsError: an unknown or missing key or a wrong value, naming ``lora.<key>``.
    """
    if hparams is None:
        return []
    if hasattr(hparams, "todict"):
        hparams = hparams.todict()
    if not isinstance(hparams, Mapping):
        raise HParamsError(f"expected a mapping {{rank, alpha, targets}}, got {hparams!r}", "lora")
    if not hparams:
        return []
    unknown = [key for key in hparams if key not in _HPARAMS_KEYS]
    if unknown:
        raise HParamsError(
            f"unknown key; expected some of {list(_HPARAMS_KEYS)}", f"lora.{unknown[0]}"
        )
    if hparams.get("rank") is None:
        raise HParamsError("the adapters' rank is required (a positive integer)", "lora.rank")
    arguments = {
        "rank": hparams["rank"],
        "alpha": hparams.get("alpha"),
        "targets": DEFAULT_TARGETS if hparams.get("targets") is None else hparams["targets"],
        "train": hparams.get("train") or (),
    }
    try:
        return enable_lora(module, **arguments)
    except ValueError as error:
        key = str(error).split(":", 1)[0]
        path = f"lora.{key}" if key in _HPARAMS_KEYS else "lora"
        raise HParamsError(str(error), path) from error
