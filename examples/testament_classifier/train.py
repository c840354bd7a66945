"""Which testament is a verse from? Trains a bag-of-embeddings classifier on real text.

The model embeds each token with ``texkit.modules.WordEmbedder`` (with word-type dropout), averages
the embeddings over the verse's real length (``texkit.core.MaskedMeanPooling``) and classifies
with one dense layer. It trains through ``texkit.run.Trainer`` on the English (KJV) verses of most
books of the Bible and reports accuracy on held-out books (the fixed split of
examples/common/data/README.md), next to the majority-class baseline. The tokenizer is a Keras
``TextVectorization`` fitted on the training verses; it runs in the input pipeline for training
and in front of the model in the exported SavedModel, which therefore takes raw text.

From the repository root:

    python -m examples.testament_classifier.train --config examples/testament_classifier/config.yaml
    texkit train examples/testament_classifier/config.yaml \
        --include examples/testament_classifier/train.py
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.command_line import reading_stage
from examples.common.experiment_cli import experiment_from_args, train_and_report

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")


class VerseTokenizer(keras.layers.Layer):
    """Raw verses to the model's inputs, in-graph: ``{"ids": [batch, time], "length": [batch]}``."""

    def __init__(self, vectorize: keras.layers.TextVectorization, **kwargs):
        super().__init__(**kwargs)
        self.vectorize = vectorize
        self.serving_input_signature = tf.TensorSpec([None], tf.string, name="text")

    def call(self, text):
        ids = tf.cast(self.vectorize(text), tf.int32)
        return {"ids": ids, "length": tf.reduce_sum(tf.cast(ids != 0, tf.int32), axis=1)}


@tx.run.data_builder(
    {
        "vocab_size": 20000,
        "max_seq_length": 64,
        "batch_size": 64,
        "seed": 0,
        "name": "testament_data",
    }
)
def testament_data(hparams: tx.HParams) -> tx.run.Data:
    """The verses (train, dev as ``eval``, test), tokenized; label 1 is the New Testament."""
    splits = load_bible()
    reading_stage("Bible verses", {name: len(verses) for name, verses in splits.items()})
    vectorize = keras.layers.TextVectorization(
        max_tokens=hparams.vocab_size,
        output_sequence_length=hparams.max_seq_length,
        standardize="lower_and_strip_punctuation",
    )
    vectorize.adapt([v.english for v in splits["train"]])
    tokenizer = VerseTokenizer(vectorize)

    def dataset(verses: list, shuffle: bool) -> tf.data.Dataset:
        features = {
            k: v.numpy() for k, v in tokenizer(tf.constant([v.english for v in verses])).items()
        }
        labels = np.array([int(v.new_testament) for v in verses], np.int32)
        data = tf.data.Dataset.from_tensor_slices((features, labels))
        if shuffle:
            data = data.shuffle(len(labels), seed=hparams.seed)
        return data.batch(hparams.batch_size, drop_remainder=shuffle).prefetch(tf.data.AUTOTUNE)

    majority = {
        name: float(max(np.mean(labels), 1 - np.mean(labels)))
        for name, labels in (
            (name, [v.new_testament for v in verses]) for name, verses in splits.items()
        )
    }
    return tx.run.Data(
        train=dataset(splits["train"], shuffle=True),
        eval=dataset(splits["dev"], shuffle=False),
        test=dataset(splits["test"], shuffle=False),
        preprocessor=tokenizer,
        vocab_size=hparams.vocab_size,
        max_seq_length=hparams.max_seq_length,
        majority=majority,
        sizes={name: len(verses) for name, verses in splits.items()},
    )


@tx.run.model_builder(
    {
        "embedder": tx.modules.WordEmbedder.default_hparams(),
        "num_classes": 2,
        "name": "bag_of_embeddings_classifier",
    }
)
def bag_of_embeddings_classifier(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    ids = keras.Input((data.max_seq_length,), dtype="int32", name="ids")
    length = keras.Input((), dtype="int32", name="length")
    embedder = tx.modules.WordEmbedder(vocab_size=data.vocab_size, hparams=hparams.embedder)
    pooled = tx.core.MaskedMeanPooling(name="mean_over_time")(embedder(ids), length)
    logits = keras.layers.Dense(hparams.num_classes, name="classifier", dtype="float32")(pooled)
    return keras.Model({"ids": ids, "length": length}, logits, name=hparams.name)


def run(hparams: tx.HParams) -> dict:
    """Trains the experiment and returns dev and test accuracy with their majority baselines."""
    trainer = tx.run.Trainer.from_hparams(hparams)
    return train_and_report(trainer, "verses of held-out books")


def main(argv: list[str] | None = None) -> dict:
    return run(experiment_from_args(argv, __doc__, CONFIG))


if __name__ == "__main__":
    main()
