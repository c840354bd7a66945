"""The ``texkit`` command.

texkit hparams WordEmbedder        # a class's default hparams, as YAML
texkit hparams WordEmbedder dim=64 # ... with overrides applied and validated
"""

from __future__ import annotations

import argparse
import sys

import yaml

from texkit import registry
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
    except HParamsError as error:
        print(f"texkit hparams: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(f"# default hparams of {name}\n")
    sys.stdout.write(yaml.safe_dump(hparams.todict(), sort_keys=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="texkit", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("hparams", help="print a class's default hparams as YAML")
    show.add_argument("name", help="a registered name, e.g. WordEmbedder")
    show.add_argument("overrides", nargs="*", help="key=value overrides, e.g. dim=64")
    args = parser.parse_args(argv)
    import texkit  # noqa: F401  (registers texkit's classes)

    if args.command == "hparams":
        return _print_hparams(args.name, args.overrides)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
