"""Serving export: a SavedModel written beside its destination, then moved into place.

:func:`export_model` makes the serving function of a trained model (with its preprocessor in
front, if any) and :func:`export_saved_model` writes it.

``export_saved_model`` never deletes what texkit did not write:

- an output folder that does not exist, or is empty, is written;
- an output folder that holds anything else is refused, unless ``overwrite=True`` *and* the
  folder holds a SavedModel and nothing else (what an earlier export wrote); a run's
  ``model_dir``, a file, or any folder of the user's is refused even with ``overwrite``;
- the SavedModel is first written to a temporary sibling (``<output>.texkit-export-<id>``);
  only once it is complete does it replace the output. A failed export removes its temporary
  folder and leaves the output as it was.

On a local disk the replacement is two renames (the old SavedModel moved aside, the new one
moved in) and the old copy is deleted last. On object stores (``gs://``, ``s3://``) a folder
rename is a copy and delete of each object, so it is not atomic: a crash in the middle can leave
the output partly written, but the previous SavedModel is only deleted after the new one is in
place, and the complete new copy is never lost before it has been moved.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

import keras
import tensorflow as tf

from texkit.run.inputs import features_spec, zeros_like_spec

__all__ = ["SAVED_MODEL_ENTRIES", "check_export_path", "export_model", "export_saved_model"]

# What tf.saved_model / keras.export write into a SavedModel folder, and nothing else.
SAVED_MODEL_ENTRIES = frozenset(
    {"saved_model.pb", "saved_model.pbtxt", "variables", "assets", "fingerprint.pb"}
)


def _entries(path: str) -> list[str]:
    # gfile lists sub-folders of object stores with a trailing "/".
    return sorted(name.rstrip("/") for name in tf.io.gfile.listdir(path))


def check_export_path(path: str, overwrite: bool = False) -> bool:
    """Checks that a SavedModel may be written at ``path``; returns whether one is replaced.

    Raises:
        FileExistsError: ``path`` is a file, a non-empty folder without ``overwrite``, or a
            folder that holds more than a SavedModel (it is never deleted, whatever
            ``overwrite`` says).
    """
    if not tf.io.gfile.exists(path):
        return False
    if not tf.io.gfile.isdir(path):
        raise FileExistsError(f"{path!r} is a file; give a folder path for the SavedModel")
    entries = _entries(path)
    if not entries:
        return False
    others = [name for name in entries if name not in SAVED_MODEL_ENTRIES]
    if others or "saved_model.pb" not in entries and "saved_model.pbtxt" not in entries:
        shown = ", ".join(repr(name) for name in (others or entries)[:3])
        raise FileExistsError(
            f"{path!r} is not empty and is not a SavedModel (it holds {shown}"
            f"{', ...' if len(others or entries) > 3 else ''}); texkit never deletes a folder it "
            "did not write: choose a new or empty output folder"
        )
    if not overwrite:
        raise FileExistsError(
            f"{path!r} already holds a SavedModel; pass overwrite=True (the command's "
            "--overwrite) to replace it, or choose a new output folder"
        )
    return True


def _remove_empty_folder(path: str) -> None:
    if "://" not in path:
        os.rmdir(path)  # fails, deleting nothing, if something appeared in it meanwhile
    elif not _entries(path):
        tf.io.gfile.rmtree(path)


def export_saved_model(
    path: str,
    serve: Any,
    input_signature: Any,
    tracked: list[Any],
    overwrite: bool = False,
) -> str:
    """Writes a SavedModel with a ``serve`` endpoint (also ``serving_default``); returns ``path``.

    Args:
        path: the output folder (local or a ``tf.io.gfile`` URL).
        serve: the serving function, called on one argument of ``input_signature``.
        input_signature: a ``tf.TensorSpec`` or a nest of them.
        tracked: the Keras layers or models whose variables ``serve`` uses.
        overwrite: replace a SavedModel already at ``path`` (never anything else).
    """
    path = path.rstrip("/") or path
    replacing = check_export_path(path, overwrite)
    archive = keras.export.ExportArchive()
    for layer in tracked:
        archive.track(layer)
    archive.add_endpoint("serve", serve, input_signature=[input_signature])

    parent = os.path.dirname(path)
    if parent:
        tf.io.gfile.makedirs(parent)
    token = uuid.uuid4().hex[:12]
    temporary = f"{path}.texkit-export-{token}"
    try:
        archive.write_out(temporary, verbose=False)
    except BaseException:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.rmtree(temporary)  # texkit's own, half-written
        raise
    if replacing:
        previous = f"{path}.texkit-previous-{token}"
        tf.io.gfile.rename(path, previous)
        tf.io.gfile.rename(temporary, path)
        tf.io.gfile.rmtree(previous)
    else:
        if tf.io.gfile.exists(path):
            _remove_empty_folder(path)
        tf.io.gfile.rename(temporary, path)
    return path


def export_model(
    model: keras.Model,
    path: str,
    data: Mapping,
    preprocessor: Any = None,
    overwrite: bool = False,
) -> str:
    """Writes a SavedModel serving ``model``, trained on ``data``; returns ``path``.

    Its ``serve`` endpoint (also the ``serving_default`` signature) takes raw inputs, as
    ``preprocessor.serving_input_signature`` describes, when there is a preprocessor (given
    here, or the data's ``preprocessor``), and the model's own inputs otherwise: a functional
    model's, else the features of the data's batches (their batch size left open).

    Raises:
        FileExistsError: ``path`` is a file, or a folder that may not be replaced.
        ValueError: the preprocessor has no ``serving_input_signature``.
    """
    check_export_path(path, overwrite)  # before any tracing: a refusal costs nothing
    preprocessor = preprocessor or getattr(data, "preprocessor", None)
    if preprocessor is not None:
        signature = getattr(preprocessor, "serving_input_signature", None)
        if signature is None:
            raise ValueError(
                f"the preprocessor {preprocessor!r} has no serving_input_signature: give it "
                "one (a tf.TensorSpec or a dict of them) to export raw-input serving"
            )
        if isinstance(preprocessor, keras.layers.Layer) and not preprocessor.built:
            preprocessor(zeros_like_spec(signature))  # builds it, as export requires
        tracked = [model, preprocessor]

        def serve(inputs: Any) -> Any:
            return model(preprocessor(inputs), training=False)

    else:
        signature = _model_input_signature(model, data)
        tracked = [model]

        def serve(inputs: Any) -> Any:
            return model(inputs, training=False)

    return export_saved_model(path, serve, signature, tracked, overwrite=overwrite)


def _model_input_signature(model: keras.Model, data: Mapping) -> Any:
    try:
        inputs = model.input  # a functional model's inputs, in their structure
    except (AttributeError, ValueError):
        inputs = None  # a subclassed model: the data's specs say what it takes
    if inputs is not None:
        return tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype, name=t.name), inputs)
    return tf.nest.map_structure(
        lambda s: tf.TensorSpec([None, *s.shape[1:]], s.dtype, name=s.name), features_spec(data)
    )
