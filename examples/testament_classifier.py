"""Which testament is a verse from? Trains a bag-of-embeddings classifier on real text.

The model embeds each token with ``texkit.modules.WordEmbedder`` (with word-type dropout), averages
the embeddings over the verse's real length and classifies with one dense layer. It trains on the
English (KJV) verses of most books of the Bible and reports accuracy on held-out books (the fixed
split of examples/data/README.md), next to the majority-class baseline.

    python examples/testament_classifier.py --config hparams/testament_classifier.yaml epochs=1
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bible_corpus import load_bible  # noqa: E402

import texkit as tx  # noqa: E402


def default_hparams() -> dict:
    return {
        "embedder": tx.modules.WordEmbedder.default_hparams(),
        "vocab_size": 20000,
        "max_seq_length": 64,
        "batch_size": 64,
        "epochs": 3,
        "learning_rate": 0.003,
        "seed": 0,
        "name": "testament_classifier",
    }


class MeanOverTime(keras.layers.Layer):
    """Mean of [batch, time, dim] inputs over each sequence's first ``sequence_length`` steps."""

    def call(self, inputs, sequence_length):
        steps = keras.ops.arange(keras.ops.shape(inputs)[1])
        mask = keras.ops.cast(steps[None, :] < sequence_length[:, None], inputs.dtype)
        summed = keras.ops.sum(inputs * mask[:, :, None], axis=1)
        count = keras.ops.maximum(keras.ops.sum(mask, axis=1, keepdims=True), 1.0)
        return summed / count


def build_model(hparams: tx.HParams) -> keras.Model:
    ids = keras.Input((hparams.max_seq_length,), dtype="int32", name="ids")
    lengths = keras.Input((), dtype="int32", name="length")
    embedder = tx.modules.WordEmbedder(vocab_size=hparams.vocab_size, hparams=hparams.embedder)
    pooled = MeanOverTime(name="mean_over_time")(embedder(ids), lengths)
    logits = keras.layers.Dense(2, name="classifier")(pooled)
    return keras.Model({"ids": ids, "length": lengths}, logits, name=hparams.name)


def make_dataset(vectorize, verses, batch_size: int, shuffle_seed: int | None) -> tf.data.Dataset:
    ids = vectorize(tf.constant([v.english for v in verses])).numpy().astype(np.int32)
    features = {"ids": ids, "length": (ids != 0).sum(axis=1).astype(np.int32)}
    labels = np.array([int(v.new_testament) for v in verses], np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    if shuffle_seed is not None:
        dataset = dataset.shuffle(len(labels), seed=shuffle_seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def run(hparams: tx.HParams, verbose: int = 2) -> dict:
    keras.utils.set_random_seed(hparams.seed)
    splits = load_bible()
    vectorize = keras.layers.TextVectorization(
        max_tokens=hparams.vocab_size,
        output_sequence_length=hparams.max_seq_length,
        standardize="lower_and_strip_punctuation",
    )
    vectorize.adapt([v.english for v in splits["train"]])
    data = {
        name: make_dataset(
            vectorize, verses, hparams.batch_size, hparams.seed if name == "train" else None
        )
        for name, verses in splits.items()
    }
    model = build_model(hparams)
    model.compile(
        optimizer=keras.optimizers.Adam(hparams.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(data["train"], validation_data=data["dev"], epochs=hparams.epochs, verbose=verbose)
    results = {}
    for name in ("dev", "test"):
        _, accuracy = model.evaluate(data[name], verbose=0)
        labels = np.array([v.new_testament for v in splits[name]])
        majority = max(labels.mean(), 1 - labels.mean())
        results[name] = {
            "accuracy": float(accuracy),
            "majority": float(majority),
            "size": len(labels),
        }
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config", help="YAML hparams file (e.g. hparams/testament_classifier.yaml)"
    )
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. epochs=1")
    args = parser.parse_args(argv)
    user = tx.HParams.from_yaml(args.config, None).todict() if args.config else {}
    hparams = tx.HParams(tx.apply_overrides(user, args.overrides), default_hparams())
    results = run(hparams)
    for name, result in results.items():
        print(
            f"{name} accuracy (held-out books, {result['size']} verses): {result['accuracy']:.4f} "
            f"(majority class: {result['majority']:.4f})"
        )
    return results


if __name__ == "__main__":
    main()
