"""Training: strategies, optimizers, schedules, the Trainer and experiments from hparams."""

from texkit.run import schedules
from texkit.run.distribution import default_distribution_hparams, strategy_from_hparams
from texkit.run.experiment import (
    Data,
    data_builder,
    default_experiment_hparams,
    model_builder,
    validate_experiment,
)
from texkit.run.learning_builders import causal_lm_policy_gradient, prompt_data
from texkit.run.optimization import default_optimization_hparams, optimizer_from_hparams
from texkit.run.run_config import default_run_hparams
from texkit.run.schedules import InverseSquareRootDecay, WarmupPolynomialDecay
from texkit.run.task_builders import causal_lm, text_data
from texkit.run.trainer import Preempted, Trainer, TrainingDiverged, WorkerLost

__all__ = [
    "Data",
    "InverseSquareRootDecay",
    "Preempted",
    "Trainer",
    "TrainingDiverged",
    "WarmupPolynomialDecay",
    "WorkerLost",
    "causal_lm",
    "causal_lm_policy_gradient",
    "data_builder",
    "default_distribution_hparams",
    "default_experiment_hparams",
    "default_optimization_hparams",
    "default_run_hparams",
    "prompt_data",
    "model_builder",
    "optimizer_from_hparams",
    "schedules",
    "strategy_from_hparams",
    "text_data",
    "validate_experiment",
]
