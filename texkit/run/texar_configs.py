"""Texar config files to texkit experiments (``texkit migrate``).

Texar's examples keep their hparams in Python modules of dicts (``config_model.py``): one
variable per module (``embedder``, ``encoder``, ``decoder``, ``emb``, ``clas``), the optimizer
(``opt``), and options that the example's script reads itself (``lr``, ``beam_width``,
``loss_label_confidence``, ``num_epochs``, ...). :func:`load_texar_config` runs such a file (it
is the user's own code, as ``--include`` files are) and :func:`experiment_from_texar` turns its
variables into a texkit experiment:

* each section of the model builder that names its Texar variable and texkit class
  (``model_builder(..., texar_sections={"embedder": ("emb", WordEmbedder)})``) gets that
  variable, translated by :func:`~texkit.hparams.from_texar` and validated against the class;
* the builder's other hparams keys take the variables of the same names as they are (e.g.
  ``latent_dims`` of Texar's ``vae_text``);
* ``opt`` (or ``opt_hparams``) becomes the ``optimization`` section
  (:func:`~texkit.hparams.optimization_from_texar`);
  the Transformer script's ``lr`` (``constant.linear_warmup.rsqrt_decay.rsqrt_depth``:
  ``lr_constant * min(1, step / warmup) / sqrt(max(step, warmup))``) is exactly texkit's
  ``InverseSquareRootDecay`` with ``learning_rate = lr_constant / sqrt(warmup_steps)``;
* ``loss_label_confidence`` c becomes the model's ``label_smoothing`` = 1 - c when the builder
  has one (spread over all V classes in texkit, V - 1 in Texar: reported), ``random_seed`` the
  run's ``seed``;
* every other variable is reported as not carried (Texar's script read it: file paths, epochs,
  batch sizes counted in tokens, decoding options).

A config that imports Texar for its hparams helpers (``texar.tf.modules.
default_transformer_poswise_net_hparams``) runs without Texar installed: those helpers are
provided with Texar's documented defaults while the file runs.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import math
import os
import sys
import traceback
import types
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from texkit import files
from texkit.errors import HParamsError, Problems
from texkit.hparams import from_texar, optimization_from_texar
from texkit.hparams.texar_migration import Change
from texkit.run.experiment import resolve_builder

__all__ = ["ExperimentMigration", "experiment_from_texar", "load_texar_config"]

_EXPERIMENT_SECTIONS = ("model", "data", "optimization", "distribution", "run", "name")


class ExperimentMigration(NamedTuple):
    """What :func:`experiment_from_texar` returns: the experiment's hparams (a dict, as a YAML
    file holds them) and every change made, the variables not carried included."""

    experiment: dict
    changes: list[Change]


def _poswise_net_hparams(output_dim: int = 512) -> dict:
    """Texar's default position-wise network: dense (4 * output_dim, relu), dropout 0.1, dense
    (output_dim)."""
    return {
        "layers": [
            {"type": "Dense", "kwargs": {"name": "conv1", "units": output_dim * 4,
                                         "activation": "relu", "use_bias": True}},
            {"type": "Dropout", "kwargs": {"rate": 0.1}},
            {"type": "Dense", "kwargs": {"name": "conv2", "units": output_dim, "use_bias": True}},
        ],
        "name": "ffn",
    }  # fmt: skip


@contextlib.contextmanager
def _texar_helpers() -> Iterator[None]:
    """``texar`` (``texar.tf``, ``texar.torch``) with the hparams helpers configs call, unless
    Texar itself is installed."""
    if importlib.util.find_spec("texar") is not None:
        yield
        return
    names = ["texar", "texar.tf", "texar.tf.modules", "texar.torch", "texar.torch.modules"]
    stubs = {name: types.ModuleType(name) for name in names}
    for backend in ("tf", "torch"):
        modules = stubs[f"texar.{backend}.modules"]
        modules.default_transformer_poswise_net_hparams = _poswise_net_hparams
        stubs[f"texar.{backend}"].modules = modules
        setattr(stubs["texar"], backend, stubs[f"texar.{backend}"])
    saved = {name: sys.modules.get(name) for name in names}
    sys.modules.update(stubs)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_texar_config(path: str | os.PathLike) -> dict[str, Any]:
    """The variables of a Texar config file (a Python module of dicts), by running it.

    The file is the user's own code and runs as such (like ``texkit train --include``): run only
    files you trust. Its public variables that are data (dicts, lists, strings, numbers,
    booleans, ``None``) are returned, modules and functions left out.

    Raises:
        FileNotFoundError: no such file. ValueError: not a regular ``.py`` file (a FIFO, a device,
            a folder, larger than :data:`texkit.files.MAX_CONFIG_BYTES`), or the file failed
            when run (a ``SyntaxError``, any exception, even ``KeyboardInterrupt`` or
            ``SystemExit``): one line naming the file, the line and the exception.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.lexists(path):
        raise FileNotFoundError(f"the Texar config {path} does not exist")
    size = files.check_regular_file(path, context="the Texar config")
    if not path.endswith(".py"):
        raise ValueError(f"the Texar config {path} is not a Python file (.py)")
    if size > files.MAX_CONFIG_BYTES:
        raise ValueError(
            f"the Texar config {path} has {size:,} bytes, more than a config file may have "
            f"({files.MAX_CONFIG_BYTES:,}; texkit.files.MAX_CONFIG_BYTES)"
        )
    name = "texkit_texar_config_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # A config is read, not imported: no __pycache__ is written beside it.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        with _texar_helpers():
            spec.loader.exec_module(module)
    except BaseException as error:  # noqa: BLE001 - the user's code: every failure is reported
        raise ValueError(_config_failure(path, error)) from error
    finally:
        sys.dont_write_bytecode = writes_bytecode
    data = (dict, list, tuple, str, int, float, bool, type(None))
    return {
        key: value
        for key, value in vars(module).items()
        if not key.startswith("_") and isinstance(value, data)
    }


def _config_failure(path: str, error: BaseException) -> str:
    """One line: where in the config file ``error`` happened, and what it was."""
    line = None
    if isinstance(error, SyntaxError) and error.filename == path:
        line = error.lineno
    else:
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename == path:
                line = lineno  # the innermost line of the file
    where = f"{path}, line {line}" if line is not None else path
    text = error.msg if isinstance(error, SyntaxError) else str(error)
    text = " ".join(text.split())
    if len(text) > 300:
        text = text[:297] + "..."
    reason = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return f"the Texar config {where} failed when run as Python ({reason})"


def _transformer_lr(lr: Mapping, changes: list[Change]) -> dict:
    schedule = lr.get("learning_rate_schedule")
    if schedule == "static":
        changes.append(Change("lr", dict(lr), lr["static_lr"], "a constant learning rate"))
        return {"learning_rate": lr["static_lr"]}
    if schedule != "constant.linear_warmup.rsqrt_decay.rsqrt_depth":
        raise HParamsError(f"no texkit schedule for Texar's {schedule!r}", "lr")
    warmup = lr["warmup_steps"]
    peak = lr["lr_constant"] / math.sqrt(warmup)
    section = {
        "learning_rate": peak,
        "learning_rate_schedule": {
            "type": "InverseSquareRootDecay",
            "kwargs": {"warmup_steps": warmup},
        },
    }
    changes.append(
        Change(
            "lr",
            dict(lr),
            section,
            "the same schedule: linear warmup, then inverse square "
            "root decay, peaking at lr_constant / sqrt(warmup_steps)",
        )  # fmt: skip
    )
    return section


def _module_sections(
    variables: Mapping[str, Any],
    sections: Mapping[str, tuple[str, type]],
    problems: Problems,
    changes: list[Change],
    used: set[str],
) -> dict:
    """The model builder's sections translated from the Texar variables that feed them."""
    hparams: dict = {}
    for section, (variable, module_class) in sections.items():
        if variable not in variables:
            continue
        used.add(variable)
        with problems.check():
            try:
                translated, section_changes = from_texar(variables[variable], module_class)
            except HParamsError as error:
                raise error.relocated(lambda path, s=section: f"model.hparams.{s}.{path}".rstrip(
                    ".")) from None  # fmt: skip
            hparams[section] = translated
            changes += [c._replace(path=f"{variable}.{c.path}") for c in section_changes]
    return hparams


def _optimization(
    variables: Mapping[str, Any], problems: Problems, changes: list[Change], used: set[str]
) -> dict:
    """The ``optimization`` section from Texar's ``opt`` and the Transformer script's ``lr``."""
    optimization: dict = {}
    # Texar's examples name it opt, or opt_hparams (vae_text).
    name = next((n for n in ("opt", "opt_hparams") if n in variables), None)
    if name is not None:
        used.add(name)
        with problems.check():
            section, opt_changes = optimization_from_texar(variables[name])
            optimization.update(section)
            changes += [c._replace(path=f"{name}.{c.path}") for c in opt_changes]
    if "lr" in variables and isinstance(variables["lr"], Mapping):
        used.add("lr")
        with problems.check():
            optimization.update(_transformer_lr(variables["lr"], changes))
    return optimization


def experiment_from_texar(
    variables: Mapping[str, Any],
    model: str,
    data: str | None = None,
    base: Mapping[str, Any] | None = None,
) -> ExperimentMigration:
    """A texkit experiment from a Texar config's variables (see the module docstring).

    Args:
        variables: the config's variables (:func:`load_texar_config`).
        model: the registered model builder whose ``texar_sections`` say which variable feeds
            which of its sections.
        data: the registered data builder (``None``: ``base``'s, if any).
        base: an experiment (as its YAML file holds it) that gives what the Texar config does
            not say: the data, the run; its ``model`` is replaced, its ``optimization`` too when
            the config has one, and the keys of a section of the example's own (e.g.
            ``translate.beam_width``) take the config's variables of the same names.

    Raises:
        HParamsError: every problem of the translated sections at once (paths under
            ``model.hparams``), or a Texar option texkit cannot express.
    """
    builder = resolve_builder(model, "model", "--model")
    sections = getattr(builder, "texar_sections", None)
    if not sections:
        raise HParamsError(
            f"the model builder {model!r} does not say which Texar variables its sections take "
            "(model_builder(..., texar_sections={section: (variable, Class)}))",
            "--model",
        )
    problems = Problems()
    changes: list[Change] = []
    used: set[str] = set()
    hparams = _module_sections(variables, sections, problems, changes, used)
    # The builder's other keys take the config's variables of the same names, as they are.
    for key in sorted(set(builder.default_hparams()) - set(sections) - {"name"}):
        if key in variables:
            used.add(key)
            hparams[key] = copy.deepcopy(variables[key])
            changes.append(Change(key, variables[key], f"model.hparams.{key}"))
    experiment = copy.deepcopy(dict(base or {}))
    experiment["model"] = {"type": model, "hparams": hparams}
    for name, section in experiment.items():
        if name in _EXPERIMENT_SECTIONS or not isinstance(section, dict):
            continue
        for key in sorted(set(section) & set(variables) - used):
            used.add(key)
            changes.append(Change(key, variables[key], f"{name}.{key}"))
            section[key] = variables[key]
    if data is not None:
        resolve_builder(data, "data", "--data")
        experiment["data"] = {"type": data}
    optimization = _optimization(variables, problems, changes, used)
    if optimization:
        experiment["optimization"] = optimization
    confidence = variables.get("loss_label_confidence")
    if confidence is not None and "label_smoothing" in builder.default_hparams():
        used.add("loss_label_confidence")
        hparams["label_smoothing"] = round(1.0 - confidence, 12)
        changes.append(
            Change(
                "loss_label_confidence",
                confidence,
                hparams["label_smoothing"],
                "model.hparams.label_smoothing = 1 - confidence, spread over all V classes "
                "(Texar: over the V - 1 others)",
            )  # fmt: skip
        )
    if isinstance(variables.get("random_seed"), int):
        used.add("random_seed")
        experiment.setdefault("run", {})["seed"] = variables["random_seed"]
        changes.append(Change("random_seed", variables["random_seed"], "run.seed"))
    for name in sorted(set(variables) - used):
        changes.append(Change(name, variables[name], None, "not carried: Texar's script reads it"))
    problems.raise_if_any()
    return ExperimentMigration(experiment, changes)
