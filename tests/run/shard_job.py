"""Reads one epoch of texkit datasets as one worker of a real ``MultiWorkerMirroredStrategy``,
for tests/run/test_sharding.py.

    TF_CONFIG='{"cluster": ..., "task": ...}' python tests/run/shard_job.py '{"runs": [
        {"data_class": "MonoTextData", "hparams": {...}, "global_batches": false}, ...],
        "ids_out": "worker0.json", "local_devices": 2}'

It makes the strategy before any other TensorFlow work (as multi-worker collectives require),
then, for each run in turn, builds the dataset and iterates
``strategy.distribute_datasets_from_function(data.make_dataset)`` (each worker reads its own
shard), or with ``global_batches`` ``strategy.experimental_distribute_dataset(data.dataset)``
(what Keras does with a dataset of global batches). It writes to ``ids_out``, as JSON, the
number of replicas in sync and, per run and per step, the example ids each of its replicas read.
With ``local_devices`` it first splits the CPU into that many logical devices
(MultiWorkerMirroredStrategy still uses one per worker on CPU: see the test module).

``example_ids`` is also what the test uses to read the ids back from a batch.
"""

import json
import os
import sys
from typing import Any

import numpy as np


def example_ids(batch: dict[str, Any]) -> list[int]:
    """The id of each example of a batch (NumPy values), from whichever field carries it.

    Text lines start with a token ``id<k>``; TFRecord examples and tfds examples have an ``id``
    or ``label`` feature; scalar files hold the id itself. Paired and aligned inputs must agree
    on every row (an error otherwise: sharding would have broken the alignment).
    """
    columns = []
    for key in ("text", "source_text", "target_text", "x_text"):
        if key in batch:
            columns.append([_text_id(row) for row in np.asarray(batch[key])])
    for key in ("id", "data", "label"):
        if key in batch:
            columns.append([int(value) for value in np.asarray(batch[key]).reshape(-1)])
    if not columns:
        raise KeyError(f"no field carries the example ids in a batch with keys {sorted(batch)}")
    for column in columns[1:]:
        if column != columns[0]:
            raise AssertionError(f"aligned fields disagree: {columns[0]} != {column}")
    return columns[0]


def _text_id(tokens: Any) -> int:
    for token in tokens:
        token = token.decode() if isinstance(token, bytes) else str(token)
        if token.startswith("id"):
            return int(token[2:])
    raise AssertionError(f"no id token in {list(tokens)}")


def main() -> None:
    config = json.loads(sys.argv[1])
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    local_devices = config.get("local_devices", 1)
    if local_devices > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(local_devices)]
        )
    import texkit as tx

    strategy = tx.run.strategy_from_hparams({"type": "multi_worker"})
    runs = []
    for run in config["runs"]:
        data = getattr(tx.data, run["data_class"])(run["hparams"])
        if run.get("global_batches"):
            distributed = strategy.experimental_distribute_dataset(data.dataset)
        else:
            distributed = strategy.distribute_datasets_from_function(data.make_dataset)
        steps = []
        for batch in distributed:
            per_key = {key: strategy.experimental_local_results(v) for key, v in batch.items()}
            replicas = len(next(iter(per_key.values())))
            steps.append(
                [
                    example_ids({key: values[index].numpy() for key, values in per_key.items()})
                    for index in range(replicas)
                ]
            )
        runs.append(steps)
    with open(config["ids_out"], "w") as f:
        json.dump({"num_replicas_in_sync": strategy.num_replicas_in_sync, "runs": runs}, f)


if __name__ == "__main__":
    main()
