"""texkit: Texar-style text modules on TensorFlow 2 and Keras 3.

Modules are Keras layers configured by nested hyperparameter dicts (``hparams``) with documented
defaults; see :class:`texkit.HParams` and ``texkit hparams <ClassName>``.
"""

import os

# texkit runs on Keras' TensorFlow backend; pick it unless the user already chose.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from texkit._quiet import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # TF_CPP_MIN_LOG_LEVEL=3 unless set (0 with --verbose), see texkit/_quiet.py

from texkit import (  # noqa: E402
    core,
    data,
    evals,
    learning,
    losses,
    modules,
    pretrained,
    registry,
    rewards,
    run,
    tasks,
    utils,
)
from texkit.hparams import HParams, HParamsError, apply_overrides  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "HParams",
    "HParamsError",
    "apply_overrides",
    "core",
    "data",
    "evals",
    "learning",
    "losses",
    "modules",
    "pretrained",
    "registry",
    "rewards",
    "run",
    "tasks",
    "utils",
]
