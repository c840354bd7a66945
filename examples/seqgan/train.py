"""SeqGAN on the English Bible verses: an LSTM language model, MLE, then adversarial rounds.

Texar's SeqGAN example in texkit's form (``tx.learning.SeqGAN``): an LSTM language model (a
``tx.modules.WordEmbedder`` and a ``tx.modules.BasicRNNDecoder``) is pre-trained by maximum
likelihood on the King James verses of ``examples/common/data`` (lowercased, split into words
and punctuation marks, the verses of at most ``data.max_tokens`` tokens; the split by book of
``examples/common/bible_corpus.py``: the test books are never trained on); a discriminator
(``tx.learning.TextDiscriminator``: its own embeddings and a ``UnidirectionalRNNClassifier``) is
pre-trained to tell the training verses from the generator's samples, on every prefix; then
adversarial steps alternate a discriminator update and a generator update by policy gradient,
each sampled token rewarded by the discriminator's logit for the prefix ending there, minus a
learned per-position baseline (rewards to go, ``tx.losses.discount_reward``;
``tx.losses.pg_loss_with_logits``). The three stages are three ``tx.run.Trainer`` runs over the
same model (``model.stage``), each with its own checkpoints under ``run.model_dir``.

Reported for the MLE model and after the adversarial rounds:

* the NLL of the held-out (test) verses: per token (and its perplexity) and per verse, over
  every verse and token, ``<EOS>`` included;
* BLEU of ``evaluate.samples`` verses sampled from the generator (plain sampling, temperature
  1, the same seed for both models) against the held-out verses: each sample has every
  held-out verse as a reference (the measure of the SeqGAN paper), computed by
  ``tx.evals.corpus_bleu`` (sacrebleu) for n-grams up to 2, 3 and 4. For scale, the same BLEU of
  the dev verses (real text from other books) is printed.

From the repository root:

    python -m examples.seqgan.train --config examples/seqgan/config.yaml
    python -m examples.seqgan.train --config examples/seqgan/config.yaml --quick
"""

from __future__ import annotations

import math
import os
import tempfile
import time

import keras
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.bible_translation import tokenize
from examples.common.command_line import example_parser, quick_note, read_config

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: a few hundred verses, a tiny model and a few steps of each stage.
QUICK = [
    "data.max_train_verses=400",
    "data.vocab_size=300",
    "data.batch_size=16",
    "data.max_tokens=10",
    "model.dim=16",
    "model.discriminator.embedder.dim=8",
    "model.discriminator.classifier.rnn_cell.kwargs.units=8",
    "mle.train_steps=6",
    "discriminator.train_steps=2",
    "adversarial.train_steps=2",
    "run.checkpoint_every_steps=2",
    "run.jit_compile=false",
    "evaluate.samples=16",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "held-out NLL 4.184 per token after MLE -> 4.178 after SeqGAN"

STAGE = {"train_steps": 100, "learning_rate": 1e-3, "name": "stage"}
CONFIG_DEFAULTS = {
    "data": {
        "max_tokens": 20,
        "vocab_size": 4000,
        "batch_size": 32,
        "max_train_verses": 0,
        "seed": 0,
        "name": "data",
    },
    "model": {
        "dim": 128,
        "dropout_rate": 0.1,
        # TextDiscriminator's hparams, validated by it (its classifier's depend on the type).
        "discriminator": None,
        "reward": "logit",
        "discount": 1.0,
        "mle_weight": 0.0,
        "seed": 0,
        "name": "model",
    },
    "mle": {**STAGE, "name": "mle"},
    "discriminator": {**STAGE, "name": "discriminator"},
    "adversarial": {**STAGE, "name": "adversarial"},
    "run": {
        "model_dir": "",
        "checkpoint_every_steps": 100,
        "jit_compile": True,
        "verbose": 2,
        "seed": 0,
        "name": "run",
    },
    "evaluate": {"samples": 200, "seed": 1, "show": 5, "name": "evaluate"},
    "name": "seqgan",
}
STAGES = ("mle", "discriminator", "adversarial")


# -- data ----------------------------------------------------------------------------------------


def bible_verses(hp: tx.HParams, folder: str) -> dict:
    """The verses of at most ``max_tokens`` tokens, as files, a vocabulary and datasets."""
    bible = load_bible()
    verses = {}
    for name in ("train", "dev", "test"):
        texts = [tokenize(v.english) for v in bible[name]]
        verses[name] = [t for t in texts if 0 < len(t.split()) <= hp.max_tokens]
    if hp.max_train_verses:
        verses["train"] = verses["train"][: hp.max_train_verses]
    files = {}
    for name, texts in verses.items():
        files[name] = os.path.join(folder, f"{name}.txt")
        with open(files[name], "w", encoding="utf-8") as f:
            f.writelines(t + "\n" for t in texts)
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in tx.data.make_vocab(files["train"], max_size=hp.vocab_size))

    def dataset(name: str, training: bool) -> tf.data.Dataset:
        data = tx.data.MonoTextData(
            {
                "dataset": {
                    "files": [files[name]],
                    "vocab_file": vocab_file,
                    "max_seq_length": hp.max_tokens,
                    "pad_to_max_seq_length": True,
                },
                "batch_size": hp.batch_size,
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "drop_remainder": training,
                "seed": hp.seed,
                "name": f"bible_{name}",
            }
        )
        # Only ids and lengths: a compiled step takes no strings.
        keep = data.dataset.map(lambda b: {"text_ids": b["text_ids"], "length": b["length"]})
        return keep, data.vocab

    train, vocab = dataset("train", True)
    test, _ = dataset("test", False)
    return {"train": train, "test": test, "vocab": vocab, "verses": verses}


# -- the model -----------------------------------------------------------------------------------


def build_model(config: tx.HParams, vocab: tx.data.Vocab) -> tx.learning.SeqGAN:
    """The generator (an LSTM language model), the discriminator and the SeqGAN around them;
    the discriminator's optimizer is Adam with ``discriminator.learning_rate``."""
    hp = config.model
    keep = 1.0 - hp.dropout_rate
    embedder = tx.modules.WordEmbedder(vocab_size=vocab.size, hparams={"dim": hp.dim})
    decoder = tx.modules.BasicRNNDecoder(
        vocab.size,
        hparams={
            "rnn_cell": {
                "type": "LSTMCell",
                "kwargs": {"units": hp.dim},
                "dropout": {"input_keep_prob": keep, "output_keep_prob": keep},
            }
        },
    )
    discriminator = tx.learning.TextDiscriminator(vocab.size, hp.discriminator or {})
    return tx.learning.SeqGAN(
        embedder,
        decoder,
        discriminator,
        keras.optimizers.Adam(config.discriminator.learning_rate),
        reward=hp.reward,
        discount=hp.discount,
        bos_token_id=vocab.bos_token_id,
        eos_token_id=vocab.eos_token_id,
        # Up to max_tokens words and <EOS>: the real verses' longest.
        max_decoding_length=config.data.max_tokens + 1,
        mle_weight=hp.mle_weight,
        seed=hp.seed,
        name="seqgan",
    )


def train_stage(model, data: dict, config: tx.HParams, stage: str, strategy=None):
    """Runs ``stage`` (``model.stage``) for its steps through ``tx.run.Trainer``; returns the
    Trainer and its history."""
    settings, run = config[stage], config.run
    model.stage = stage
    hparams = {
        "optimization": {"optimizer": {"type": "Adam"}, "learning_rate": settings.learning_rate},
        "run": {
            "model_dir": os.path.join(run.model_dir, stage) if run.model_dir else "",
            "train_steps": settings.train_steps,
            "checkpoint_every_steps": min(run.checkpoint_every_steps, settings.train_steps),
            "eval_every_steps": 0,
            "jit_compile": run.jit_compile,
            "verbose": run.verbose,
            "seed": run.seed,
            "tensorboard": False,
        },
    }
    trainer = tx.run.Trainer(lambda: model, {"train": data["train"]}, hparams, strategy=strategy)
    history = trainer.train()
    return trainer, history


# -- evaluation ----------------------------------------------------------------------------------


def held_out_nll(model, dataset: tf.data.Dataset) -> dict:
    """The NLL of every held-out verse: per token, its perplexity, and per verse."""

    @tf.function(reduce_retracing=True)
    def batch_nll(features: dict) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        logits = model(features, training=False)
        total = tx.losses.sequence_sparse_softmax_cross_entropy(
            labels=features["text_ids"][:, 1:], logits=logits,
            sequence_length=features["length"] - 1, average_across_batch=False,
            sum_over_batch=True,
        )  # fmt: skip
        return total, tf.reduce_sum(features["length"] - 1), tf.shape(logits)[0]

    total, tokens, verses = 0.0, 0, 0
    for features in dataset:
        nll, count, rows = batch_nll(features)
        total, tokens, verses = total + float(nll), tokens + int(count), verses + int(rows)
    per_token = total / tokens
    return {"per_token": per_token, "perplexity": math.exp(per_token), "per_verse": total / verses}


def sample_verses(model, vocab: tx.data.Vocab, count: int, seed: int) -> list[str]:
    """``count`` verses sampled from the generator (temperature 1), up to ``<EOS>``."""

    @tf.function
    def draw() -> tuple[tf.Tensor, tf.Tensor]:
        outputs, _, lengths = model.decoder(
            decoding_strategy="infer_sample", embedding=model.embedder,
            start_tokens=model.start_tokens(count), end_token=model.eos_token_id,
            max_decoding_length=model.max_decoding_length, seed=seed, training=False,
        )  # fmt: skip
        return outputs.sample_id, lengths

    ids, lengths = draw()
    texts = []
    for row, length in zip(ids.numpy(), lengths.numpy(), strict=True):
        tokens = [t for t in vocab.map_ids_to_tokens_py(row[:length]) if t != vocab.eos_token]
        texts.append(" ".join(tokens))
    return texts


def bleu_against(texts: list[str], references: list[str]) -> dict[int, float]:
    """Corpus BLEU (orders 2, 3, 4) of ``texts``, each with every reference verse."""
    hypotheses = [t if t.strip() else "<empty>" for t in texts]
    streams = [references] * len(hypotheses)
    return {n: float(tx.evals.corpus_bleu(streams, hypotheses, max_order=n)) for n in (2, 3, 4)}


def report(model, data: dict, settings: tx.HParams, what: str) -> dict:
    """NLL and BLEU of ``model``, printed and returned."""
    nll = held_out_nll(model, data["test"])
    samples = sample_verses(model, data["vocab"], settings.samples, settings.seed)
    bleu = bleu_against(samples, data["verses"]["test"])
    print(
        f"{what}: held-out NLL {nll['per_token']:.3f} per token (perplexity "
        f"{nll['perplexity']:.1f}), {nll['per_verse']:.2f} per verse; BLEU-2/3/4 of "
        f"{len(samples)} samples {bleu[2]:.2f} / {bleu[3]:.2f} / {bleu[4]:.2f}"
    )
    for text in samples[: settings.show]:
        print(f"  {text}")
    return {"nll": nll, "bleu": bleu, "samples": samples}


# -- the command line ----------------------------------------------------------------------------


def run(config: tx.HParams) -> dict:
    """The three stages, with the figures after the first and the last."""
    start = time.time()
    folder = tempfile.mkdtemp(prefix="seqgan-bible-")
    data = bible_verses(config.data, folder)
    sizes = {name: len(texts) for name, texts in data["verses"].items()}
    print(
        f"Bible verses of at most {config.data.max_tokens} tokens: {sizes}; vocabulary of "
        f"{data['vocab'].size} tokens"
    )
    keras.utils.set_random_seed(config.run.seed)
    model = build_model(config, data["vocab"])
    results: dict = {"sizes": sizes, "histories": {}, "model": model, "data": data}
    strategy = None
    for stage in STAGES:
        stage_start = time.time()
        trainer, history = train_stage(model, data, config, stage, strategy)
        strategy = trainer.strategy
        results["histories"][stage] = history
        print(f"{stage}: {config[stage].train_steps} steps, {time.time() - stage_start:.0f} s")
        if stage == "mle":
            results["mle"] = report(model, data, config.evaluate, "MLE model")
    results["adversarial"] = report(model, data, config.evaluate, "after adversarial training")
    real = bleu_against(data["verses"]["dev"], data["verses"]["test"])
    results["dev_bleu"] = real
    print(f"dev verses (real text): BLEU-2/3/4 {real[2]:.2f} / {real[3]:.2f} / {real[4]:.2f}")
    results["time"] = time.time() - start
    print(f"{results['time']:.0f} s in all")
    return results


def main(argv: list[str] | None = None) -> dict:
    """``--config FILE [--quick] [key=value ...]``; returns :func:`run`'s result."""
    parser = example_parser(__doc__, CONFIG, quick=True, overrides="mle.train_steps=50")
    args = parser.parse_args(argv)
    user = read_config(args, QUICK)
    result = run(tx.HParams(user, CONFIG_DEFAULTS))
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
