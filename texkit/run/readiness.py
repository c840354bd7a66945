"""Pre-flight checks of a Trainer's step: what XLA and TPUs need, under the Trainer's strategy.

:meth:`texkit.run.Trainer.check_static_shapes` calls :func:`check_replica_step`. A TPU compiles
the step that each replica runs, once, with XLA, for fixed shapes; CPUs and GPUs accept much that
a TPU refuses. The check finds, on any machine and under any strategy:

- a global batch that the replicas cannot share evenly;
- a feature whose shape is not fully known (no ``drop_remainder``, sequences not padded to one
  length), an int64 feature (TPUs want int32) or a string feature (text must become ids in the
  input pipeline);
- an op in the step that has no XLA kernel (string ops, Python functions, ...), named with its
  node;
- a shape that depends on the data (``tf.where`` with one argument, ``tf.boolean_mask``,
  ``tf.unique``, ...), named with the op that makes it.

Under a strategy (``one_device``, ``mirrored``, ``multi_worker``), the replica's step is
compiled in a replica context with the per-replica batch: its forward pass, loss and
gradients (the model's ``compute_loss``), and then the optimizer's update alone on the same
shapes. The cross-replica sum of the gradients between them is what every strategy inserts and
XLA compiles everywhere; it is not part of what is compiled here. XLA cannot compile one function
over the variables of several devices, which is why the whole distributed step cannot be compiled
on a machine with several CPU or GPU devices.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import keras
import tensorflow as tf

__all__ = ["DATA_DEPENDENT_OPS", "check_replica_step", "replica_batch_spec"]

# Ops whose output shape depends on the values of their input: XLA gives them a bounded dynamic
# shape (a TPU pads to the bound or refuses) or cannot compile them.
DATA_DEPENDENT_OPS = frozenset(
    {
        "Where",
        "Unique",
        "UniqueV2",
        "UniqueWithCounts",
        "UniqueWithCountsV2",
        "DynamicPartition",
        "NonMaxSuppressionV3",
        "NonMaxSuppressionV4",
        "NonMaxSuppressionV5",
        "ListDiff",
        "SparseSegmentSum",
        "RaggedRange",
        "StringSplitV2",
        "DenseToSparseSetOperation",
        "SetSize",
    }
)
_NO_KERNEL = re.compile(
    r"No registered '([\w>]+)' OpKernel for (\w+) devices compatible with node \{\{node ([^}]+)\}\}"
)
# Strategies whose optimizer update needs a replica context (and, for all but one_device,
# whose variables are per replica): their step compiles in a replica context.
_REPLICATED = (
    tf.distribute.OneDeviceStrategy,
    tf.distribute.MirroredStrategy,
    tf.distribute.MultiWorkerMirroredStrategy,
)


def _flatten_with_paths(structure: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(structure, Mapping):
        items = [(f"{prefix}[{key!r}]", value) for key, value in structure.items()]
    elif isinstance(structure, (tuple, list)):
        items = [(f"{prefix}[{i}]", value) for i, value in enumerate(structure)]
    else:
        return [(prefix, structure)]
    return [leaf for path, value in items for leaf in _flatten_with_paths(value, path)]


def _input_pipelines(strategy: tf.distribute.Strategy) -> tuple[int, int]:
    """(the number of input pipelines, this process's index) under ``strategy``."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 1, 0
    cluster = resolver.cluster_spec().as_dict()
    if not cluster or resolver.task_type is None:
        return 1, 0
    chiefs = len(cluster.get("chief", []))
    workers = len(cluster.get("worker", []))
    index = resolver.task_id or 0
    if resolver.task_type == "worker":
        index += chiefs
    return chiefs + workers, index


def replica_batch_spec(source: Any, split: str, strategy: tf.distribute.Strategy) -> Any:
    """The spec of the batch one replica gets from a data split under ``strategy``.

    ``source`` is a ``tf.data.Dataset`` of global batches (split over the replicas) or a function
    ``input_context -> tf.data.Dataset`` of per-replica batches (called here with this process's
    input context, as ``distribute_datasets_from_function`` would).

    Raises:
        ValueError: a global batch the replicas cannot share evenly, or one of unknown size.
    """
    replicas = strategy.num_replicas_in_sync
    if not isinstance(source, tf.data.Dataset):
        pipelines, index = _input_pipelines(strategy)
        context = tf.distribute.InputContext(pipelines, index, replicas)
        return source(context).element_spec
    spec = source.element_spec
    if replicas == 1:
        return spec
    leaves = _flatten_with_paths(spec, "batch")
    sizes = {s.shape[0] if s.shape.rank else None for _, s in leaves}
    if len(sizes) != 1 or None in sizes:
        path, leaf = next((p, s) for p, s in leaves if not s.shape.rank or s.shape[0] is None)
        raise ValueError(
            f"data split {split!r}: {path} has shape {leaf.shape}; the {replicas} replicas need "
            "global batches of one known size (batch with drop_remainder=True)"
        )
    (size,) = sizes
    if size % replicas:
        raise ValueError(
            f"data split {split!r}: the global batch of {size} is not divisible by the "
            f"{replicas} replicas in sync; use a multiple of {replicas}"
        )
    return tf.nest.map_structure(
        lambda s: tf.TensorSpec([size // replicas, *s.shape[1:]], s.dtype, name=s.name), spec
    )


def check_batch_spec(spec: Any, split: str) -> None:
    """Raises ValueError naming the first feature of ``spec`` that a TPU step cannot take."""
    for path, leaf in _flatten_with_paths(spec, "batch"):
        if leaf.dtype == tf.string:
            raise ValueError(
                f"data split {split!r}: {path} is a string tensor; a TPU step takes no strings: "
                "turn text into ids in the input pipeline"
            )
        if not leaf.shape.is_fully_defined():
            raise ValueError(
                f"data split {split!r}: {path} has shape {leaf.shape}, not fully known; batch "
                "with drop_remainder=True and pad sequences to a fixed length"
            )
        if leaf.dtype == tf.int64:
            raise ValueError(f"data split {split!r}: {path} is int64; TPUs want int32")


def _zeros(spec: Any) -> Any:
    return tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), spec)


def _graph_nodes(graph_def: Any) -> list[Any]:
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return nodes


def _compile(function: Any, args: tuple, what: str) -> str:
    """The HLO of ``function`` compiled with XLA; errors name the op that breaks it."""
    traced = function.get_concrete_function(*args)
    graph_def = traced.graph.as_graph_def()
    try:
        hlo = function.experimental_get_compiler_ir(*args)(stage="hlo")
    except (ValueError, tf.errors.OpError) as error:
        message = str(error)
        found = _NO_KERNEL.search(message)
        if found:
            op, device, node = found.groups()
            raise ValueError(
                f"the {what} has op {op} (node {node!r}), which has no XLA kernel for {device}: "
                "a TPU cannot run it either; replace it or move it into the input pipeline"
            ) from None
        first = (message.strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"the {what} does not compile with XLA: {first}") from error
    if "<=" in hlo:
        ops = sorted(
            {f"{n.op} ({n.name!r})" for n in _graph_nodes(graph_def) if n.op in DATA_DEPENDENT_OPS}
        )
        cause = f" made by {', '.join(ops)}" if ops else ""
        raise ValueError(
            f"the compiled {what} has a shape that depends on the data{cause}; TPUs need every "
            "shape fixed when the step compiles (use masks of fixed size instead)"
        )
    return hlo


def _replica_gradients(model: keras.Model, data: Any) -> Any:
    """Forward pass, loss and gradients of one replica, as Keras' TensorFlow train step does."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    with tf.GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        loss = model.optimizer.scale_loss(loss)
    return loss, tape.gradient(loss, model.trainable_weights)


def check_replica_step(
    model: keras.Model, strategy: tf.distribute.Strategy, spec: Any, optimizer_fn: Any
) -> str:
    """Compiles the step one replica runs on batches of ``spec`` with XLA; returns its HLO.

    Under the default strategy the whole train step (``model.train_step``) is compiled. Under
    ``one_device``, ``mirrored`` and ``multi_worker``, the replica's forward pass, loss and
    gradients are compiled in a replica context, and the optimizer's update separately
    (``optimizer_fn()`` makes an optimizer like the model's, applied to variables of the
    trainable weights' shapes); the HLO returned is the replica's.

    Raises:
        ValueError: naming the op that has no XLA kernel, makes a string or a data-dependent
            shape.
    """
    if isinstance(strategy, tf.distribute.TPUStrategy):
        raise ValueError(
            "under 'tpu' the TPU compiles the step at its first call; run the check before, "
            "on any machine, under 'default' or 'mirrored' (the same per-replica batch)"
        )
    batch = _zeros(spec)
    if not isinstance(strategy, _REPLICATED):
        with strategy.scope():
            step = tf.function(model.train_step, jit_compile=True)
            return _compile(step, (batch,), "train step")
    gradients = tf.function(lambda data: _replica_gradients(model, data), jit_compile=True)
    results: list[str] = []

    def in_replica(data: Any) -> None:
        if not results:
            results.append(_compile(gradients, (data,), "replica step (forward and gradients)"))

    local = strategy.experimental_distribute_values_from_function(lambda context: batch)
    strategy.run(in_replica, args=(local,))
    weights = model.trainable_weights
    with tf.distribute.get_strategy().scope():
        optimizer = optimizer_fn()
        stand_ins = [tf.Variable(tf.zeros(w.shape, w.dtype), trainable=True) for w in weights]
        optimizer.build(stand_ins)

        def update(grads: Any) -> Any:
            optimizer.apply(grads, stand_ins)
            return optimizer.iterations

        grads = [tf.zeros(w.shape, w.dtype) for w in weights]
        _compile(tf.function(update, jit_compile=True), (grads,), "optimizer update")
    return results[0]
