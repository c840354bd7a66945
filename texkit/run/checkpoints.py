"""The Trainer's checkpoints on disk: their names, TensorFlow's list of them, restoring one and
resuming from the newest that can be read.

A run's ``model_dir`` holds ``ckpt-<step>.index`` and ``ckpt-<step>.data-*`` files and
TensorFlow's list of the kept ones (the ``checkpoint`` file, written by
``tf.train.CheckpointManager``). Every file is checked to be a regular file before TensorFlow
opens it: TensorFlow's readers would wait forever on a FIFO.

Resuming (:func:`resume`) starts from the newest listed checkpoint that can be read. A newer one
whose files cannot be (a data file truncated by a full disk or a copy cut short, a missing file)
is skipped with a warning naming it and left in place; when none can be read, the resume fails
naming ``model_dir``. A checkpoint that does not match the model fails at once (the older ones
are of the same run, so they would not match either).
"""

from __future__ import annotations

import logging
import os
import re

import tensorflow as tf

from texkit import files

__all__ = [
    "UnreadableCheckpoint",
    "check_checkpoint_list",
    "checkpoint_step",
    "listed_checkpoints",
    "remove_temporaries",
    "restore_checkpoint",
    "resume",
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
