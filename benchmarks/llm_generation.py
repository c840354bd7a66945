"""Generation speed of a Llama-shaped decoder LLM: texkit, KerasHub and Hugging Face (torch).

The same model shape everywhere (``LLAMA_125M``): 12 pre-norm blocks of 768 dims, grouped-query
attention with 12 query heads and 4 key/value heads of 64 dims, rotary positions (base 10,000),
RMS norms, a SwiGLU feed-forward of 2,048, a 32,000-token vocabulary and a separate (untied)
output layer: 124.7 M parameters, of which 49.2 M are the two tables. A batch of ``--batches``
1 and 8 rows, each a prompt of 16 random token ids (the same ids for every library), continued
greedily by exactly ``--new-tokens`` 128 tokens (every output's length and prompt are checked
on every run), in ``--dtypes`` float32 and bfloat16 separately: in bfloat16 the weights are
stored and multiplied in bfloat16 by everyone (Keras dtype policy ``"bfloat16"``, torch
``model.to(torch.bfloat16)``; each library keeps its own float32 islands, softmax and norms).

The weights are random. transformers makes them (``LlamaForCausalLM(LlamaConfig(...))`` with
seed 0) and saves them with ``save_pretrained`` into a temporary Hugging Face folder in float32;
texkit loads that folder, so texkit and torch run the same weights and their greedy
continuations are compared token by token (printed; in float32 they should agree everywhere,
in bfloat16 rounding may part them). KerasHub, which cannot read such a folder without its own
conversion, has random weights of the same shape (its speed does not depend on them).

Prefill and per-token figures: every contender generates 1 new token and ``--new-tokens`` new
tokens, timed separately (each its own figure). The time for 1 new token is the prefill (the
prompt's pass that fills the cache, plus choosing one token); the per-token time is
``(time for N - time for 1) / (N - 1)``; tokens/s is ``batch * N / time for N``, prefill
included. For KerasHub the prefill differs between the two calls (see below), so its
per-token figure also holds the cost of its wider prefill.

* texkit: ``tx.pretrained.from_pretrained(folder)`` (a ``tx.modules.LlamaDecoder``; with
  ``dtype="bfloat16"`` for bfloat16) called with ``decoding_strategy="infer_greedy"``,
  ``context=`` the prompts, ``context_sequence_length=`` their lengths, ``end_token=None`` (no
  end token: every step runs) and ``max_decoding_length = 15 + N`` (the decoder starts from the
  prompt's first token; its ``sample_id`` holds the other 15, forced, then the N new ones), in a
  ``tf.function``, without and with ``jit_compile=True``. texkit runs the prompt through its
  blocks in one pass that fills the caches; its greedy loop also collects the logits of every
  step (``[batch, time, vocab]`` float32, part of its output); both are in its figures.
* KerasHub: ``keras_hub.models.LlamaCausalLM(backbone=LlamaBackbone(...), preprocessor=None)``,
  compiled with ``sampler="greedy"`` (its default is top-k) and ``jit_compile`` False and True
  (Keras resolves its default to False on a CPU-only machine; one task model per case, all on
  one backbone per dtype: ``compile`` drops the compiled generate function), ``generate`` on a
  dict of ``token_ids`` / ``padding_mask`` of ``[batch, 16 + N]`` with ``stop_token_ids=None``
  (without a preprocessor the inputs' padded width is the length). KerasHub fills its cache
  with one forward pass over the whole padded width, prompt and empty slots alike (17 positions
  for one new token, 144 for 128), then runs the steps.
* Hugging Face: ``transformers.LlamaForCausalLM`` on torch (CPU) with ``attn_implementation=
  "sdpa"``, under ``torch.inference_mode``, ``torch.set_num_threads(n)`` for each n of
  ``--torch-threads`` (default: all CPUs and 1; when other jobs load the machine, torch's OpenMP
  threads wait for each other at every op, and 1 thread can be many times faster),
  ``generate(max_new_tokens=N, min_new_tokens=N, do_sample=False)`` (``min_new_tokens`` masks
  the end token until N tokens are out), with its default dynamic key/value cache and with
  ``cache_implementation="static"`` (a buffer of the whole length, as texkit's and KerasHub's).
  ``generate`` compiles the model with ``torch.compile`` for a static cache only on GPUs and
  similar devices unless told to, so on the CPU it runs eagerly; told to, on the loaded 2-core
  machine this was written on, its 128-token call took minutes (recompiling), so it is not
  among the modes here. torch runs in a worker process of its own that never imports
  TensorFlow (``benchmarks/common.py``'s ``Worker``): in one process with TensorFlow, once
  TensorFlow had run, torch ran 3 to 6 times slower. Its figures are round trips to the worker
  (the round trip of an empty request is printed beside them).

Each figure is the fastest of ``--repeats`` runs after a warm-up run (tracing, compiling), taken
in interleaved rounds (``benchmarks/common.py``), so that load from other processes hits all
figures alike: compare ratios within one run. A figure whose runs have taken ``--budget``
seconds is not run again.

    python benchmarks/llm_generation.py [--repeats 2] [--budget 120] [--new-tokens 128]
        [--batches 1,8] [--dtypes float32,bfloat16] [--torch-threads 2,1] [--quick]
        [--torch-python PYTHON] [--skip 'KerasHub,torch static']
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Case, Worker, machine, measure, serve_if_worker, table  # noqa: E402

LLAMA_125M = {"layers": 12, "dim": 768, "heads": 12, "kv_heads": 4, "head_dim": 64, "ffn": 2048,
              "vocab": 32000, "theta": 10000.0, "positions": 2048}  # fmt: skip
QUICK = {"layers": 2, "dim": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "ffn": 128,
         "vocab": 1000, "theta": 10000.0, "positions": 2048}  # fmt: skip
PROMPT = 16
TORCH_CACHES = ("dynamic", "static")
PACKAGES = ("tensorflow", "keras", "keras-hub", "torch", "transformers")


def parameters(config: dict) -> int:
    """The model's parameter count (embedding and output tables, blocks, final norm)."""
    dim, kv_dim = config["dim"], config["kv_heads"] * config["head_dim"]
    attention = 2 * dim * config["heads"] * config["head_dim"] + 2 * dim * kv_dim
    block = attention + 3 * dim * config["ffn"] + 2 * dim
    return 2 * config["vocab"] * dim + config["layers"] * block + dim


def torch_worker(spec: dict) -> Callable[[list], object]:
    """The Hugging Face contender, in the worker process (which never imports TensorFlow).

    Builds the model from ``spec`` (seed 0) and saves it, in float32, to ``spec["folder"]``
    for texkit; a bfloat16 copy beside it. Each request is ``[dtype, batch, new tokens, cache,
    threads]``, answered with the output's shape; a negative count of new tokens answers with
    the new tokens themselves (for the comparison with texkit).
    """
    import copy

    import torch
    import transformers

    config, prompts = spec["config"], spec["prompts"]
    torch.manual_seed(0)
    end = config["vocab"] - 1  # the end token: masked by min_new_tokens until the last token
    hf_config = transformers.LlamaConfig(
        vocab_size=config["vocab"],
        hidden_size=config["dim"],
        intermediate_size=config["ffn"],
        num_hidden_layers=config["layers"],
        num_attention_heads=config["heads"],
        num_key_value_heads=config["kv_heads"],
        head_dim=config["head_dim"],
        max_position_embeddings=config["positions"],
        rope_parameters={"rope_type": "default", "rope_theta": config["theta"]},
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=end,
        pad_token_id=end,
        attn_implementation="sdpa",
    )
    model = transformers.LlamaForCausalLM(hf_config).eval()
    model.save_pretrained(spec["folder"])
    models = {"float32": model, "bfloat16": copy.deepcopy(model).to(torch.bfloat16)}
    ids = {int(b): torch.tensor(p, dtype=torch.long) for b, p in prompts.items()}

    def generate(request: list) -> list:
        dtype, batch, new_tokens, cache, threads = request
        torch.set_num_threads(threads)
        prompt = ids[batch]
        with torch.inference_mode():
            out = models[dtype].generate(
                input_ids=prompt, attention_mask=torch.ones_like(prompt),
                max_new_tokens=abs(new_tokens), min_new_tokens=abs(new_tokens), do_sample=False,
                num_beams=1, pad_token_id=end, eos_token_id=end,
                cache_implementation=None if cache == "dynamic" else cache,
            )  # fmt: skip
        if new_tokens < 0:
            return out[:, PROMPT:].tolist()
        assert (out[:, :PROMPT] == prompt).all(), "torch changed the prompt"
        return list(out.shape)

    return generate


if __name__ == "__main__":
    serve_if_worker(torch_worker)  # in the worker: serves, then exits

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import texkit as tx  # noqa: E402


def texkit_cases(
    folder: str, dtype: str, prompts: dict[int, np.ndarray], counts: list[int]
) -> tuple[list[Case], Callable[[int], np.ndarray]]:
    """Greedy decoding without and with XLA for each batch and count of new tokens.

    Returns the cases and a function giving the XLA greedy tokens of a batch (for the
    comparison with torch).
    """
    kwargs = {} if dtype == "float32" else {"dtype": dtype}
    lm = tx.pretrained.from_pretrained(folder, **kwargs)

    def greedy(ids: tf.Tensor, lengths: tf.Tensor, steps: int) -> tuple[tf.Tensor, tf.Tensor]:
        outputs, _, out_lengths = lm(
            decoding_strategy="infer_greedy", context=ids, context_sequence_length=lengths,
            end_token=None, max_decoding_length=steps,
        )  # fmt: skip
        return outputs.sample_id, out_lengths

    cases, xla_runs = [], {}
    for mode, jit in (("tf.function", False), ("XLA", True)):
        compiled = tf.function(greedy, jit_compile=jit)
        for batch, prompt in prompts.items():
            context = tf.constant(prompt, tf.int32)
            lengths = tf.fill([batch], PROMPT)
            for new in counts:

                def run(
                    compiled: Callable = compiled,
                    context: tf.Tensor = context,
                    lengths: tf.Tensor = lengths,
                    prompt: np.ndarray = prompt,
                    new: int = new,
                ) -> np.ndarray:
                    ids, out_lengths = compiled(context, lengths, PROMPT - 1 + new)
                    return new_tokens_of(ids.numpy(), out_lengths.numpy(), prompt, new)

                cases.append(Case(f"texkit {mode}|{dtype}|{batch}|{new}", run, batch * new))
                if jit:
                    xla_runs[(batch, new)] = run
    return cases, lambda batch: xla_runs[(batch, max(counts))]()


def new_tokens_of(ids: np.ndarray, lengths: np.ndarray, prompt: np.ndarray, new: int) -> np.ndarray:
    """The ``new`` generated tokens of texkit's ``sample_id``; checks lengths and the prompt.

    ``sample_id`` starts after the prompt's first token (which is the decoder's start token):
    the next ``PROMPT - 1`` are the forced prompt, then come the generated tokens.
    """
    steps = PROMPT - 1 + new
    assert ids.shape == (prompt.shape[0], steps) and (lengths == steps).all(), (ids.shape, lengths)
    assert (ids[:, : PROMPT - 1] == prompt[:, 1:]).all(), "the prompt was not forced"
    return ids[:, PROMPT - 1 :]


def kerashub_cases(
    config: dict, dtype: str, prompts: dict[int, np.ndarray], counts: list[int]
) -> list[Case]:
    """``LlamaCausalLM.generate`` with the greedy sampler, without and with XLA."""
    import keras_hub

    backbone = keras_hub.models.LlamaBackbone(
        vocabulary_size=config["vocab"],
        num_layers=config["layers"],
        num_query_heads=config["heads"],
        hidden_dim=config["dim"],
        intermediate_dim=config["ffn"],
        num_key_value_heads=config["kv_heads"],
        rope_max_wavelength=config["theta"],
        dropout=0.0,
        dtype=dtype,
        tie_word_embeddings=False,
    )
    assert backbone.count_params() == parameters(config), backbone.count_params()
    cases = []
    for mode, jit in (("no XLA", False), ("XLA", True)):
        for batch, prompt in prompts.items():
            for new in counts:
                width = PROMPT + new
                token_ids = np.zeros((batch, width), np.int32)
                token_ids[:, :PROMPT] = prompt
                padding_mask = np.zeros((batch, width), bool)
                padding_mask[:, :PROMPT] = True
                inputs = {"token_ids": token_ids, "padding_mask": padding_mask}
                # One task model per case (compile() drops the compiled generate function).
                model = keras_hub.models.LlamaCausalLM(backbone=backbone, preprocessor=None)
                model.compile(sampler=keras_hub.samplers.GreedySampler(), jit_compile=jit)
                assert model.jit_compile == jit

                def run(model=model, inputs=inputs, prompt=prompt, width=width) -> np.ndarray:
                    out = model.generate(dict(inputs), stop_token_ids=None)
                    ids = np.asarray(out["token_ids"])
                    assert ids.shape == (prompt.shape[0], width), ids.shape
                    assert np.asarray(out["padding_mask"]).all()
                    assert (ids[:, :PROMPT] == prompt).all()
                    return ids

                cases.append(Case(f"KerasHub {mode}|{dtype}|{batch}|{new}", run, batch * new))
    return cases


def torch_cases(
    dtype: str,
    prompts: dict[int, np.ndarray],
    counts: list[int],
    threads: list[int],
    worker: Worker,
) -> list[Case]:
    """``generate`` with a dynamic and a static cache on each thread count, each a round trip
    to the worker."""
    cases = []
    for cache in TORCH_CACHES:
        for n in threads:
            who = f"torch {cache} cache, {n} thread{'s' if n > 1 else ''}"
            for batch in prompts:
                for new in counts:
                    want = [batch, PROMPT + new]

                    def run(request: tuple = (dtype, batch, new, cache, n), want=want) -> list:
                        shape = worker.call(list(request))
                        assert shape == want, f"torch generate gave shape {shape}, not {want}"
                        return shape

                    cases.append(Case(f"{who}|{dtype}|{batch}|{new}", run, batch * new))
    return cases


def compare(dtype: str, batches: list[int], new: int, ours: Callable, worker: Worker) -> None:
    """Prints how many of texkit's greedy tokens equal torch's (the same weights)."""
    for batch in batches:
        theirs = np.array(worker.call([dtype, batch, -new, "dynamic", 1]))
        mine = ours(batch)
        same = int((mine == theirs).sum())
        first = (mine != theirs).any(axis=0).argmax() if same < mine.size else new
        print(
            f"  same weights, {dtype}, batch {batch}: texkit greedy = torch greedy for {same} of "
            f"{mine.size} new tokens (every row equal for the first {first})",
            flush=True,
        )


def report(cases: list[Case], batches: list[int], counts: list[int]) -> dict:
    """Prints a table per dtype: prefill ms, per-token ms and tokens/s for each batch."""
    seconds = {tuple(c.name.split("|")): c.seconds for c in cases}
    new = max(counts)
    figures: dict = {}
    for (who, dtype, batch, count), value in seconds.items():
        figures.setdefault(dtype, {}).setdefault(who, {})[(int(batch), int(count))] = value
    for dtype, rows in figures.items():
        header = ["what"]
        for batch in batches:
            header += [f"b{batch} prefill ms", f"b{batch} ms/token", f"b{batch} tokens/s"]
        lines = []
        for who, times in rows.items():
            line = [who]
            for batch in batches:
                first, last = times[(batch, 1)], times[(batch, new)]
                per_token = (last - first) / (new - 1)
                line += [f"{first * 1e3:.1f}", f"{per_token * 1e3:.1f}", batch * new / last]
            lines.append(line)
        print(f"\n{dtype}: prefill (1 new token), per token ((t{new} - t1) / {new - 1}), "
              f"tokens/s (batch * {new} / t{new})\n")  # fmt: skip
        print(table(header, lines))
    return figures


def ratios(figures: dict, batches: list[int], new: int) -> None:
    """Prints each library's best mode per dtype and texkit's best against the others' best."""
    best: dict = {}
    for dtype, rows in figures.items():
        for batch in batches:
            for who, times in rows.items():
                library = who.split()[0]
                rate = batch * new / times[(batch, new)]
                held = best.get((dtype, batch, library))
                if held is None or rate > held[1]:
                    best[(dtype, batch, library)] = (who, rate)
    lines = []
    for (dtype, batch, library), (who, rate) in sorted(best.items()):
        line = [dtype, batch, library, who, rate]
        texkit = best.get((dtype, batch, "texkit"))
        line.append(f"{texkit[1] / rate:.2f}" if texkit else "")
        lines.append(line)
    print("\nbest mode of each library (tokens/s); texkit's best / this one (> 1: texkit faster)\n")
    print(table(["dtype", "batch", "library", "best mode", "tokens/s", "texkit / it"], lines))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--budget", type=float, default=120.0, help="seconds of timed runs per figure, at most"
    )
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument(
        "--torch-threads", default=f"{os.cpu_count() or 1},1", help="thread counts (all CPUs, 1)"
    )
    parser.add_argument("--quick", action="store_true", help="a 2-layer, 64-dim model, 8 tokens")
    parser.add_argument(
        "--torch-python", default=None, help="the torch worker's Python (default: this one)"
    )
    parser.add_argument(
        "--skip",
        default="",
        help="contenders whose name starts so are left out, e.g. 'KerasHub,torch static'",
    )
    args = parser.parse_args(argv)
    config = dict(LLAMA_125M)
    if args.quick:
        config, args.new_tokens, args.repeats = dict(QUICK), 8, min(args.repeats, 2)
    batches = [int(b) for b in args.batches.split(",")]
    dtypes = args.dtypes.split(",")
    skip = tuple(s.strip().lower() for s in args.skip.split(",") if s.strip())
    threads = [int(n) for n in args.torch_threads.split(",")]
    counts = [1, args.new_tokens]
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    prompts = {b: rng.integers(1, config["vocab"] - 1, (b, PROMPT), np.int32) for b in batches}
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory() as folder:
        print("building transformers (torch), saving its weights", flush=True)
        spec = {"config": config, "prompts": {b: p.tolist() for b, p in prompts.items()}}
        spec["folder"] = folder
        with Worker(__file__, spec, args.torch_python) as worker:
            worker.wait_ready()
            cases = []
            for dtype in dtypes:
                if not "texkit".startswith(skip):
                    print(f"building texkit, {dtype}", flush=True)
                    texkit, ours = texkit_cases(folder, dtype, prompts, counts)
                    cases += texkit
                    compare(dtype, batches, args.new_tokens, ours, worker)
                if not "kerashub".startswith(skip):
                    print(f"building KerasHub, {dtype}", flush=True)
                    cases += kerashub_cases(config, dtype, prompts, counts)
                if not "torch".startswith(skip):
                    cases += torch_cases(dtype, prompts, counts, threads, worker)
            cases = [c for c in cases if not c.name.lower().startswith(skip)]
            # Every case's output is checked in run(), on the warm-up and every timed run.
            measure(cases, args.repeats, args.budget)
            round_trip = worker.round_trip()

    print()
    print(machine(*PACKAGES))
    print(
        f"model: {config['layers']} layers, {config['dim']} dims, {config['heads']} query heads, "
        f"{config['kv_heads']} key/value heads of {config['head_dim']}, SwiGLU {config['ffn']}, "
        f"vocabulary {config['vocab']} (untied), {parameters(config) / 1e6:.1f} M parameters; "
        f"batches {args.batches}, prompt {PROMPT}, {args.new_tokens} new tokens; torch threads "
        f"{args.torch_threads}; fastest of {args.repeats}; load average (1 min) "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after; torch figures include a round "
        f"trip to the torch worker process of {round_trip * 1e3:.2f} ms (an empty request's)"
    )
    figures = report(cases, batches, counts)
    ratios(figures, batches, args.new_tokens)
    command = " ".join(
        ["python benchmarks/llm_generation.py", *(sys.argv[1:] if argv is None else argv)]
    )
    print("\ncommand:", command)
    return figures


if __name__ == "__main__":
    main()
