"""Byte-level BPE (GPT-2, RoBERTa) tokenization speed on the Bible verses: texkit and others.

The texts: every verse of the English-Spanish Bible corpus of ``examples/common/bible_corpus.py``
(the train, dev and test verses; each verse's English and Spanish text, one after the other:
62,168 texts), or the first ``--texts`` of them. The vocabulary: the ``vocab.json`` +
``merges.txt`` of ``--folder``; by default the small one of the tests (``tests/fixtures/bpe``:
2,000 tokens trained on this corpus by ``tests/fixtures/bpe/make_fixture.py``), or any GPT-2 /
RoBERTa folder. The figure is tokens (ids, no special tokens) per second over the whole set.

* texkit: ``tx.data.GPT2BPETokenizer.from_pretrained(folder)``, its ``tokenize`` (ragged ids) and
  its ``encode`` (``max_seq_length`` ``--max-seq-length``: ids truncated, padded, with
  ``segment_ids`` and ``sequence_length``) in a ``tf.data`` pipeline:
  ``Dataset.from_tensor_slices(texts).batch(--batch).map(f, num_parallel_calls=AUTOTUNE)
  .prefetch(AUTOTUNE)``; the timed run iterates over the whole dataset.
* KerasHub: ``keras_hub.tokenizers.BytePairTokenizer(vocabulary=..., merges=...)`` in the same
  pipeline, where ``keras_hub`` can be imported (it is not installed with texkit; the script says
  so and goes on without it).
* Hugging Face ``tokenizers`` (Rust): ``ByteLevelBPETokenizer(vocab.json, merges.txt)
  .encode_batch(texts)``, one call over all the texts (its ``Encoding`` objects, ids not read
  out), parallel over all cores (Rayon; ``TOKENIZERS_PARALLELISM`` unset). It runs in a child
  process started with ``--hf-python`` (a Python with ``tokenizers`` and numpy, which texkit's
  environment need not have); without it that row is left out. Its ids are compared with
  texkit's (the ``ids identical`` column).

Each figure is the fastest of ``--repeats`` runs after a warm-up run (for texkit and KerasHub in
interleaved rounds, ``benchmarks/common.py``; Hugging Face's in its own process, after).

    python benchmarks/bpe_tokenizer.py [--folder tests/fixtures/bpe] [--batch 256]
        [--repeats 3] [--texts N] [--max-seq-length 128] [--hf-python PYTHON] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, ROOT)  # the repository root, for examples.common

from common import Case, machine, measure, table  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bpe")
HF_WORKER = "--hf-worker"


def bible_texts(count: int | None) -> list[str]:
    """Each verse's English and Spanish text: the train, dev and test verses, in this order."""
    # Here, not at the top: the examples package imports texkit, which the worker does not have.
    from examples.common.bible_corpus import load_bible

    verses = [verse for split in load_bible().values() for verse in split]
    texts = [text for verse in verses for text in (verse.english, verse.spanish)]
    return texts if count is None else texts[:count]


def hf_worker(folder: str, texts_file: str, repeats: int, ids_file: str) -> None:
    """The Hugging Face row, in a process of its own (no TensorFlow): prints a JSON line."""
    from importlib import metadata

    from tokenizers import ByteLevelBPETokenizer

    with open(texts_file, encoding="utf-8") as f:
        texts = json.load(f)
    tokenizer = ByteLevelBPETokenizer(
        os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt")
    )
    encodings = tokenizer.encode_batch(texts)  # warm-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        tokenizer.encode_batch(texts)
        samples.append(time.perf_counter() - start)
    lengths = np.array([len(e.ids) for e in encodings], np.int64)
    np.savez(
        ids_file, ids=np.array([i for e in encodings for i in e.ids], np.int32), lengths=lengths
    )
    print(json.dumps({"seconds": min(samples), "version": metadata.version("tokenizers")}))


def run_hf(python: str, folder: str, texts: list[str], repeats: int) -> tuple[float, str, list]:
    """Seconds of Hugging Face's fastest run, its version, and its ids."""
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = os.path.join(tmp, "texts.json")
        ids_file = os.path.join(tmp, "ids.npz")
        with open(texts_file, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        command = [python, os.path.abspath(__file__), HF_WORKER, folder, texts_file]
        result = subprocess.run(
            [*command, str(repeats), ids_file], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"the Hugging Face worker failed:\n{result.stderr[-2000:]}")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        data = np.load(ids_file)
        ends = np.cumsum(data["lengths"])
        ids = [row.tolist() for row in np.split(data["ids"], ends[:-1])]
    return report["seconds"], report["version"], ids


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default=FIXTURE, help="vocab.json + merges.txt")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--texts", type=int, default=None, help="the first N texts only")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--hf-python", default=None, help="a Python with tokenizers and numpy")
    parser.add_argument("--quick", action="store_true", help="5,000 texts, 2 runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.texts, args.repeats = 5_000, min(args.repeats, 2)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
    import tensorflow as tf

    import texkit as tx

    load_before = os.getloadavg()[0]
    texts = bible_texts(args.texts)
    n = len(texts)
    tokenizer = tx.data.GPT2BPETokenizer.from_pretrained(
        args.folder, max_seq_length=args.max_seq_length
    )

    def pipeline(function: object) -> tf.data.Dataset:
        return (
            tf.data.Dataset.from_tensor_slices(texts)
            .batch(args.batch)
            .map(function, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )

    def iterate(dataset: tf.data.Dataset) -> object:
        def run() -> int:
            return sum(1 for _ in dataset)

        return run

    texkit_ids = [row for batch in pipeline(tokenizer.tokenize) for row in batch.to_list()]
    tokens = sum(map(len, texkit_ids))
    cases = [
        Case(
            "texkit GPT2BPETokenizer.tokenize, tf.data",
            iterate(pipeline(tokenizer.tokenize)),
            tokens,
        ),
        Case(
            f"texkit GPT2BPETokenizer.encode ({args.max_seq_length}), tf.data",
            iterate(pipeline(tokenizer.encode)),
            tokens,
        ),
    ]
    identical = {cases[0].name: "(texkit)", cases[1].name: "(texkit)"}

    try:
        import keras_hub
    except ImportError as error:
        print(f"KerasHub: not importable here ({error}); its row is left out")
    else:
        hub = keras_hub.tokenizers.BytePairTokenizer(
            vocabulary=os.path.join(args.folder, "vocab.json"),
            merges=os.path.join(args.folder, "merges.txt"),
        )
        hub_ids = [row for batch in pipeline(hub) for row in batch.to_list()]
        name = "keras_hub BytePairTokenizer, tf.data"
        cases.append(Case(name, iterate(pipeline(hub)), tokens))
        same = sum(a == b for a, b in zip(hub_ids, texkit_ids, strict=True))
        identical[name] = f"{same:,} / {n:,}"

    measure(cases, args.repeats)
    rows = [[case.name, case.rate, n / case.seconds, f"{case.seconds:.2f}"] for case in cases]
    rows = [[*row, identical[case.name]] for row, case in zip(rows, cases, strict=True)]
    hf_version = None
    if args.hf_python:
        print("  Hugging Face tokenizers, in a child process", flush=True)
        seconds, hf_version, hf_ids = run_hf(args.hf_python, args.folder, texts, args.repeats)
        same = sum(a == b for a, b in zip(texkit_ids, hf_ids, strict=True))
        rows.append(
            [
                "HF tokenizers ByteLevelBPETokenizer.encode_batch, one call",
                tokens / seconds,
                n / seconds,
                f"{seconds:.2f}",
                f"{same:,} / {n:,}",
            ]
        )
        for text, mine, theirs in zip(texts, texkit_ids, hf_ids, strict=True):
            if mine != theirs:
                print(f"  texkit differs from HF on {text[:80]!r}: {mine[:12]} vs {theirs[:12]}")
                break
    else:
        print("Hugging Face tokenizers: no --hf-python given; its row is left out")

    print()
    print(
        machine("tensorflow", "tensorflow-text")
        + (f", tokenizers {hf_version} (child process)" if hf_version else "")
    )
    print(
        f"{n:,} texts (Bible verses, English and Spanish), {tokens:,} tokens (texkit's ids, no "
        f"special tokens); vocabulary {args.folder} ({tokenizer.vocab_size:,} ids, "
        f"{tokenizer.num_merges:,} merges); batch {args.batch}; fastest of {args.repeats}; load "
        f"average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n"
    )
    print(table(["what", "tokens/s", "texts/s", "seconds", "ids identical"], rows))
    command = " ".join(
        ["python benchmarks/bpe_tokenizer.py", *(sys.argv[1:] if argv is None else argv)]
    )
    print("command:", command)
    return {row[0]: row[1] for row in rows}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == HF_WORKER:
        hf_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        main()
