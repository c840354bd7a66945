"""Fine-tunes a small language model on a verifiable reward: group-relative policy gradient with
a KL penalty to the starting model.

Sequence-level RL is how language models are fine-tuned today: sample several continuations of
each prompt, score them with a reward a program can check, move the model towards the
continuations that score above their group's mean (group-relative baselines, as in GRPO), and
keep it near the model it started from with a KL penalty. This example does that with texkit's
pieces, in two phases:

1. **MLE**: ``examples/language_model``'s GPT-2-style model (``gpt2_language_model``, reused,
   not copied), small, trained by ``tx.run.Trainer`` on the English (King James) verses of the
   training books of ``examples/common/data``: each verse ``<BOS> tokens <EOS>``, lowercased
   words and punctuation (``examples/common/bible_translation.tokenize``);
2. **RL**: prompts are ``<BOS>`` and the first words of a verse; the policy
   (``tx.learning.DecoderPolicy`` over the model's ``GPT2Decoder``) continues each one
   ``num_samples`` times, and ``tx.learning.PolicyGradient`` trains it with ``baseline.type:
   group`` and ``kl.coefficient`` times the KL divergence to a frozen copy of the MLE model (the
   same module built from its hparams, the weights copied). The reward, a Python function over
   the sampled ids (``tx.rewards.FunctionReward``): a continuation that ends (writes
   ``<EOS>``) with exactly ``target_words`` words (tokens with a letter or digit; punctuation
   is free) scores 1, one that ends with ``n`` words ``max(0, 1 - |n - target| / target)``, one
   that does not end 0.

Reported, on the prompts of the dev books before and after RL: the mean reward of sampled and
of greedy continuations, the share that end with exactly the target, the KL divergence of the
samples from the starting model; a few continuations; and the training curves of the reward and
the KL penalty, ``lm_rl.png`` (written by ``examples/lm_rl/chart.py``, pure Python: the
environment has no matplotlib).

From the repository root:

    python -m examples.lm_rl.train --config examples/lm_rl/config.yaml
    python -m examples.lm_rl.train --config examples/lm_rl/config.yaml --quick
"""

from __future__ import annotations

import collections
import copy
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.bible_translation import tokenize
from examples.common.command_line import example_parser, quick_note, read_config
from examples.language_model import train as language_model  # registers gpt2_language_model
from examples.lm_rl.chart import line_chart
from texkit.learning.policies import greedy_choice
from texkit.learning.row_sampling import row_choice, row_keys

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")
HERE = os.path.dirname(os.path.abspath(__file__))

QUICK = [
    "data.hparams.max_train_verses=2000",
    "data.hparams.max_eval_verses=32",
    "data.hparams.vocab_size=500",
    "model.hparams.dim=32",
    "model.hparams.num_blocks=1",
    "model.hparams.num_heads=2",
    "model.hparams.feedforward_dim=64",
    "run.train_steps=30",
    "run.checkpoint_every_steps=15",
    "rl.run.train_steps=6",
    "rl.run.checkpoint_every_steps=3",
    "rl.run.eval_every_steps=3",
    "rl.model.hparams.max_new_tokens=12",
    "rl.model.hparams.target_words=5",
    "report.show=2",
    "report.chart=",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "mean reward 0.293 -> 0.909 at a KL of 4.98 nats per sample"
RL_DEFAULTS = {"model": {}, "data": {}, "optimization": {}, "run": {}}
REPORT_DEFAULTS = {"show": 4, "chart": "lm_rl.png", "name": "report"}


# -- data --------------------------------------------------------------------------------------

DATA_DEFAULTS = {
    "vocab_size": 5000,
    "max_seq_length": 48,
    "prompt_words": 2,
    "max_train_verses": 0,
    "max_eval_verses": 0,
    "batch_size": 32,
    "seed": 0,
}


def _verses(hparams: tx.HParams) -> tuple[tx.data.Vocab, dict[str, list[list[str]]]]:
    """The vocabulary of the training verses and each split's verses as token lists."""
    bible = load_bible()
    limits = {"train": hparams.max_train_verses, "dev": hparams.max_eval_verses}
    verses = {}
    for name, limit in limits.items():
        split = [tokenize(v.english).split() for v in bible[name]]
        split = [v for v in split if v]
        verses[name] = split[:limit] if limit else split
    counts = collections.Counter(t for verse in verses["train"] for t in verse)
    tokens = [t for t, _ in counts.most_common(hparams.vocab_size)]
    return tx.data.Vocab.from_tokens(tokens), verses


def _lm_dataset(vocab: tx.data.Vocab, verses: list, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``<BOS> verse <EOS>`` ids padded to ``width + 1`` columns (longer verses left out)."""
    rows = [
        [vocab.bos_token_id, *vocab.map_tokens_to_ids_py(v).tolist(), vocab.eos_token_id]
        for v in verses
        if len(v) + 1 <= width
    ]
    ids = np.zeros([len(rows), width + 1], np.int32)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
    return ids, np.array([len(row) for row in rows], np.int32)


@tx.run.data_builder({**DATA_DEFAULTS, "name": "bible_lm_data"})
def bible_lm_data(hparams: tx.HParams) -> tx.run.Data:
    """English verses for next-token prediction: features ``{"ids", "length"}``, labels the ids
    one token ahead (what ``gpt2_language_model`` reads); verses longer than
    ``max_seq_length`` tokens are left out."""
    vocab, verses = _verses(hparams)

    def dataset(name: str, training: bool) -> tf.data.Dataset:
        ids, lengths = _lm_dataset(vocab, verses[name], hparams.max_seq_length)
        data = tf.data.Dataset.from_tensor_slices((ids, lengths))
        if training:
            data = data.shuffle(len(ids), seed=hparams.seed).repeat()
        data = data.batch(hparams.batch_size, drop_remainder=training)
        return data.map(lambda i, n: ({"ids": i[:, :-1], "length": n - 1}, i[:, 1:]))

    return tx.run.Data(
        train=dataset("train", True), eval=dataset("dev", False), vocab=vocab,
        window=hparams.max_seq_length, sizes={k: len(v) for k, v in verses.items()},
    )  # fmt: skip


@tx.run.data_builder({**DATA_DEFAULTS, "name": "bible_prompt_data"})
def bible_prompt_data(hparams: tx.HParams) -> tx.run.Data:
    """Prompts: ``<BOS>`` and the first ``prompt_words`` tokens of each verse (features
    ``prompt_ids`` ``[batch, prompt_words + 1]`` and ``prompt_length``)."""
    vocab, verses = _verses(hparams)
    width = hparams.prompt_words + 1

    def dataset(name: str, training: bool) -> tf.data.Dataset:
        rows = [v[: hparams.prompt_words] for v in verses[name] if len(v) > hparams.prompt_words]
        ids = np.array(
            [[vocab.bos_token_id, *vocab.map_tokens_to_ids_py(r).tolist()] for r in rows],
            np.int32,
        )
        data = tf.data.Dataset.from_tensor_slices(
            {"prompt_ids": ids, "prompt_length": np.full([len(ids)], width, np.int32)}
        )
        if training:
            data = data.shuffle(len(ids), seed=hparams.seed).repeat()
        return data.batch(hparams.batch_size, drop_remainder=training)

    return tx.run.Data(
        train=dataset("train", True), eval=dataset("dev", False), vocab=vocab,
        window=hparams.max_seq_length,
    )  # fmt: skip


# -- the reward and the policy-gradient model ----------------------------------------------------


def word_count_reward(vocab: tx.data.Vocab, target: int) -> tx.rewards.FunctionReward:
    """1 for a continuation that ends with exactly ``target`` words, ``max(0, 1 - |n - target|
    / target)`` for one that ends with ``n``, 0 for one that does not end (see the module)."""
    is_word = np.array([any(c.isalnum() for c in t) for t in vocab.tokens], bool)
    for special in (vocab.pad_token_id, vocab.bos_token_id, vocab.eos_token_id):
        is_word[special] = False

    def words_written(ids: np.ndarray, lengths: np.ndarray, features: dict) -> list[float]:
        scores = []
        for row, length in zip(ids, lengths, strict=True):
            if length == 0 or row[length - 1] != vocab.eos_token_id:
                scores.append(0.0)
                continue
            n = int(is_word[row[: length - 1]].sum())
            scores.append(max(0.0, 1.0 - abs(n - target) / target))
        return scores

    return tx.rewards.FunctionReward(words_written, over="ids")


def _policy_gradient_defaults() -> dict:
    hp = tx.learning.PolicyGradient.default_hparams()
    hp["num_samples"] = 4
    hp["baseline"]["type"] = "group"
    hp["kl"]["coefficient"] = 0.2
    return hp


def language_model_of(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """A ``gpt2_language_model`` of ``hparams.lm`` with the weights of ``hparams.weights``."""
    model = language_model.gpt2_language_model(hparams.lm, data)
    model({"ids": tf.zeros([1, 2], tf.int32), "length": tf.fill([1], 2)}, training=False)
    if hparams.weights:
        model.load_weights(hparams.weights)
    return model


@tx.run.model_builder(
    {
        "lm": language_model.gpt2_language_model.default_hparams(),
        "weights": "",
        "max_new_tokens": 24,
        "target_words": 10,
        "policy_gradient": _policy_gradient_defaults(),
        "name": "lm_rl",
    }
)
def lm_rl(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """``tx.learning.PolicyGradient`` over the language model of ``lm`` loaded from ``weights``,
    rewarded by :func:`word_count_reward`, with a frozen copy of the same model as the KL
    reference."""

    def policy(model: keras.Model) -> tx.learning.DecoderPolicy:
        return tx.learning.DecoderPolicy(
            model.lm, max_new_tokens=hparams.max_new_tokens, end_token=data.vocab.eos_token_id,
            prompt=("prompt_ids", "prompt_length"), model=model,
            detokenize=tx.learning.vocab_detokenizer(data.vocab),
        )  # fmt: skip

    model = language_model_of(hparams, data)
    reference = language_model_of(hparams, data)
    reference.set_weights(model.get_weights())
    reward = word_count_reward(data.vocab, hparams.target_words)
    return tx.learning.PolicyGradient(
        policy(model), reward, hparams.policy_gradient.todict(), reference=policy(reference)
    )


# -- measuring ---------------------------------------------------------------------------------


def measure(pg: tx.learning.PolicyGradient, data: tx.run.Data, seed: int = 12345) -> dict:
    """On the dev prompts: the mean reward of sampled and of greedy continuations, the share of
    samples that score 1 (exactly the target), the samples' KL divergence from the reference
    (summed over their tokens), and the texts."""

    @tf.function(reduce_retracing=True)
    def draw(features: dict) -> tuple:
        choose = row_choice(row_keys(features, 1), seed)
        rollouts = {
            "sampled": pg.policy.rollout(features, 1, choose),
            "greedy": pg.policy.rollout(features, 1, greedy_choice),
        }
        sampled = rollouts["sampled"]
        log_p = tf.nn.log_softmax(pg.policy.logits(features, 1, sampled, training=False))
        log_q = tf.nn.log_softmax(pg.reference.logits(features, 1, sampled, training=False))
        mask = tf.sequence_mask(sampled.lengths, sampled.ids.shape[1], tf.float32)
        kl = tf.reduce_sum(tf.reduce_sum(tf.exp(log_p) * (log_p - log_q), -1) * mask, 1)
        texts = {name: pg.policy.texts(r) for name, r in rollouts.items()}
        return rollouts, texts, kl

    results = collections.defaultdict(list)
    for features in data["eval"]:
        rollouts, texts, kl = draw(features)
        for name, rollout in rollouts.items():
            samples = tx.rewards.Samples(rollout.ids, rollout.lengths, texts[name], features)
            results[name].extend(pg.reward(samples).numpy().tolist())
            results[f"{name}_texts"].extend(t.decode() for t in texts[name].numpy())
        results["kl"].extend(kl.numpy().tolist())
        for prompt in features["prompt_ids"].numpy():
            results["prompts"].append(" ".join(data.vocab.map_ids_to_tokens_py(prompt[1:])))
    return {
        "sampled_reward": float(np.mean(results["sampled"])),
        "greedy_reward": float(np.mean(results["greedy"])),
        "exact": float(np.mean(np.array(results["sampled"]) == 1.0)),
        "kl": float(np.mean(results["kl"])),
        **{k: results[k] for k in ("prompts", "sampled_texts", "greedy_texts")},
    }


# -- the two phases ----------------------------------------------------------------------------


def phases(user: dict) -> tuple[tx.HParams, tx.HParams, str]:
    """The validated MLE and RL experiments of a config (its ``rl`` section overriding the
    rest), and the file of the MLE weights."""
    user = copy.deepcopy(user)
    rl = {**RL_DEFAULTS, **user.pop("rl", {})}
    folder = user.get("run", {}).get("model_dir") or tempfile.mkdtemp(prefix="lm-rl-")
    weights = os.path.join(folder, "mle.weights.h5")
    mle = copy.deepcopy(user)
    mle.setdefault("run", {})["model_dir"] = os.path.join(folder, "mle")
    second = copy.deepcopy(user)
    second["data"]["type"] = "bible_prompt_data"
    second["data"].setdefault("hparams", {}).update(rl["data"].get("hparams", {}))
    second["model"] = {
        "type": rl["model"].get("type", "lm_rl"),
        "hparams": {
            **rl["model"].get("hparams", {}),
            "lm": {**second["model"].get("hparams", {}), "dropout_rate": 0.0},
            "weights": weights,
        },
    }
    if rl["optimization"]:
        second["optimization"] = rl["optimization"]
    second["run"] = {**second.get("run", {}), **rl["run"], "model_dir": os.path.join(folder, "rl")}
    return tx.run.validate_experiment(mle), tx.run.validate_experiment(second), weights


def write_chart(path: str, history: dict, run_hp: tx.HParams) -> None:
    """The reward and KL curves of the RL phase (one point per checkpoint interval: the means
    over its steps; the dev greedy reward at each evaluation)."""
    every = run_hp.checkpoint_every_steps
    steps = [every * (i + 1) for i in range(len(history["reward"]))]
    curves = {"samples": (steps, history["reward"])}
    if "val_reward" in history:
        every = run_hp.eval_every_steps or every
        curves["greedy, dev"] = ([every * (i + 1) for i in range(len(history["val_reward"]))],
                                 history["val_reward"])  # fmt: skip
    line_chart(path, [
        {"title": "reward: samples (blue), greedy on dev (red)", "curves": curves},
        {"title": "kl to the starting model", "curves": {"kl": (steps, history["kl"])}},
    ])  # fmt: skip


def run(mle_hp: tx.HParams, rl_hp: tx.HParams, weights: str, report: tx.HParams) -> dict:
    """Trains the language model, writes its weights, fine-tunes it by policy gradient; returns
    the dev measurements before and after, and the RL history."""
    start = time.time()
    trainer = tx.run.Trainer.from_hparams(mle_hp)
    sizes = trainer.data.sizes
    print(
        f"English verses: {sizes['train']} training, {sizes['dev']} dev; vocabulary "
        f"{trainer.data.vocab.size}; {trainer.model.count_params():,} parameters"
    )
    trainer.train()
    trainer.model.save_weights(weights)
    mle_time = time.time() - start
    rl_trainer = tx.run.Trainer.from_hparams(rl_hp)
    pg, data = rl_trainer.model, rl_trainer.data
    before = measure(pg, data)
    rl_start = time.time()
    history = rl_trainer.train()
    rl_time = time.time() - rl_start
    after = measure(pg, data)
    target = rl_hp.model.hparams.target_words
    for i in range(min(report.show, len(before["prompts"]))):
        print(f"\n{before['prompts'][i]} ...")
        print(f"  before: {before['sampled_texts'][i]}\n  after:  {after['sampled_texts'][i]}")
    print(f"\ndev prompts ({len(before['prompts'])}), target {target} words:")
    for key, label in (
        ("sampled_reward", "reward of samples"),
        ("greedy_reward", "reward, greedy"),
        ("exact", "samples with exactly the target"),
        ("kl", "KL to the start"),
    ):
        print(f"  {label:32s} {before[key]:7.3f} -> {after[key]:7.3f}")  # fmt: skip
    if report.chart:
        path = os.path.join(HERE, report.chart)
        write_chart(path, history, rl_hp.run)
        print(f"curves: {path}")
    print(f"time: MLE {mle_time:.0f} s, RL {rl_time:.0f} s, {time.time() - start:.0f} s in all")
    return {"before": before, "after": after, "history": history}


def main(argv: list[str] | None = None) -> dict:
    """``[--config FILE] [--quick] [key=value ...]``: both phases; returns :func:`run`'s
    result."""
    parser = example_parser(__doc__, CONFIG, quick=True, overrides="rl.run.train_steps=50")
    args = parser.parse_args(argv)
    user = read_config(args, QUICK)
    report = tx.HParams(user.pop("report", {}), REPORT_DEFAULTS)
    result = run(*phases(user), report)
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
