"""Policies over task models: a :class:`~texkit.tasks.CausalLM` continuing prompt texts.

:func:`causal_lm_policy` makes the :class:`~texkit.learning.DecoderPolicy` of a causal language
model task (GPT-2, the Llama line): its prompts are texts of the batch, tokenized in the graph
by the task's tokenizer with the template ``generate`` uses, and its samples are detokenized
back to texts for the rewards. The task's LoRA adapters, when it has them, are what trains.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from texkit.learning.policies import DecoderPolicy

__all__ = ["causal_lm_policy"]


def causal_lm_policy(
    task: Any, max_new_tokens: int, max_prompt_tokens: int = 64, prompt_key: str = "prompt"
) -> DecoderPolicy:
    """The policy of a causal language model task.

    Args:
        task: a :class:`~texkit.tasks.CausalLM`.
        max_new_tokens: the most tokens a sample has.
        max_prompt_tokens: prompts are cut to their last ``max_prompt_tokens`` tokens (the
            width is static, as compiled loops want).
        prompt_key: the feature holding the ``[batch]`` prompt strings.

    A prompt without tokens (an empty text, and a tokenizer template without a start token, as
    GPT-2's) starts from the first end token, as GPT-2 texts follow ``<|endoftext|>``.
    """
    if not isinstance(max_prompt_tokens, int) or max_prompt_tokens < 1:
        raise ValueError(f"max_prompt_tokens must be a positive int, got {max_prompt_tokens!r}")
    ends = list(task.hparams.generation.end_token_ids or []) or None
    pad = task.pad_id
    start = ends[0] if ends else pad

    def prompt(features: Any) -> tuple[Any, Any]:
        if prompt_key not in features:
            raise KeyError(
                f"prompt_key: no feature {prompt_key!r}; the features are {sorted(features)}"
            )
        ids = task.prompt_token_ids(tf.reshape(features[prompt_key], [-1]))[:, -max_prompt_tokens:]
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        ids = ids.to_tensor(default_value=pad, shape=[None, max_prompt_tokens])
        # A prompt without tokens (no text, and a template without a start token) starts
        # from the first end token, as GPT-2 starts a text after <|endoftext|>.
        empty = lengths == 0
        first = tf.where(empty, start, ids[:, 0])
        ids = tf.concat([first[:, None], ids[:, 1:]], axis=1)
        return ids, tf.where(empty, 1, lengths)

    def detokenize(ids: Any, lengths: Any) -> Any:
        ragged = tf.RaggedTensor.from_tensor(ids, lengths=lengths)
        return tf.reshape(task.tokenizer.detokenize(ragged), [-1])

    return DecoderPolicy(
        task.decoder, max_new_tokens=max_new_tokens, end_token=ends, prompt=prompt,
        detokenize=detokenize, model=task, pad_id=pad,
    )  # fmt: skip
