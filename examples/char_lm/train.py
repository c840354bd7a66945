"""Trains a character-level LSTM language model on the King James verses: bits per character.

The text is the English (King James) side of the Bible corpus of ``examples/common/data`` with
its fixed split by book (``examples/common/bible_corpus.py``): each verse as it is written (case,
punctuation and spaces kept), one verse a line, read by ``tx.data.MonoTextData`` with ``unit:
character`` as ``<BOS>``, its Unicode characters, ``<EOS>``. The vocabulary
(``tx.data.CharVocab``) holds every character of the training verses (89, the space included;
the dev and test verses have no other), plus the four special tokens.

The model is ``examples/language_model``'s LSTM language model (``lstm_language_model``, reused,
not copied): a ``WordEmbedder`` over the characters, a ``BasicRNNDecoder`` with one LSTM layer
and a Dense output layer of its own, trained by teacher forcing through ``tx.run.Trainer`` on the
mean NLL per predicted character. Training verses are batched by length (``bucket_boundaries``
every ``pad_multiple`` characters, ``batch_tokens`` positions per batch) and each batch is padded
to a multiple of ``pad_multiple``: little padding, and with ``run.jit_compile: true`` one XLA
compilation per bucket (the config trains without XLA: on 2 CPU cores a step took as long).

Bits per character: the model reads each held-out verse from ``<BOS>`` (with a fresh state) and
predicts every character of it and then ``<EOS>``; ``bpc = total NLL in nats / ln 2 / the number
of predictions``, the number being the characters of the verses plus one ``<EOS>`` per verse (the
end of the line, as the newline of a text file), summed over the whole split (not a mean of
per-batch figures). The baselines: a uniform choice among the vocabulary, ``log2(vocabulary
size)``, and a unigram model of the training verses (their characters and one ``<EOS>`` per
verse, counted in Python, add-one smoothed over every symbol the model can emit) scored on the
same predictions.

At the end it samples verses from ``<BOS>`` to ``<EOS>`` by temperature sampling (the decoder's
``infer_sample``, seeded), at each temperature of ``samples.temperatures``.

Measured on 2 shared CPU cores with ``examples/char_lm/config.yaml`` (1,600 steps of 4,096
positions, about 1.5 passes over the 4.0M training characters; 19.6 minutes in all; the samples
are in ``README.md``):

    bits per character              dev books   test books
    uniform, log2(93)                   6.539        6.539
    unigram (add-one smoothed)          4.384        4.366
    LSTM, 256 units                     1.808        1.831

From the repository root:

    python -m examples.char_lm.train --config examples/char_lm/config.yaml
    python -m examples.char_lm.train --config examples/char_lm/config.yaml --quick
"""

from __future__ import annotations

import collections
import math
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.command_line import example_parser, quick_note, read_config
from examples.language_model import train as language_model  # registers lstm_language_model

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: a few hundred verses, a small model and a few steps, to check the whole path quickly.
QUICK = [
    "data.hparams.max_train_verses=600",
    "data.hparams.max_eval_verses=24",
    "data.hparams.batch_tokens=2048",
    "optimization.learning_rate=0.02",
    "model.hparams.dim=64",
    "optimization.learning_rate_schedule.kwargs.decay_steps=60",
    "run.train_steps=60",
    "run.checkpoint_every_steps=30",
    "run.jit_compile=false",  # compiling with XLA takes longer than the tiny run
    "samples.num_samples=2",
    "samples.max_decoding_length=60",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "test 1.831 bits per character (unigram 4.366)"

SAMPLES_DEFAULTS = {
    "num_samples": 4,
    "temperatures": [1.0, 0.7],
    "max_decoding_length": 400,
    "seed": 0,
    "name": "samples",
}


# -- data ----------------------------------------------------------------------------------------


@tx.run.data_builder(
    {
        "work_dir": "",
        "max_seq_length": 448,
        "pad_multiple": 32,
        "batch_tokens": 4096,
        "eval_batch_size": 64,
        "max_train_verses": 0,
        "max_eval_verses": 0,
        "seed": 0,
        "name": "bible_characters",
    }
)
def bible_characters(hparams: tx.HParams) -> tx.run.Data:
    """The English verses, one a line, read character by character by ``MonoTextData``.

    Training verses of more than ``max_seq_length`` characters are left out (counted in the data
    report; the longest of the corpus has 443); dev and test keep every verse, in order, in
    batches of ``eval_batch_size``. Training batches hold verses of similar length, about
    ``batch_tokens`` positions each (``MonoTextData``'s token budget), shuffled with the seed.
    ``max_train_verses`` / ``max_eval_verses`` (0: all) take the first verses of the training
    split and of the dev and test splits. ``work_dir: ""`` writes to a temporary folder.
    """
    if hparams.pad_multiple < 1:
        raise tx.HParamsError(
            f"expected a positive int, got {hparams.pad_multiple}", "pad_multiple"
        )
    bible = load_bible()
    limits = {"train": hparams.max_train_verses, "dev": hparams.max_eval_verses}
    limits["test"] = hparams.max_eval_verses
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="bible-chars-")
    os.makedirs(folder, exist_ok=True)
    verses, files = {}, {}
    for name, split in bible.items():
        texts = [verse.english for verse in split]
        verses[name] = texts[: limits[name]] if limits[name] else texts
        files[name] = os.path.join(folder, f"{name}.txt")
        with open(files[name], "w", encoding="utf-8") as f:
            f.writelines(text + "\n" for text in verses[name])
    vocab_file = os.path.join(folder, "chars.txt")
    tx.data.CharVocab.from_files(files["train"]).save(vocab_file)
    # A line of n characters is n + 2 tokens; bucket k holds the lines whose inputs (all but
    # <EOS>) fill exactly k multiples of pad_multiple.
    multiple = hparams.pad_multiple
    boundaries = list(range(multiple + 2, hparams.max_seq_length + 2, multiple))

    def reader(name: str, training: bool) -> tx.data.MonoTextData:
        batching = {"batch_tokens": hparams.batch_tokens, "bucket_boundaries": boundaries}
        return tx.data.MonoTextData(
            {
                "dataset": {
                    "files": [files[name]],
                    "vocab_file": vocab_file,
                    "unit": "character",
                    "max_seq_length": hparams.max_seq_length if training else None,
                    "length_filter_mode": "discard",
                },
                **(batching if training else {"batch_size": hparams.eval_batch_size}),
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "drop_remainder": training,
                "seed": hparams.seed,
                "name": f"bible_characters_{name}",
            }
        )

    readers = {"train": reader("train", True), "dev": reader("dev", False)}
    readers["test"] = reader("test", False)
    return tx.run.Data(
        train=lambda context: next_characters(readers["train"].make_dataset(context), multiple),
        eval=next_characters(readers["dev"].dataset, multiple),
        test=next_characters(readers["test"].dataset, multiple),
        vocab=readers["train"].vocab,
        verses=verses,
        reports={name: r.report for name, r in readers.items()},
    )


def next_characters(dataset: tf.data.Dataset, multiple: int) -> tf.data.Dataset:
    """Batches as (features, labels): ``ids`` (``<BOS>`` and the characters) predict ``labels``
    (the characters and ``<EOS>``), padded to a multiple of ``multiple`` positions."""

    def split(batch: dict) -> tuple[dict, tf.Tensor]:
        ids = batch["text_ids"]
        steps = tf.shape(ids)[1] - 1
        width = (steps + multiple - 1) // multiple * multiple
        ids = tf.pad(ids, [[0, 0], [0, width - steps]])
        return {"ids": ids[:, :-1], "length": batch["length"] - 1}, ids[:, 1:]

    return dataset.map(split)


# -- scores and samples --------------------------------------------------------------------------


def bits_per_character(model: keras.Model, data: tx.run.Data, splits: dict[str, str]) -> dict:
    """``{name: {"bpc", "nll", "predictions"}}`` for each ``{name: split}``: the NLL in nats
    summed over every prediction of the split (each character and each verse's ``<EOS>``) and
    ``bpc = nll / ln 2 / predictions``."""
    results = language_model.perplexities(model, data, splits)
    return {
        name: {
            "bpc": r["nll"] / math.log(2) / r["tokens"],
            "nll": r["nll"],
            "predictions": r["tokens"],
        }
        for name, r in results.items()
    }


def unigram_bits_per_character(data: tx.run.Data, split: str) -> float:
    """Bits per character of an add-one-smoothed unigram model of the training verses (their
    characters and one ``<EOS>`` per verse) on ``split``'s predictions; ``<PAD>`` and ``<BOS>``
    are never predicted and get no probability."""
    vocab = data.vocab
    counts = collections.Counter(char for verse in data.verses["train"] for char in verse)
    counts[vocab.eos_token] = len(data.verses["train"])
    emitted = [t for t in vocab.tokens if t not in (vocab.pad_token, vocab.bos_token)]
    total = sum(counts.values()) + len(emitted)
    probability = {t: (counts[t] + 1) / total for t in emitted}
    targets = [
        probability.get(c, probability[vocab.unk_token]) for v in data.verses[split] for c in v
    ]
    targets += [probability[vocab.eos_token]] * len(data.verses[split])
    return float(-np.log2(targets).mean())


def sample_verses(
    model: keras.Model, vocab: tx.data.CharVocab, settings: tx.HParams, temperature: float
) -> list[str]:
    """``settings.num_samples`` verses drawn from ``<BOS>`` to ``<EOS>`` (or
    ``max_decoding_length`` characters) at ``temperature``, with ``settings.seed``."""
    start = tf.fill([settings.num_samples], vocab.bos_token_id)

    @tf.function(jit_compile=bool(model.jit_compile))
    def draw(start: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        outputs, _, lengths = model.decoder(
            decoding_strategy="infer_sample",
            embedding=model.embedder,
            start_tokens=start,
            end_token=vocab.eos_token_id,
            max_decoding_length=settings.max_decoding_length,
            softmax_temperature=temperature,
            seed=settings.seed,
        )
        return outputs.sample_id, lengths

    ids, lengths = draw(start)
    rows = zip(ids.numpy(), lengths.numpy(), strict=True)
    return [vocab.map_ids_to_text_py(row[:length]) for row, length in rows]


# -- the command line ----------------------------------------------------------------------------


def run(hparams: tx.HParams, settings: tx.HParams) -> dict:
    """Trains, then prints and returns the dev and test bits per character, the baselines and
    the samples."""
    start = time.time()
    trainer = tx.run.Trainer.from_hparams(hparams)
    data, model = trainer.data, trainer.model
    train = data.reports["train"]
    print(
        f"Bible verses (English), by character: {train.examples} training verses "
        f"({train.skipped} longer than {hparams.data.hparams.max_seq_length} left out), "
        f"vocabulary of {data.vocab.size} (characters and 4 special tokens); "
        f"{model.count_params():,} parameters"
    )
    history = trainer.train()
    train_time = time.time() - start
    scores = bits_per_character(model, data, {"dev": "eval", "test": "test"})
    unigram = {name: unigram_bits_per_character(data, name) for name in ("dev", "test")}
    uniform = math.log2(data.vocab.size)
    samples = {t: sample_verses(model, data.vocab, settings, t) for t in settings.temperatures}
    print(f"\n{'bits per character':<28} {'dev':>7} {'test':>7}")
    print(f"{f'uniform, log2({data.vocab.size})':<28} {uniform:>7.3f} {uniform:>7.3f}")
    print(f"{'unigram (add-one smoothed)':<28} {unigram['dev']:>7.3f} {unigram['test']:>7.3f}")
    print(f"{'LSTM':<28} {scores['dev']['bpc']:>7.3f} {scores['test']['bpc']:>7.3f}")
    print(
        f"({scores['test']['predictions']} test predictions: the characters of "
        f"{len(data.verses['test'])} verses and their ends; {trainer.step} steps)"
    )
    for temperature, texts in samples.items():
        print(f"\nsamples at temperature {temperature}:")
        for text in texts:
            print(f"  {text}")
    total = time.time() - start
    print(f"\ntime: {train_time:.0f} s to train, {total:.0f} s in all")
    return {**scores, "unigram": unigram, "uniform": uniform, "samples": samples,
            "history": history, "trainer": trainer, "data": data, "train_time": train_time,
            "time": total}  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    """``[--config FILE] [--quick] [key=value ...]``; returns :func:`run`'s result."""
    args = example_parser(__doc__, CONFIG, quick=True).parse_args(argv)
    user = read_config(args, QUICK)
    settings = tx.HParams(user.pop("samples", {}), SAMPLES_DEFAULTS)
    result = run(tx.run.validate_experiment(user), settings)
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
