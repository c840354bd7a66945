"""Part-of-speech tagging of the Turkish Web Treebank: BiLSTM-CNN-CRF and BERT + CRF, each next to
the same encoder with a softmax head.

The data are the 4,851 sentences of Google's Turkish Web Treebank (PyPI package
``turkish-treebanks``, CoNLL-U files read with ``tx.data.read_conll``) with the package's own
fixed split (``examples/sequence_tagging/treebank.py``): 3,881 training, 485 dev and 485 test
sentences. The tags are UPOS (14 tags). The treebank's tokens are morphological segments: a
word with derivational suffixes is several tokens (``Açık`` ``la`` ``nma`` ``yan``), each with
its own tag. ``data.hparams.files`` reads other CoNLL files instead: ``ner.yaml`` trains the
BiLSTM-CNN taggers on the Japanese named-entity corpus of ``ner_corpus.py``. The
splits are written as CoNLL files and read by ``tx.data.TaggingData`` (BiLSTM-CNN) or turned
into WordPiece inputs (BERT): ``examples/sequence_tagging/data.py``.

Four models are trained one after the other through ``tx.run.Trainer``
(``examples/sequence_tagging/models.py``):

* ``bilstm_cnn_crf``: word embeddings and a character CNN (``tx.modules.WordCharEmbedder``), a
  bidirectional LSTM and a CRF (``tx.modules.CRFTaggingHead``), as Ma & Hovy (2016);
* ``bilstm_cnn_softmax``: the same encoder with ``tx.modules.TokenTaggingHead`` (each token's tag
  on its own), to show what the CRF adds;
* ``bert_crf``: the pretrained all-MiniLM-L6-v2 BERT read at each token's first WordPiece
  piece, then a CRF. MiniLM is English and uncased (its WordPiece vocabulary lowercases and strips
  accents: ``ç`` and ``ş`` become ``c`` and ``s``), so Turkish is far outside what it was trained
  on: it gives the encoder's architecture and a start, not Turkish knowledge;
* ``bert_softmax``: the same with a softmax head.

Each model is scored on the dev and test splits by token accuracy (the share of tokens whose
predicted tag is right), next to the majority tag (the most frequent training tag predicted
everywhere). With ``--scheme`` (``IOB1``, ``IOB2``, ``IOBES``, ``BILOU``; the hparam
``data.hparams.scheme``), for data whose tags are entities in that scheme, the entity-level
precision, recall and F1 of ``tx.evals.entity_f1`` are reported as well, and the CRF decodes
only the transitions the scheme allows. The test predictions are written in the input's format
(``tx.data.write_conll``: the input file's columns with the predicted tag in the tag column),
read back and checked.

From the repository root:

    python -m examples.sequence_tagging.train --config examples/sequence_tagging/config.yaml
    python -m examples.sequence_tagging.train --config examples/sequence_tagging/config.yaml \
        --models bilstm_cnn_crf,bilstm_cnn_softmax
    python -m examples.sequence_tagging.train --config examples/sequence_tagging/config.yaml \
        --quick
    python -m examples.sequence_tagging.ner_corpus --output ner_data
    python -m examples.sequence_tagging.train --config examples/sequence_tagging/ner.yaml
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.command_line import example_parser, quick_note
from examples.sequence_tagging import data as tagging_data  # noqa: F401  (registers the builder)
from examples.sequence_tagging.models import BERTTagger, BiLSTMCNNTagger

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: a few hundred sentences, small models and a few steps, to check the whole path.
QUICK = [
    "data.hparams.max_train_sentences=400",
    "data.hparams.max_eval_sentences=100",
    "data.hparams.batch_size=16",
    *[
        f"models.{name}.{key}"
        for name in ("bilstm_cnn_crf", "bilstm_cnn_softmax")
        for key in (
            "model.hparams.word_dim=32",
            "model.hparams.lstm_units=32",
            "optimization.learning_rate=0.01",
            "run.train_steps=150",
            "run.checkpoint_every_steps=150",
        )
    ],
    *[
        f"models.{name}.{key}"
        for name in ("bert_crf", "bert_softmax")
        for key in (
            "data.batch_size=8",
            "optimization.learning_rate=3e-4",
            "optimization.learning_rate_schedule.kwargs.warmup_steps=3",
            "optimization.learning_rate_schedule.kwargs.decay_steps=30",
            "run.train_steps=30",
        )
    ],
    "run.checkpoint_every_steps=30",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = (
    "test token accuracy 0.9392 (bilstm_cnn_crf) / 0.8758 (bert_crf); "
    "with ner.yaml, test entity F1 0.4725 (bilstm_cnn_crf)"
)

# The file's sections: what the models share, then each model's own.
CONFIG_DEFAULTS = {
    "data": {"type": None, "hparams": {}},
    "distribution": {},
    "run": {},
    "models": {},
    "predictions_dir": "",
    "name": "sequence_tagging",
}
MODEL_DEFAULTS = {
    "model": {"type": None, "hparams": {}},
    "data": {},
    "optimization": {},
    "run": {},
}


# -- models --------------------------------------------------------------------------------------


@tx.run.model_builder(
    {
        "head": "crf",
        "head_dropout_rate": 0.5,
        "word_dim": 100,
        "word_dropout_rate": 0.05,
        "char_dim": 30,
        "char_filters": 30,
        "char_kernel_size": 3,
        "lstm_units": 128,
        "dropout_rate": 0.33,
        "name": "bilstm_cnn_tagger",
    }
)
def bilstm_cnn_tagger(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """Word embeddings (``word_dropout_rate``: whole words dropped in training) and a character
    CNN (``char_dim``, ``char_filters`` of width ``char_kernel_size``), a bidirectional LSTM
    (``lstm_units`` per direction, ``dropout_rate`` on its inputs and outputs), and a ``crf`` or
    ``softmax`` head (``head_dropout_rate`` before it); needs ``features: words``."""
    if not hasattr(data, "vocab"):
        raise tx.HParamsError("the BiLSTM-CNN tagger needs data with features: words", "model")
    return BiLSTMCNNTagger(
        data.num_tags, data.vocab.size, data.char_vocab.size, hparams.todict(),
        tags=data.tags, tag_scheme=data.scheme, name=hparams.name,
    )  # fmt: skip


@tx.run.model_builder(
    {
        "head": "crf",
        "head_dropout_rate": 0.1,
        "encoder": {"hidden_dropout_prob": None, "attention_probs_dropout_prob": None},
        "name": "bert_tagger",
    }
)
def bert_tagger(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """The data's pretrained BERT (its ``pretrained`` checkpoint, the tokenizer's) read at each
    token's first piece, and a ``crf`` or ``softmax`` head; ``encoder`` may override the
    checkpoint's dropout rates (``null`` keeps them); needs ``features: wordpieces``."""
    if not hasattr(data, "pretrained"):
        raise tx.HParamsError("the BERT tagger needs data with features: wordpieces", "model")
    return BERTTagger(
        data.num_tags, data.pretrained, hparams.todict(), tags=data.tags, tag_scheme=data.scheme,
        name=hparams.name,
    )  # fmt: skip


# -- evaluation ----------------------------------------------------------------------------------


def predict_tags(model: keras.Model, dataset: tf.data.Dataset) -> list[np.ndarray]:
    """Each sentence's predicted tag ids, in the dataset's order."""

    # Batches of any length and size: one trace.
    predict = tf.function(model.predict_tags, input_signature=[dataset.element_spec[0]])
    predicted = []
    for features, _ in dataset:
        tags = predict(features).numpy()
        predicted += [row[:n] for row, n in zip(tags, features["length"].numpy(), strict=True)]
    return predicted


def scores(references: list, predictions: list, tags: list[str], scheme: str | None) -> dict:
    """Token accuracy, and with ``scheme`` the entity-level precision, recall and F1."""
    right = sum(int(np.sum(r == p)) for r, p in zip(references, predictions, strict=True))
    tokens = sum(len(r) for r in references)
    result = {"accuracy": right / tokens, "tokens": tokens}
    if scheme:
        names = np.array(tags)
        entities = tx.evals.entity_f1(
            [names[r].tolist() for r in references],
            [names[p].tolist() for p in predictions],
            scheme=scheme,
        )
        result.update({key: float(entities[key]) for key in ("precision", "recall", "f1")})
    return result


def with_tags(sentence: tx.data.Sentence, column: int, tags: list[str]) -> tx.data.Sentence:
    """A copy of ``sentence`` whose ``column`` holds ``tags``."""
    tokens = [list(columns) for columns in sentence.tokens]
    for columns, tag in zip(tokens, tags, strict=True):
        columns[column] = tag
    return dataclasses.replace(sentence, tokens=tokens)


def write_predictions(path: str, data: tx.run.Data, predictions: list) -> list:
    """Writes the test sentences with their predicted tags in the tag column
    (``tx.data.write_conll``), reads the file back and checks that it holds them as written;
    returns them."""
    column = data.tag_column
    if isinstance(column, str):
        column = tx.data.conll.CONLLU_COLUMNS.index(column)
    predicted = [
        with_tags(sentence, column, [data.tags[i] for i in row])
        for sentence, row in zip(data.sentences["test"], predictions, strict=True)
    ]
    tx.data.write_conll(path, predicted, format=data.format)
    if tx.data.read_conll(path, format=data.format) != predicted:
        raise RuntimeError(f"{path} does not read back as written")
    return predicted


# -- experiments and the command line ------------------------------------------------------------


def experiments(user: dict, names: list[str] | None) -> dict[str, tx.HParams]:
    """The validated experiment of each model to train: the shared sections plus its own (its
    ``data`` keys override the shared data hparams, its ``run`` keys the shared ones; its
    checkpoints go to ``model_dir/<name>``)."""
    config = tx.HParams(user, CONFIG_DEFAULTS).todict()
    models = config["models"]
    names = names or list(models)
    result = {}
    for name in names:
        if name not in models:
            raise tx.HParamsError(f"no model {name!r}; the file has {sorted(models)}", "models")
        own = tx.HParams(models[name], {**MODEL_DEFAULTS, "name": name}).todict()
        run = {**config["run"], **own["run"]}
        if run.get("model_dir"):
            run["model_dir"] = os.path.join(run["model_dir"], name)
        data = {**config["data"], "hparams": {**config["data"]["hparams"], **own["data"]}}
        result[name] = tx.run.validate_experiment(
            {
                "model": own["model"],
                "data": data,
                "optimization": own["optimization"],
                "distribution": config["distribution"],
                "run": run,
                "name": name,
            }
        )
    return result


def run(experiments: dict[str, tx.HParams], predictions_dir: str = "") -> dict:
    """Builds each distinct data once, trains each model, scores it on dev and test, writes its
    test predictions, and prints and returns the scores."""
    start = time.time()
    built: dict[str, tx.run.Data] = {}
    results: dict = {"models": {}}
    folder = predictions_dir or tempfile.mkdtemp(prefix="tagging-")
    os.makedirs(folder, exist_ok=True)
    for name, hparams in experiments.items():
        key = hparams.data.to_yaml()
        if key not in built:
            builder = tx.run.experiment.resolve_builder(hparams.data.type, "data", "data.type")
            built[key] = builder(hparams.data.hparams)
            describe(built[key])
        data = built[key]
        model_start = time.time()
        builder = tx.run.experiment.resolve_builder(hparams.model.type, "model", "model.type")
        trainer = tx.run.Trainer(
            lambda b=builder, h=hparams, d=data: b(h.model.hparams, d), data, hparams
        )
        print(f"\n{name}: {trainer.model.count_params():,} parameters")
        history = trainer.train()
        train_time = time.time() - model_start
        outcome = {"history": history, "trainer": trainer, "train_time": train_time}
        for split, dataset in (("dev", "eval"), ("test", "test")):
            predictions = predict_tags(trainer.model, data[dataset])
            outcome[split] = scores(data.labels[split], predictions, data.tags, data.scheme)
            outcome[f"{split}_predictions"] = predictions
        path = os.path.join(folder, f"{name}.test.{data.format}")
        write_predictions(path, data, outcome["test_predictions"])
        outcome.update(predictions_file=path, steps=trainer.step, time=time.time() - model_start)
        outcome["parameters"] = trainer.model.count_params()
        results["models"][name] = outcome
        print(f"{name}: {summary(outcome)} after {trainer.step} steps, {train_time:.0f} s; "
              f"test predictions in {path}")  # fmt: skip
    data = next(iter(built.values()))
    results["majority"] = {
        split: majority_accuracy(data, split) for split in ("dev", "test")
    }  # fmt: skip
    results.update(data=data, time=time.time() - start)
    f1 = data.scheme is not None
    print(f"\n{'model':<20} {'dev acc':>8} {'test acc':>8}" + (f" {'dev F1':>8} {'test F1':>8}"
          if f1 else ""))  # fmt: skip
    majority = results["majority"]
    print(f"{'majority tag':<20} {majority['dev']:>8.4f} {majority['test']:>8.4f}")
    for name, outcome in results["models"].items():
        dev, test = outcome["dev"], outcome["test"]
        print(f"{name:<20} {dev['accuracy']:>8.4f} {test['accuracy']:>8.4f}"
              + (f" {dev['f1']:>8.4f} {test['f1']:>8.4f}" if f1 else ""))  # fmt: skip
    print(f"({data.tokens['dev']} dev and {data.tokens['test']} test tokens; "
          f"{results['time']:.0f} s in all)")  # fmt: skip
    return results


def describe(data: tx.run.Data) -> None:
    """Prints the sizes of the data."""
    line = f"data: {data.sizes} sentences, {data.tokens} tokens, {data.num_tags} tags"
    if hasattr(data, "vocab"):
        line += f"; {data.vocab.size} words, {data.char_vocab.size} characters"
    else:
        line += f"; {data.pieces_per_token:.2f} WordPiece pieces per training token"
    print(line)


def majority_accuracy(data: tx.run.Data, split: str) -> float:
    """The token accuracy of tagging everything with the most frequent training tag."""
    majority = data.tags.index(data.majority_tag)
    return float(np.mean(np.concatenate(data.labels[split]) == majority))


def summary(outcome: dict) -> str:
    """``dev accuracy ..., test accuracy ...`` (and entity F1 when scored)."""
    parts = []
    for split in ("dev", "test"):
        result = outcome[split]
        parts.append(f"{split} accuracy {result['accuracy']:.4f}")
        if "f1" in result:
            parts.append(f"{split} entity F1 {result['f1']:.4f}")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> dict:
    """``--config FILE [--quick] [--models NAME,...] [--scheme SCHEME] [key=value ...]``;
    returns :func:`run`'s result."""
    parser = example_parser(
        __doc__, CONFIG, quick=True, overrides="models.bert_crf.run.train_steps=50"
    )
    parser.add_argument("--models", help="the models to train, e.g. bilstm_cnn_crf (default: all)")
    parser.add_argument(
        "--scheme", help="the tags' entity scheme (IOB1, IOB2, IOBES, BILOU): adds entity F1"
    )
    args = parser.parse_args(argv)
    user = tx.HParams.from_yaml(args.config, None).todict()
    scheme = [f"data.hparams.scheme={args.scheme}"] if args.scheme else []
    # --quick's settings of the models this config has (ner.yaml has no BERT model).
    models = user.get("models") or {}
    quick = [o for o in QUICK if not o.startswith("models.") or o.split(".")[1] in models]
    user = tx.apply_overrides(user, (quick if args.quick else []) + scheme + args.overrides)
    predictions_dir = user.pop("predictions_dir", "")
    names = args.models.split(",") if args.models else None
    result = run(experiments(user, names), predictions_dir)
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
