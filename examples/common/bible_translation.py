"""What the translation examples share: the Spanish -> English Bible data, beam-search translation
of the test books, sacrebleu BLEU and the command line.

The data are the Reina-Valera 1909 / King James verse pairs of ``examples/common/data`` with
their fixed split by book (``examples/common/bible_corpus.py``): the test books are never seen in
training.
Verses are lowercased and split into words and punctuation, written as aligned ``.es``/``.en``
files, and read by ``tx.data.PairedTextData`` (vocabularies from the training files, batches
bucketed by length).

A model of these examples is a ``keras.Model`` whose call takes the features of
:func:`teacher_forcing` and returns logits, with a method
``beam_search(source, source_length, beam_width, length_penalty, max_decoding_length)`` that
returns a :class:`~texkit.modules.decoders.BeamSearchOutput`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time

import sacrebleu
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.command_line import (
    example_parser,
    quick_note,
    read_config,
    reading_stage,
    stage,
)

TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")

TRANSLATE_DEFAULTS = {
    "beam_width": 5,
    "length_penalty": 0.6,
    "max_decoding_length": 100,
    "show": 5,
    "name": "translate",
}


# The --quick overrides of both translation examples (each adds its own tiny model): a few hundred
# verses and a few steps, to check the whole path quickly.
QUICK = [
    "data.hparams.max_train_verses=600",
    "data.hparams.max_test_verses=24",
    "data.hparams.source_vocab_size=800",
    "data.hparams.target_vocab_size=800",
    "data.hparams.batch_size=16",
    "run.train_steps=20",
    "run.checkpoint_every_steps=10",
    "translate.beam_width=3",
    "translate.max_decoding_length=20",
    "translate.show=2",
]


def tokenize(text: str) -> str:
    """Lowercased words and punctuation marks, separated by single spaces."""
    return " ".join(TOKEN.findall(text.lower()))


@tx.run.data_builder(
    {
        "work_dir": "",
        "source_vocab_size": 10000,
        "target_vocab_size": 5000,
        "max_seq_length": 60,
        "max_train_verses": 0,
        "max_test_verses": 0,
        "batch_size": 128,
        "bucket_boundaries": [16, 24, 32, 40, 50],
        "static_shapes": False,
        "seed": 0,
        "name": "bible_translation_data",
    }
)
def bible_translation_data(hparams: tx.HParams) -> tx.run.Data:
    """Spanish -> English verse pairs as aligned token files, read by ``PairedTextData``.

    Training pairs longer than ``max_seq_length`` tokens on either side are left out (counted in
    the data report); dev and test keep every verse. ``max_train_verses`` / ``max_test_verses``
    (0: all) take the first verses of a split. ``static_shapes`` pads every training batch to
    ``max_seq_length`` (what XLA and TPUs want) instead of bucketing by length. ``work_dir: ""``
    writes to a temporary folder.
    """
    bible = load_bible()
    limits = {"train": hparams.max_train_verses, "dev": 0, "test": hparams.max_test_verses}
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="bible-es-en-")
    os.makedirs(folder, exist_ok=True)
    splits, files = {}, {}
    for name, verses in bible.items():
        pairs = [(tokenize(v.spanish), tokenize(v.english), v) for v in verses]
        pairs = [pair for pair in pairs if pair[0] and pair[1]]
        splits[name] = pairs[: limits[name]] if limits[name] else pairs
        files[name] = {}
        for index, language in enumerate(("es", "en")):
            path = os.path.join(folder, f"{name}.{language}")
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(pair[index] + "\n" for pair in splits[name])
            files[name][language] = path
    reading_stage("Bible verse pairs (es -> en)", {n: len(pairs) for n, pairs in splits.items()})
    vocab_files = {}
    for language, size in (("es", hparams.source_vocab_size), ("en", hparams.target_vocab_size)):
        tokens = tx.data.make_vocab(files["train"][language], max_size=size)
        vocab_files[language] = os.path.join(folder, f"vocab.{language}")
        with open(vocab_files[language], "w", encoding="utf-8") as f:
            f.writelines(token + "\n" for token in tokens)

    def reader(name: str, training: bool) -> tx.data.PairedTextData:
        side = {"max_seq_length": hparams.max_seq_length if training else None}
        side["length_filter_mode"] = "discard"
        static = training and hparams.static_shapes
        side["pad_to_max_seq_length"] = static
        return tx.data.PairedTextData(
            {
                "source_dataset": {
                    "files": [files[name]["es"]], "vocab_file": vocab_files["es"], **side
                },
                "target_dataset": {
                    "files": [files[name]["en"]], "vocab_file": vocab_files["en"], **side
                },
                "batch_size": hparams.batch_size,
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "bucket_boundaries": hparams.bucket_boundaries if training and not static else [],
                "drop_remainder": static,
                "seed": hparams.seed,
                "name": f"bible_{name}",
            }
        )  # fmt: skip

    readers = {"train": reader("train", True), "dev": reader("dev", False)}
    readers["test"] = reader("test", False)
    return tx.run.Data(
        # A function of the input context: each worker reads its own shard of the verses.
        train=lambda context: teacher_forcing(readers["train"].make_dataset(context)),
        eval=teacher_forcing(readers["dev"].dataset),
        test=teacher_forcing(readers["test"].dataset),
        source_vocab=readers["train"].source_vocab,
        target_vocab=readers["train"].target_vocab,
        verses={name: [pair[2] for pair in pairs] for name, pairs in splits.items()},
        reports={name: r.report for name, r in readers.items()},
    )


def teacher_forcing(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """Batches of ``PairedTextData`` as (features, labels): the decoder reads ``<BOS> y`` and
    predicts ``y <EOS>``."""

    def split(batch: dict) -> tuple[dict, tf.Tensor]:
        features = {
            "source": batch["source_text_ids"],
            "source_length": batch["source_length"],
            "decoder_inputs": batch["target_text_ids"][:, :-1],
            "target_length": batch["target_length"] - 1,
        }
        return features, batch["target_text_ids"][:, 1:]

    return dataset.map(split)


def translate(model, data: tx.run.Data, split: str, settings: tx.HParams) -> list[str]:
    """Beam-search translations of a split, in order, as space-separated tokens."""

    @tf.function(reduce_retracing=True)
    def search(source: tf.Tensor, source_length: tf.Tensor) -> tuple:
        output = model.beam_search(
            source,
            source_length,
            settings.beam_width,
            settings.length_penalty,
            settings.max_decoding_length,
        )
        return output.ids[:, 0], output.lengths[:, 0]

    vocab, hypotheses = data.target_vocab, []
    for features, _ in data[split]:
        ids, lengths = search(features["source"], features["source_length"])
        for row, length in zip(ids.numpy(), lengths.numpy(), strict=True):
            tokens = vocab.map_ids_to_tokens_py(row[:length])
            hypotheses.append(" ".join(t for t in tokens if t != vocab.eos_token))
    return hypotheses


def run(hparams: tx.HParams, translate_settings: tx.HParams) -> dict:
    """Trains, translates the test books and returns their BLEU; with a ``run.model_dir``, also
    writes the result there as ``result.json``. A line says when each stage starts."""
    start = time.time()
    trainer = tx.run.Trainer.from_hparams(hparams)
    data = trainer.data
    print(
        f"Bible es->en: {len(data.verses['train'])} training verses "
        f"({data.reports['train'].skipped} too long), vocabularies "
        f"es {data.source_vocab.size} / en {data.target_vocab.size}; "
        f"{trainer.model.count_params():,} parameters"
    )
    stage(f"training {hparams.run.train_steps} steps")
    history = trainer.train()
    train_time = time.time() - start
    stage(f"evaluating dev ({len(data.verses['dev'])} verses)")
    dev_loss = trainer.evaluate("eval")["loss"]
    verses = data.verses["test"]
    stage(f"translating test ({len(verses)} verses, beam {translate_settings.beam_width})")
    hypotheses = translate(trainer.model, data, "test", translate_settings)
    references = [verse.english for verse in verses]
    # force: the hypotheses are tokens on purpose (13a splits the references the same way).
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True, force=True)
    for verse, hypothesis in list(zip(verses, hypotheses, strict=True))[: translate_settings.show]:
        print(f"\n{verse.reference}\n  es:  {verse.spanish}\n  en:  {verse.english}")
        print(f"  out: {hypothesis}")
    total = time.time() - start
    print(
        f"\ndev loss {dev_loss:.3f} per verse; test BLEU ({len(verses)} verses, beam "
        f"{translate_settings.beam_width}): {bleu.score:.2f}  [{bleu}]"
    )
    print(f"time: {train_time:.0f} s to train, {total:.0f} s in all")
    result = {
        "bleu": bleu.score,
        "dev_loss": dev_loss,
        "history": history,
        "hypotheses": hypotheses,
        "references": references,
        "time": total,
    }
    if hparams.run.model_dir:
        # tf.io.gfile: model_dir may be a gs:// folder, as the Trainer allows.
        with tf.io.gfile.GFile(os.path.join(hparams.run.model_dir, "result.json"), "w") as f:
            f.write(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None, doc: str, config: str, quick: list[str], full_run: str) -> dict:
    """``[--config FILE] [--quick] [--verbose] [key=value ...]``: trains and translates; returns
    :func:`run`'s result. ``config`` is the example's own YAML file, the default; ``quick`` is the
    list of overrides that ``--quick`` applies (before the user's); ``full_run`` is what the full
    run reaches (its README's figure), said at the end of a quick run."""
    args = example_parser(doc, config, quick=True).parse_args(argv)
    user = read_config(args, quick)
    settings = tx.HParams(user.pop("translate", {}), TRANSLATE_DEFAULTS)
    result = run(tx.run.validate_experiment(user), settings)
    if args.quick:
        quick_note(full_run, config)
    return result
