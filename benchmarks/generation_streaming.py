"""Streaming generation's cost per token against the whole compiled loop, and retracing.

``tx.tasks.CausalLM.generate(..., stream=True)`` runs the decoding loop as two compiled
functions (the prompt's pass, then one step per call) with the loop's state, every block's
key/value cache included, passed out of one call and into the next; ``stream=False`` runs the
whole loop as one compiled function. Both on the same model and prompt, greedy, every step run
(no end token):

* a Llama-shaped decoder of ``--layers`` 12 blocks of ``--dim`` 768 (12 query heads, 4 key/value
  heads of 64, SwiGLU of 2,048, rotary positions, RMS norms) with random weights, over the
  1,005-token byte-level BPE of ``tests/fixtures/tokenizer_json/llama3`` (its vocabulary sets the
  output layer's size: a real 32,000- or 128,000-token layer adds the same time to both forms);
* batch 1, one prompt of about 16 tokens; ``--new-tokens`` 64 new tokens.

Per-token time is ``(time for N - time for 1) / (N - 1)`` for each form (the time for 1 is the
prompt's pass and the first token); each figure is the fastest of ``--repeats`` runs after a
warm-up, the forms interleaved in each round so that load from other processes hits both alike
(compare the ratio). Retracing: after the warm-up, ``generate`` on other prompts of the same
shape bucket (and a new sampling seed) must compile nothing (``lm._generator.traces``).

Run from the repository root::

    python benchmarks/generation_streaming.py               # the figures in RESULTS.md
    python benchmarks/generation_streaming.py --layers 2    # a quick look
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import texkit as tx  # noqa: E402

TOKENIZER = "tests/fixtures/tokenizer_json/llama3"
PROMPT = "In the beginning God created the heaven"


def _model(layers: int, dim: int) -> tx.tasks.CausalLM:
    tokenizer = tx.pretrained.tokenizer_from_pretrained(TOKENIZER)
    decoder = {
        "vocab_size": tokenizer.vocab_size, "dim": dim, "num_blocks": layers,
        "attention": {"num_heads": dim // 64, "num_kv_heads": 4, "head_dim": 64},
        "feed_forward": {"dim": dim * 8 // 3},
    }  # fmt: skip
    lm = tx.tasks.CausalLM(
        {"decoder": {"type": "LlamaDecoder", "hparams": decoder}, "tokenizer": TOKENIZER},
        tokenizer=tokenizer,
    )
    lm._build_for_weights()
    return lm


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lm = _model(args.layers, args.dim)
    n = args.new_tokens
    forms = {
        "whole loop": lambda k: lm.generate(PROMPT, max_new_tokens=k),
        "streamed": lambda k: "".join(lm.generate(PROMPT, max_new_tokens=k, stream=True)),
    }
    for form in forms.values():  # warm-up: tracing and compiling
        form(1), form(n)
    assert forms["whole loop"](n) == forms["streamed"](n), "the streamed text differs"
    best = {(name, k): float("inf") for name in forms for k in (1, n)}
    for _ in range(args.repeats):
        for name, form in forms.items():
            for k in (1, n):
                best[name, k] = min(best[name, k], _timed(lambda f=form, k=k: f(k)))
    traces = lm._generator.traces
    others = [
        "And God said, Let there be light: and there was light.",
        "And the earth was without form, and void; and darkness",
    ]
    widths = [len(lm._prompt_ids([p])[0]) for p in [PROMPT, *others]]
    lm.generate(others[0], max_new_tokens=n)
    list(lm.generate(others[1], max_new_tokens=n, stream=True))
    retraced = lm._generator.traces - traces
    params = sum(int(v.shape.num_elements()) for v in lm.decoder.weights) / 1e6
    print(f"Llama-shaped decoder, {args.layers} blocks of {args.dim}, {params:.1f} M parameters,"
          f" batch 1, {n} new tokens, greedy, XLA")  # fmt: skip
    per_token = {}
    for name in forms:
        per_token[name] = (best[name, n] - best[name, 1]) / (n - 1) * 1e3
        print(f"  {name:11s} first token {best[name, 1] * 1e3:8.1f} ms   per token "
              f"{per_token[name]:6.2f} ms   {n} tokens {best[name, n]:6.3f} s")  # fmt: skip
    ratio = per_token["streamed"] / per_token["whole loop"]
    print(f"  streamed / whole loop, per token: {ratio:.3f}")
    print(f"  prompts of {widths} tokens (buckets of {tx.tasks.generation.WIDTH_BUCKET}): new "
          f"compilations after the first prompt's: {retraced}")  # fmt: skip
    print("command: python benchmarks/generation_streaming.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
