"""What the classification examples share: an experiment from the command line, and accuracy on
the dev and test splits next to the majority-class baseline."""

from __future__ import annotations

import argparse

import texkit as tx


def experiment_from_args(argv: list[str] | None, doc: str, config: str) -> tx.HParams:
    """``[--config FILE] [key=value ...]`` -> the validated experiment hparams; ``config`` is the
    example's own YAML file, the default."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--config", default=config, help="the YAML file (default: %(default)s)")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. run.train_steps=50")
    args = parser.parse_args(argv)
    user = tx.HParams.from_yaml(args.config, None).todict()
    return tx.run.validate_experiment(tx.apply_overrides(user, args.overrides))


def train_and_report(trainer: tx.run.Trainer, what: str) -> dict:
    """Trains, then prints and returns dev and test accuracy with their majority baselines.

    The data must carry ``sizes`` and ``majority`` per split name; ``what`` names the examples in
    the printout (``"articles"``).
    """
    trainer.train()
    results = {}
    for split, name in (("eval", "dev"), ("test", "test")):
        results[name] = {
            "accuracy": trainer.evaluate(split)["accuracy"],
            "majority": trainer.data.majority[name],
            "size": trainer.data.sizes[name],
        }
    for name, result in results.items():
        print(
            f"{name} accuracy ({result['size']} {what}): {result['accuracy']:.4f} "
            f"(majority class: {result['majority']:.4f})"
        )
    return results
