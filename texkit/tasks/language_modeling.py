"""Fine-tuning a language model task on raw text with Keras' ``fit``.

``fit`` takes a ``tf.data.Dataset`` of batches of strings (whole texts: every token is a
target) or of ``(prompts, completions)`` pairs of strings (the loss is on the completion's
tokens only). Texts are tokenized inside the graph by the task's tokenizer (its start token
first, the first end token last, so the model learns to stop), cut to ``sequence_length`` tokens
and padded to it (static shapes, as TPUs want). The loss is the mean cross-entropy of the next
token over the target positions.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["LanguageModelTraining", "lm_loss"]


def lm_loss(logits: Any, token_ids: Any, target_mask: Any) -> Any:
    """The mean next-token cross-entropy: ``logits [B, T, V]`` at position ``t`` predict
    ``token_ids[:, t + 1]`` where ``target_mask[:, t + 1]``."""
    targets = token_ids[:, 1:]
    weights = tf.cast(target_mask[:, 1:], tf.float32)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=targets, logits=tf.cast(logits[:, :-1], tf.float32)
    )
    return tf.reduce_sum(losses * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)


class LanguageModelTraining:
    """What a language model task adds for ``fit`` (a mixin of :class:`~texkit.tasks.CausalLM`,
    before :class:`~texkit.tasks.task.Task` in its bases)."""

    def preprocess(self, texts: Any, completions: Any = None) -> dict[str, Any]:
        """The training features of a batch: ``token_ids [B, sequence_length]`` (padded),
        ``sequence_length [B]`` and ``target_mask [B, sequence_length]`` (the positions whose
        token is a target: all of a text's, or a completion's only).

        Args:
            texts: ``[B]`` strings: whole texts, or the prompts of ``completions``.
            completions: ``None``, or ``[B]`` strings that continue ``texts``.
        """
        size = int(self.hparams.sequence_length)
        prefix, _ = self.tokenizer.single_text_template
        ends = list(self.hparams.generation.end_token_ids or [])
        first = self.tokenizer.tokenize(tf.reshape(texts, [-1]))
        batch = first.nrows()
        row = tf.constant(list(prefix), tf.int32, shape=[1, len(prefix)])
        head = tf.RaggedTensor.from_tensor(tf.tile(row, tf.stack([batch, 1])))
        parts = [head, tf.cast(first, tf.int32)]
        if completions is not None:
            second = self.tokenizer.tokenize(tf.reshape(completions, [-1]))
            parts.append(tf.cast(second, tf.int32))
        if ends:
            parts.append(tf.RaggedTensor.from_tensor(tf.fill([batch, 1], ends[0])))
        ids = tf.concat(parts, axis=1)[:, :size]
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        token_ids = ids.to_tensor(default_value=self.pad_id, shape=[None, size])
        positions = tf.range(size)[None, :]
        mask = positions < lengths[:, None]
        if completions is not None:
            prompt = tf.cast(head.row_lengths() + first.row_lengths(), tf.int32)
            mask &= positions >= prompt[:, None]
        return {"token_ids": token_ids, "sequence_length": lengths, "target_mask": mask}

    def _features(self, data: Any) -> dict[str, Any]:
        """A batch as features: raw texts or ``(prompts, completions)`` preprocessed; features
        (a dict with ``token_ids``) as they are."""
        if isinstance(data, dict) and "token_ids" in data:
            return data
        if isinstance(data, (tuple, list)):
            if len(data) == 2 and data[1] is not None:
                return self.preprocess(data[0], data[1])
            data = data[0]
        return self.preprocess(data)

    def train_step(self, data: Any) -> Any:
        return super().train_step(self._features(data))

    def test_step(self, data: Any) -> Any:
        return super().test_step(self._features(data))

    def compute_loss(
        self, x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None,
        training: bool = True,
    ) -> Any:  # fmt: skip
        """:func:`lm_loss` of the features ``x`` and the logits ``y_pred`` (no labels: the
        targets are the texts' own next tokens)."""
        return lm_loss(y_pred, x["token_ids"], x["target_mask"])
