"""Task: what the task models share.

A task is a Keras model that owns its preprocessor (the family's in-graph tokenizer) and its
module, configured by hparams like every texkit module:

* ``Task.from_pretrained(folder)`` builds the module and the tokenizer from a checkpoint folder
  (every family texkit loads) and reads the folder's ``generation_config.json``;
* ``task.save(folder)`` / ``Task.load(folder)`` keep a task as one folder: ``task.json`` (the
  class, its hparams and its module's), ``model.weights.h5`` and the tokenizer's files;
* ``enable_lora``, ``merge_lora``, ``save_adapters``, ``load_adapters`` (LoRA,
  :mod:`texkit.tasks.lora`), ``quantize`` (:mod:`texkit.tasks.quantization`) and
  ``save_pretrained`` (a Hugging Face folder, :func:`texkit.pretrained.save_pretrained`) work on
  the task's module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

import keras
import tensorflow as tf

import texkit.files
from texkit.configurable import Configurable
from texkit.hparams import HParams
from texkit.pretrained import tokenizer_from_pretrained
from texkit.pretrained.checkpoints import CheckpointError, resolve_checkpoint
from texkit.utils.fit_output import KerasFitDefaults

__all__ = ["TASK_FILE", "TOKENIZER_FILE_NAMES", "Task", "generation_defaults"]

TASK_FILE = "task.json"
WEIGHTS_FILE = "model.weights.h5"

# The files of a tokenizer folder that a saved task keeps (those that exist).
TOKENIZER_FILE_NAMES = (
    "tokenizer.model", "spiece.model", "vocab.txt", "tokenizer.json", "vocab.json",
    "merges.txt", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "generation_config.json", "config.json", "chat_template.jinja", "chat_template.json",
)  # fmt: skip

# generation_config.json keys -> the tasks' ``generation`` hparams.
_GENERATION_KEYS = {
    "max_new_tokens": "max_new_tokens",
    "temperature": "temperature",
    "top_k": "top_k",
    "top_p": "top_p",
    "num_beams": "beam_width",
    "length_penalty": "length_penalty",
    "early_stopping": "early_stopping",
}


def _read_json(path: str) -> dict:
    if not tf.io.gfile.exists(path):
        return {}
    value = texkit.files.read_json(path, error=CheckpointError, what="generation config")
    return value if isinstance(value, dict) else {}


def generation_defaults(folder: str) -> dict:
    """The ``generation`` hparams a checkpoint folder implies: its end tokens (the
    ``eos_token_id`` of ``generation_config.json``, else of ``config.json``, one id or several)
    and the settings ``generation_config.json`` sets (sampling or beam search, temperature,
    top-k, top-p, beams, length penalty, early stopping, ``max_new_tokens``)."""
    config = _read_json(os.path.join(folder, "config.json"))
    config = config.get("text_config", config) if isinstance(config, dict) else {}
    generation = _read_json(os.path.join(folder, "generation_config.json"))
    out: dict[str, Any] = {}
    eos = generation.get("eos_token_id", config.get("eos_token_id"))
    if eos is not None:
        out["end_token_ids"] = [eos] if isinstance(eos, int) else list(eos)
    for key, name in _GENERATION_KEYS.items():
        if generation.get(key) is not None:
            out[name] = generation[key]
    if generation.get("do_sample"):
        out["strategy"] = "sample"
    elif (generation.get("num_beams") or 1) > 1:
        out["strategy"] = "beam"
    return out


def _lora_settings(module: Any) -> dict | None:
    """The LoRA settings of ``module`` (``None``: no adapters), as ``enable_lora`` takes them."""
    from texkit.tasks.lora import lora_state

    state = lora_state(module)
    if state is None:
        return None
    return {"rank": state.rank, "alpha": state.alpha, "targets": list(state.targets),
            "train": list(state.train)}  # fmt: skip


class Task(Configurable, KerasFitDefaults, keras.Model):
    """Base class of the task models (see the module).

    Subclasses set ``MODULE_ATTRIBUTE`` (``"decoder"``, ``"model"`` or ``"classifier"``: the
    attribute that holds the module) and define ``default_hparams``, ``_build_module`` and
    their own methods.
    """

    MODULE_ATTRIBUTE: ClassVar[str] = "module"
    TASKS: ClassVar[dict[str, type]] = {}

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        Task.TASKS[cls.__name__] = cls
        keras.saving.register_keras_serializable(package="texkit")(cls)

    def __init__(
        self,
        hparams: Mapping | HParams | None = None,
        *,
        module: Any = None,
        tokenizer: Any = None,
        **kwargs: Any,
    ):
        hp = self.make_hparams(hparams)
        super().__init__(name=kwargs.pop("name", hp.name), **kwargs)
        self._hparams = hp
        if module is None:
            module = self._build_module(hp)
        if tokenizer is None:
            folder = hp.get("tokenizer")
            if not folder:
                raise ValueError(
                    f"{type(self).__name__}: give a tokenizer (or hparams tokenizer: a folder "
                    "with a tokenizer's files), or use from_pretrained(folder)"
                )
            tokenizer = tokenizer_from_pretrained(folder)
        setattr(self, self.MODULE_ATTRIBUTE, module)
        self.tokenizer = tokenizer
        self.tokenizer_folder = hp.get("tokenizer")

    # --- what subclasses supply ---------------------------------------------------------------

    def _build_module(self, hp: HParams) -> Any:
        raise NotImplementedError

    @property
    def module(self) -> Any:
        """The task's texkit module (its ``decoder``, ``model`` or ``classifier``)."""
        return getattr(self, self.MODULE_ATTRIBUTE)

    # --- pretrained folders -------------------------------------------------------------------

    @classmethod
    def _pretrained_hparams(cls, folder: str, hparams: Mapping | None) -> dict:
        """The task's hparams for a checkpoint folder: its tokenizer and generation defaults
        under the user's."""
        base = {"tokenizer": folder}
        if "generation" in cls.default_hparams():
            base["generation"] = generation_defaults(folder)
        user = dict(hparams or {})
        if "generation" in user and "generation" in base:
            user["generation"] = {**base["generation"], **dict(user["generation"])}
        return {**base, **user}

    @classmethod
    def _module_from_pretrained(cls, folder: str, hparams: Mapping, **kwargs: Any) -> Any:
        """The module of a checkpoint folder (``hparams``: the task's)."""
        from texkit.pretrained import from_pretrained

        return from_pretrained(folder, **kwargs)

    @classmethod
    def from_pretrained(
        cls, folder: str | os.PathLike, hparams: Mapping | None = None, **kwargs: Any
    ) -> Task:
        """The task over a checkpoint folder's module and tokenizer.

        Args:
            folder: a checkpoint folder (local, any ``tf.io.gfile`` path, or a packaged
                checkpoint's name) of a family the task takes.
            hparams: the task's hparams over the folder's (``generation`` settings, ...).
            **kwargs: passed to the module's ``from_pretrained``.
        """
        folder = resolve_checkpoint(folder)
        hp = cls._pretrained_hparams(folder, hparams)
        module = cls._module_from_pretrained(folder, hp, **kwargs)
        return cls(hp, module=module, tokenizer=tokenizer_from_pretrained(hp["tokenizer"]))

    # --- LoRA, quantization, export -----------------------------------------------------------

    def enable_lora(
        self,
        rank: int,
        alpha: float | None = None,
        targets: Any = ("query", "value"),
        train: Any = (),
    ) -> list[str]:
        """Adds LoRA adapters to the module's dense layers ``targets`` names and freezes every
        other weight but the layers ``train`` names (a new head); see
        :func:`texkit.tasks.lora.enable_lora`. Returns the adapted layers' paths."""
        from texkit.tasks.lora import enable_lora

        self._build_for_weights()
        return enable_lora(self.module, rank, alpha, targets, train)

    def merge_lora(self) -> list[str]:
        """Folds the adapters into the weights and removes them
        (:func:`texkit.tasks.lora.merge_lora`)."""
        from texkit.tasks.lora import merge_lora

        return merge_lora(self.module)

    def save_adapters(self, path: str | os.PathLike) -> str:
        """Writes the adapters alone (:func:`texkit.tasks.lora_files.save_adapters`)."""
        from texkit.tasks.lora_files import save_adapters

        return save_adapters(self.module, path)

    def load_adapters(self, path: str | os.PathLike) -> list[str]:
        """Loads adapters written by :meth:`save_adapters` onto this task's base
        (:func:`texkit.tasks.lora_files.load_adapters`)."""
        from texkit.tasks.lora_files import load_adapters

        self._build_for_weights()
        return load_adapters(self.module, path)

    def quantize(  # type: ignore[override]
        self, mode: str = "int8", config: Any = None, *, weight_only: bool = True, **kwargs: Any
    ) -> Task:
        """Quantizes the module for inference, in place (:func:`texkit.tasks.quantize`:
        ``weight_only`` says the form; Keras' ``config``, which its wrapper of this method
        passes, is not used)."""
        from texkit.tasks.quantization import quantize

        self._build_for_weights()
        quantize(self.module, mode, weight_only=weight_only)
        if hasattr(self, "_generator"):  # compiled over the float weights
            self._generator._compiled.clear()
        return self

    def save_pretrained(self, folder: str | os.PathLike, **kwargs: Any) -> str:
        """Writes the module as its family's Hugging Face folder, with the tokenizer's files
        (:func:`texkit.pretrained.save_pretrained`). LoRA adapters are merged into the weights
        first, in place (save them with :meth:`save_adapters` to keep training them); a
        quantized model is refused (export the float model)."""
        from texkit.pretrained.hf_export import save_pretrained
        from texkit.tasks.lora import lora_enabled

        if lora_enabled(self.module):
            self.merge_lora()
        return save_pretrained(self.module, folder, tokenizer=self.tokenizer_folder, **kwargs)

    # --- saving -------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike, overwrite: bool = False) -> None:  # type: ignore[override]
        """Writes the task as one folder: ``task.json``, ``model.weights.h5`` and the
        tokenizer's files (see the module). Refuses a non-empty folder that holds no saved
        task, whatever ``overwrite`` says."""
        folder = os.fspath(folder)
        if tf.io.gfile.exists(folder) and tf.io.gfile.listdir(folder):
            if not overwrite or not tf.io.gfile.exists(os.path.join(folder, TASK_FILE)):
                raise FileExistsError(
                    f"{folder!r} is not empty; give an empty folder (or overwrite=True to "
                    "replace a task saved there)"
                )
        tf.io.gfile.makedirs(folder)
        description = {
            "class": type(self).__name__,
            "hparams": self.hparams.todict(),
            "module": keras.saving.serialize_keras_object(self.module),
        }
        description["hparams"]["tokenizer"] = None
        description["lora"] = _lora_settings(self.module)
        with tf.io.gfile.GFile(os.path.join(folder, TASK_FILE), "w") as f:
            json.dump(description, f, indent=1)
        self.save_weights(os.path.join(folder, WEIGHTS_FILE))
        source = self.tokenizer_folder
        for name in TOKENIZER_FILE_NAMES if source else ():
            path = os.path.join(source, name)
            if tf.io.gfile.exists(path):
                tf.io.gfile.copy(path, os.path.join(folder, name), overwrite=True)

    @staticmethod
    def load(folder: str | os.PathLike) -> Task:
        """A task saved by :meth:`save` (its class from ``task.json``, among texkit's tasks)."""
        folder = os.fspath(folder)
        description = texkit.files.read_json(
            os.path.join(folder, TASK_FILE), error=ValueError, what="saved task"
        )
        name = description.get("class") if isinstance(description, dict) else None
        if name not in Task.TASKS:
            raise ValueError(
                f"{folder}: {TASK_FILE} names the task class {name!r}; expected one of "
                f"{sorted(Task.TASKS)}"
            )
        cls = Task.TASKS[name]
        module = keras.saving.deserialize_keras_object(description["module"])
        hparams = {**description["hparams"], "tokenizer": folder}
        task = cls(hparams, module=module, tokenizer=tokenizer_from_pretrained(folder))
        task._build_for_weights()
        if description.get("lora"):
            task.enable_lora(**description["lora"])
        task.load_weights(os.path.join(folder, WEIGHTS_FILE))
        return task

    def _build_for_weights(self) -> None:
        """Creates every weight (a forward pass on a tiny input) before weights are loaded."""
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"hparams": self.hparams.todict()}
