"""Self-critical policy-gradient training of the attention seq2seq model with sentence BLEU.

Texar's ``seq2seq_rl`` trained ``seq2seq_attn``'s model by policy gradient from random weights,
with sentence BLEU as the reward: a random policy's samples share almost no n-gram with the
references, the rewards carry no signal, and its README reports that training collapsed. This
example does what sequence-level training needs instead, in two phases on the same data:

1. **MLE**: ``examples/seq2seq_attn``'s model (:class:`~examples.seq2seq_attn.train.Seq2SeqAttn`,
   reused, not copied) trained with teacher forcing by ``tx.run.Trainer``, as that example does,
   on the Spanish -> English Bible pairs of ``examples/common/bible_translation.py``; its weights
   are written to ``<model_dir>/mle.weights.h5``;
2. **RL**: the same model loaded from those weights, wrapped in ``tx.learning.DecoderPolicy``
   and ``tx.learning.PolicyGradient`` (the model builder ``seq2seq_rl`` returns it, so the
   Trainer runs it as any model), trained by self-critical sequence training (Rennie et al.,
   2017): each step samples translations of each verse, scores them with
   ``tx.rewards.SentenceBLEU`` (smoothed sentence BLEU against the reference verse) and uses the
   reward of the greedy translation as the baseline, so only samples better than the model's
   own greedy output are made likelier; the MLE loss of the reference (``mle.weight``) is mixed
   in to keep the model close to fluent English.

The references of the reward are the reference verse's tokens as the target vocabulary has them
(rare words as ``<UNK>``, which the model can write too). Test BLEU (sacrebleu, beam search, as
in ``examples/seq2seq_attn``) and greedy test BLEU are reported before and after the RL phase.

From the repository root:

    python -m examples.seq2seq_rl.train --config examples/seq2seq_rl/config.yaml
    python -m examples.seq2seq_rl.train --config examples/seq2seq_rl/config.yaml --quick

With ``run.model_dir`` set, each phase keeps checkpoints in its own folder and resumes; a second
run with the same ``model_dir`` skips the finished MLE phase and starts RL from its weights.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time

import keras
import sacrebleu
import tensorflow as tf

import texkit as tx
from examples.common import bible_translation
from examples.common.command_line import example_parser, quick_note, read_config
from examples.seq2seq_attn import train as seq2seq_attn  # registers seq2seq_attn's builders
from texkit.learning.policies import greedy_choice

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: seq2seq_attn's tiny model and few verses, then a few RL steps.
QUICK = [
    *seq2seq_attn.QUICK,
    "rl.run.train_steps=6",
    "rl.run.checkpoint_every_steps=3",
    "rl.model.hparams.max_new_tokens=20",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "test BLEU 14.77 after MLE -> 15.11 after RL"

RL_DEFAULTS = {"model": {}, "data": {}, "optimization": {}, "run": {}}


# -- data --------------------------------------------------------------------------------------


def with_references(
    dataset: tf.data.Dataset, vocab: tx.data.Vocab, width: int | None = None
) -> tf.data.Dataset:
    """Adds ``target_ids`` (the labels: the verse's tokens and ``<EOS>``, padded to ``width``
    columns when given) and ``target_text`` (the verse's tokens joined by spaces, ``<EOS>``
    left out) to each batch's features."""
    detokenize = tx.learning.vocab_detokenizer(vocab)

    def add(features: dict, labels: tf.Tensor) -> tuple[dict, tf.Tensor]:
        texts = detokenize(labels, features["target_length"] - 1)
        ids = labels
        if width is not None:
            # The MLE term of the policy-gradient loss needs targets of a static width.
            ids = tf.pad(ids, [[0, 0], [0, width]])[:, :width]
            ids = tf.ensure_shape(ids, [None, width])
        return {**features, "target_ids": ids, "target_text": texts}, labels

    return dataset.map(add)


@tx.run.data_builder(
    {
        **bible_translation.bible_translation_data.default_hparams(),
        "name": "bible_translation_rl_data",
    }
)
def bible_translation_rl_data(hparams: tx.HParams) -> tx.run.Data:
    """``bible_translation_data`` with each batch's references as features (see
    :func:`with_references`), what the policy-gradient model reads."""
    data = bible_translation.bible_translation_data(hparams)
    vocab = data.target_vocab
    train = data["train"]
    return tx.run.Data(
        # Training pairs have at most max_seq_length tokens (+ <EOS>) on each side.
        train=lambda context: with_references(train(context), vocab, hparams.max_seq_length + 2),
        eval=with_references(data["eval"], vocab),
        test=with_references(data["test"], vocab),
        source_vocab=data.source_vocab,
        target_vocab=vocab,
        verses=data.verses,
        reports=data.reports,
    )


# -- the policy-gradient model -----------------------------------------------------------------


def _policy_gradient_defaults() -> dict:
    hp = tx.learning.PolicyGradient.default_hparams()
    hp["num_samples"] = 2
    hp["baseline"]["type"] = "self_critical"
    hp["mle"]["weight"] = 0.0
    return hp


@tx.run.model_builder(
    {
        "seq2seq": {},  # the MLE phase's model hparams (seq2seq_attn's or seq2seq_attn_modules')
        "weights": "",
        "max_new_tokens": 80,
        "policy_gradient": _policy_gradient_defaults(),
        "name": "seq2seq_rl",
    }
)
def seq2seq_rl(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """``tx.learning.PolicyGradient`` over a :class:`Seq2SeqAttn` of the ``seq2seq`` hparams
    (``seq2seq_attn``'s, or ``seq2seq_attn_modules``' module hparams as ``texkit migrate``
    writes them from a Texar config), loaded from the ``weights`` file when one is given,
    rewarded by sentence BLEU against the ``target_text`` feature; ``max_new_tokens`` bounds
    each sampled translation."""
    given = hparams.seq2seq.todict()
    builder = (
        seq2seq_attn.seq2seq_attn_modules if "embedder" in given else seq2seq_attn.seq2seq_attn
    )
    model = builder(tx.HParams(given, builder.default_hparams()), data)
    if hparams.weights:
        build(model)
        model.load_weights(hparams.weights)
    policy = translation_policy(model, data.target_vocab, hparams.max_new_tokens)
    reward = tx.rewards.SentenceBLEU(reference_key="target_text")
    return tx.learning.PolicyGradient(policy, reward, hparams.policy_gradient.todict())


def build(model: seq2seq_attn.Seq2SeqAttn) -> None:
    """Creates the model's weights with a batch of zeros."""
    ids, lengths = tf.zeros([1, 2], tf.int64), tf.fill([1], 2)
    model(
        {"source": ids, "source_length": lengths, "decoder_inputs": ids, "target_length": lengths},
        training=False,
    )


def translation_policy(
    model: seq2seq_attn.Seq2SeqAttn, vocab: tx.data.Vocab, max_new_tokens: int
) -> tx.learning.DecoderPolicy:
    """The model's decoder as a policy: translations start at ``<BOS>``, end at ``<EOS>``, and
    attend over the encoded source verse."""

    def condition(features: dict, training) -> dict:
        memory, state = model.encode(features["source"], features["source_length"], training)
        return {
            "memory": memory,
            "memory_sequence_length": features["source_length"],
            "initial_state": state,
        }

    return tx.learning.DecoderPolicy(
        model.decoder,
        max_new_tokens=max_new_tokens,
        end_token=vocab.eos_token_id,
        start_token=vocab.bos_token_id,
        embedding=model.target_embedder,
        condition=condition,
        detokenize=tx.learning.vocab_detokenizer(vocab),
        model=model,
        pad_id=vocab.pad_token_id,
    )


# -- scoring -----------------------------------------------------------------------------------


def greedy_translations(policy: tx.learning.DecoderPolicy, data: tx.run.Data) -> list[str]:
    """The policy's greedy translations of the test books, in order."""

    @tf.function(reduce_retracing=True)
    def greedy(features: dict) -> tf.Tensor:
        return policy.texts(policy.rollout(features, 1, greedy_choice))

    texts = []
    for features, _ in data["test"]:
        texts.extend(t.decode() for t in greedy(features).numpy())
    return texts


def test_bleu(pg: tx.learning.PolicyGradient, data: tx.run.Data, settings: tx.HParams) -> dict:
    """sacrebleu's test BLEU of beam search and of greedy decoding, and the beam hypotheses."""
    references = [verse.english for verse in data.verses["test"]]
    beam = bible_translation.translate(pg.policy_model, data, "test", settings)
    greedy = greedy_translations(pg.policy, data)

    def bleu(hypotheses: list[str]) -> float:
        # force: the hypotheses are tokens on purpose (13a splits the references the same way).
        return sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True, force=True).score

    return {"beam": bleu(beam), "greedy": bleu(greedy), "hypotheses": beam}


# -- the two phases ----------------------------------------------------------------------------


def phases(user: dict) -> tuple[tx.HParams, tx.HParams, str]:
    """The validated MLE and RL experiments of a config (its ``rl`` section overriding the
    rest), and the file of the MLE weights."""
    user = copy.deepcopy(user)
    rl = {**RL_DEFAULTS, **user.pop("rl", {})}
    folder = user.get("run", {}).get("model_dir") or tempfile.mkdtemp(prefix="seq2seq-rl-")
    weights = os.path.join(folder, "mle.weights.h5")
    mle = copy.deepcopy(user)
    mle.setdefault("run", {})["model_dir"] = os.path.join(folder, "mle")
    second = copy.deepcopy(user)
    second["data"]["type"] = "bible_translation_rl_data"
    second["data"].setdefault("hparams", {}).update(rl.get("data", {}).get("hparams", {}))
    model = second["model"].get("hparams", {})
    second["model"] = {
        "type": rl["model"].get("type", "seq2seq_rl"),
        "hparams": {**rl["model"].get("hparams", {}), "seq2seq": model, "weights": weights},
    }
    if rl["optimization"]:
        second["optimization"] = rl["optimization"]
    second["run"] = {**second.get("run", {}), **rl["run"], "model_dir": os.path.join(folder, "rl")}
    return tx.run.validate_experiment(mle), tx.run.validate_experiment(second), weights


def run(mle_hp: tx.HParams, rl_hp: tx.HParams, weights: str, settings: tx.HParams) -> dict:
    """Trains with MLE, writes the weights, trains by policy gradient from them; returns test
    BLEU before and after RL, the RL history and the translations."""
    start = time.time()
    trainer = tx.run.Trainer.from_hparams(mle_hp)
    data = trainer.data
    print(
        f"Bible es->en: {len(data.verses['train'])} training verses, vocabularies "
        f"es {data.source_vocab.size} / en {data.target_vocab.size}; "
        f"{trainer.model.count_params():,} parameters"
    )
    mle_history = trainer.train()
    trainer.model.save_weights(weights)
    mle_time = time.time() - start
    rl_trainer = tx.run.Trainer.from_hparams(rl_hp)
    before = test_bleu(rl_trainer.model, rl_trainer.data, settings)
    print(f"\nafter MLE ({mle_time:.0f} s): test BLEU {before['beam']:.2f} (beam), "
          f"{before['greedy']:.2f} (greedy)")  # fmt: skip
    rl_start = time.time()
    history = rl_trainer.train()
    rl_time = time.time() - rl_start
    after = test_bleu(rl_trainer.model, rl_trainer.data, settings)
    verses = data.verses["test"]
    shown = zip(verses[: settings.show], before["hypotheses"], after["hypotheses"], strict=False)
    for verse, old, new in shown:
        print(f"\n{verse.reference}\n  es:  {verse.spanish}\n  en:  {verse.english}")
        print(f"  MLE: {old}\n  RL:  {new}")
    total = time.time() - start
    print(
        f"\ntest BLEU ({len(verses)} verses), beam {settings.beam_width}: "
        f"{before['beam']:.2f} -> {after['beam']:.2f}; greedy: {before['greedy']:.2f} -> "
        f"{after['greedy']:.2f}"
    )
    print(f"time: MLE {mle_time:.0f} s, RL {rl_time:.0f} s, {total:.0f} s in all")
    return {
        "before": before,
        "after": after,
        "mle_history": mle_history,
        "history": history,
        "references": [verse.english for verse in verses],
        "time": total,
    }


def main(argv: list[str] | None = None) -> dict:
    """``[--config FILE] [--quick] [key=value ...]``: both phases; returns :func:`run`'s
    result."""
    parser = example_parser(__doc__, CONFIG, quick=True, overrides="rl.run.train_steps=50")
    args = parser.parse_args(argv)
    user = read_config(args, QUICK)
    settings = tx.HParams(user.pop("translate", {}), bible_translation.TRANSLATE_DEFAULTS)
    result = run(*phases(user), settings)
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
