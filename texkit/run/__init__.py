"""Training: strategies, optimizers and schedules from hparams."""

from texkit.run import schedules
from texkit.run.distribution import default_distribution_hparams, strategy_from_hparams
from texkit.run.optimization import default_optimization_hparams, optimizer_from_hparams
from texkit.run.schedules import InverseSquareRootDecay, WarmupPolynomialDecay

__all__ = [
    "InverseSquareRootDecay",
    "WarmupPolynomialDecay",
    "default_distribution_hparams",
    "default_optimization_hparams",
    "optimizer_from_hparams",
    "schedules",
    "strategy_from_hparams",
]
