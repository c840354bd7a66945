"""Serving export: a SavedModel written beside its destination, then moved into place; or the
Hugging Face folder of a trained model's pretrained module.

:func:`export_model` makes the serving function of a trained model (with its preprocessor in
front, if any) and :func:`export_saved_model` writes it. :func:`export_huggingface` writes the
model's module of a pretrained family (or a task model) as its family's Hugging Face folder
(:func:`texkit.pretrained.save_pretrained`, which writes and replaces folders the same way).

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

from texkit import _compat
from texkit.run.inputs import features_spec, zeros_like_spec

__all__ = [
    "SAVED_MODEL_ENTRIES",
    "check_export_path",
    "export_huggingface",
    "export_model",
    "export_saved_model",
]

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

    A generating task of :mod:`texkit.tasks` serves text in, text out (its
    ``generation_server``: prompts in, generated texts out, generation in the graph). Otherwise
    its ``serve`` endpoint (also the ``serving_default`` signature) takes raw inputs, as
    ``preprocessor.serving_input_signature`` describes, when there is a preprocessor (given
    here, or the data's ``preprocessor``), and the model's own inputs otherwise: a functional
    model's, else the features of the data's batches (their batch size left open).

    Raises:
        FileExistsError: ``path`` is a file, or a folder that may not be replaced.
        ValueError: the preprocessor has no ``serving_input_signature``.
    """
    check_export_path(path, overwrite)  # before any tracing: a refusal costs nothing
    if callable(getattr(model, "generation_server", None)):
        # A generating task (texkit.tasks): text in, text out, generation in the graph.
        server = model.generation_server()
        spec = tf.TensorSpec([None], tf.string, name="texts")
        return export_saved_model(path, server._serve, spec, [model.tokenizer], overwrite)
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


def _family_module(model: Any) -> Any:
    """The one module of a pretrained family in ``model`` (the model itself, or a layer of it),
    which must hold every weight of the model."""
    from texkit.pretrained import FAMILIES

    classes = tuple({f.module for f in FAMILIES.values() if f.export is not None})
    layers = [model, *_compat.sublayers(model)]
    found = [layer for layer in layers if isinstance(layer, classes)]
    found = [
        m
        for m in found
        if not any(m is not o and m in _compat.sublayers(o, include_self=True) for o in found)
    ]
    if len(found) != 1:
        names = ", ".join(sorted(c.__name__ for c in classes))
        raise ValueError(
            f"--format huggingface: the model {model.name!r} holds "
            f"{'no' if not found else len(found)} modules of a pretrained family ({names}); "
            "expected one (export a SavedModel instead)"
        )
    module = found[0]
    own = {id(v) for v in module.weights}
    others = [w.path for w in model.weights if id(w) not in own]
    if others:
        listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise ValueError(
            f"--format huggingface: the model {model.name!r} has {len(others)} weights outside "
            f"its {type(module).__name__} ({listed}), which a Hugging Face folder of the family "
            "cannot hold (export a SavedModel)"
        )
    return module


def export_huggingface(model: Any, path: str, overwrite: bool = False) -> str:
    """Writes a trained model as a Hugging Face folder; returns ``path``.

    A task model (with its own ``save_pretrained``, which merges LoRA adapters first) writes
    itself; another model must consist of one module of a pretrained family (``GPT2Decoder``,
    ``BERTEncoder``, ``LlamaDecoder``...), which :func:`texkit.pretrained.save_pretrained`
    writes with the tokenizer files of the folder it was loaded from.

    Raises:
        ValueError: the model holds no such module, several, or weights outside it.
        FileExistsError: ``path`` may not be written (as for SavedModels).
    """
    from texkit.pretrained import save_pretrained

    saver = getattr(model, "save_pretrained", None)
    if callable(saver):
        return saver(path, overwrite=overwrite)
    return save_pretrained(_family_module(model), path, overwrite=overwrite)
