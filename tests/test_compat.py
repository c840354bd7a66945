"""Every private Keras/TensorFlow use in texkit._compat still works, and there is none elsewhere.

Each test exercises one wrapper on the installed Keras and TensorFlow; a failure names the wrapper
so that an upgrade that breaks one says where to look.
"""

import ast
import inspect
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from texkit import _compat
from texkit.run import strategy_from_hparams

TEXKIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "texkit")


def _broken(wrapper, detail):
    pytest.fail(
        f"texkit._compat.{wrapper} no longer works on Keras {keras.__version__} / TensorFlow "
        f"{tf.__version__} (checked on {_compat.CHECKED_ON}): {detail}"
    )


def _mirrored():
    # texkit's one MirroredStrategy per device set: separate ones would mix up their collectives.
    return strategy_from_hparams({"type": "mirrored", "devices": ["/cpu:0", "/cpu:1"]})


def test_unique_layer_name_numbers_repeated_names():
    first = _compat.unique_layer_name("texkit_compat_probe")
    second = _compat.unique_layer_name("texkit_compat_probe")
    if first == second or not second.startswith(first):
        _broken("unique_layer_name", f"gave {first!r} then {second!r}")


def test_dropout_rnn_cell_is_the_mixin_keras_rnn_manages():
    cell = keras.layers.LSTMCell(4, dropout=0.5, recurrent_dropout=0.5)
    if not isinstance(cell, _compat.DropoutRNNCell):
        _broken("DropoutRNNCell", "keras.layers.LSTMCell no longer derives from it")
    for method in ("get_dropout_mask", "get_recurrent_dropout_mask", "reset_dropout_mask"):
        if not callable(getattr(cell, method, None)):
            _broken("DropoutRNNCell", f"the mixin has no {method}()")
    # keras.layers.RNN recognizes such cells by the mixin and resets their masks after a call.
    rnn = keras.layers.RNN(cell)
    rnn(tf.ones([2, 3, 5]), training=True)
    if cell._dropout_mask is not None:  # noqa: SLF001 - what RNN resets
        _broken("DropoutRNNCell", "keras.layers.RNN no longer resets the cell's dropout mask")


def test_one_replica_spec_is_one_replicas_batch():
    strategy = _mirrored()
    dataset = tf.data.Dataset.from_tensor_slices(np.zeros([8, 3], np.float32))
    dataset = dataset.batch(4, drop_remainder=True)
    spec = strategy.experimental_distribute_dataset(dataset).element_spec
    one = _compat.one_replica_spec(spec)
    if not isinstance(one, tf.TensorSpec) or one.shape.as_list() != [2, 3]:
        _broken("one_replica_spec", f"gave {one!r} for {spec!r}")
    plain = tf.TensorSpec([4, 3], tf.float32)
    assert _compat.one_replica_spec(plain) is plain


def test_build_model_from_specs_is_what_fit_calls_and_reads_no_batch():
    strategy = _mirrored()
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    _compat.build_model_from_specs(model, strategy)
    ours = model._maybe_symbolic_build
    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return ours(*args, **kwargs)

    model._maybe_symbolic_build = counted
    reads = tf.Variable(0)

    def count_read(x, y):
        reads.assign_add(1)
        return x, y

    data = tf.data.Dataset.from_tensor_slices(
        (np.ones([8, 3], np.float32), np.ones([8, 2], np.float32))
    )
    history = model.fit(data.batch(4).map(count_read), epochs=1, verbose=0, shuffle=False).history
    if not calls:
        _broken("build_model_from_specs", "Model.fit no longer calls _maybe_symbolic_build")
    if int(reads.numpy()) != 2:
        _broken("build_model_from_specs", f"fit read {int(reads.numpy())} batches of 2")
    if sorted(history) != ["loss", "mae"]:
        _broken("build_model_from_specs", f"fit logged {sorted(history)}, not loss and mae")


def test_average_scalar_logs_replaces_the_function_keras_training_calls():
    from keras.src.backend.tensorflow import trainer as keras_tf_trainer

    original = keras_tf_trainer.reduce_per_replica
    parameters = list(inspect.signature(original).parameters)
    if parameters != ["values", "strategy", "reduction"]:
        _broken("average_scalar_logs_across_workers", f"reduce_per_replica{tuple(parameters)}")
    if "reduce_per_replica(" not in inspect.getsource(keras_tf_trainer.TensorFlowTrainer):
        _broken("average_scalar_logs_across_workers", "the trainer no longer calls it")
    _compat.average_scalar_logs_across_workers()
    patched = keras_tf_trainer.reduce_per_replica
    assert getattr(patched, "_texkit_scalar_mean", False)
    _compat.average_scalar_logs_across_workers()  # idempotent
    assert keras_tf_trainer.reduce_per_replica is patched
    # Other strategies go through Keras unchanged.
    value = tf.constant([1.0, 3.0])
    strategy = tf.distribute.get_strategy()
    np.testing.assert_array_equal(
        patched(value, strategy, "auto"), original(value, strategy, "auto")
    )


def test_cond_with_function_branches_keeps_the_if_op_unlowered():
    @tf.function
    def choose(flag, x):
        return _compat.cond_with_function_branches(flag, lambda: x * 2.0, lambda: x - 1.0)

    assert float(choose(tf.constant(True), tf.constant(3.0))) == 6.0
    assert float(choose(tf.constant(False), tf.constant(3.0))) == 2.0
    assert float(_compat.cond_with_function_branches(tf.constant(True), lambda: 1.0, lambda: 0.0))
    graph = choose.get_concrete_function(tf.constant(True), tf.constant(3.0)).graph
    ifs = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    if len(ifs) != 1 or ifs[0].get_attr("_lower_using_switch_merge") is not False:
        _broken("cond_with_function_branches", f"the If ops are {ifs}")


# Private uses: an import of Keras' or TensorFlow's internals, or one of these attributes.
_PRIVATE_MODULES = ("keras.src", "tensorflow.python", "tensorflow.core")
_PRIVATE_ATTRIBUTES = {
    "_flatten_layers",
    "_kernel",
    "_tracker",
    "_untrack_variable",
    "_set_attr",
    "_maybe_symbolic_build",
    "_symbolic_build",
    "_inputs_struct",
    "_value_specs",
    "reduce_per_replica",
}


def _private_uses(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            if name.startswith(_PRIVATE_MODULES):
                yield f"{path}:{node.lineno}: imports {name}"
        if isinstance(node, ast.Attribute) and node.attr in _PRIVATE_ATTRIBUTES:
            yield f"{path}:{node.lineno}: uses .{node.attr}"


def test_set_worker_heartbeat_configures_the_coordination_service_before_the_strategy():
    from tensorflow.python.distribute import collective_all_reduce_strategy as collective
    from tensorflow.python.eager import context

    extended = collective.CollectiveAllReduceExtended
    names = ("_enable_check_health", "_check_health_interval", "_check_health_timeout")
    before = {name: getattr(extended, name, None) for name in names}
    configured = context.context().coordination_service
    # The strategy configures the service only when nothing has, and then turns off its own
    # health-check thread, which reads the class attributes when the strategy is made.
    source = inspect.getsource(extended)
    if "context.context().coordination_service is None" not in source:
        _broken("set_worker_heartbeat", "the strategy no longer configures the service itself")
    if not all(f"self.{name}" in source for name in names):
        _broken("set_worker_heartbeat", "the strategy no longer reads its health-check settings")
    cluster = tf.train.ClusterSpec({"worker": ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]})
    try:
        context.context()._coordination_service_config = None
        _compat.set_worker_heartbeat(cluster, "worker", 7)
        config = context.context().coordination_service
        assert config.heartbeat_timeout_in_ms == 7000
        assert config.service_type == "standalone"
        assert config.service_leader == "/job:worker/replica:0/task:0"
        assert [(job.name, job.num_tasks) for job in config.coordinated_job_list] == [("worker", 3)]
        assert (extended._check_health_interval, extended._check_health_timeout) == (7, 7)
        # A service configured before (by the user, or an earlier strategy) is left as it is.
        _compat.set_worker_heartbeat(cluster, "worker", 3)
        assert context.context().coordination_service.heartbeat_timeout_in_ms == 7000
        # As the strategy does, nothing for a task outside the coordinated jobs.
        context.context()._coordination_service_config = None
        _compat.set_worker_heartbeat(cluster, "evaluator", 7)
        assert context.context().coordination_service is None
    finally:
        context.context()._coordination_service_config = configured
        for name, value in before.items():
            setattr(extended, name, value)
    # tests/run/test_faults.py: two-process runs find a silent worker within heartbeat_seconds,
    # and ride out a shorter pause than TensorFlow's default timeout.


def test_trace_time_collective_keys_switches_the_launchers_key_mode():
    from tensorflow.python.distribute import cross_device_utils

    launcher = cross_device_utils.CollectiveReplicaLauncher
    if "_prefer_unique_instance_key" not in inspect.getsource(launcher):
        _broken("trace_time_collective_keys", "the launcher no longer has the setting")
    before = launcher._prefer_unique_instance_key
    try:
        _compat.trace_time_collective_keys()
        assert launcher._prefer_unique_instance_key is False
    finally:
        launcher._prefer_unique_instance_key = before
    # tests/run/test_strategy_equivalence.py trains with steps_per_execution > 1 under both
    # strategies, which fails without it.


def test_sublayers_finds_layers_in_attributes_and_lists_once():
    import keras

    class Outer(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.first = keras.layers.Dense(2)
            self.blocks = [keras.layers.Dense(3), keras.layers.Dense(4)]
            self.again = self.first  # one layer, two attributes

    outer = Outer()
    found = _compat.sublayers(outer)
    assert [layer.units for layer in found] == [2, 3, 4]
    assert _compat.sublayers(outer, include_self=True)[0] is outer
    assert len(_compat.sublayers(outer, recursive=False)) == 3


def test_dense_kernel_remove_variable_and_unlocked_tracker_reach_what_keras_keeps():
    import keras
    import numpy as np

    dense = keras.layers.Dense(3)
    dense.build((None, 2))
    dense.enable_lora(1)
    assert _compat.dense_kernel(dense) is dense._kernel
    assert _compat.dense_kernel(dense) is not dense.kernel  # W + A B, computed
    count = len(dense.weights)
    _compat.remove_variable(dense, "lora_kernel_a")
    assert len(dense.weights) == count - 1 and not hasattr(dense, "lora_kernel_a")
    with _compat.unlocked_tracker(dense):
        dense.extra = dense.add_weight(name="extra", shape=(1,), initializer="ones")
    assert np.array_equal(dense.extra.numpy(), [1.0])
    assert any(weight is dense.extra for weight in dense.weights)


def test_compiled_by_xla_tells_a_jit_compiled_trace_from_others():
    seen = []

    def probe(x):
        seen.append(_compat.compiled_by_xla())
        return tf.while_loop(lambda i: i < 1, lambda i: i + probe_inner(), [x])

    def probe_inner():
        seen.append(_compat.compiled_by_xla())
        return tf.constant(1)

    tf.function(probe, jit_compile=True)(tf.constant(0))
    tf.function(probe)(tf.constant(0))
    seen.append(_compat.compiled_by_xla())  # eager
    assert seen == [True, True, False, False, False]


def test_no_private_keras_or_tensorflow_use_outside_compat():
    found = []
    for root, _, files in os.walk(TEXKIT):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".py") and path != os.path.join(TEXKIT, "_compat.py"):
                found.extend(_private_uses(path))
    assert not found, "move these into texkit/_compat.py:\n" + "\n".join(found)
    # The scan finds what it looks for.
    assert list(_private_uses(os.path.join(TEXKIT, "_compat.py")))
