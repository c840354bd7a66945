"""The data of the sequence tagging example: CoNLL files per split, as batches of
``(features, tag_ids [batch, time])`` for either encoder.

The splits are written as CoNLL files first (``tx.data.write_conll``; the Turkish Web Treebank's
split of ``examples/sequence_tagging/treebank.py``, or the first sentences of the given files),
so that every model reads the same files. Then:

* ``features: words`` (the BiLSTM-CNN): ``tx.data.TaggingData`` reads each file and gives
  ``words``, ``word_ids``, ``tag_ids`` and ``length``; the character ids of the words come from
  ``tx.data.CharVocab.words_to_char_ids`` in the same ``tf.data`` pipeline. The word vocabulary
  is the training words seen at least ``min_word_count`` times (the rest are ``<UNK>``, which
  the model thus learns; their characters still reach the character CNN); the character
  vocabulary is every character of the training words.
* ``features: wordpieces`` (BERT): each token's WordPiece pieces from the checkpoint's
  tokenizer and the position of its first piece (``examples/sequence_tagging/wordpieces.py``).

The tag ids are the indices in the sorted list of training tags (``TaggingData``'s); a dev or
test tag never seen in training is an error.
"""

from __future__ import annotations

import collections
import os
import tempfile

import numpy as np
import tensorflow as tf

import texkit as tx
from examples.sequence_tagging.treebank import load_treebank
from examples.sequence_tagging.wordpieces import wordpiece_inputs

SPLITS = ("train", "dev", "test")


def tag_column(hparams: tx.HParams) -> int | str:
    """The column of the tags: ``tag_column``, or by default CoNLL-U's UPOS and a CoNLL-2003
    file's last column (its named-entity tags)."""
    if hparams.tag_column is not None:
        return hparams.tag_column
    return "UPOS" if hparams.format == "conllu" else -1


def split_files(hparams: tx.HParams, folder: str) -> dict[str, str]:
    """The CoNLL file of each split: the treebank's split (or the first sentences of the given
    files, with ``max_*_sentences``) written to ``folder``, or the given files."""
    files = hparams.files.todict()
    limits = {"train": hparams.max_train_sentences, "dev": hparams.max_eval_sentences}
    limits["test"] = hparams.max_eval_sentences
    if any(files.values()) and not all(files.values()):
        missing = [name for name, path in files.items() if not path]
        raise tx.HParamsError(
            f"give a file for every split or for none; {missing} have none", "data.hparams.files"
        )
    if all(files.values()) and not any(limits.values()):
        return files
    if all(files.values()):
        splits = {name: tx.data.read_conll(path, hparams.format) for name, path in files.items()}
    else:
        splits = load_treebank()
    paths = {}
    for name in SPLITS:
        sentences = splits[name][: limits[name]] if limits[name] else splits[name]
        paths[name] = os.path.join(folder, f"{name}.{hparams.format}")
        tx.data.write_conll(paths[name], sentences, hparams.format)
    return paths


@tx.run.data_builder(
    {
        "files": {"train": "", "dev": "", "test": ""},
        "format": "conllu",
        "tag_column": None,
        "scheme": None,
        "features": "words",
        "min_word_count": 2,
        "max_word_length": 24,
        "pretrained": "all-MiniLM-L6-v2",
        "max_pieces": 512,
        "max_train_sentences": 0,
        "max_eval_sentences": 0,
        "batch_size": 32,
        "work_dir": "",
        "seed": 0,
        "name": "tagging_data",
    }
)
def tagging_data(hparams: tx.HParams) -> tx.run.Data:
    """Tagged sentences as batches ``(features, tag_ids [batch, time])`` (see the module
    docstring).

    ``files: {train, dev, test}``: all empty, the Turkish Web Treebank with its fixed split;
    otherwise a CoNLL file per split in ``format`` (``conllu`` or ``conll2003``). ``tag_column``:
    the column of the tags (an index, or a CoNLL-U name; ``null``: ``UPOS`` for CoNLL-U, the last
    column for CoNLL-2003). ``scheme`` (``null``, ``IOB1``, ``IOB2``, ``IOBES``, ``BILOU``): the
    tags are entities in that scheme; the CRF then never decodes a transition the scheme
    forbids, and the entity F1 is scored. ``features``: ``words`` or ``wordpieces`` (of the
    ``pretrained`` checkpoint's tokenizer, at most ``max_pieces`` per sentence).
    ``max_train_sentences`` / ``max_eval_sentences`` (0: all) take the first sentences of each
    split. Training batches are shuffled with the seed and repeat; dev and test keep their
    order. ``work_dir: ""`` writes the split files to a new temporary folder.
    """
    if hparams.features not in ("words", "wordpieces"):
        raise tx.HParamsError(
            f"features must be 'words' or 'wordpieces', got {hparams.features!r}",
            "data.hparams.features",
        )
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="tagging-data-")
    os.makedirs(folder, exist_ok=True)
    paths = split_files(hparams, folder)
    sentences = {name: tx.data.read_conll(path, hparams.format) for name, path in paths.items()}
    column = tag_column(hparams)
    tags = tx.data.TaggingData.tag_list(paths["train"], hparams.format, column)
    ids = {tag: index for index, tag in enumerate(tags)}
    labels = {}
    for name, split in sentences.items():
        for sentence in split:
            unseen = set(sentence.column(column)) - set(ids)
            if unseen:
                raise ValueError(
                    f"{paths[name]}:{sentence.line}: tags never seen in training: {sorted(unseen)}"
                )
        labels[name] = [np.array([ids[t] for t in s.column(column)], np.int32) for s in split]
    if hparams.features == "words":
        datasets, info = word_datasets(hparams, paths, column, tags, sentences["train"])
    else:
        datasets, info = wordpiece_datasets(hparams, sentences, labels)
    counts = collections.Counter(np.concatenate(labels["train"]).tolist())
    return tx.run.Data(
        train=datasets["train"],
        eval=datasets["dev"],
        test=datasets["test"],
        tags=tags,
        num_tags=len(tags),
        scheme=hparams.scheme,
        tag_column=column,
        format=hparams.format,
        files=paths,
        sentences=sentences,
        labels=labels,
        majority_tag=tags[counts.most_common(1)[0][0]],
        sizes={name: len(split) for name, split in sentences.items()},
        tokens={name: int(sum(map(len, split))) for name, split in labels.items()},
        **info,
    )


def word_datasets(
    hparams: tx.HParams, paths: dict, column: int | str, tags: list, train: list
) -> tuple[dict, dict]:
    """``TaggingData`` of each split as ``({word_ids, char_ids, length}, tag_ids)``."""
    word_column = "FORM" if hparams.format == "conllu" else 0
    counts = collections.Counter(w for sentence in train for w in sentence.column(word_column))
    vocab = tx.data.Vocab.from_tokens(
        [word for word, n in counts.most_common() if n >= hparams.min_word_count]
    )
    char_vocab = tx.data.CharVocab.from_texts(counts)

    def features(batch: dict) -> tuple[dict, tf.Tensor]:
        char_ids = char_vocab.words_to_char_ids(batch["words"], hparams.max_word_length)
        inputs = {"word_ids": batch["word_ids"], "char_ids": char_ids, "length": batch["length"]}
        return inputs, batch["tag_ids"]

    datasets = {}
    for name, path in paths.items():
        training = name == "train"
        data = tx.data.TaggingData(
            {
                "dataset": {
                    "files": [path],
                    "format": hparams.format,
                    "word_column": word_column,
                    "tag_column": column,
                    "tags": tags,
                },
                "batch_size": hparams.batch_size,
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "seed": hparams.seed,
                "name": f"tagging_{name}",
            },
            vocab=vocab,
        )
        datasets[name] = data.dataset.map(features, tf.data.AUTOTUNE)
    return datasets, {"vocab": vocab, "char_vocab": char_vocab}


def wordpiece_datasets(hparams: tx.HParams, sentences: dict, labels: dict) -> tuple[dict, dict]:
    """Each split as padded batches of ``({input_ids, input_length, first_piece, length},
    tag_ids)``."""
    folder = tx.pretrained.resolve_checkpoint(hparams.pretrained)
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder, max_seq_length=hparams.max_pieces)
    word_column = "FORM" if hparams.format == "conllu" else 0
    datasets, pieces = {}, 0
    for name, split in sentences.items():
        inputs = wordpiece_inputs(
            tokenizer, [s.column(word_column) for s in split], hparams.max_pieces
        )
        features = {
            "input_ids": tf.ragged.constant([i["input_ids"] for i in inputs], tf.int32),
            "input_length": tf.constant([len(i["input_ids"]) for i in inputs], tf.int32),
            "first_piece": tf.ragged.constant([i["first_piece"] for i in inputs], tf.int32),
            "length": tf.constant([len(s) for s in split], tf.int32),
        }
        tag_ids = tf.ragged.constant(labels[name], tf.int32)
        data = tf.data.Dataset.from_tensor_slices((features, tag_ids))
        if name == "train":
            pieces = int(np.sum(features["input_length"].numpy() - 2))
            data = data.shuffle(len(split), seed=hparams.seed).repeat()
        data = data.ragged_batch(hparams.batch_size).map(padded, tf.data.AUTOTUNE)
        datasets[name] = data.prefetch(tf.data.AUTOTUNE)
    tokens = sum(len(s) for s in sentences["train"])
    return datasets, {"pretrained": folder, "pieces_per_token": pieces / tokens}


def padded(features: dict, tag_ids: tf.RaggedTensor) -> tuple[dict, tf.Tensor]:
    """A batch of ragged rows as dense ones, padded with 0 to the longest."""
    dense = {key: value.to_tensor() if isinstance(value, tf.RaggedTensor) else value
             for key, value in features.items()}  # fmt: skip
    return dense, tag_ids.to_tensor()
