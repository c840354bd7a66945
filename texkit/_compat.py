"""Every use of a private Keras or TensorFlow API in texkit, and nothing else.

Each wrapper below reaches into an internal that a Keras or TensorFlow release may move or
change. It says which versions it was checked on (``CHECKED_ON``) and why no public API does the
same; ``tests/test_compat.py`` exercises each one and fails naming the wrapper when an upgrade
breaks it. No other texkit module imports ``keras.src`` or ``tensorflow.python``, or calls a
private method of a Keras or TensorFlow object (a lint test checks that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2

__all__ = [
    "CHECKED_ON",
    "DropoutRNNCell",
    "average_scalar_logs_across_workers",
    "build_model_from_specs",
    "compiled_by_xla",
    "cond_with_function_branches",
    "one_replica_spec",
    "set_worker_heartbeat",
    "dense_kernel",
    "remove_variable",
    "sublayers",
    "unlocked_tracker",
    "trace_time_collective_keys",
    "unique_layer_name",
]

# The versions every wrapper here was checked on (tests/test_compat.py runs them on the installed
# ones); setup.cfg pins TensorFlow to 2.21.* and Keras to >=3.15.
CHECKED_ON = {"keras": ("3.15",), "tensorflow": ("2.21",)}


# -- Keras: layer names -----------------------------------------------------------------------


def unique_layer_name(name: str) -> str:
    """``name``, numbered (``word_embedder_1``) if Keras has given it out before.

    Keras numbers the default names of its own layers this way; a layer constructed with an
    explicit ``name`` is not numbered, and Keras exports no function that does it. Without the
    helper (moved in some release) the name is used as it is: models with two modules of one
    default name then need explicit names.
    """
    try:
        from keras.src.utils.naming import uniquify
    except ImportError:  # pragma: no cover - exercised only on a Keras that moved it
        return name
    return uniquify(name)


# -- Keras: the layers inside a layer ----------------------------------------------------------


def sublayers(layer: Any, include_self: bool = False, recursive: bool = True) -> list:
    """The layers Keras tracks inside ``layer`` (in attributes, lists and dicts), each once,
    depth first; ``recursive=False``: its direct children only.

    Keras walks them with the private ``Layer._flatten_layers``; the public ``Model.layers``
    lists a model's direct layers only, and a ``Layer`` has no public equivalent.
    """
    return list(layer._flatten_layers(include_self=include_self, recursive=recursive))


def dense_kernel(layer: Any) -> Any:
    """The kernel variable of a ``Dense`` or ``EinsumDense`` layer, itself: the public
    ``layer.kernel`` is, with LoRA enabled, the computed ``W + A B`` (Keras keeps the variable in
    ``_kernel``)."""
    return layer._kernel


def remove_variable(layer: Any, name: str) -> None:
    """Deletes the variable attribute ``name`` of ``layer`` as Keras' ``Layer.__delattr__`` does
    (untracked from the layer's weights), without the full ``gc.collect()`` Keras runs after each
    one (seconds in a process that holds a large model)."""
    layer._untrack_variable(getattr(layer, name))
    super(keras.layers.Layer, layer).__delattr__(name)


class unlocked_tracker:  # noqa: N801 - a context manager used like a function
    """``with unlocked_tracker(layer):`` lets a built layer add weights (Keras locks its tracker
    after ``build``; its own ``quantize`` unlocks it the same way)."""

    def __init__(self, layer: Any):
        self.layer = layer

    def __enter__(self) -> None:
        self.layer._tracker.unlock()

    def __exit__(self, *exc: Any) -> None:
        self.layer._tracker.lock()


# -- Keras: RNN cell dropout --------------------------------------------------------------------


def _dropout_rnn_cell() -> type:
    # keras.layers.RNN recognizes the cells whose dropout masks it prepares and resets by this
    # mixin, which Keras does not export; texkit's cell wrappers derive from it so that RNN
    # manages their masks (and their wrapped cell's) like those of its own cells.
    from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

    return DropoutRNNCell


DropoutRNNCell = _dropout_rnn_cell()


# -- Keras: training under a distribution strategy ----------------------------------------------


def one_replica_spec(spec: Any) -> Any:
    """The spec of one replica's batch, from a distributed dataset's ``PerReplicaSpec``."""
    value_specs = getattr(spec, "_value_specs", None)
    return value_specs[0] if value_specs else spec


def build_model_from_specs(model: keras.Model, strategy: tf.distribute.Strategy) -> None:
    """Makes ``fit`` trace its loss and metrics from the data's specs, reading no batch.

    Under a distribution strategy, Keras reads one batch before training (and starts the data
    again) only to learn its shapes. That extra pass advances every ``shuffle`` that reshuffles
    each iteration, so the run would see other batches than the same run without a strategy;
    under ``MultiWorkerMirroredStrategy`` it also fails for features that are dicts. The
    dataset's ``element_spec`` has the same shapes. Keras has no public hook for this, so the
    model's ``_maybe_symbolic_build`` is replaced by one that builds from the specs.
    """

    def symbolic_build(iterator: Any = None, data_batch: Any = None) -> None:
        if data_batch is None and iterator is not None:
            spec = iterator.data_adapter.get_tf_dataset().element_spec
            data_batch = tf.nest.map_structure(one_replica_spec, spec)
        if data_batch is not None:
            with strategy.scope():
                model._symbolic_build(data_batch=data_batch)

    model._maybe_symbolic_build = symbolic_build


def average_scalar_logs_across_workers() -> None:
    """Lets ``fit`` report its loss and metrics under ``MultiWorkerMirroredStrategy``.

    Keras 3 averages each logged value across workers along axis 0, which a scalar does not have
    ("Invalid reduction dimension 0 for input with 0 dimensions", tensorflow/tensorflow#72388).
    Scalars are averaged over the workers instead; everything else goes through Keras unchanged.
    This replaces Keras' ``reduce_per_replica`` for the process, once (it is idempotent).
    """
    from keras.src.backend.tensorflow import trainer as keras_tf_trainer

    original = keras_tf_trainer.reduce_per_replica
    if getattr(original, "_texkit_scalar_mean", False):
        return

    def reduce_per_replica(values: Any, strategy: Any, reduction: str) -> Any:
        if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or reduction not in (
            "auto",
            "mean",
        ):
            return original(values, strategy, reduction)

        def reduce(value: Any) -> Any:
            if getattr(value, "shape", None) is not None and value.shape.rank == 0:
                return strategy.reduce("MEAN", value, axis=None)
            return original(value, strategy, reduction)

        return tf.nest.map_structure(reduce, values)

    reduce_per_replica._texkit_scalar_mean = True
    keras_tf_trainer.reduce_per_replica = reduce_per_replica


# -- TensorFlow: lost workers -------------------------------------------------------------------


def set_worker_heartbeat(
    cluster_spec: tf.train.ClusterSpec, task_type: str, seconds: float
) -> None:
    """Makes the ``MultiWorkerMirroredStrategy`` of task ``task_type`` of ``cluster_spec``, made
    next, find a silent worker within ``seconds``.

    TensorFlow watches the workers of such a strategy in one of two ways. By default it starts
    its coordination service (on the chief, or worker 0): every worker sends it heartbeats, and
    one not heard from within the service's heartbeat timeout (10 s unless configured) is
    reported to all, whose collectives are aborted. The strategy configures the service only
    when nothing has before it, and then turns its other way off: a thread that asks every peer
    whether it answers. So the service is configured here first, the way the strategy would
    (same leader, same jobs), with the timeout ``seconds``; TensorFlow has no public option for
    it (``CommunicationOptions.timeout_seconds`` bounds each collective instead, which also fails
    a healthy worker that is slow, e.g. compiling or saving). The thread's settings, class
    attributes of TensorFlow's ``CollectiveAllReduceExtended``, are set too (every ``seconds``,
    waiting ``seconds`` for an answer, three times), for a process whose coordination service
    was configured by someone else. Call it before any other TensorFlow work of the process.
    """
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
    from tensorflow.python.distribute import collective_all_reduce_strategy as collective
    from tensorflow.python.distribute import multi_worker_util
    from tensorflow.python.eager import context

    extended = collective.CollectiveAllReduceExtended
    extended._enable_check_health = True
    extended._check_health_interval = seconds
    extended._check_health_timeout = seconds
    jobs = [job for job in ("chief", "worker") if job in cluster_spec.jobs]
    if context.context().coordination_service is not None or task_type not in jobs:
        return
    context.context().configure_coordination_service(
        service_type="standalone",
        service_leader=multi_worker_util.coordination_leader(cluster_spec),
        coordinated_jobs=[
            coordination_config_pb2.CoordinatedJob(name=job, num_tasks=cluster_spec.num_tasks(job))
            for job in jobs
        ],
        heartbeat_timeout_in_ms=max(1, round(seconds * 1000)),
    )


# -- TensorFlow: collectives inside Keras' multi-step loop ---------------------------------------


def trace_time_collective_keys() -> None:
    """Lets ``steps_per_execution > 1`` run under ``mirrored`` and ``multi_worker``.

    Keras runs several steps per call in a ``tf.while_loop`` whose body calls the train step in
    a ``tf.cond``. Under these strategies the step all-reduces the gradients with collective
    ops, whose instance key TensorFlow feeds at call time by default; ``tf.cond`` does not pass
    such a call-time value on to the outer function, and the call fails ("You must feed a value
    for placeholder tensor '.../while/cond/Placeholder'"). With keys assigned when the function
    is traced (TensorFlow's own mode for graphs without call-time captures) the step runs. The
    keys must then be assigned in the same order on every worker: every worker must trace the
    same functions in the same order, which batches of fixed shapes guarantee (the Trainer
    checks them first under ``multi_worker``; in one process the order is the same anyway).
    Process-wide; TensorFlow has no public option for it.
    """
    from tensorflow.python.distribute import cross_device_utils

    cross_device_utils.CollectiveReplicaLauncher._prefer_unique_instance_key = False


# -- TensorFlow: conditionals in graphs ---------------------------------------------------------


def cond_with_function_branches(
    pred: tf.Tensor, true_fn: Callable[[], Any], false_fn: Callable[[], Any]
) -> Any:
    """``tf.cond`` whose branches stay functions in a graph: only the branch taken runs.

    In a graph TensorFlow lowers the ``If`` op of ``tf.cond``, by default, into
    ``Switch``/``Merge`` nodes: both branches join the calling graph and every call walks the
    nodes of the branch not taken. The ``If`` op keeps its branches as functions when its
    private ``_lower_using_switch_merge`` attribute is false, as TensorFlow itself sets it under
    XLA. The public way to the same (a branch called as a non-inlined function) is slower when
    the branch is taken (``benchmarks/RESULTS.md``, tokenization). Where the attribute cannot be
    set the lowered ``tf.cond`` is kept: the result is the same.
    """
    if tf.executing_eagerly():
        return tf.cond(pred, true_fn, false_fn)
    graph = tf.compat.v1.get_default_graph()
    first = len(graph.get_operations())
    result = tf.cond(pred, true_fn, false_fn)
    for op in graph.get_operations()[first:]:
        if op.type in ("If", "StatelessIf"):
            try:
                op._set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=False))
            except AttributeError:
                pass
    return result


# -- TensorFlow: is this graph compiled by XLA? --------------------------------------------------


def compiled_by_xla() -> bool:
    """Whether the ops being built now will be compiled by XLA: traced inside a
    ``tf.function(jit_compile=True)`` (or a graph nested in one). False when executing eagerly.

    Some ops have a best form that differs between the two: writing a few steps into a key/value
    cache is an in-place ``dynamic_update_slice`` under XLA, while outside XLA that op compiles
    and launches an XLA computation of its own at every call (``texkit.core.attention.
    write_steps``). TensorFlow tracks this in a private helper of its control flow code; there is
    no public query. Where the helper is missing, this answers False (the form that works
    everywhere).
    """
    if tf.executing_eagerly():
        return False
    try:
        from tensorflow.python.ops import control_flow_util
    except ImportError:
        return False
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))
