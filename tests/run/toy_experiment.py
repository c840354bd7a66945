"""A small, fast experiment for the Trainer and ``texkit train`` tests.

The task: given a sequence of token ids, tell whether most of its tokens are "low" ids (below half
the vocabulary). A WordEmbedder with masked mean pooling learns it in a few dozen steps.
Everything is int32 and padded to a fixed length, with static batch shapes, as TPUs want.

Loaded by the tests with ``import`` and by ``texkit train ... --include`` (this file).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

import texkit as tx


def make_examples(num_examples: int, vocab_size: int, max_seq_length: int, seed: int) -> tuple:
    rng = np.random.RandomState(seed)
    lengths = rng.randint(3, max_seq_length + 1, size=num_examples).astype(np.int32)
    ids = rng.randint(1, vocab_size, size=(num_examples, max_seq_length)).astype(np.int32)
    ids[np.arange(max_seq_length)[None, :] >= lengths[:, None]] = 0
    low = ((ids > 0) & (ids < vocab_size // 2)).sum(axis=1)
    labels = (2 * low > lengths).astype(np.int32)
    return {"ids": ids, "length": lengths}, labels


class ToyPreprocessor(keras.layers.Layer):
    """Raw text ("12 7 30") to the model's inputs, in-graph: split, parse, pad."""

    def __init__(self, max_seq_length: int, **kwargs):
        super().__init__(**kwargs)
        self.max_seq_length = max_seq_length
        self.serving_input_signature = tf.TensorSpec([None], tf.string, name="text")

    def call(self, text):
        tokens = tf.strings.split(text)
        ids = tf.strings.to_number(tokens, out_type=tf.int32)
        ids = ids[:, : self.max_seq_length]
        length = tf.cast(ids.row_lengths(), tf.int32)
        dense = ids.to_tensor(0, shape=[None, self.max_seq_length])
        return {"ids": dense, "length": length}


def as_text(features: dict) -> list[str]:
    return [
        " ".join(str(i) for i in row[:length])
        for row, length in zip(features["ids"], features["length"], strict=True)
    ]


@tx.run.data_builder(
    {
        "num_examples": 512,
        "vocab_size": 40,
        "max_seq_length": 12,
        "batch_size": 16,
        "seed": 0,
        "per_replica": False,
        "drop_remainder": True,
        "name": "toy_data",
    }
)
def toy_data(hparams):
    """Train, eval and test splits; ``per_replica`` gives the train split as a function of the
    input context whose replicas each take their slice of the same global batches;
    ``drop_remainder: false`` leaves the batch dimension unknown (as in tf.data)."""
    splits = {
        name: make_examples(hparams.num_examples, hparams.vocab_size, hparams.max_seq_length, seed)
        for name, seed in (
            ("train", hparams.seed),
            ("eval", hparams.seed + 1),
            ("test", hparams.seed + 2),
        )
    }

    def global_batches(name: str, shuffle: bool) -> tf.data.Dataset:
        dataset = tf.data.Dataset.from_tensor_slices(splits[name])
        if shuffle:
            dataset = dataset.shuffle(hparams.num_examples, seed=hparams.seed)
        return dataset.batch(hparams.batch_size, drop_remainder=hparams.drop_remainder)

    train = global_batches("train", shuffle=True)
    if hparams.per_replica:

        def train_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
            # Each input pipeline (one per worker) takes its slice of every global batch and
            # deals it out to its replicas in per-replica batches.
            size = hparams.batch_size // context.num_input_pipelines
            begin = context.input_pipeline_id * size
            sliced = global_batches("train", shuffle=True).map(
                lambda features, labels: (
                    {key: value[begin : begin + size] for key, value in features.items()},
                    labels[begin : begin + size],
                )
            )
            return sliced.rebatch(context.get_per_replica_batch_size(hparams.batch_size))

        train = train_fn
    return tx.run.Data(
        train=train,
        eval=global_batches("eval", shuffle=False),
        test=global_batches("test", shuffle=False),
        preprocessor=ToyPreprocessor(hparams.max_seq_length),
        vocab_size=hparams.vocab_size,
        max_seq_length=hparams.max_seq_length,
        examples=splits,
    )


@tx.run.model_builder(
    {
        "embedder": {"dim": 16, "dropout_rate": 0.1},
        "num_classes": 2,
        "name": "toy_classifier",
    }
)
def toy_classifier(hparams, data):
    ids = keras.Input((data.max_seq_length,), dtype="int32", name="ids")
    length = keras.Input((), dtype="int32", name="length")
    embedder = tx.modules.WordEmbedder(vocab_size=data.vocab_size, hparams=hparams.embedder)
    pooled = tx.core.MaskedMeanPooling()(embedder(ids), length)
    logits = keras.layers.Dense(hparams.num_classes, name="logits", dtype="float32")(pooled)
    return keras.Model({"ids": ids, "length": length}, logits, name=hparams.name)


def toy_experiment(model_dir: str = "", **run) -> dict:
    """Experiment hparams for the toy task, as a texkit train YAML would hold them."""
    return {
        "model": {"type": "toy_classifier"},
        "data": {"type": "toy_data"},
        "optimization": {"optimizer": {"type": "Adam"}, "learning_rate": 0.01},
        "run": {
            "model_dir": model_dir,
            "train_steps": 40,
            "checkpoint_every_steps": 20,
            "loss": {"type": "SparseCategoricalCrossentropy", "kwargs": {"from_logits": True}},
            "metrics": ["accuracy"],
            "tensorboard": False,
            "verbose": 0,
            "seed": 0,
            **run,
        },
    }
