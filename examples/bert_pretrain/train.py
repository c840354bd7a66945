"""Pretrains a small BERT from scratch with masked LM + next-sentence prediction on real text.

The corpus is the King James Bible of examples/common/data (its training books): each chapter is a
document, each verse a sentence. Verses are tokenized with ``texkit.data.BERTTokenizer`` and the
all-MiniLM-L6-v2 vocabulary, cut into sentence pairs by ``make_nsp_pairs`` (50% true next, 50%
random) and masked in the input pipeline by ``MaskedLMMasker`` (15% of tokens: 80% ``[MASK]``,
10% random, 10% kept). The model is ``texkit.modules.BERTPretrainer`` (encoder, masked-LM head
tied to the word embeddings, next-sentence head), trained by a plain ``tf.function`` loop. It
prints the losses as they fall, and the masked-LM accuracy.

From the repository root:

    python -m examples.bert_pretrain.train --config examples/bert_pretrain/config.yaml
    python -m examples.bert_pretrain.train --config examples/bert_pretrain/config.yaml \
        train_steps=50
"""

from __future__ import annotations

import time
from itertools import groupby

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.command_line import example_parser, read_config

DEFAULTS = {
    "pretrained_vocab": "all-MiniLM-L6-v2",
    "encoder": {
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 512,
        "max_position_embeddings": 64,
    },
    "max_seq_length": 64,
    "max_predictions_per_seq": 10,
    "max_chapters": 0,
    "batch_size": 32,
    "learning_rate": 1e-3,
    "warmup_steps": 30,
    "train_steps": 300,
    "log_every_steps": 50,
    "jit_compile": True,
    "seed": 0,
    "name": "bert_pretrain",
}


def chapters(max_chapters: int) -> list[list[str]]:
    """The training books' chapters, each a list of verses (``max_chapters`` > 0: the first)."""
    verses = load_bible()["train"]
    documents = [
        [verse.english for verse in group]
        for _, group in groupby(verses, key=lambda v: v.reference.rsplit(".", 1)[0])
    ]
    return documents[:max_chapters] if max_chapters > 0 else documents


def build_dataset(hparams: tx.HParams, tokenizer: tx.data.BERTTokenizer) -> tf.data.Dataset:
    documents = chapters(hparams.max_chapters)
    flat = [verse for document in documents for verse in document]
    ids = tokenizer.tokenize(flat).to_list()
    tokenized, start = [], 0
    for document in documents:
        tokenized.append(ids[start : start + len(document)])
        start += len(document)
    instances = tx.data.make_nsp_pairs(
        tokenized, max_seq_length=hparams.max_seq_length, seed=hparams.seed
    )
    masker = tx.data.MaskedLMMasker(
        vocab_size=tokenizer.vocab_size,
        mask_id=tokenizer.mask_id,
        special_ids=[tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id],
        max_predictions_per_seq=hparams.max_predictions_per_seq,
    )
    random_next = np.mean([i["next_sentence_label"] for i in instances])
    entropy = -sum(p * np.log(p) for p in (random_next, 1 - random_next) if p > 0)
    # A chunk of one verse always gets a random next (as in BERT), so the rate exceeds 0.5.
    print(
        f"{len(documents)} chapters, {len(flat)} verses -> {len(instances)} sentence pairs, "
        f"{random_next:.2f} with a random next (next-sentence loss of guessing the rate: "
        f"{entropy:.3f})"
    )
    dataset = tx.data.pretraining_dataset(
        instances,
        masker=masker,
        max_seq_length=hparams.max_seq_length,
        cls_id=tokenizer.cls_id,
        sep_id=tokenizer.sep_id,
        seed=hparams.seed,
        batch_size=hparams.batch_size,
        shuffle=True,
    )
    return dataset.repeat().prefetch(tf.data.AUTOTUNE)


def pretraining_losses(model, features, training):
    """(masked-LM loss: mean over real predictions, NSP loss, masked-LM accuracy)."""
    mlm_logits, nsp_logits = model(
        features["input_ids"],
        masked_lm_positions=features["masked_lm_positions"],
        sequence_length=features["sequence_length"],
        segment_ids=features["segment_ids"],
        training=training,
    )
    weights = features["masked_lm_weights"]
    per_token = keras.losses.sparse_categorical_crossentropy(
        features["masked_lm_ids"], tf.cast(mlm_logits, tf.float32), from_logits=True
    )
    total = tf.maximum(tf.reduce_sum(weights), 1.0)
    mlm_loss = tf.reduce_sum(per_token * weights) / total
    nsp_loss = tf.reduce_mean(
        keras.losses.sparse_categorical_crossentropy(
            features["next_sentence_label"], tf.cast(nsp_logits, tf.float32), from_logits=True
        )
    )
    hits = tf.cast(
        tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32), features["masked_lm_ids"]),
        tf.float32,
    )
    return mlm_loss, nsp_loss, tf.reduce_sum(hits * weights) / total


def pretrain(hparams: tx.HParams) -> list[dict]:
    """Trains and returns the averaged losses of each logging interval."""
    keras.utils.set_random_seed(hparams.seed)
    tokenizer = tx.data.BERTTokenizer.from_pretrained(
        hparams.pretrained_vocab, lowercase=True, max_seq_length=hparams.max_seq_length
    )
    dataset = build_dataset(hparams, tokenizer)
    encoder = {**hparams.encoder.todict(), "vocab_size": tokenizer.vocab_size}
    model = tx.modules.BERTPretrainer({"encoder": encoder})
    schedule = tx.run.WarmupPolynomialDecay(
        hparams.learning_rate, decay_steps=hparams.train_steps, warmup_steps=hparams.warmup_steps
    )
    optimizer = keras.optimizers.AdamW(schedule, weight_decay=0.01, clipnorm=1.0)

    @tf.function(jit_compile=hparams.jit_compile)
    def train_step(features):
        with tf.GradientTape() as tape:
            mlm_loss, nsp_loss, accuracy = pretraining_losses(model, features, training=True)
            loss = mlm_loss + nsp_loss
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return tf.stack([mlm_loss, nsp_loss, accuracy])

    history, sums, start = [], np.zeros(3), time.time()
    for step, features in enumerate(dataset.take(hparams.train_steps), start=1):
        sums += train_step(features).numpy()
        if step % hparams.log_every_steps == 0 or step == hparams.train_steps:
            count = step - (history[-1]["step"] if history else 0)
            mlm, nsp, accuracy = sums / count
            history.append(
                {"step": step, "mlm_loss": mlm, "nsp_loss": nsp, "mlm_accuracy": accuracy}
            )
            print(
                f"step {step:4d}  masked-LM loss {mlm:.3f}  next-sentence loss {nsp:.3f}  "
                f"masked-LM accuracy {accuracy:.3f}  ({time.time() - start:.0f} s)"
            )
            sums[:] = 0
    return history


def main(argv: list[str] | None = None) -> list[dict]:
    parser = example_parser(
        __doc__,
        config_help="a YAML file of overrides, e.g. examples/bert_pretrain/config.yaml",
        overrides="train_steps=50",
    )
    hparams = tx.HParams(read_config(parser.parse_args(argv)), DEFAULTS)
    history = pretrain(hparams)
    first, last = history[0], history[-1]
    print(
        f"masked-LM loss {first['mlm_loss']:.3f} -> {last['mlm_loss']:.3f}, next-sentence loss "
        f"{first['nsp_loss']:.3f} -> {last['nsp_loss']:.3f}"
    )
    return history


if __name__ == "__main__":
    main()
