"""The Trainer's checkpoints on disk: their names, TensorFlow's list of them, restoring one and
resuming from the newest that can be read, and :class:`RunCheckpoints`, which writes a run's.

A run's ``model_dir`` holds ``ckpt-<step>.index`` and ``ckpt-<step>.data-*`` files and
TensorFlow's list of the kept ones (the ``checkpoint`` file, written by
``tf.train.CheckpointManager``). Every file is checked to be a regular file before TensorFlow
opens it: TensorFlow's readers would wait forever on a FIFO.

Resuming (:func:`resume`) starts from the newest listed checkpoint that can be read. A newer one
whose files cannot be (a data file truncated by a full disk or a copy cut short, a missing file)
is skipped with a warning naming it and left in place; when none can be read, the resume fails
naming ``model_dir``. A checkpoint that does not match the model fails at once (the older ones
are of the same run, so they would not match either).

Beside the checkpoints, ``model_dir/hparams.yaml`` records the run's whole experiment
(:func:`write_record`).
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from typing import Any

import keras
import tensorflow as tf

from texkit import files
from texkit.hparams import HParamsError

__all__ = [
    "RunCheckpoints",
    "UnreadableCheckpoint",
    "check_checkpoint_list",
    "check_writable_folder",
    "checkpoint_step",
    "listed_checkpoints",
    "remove_temporaries",
    "restore_checkpoint",
    "resume",
    "write_record",
]

logger = logging.getLogger(__name__)

_CHECKPOINT_NAME = re.compile(r"ckpt-(\d+)$")


class UnreadableCheckpoint(ValueError):
    """A checkpoint whose files cannot be read; ``reason`` says why (without the path)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


def checkpoint_step(path: str) -> int:
    """The optimizer step a ``ckpt-<step>`` checkpoint was written at."""
    match = _CHECKPOINT_NAME.search(path)
    if not match:
        raise ValueError(f"{path} is not a texkit checkpoint (ckpt-<step>)")
    return int(match.group(1))


def remove_temporaries(folder: str, pattern: str) -> None:
    """Removes the folders matching ``pattern`` in ``folder`` that TensorFlow's checkpoint
    writer left (named ``<prefix>_temp...``, holding only its ``part-*`` shards)."""
    for path in tf.io.gfile.glob(os.path.join(folder, pattern)):
        if tf.io.gfile.isdir(path) and all(
            name.startswith("part-") for name in tf.io.gfile.listdir(path)
        ):
            tf.io.gfile.rmtree(path)


def check_checkpoint_list(model_dir: str) -> str | None:
    """The path of ``model_dir/checkpoint`` (``None`` when there is none), checked to be a regular
    file of at most :data:`texkit.files.MAX_CONFIG_BYTES` before TensorFlow reads it.

    Raises:
        ValueError: naming the file, when it is not one (a FIFO, a device, a folder) or larger.
    """
    path = os.path.join(model_dir, "checkpoint")
    exists = tf.io.gfile.exists(path) if "://" in path else os.path.lexists(path)
    if not exists:
        return None
    size = files.check_regular_file(path, context="the list of checkpoints of run.model_dir")
    if size > files.MAX_CONFIG_BYTES:
        raise ValueError(
            f"{path}: {size:,} bytes, more than a list of checkpoints has "
            f"({files.MAX_CONFIG_BYTES:,}; texkit.files.MAX_CONFIG_BYTES)"
        )
    return path


def listed_checkpoints(model_dir: str) -> list[str]:
    """The checkpoints TensorFlow's list in ``model_dir`` names, oldest first (``[]`` without a
    list).

    Raises:
        ValueError: the list is not a regular file, or cannot be parsed (TensorFlow ignores such
            a list, which would restart the run from step 0 without a word).
    """
    path = check_checkpoint_list(model_dir)
    if path is None:
        return []
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None:
        raise ValueError(
            f"{path}: not TensorFlow's list of checkpoints (it cannot be parsed); restore it, or "
            "move it out of run.model_dir to train from step 0"
        )
    paths = list(state.all_model_checkpoint_paths)
    if state.model_checkpoint_path and state.model_checkpoint_path not in paths:
        paths.append(state.model_checkpoint_path)
    return paths


def restore_checkpoint(checkpoint: tf.train.Checkpoint, path: str) -> None:
    """Restores ``path`` into ``checkpoint``'s objects, every one of which must be matched.

    Raises:
        UnreadableCheckpoint: its files cannot be read (truncated, missing, not regular files).
        ValueError: it does not match the objects (another model's checkpoint).
    """
    folder, prefix = os.path.split(path)
    names = [f"{prefix}.index"] + sorted(
        name for name in tf.io.gfile.listdir(folder or ".") if name.startswith(f"{prefix}.data-")
    )
    for name in names:
        files.check_regular_file(
            os.path.join(folder, name), error=UnreadableCheckpoint, context="a checkpoint file"
        )
    try:
        checkpoint.restore(path).assert_existing_objects_matched()
    except Exception as error:  # noqa: BLE001 - TF's readers raise many types; all are named
        first_line = (str(error).strip().splitlines() or [""])[0]
        reason = f"{type(error).__name__}: {first_line}"
        # TensorFlow's reader raises OpErrors (and IndexError for a truncated data file) when the
        # files cannot be read; another model's checkpoint is a ValueError or an AssertionError.
        if isinstance(error, (tf.errors.OpError, IndexError, OSError)):
            raise UnreadableCheckpoint(
                f"checkpoint {path!r} cannot be read: {reason}", reason
            ) from error
        raise ValueError(
            f"checkpoint {path!r} cannot be restored into this model: {reason}"
        ) from error


def resume(checkpoint: tf.train.Checkpoint, model_dir: str) -> tuple[int, str | None]:
    """Restores the newest checkpoint of ``model_dir`` that can be read (see the module
    docstring); returns its step and path, ``(0, None)`` when ``model_dir`` has none.

    Raises:
        ValueError: none of the listed checkpoints can be read (naming ``model_dir``), or one does
            not match the model.
    """
    skipped = []
    for path in reversed(listed_checkpoints(model_dir)):
        try:
            if not tf.io.gfile.exists(f"{path}.index"):
                raise UnreadableCheckpoint("", f"{path}.index is missing")
            step = checkpoint_step(path)
            restore_checkpoint(checkpoint, path)
        except UnreadableCheckpoint as error:
            logger.warning("skipping checkpoint %s, which cannot be read: %s", path, error.reason)
            skipped.append(os.path.basename(path))
            continue
        if skipped:
            logger.warning(
                "resuming from %s (step %d), the newest checkpoint that can be read; skipped (and "
                "left in place): %s",
                path,
                step,
                ", ".join(skipped),
            )
        return step, path
    if skipped:
        raise ValueError(
            f"no checkpoint in {model_dir!r} can be read (skipped {', '.join(skipped)}; see the "
            "warnings above): move them out of run.model_dir to train from step 0"
        )
    return 0, None


def check_writable_folder(path: str, key: str) -> None:
    """Raises :class:`HParamsError` naming ``key`` when ``path`` is not a folder texkit can
    write in: a file, a folder that cannot be created, or one without write permission
    (checked by writing and removing a small file, before any training step)."""
    if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
        raise HParamsError(f"{path!r} is a file; give a folder", key)
    try:
        tf.io.gfile.makedirs(path)
        probe = os.path.join(path, f".texkit-write-check-{uuid.uuid4().hex[:12]}")
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("ok")
        tf.io.gfile.remove(probe)
    except (tf.errors.OpError, OSError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise HParamsError(f"cannot write in {path!r}: {reason}", key) from None


def write_record(model_dir: str, text: str) -> None:
    """Writes ``model_dir/hparams.yaml`` whole or not at all (a temporary file, renamed)."""
    tf.io.gfile.makedirs(model_dir)
    path = os.path.join(model_dir, "hparams.yaml")
    temporary = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        with tf.io.gfile.GFile(temporary, "w") as f:
            f.write(text)
        tf.io.gfile.rename(temporary, path, overwrite=True)
    finally:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)


def _random_states(model: keras.Model) -> list[Any]:
    """The states of the model's random generators (dropout's, for one), in the model's order.

    ``tf.train.Checkpoint`` does not reach them through the model, yet a resumed run must draw
    the same dropout masks as an uninterrupted one. They are saved by position, because Keras
    numbers their names per process.
    """
    tracked = {id(v) for v in model.weights}
    return [v for v in model.variables if id(v) not in tracked]


class RunCheckpoints:
    """The checkpoints of one run: ``model_dir/ckpt-<step>`` of a model, its optimizer and the
    states of its random generators; the last ``keep`` are kept.

    Under ``multi_worker`` every worker takes part in saving (writing a checkpoint is a
    collective); only the chief's copy, in ``model_dir``, is kept: another worker writes in
    ``model_dir/.worker-<task id>`` and removes it.

    Args:
        model: the compiled model, its optimizer built.
        model_dir: the run's folder (``""``: nothing is saved, nothing resumed).
        keep: how many of the newest checkpoints to keep.
        is_chief: whether this process is the chief (the one whose files are kept).
        task_id: this process's task id in the cluster.

    Raises:
        ValueError: ``model_dir``'s list of checkpoints is not a regular file.
    """

    def __init__(
        self,
        model: keras.Model,
        model_dir: str,
        keep: int,
        is_chief: bool = True,
        task_id: int = 0,
    ):
        self.model_dir = model_dir
        self.is_chief = is_chief
        self.task_id = task_id
        self.checkpoint = tf.train.Checkpoint(
            model=model, optimizer=model.optimizer, rng=_random_states(model)
        )
        self._manager = None
        if model_dir:
            check_checkpoint_list(self.write_dir)
            self._manager = tf.train.CheckpointManager(
                self.checkpoint, self.write_dir, max_to_keep=keep
            )

    @property
    def write_dir(self) -> str:
        """Where this process writes: ``model_dir`` for the chief, a folder of its own else."""
        if self.is_chief:
            return self.model_dir
        return os.path.join(self.model_dir, f".worker-{self.task_id}")

    @property
    def latest(self) -> str | None:
        """The newest ``ckpt-<step>`` in ``model_dir`` (None without one)."""
        return tf.train.latest_checkpoint(self.model_dir) if self.model_dir else None

    def prepare(self, key: str = "run.model_dir") -> None:
        """Before a run writes: checks that the chief can write in ``model_dir`` (errors name
        ``key``) and removes the ``ckpt-<step>_temp`` folders a run killed while saving left."""
        if self.model_dir and self.is_chief:
            check_writable_folder(self.model_dir, key)
            remove_temporaries(self.model_dir, "ckpt-*_temp*")

    def save(self, step: int) -> str | None:
        """Writes ``model_dir/ckpt-<step>`` (every worker must call it); returns its path
        (``None`` without ``model_dir``).

        Raises:
            OSError: the checkpoint cannot be written (a full or failing disk); the half-written
                one is removed, the last complete one kept.
        """
        if self._manager is None:
            return None
        try:
            path = self._manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as error:
            # A full or failing disk: TensorFlow leaves the half-written ckpt-<step>_temp folder.
            remove_temporaries(self.write_dir, f"ckpt-{step}_temp*")
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise OSError(
                f"cannot write checkpoint {step} in {self.write_dir!r}: {reason} (the last "
                "complete checkpoint is kept; resume from it once there is room)"
            ) from error
        if not self.is_chief:
            tf.io.gfile.rmtree(self.write_dir)
        return path

    def restore(self, path: str | None = None) -> int:
        """Loads ``path`` (default: the latest) into the model and optimizer; returns its step.

        Raises:
            FileNotFoundError: no path was given and ``model_dir`` has no checkpoint, or the
                given one does not exist.
            ValueError: the checkpoint is not a texkit ``ckpt-<step>``, is unreadable, or does not
                match the model; the message names it, and the model may not be used.
        """
        path = path or self.latest
        if path is None:
            raise FileNotFoundError(f"no checkpoint in {self.model_dir!r}")
        step = checkpoint_step(path)
        if not tf.io.gfile.exists(f"{path}.index"):
            raise FileNotFoundError(
                f"checkpoint {path!r} does not exist (expected {path}.index and its data files)"
            )
        restore_checkpoint(self.checkpoint, path)
        return step

    def resume(self) -> tuple[int, str | None]:
        """Restores the newest checkpoint of ``model_dir`` that can be read (:func:`resume`);
        returns its step and path, ``(0, None)`` when there is none (or no ``model_dir``)."""
        if not self.model_dir:
            return 0, None
        return resume(self.checkpoint, self.model_dir)
