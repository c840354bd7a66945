"""Generation speed of a GPT-2-small-sized model: texkit, KerasHub and Hugging Face (torch).

The same model shape everywhere, with random weights (each library's own initializers; speed does
not depend on the values): 12 pre-norm blocks, 768 dims, 12 heads, a 3,072-unit GELU feed-forward,
a 50,257-token vocabulary tied to the output layer, 1,024 learned positions (GPT-2 small). A batch
of ``--batch`` 4 rows, each a prompt of 16 random token ids (the same ids for every library),
continued by ``--new-tokens`` 128 tokens, greedily and by beam search with 4 beams. The figure is
generated tokens per second: ``batch * new tokens / seconds`` (for beam search too: the 4 beams
of a row count as one row's tokens, not four). Every library is made to run all 128 steps, and
every output's length is checked:

* texkit: ``tx.modules.GPT2Decoder`` called with ``decoding_strategy="infer_greedy"`` and its
  ``beam_search(beam_width=4, length_penalty=0)``, both with ``context=`` the prompts,
  ``end_token=None`` (no end token) and ``max_decoding_length = 15 + new tokens`` (the decoder
  starts from the prompt's first token; the next 15 are forced, then it decodes on its own), each
  in a ``tf.function``, without and with ``jit_compile=True``. texkit runs the prompt through its
  blocks in one pass, and its greedy loop also collects the logits of every step (``[batch,
  time, vocab]`` float32, part of its output); both are in its figures.
* KerasHub: ``keras_hub.models.GPT2CausalLM(backbone=GPT2Backbone(...), preprocessor=None)``,
  compiled with ``sampler="greedy"`` or ``sampler=BeamSampler(num_beams=4)``, ``generate`` on a
  dict of ``token_ids`` / ``padding_mask`` of ``[batch, 16 + new tokens]`` (without a
  preprocessor ``generate`` ignores ``max_length``: the inputs' padded width is the length, and
  ``stop_token_ids`` must be given: ``None``, so it never stops early). ``generate`` wraps its
  loop in a ``tf.function`` with ``jit_compile=model.jit_compile``; Keras resolves its default
  ("auto") to False on a CPU-only machine, so both are measured: compiled with ``jit_compile``
  False and True (one task model per case, all on one backbone: ``compile`` resets the
  compiled generate function). KerasHub fills its cache with one forward pass over the padded
  inputs, prompt and empty slots alike, then runs the 128 steps.
* Hugging Face: ``transformers.GPT2LMHeadModel(GPT2Config(...))`` on torch (CPU), under
  ``torch.inference_mode``, ``torch.set_num_threads(--torch-threads)`` (default
  ``os.cpu_count()``), ``generate(
  max_new_tokens=N, min_new_tokens=N, do_sample=False, num_beams=1 or 4)``: ``min_new_tokens``
  masks the end token (here the last id) until N tokens are out and ``max_new_tokens`` stops
  there, so every row (every beam) gets exactly N tokens; default attention implementation,
  key/value cache on. torch runs in a worker process of its own (started by this script, which
  waits while it works, and never importing TensorFlow): in one process with TensorFlow, once
  TensorFlow had run, the same ``generate`` took 3 to 6 times as long on the 2-core machine
  this was written on. The figure is the round trip to the worker (``benchmarks/common.py``'s
  ``Worker``: a JSON request and response over pipes; an empty request's round trip is
  printed beside the figures). When other jobs load the machine, torch's OpenMP threads wait
  for each other at every op: there, with the ``--quick`` model, ``--torch-threads 1``
  generated some 50 times as fast as 2 threads (2 CPUs); give the thread count that suits the
  machine, and say which.

A sanity check is printed too: texkit's greedy tokens must be the argmax chain of its own
teacher-forced logits (the same model on the prompt plus the generated tokens so far), for the
first few generated tokens.

``--pretrained FOLDER`` runs texkit and torch on the weights of a Hugging Face GPT-2 folder
(``config.json`` + ``model.safetensors``) instead: texkit through
``GPT2Decoder.from_pretrained``, torch through ``GPT2LMHeadModel.from_pretrained``; the model's
shape is the folder's. KerasHub, which cannot read such a folder without its own conversion,
keeps random weights of the same shape (its speed does not depend on them). The two loaded
models' greedy continuations are compared token by token and the count printed.

Each figure is the fastest of ``--repeats`` runs after a warm-up run (tracing, compiling), taken
in interleaved rounds (``benchmarks/common.py``); a figure whose runs have taken ``--budget``
seconds is not run again.

    python benchmarks/generation.py [--repeats 3] [--budget 120] [--new-tokens 128] [--batch 4]
        [--torch-threads N] [--quick] [--pretrained FOLDER] [--torch-python PYTHON]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Case, Worker, machine, measure, serve_if_worker, table  # noqa: E402


def torch_worker(spec: dict) -> Callable[[int], list[int]]:
    """The Hugging Face contender, in the worker process (which never imports TensorFlow).

    Builds the model from ``spec``; each request is a beam count, answered with the generated
    output's shape.
    """
    import torch
    import transformers

    config, new_tokens = spec["config"], spec["new_tokens"]
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    end = config["vocab"] - 1  # the end token: masked by min_new_tokens until the last token
    if spec.get("pretrained"):
        model = transformers.GPT2LMHeadModel.from_pretrained(spec["pretrained"]).eval()
    else:
        model = transformers.GPT2LMHeadModel(
            transformers.GPT2Config(
                vocab_size=config["vocab"],
                n_positions=config["positions"],
                n_embd=config["dim"],
                n_layer=config["layers"],
                n_head=config["heads"],
                n_inner=config["ffn"],
                bos_token_id=end,
                eos_token_id=end,
            )
        ).eval()
    ids = torch.tensor(spec["prompt"], dtype=torch.long)
    mask = torch.ones_like(ids)

    def generate(beams: int) -> list:
        """The output's shape; for ``-1``, greedy decoding's new tokens (for the comparison)."""
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                min_new_tokens=new_tokens, do_sample=False, num_beams=abs(beams),
                early_stopping=False, pad_token_id=end, eos_token_id=end,
            )  # fmt: skip
        if beams < 0:
            return out[:, ids.shape[1] :].tolist()
        return list(out.shape)

    return generate


if __name__ == "__main__":
    serve_if_worker(torch_worker)  # in the worker: serves, then exits

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import texkit as tx  # noqa: E402

GPT2_SMALL = {"layers": 12, "dim": 768, "heads": 12, "ffn": 3072, "vocab": 50257, "positions": 1024}
QUICK = {"layers": 2, "dim": 64, "heads": 2, "ffn": 256, "vocab": 1000, "positions": 1024}
PROMPT = 16
BEAMS = 4
CHECKED_TOKENS = 8
PACKAGES = ("tensorflow", "keras", "keras-hub", "torch", "transformers")


def texkit_model(config: dict) -> tx.modules.GPT2Decoder:
    return tx.modules.GPT2Decoder(
        {
            "vocab_size": config["vocab"],
            "dim": config["dim"],
            "decoder": {
                "num_blocks": config["layers"],
                "multihead_attention": {"num_heads": config["heads"]},
                "poswise_feedforward": {"dim": config["ffn"]},
                "position_embedder": {"position_size": config["positions"]},
            },
        }
    )


def config_of_folder(folder: str) -> dict:
    """The benchmark's model description of a Hugging Face GPT-2 folder."""
    import json

    with open(os.path.join(folder, "config.json")) as f:
        hf = json.load(f)
    return {"layers": hf["n_layer"], "dim": hf["n_embd"], "heads": hf["n_head"],
            "ffn": hf.get("n_inner") or 4 * hf["n_embd"], "vocab": hf["vocab_size"],
            "positions": hf["n_positions"]}  # fmt: skip


def texkit_cases(
    config: dict, prompt: np.ndarray, new_tokens: int, pretrained: str | None = None
) -> tuple[list[Case], tx.modules.GPT2Decoder]:
    """Greedy and beam search, without and with XLA; checks lengths and the argmax chain."""
    lm = tx.modules.GPT2Decoder.from_pretrained(pretrained) if pretrained else texkit_model(config)
    context = tf.constant(prompt, tf.int32)
    batch = prompt.shape[0]
    steps = PROMPT - 1 + new_tokens  # sample_id holds the 15 forced tokens, then the new ones

    def greedy(ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        outputs, _, lengths = lm(
            decoding_strategy="infer_greedy", context=ids, end_token=None, max_decoding_length=steps
        )
        return outputs.sample_id, lengths

    def beam(ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        search = lm.beam_search(BEAMS, 0.0, end_token=None, max_decoding_length=steps, context=ids)
        return search.ids, search.lengths

    cases = []
    work = batch * new_tokens
    for mode, jit in (("tf.function", False), ("XLA", True)):
        for strategy, fn in (("greedy", greedy), (f"beam {BEAMS}", beam)):
            compiled = tf.function(fn, jit_compile=jit)

            def run(compiled: Callable = compiled, strategy: str = strategy) -> np.ndarray:
                ids, lengths = compiled(context)
                ids, lengths = ids.numpy(), lengths.numpy()
                want = (batch, steps) if strategy == "greedy" else (batch, BEAMS, steps)
                assert ids.shape == want and (lengths == steps).all(), (ids.shape, lengths)
                return ids

            cases.append(Case(f"texkit {mode}|{strategy}", run, work))

    # The argmax chain of the teacher-forced logits on the prompt + what greedy generated.
    lm(inputs=context)  # builds the model, outside the tf.functions
    sample_id = cases[0].run()  # tf.function greedy; checks the lengths
    assert (sample_id[:, : PROMPT - 1] == prompt[:, 1:]).all(), "the prompt was not forced"
    check = min(CHECKED_TOKENS, new_tokens)
    sequence = np.concatenate([prompt[:, :1], sample_id[:, : PROMPT - 1 + check]], axis=1)
    outputs, _, _ = lm(inputs=tf.constant(sequence[:, :-1]))
    chain = tf.argmax(outputs.logits[:, PROMPT - 1 :], axis=-1, output_type=tf.int32).numpy()
    generated = sample_id[:, PROMPT - 1 : PROMPT - 1 + check]
    same = int((chain == generated).sum())
    verdict = "" if same == generated.size else " MISMATCH"
    print(
        f"  sanity: texkit greedy = argmax of its teacher-forced logits for {same} of "
        f"{generated.size} tokens (the first {check} of each row){verdict}",
        flush=True,
    )
    return cases, lm


def kerashub_cases(config: dict, prompt: np.ndarray, new_tokens: int) -> list[Case]:
    import keras_hub

    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=config["vocab"],
        num_layers=config["layers"],
        num_heads=config["heads"],
        hidden_dim=config["dim"],
        intermediate_dim=config["ffn"],
        dropout=0.0,
        max_sequence_length=config["positions"],
    )
    batch = prompt.shape[0]
    width = PROMPT + new_tokens
    token_ids = np.zeros((batch, width), np.int32)
    token_ids[:, :PROMPT] = prompt
    padding_mask = np.zeros((batch, width), bool)
    padding_mask[:, :PROMPT] = True
    inputs = {"token_ids": token_ids, "padding_mask": padding_mask}
    samplers = {"greedy": "greedy", f"beam {BEAMS}": keras_hub.samplers.BeamSampler(BEAMS)}
    cases = []
    for mode, jit in (("no XLA", False), ("XLA", True)):
        for strategy, sampler in samplers.items():
            # One task model per case, all on the same backbone: compile() sets the sampler and
            # jit_compile and drops the compiled generate function, so one model cannot serve
            # interleaved cases.
            model = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
            model.compile(sampler=sampler, jit_compile=jit)
            assert model.jit_compile == jit

            def run(model: keras.Model = model) -> np.ndarray:
                out = model.generate(dict(inputs), stop_token_ids=None)
                ids = np.asarray(out["token_ids"])
                assert ids.shape == (batch, width) and np.asarray(out["padding_mask"]).all()
                assert (ids[:, :PROMPT] == prompt).all()
                return ids

            cases.append(Case(f"KerasHub {mode}|{strategy}", run, batch * new_tokens))
    return cases


def torch_cases(config: dict, prompt: np.ndarray, new_tokens: int, worker: Worker) -> list[Case]:
    """Greedy and beam search, each a round trip to the torch worker process."""
    want = [prompt.shape[0], PROMPT + new_tokens]
    cases = []
    for strategy, beams in (("greedy", 1), (f"beam {BEAMS}", BEAMS)):

        def run(beams: int = beams) -> list[int]:
            shape = worker.call(beams)
            assert shape == want, f"torch generate gave shape {shape}, not {want}"
            return shape

        cases.append(Case(f"torch|{strategy}", run, prompt.shape[0] * new_tokens))
    return cases


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--budget", type=float, default=120.0, help="seconds of timed runs per figure, at most"
    )
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument(
        "--torch-threads", type=int, default=os.cpu_count() or 1, help="default: all CPUs"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a 2-layer, 64-dim, 1,000-token model, 8 tokens"
    )
    parser.add_argument(
        "--pretrained", default=None, help="a Hugging Face GPT-2 folder: texkit and torch load it"
    )
    parser.add_argument(
        "--torch-python", default=None, help="the torch worker's Python (default: this one)"
    )
    args = parser.parse_args(argv)
    config = dict(GPT2_SMALL)
    if args.quick:
        config, args.new_tokens, args.repeats = dict(QUICK), 8, min(args.repeats, 2)
    if args.pretrained:
        config = config_of_folder(args.pretrained)
    keras.utils.set_random_seed(0)
    prompt = np.random.default_rng(0).integers(0, config["vocab"] - 1, (args.batch, PROMPT))
    prompt = prompt.astype(np.int32)
    load_before = os.getloadavg()[0]

    print("building texkit", flush=True)
    cases, lm = texkit_cases(config, prompt, args.new_tokens, args.pretrained)
    print("building KerasHub", flush=True)
    cases += kerashub_cases(config, prompt, args.new_tokens)
    print("building transformers (torch)", flush=True)
    spec = {"config": config, "prompt": prompt.tolist(), "new_tokens": args.new_tokens}
    spec["threads"] = args.torch_threads
    spec["pretrained"] = args.pretrained
    with Worker(__file__, spec, args.torch_python) as worker:
        worker.wait_ready()
        cases += torch_cases(config, prompt, args.new_tokens, worker)
        if args.pretrained:
            # The same weights: texkit's greedy continuation against torch's, token by token.
            theirs = np.array(worker.call(-1))
            ours = cases[0].run()[:, PROMPT - 1 :]
            same = int((ours == theirs).sum())
            print(
                f"  loaded weights: texkit greedy = torch greedy for {same} of {ours.size} "
                "new tokens",
                flush=True,
            )
        # Every case's output length is checked in run(), on the warm-up and every timed run.
        measure(cases, args.repeats, args.budget)
        round_trip = worker.round_trip()

    rates: dict[str, dict[str, float]] = {}
    for case in cases:
        who, strategy = case.name.split("|")
        rates.setdefault(who, {})[strategy] = case.rate
    strategies = ["greedy", f"beam {BEAMS}"]

    print()
    print(machine(*PACKAGES))
    print(
        f"weights: {args.pretrained or 'random'} (KerasHub: random); "
        f"model: {config['layers']} layers, {config['dim']} dims, {config['heads']} heads, "
        f"feed-forward {config['ffn']}, vocabulary {config['vocab']}, {config['positions']} "
        f"positions; batch {args.batch}, prompt {PROMPT}, {args.new_tokens} new tokens; torch "
        f"threads {args.torch_threads}; "
        f"fastest of {args.repeats}; load average (1 min) {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after; torch figures include a round trip to the torch "
        f"worker process of {round_trip * 1e3:.2f} ms (an empty request's)"
    )
    print("\ngenerated tokens/s (batch * new tokens / seconds; beam search: beams not counted)\n")
    print(
        table(["what", *strategies], [[w, *(r[s] for s in strategies)] for w, r in rates.items()])
    )
    print("\nseconds per call\n")
    seconds = {case.name: case.seconds for case in cases}
    print(
        table(
            ["what", *strategies],
            [[w, *(f"{seconds[f'{w}|{s}']:.3f}" for s in strategies)] for w in rates],
        )
    )
    ratios = [
        ("texkit tf.function / KerasHub no XLA", "texkit tf.function", "KerasHub no XLA"),
        ("texkit XLA / KerasHub XLA", "texkit XLA", "KerasHub XLA"),
        ("texkit tf.function / torch", "texkit tf.function", "torch"),
        ("texkit XLA / torch", "texkit XLA", "torch"),
    ]
    print("\nratios of tokens/s (> 1: texkit faster)\n")
    print(
        table(
            ["ratio", *strategies],
            [
                [name, *(f"{rates[a][s] / rates[b][s]:.2f}" for s in strategies)]
                for name, a, b in ratios
            ],
        )
    )
    command = " ".join(
        ["python benchmarks/generation.py", *(sys.argv[1:] if argv is None else argv)]
    )
    print("\ncommand:", command)
    return rates


if __name__ == "__main__":
    main()
