"""``tf.distribute`` strategies from hparams.

Example::

    strategy = tx.run.strategy_from_hparams({"type": "mirrored"})
    with strategy.scope():
        model = build_model()

Types: ``default`` (no distribution), ``one_device``, ``mirrored`` (the GPUs or listed devices of
one machine), ``multi_worker`` (several machines, from ``TF_CONFIG`` or an explicit ``cluster``),
``tpu``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

import tensorflow as tf

from texkit import _compat
from texkit.errors import Problems
from texkit.hparams import HParams, HParamsError

__all__ = ["default_distribution_hparams", "strategy_from_hparams", "DISTRIBUTION_HPARAMS_DOC"]

_TYPES = ("default", "one_device", "mirrored", "multi_worker", "tpu")
_COMMUNICATION = {
    "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
    "ring": tf.distribute.experimental.CommunicationImplementation.RING,
    "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
}

# One MirroredStrategy per device set and process: strategies made apart number their
# collective operations alike, and TensorFlow then mixes up the shapes of two models' gradients
# ("Shape mismatch in the collective instance").
_MIRRORED: dict[tuple[str, ...], tf.distribute.Strategy] = {}

DISTRIBUTION_HPARAMS_DOC = {
    "type": "One of 'default', 'one_device', 'mirrored', 'multi_worker', 'tpu'.",
    "devices": (
        "one_device: [the device] (default: the first GPU, else the CPU); mirrored: the devices "
        "to mirror over (default: every GPU, else the CPU)."
    ),
    "cluster": (
        "multi_worker: {'worker': ['host:port', ...]}; empty reads the TF_CONFIG environment "
        "variable."
    ),
    "task_index": "multi_worker with an explicit cluster: this process's index in the workers.",
    "communication": "multi_worker collectives: 'auto', 'ring' or 'nccl'.",
    "heartbeat_seconds": (
        "multi_worker: a worker whose heartbeats (sent to TensorFlow's coordination service, on "
        "the chief or worker 0) stop for this long is lost: the run fails at once naming it "
        "(texkit.run.WorkerLost) and can be started again from its last checkpoint. A shorter "
        "pause (a slow step, a long save, a busy machine) is ridden out."
    ),
    "tpu": "tpu: the TPU name or grpc:// address ('' finds the TPU of a Cloud TPU VM).",
    "name": "Name of these settings.",
}


def default_distribution_hparams() -> dict:
    """Defaults of :func:`strategy_from_hparams`; see ``DISTRIBUTION_HPARAMS_DOC``."""
    return {
        "type": "default",
        "devices": [],
        "cluster": {},
        "task_index": 0,
        "communication": "auto",
        "heartbeat_seconds": 10,
        "tpu": "",
        "name": "distribution",
    }


def _multi_worker(hp: HParams) -> tf.distribute.Strategy:
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=_COMMUNICATION[hp.communication]
    )
    resolver = _cluster_resolver(hp)
    _compat.set_worker_heartbeat(resolver.cluster_spec(), resolver.task_type, hp.heartbeat_seconds)
    return _start_collectives(
        lambda: tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=resolver, communication_options=options
        )
    )


def _cluster_resolver(hp: HParams) -> tf.distribute.cluster_resolver.ClusterResolver:
    if not hp.cluster:
        if "TF_CONFIG" not in os.environ:
            raise HParamsError(
                "multi_worker needs a cluster: set the TF_CONFIG environment variable or "
                "give cluster: {worker: [host:port, ...]} and task_index",
                "cluster",
            )
        try:
            json.loads(os.environ["TF_CONFIG"])
        except ValueError as error:
            raise HParamsError(f"TF_CONFIG is not valid JSON: {error}", "cluster") from None
        return tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = hp.cluster.todict()
    workers = cluster.get("worker")
    if not isinstance(workers, list) or not workers or not all(isinstance(w, str) for w in workers):
        raise HParamsError(f"expected {{worker: [host:port, ...]}}, got {cluster!r}", "cluster")
    if not 0 <= hp.task_index < len(workers):
        raise HParamsError(
            f"expected an index below {len(workers)} (the number of workers), got {hp.task_index}",
            "task_index",
        )
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="worker", task_id=hp.task_index
    )


def _start_collectives(make: Callable[[], tf.distribute.Strategy]) -> tf.distribute.Strategy:
    try:
        return make()
    except RuntimeError as error:
        if "program startup" not in str(error):
            raise
        raise RuntimeError(
            "type 'multi_worker': the strategy must be made before any other TensorFlow work in "
            "this process (building data or models included); make it first, as "
            "texkit.run.Trainer.from_hparams does"
        ) from error


def _tpu(hp: HParams) -> tf.distribute.Strategy:
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=hp.tpu or None)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        where = f"at {hp.tpu!r}" if hp.tpu else "on this machine"
        reason = (str(error).strip().splitlines() or [""])[0]
        raise HParamsError(
            f"'tpu': no TPU found {where} ({type(error).__name__}: {reason}); give "
            "tpu: <name or grpc://address>, or choose another distribution type",
            "type",
        ) from error
    return tf.distribute.TPUStrategy(resolver)


def _check_devices(devices: list[str]) -> None:
    known = {
        (spec.device_type, spec.device_index)
        for spec in (tf.DeviceSpec.from_string(d.name) for d in tf.config.list_logical_devices())
    }
    for index, device in enumerate(devices):
        spec = tf.DeviceSpec.from_string(device)
        if (spec.device_type and spec.device_type.upper(), spec.device_index or 0) not in known:
            names = sorted(f"/{kind.lower()}:{i}" for kind, i in known)
            raise HParamsError(f"no device {device!r} here; devices: {names}", f"devices.{index}")


def check_distribution_hparams(hp: HParams) -> None:
    """Checks the values of validated distribution hparams that need no devices; errors name
    the key."""
    problems = Problems()
    if hp.type not in _TYPES:
        problems.add(f"expected one of {_TYPES}, got {hp.type!r}", "type")
    if hp.communication not in _COMMUNICATION:
        problems.add(
            f"expected one of {sorted(_COMMUNICATION)}, got {hp.communication!r}", "communication"
        )
    beat = hp.heartbeat_seconds
    if isinstance(beat, bool) or not isinstance(beat, (int, float)) or not 0 < beat <= 3600:
        problems.add(f"expected seconds in (0, 3600], got {beat!r}", "heartbeat_seconds")
    if list(hp.devices) and hp.type not in ("one_device", "mirrored"):
        problems.add(f"type {hp.type!r} takes no devices list", "devices")
    problems.raise_if_any()


def strategy_from_hparams(hparams: Mapping | HParams | None = None) -> tf.distribute.Strategy:
    """A ``tf.distribute.Strategy`` from distribution hparams (see the module docstring).

    ``mirrored`` returns the same strategy each time for the same devices: models built in one
    process share it (strategies made apart confuse TensorFlow's collective operations).

    Raises:
        HParamsError: an unknown type or key, a device that does not exist, a malformed cluster,
            or type ``tpu`` where no TPU can be reached (naming ``type``).
    """
    hp = HParams(hparams, default_distribution_hparams())
    check_distribution_hparams(hp)
    devices = list(hp.devices)
    if devices:
        _check_devices(devices)
    if hp.type == "default":
        return tf.distribute.get_strategy()
    if hp.type == "one_device":
        if len(devices) > 1:
            raise HParamsError("one_device takes one device", "devices")
        gpus = tf.config.list_logical_devices("GPU")
        device = devices[0] if devices else (gpus[0].name if gpus else "/cpu:0")
        return tf.distribute.OneDeviceStrategy(device)
    if hp.type == "mirrored":
        key = tuple(devices)
        if key not in _MIRRORED:
            _MIRRORED[key] = tf.distribute.MirroredStrategy(devices=devices or None)
        return _MIRRORED[key]
    if hp.type == "multi_worker":
        return _multi_worker(hp)
    return _tpu(hp)
