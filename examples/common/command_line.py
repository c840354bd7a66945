"""The examples' shared command line and the lines they print about their own run.

Every example takes ``--verbose`` (TensorFlow's own C++ log lines, hidden by default: texkit reads
the flag from ``sys.argv`` when it is imported, before TensorFlow loads; the parser only has to
accept it), most take ``--config FILE`` and ``key=value`` overrides, and those with a ``--quick``
mode say at its end what the full run reaches, so that a quick run's figures are not taken for
results.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence

import texkit as tx

VERBOSE_HELP = "also TensorFlow's own log lines (read before TensorFlow loads)"
QUICK_HELP = "a tiny run that checks the whole pipeline runs (its figures are not results)"


def example_parser(
    doc: str,
    config: str | None = None,
    *,
    config_help: str | None = None,
    quick: bool = False,
    overrides: str | None = "run.train_steps=50",
) -> argparse.ArgumentParser:
    """An example's parser: ``[--config FILE] [--quick] [--verbose] [key=value ...]``.

    Args:
        doc: the example's module docstring; its first paragraph describes the command.
        config: the example's own YAML file, the default of ``--config``.
        config_help: without ``config``, the help of a ``--config`` that has no default; with
            neither, the parser has no ``--config``.
        quick: whether the example has a ``--quick`` mode.
        overrides: an example of a ``key=value`` override for the help; ``None``: the command
            takes no overrides.

    The example adds its own options to the parser it gets.
    """
    # No abbreviations: texkit reads --verbose before TensorFlow loads, only as the whole word.
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], allow_abbrev=False)
    if config is not None:
        parser.add_argument("--config", default=config, help="the YAML file (default: %(default)s)")
    elif config_help is not None:
        parser.add_argument("--config", help=config_help)
    if quick:
        parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    if overrides is not None:
        parser.add_argument("overrides", nargs="*", help=f"key=value overrides, e.g. {overrides}")
    return parser


def read_config(args: argparse.Namespace, quick: Sequence[str] = (), *more: str) -> dict:
    """The YAML file of ``args.config`` (none: ``{}``) with, in this order, the ``quick``
    overrides when ``args.quick`` is set, ``more`` and the user's ``args.overrides``."""
    path = getattr(args, "config", None)
    user = tx.HParams.from_yaml(path, None).todict() if path else {}
    chosen = list(quick) if getattr(args, "quick", False) else []
    return tx.apply_overrides(user, chosen + list(more) + list(getattr(args, "overrides", [])))


def stage(message: str) -> None:
    """Prints one line of what the example is doing now, at once (a log shows it as it
    happens)."""
    print(message, flush=True)


def reading_stage(what: str, sizes: Mapping[str, int]) -> None:
    """The stage line of the data read: ``reading the BBC news articles: 1485 train, 214 dev,
    426 test``."""
    stage(f"reading the {what}: " + ", ".join(f"{n} {name}" for name, n in sizes.items()))


def quick_note(full_run: str, path: str) -> str:
    """Prints and returns the line that ends a quick run: what it checks and what the full run
    reaches (``full_run``, the figure of the example's README); ``path`` is any file of the
    example's folder (its ``__file__`` or config)."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    note = (
        "quick run: this only checks that the whole pipeline runs; the full run (without "
        f"--quick) reaches {full_run} (examples/{folder}/README.md)"
    )
    stage(f"\n{note}")
    return note
