import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import texkit  # noqa: E402, F401, I001  (first, as in a user's script: TensorFlow's C++ log quiet)
import tensorflow as tf  # noqa: E402

# Two logical CPU devices for the distribution tests; this must happen before TensorFlow's
# runtime starts, i.e. before any test runs an op.
_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

from tests.background import start_process_jobs, stop_process_jobs  # noqa: E402
from tests.hostile import sandbox  # noqa: E402, F401 - the fixture of tests/hostile.py


def pytest_collection_finish(session):
    # Jobs of separate processes run while the tests before theirs do (tests/background.py).
    start_process_jobs(item.name for item in session.items)


def pytest_sessionfinish(session):
    stop_process_jobs()
