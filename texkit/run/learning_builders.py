"""Policy-gradient fine-tuning in experiment files: ``texkit train`` trains a
:class:`~texkit.tasks.CausalLM` on its own samples with a reward, with no code of one's own::

    model:
      type: causal_lm_policy_gradient
      hparams:
        pretrained: path/to/checkpoint
        max_new_tokens: 16
        reward: {type: ExactMatch, kwargs: {reference_key: completion, over: texts}}
        policy_gradient: {num_samples: 4, baseline: {type: group}, kl: {coefficient: 0.05}}
    data:
      type: prompt_data
      hparams: {train: prompts.jsonl, format: jsonl, batch_size: 4}
    run: {model_dir: runs/rl, train_steps: 200}

``prompt_data`` reads prompts as ``text_data`` reads texts: ``format: lines``, one prompt per
line (the feature ``prompt``); ``format: jsonl``, ``{"prompt": ..., "completion": ...}`` per
line, the completion being the reference a reward may read (the feature ``completion``).

The model is a :class:`~texkit.learning.PolicyGradient` over
:func:`~texkit.learning.task_policies.causal_lm_policy`; ``reward`` names a registered reward
(:func:`texkit.rewards.as_reward`); ``policy_gradient`` holds its hparams. With
``kl.coefficient > 0`` the checkpoint is loaded a second time as the frozen reference. With
``lora``, only the adapters train. What trains is saved in the run's checkpoints.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.hparams import HParams, HParamsError
from texkit.run.experiment import Data, data_builder, model_builder
from texkit.run.task_builders import batched, read_text_records, text_splits

__all__ = ["causal_lm_policy_gradient", "prompt_data"]


def _prompts(path: str, hp: HParams, where: str, train: bool) -> tf.data.Dataset:
    prompts, completions = read_text_records(path, hp.format, where)
    features = {"prompt": prompts}
    if completions is not None:
        features["completion"] = completions
    return batched(tf.data.Dataset.from_tensor_slices(features), len(prompts), hp, train)


@data_builder(
    {"train": None, "eval": None, "format": "lines", "batch_size": 8, "seed": 0,
     "name": "prompt_data"}
)  # fmt: skip
def prompt_data(hparams: HParams) -> Data:
    """Prompts (and their reference completions) from text files, batched (see the module)."""
    return text_splits(hparams, _prompts)


@model_builder(
    {"pretrained": None, "hparams": {}, "lora": None, "max_new_tokens": 32,
     "max_prompt_tokens": 64, "reward": {"type": None, "kwargs": {}}, "policy_gradient": {},
     "name": "causal_lm_policy_gradient"}
)  # fmt: skip
def causal_lm_policy_gradient(hparams: HParams, data: Data) -> Any:
    """A :class:`~texkit.learning.PolicyGradient` over a CausalLM from a checkpoint folder
    (see the module)."""
    from texkit.learning import PolicyGradient
    from texkit.learning.task_policies import causal_lm_policy
    from texkit.rewards import as_reward
    from texkit.tasks import CausalLM
    from texkit.tasks.lora import lora_from_hparams

    if not hparams.pretrained:
        raise HParamsError("name a checkpoint folder to fine-tune", "pretrained")
    if hparams.reward.type is None:
        raise HParamsError("name a reward (e.g. ExactMatch, SentenceBLEU)", "reward.type")
    reward = as_reward(hparams.reward, "reward")
    settings = PolicyGradient.make_hparams(hparams.policy_gradient.todict())
    sizes = (hparams.max_new_tokens, hparams.max_prompt_tokens)

    def policy_of(task: Any) -> Any:
        return causal_lm_policy(task, *sizes)

    task = CausalLM.from_pretrained(hparams.pretrained, hparams.hparams.todict())
    if hparams.lora:
        task._build_for_weights()
        lora_from_hparams(task.module, hparams.lora)
    reference = None
    if float(settings.kl.coefficient) > 0:
        frozen = CausalLM.from_pretrained(hparams.pretrained, hparams.hparams.todict())
        reference = policy_of(frozen)
    return PolicyGradient(policy_of(task), reward, settings.todict(), reference=reference,
                          name=hparams.name)  # fmt: skip
