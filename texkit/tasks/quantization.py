"""int8 (and int4) inference: :func:`quantize` any texkit module, in place.

**What is quantized.** Every Keras ``Dense`` and ``EinsumDense`` of the module (attention and
feed-forward projections, poolers, heads, untied output layers), by Keras' own quantization:
an int8 kernel with one float32 scale per output unit (``kernel_scale``; Keras divides the
product by it), or for ``"int4"`` two 4-bit values a byte with a scale per output unit and per
group of 128 inputs. And every embedding table of texkit's embedders (word, position and segment
tables, which are not Keras layers Keras can quantize), by :mod:`texkit.core.quantized_table`:
an int8 table with one scale per row (per token), dequantized on lookup for the rows looked up
only; an output layer tied to the word table (GPT-2, T5, tied Llama-family models) multiplies by
the int8 table and scales each logit by its token's scale. Tables stay int8 in ``"int4"`` mode.
Biases, norms, T5's relative position biases and the layers that are neither stay float.

**Weight-only by default.** The weights are stored as integers and each product dequantizes
them to the compute dtype: float inputs times the kernel cast to float, the output divided by
the scales. Keras' default int8 also quantizes each call's inputs (per row) and multiplies two
int8 matrices; ``weight_only=False`` asks for that. On a CPU (``benchmarks/RESULTS.md``, "int8
inference") the weight-only form keeps float32's speed, for a batched BERT forward and per
decoded token, with and without XLA, in about a quarter of the bytes; quantizing the inputs too
is about three times slower without XLA, and the fastest form for a batched forward compiled
with XLA.

**Saving.** A quantized module records ``{mode, weight_only}`` in its config
(:meth:`texkit.configurable.ModuleBase.get_config`); a module made from that config (``.keras``
files, :func:`keras.saving.deserialize_keras_object`) is quantized again as soon as it is built,
before its weights are loaded, so ``.keras`` files and ``save_weights``/``load_weights`` round
trip exactly, and TensorFlow checkpoints and SavedModels hold the int8 variables. Quantize the
outermost module that is saved (a task quantizes its whole module): a part quantized alone is
rebuilt float by its owner's config.

**Refusals.** An unknown mode, ``weight_only`` not a bool, a module not built (quantize after
loading the weights: quantizing initial weights is never what is meant), a module already
quantized (by this function or by Keras), a layer with LoRA enabled (merge it first), float16
compute (Keras' int8 refuses it), or a module with nothing to quantize: each raises before any
layer changes.
"""

from __future__ import annotations

import gc
from typing import Any

import keras
from keras.quantizers import Int4QuantizationConfig, Int8QuantizationConfig

from texkit import _compat
from texkit.configurable import ModuleBase, register_quantizer
from texkit.core.quantized_table import is_quantized_table, quantize_table
from texkit.modules.embedding_table import TableEmbedder

__all__ = ["QUANTIZATION_MODES", "quantization_mode", "quantize"]

#: The modes :func:`quantize` accepts.
QUANTIZATION_MODES = ("int8", "int4")

_DENSE_TYPES = (keras.layers.Dense, keras.layers.EinsumDense)


def _layers(module: keras.layers.Layer) -> list[keras.layers.Layer]:
    """Every layer of ``module``, itself included, each once."""
    return _compat.sublayers(module, include_self=True)


def quantization_mode(module: keras.layers.Layer) -> str | None:
    """The mode ``module`` (or a layer inside it) is quantized in, ``None`` if none is.

    The mode :func:`quantize` recorded, else that of a layer Keras quantized (``"int8"``,
    ``"int4"``, ``"float8"``, ...), else ``"int8"`` for a table quantized alone.
    """
    if not isinstance(module, keras.layers.Layer):
        raise TypeError(
            f"quantization_mode: module must be a Keras layer, got {type(module).__name__}"
        )
    layers = _layers(module)
    for layer in layers:
        if isinstance(layer, ModuleBase) and layer._quantization_mode is not None:
            return layer._quantization_mode
    for layer in layers:
        if layer.quantization_mode is not None:
            return str(layer.quantization_mode).split("/")[0]
    if any(is_quantized_table(layer) for layer in layers):
        return "int8"
    return None


def _check_arguments(module: Any, mode: Any, weight_only: Any) -> None:
    if not isinstance(module, keras.layers.Layer):
        raise TypeError(f"quantize: module must be a Keras layer, got {type(module).__name__}")
    if not isinstance(mode, str) or mode not in QUANTIZATION_MODES:
        raise ValueError(f"quantize: mode must be one of {QUANTIZATION_MODES}, got {mode!r}")
    if not isinstance(weight_only, bool):
        raise TypeError(f"quantize: weight_only must be a bool, got {weight_only!r}")
    if mode == "int4" and not weight_only:
        raise ValueError(
            "quantize: mode='int4' is weight-only (Keras' int4 product of 4-bit weights and "
            "quantized inputs is per output unit only); give weight_only=True"
        )


def _plan(module: keras.layers.Layer, mode: str) -> tuple[list, list]:
    """``(dense layers, tables)`` to quantize; raises, naming the layer, if one cannot be."""
    if not module.built:
        raise ValueError(
            f"quantize: module {module.name!r} is not built; load its weights (or call it once) "
            "first"
        )
    already = quantization_mode(module)
    if already is not None:
        raise ValueError(f"quantize: module {module.name!r} is already quantized ({already})")
    denses, tables = [], []
    for layer in _layers(module):
        if type(layer) in _DENSE_TYPES:
            denses.append(layer)
        elif isinstance(layer, TableEmbedder):
            tables.append(layer)
        else:
            continue
        if not layer.built:
            raise ValueError(
                f"quantize: layer {layer.path or layer.name!r} of {module.name!r} is not built; "
                "call the module once first"
            )
        if getattr(layer, "lora_enabled", False):
            raise ValueError(
                f"quantize: layer {layer.path!r} has LoRA enabled; merge it first "
                "(texkit.tasks.merge_lora)"
            )
        if layer.compute_dtype == "float16":
            raise ValueError(
                f"quantize: layer {layer.path!r} computes in float16, which Keras' {mode} "
                "refuses; use float32 or mixed_bfloat16"
            )
    if not denses and not tables:
        raise ValueError(
            f"quantize: module {module.name!r} has no Dense, EinsumDense or embedding table"
        )
    return denses, tables


def _config(mode: str, weight_only: bool) -> Any:
    if mode == "int4":
        return Int4QuantizationConfig()
    return Int8QuantizationConfig(activation_quantizer=None if weight_only else "default")


def quantize(
    module: keras.layers.Layer, mode: str = "int8", *, weight_only: bool = True
) -> keras.layers.Layer:
    """Quantizes ``module`` in place for inference and returns it.

    Args:
        module: a built texkit module (any Keras layer tree): its Dense and EinsumDense layers
            and its embedding tables are quantized (see the module docstring).
        mode: ``"int8"`` or ``"int4"`` (int4 kernels, int8 tables).
        weight_only: store the weights as integers and compute in float (the default, the
            fast form on a CPU); ``False``: Keras' int8 that also quantizes each call's inputs
            (``"int8"`` only).

    Returns:
        ``module``, quantized; :func:`quantization_mode` gives ``mode``.

    Raises:
        ValueError: an unknown ``mode``, an unbuilt or already quantized module, a layer with
            LoRA enabled or computing in float16, nothing to quantize; nothing is changed.
        TypeError: ``module`` is not a Keras layer or ``weight_only`` not a bool.

    Example::

        classifier = tx.modules.BERTClassifier.from_pretrained(folder)
        tx.tasks.quantize(classifier, "int8")
        tx.tasks.quantization_mode(classifier)  # "int8"
    """
    _check_arguments(module, mode, weight_only)
    denses, tables = _plan(module, mode)
    # Keras runs a full garbage collection each time a layer drops its float kernel: with the
    # objects that exist now frozen out of it, each takes milliseconds instead of a tenth of a
    # second; one collection at the end frees what the float weights left in cycles.
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        for layer in denses:
            layer.quantize(mode, config=_config(mode, weight_only))
        for table in tables:
            quantize_table(table)
    finally:
        if freeze:
            gc.unfreeze()
            gc.collect()
    if isinstance(module, ModuleBase):
        module._quantization_mode = mode
        module._quantization_weight_only = weight_only
    return module


register_quantizer(quantize)
