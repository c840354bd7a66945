"""The ``texkit`` command.

texkit hparams WordEmbedder                  # a class's default hparams, as documented YAML
texkit hparams WordEmbedder dim=64           # ... with overrides applied and validated
texkit train EXPERIMENT.yaml [key=value ...] # train (resuming from run.model_dir)
texkit evaluate EXPERIMENT.yaml [--split test]
texkit predict EXPERIMENT.yaml --output predictions.jsonl [--split test] [--overwrite]
texkit export EXPERIMENT.yaml --output serving/ [--overwrite] [--format savedmodel|huggingface]
texkit migrate TEXAR_CONFIG.py --model BUILDER [--base X.yaml] [--output Y.yaml] [--overwrite]

``texkit hparams`` checks the values as the class itself does: it constructs the class with them
(see :func:`_check_by_constructing`), so ``dim=-3`` is refused as ``WordEmbedder(...)`` would
refuse it.

An experiment file names registered builders (texkit.run.experiment); ``--include FILE.py``
imports a file of your own that registers more (a file inside a package, such as
``examples/bert_classifier/train.py``, is imported as part of it). A YAML file itself can only name
code, never import it. ``evaluate``, ``predict`` and ``export`` load the latest checkpoint of
``run.model_dir`` (or ``--checkpoint``); the ``hparams.yaml`` that training wrote there is itself
an experiment file. ``predict``, ``export`` and ``migrate`` never replace an existing output
unless given ``--overwrite``. ``migrate`` runs the Texar config file as Python (it is your code,
as ``--include`` files are).

A mistake in the command line or the config (a key, a value, a path, a file that cannot be read)
is one line on stderr and exit code 2, found before anything is written.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
import sys
from typing import Any

import yaml

from texkit import files, registry
from texkit.hparams import HParams, HParamsError, apply_overrides


def _print_hparams(name: str, overrides: list[str]) -> int:
    try:
        target = registry.resolve(name)
    except HParamsError as error:
        print(f"texkit hparams: {error}", file=sys.stderr)
        return 2
    defaults = getattr(target, "default_hparams", None)
    if defaults is None:
        print(f"texkit hparams: {name!r} has no default_hparams()", file=sys.stderr)
        return 2
    try:
        hparams = HParams(apply_overrides({}, overrides), defaults())
        unchecked = _check_by_constructing(target, hparams)
    except ValueError as error:  # HParamsError included: it names the key
        print(f"texkit hparams: {name}: {error}", file=sys.stderr)
        return 2
    if unchecked:
        print(f"texkit hparams: values checked for type only: {unchecked}", file=sys.stderr)
    sys.stdout.write(f"# default hparams of {name}\n")
    sys.stdout.write(documented_yaml(hparams.todict(), getattr(target, "HPARAMS_DOC", {})))
    return 0


def documented_yaml(hparams: dict, docs: dict, path: str = "", indent: str = "") -> str:
    """``hparams`` as YAML, each key followed by its line of ``docs`` (keyed by dotted path) as
    a comment."""
    lines = []
    for key, value in hparams.items():
        full = f"{path}.{key}" if path else str(key)
        comment = f"  # {docs[full]}" if full in docs else ""
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{yaml.safe_dump(key).splitlines()[0]}:{comment}")
            lines.append(documented_yaml(value, docs, full, indent + "  ").rstrip("\n"))
            continue
        dumped = yaml.safe_dump({key: value}, sort_keys=False).rstrip("\n").split("\n")
        if dumped[-1].strip() == "...":  # a lone scalar's document end marker
            dumped.pop()
        lines.append(f"{indent}{dumped[0]}{comment}")
        lines.extend(indent + line for line in dumped[1:])
    return "\n".join(lines) + "\n"


# A constructor argument named like this is a size that comes from the data (vocab_size,
# position_size, output_size, raw_memory_dim), not a hyperparameter; 1 stands in for it when
# checking hparams.
_SIZE_SUFFIX = ("_size", "_dim")


def _check_by_constructing(target: Any, hparams: HParams) -> str | None:
    """Constructs ``target`` with ``hparams`` so that its own checks run (``dim`` > 0, a rate in
    [0, 1), ...) and raise as they would for the user; returns why it could not (then the values
    were checked for type only), or ``None``.

    The merge in :class:`HParams` checks keys and types; ranges and combinations of values are
    checked where the class uses them, in its constructor. So the class is constructed as a user
    would: ``Class(hparams=...)``, with 1 for each argument that names a size from the data
    (``WordEmbedder(vocab_size=1, hparams=...)``), which is not a hyperparameter. A class whose
    constructor needs any other argument is not constructed. Nothing is built: a layer creates its
    weights later, in ``build``.
    """
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return "its constructor's signature is unknown"
    arguments: dict[str, Any] = {}
    needs = []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name == "hparams":
            arguments["hparams"] = hparams.todict()
        elif parameter.name.endswith(_SIZE_SUFFIX) and (
            parameter.default is None or parameter.default is parameter.empty
        ):
            arguments[parameter.name] = 1
        elif parameter.default is parameter.empty:
            needs.append(parameter.name)
    if needs:
        return f"its constructor also needs {', '.join(needs)}"
    if "hparams" not in arguments:
        return "its constructor takes no hparams"
    target(**arguments)
    return None


def _include(path: str) -> None:
    """Imports a Python file of the user's (which registers builders), as Python would import it.

    A file in a package (its folder has an ``__init__.py``, e.g. ``examples/bert_classifier``) is
    imported under its dotted name with the folder above the package on ``sys.path``, as
    ``python -m examples.bert_classifier.train`` would, so its imports of the package work and it
    is the same module as when imported otherwise. A file outside any package is imported on its
    own, with its folder on ``sys.path`` so that it can import its neighbours.
    """
    path = os.path.abspath(path)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"--include: no such file: {path}")
    files.check_regular_file(path, context="--include")
    if not path.endswith(".py"):
        raise ValueError(
            f"--include: {path} is not a Python file (.py); a YAML config is the command's first "
            "argument, and --include names the Python file that registers its builders"
        )
    root, parts = os.path.dirname(path), [os.path.splitext(os.path.basename(path))[0]]
    while os.path.isfile(os.path.join(root, "__init__.py")):
        root, package = os.path.split(root)
        parts.insert(0, package)
    if len(parts) > 1:
        name = ".".join(parts)
        if root not in sys.path:
            sys.path.insert(0, root)
        module = importlib.import_module(name)
        if os.path.realpath(module.__file__ or "") != os.path.realpath(path):
            raise ImportError(
                f"--include: {path} is module {name}, but {name} is already {module.__file__}"
            )
        return
    name = "texkit_include_" + parts[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, root)  # so the file can import its neighbours
    spec.loader.exec_module(module)


def _experiment(args: argparse.Namespace) -> Any:
    from texkit import run

    for path in args.include:
        _include(path)
    user = HParams.from_yaml(args.config, None).todict()
    return run.validate_experiment(apply_overrides(user, args.overrides))


def _trainer(
    hparams: Any, checkpoint: str | None, restore: bool, args: argparse.Namespace | None = None
) -> Any:
    from texkit import run
    from texkit.run.export import check_export_path

    trainer = run.Trainer.from_hparams(hparams)
    # The command's own arguments are checked before a checkpoint is read.
    split = getattr(args, "split", None)
    if split is not None and split not in trainer.data:
        raise KeyError(f"--split: the data has no {split!r} split; it has {sorted(trainer.data)}")
    if args is not None and args.command == "export":
        if args.format == "huggingface":
            from texkit.pretrained.hf_folder import check_hf_export_path

            check_hf_export_path(args.output, args.overwrite)
        else:
            check_export_path(args.output, args.overwrite)
    if restore:
        step = trainer.restore(checkpoint)
        print(
            f"texkit: loaded {checkpoint or trainer.latest_checkpoint} (step {step})",
            file=sys.stderr,
        )
    return trainer


def _to_list(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _to_list(v) for key, v in value.items()}
    return value.tolist() if hasattr(value, "tolist") else value


def check_output_file(path: str, overwrite: bool) -> None:
    """Refuses the ``--output`` file of ``texkit predict`` or ``migrate`` before anything runs: a
    folder, anything that is not a regular file, a file that exists (unless ``overwrite``), a
    folder that does not exist."""
    if os.path.isdir(path):
        raise FileExistsError(f"--output {path!r} is a directory; give a file path")
    if os.path.lexists(path):
        if not os.path.isfile(path):
            raise FileExistsError(f"--output {path!r} exists and is not a regular file")
        if not overwrite:
            raise FileExistsError(
                f"--output {path!r} exists; give --overwrite to replace it, or another path"
            )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"--output {path!r}: the folder {folder!r} does not exist")


def _run_command(args: argparse.Namespace) -> int:
    if args.command == "predict":
        # Checked before anything runs: predictions are one JSON-lines file.
        check_output_file(args.output, args.overwrite)
    hparams = _experiment(args)
    if args.command == "train":
        trainer = _trainer(hparams, None, restore=False)
        trainer.train()
        result = {"step": trainer.step}
        if "eval" in trainer.data:
            result["eval"] = trainer.evaluate("eval")
        print(json.dumps(result))
        return 0
    trainer = _trainer(hparams, args.checkpoint, restore=True, args=args)
    if args.command == "evaluate":
        print(json.dumps({"step": trainer.step, args.split: trainer.evaluate(args.split)}))
    elif args.command == "predict":
        outputs = _to_list(trainer.predict(args.split))
        rows = (
            [
                dict(zip(outputs, values, strict=True))
                for values in zip(*outputs.values(), strict=True)
            ]
            if isinstance(outputs, dict)
            else outputs
        )
        with open(args.output, "w", encoding="utf-8") as stream:
            for row in rows:
                stream.write(json.dumps(row) + "\n")
        print(f"texkit: wrote {len(rows)} predictions to {args.output}", file=sys.stderr)
    elif args.format == "huggingface":
        from texkit.run.export import export_huggingface

        export_huggingface(trainer.model, args.output, overwrite=args.overwrite)
        print(f"texkit: exported a Hugging Face folder to {args.output}", file=sys.stderr)
    else:
        trainer.export(args.output, overwrite=args.overwrite)
        print(f"texkit: exported a SavedModel to {args.output}", file=sys.stderr)
    return 0


_RUN_COMMANDS = {
    "train": "train an experiment, resuming from its model_dir",
    "evaluate": "evaluate the latest checkpoint on a split",
    "predict": "write the model's outputs on a split as JSON lines",
    "export": "write a SavedModel for serving, or a Hugging Face folder",
}


def _add_run_arguments(command: argparse.ArgumentParser, name: str) -> None:
    command.add_argument("config", help="the experiment's YAML file")
    command.add_argument(
        "overrides", nargs="*", help="key=value overrides, e.g. run.train_steps=100"
    )
    command.add_argument(
        "--include", action="append", default=[], metavar="FILE.py",
        help="import this Python file first (it registers builders); repeatable",
    )  # fmt: skip
    if name != "train":
        command.add_argument("--checkpoint", help="a ckpt-<step> path (default: the latest)")
    if name in ("evaluate", "predict"):
        command.add_argument("--split", default="eval" if name == "evaluate" else "test")
    if name in ("predict", "export"):
        command.add_argument("--output", required=True, help="the file or folder to write")
    if name == "predict":
        command.add_argument(
            "--overwrite", action="store_true", help="replace the file at --output if it exists"
        )
    if name == "export":
        command.add_argument(
            "--overwrite", action="store_true",
            help="replace what an earlier export wrote at --output (never anything else)",
        )  # fmt: skip
        command.add_argument(
            "--format", choices=("savedmodel", "huggingface"), default="savedmodel",
            help="a SavedModel (default), or the Hugging Face folder of the model's pretrained "
            "module (config.json, model.safetensors, tokenizer files)",
        )  # fmt: skip


def _migrate(args: argparse.Namespace) -> int:
    """``texkit migrate``: a Texar config file as a texkit experiment YAML, the changes made
    listed as comments (and on stderr)."""
    from texkit.run.texar_configs import experiment_from_texar, load_texar_config

    if args.output:
        check_output_file(args.output, args.overwrite)
    for path in args.include:
        _include(path)
    variables = load_texar_config(args.config)
    base = HParams.from_yaml(args.base, None).todict() if args.base else None
    experiment, changes = experiment_from_texar(variables, args.model, args.data, base)
    lines = [f"# Migrated from the Texar config {os.path.basename(args.config)} by texkit migrate."]
    lines += [f"# - {change}" for change in changes]
    text = "\n".join(lines) + "\n" + yaml.safe_dump(experiment, sort_keys=False)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as stream:
            stream.write(text)
        print(f"texkit migrate: wrote {args.output} ({len(changes)} changes)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


_DESCRIPTION = (
    "texkit: print a class's default hparams; train, evaluate, predict with and export an "
    "experiment; migrate a Texar config. TensorFlow's own log lines are hidden unless "
    "--verbose (or TF_CPP_MIN_LOG_LEVEL) asks for them."
)


def _verbose_option() -> argparse.ArgumentParser:
    """``--verbose``, which every command takes. It acts before TensorFlow loads (see
    :mod:`texkit._quiet`); the parsers only accept it."""
    option = argparse.ArgumentParser(add_help=False)
    option.add_argument(
        "--verbose", action="store_true",
        help="also show TensorFlow's own log lines (its C++ info, warnings and errors)",
    )  # fmt: skip
    return option


def _parser(verbose: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``texkit`` command's parser, with its subcommands."""
    # No abbreviations: --verbose acts before TensorFlow loads, where only the whole word is read.
    parser = argparse.ArgumentParser(
        prog="texkit", description=_DESCRIPTION, parents=[verbose], allow_abbrev=False
    )
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser(
        "hparams",
        help="print a class's default hparams as YAML",
        parents=[verbose],
        allow_abbrev=False,
    )
    show.add_argument("name", help="a registered name, e.g. WordEmbedder")
    show.add_argument("overrides", nargs="*", help="key=value overrides, e.g. dim=64")
    for name, text in _RUN_COMMANDS.items():
        command = commands.add_parser(name, help=text, parents=[verbose], allow_abbrev=False)
        _add_run_arguments(command, name)
    migrate = commands.add_parser(
        "migrate",
        parents=[verbose],
        allow_abbrev=False,
        help="a Texar config file as a texkit experiment",
        description=(
            "Writes a Texar config file as a texkit experiment YAML. The config file is run as "
            "Python to read its variables: it is your code, as --include files are; run only "
            "files you trust."
        ),
    )
    migrate.add_argument(
        "config", help="the Texar config: a Python file of dicts, run as Python (trusted code)"
    )
    migrate.add_argument("--model", required=True, help="the model builder its sections feed")
    migrate.add_argument("--data", help="the data builder of the experiment")
    migrate.add_argument(
        "--base", metavar="EXPERIMENT.yaml",
        help="an experiment giving the rest (data, run): its model and optimization replaced",
    )  # fmt: skip
    migrate.add_argument(
        "--include", action="append", default=[], metavar="FILE.py",
        help="import this Python file first (it registers the builders); repeatable",
    )  # fmt: skip
    migrate.add_argument("--output", help="the YAML file to write (default: print it)")
    migrate.add_argument(
        "--overwrite", action="store_true", help="replace the file at --output if it exists"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    verbose = _verbose_option()
    parser = _parser(verbose)
    if argv and argv[0] in _RUN_COMMANDS:
        # Options may come before, between or after the key=value overrides.
        command = argparse.ArgumentParser(
            prog=f"texkit {argv[0]}",
            description=_RUN_COMMANDS[argv[0]],
            parents=[verbose],
            allow_abbrev=False,
        )
        _add_run_arguments(command, argv[0])
        args = command.parse_intermixed_args(argv[1:])
        args.command = argv[0]
    else:
        args = parser.parse_args(argv)
    import texkit  # noqa: F401  (registers texkit's classes)

    if args.command == "hparams":
        return _print_hparams(args.name, args.overrides)
    from texkit.run import Preempted, TrainingDiverged, WorkerLost
    from texkit.run.preemption import end_process

    try:
        if args.command == "migrate":
            return _migrate(args)
        return _run_command(args)
    except (Preempted, WorkerLost) as error:  # stopped early; start it again to resume
        print(f"texkit {args.command}: {error}", file=sys.stderr)
        if isinstance(error, WorkerLost):
            end_process(error.exit_code)
        return error.exit_code
    except TrainingDiverged as error:  # the run failed, not its command line: exit 1
        print(f"texkit {args.command}: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        # A missing file is a mistake (2); a disk that fails or fills while the run writes, a
        # failed run (1).
        print(f"texkit {args.command}: {error}", file=sys.stderr)
        return 2 if isinstance(error, (FileNotFoundError, FileExistsError)) else 1
    except (ValueError, FileNotFoundError, FileExistsError, KeyError) as error:
        # ValueError covers HParamsError and unreadable checkpoints: each names what to fix.
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"texkit {args.command}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
