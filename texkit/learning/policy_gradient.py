"""PolicyGradient: sequence-level policy-gradient training of a texkit decoder, as a Keras model.

Each training step, for a batch of inputs:

1. **samples** ``num_samples`` sequences per input from the policy
   (:class:`~texkit.learning.DecoderPolicy`), with the sampling settings (temperature, top-k,
   top-p) and each row's own random numbers (:mod:`texkit.learning.row_sampling`: the samples
   do not depend on how the batch is split over replicas);
2. **scores** them with the reward (:mod:`texkit.rewards`);
3. turns rewards into **advantages** with the baseline (:mod:`texkit.learning.advantages`:
   none, moving average, self-critical greedy, group-relative);
4. **updates** the policy ``ppo.epochs`` times on these samples, minimizing per token
   ``-min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)`` with ``ratio = p(y_t) /
   p_old(y_t)``, ``p_old`` the probability when the tokens were sampled (with one epoch the
   ratio is 1 and its gradient is REINFORCE's, ``-A grad log p(y_t)``, the loss of
   :func:`texkit.losses.pg_loss_with_logits`), plus ``kl.coefficient`` times the KL divergence
   from the policy to a frozen ``reference`` policy (exact, over the vocabulary, at each
   sampled position), minus ``entropy_weight`` times the policy's entropy, plus ``mle.weight``
   times the cross-entropy of the batch's own target sequences (teacher forcing).

Token terms are summed over each sequence and averaged over the samples (``loss_reduction:
"sequence"``, Texar's ``pg_loss_with_logits`` defaults) or averaged over every token
(``"token"``). Logged each step: ``loss``, ``reward`` (the mean), ``kl``, ``entropy`` (per
sequence, summed over its tokens) and ``length`` (mean tokens per sample).

Because it is a ``keras.Model`` with its own ``train_step``, :class:`~texkit.run.Trainer` runs
it as any other model: distribution strategies, checkpoints and resume, logs. A reward in Python
(``reward.in_graph`` False) runs on the host inside the step through ``tf.numpy_function``: each
replica calls it on its own samples. That works eagerly, in ``tf.function`` and under
``MirroredStrategy`` on CPUs and GPUs; on TPUs, or with ``jit_compile``, the reward must be
TensorFlow ops (the run refuses otherwise, before training).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import keras
import tensorflow as tf

from texkit.configurable import Configurable
from texkit.hparams import HParams
from texkit.learning.advantages import BASELINES, group_advantages, moving_average_advantages
from texkit.learning.policies import DecoderPolicy, Rollout, greedy_choice, repeat_rows
from texkit.learning.row_sampling import row_choice, row_keys
from texkit.rewards import Samples, as_reward, check_reward_runs_on
from texkit.utils.fit_output import KerasFitDefaults

__all__ = ["PolicyGradient"]

_REDUCTIONS = ("sequence", "token")


class PolicyGradient(Configurable, KerasFitDefaults, keras.Model):
    """Policy-gradient training of a :class:`~texkit.learning.DecoderPolicy` (see the module).

    Args:
        policy: the policy to train (its ``model`` owns the trained weights).
        reward: a :class:`~texkit.rewards.Reward`, a Python function of texts, or a reward's
            hparams (``{"type": ..., "kwargs": ...}``), as :func:`texkit.rewards.as_reward`
            takes.
        hparams: see the table below.
        reference: a frozen :class:`~texkit.learning.DecoderPolicy` (e.g. a copy of the
            starting model) for the KL penalty; needed when ``kl.coefficient > 0``.

    ``call(features)`` gives the policy's greedy sequences ``[batch, max_new_tokens]`` (what
    ``predict`` returns).

    Example::

        policy = tx.learning.DecoderPolicy(lm, max_new_tokens=16, end_token=eos,
                                           prompt=("prompt_ids", "prompt_length"))
        model = tx.learning.PolicyGradient(policy, reward, {"num_samples": 4})
        model.compile(optimizer=keras.optimizers.Adam(1e-4))
        model.fit(prompts_dataset, steps_per_epoch=100)
    """

    HPARAMS_DOC: ClassVar[dict[str, str]] = {
        "num_samples": "Sequences sampled per input each step (>= 1; >= 2 for the group baseline).",
        "sampling.temperature": "Softmax temperature of the samples.",
        "sampling.top_k": "Sample among the k likeliest tokens (0: all).",
        "sampling.top_p": "Sample among the likeliest tokens of this total probability (1: all).",
        "sampling.seed": "Seed of the samples (with the step and each row's input).",
        "baseline.type": "'none', 'moving_average', 'self_critical' or 'group' (see "
        "texkit.learning.advantages).",
        "baseline.scale": "group: divide by the group's standard deviation.",
        "baseline.decay": "moving_average: the decay of the average.",
        "kl.coefficient": "Weight of the KL divergence to the reference policy (0: none).",
        "ppo.epochs": "Updates per batch of samples (> 1 reuses them with clipped ratios).",
        "ppo.clip": "The ratio's clipping range: [1 - clip, 1 + clip].",
        "entropy_weight": "Weight of the entropy bonus (0: none).",
        "mle.weight": "Weight of the cross-entropy of the batch's targets (0: none).",
        "mle.target": "The features [ids, lengths] of the targets (the tokens after the start "
        "token or the prompt, end token included).",
        "loss_reduction": "'sequence' (sum over tokens, mean over samples) or 'token' (mean "
        "over tokens).",
        "name": "The Keras model's name.",
    }

    @classmethod
    def default_hparams(cls) -> dict:
        return {
            "num_samples": 4,
            "sampling": {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0},
            "baseline": {"type": "group", "scale": True, "decay": 0.9},
            "kl": {"coefficient": 0.0},
            "ppo": {"epochs": 1, "clip": 0.2},
            "entropy_weight": 0.0,
            "mle": {"weight": 0.0, "target": ["target_ids", "target_length"]},
            "loss_reduction": "sequence",
            "name": "policy_gradient",
        }

    def __init__(
        self,
        policy: DecoderPolicy,
        reward: Any,
        hparams: Mapping | HParams | None = None,
        reference: DecoderPolicy | None = None,
        **kwargs: Any,
    ):
        hp = self.make_hparams(hparams)
        _check_hparams(hp, reference)
        if not isinstance(policy, DecoderPolicy):
            raise TypeError(f"policy must be a texkit.learning.DecoderPolicy, got {policy!r}")
        if reference is not None:
            _check_reference(policy, reference)
        super().__init__(name=kwargs.pop("name", hp.name), **kwargs)
        self._hparams = hp
        self.policy = policy
        self.reward = as_reward(reward)
        self.reference = reference
        self.policy_model = policy.model
        if reference is not None:
            self.reference_model = reference.model
            self.reference_model.trainable = False
        self._average = self.add_weight(
            shape=(), initializer="zeros", trainable=False, name="baseline_average",
            aggregation="only_first_replica",
        )  # fmt: skip
        self._started = self.add_weight(
            shape=(), dtype="bool", initializer="zeros", trainable=False,
            name="baseline_started", aggregation="only_first_replica",
        )  # fmt: skip
        if self.policy_model.built and (reference is None or self.reference_model.built):
            self.built = True  # nothing to create: the Trainer need not call it on zeros
        names = ("loss", "reward", "kl", "entropy", "length")
        self._trackers = {name: keras.metrics.Mean(name=name) for name in names}

    def compile(self, *args: Any, jit_compile: Any = "auto", **kwargs: Any) -> None:
        """Keras' ``compile``; ``jit_compile="auto"`` is off (a rollout's texts and a host
        reward do not compile with XLA), and ``True`` is refused for a host reward."""
        if jit_compile is True and not self.reward.in_graph:
            raise ValueError(
                f"jit_compile: the reward {self.reward!r} runs Python on the host, which XLA "
                "cannot call; use a reward of TensorFlow ops or jit_compile=False"
            )
        check_reward_runs_on(self.reward, tf.distribute.get_strategy())
        super().compile(*args, jit_compile=bool(jit_compile is True), **kwargs)

    @property
    def metrics(self) -> list:
        return list(self._trackers.values())

    # --- Keras -------------------------------------------------------------------------------

    def build(self, input_shape: Any = None) -> None:
        """Creates nothing: the model's own weights exist from ``__init__``, and the first call
        builds the policy's and the reference's models (their rollout and logits)."""
        self.built = True

    def call(self, features: Mapping[str, Any], training: Any = None) -> Any:
        """The policy's greedy sequences for ``features``, ``[batch, max_new_tokens]``."""
        rollout = self.policy.rollout(features, 1, greedy_choice)
        if not self.policy_model.built or self.reference is not None:
            self.policy.logits(features, 1, rollout, training=False)  # builds every weight
            if self.reference is not None:
                self.reference.logits(features, 1, rollout, training=False)
        return rollout.ids

    def train_step(self, data: Any) -> dict:
        features = _features(data)
        hp = self._hparams
        k = int(hp.num_samples)
        rollout = self.policy.rollout(features, k, self._sampler(features, k))
        repeated = repeat_rows(dict(features), k)
        rewards = self.reward(
            Samples(rollout.ids, rollout.lengths, self.policy.texts(rollout), repeated)
        )
        advantages = tf.stop_gradient(self._advantages(features, rewards, k))
        mask = tf.sequence_mask(rollout.lengths, rollout.ids.shape[1], tf.float32)
        old = None
        if int(hp.ppo.epochs) > 1:
            old = _chosen_log_probs(self.policy.logits(features, k, rollout, False), rollout.ids)
        reference = None
        if self.reference is not None and float(hp.kl.coefficient) > 0:
            reference = tf.nn.log_softmax(self.reference.logits(features, k, rollout, False))
        for _ in range(int(hp.ppo.epochs)):
            terms = self._update(features, rollout, advantages, mask, old, reference)
        self._trackers["reward"].update_state(tf.reduce_mean(rewards))
        self._trackers["length"].update_state(tf.reduce_mean(tf.cast(rollout.lengths, tf.float32)))
        for name in ("loss", "kl", "entropy"):
            self._trackers[name].update_state(terms[name])
        return {name: tracker.result() for name, tracker in self._trackers.items()}

    def test_step(self, data: Any) -> dict:
        """The reward of the policy's greedy sequences (logged as ``reward``)."""
        features = _features(data)
        rollout = self.policy.rollout(features, 1, greedy_choice)
        rewards = self.reward(
            Samples(rollout.ids, rollout.lengths, self.policy.texts(rollout), dict(features))
        )
        self._trackers["reward"].update_state(tf.reduce_mean(rewards))
        self._trackers["length"].update_state(tf.reduce_mean(tf.cast(rollout.lengths, tf.float32)))
        return {name: self._trackers[name].result() for name in ("reward", "length")}

    # --- the step's parts ---------------------------------------------------------------------

    def _sampler(self, features: Mapping[str, Any], k: int) -> Any:
        s = self._hparams.sampling
        seed = tf.cast(self.optimizer.iterations, tf.int64) * 1_000_003 + int(s.seed)
        return row_choice(row_keys(features, k), seed, float(s.temperature), int(s.top_k),
                          float(s.top_p))  # fmt: skip

    def _advantages(self, features: Mapping[str, Any], rewards: Any, k: int) -> Any:
        b = self._hparams.baseline
        if b.type == "group":
            return group_advantages(rewards, k, scale=bool(b.scale))
        if b.type == "moving_average":
            return moving_average_advantages(rewards, self._average, self._started, b.decay)
        if b.type == "self_critical":
            greedy = self.policy.rollout(features, 1, greedy_choice)
            scores = self.reward(
                Samples(greedy.ids, greedy.lengths, self.policy.texts(greedy), dict(features))
            )
            return rewards - repeat_rows(scores, k)
        return rewards

    def _update(
        self, features: Any, rollout: Rollout, advantages: Any, mask: Any, old: Any, reference: Any
    ) -> dict:
        hp = self._hparams
        k = int(hp.num_samples)
        weights = self.policy_model.trainable_weights
        with tf.GradientTape() as tape:
            logits = self.policy.logits(features, k, rollout, training=True)
            log_probs = tf.nn.log_softmax(logits)
            chosen = _chosen_log_probs(logits, rollout.ids, log_probs)
            ratio = tf.exp(chosen - (tf.stop_gradient(chosen) if old is None else old))
            clip = float(hp.ppo.clip)
            a = advantages[:, None]
            surrogate = -tf.minimum(ratio * a, tf.clip_by_value(ratio, 1 - clip, 1 + clip) * a)
            probs = tf.exp(log_probs)
            entropy = -tf.reduce_sum(probs * log_probs, axis=-1)
            terms = {"loss": self._reduce(surrogate, mask), "entropy": _per_sequence(entropy, mask)}
            loss = terms["loss"] - float(hp.entropy_weight) * self._reduce(entropy, mask)
            if reference is not None:
                kl = tf.reduce_sum(probs * (log_probs - reference), axis=-1)
                loss += float(hp.kl.coefficient) * self._reduce(kl, mask)
                terms["kl"] = _per_sequence(kl, mask)
            else:
                terms["kl"] = tf.constant(0.0)
            if float(hp.mle.weight) > 0:
                loss += float(hp.mle.weight) * self._mle_loss(features)
            terms["loss"] = loss
            replicas = tf.distribute.get_strategy().num_replicas_in_sync
            scaled = loss / float(replicas)
        gradients = tape.gradient(scaled, weights)
        self.optimizer.apply(gradients, weights)
        return terms

    def _reduce(self, values: Any, mask: Any) -> Any:
        if self._hparams.loss_reduction == "token":
            return tf.reduce_sum(values * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
        return _per_sequence(values, mask)

    def _mle_loss(self, features: Mapping[str, Any]) -> Any:
        ids_key, lengths_key = self._hparams.mle.target
        for key in (ids_key, lengths_key):
            if key not in features:
                raise KeyError(
                    f"mle.target: no feature {key!r}; the features are {sorted(features)}"
                )
        ids = tf.cast(features[ids_key], tf.int32)
        lengths = tf.cast(features[lengths_key], tf.int32)
        prompt_ids, prompt_lengths = self.policy.prefix(features)
        target = Rollout(ids, lengths, prompt_ids, prompt_lengths)
        logits = self.policy.logits(features, 1, target, training=True)
        mask = tf.sequence_mask(lengths, tf.shape(ids)[1], tf.float32)
        return _per_sequence(-_chosen_log_probs(logits, ids), mask)

    def get_config(self) -> dict:
        raise NotImplementedError(
            "PolicyGradient is a training wrapper and is not saved as a whole; save its "
            "policy's model (e.g. policy.model.save(...) or the task) instead"
        )


def _features(data: Any) -> Mapping[str, Any]:
    features = data[0] if isinstance(data, tuple) else data
    if not isinstance(features, Mapping):
        raise TypeError(
            "PolicyGradient: each batch must be a dict of features (or a tuple whose first "
            f"element is one), got {type(features).__name__}"
        )
    return features


def _chosen_log_probs(logits: Any, ids: Any, log_probs: Any = None) -> Any:
    """``[n, T]``: the log-probability of each written token."""
    if log_probs is None:
        log_probs = tf.nn.log_softmax(logits)
    return tf.gather(log_probs, tf.maximum(ids, 0), batch_dims=2)


def _per_sequence(values: Any, mask: Any) -> Any:
    """The mean over sequences of each sequence's sum of ``values`` over its tokens."""
    return tf.reduce_mean(tf.reduce_sum(values * mask, axis=1))


def _check_hparams(hp: HParams, reference: Any) -> None:
    k = hp.num_samples
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"num_samples must be a positive int, got {k!r}")
    if hp.baseline.type not in BASELINES:
        raise ValueError(
            f"baseline.type must be one of {list(BASELINES)}, got {hp.baseline.type!r}"
        )
    if hp.baseline.type == "group" and k < 2:
        raise ValueError(
            f"num_samples: the group baseline needs at least 2 samples per input, got {k}"
        )
    if not 0.0 <= float(hp.baseline.decay) < 1.0:
        raise ValueError(f"baseline.decay must be in [0, 1), got {hp.baseline.decay!r}")
    if hp.loss_reduction not in _REDUCTIONS:
        raise ValueError(
            f"loss_reduction must be one of {list(_REDUCTIONS)}, got {hp.loss_reduction!r}"
        )
    epochs = hp.ppo.epochs
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"ppo.epochs must be a positive int, got {epochs!r}")
    if not 0.0 < float(hp.ppo.clip) < 1.0:
        raise ValueError(f"ppo.clip must be in (0, 1), got {hp.ppo.clip!r}")
    weights = {"kl.coefficient": hp.kl.coefficient, "entropy_weight": hp.entropy_weight,
               "mle.weight": hp.mle.weight}  # fmt: skip
    for name, value in weights.items():
        if float(value) < 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
    if float(hp.kl.coefficient) > 0 and reference is None:
        raise ValueError("kl.coefficient > 0 needs a reference policy (the reference argument)")


def _check_reference(policy: DecoderPolicy, reference: Any) -> None:
    if not isinstance(reference, DecoderPolicy):
        raise TypeError(f"reference must be a texkit.learning.DecoderPolicy, got {reference!r}")
    if reference.model is policy.model:
        raise ValueError(
            "reference: it shares its model with the policy; give a frozen copy (the KL "
            "penalty to itself would be 0)"
        )
    mine, theirs = policy.vocab_size, reference.vocab_size
    if mine != theirs:
        raise ValueError(
            f"reference: its vocabulary has {theirs} tokens, the policy's {mine}; the KL "
            "penalty compares distributions over the same tokens"
        )
