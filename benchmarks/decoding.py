"""Per-step decoding time of ``tx.modules.TransformerDecoder`` with and without its key/value cache.

A decoder-only language model (``cross_attention: false``) with random weights, by default of the
base Transformer's size (512 dims, 6 blocks, 8 heads, 2,048-unit feed-forward), tied to a
16,000-token embedding, decoding a batch of 8. Measured in the same run, without XLA (a
``tf.function``) and with ``jit_compile=True``, at prefix lengths t = 32, 64, 128, 256 (a step at
prefix t attends to t positions and gives the logits of token t + 1):

* with the cache: the decoder's own step function (``_inference_step``, the one its greedy,
  sampling and beam-search loops call) run ``--steps`` times in a ``tf.while_loop`` at the fixed
  step ``t - 1``, feeding back its argmax and threading the cache through, so every repetition
  does exactly the work of the step at prefix t; the time per repetition is the figure. The cache
  is preallocated to ``max_decoding_length`` and a step attends over the whole buffer (masked past
  the current step), so its cost is set by the buffer, not by the prefix: it is measured with the
  buffer of a 256-token decode and with a buffer sized to the prefix;
* without the cache: the teacher-forcing call on the ``[batch, t]`` prefix (``decoder(inputs=ids,
  embedding=...)``), then the argmax of the last position's logits: what each step costs when
  every step recomputes the whole prefix;
* generating N tokens with the cache: the decoder's real greedy loop (``decoder(decoding_strategy=
  "infer_greedy", max_decoding_length=N, end_token=None)``; no end token, so all N steps
  run), total time (the loop adds the token choice and the bookkeeping of finished rows; it does not
  select finished rows' caches, which the decoder discards, ``freeze_state=False``). Without
  the cache the total is the sum over t = 1 .. N of the per-step time, from a least-squares fit
  ``a + b t + c t^2`` (the cost model of recomputing a prefix: projections grow with t,
  attention with t^2) to the measured per-step times: an estimate, marked so, and a favourable
  one (each length compiled for its own static shape).

Each figure is the fastest of ``--repeats`` runs after a warm-up run (tracing, compiling), taken
in interleaved rounds (every figure once per round) so that load from other processes on the
machine hits all figures alike; the fastest run is the one they disturbed least. A figure whose
runs have taken ``--budget`` seconds is not run again.

    python benchmarks/decoding.py [--repeats 5] [--steps 32] [--budget 60] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import texkit as tx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure  # noqa: E402

QUICK = {"dim": 64, "blocks": 2, "heads": 2, "ffn": 128, "vocab": 1000, "batch": 2}
QUICK_PREFIXES = "8,16"
MODES = (("tf.function", False), ("XLA", True))


@dataclasses.dataclass
class Case:
    """One figure: ``run()`` timed, divided by ``per`` (the steps one call makes)."""

    table: str
    row: str
    column: int
    run: Callable[[], object]
    per: int = 1
    samples: list[float] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.row}, {self.column}"


def quadratic_sum(prefixes: list[int], seconds: list[float], length: int) -> float:
    """Sum over t = 1 .. length of a least-squares ``a + b t + c t^2`` through the points."""
    coefficients = np.polyfit(prefixes, seconds, min(2, len(prefixes) - 1))
    return float(np.clip(np.polyval(coefficients, np.arange(1, length + 1)), 0.0, None).sum())


def build(
    args: argparse.Namespace,
) -> tuple[tx.modules.WordEmbedder, tx.modules.TransformerDecoder]:
    keras.utils.set_random_seed(0)
    embedder = tx.modules.WordEmbedder(vocab_size=args.vocab, hparams={"dim": args.dim})
    decoder = tx.modules.TransformerDecoder(
        output_layer=embedder,
        hparams={
            "dim": args.dim,
            "num_blocks": args.blocks,
            "multihead_attention": {"num_heads": args.heads},
            "poswise_feedforward": {"dim": args.ffn},
            "cross_attention": False,
        },
    )
    return embedder, decoder


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=32, help="cached steps per timed call")
    parser.add_argument("--prefixes", default="32,64,128,256")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=16000)
    parser.add_argument(
        "--budget", type=float, default=60.0, help="seconds of timed runs per figure, at most"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a tiny model, 8 and 16 tokens, 2 runs"
    )
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
        args.prefixes, args.repeats, args.steps = QUICK_PREFIXES, 2, 4
    load_before = os.getloadavg()[0]
    prefixes = sorted(int(p) for p in args.prefixes.split(","))
    longest = prefixes[-1]
    embedder, decoder = build(args)
    rng = np.random.default_rng(0)
    start_tokens = tf.fill([args.batch], 1)

    def cached_steps(buffer: int) -> Callable:
        """``--steps`` repetitions of the step at ``time`` with a cache of ``buffer`` steps."""

        def run(time_: tf.Tensor) -> tf.Tensor:
            step, state, tokens = decoder._inference_step(
                embedding=embedder, start_tokens=start_tokens, context=None,
                context_sequence_length=None, memory=None, memory_sequence_length=None,
                max_length=buffer, training=False,
            )  # fmt: skip

            def body(i, tokens, state):
                logits, state = step(tokens, time_, state)
                return i + 1, tf.argmax(logits, axis=-1, output_type=tf.int32), state

            return tf.while_loop(lambda i, *_: i < args.steps, body, (0, tokens, state))[1]

        return run

    def uncached_step(ids: tf.Tensor) -> tf.Tensor:
        outputs, _, _ = decoder(inputs=ids, embedding=embedder)
        return tf.argmax(outputs.logits[:, -1], axis=-1, output_type=tf.int32)

    def greedy(length: int) -> Callable:
        def run() -> tf.Tensor:
            outputs, _, _ = decoder(
                decoding_strategy="infer_greedy", embedding=embedder, start_tokens=start_tokens,
                end_token=None, max_decoding_length=length,
            )  # fmt: skip
            return outputs.sample_id

        return run

    def cached(buffer: int, jit: bool) -> Callable[[int], Callable]:
        run = tf.function(
            cached_steps(buffer), input_signature=[tf.TensorSpec([], tf.int32)], jit_compile=jit
        )
        return lambda t: lambda: run(tf.constant(t - 1)).numpy()

    def uncached(t: int, jit: bool) -> Callable:
        run = tf.function(uncached_step, jit_compile=jit)
        ids = tf.constant(rng.integers(4, args.vocab, (args.batch, t)), tf.int32)
        return lambda: run(ids).numpy()

    def loop(length: int, jit: bool) -> Callable:
        run = tf.function(greedy(length), jit_compile=jit)
        return lambda: run().numpy()

    cases = []
    for mode, jit in MODES:
        full = cached(longest, jit)
        for t in prefixes:
            sized = full if t == longest else cached(t, jit)
            cases += [
                Case("step", f"cached, buffer {longest}, {mode}", t, full(t), args.steps),
                Case("step", f"cached, buffer = prefix, {mode}", t, sized(t), args.steps),
                Case("step", f"no cache, {mode}", t, uncached(t, jit)),
            ]
            cases.append(Case("total", f"cached (greedy loop), {mode}", t, loop(t, jit)))
    measure(cases, args.repeats, args.budget)

    tables: dict[str, dict[str, dict[int, float]]] = {"step": {}, "total": {}}
    for case in sorted(cases, key=lambda case: case.row.startswith("no cache")):
        tables[case.table].setdefault(case.row, {})[case.column] = min(case.samples) / case.per
    step_s, total_s = tables["step"], tables["total"]
    for name in [k for k in step_s if k.startswith("no cache")]:
        measured = [step_s[name][t] for t in prefixes]
        total_s[f"{name} (estimated)"] = {n: quadratic_sum(prefixes, measured, n) for n in prefixes}
    step_ms = {name: {t: s * 1000 for t, s in f.items()} for name, f in step_s.items()}

    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"TensorFlow {tf.__version__}, Keras {keras.__version__}; decoder-only TransformerDecoder: "
        f"dim {args.dim}, {args.blocks} blocks, {args.heads} heads, feed-forward {args.ffn}, "
        f"vocabulary {args.vocab} (tied), batch {args.batch}; load average (1 min) "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print("\nms per step at prefix length t")
    print(f"| what | {' | '.join(f't = {t}' for t in prefixes)} |")
    print(f"|---|{'---|' * len(prefixes)}")
    for name, figures in step_ms.items():
        print(f"| {name} | {' | '.join(f'{figures[t]:.1f}' for t in prefixes)} |")
    print("\nseconds to generate N tokens")
    print(f"| what | {' | '.join(f'N = {n}' for n in prefixes)} |")
    print(f"|---|{'---|' * len(prefixes)}")
    for name, figures in total_s.items():
        print(f"| {name} | {' | '.join(f'{figures[n]:.2f}' for n in prefixes)} |")
    for mode, _ in MODES:
        with_cache = total_s[f"cached (greedy loop), {mode}"][longest]
        for name in [k for k in total_s if k.startswith(f"no cache, {mode}")]:
            print(
                f"{longest} tokens, {name.removesuffix(' (estimated)')} / cached: "
                f"{total_s[name][longest] / with_cache:.1f}"
            )
    for mode, _ in MODES:
        at = (
            step_ms[f"no cache, {mode}"][longest]
            / step_ms[f"cached, buffer {longest}, {mode}"][longest]
        )
        print(f"one step at t = {longest}, no cache / cached, {mode}: {at:.1f}")
    command = " ".join(["python benchmarks/decoding.py", *(sys.argv[1:] if argv is None else argv)])
    print("command:", command)
    return {"step_ms": step_ms, "total_s": total_s}


if __name__ == "__main__":
    main()
