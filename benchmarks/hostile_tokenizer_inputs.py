"""Tokenizer time on hostile texts: with texkit's bounds and without them.

Texts that used to take minutes (issue: a megabyte of letters without a space for byte-level
BPE; a megabyte of characters a SentencePiece model lacks) are tokenized at three sizes, each
ten times the last, by the tokenizer as texkit builds it and by the same tokenizer with its bound
turned off:

* ``GPT2BPETokenizer`` (the test vocabulary, ``tests/fixtures/bpe``) on random lowercase
  letters; off: ``max_chars_per_word=None``.
* ``SentencePieceTokenizer(style="t5")`` (``tests/fixtures/sentencepiece/t5``) on
  ``"a" + "\\u0301" * n`` and ``"!" * n``; off: without the cut of runs of unknown characters.

Time linear in the text grows ten times per row; the unbounded forms grow faster (the square of
the longest word or run). The largest size runs with the bound only (without it: minutes).
Each figure is the fastest of ``--repeats`` calls after a warm-up call of the same size.

    python benchmarks/hostile_tokenizer_inputs.py [--largest 1000000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from common import machine  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def letters(size: int) -> str:
    rng = np.random.default_rng(0)
    return "".join(chr(c) for c in rng.integers(ord("a"), ord("z") + 1, size))


def fastest(call, text: str, repeats: int) -> float:
    call(text)  # traces the function for this shape, and warms the caches
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call(text)
        best = min(best, time.perf_counter() - started)
    return best


def tokenizers():
    import texkit as tx

    bpe = os.path.join(FIXTURES, "bpe")
    vocab, merges = os.path.join(bpe, "vocab.json"), os.path.join(bpe, "merges.txt")
    bounded_bpe = tx.data.GPT2BPETokenizer(vocab, merges)
    open_bpe = tx.data.GPT2BPETokenizer(vocab, merges, max_chars_per_word=None)
    t5 = os.path.join(FIXTURES, "sentencepiece", "t5")
    bounded_sp = tx.data.SentencePieceTokenizer.from_pretrained(t5, style="t5")
    open_sp = tx.data.SentencePieceTokenizer.from_pretrained(t5, style="t5")
    open_sp._unknown_run = None  # the library's own join of unknown characters, uncut
    return [
        ("GPT2BPETokenizer, random letters", letters, bounded_bpe, open_bpe),
        ("T5 SentencePiece, 'a' + U+0301 * n", lambda n: "a" + "\u0301" * n, bounded_sp, open_sp),
        ("T5 SentencePiece, '!' * n", lambda n: "!" * n, bounded_sp, open_sp),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    sizes = [args.largest // 100, args.largest // 10, args.largest]
    print(machine())
    print("| text | characters | with texkit's bound (s) | without (s) | without / with |")
    print("|---|---|---|---|---|")
    for name, make, bounded, unbounded in tokenizers():
        for size in sizes:
            text = make(size)
            with_bound = fastest(lambda t, b=bounded: b.tokenize([t]), text, args.repeats)
            if size < args.largest:
                without = fastest(lambda t, u=unbounded: u.tokenize([t]), text, args.repeats)
                ratio = f"{without / with_bound:.1f}"
                without_text = f"{without:.3f}"
            else:
                without_text, ratio = "not run (minutes)", ""
            print(f"| {name} | {size:,} | {with_bound:.3f} | {without_text} | {ratio} |")
    print(f"\ncommand: python benchmarks/hostile_tokenizer_inputs.py --largest {args.largest} "
          f"--repeats {args.repeats}")  # fmt: skip


if __name__ == "__main__":
    main()
