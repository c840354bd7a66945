"""What the classification examples share: an experiment from the command line, and accuracy on
the dev and test splits next to the majority-class baseline."""

from __future__ import annotations

import texkit as tx
from examples.common.command_line import example_parser, read_config, stage


def experiment_from_args(argv: list[str] | None, doc: str, config: str) -> tx.HParams:
    """``[--config FILE] [--verbose] [key=value ...]`` -> the validated experiment hparams;
    ``config`` is the example's own YAML file, the default."""
    args = example_parser(doc, config).parse_args(argv)
    return tx.run.validate_experiment(read_config(args))


def train_and_report(trainer: tx.run.Trainer, what: str) -> dict:
    """Trains, then prints and returns dev and test accuracy with their majority baselines.

    The data must carry ``sizes`` and ``majority`` per split name; ``what`` names the examples in
    the printout (``"articles"``). A line says when each stage starts.
    """
    run = trainer.hparams.run
    stage(f"training {run.train_steps} steps, in intervals of {run.checkpoint_every_steps}")
    trainer.train()
    results = {}
    for split, name in (("eval", "dev"), ("test", "test")):
        stage(f"evaluating {name} ({trainer.data.sizes[name]} {what})")
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
