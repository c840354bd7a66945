"""The contract every texkit module keeps, checked in one place.

A module test calls :func:`check_module_contract` with a factory and example inputs; it checks

1. config round trip: ``from_config(get_config())`` gives the same config and, with the same
   weights, the same outputs;
2. ``.keras`` saving: a functional model made of the module saves and loads back with the same
   class, hparams and outputs;
3. ``tf.function``: the same outputs inside a graph;
4. ``jit_compile=True`` (XLA) with static shapes: the same outputs;
5. ``tf.data``: batches from a dataset give the same outputs, also through ``Model.predict``;
6. ``mixed_bfloat16``: float32 variables, bfloat16 outputs, close to the float32 outputs (integer
   outputs, such as argmax predictions, and one-hot outputs of such choices only keep their
   shape);
7. ``training=True`` runs eagerly, in ``tf.function`` and under XLA with finite outputs of the
   same shapes and dtypes;
8. padding invariance: appending padding steps and filling padded steps with other (valid) values
   changes no output at a valid step.

Outputs are compared after ``training=False`` calls, so the checks are deterministic; a module's
own test checks what ``training=True`` computes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

__all__ = ["check_module_contract"]


def _to_numpy(structure: Any) -> list[np.ndarray]:
    return [np.asarray(keras.ops.convert_to_numpy(x)) for x in tf.nest.flatten(structure)]


def _assert_close(actual: Any, expected: Any, atol: float, rtol: float, what: str) -> None:
    actual_list, expected_list = _to_numpy(actual), _to_numpy(expected)
    assert len(actual_list) == len(expected_list), f"{what}: number of outputs differs"
    for index, (a, e) in enumerate(zip(actual_list, expected_list, strict=True)):
        assert a.shape == e.shape, f"{what}: output {index} has shape {a.shape}, expected {e.shape}"
        np.testing.assert_allclose(
            a.astype(np.float64),
            e.astype(np.float64),
            atol=atol,
            rtol=rtol,
            err_msg=f"{what}: output {index} differs",
        )


def _call(module: Any, inputs: Mapping, call_kwargs: Mapping, training: bool = False) -> Any:
    return module(**inputs, **call_kwargs, training=training)


def _is_one_hot(value: Any) -> bool:
    """Whether a float output holds choices: rows of zeros with at most one 1 (the one-hot of
    argmax predictions), which flip under bfloat16 as integer predictions do."""
    value = np.asarray(value)
    if value.ndim < 2 or value.shape[-1] < 2:
        return False
    return bool(np.isin(value, (0.0, 1.0)).all() and (value.sum(axis=-1) <= 1).all())


def _input_spec(name: str, value: np.ndarray, time_axis: int | None) -> keras.KerasTensor:
    shape = list(value.shape[1:])
    if time_axis is not None:
        shape[time_axis - 1] = None
    return keras.Input(shape=tuple(shape), dtype=value.dtype.name, name=name)


def _pad(
    inputs: Mapping[str, np.ndarray],
    sequence_inputs: Mapping[str, int],
    lengths: np.ndarray,
    extra: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Appends ``extra`` steps and overwrites every padded step with values drawn from the input."""
    padded = dict(inputs)
    for name, axis in sequence_inputs.items():
        value = np.asarray(inputs[name])
        pad_shape = list(value.shape)
        pad_shape[axis] = extra
        pool = value.reshape(-1) if value.ndim else value
        filler = rng.choice(pool, size=pad_shape).astype(value.dtype)
        grown = np.concatenate([value, filler], axis=axis)
        moved = np.moveaxis(grown, axis, 1).copy()
        for batch_index, length in enumerate(lengths):
            tail = moved[batch_index, length:]
            moved[batch_index, length:] = rng.choice(pool, size=tail.shape).astype(value.dtype)
        padded[name] = np.moveaxis(moved, 1, axis)
    return padded


def _valid_steps(value: np.ndarray, axis: int, lengths: np.ndarray, max_time: int) -> np.ndarray:
    moved = np.moveaxis(value, axis, 1)[:, :max_time]
    mask = np.arange(max_time)[None, :] < lengths[:, None]
    return moved[mask]


def check_module_contract(
    make_module: Callable[..., keras.layers.Layer],
    inputs: Mapping[str, np.ndarray],
    tmp_path: os.PathLike,
    call_kwargs: Mapping[str, Any] | None = None,
    sequence_inputs: Mapping[str, int] | None = None,
    length_key: str = "sequence_length",
    lengths: np.ndarray | None = None,
    output_time_axes: Any = None,
    atol: float = 1e-5,
    bf16_tolerance: float = 2e-2,
    float32_outputs: Any = None,
) -> Any:
    """Runs the module contract checks; returns the float32 eager outputs.

    Args:
        make_module: ``make_module(**layer_kwargs)`` returns a new module; the harness passes
            ``dtype="mixed_bfloat16"`` for the mixed-precision check. Randomly initialized
            modules are fine: weights are copied between the instances it compares.
        inputs: the tensor arguments of ``call``, by name, as NumPy arrays (batch first).
        tmp_path: a folder for the ``.keras`` file.
        call_kwargs: non-tensor ``call`` arguments (python values).
        sequence_inputs: names of inputs with a time axis, mapped to that axis, for the padding
            check. ``None`` skips the padding check.
        length_key: the input that holds ``sequence_length``, if the module takes one.
        lengths: the valid length of each example, when the module takes no ``sequence_length``
            (e.g. an embedder, whose outputs are per step).
        output_time_axes: the time axis of each output (a structure like the outputs, or one int
            for every output; ``None`` entries mark outputs without a time axis).
        atol: tolerance between float32 runs (eager, graph, XLA, reloaded).
        bf16_tolerance: absolute and relative tolerance of the ``mixed_bfloat16`` outputs.
        float32_outputs: a structure like the outputs, true where an output is float32 by design
            under ``mixed_bfloat16`` (a probability or a softmax's logits); ``None``: every float
            output follows the compute dtype.
    """
    call_kwargs = dict(call_kwargs or {})
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    module = make_module()
    reference = _call(module, inputs, call_kwargs)

    # 1. Config round trip.
    config = module.get_config()
    clone = type(module).from_config(config)
    if hasattr(module, "hparams"):
        assert clone.hparams == module.hparams, "from_config(get_config()) changed the hparams"
    assert clone.get_config() == config, "get_config() changed after from_config()"
    _call(clone, inputs, call_kwargs)
    clone.set_weights(module.get_weights())
    _assert_close(_call(clone, inputs, call_kwargs), reference, 0, 0, "from_config clone")

    # 2. .keras save and load of a functional model made of the module.
    time_axes = dict(sequence_inputs or {})
    symbolic = {k: _input_spec(k, v, time_axes.get(k)) for k, v in inputs.items()}
    model = keras.Model(symbolic, _call(module, symbolic, call_kwargs))
    path = os.path.join(os.fspath(tmp_path), f"{module.name}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    loaded_module = loaded.get_layer(module.name)
    assert type(loaded_module) is type(module), f"loaded {type(loaded_module)}"
    if hasattr(module, "hparams"):
        assert loaded_module.hparams == module.hparams, "hparams changed through .keras"
    _assert_close(loaded(inputs, training=False), reference, atol, 0, ".keras reload")

    # 3. tf.function.
    graph_fn = tf.function(lambda feed: _call(module, feed, call_kwargs))
    _assert_close(graph_fn(inputs), reference, atol, 0, "tf.function")

    # 4. XLA on static shapes.
    xla_fn = tf.function(lambda feed: _call(module, feed, call_kwargs), jit_compile=True)
    _assert_close(xla_fn(inputs), reference, atol, 1e-5, "jit_compile=True")

    # 5. tf.data input, batch by batch and through Model.predict.
    batch = max(1, len(next(iter(inputs.values()))) // 2)
    dataset = tf.data.Dataset.from_tensor_slices(inputs).batch(batch)
    pieces = [_to_numpy(graph_fn(feed)) for feed in dataset]
    joined = [np.concatenate(parts, axis=0) for parts in zip(*pieces, strict=True)]
    _assert_close(joined, reference, atol, 0, "tf.data batches")
    _assert_close(model.predict(dataset, verbose=0), reference, atol, 0, "Model.predict(dataset)")

    # 6. mixed_bfloat16.
    mixed = make_module(dtype="mixed_bfloat16")
    _call(mixed, inputs, call_kwargs)
    mixed.set_weights(module.get_weights())
    for weight in mixed.weights:
        assert keras.backend.standardize_dtype(weight.dtype) in (
            "float32",
            "int64",
            "uint32",
            "int32",
        ), f"mixed_bfloat16 variable {weight.path} has dtype {weight.dtype}"
    mixed_outputs = _call(mixed, inputs, call_kwargs)
    mixed_floats, reference_floats = [], []
    flat_reference = tf.nest.flatten(reference)
    stays_float32 = (
        [False] * len(flat_reference)
        if float32_outputs is None
        else tf.nest.flatten(float32_outputs)
    )
    for output, expected, float32 in zip(
        tf.nest.flatten(mixed_outputs), flat_reference, stays_float32, strict=True
    ):
        if keras.backend.standardize_dtype(expected.dtype).startswith("float"):
            wanted = "float32" if float32 else "bfloat16"
            assert keras.backend.standardize_dtype(output.dtype) == wanted, (
                f"mixed_bfloat16 output has dtype {output.dtype}, expected {wanted}"
            )
            if _is_one_hot(expected):  # choices (a decoder's soft_sample): as integer ones
                assert tuple(output.shape) == tuple(expected.shape), "mixed_bfloat16: shape"
                continue
            mixed_floats.append(output)
            reference_floats.append(expected)
        else:
            # Integer outputs (argmax predictions) may flip where two logits are within
            # bfloat16's precision of each other: only their shape must agree.
            assert tuple(output.shape) == tuple(expected.shape), "mixed_bfloat16: shape"
    _assert_close(mixed_floats, reference_floats, bf16_tolerance, bf16_tolerance, "mixed_bfloat16")

    # 7. Training mode (dropout and the like) runs eagerly, in a graph and under XLA, giving
    # finite outputs of the inference shapes and dtypes.
    def train_call(feed):
        return _call(module, feed, call_kwargs, training=True)

    for how, fn in [
        ("eager", train_call),
        ("tf.function", tf.function(train_call)),
        ("jit_compile=True", tf.function(train_call, jit_compile=True)),
    ]:
        outputs = fn(inputs)
        for got, want in zip(tf.nest.flatten(outputs), tf.nest.flatten(reference), strict=True):
            assert tuple(got.shape) == tuple(want.shape), f"training=True ({how}): shape"
            assert got.dtype == want.dtype, f"training=True ({how}): dtype"
            assert np.all(np.isfinite(keras.ops.convert_to_numpy(got))), f"training ({how})"

    # 8. Padding invariance.
    if sequence_inputs:
        lengths = np.asarray(inputs[length_key] if lengths is None else lengths).astype(np.int64)
        rng = np.random.default_rng(0)
        padded = _pad(inputs, sequence_inputs, lengths, extra=3, rng=rng)
        padded_outputs = _to_numpy(_call(module, padded, call_kwargs))
        reference_list = _to_numpy(reference)
        axes = output_time_axes
        if axes is None or isinstance(axes, int):
            axes = [axes] * len(reference_list)
        else:
            axes = tf.nest.flatten(axes)
        for index, (got, want, axis) in enumerate(
            zip(padded_outputs, reference_list, axes, strict=True)
        ):
            if axis is None:
                np.testing.assert_allclose(got, want, atol=atol, err_msg=f"padding: output {index}")
                continue
            max_time = want.shape[axis]
            np.testing.assert_allclose(
                _valid_steps(got, axis, lengths, max_time),
                _valid_steps(want, axis, lengths, max_time),
                atol=atol,
                err_msg=f"padding changed output {index} at a valid step",
            )
    return reference


def tokenizer_serving(tokenizer: Any, serve: Any) -> tf.Module:
    """A ``tf.Module`` holding ``tokenizer`` (so a SavedModel keeps its tables) whose ``serve``
    is ``serve(tokenizer, texts)`` as a ``tf.function`` of ``[None]`` strings: the SavedModel
    round trips of the tokenizer tests."""
    module = tf.Module()
    module.tokenizer = tokenizer
    module.serve = tf.function(
        lambda texts: serve(module.tokenizer, texts),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    return module
