"""int8 inference: speed, weight bytes and accuracy of ``tx.tasks.quantize``, against KerasHub.

Three parts (``--parts``, default all three; ``speed`` needs keras-hub, the others the real data
packages of the test suite):

* ``speed``: the same model shapes with random weights in float32, texkit int8 weight-only
  (``tx.tasks.quantize(module)``, the default: int8 weights, float products), texkit int8 with
  quantized inputs (``weight_only=False``: Keras' default int8, an int8 x int8 product), and
  KerasHub's own quantized model (``backbone.quantize("int8")``: Keras' default int8, inputs
  quantized, its embeddings too), each in a ``tf.function`` without and with XLA
  (``jit_compile``):

  - a MiniLM-shaped BERT forward (6 blocks of 384, 12 heads, 1,536 feed-forward, 30,522 words):
    a batch of 8 x 128 tokens, texkit ``BERTEncoder`` against KerasHub ``BertBackbone``;
  - a Llama-shaped 125M decoder (``llm_generation.py``'s ``LLAMA_125M``), greedy, batch 1,
    prompt of 16 ids: prefill (the time to 1 new token) and per token ((time to N - time to 1)
    / (N - 1), ``--new-tokens`` N), texkit ``LlamaDecoder`` against KerasHub ``LlamaCausalLM``
    (greedy sampler). texkit's int8 models are copies of its float model, so the greedy tokens
    are compared too.

  The weight bytes of each model (the sum of its variables' bytes) are printed beside.
* ``accuracy``: the BBC news classifier of ``examples/bert_classifier`` (trained with
  ``run.model_dir=DIR``; its checkpoint restored from ``--classifier-dir DIR``), test accuracy
  on the 426 test articles in float32 and after ``quantize`` (int8 weight-only, int8 with
  quantized inputs, int4).
* ``perplexity``: the GPT-2-shaped fixture with a real byte-level BPE tokenizer
  (``tests/fixtures/families/gpt2_bpe``: random weights, 2,000 tokens) on 20 BBC articles of 64
  tokens, float32 against int8 and int4: the change of perplexity (the weights are random, so
  only the change means anything), and the same for the other fixture decoders on random ids.

Each speed figure is the fastest of ``--repeats`` runs after a warm-up, in interleaved rounds
(``benchmarks/common.py``): compare ratios within one run.

    python benchmarks/quantization.py [--parts speed,accuracy,perplexity] [--repeats 3]
        [--new-tokens 32] [--classifier-dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from common import Case, machine, measure, table  # noqa: E402
from llm_generation import LLAMA_125M, QUICK  # noqa: E402

import texkit as tx  # noqa: E402

MINILM = {
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
}
MINILM_QUICK = {**MINILM, "num_hidden_layers": 2, "vocab_size": 1000}
PROMPT = 16
PRECISIONS = ("float32", "int8 weight-only", "int8 inputs too")
KERASHUB_PRECISIONS = ("float32", "int8 (its quantize)")


def weight_mb(variables: list) -> float:
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables) / 2**20


def texkit_quantized(make: callable, source: keras.layers.Layer, precision: str) -> object:
    """A copy of the built module ``source`` (``make()`` builds a fresh one) in ``precision``."""
    if precision == "float32":
        return source
    module = make()
    module.set_weights(source.get_weights())
    tx.tasks.quantize(module, "int8", weight_only=precision == "int8 weight-only")
    return module


def bert_cases(config: dict, batch: int, length: int) -> tuple[list[Case], dict]:
    import keras_hub

    rng = np.random.default_rng(0)
    ids = rng.integers(1000 % config["vocab_size"], config["vocab_size"], (batch, length))
    ids = tf.constant(ids, tf.int32)
    lengths = tf.fill([batch], length)
    segments = tf.zeros_like(ids)

    def make() -> object:
        encoder = tx.modules.BERTEncoder(hparams=config)
        encoder(ids, sequence_length=lengths, segment_ids=segments)
        return encoder

    source = make()
    cases, sizes = [], {}
    for precision in PRECISIONS:
        encoder = texkit_quantized(make, source, precision)
        sizes[f"texkit|{precision}"] = weight_mb(encoder.weights)
        for mode, jit in (("tf.function", False), ("XLA", True)):
            call = tf.function(
                lambda e=encoder: e(ids, sequence_length=lengths, segment_ids=segments)[0],
                jit_compile=jit,
            )
            cases.append(Case(f"texkit {mode}|{precision}", lambda c=call: c().numpy(), batch))
    features = {"token_ids": ids, "segment_ids": segments, "padding_mask": tf.ones_like(ids)}
    for precision in KERASHUB_PRECISIONS:
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=config["vocab_size"],
            num_layers=config["num_hidden_layers"],
            num_heads=config["num_attention_heads"],
            hidden_dim=config["hidden_size"],
            intermediate_dim=config["intermediate_size"],
            max_sequence_length=config["max_position_embeddings"],
            dropout=0.0,
        )
        if precision != "float32":
            backbone.quantize("int8")
        sizes[f"KerasHub|{precision}"] = weight_mb(backbone.weights)
        for mode, jit in (("no XLA", False), ("XLA", True)):
            call = tf.function(lambda b=backbone: b(features)["sequence_output"], jit_compile=jit)
            cases.append(Case(f"KerasHub {mode}|{precision}", lambda c=call: c().numpy(), batch))
    return cases, sizes


def llama_hparams(config: dict) -> dict:
    return {
        "vocab_size": config["vocab"],
        "dim": config["dim"],
        "num_blocks": config["layers"],
        "attention": {
            "num_heads": config["heads"],
            "num_kv_heads": config["kv_heads"],
            "head_dim": config["head_dim"],
        },
        "rotary": {"theta": config["theta"]},
        "max_position_embeddings": config["positions"],
        "feed_forward": {"dim": config["ffn"]},
        "tie_embeddings": False,
    }


def llama_cases(config: dict, counts: list[int]) -> tuple[list[Case], dict, dict]:
    import keras_hub

    prompt = np.random.default_rng(0).integers(1, config["vocab"], (1, PROMPT)).astype(np.int32)
    context, lengths = tf.constant(prompt), tf.constant([PROMPT])

    def make() -> object:
        keras.utils.set_random_seed(0)
        decoder = tx.modules.LlamaDecoder(hparams=llama_hparams(config))
        decoder(inputs=context, sequence_length=lengths, decoding_strategy="train_greedy")
        return decoder

    def greedy(decoder: object, steps: int) -> tf.Tensor:
        outputs, _, _ = decoder(
            decoding_strategy="infer_greedy",
            context=context,
            context_sequence_length=lengths,
            end_token=None,
            max_decoding_length=steps,
        )
        return outputs.sample_id

    source = make()
    cases, sizes, tokens = [], {}, {}
    for precision in PRECISIONS:
        decoder = texkit_quantized(make, source, precision)
        sizes[f"texkit|{precision}"] = weight_mb(decoder.weights)
        for mode, jit in (("tf.function", False), ("XLA", True)):
            compiled = tf.function(greedy, jit_compile=jit)
            for new in counts:
                run = lambda c=compiled, d=decoder, n=new: c(d, PROMPT - 1 + n).numpy()  # noqa: E731
                cases.append(Case(f"texkit {mode}|{precision}|{new}", run, new))
                if jit and new == max(counts):
                    tokens[precision] = run
    for precision in KERASHUB_PRECISIONS:
        backbone = keras_hub.models.LlamaBackbone(
            vocabulary_size=config["vocab"],
            num_layers=config["layers"],
            num_query_heads=config["heads"],
            hidden_dim=config["dim"],
            intermediate_dim=config["ffn"],
            num_key_value_heads=config["kv_heads"],
            rope_max_wavelength=config["theta"],
            dropout=0.0,
            tie_word_embeddings=False,
        )
        if precision != "float32":
            backbone.quantize("int8")
        sizes[f"KerasHub|{precision}"] = weight_mb(backbone.weights)
        for mode, jit in (("no XLA", False), ("XLA", True)):
            for new in counts:
                width = PROMPT + new
                token_ids = np.zeros((1, width), np.int32)
                token_ids[:, :PROMPT] = prompt
                mask = np.zeros((1, width), bool)
                mask[:, :PROMPT] = True
                model = keras_hub.models.LlamaCausalLM(backbone=backbone, preprocessor=None)
                model.compile(sampler=keras_hub.samplers.GreedySampler(), jit_compile=jit)
                inputs = {"token_ids": token_ids, "padding_mask": mask}
                run = lambda m=model, i=inputs: m.generate(dict(i), stop_token_ids=None)  # noqa: E731
                cases.append(Case(f"KerasHub {mode}|{precision}|{new}", run, new))
    return cases, sizes, tokens


def speed(args: argparse.Namespace) -> None:
    import keras_hub  # noqa: F401 - fails early when the peer is missing

    # Keras' Model.quantize warns once for every layer that has no quantized form (norms...).
    warnings.filterwarnings("ignore", message=".*does not have a `quantize` method")

    quick = args.quick
    print("MiniLM-shaped BERT forward, batch 8 x 128 tokens", flush=True)
    cases, sizes = bert_cases(MINILM_QUICK if quick else MINILM, 8, 32 if quick else 128)
    measure(cases, args.repeats, args.budget)
    rows = []
    for case in cases:
        who, precision = case.name.split("|")
        library = who.split()[0]
        float_case = next(c for c in cases if c.name == f"{who}|float32")
        rows.append(
            [
                who,
                precision,
                f"{1e3 * case.seconds:.1f}",
                f"{float_case.seconds / case.seconds:.2f}",
                f"{sizes[f'{library}|{precision}']:.1f}",
            ]
        )
    print(
        table(
            ["contender, mode", "precision", "ms / batch", "speed vs float32", "weights MB"], rows
        ),
        flush=True,
    )

    counts = [1, args.new_tokens]
    print(f"\nLlama-shaped 125M decoder, greedy, batch 1, {args.new_tokens} new tokens", flush=True)
    cases, sizes, tokens = llama_cases(QUICK if quick else LLAMA_125M, counts)
    measure(cases, args.repeats, args.budget)
    by_name = {case.name: case.seconds for case in cases}
    rows = []
    for case in cases:
        who, precision, new = case.name.split("|")
        if int(new) != counts[-1]:
            continue
        first = by_name[f"{who}|{precision}|1"]
        per_token = (case.seconds - first) / (counts[-1] - 1)
        float_token = (by_name[f"{who}|float32|{new}"] - by_name[f"{who}|float32|1"]) / (
            counts[-1] - 1
        )
        library = who.split()[0]
        rows.append(
            [
                who,
                precision,
                f"{1e3 * first:.1f}",
                f"{1e3 * per_token:.1f}",
                f"{float_token / per_token:.2f}",
                f"{sizes[f'{library}|{precision}']:.1f}",
            ]
        )
    print(
        table(
            [
                "contender, mode",
                "precision",
                "prefill ms",
                "ms / token",
                "speed vs float32",
                "weights MB",
            ],
            rows,
        )
    )
    reference = tokens["float32"]()[:, PROMPT - 1 :]  # after the 15 forced prompt tokens
    for precision in PRECISIONS[1:]:
        same = int((tokens[precision]()[:, PROMPT - 1 :] == reference).sum())
        print(
            f"  texkit {precision}: greedy tokens equal to float32's: {same} of "
            f"{reference.size} new tokens (random weights)"
        )


def accuracy_of(model: keras.Model, test: tf.data.Dataset) -> tuple[int, int]:
    """(right, total) of ``model``'s argmax on ``test``."""
    predict = tf.function(lambda features: tf.argmax(model(features, training=False), -1))
    right = total = 0
    for features, labels in test:
        right += int((predict(features).numpy() == labels.numpy()).sum())
        total += int(labels.shape[0])
    return right, total


def classifier_accuracy(args: argparse.Namespace) -> None:
    """The trained BBC classifier's test accuracy in float32 and quantized."""
    from examples.bert_classifier import train
    from examples.common.experiment_cli import experiment_from_args

    hparams = experiment_from_args(
        [f"run.model_dir={args.classifier_dir}"], train.__doc__, train.CONFIG
    )
    trainer = tx.run.Trainer.from_hparams(hparams)
    step = trainer.restore()
    trained = trainer.model
    rows = []
    for precision, mode, weight_only in (
        ("float32", None, True),
        ("int8 weight-only", "int8", True),
        ("int8 inputs too", "int8", False),
        ("int4 (tables int8)", "int4", True),
    ):
        model = keras.Model.from_config(trained.get_config())
        model.set_weights(trained.get_weights())
        classifier = next(x for x in model.layers if isinstance(x, tx.modules.BERTClassifier))
        if mode is not None:
            tx.tasks.quantize(classifier, mode, weight_only=weight_only)
        right, total = accuracy_of(model, trainer.data["test"])
        rows.append(
            [
                precision,
                f"{right} / {total}",
                f"{100 * right / total:.2f}",
                f"{weight_mb(classifier.weights):.1f}",
            ]
        )
    print(f"BBC news classifier (step {step}), test articles")
    print(table(["precision", "right", "accuracy %", "classifier weights MB"], rows), flush=True)


def perplexity(module: object, ids: np.ndarray, lengths: np.ndarray) -> float:
    """exp of the mean negative log-likelihood of each next token of ``ids``."""
    outputs, _, _ = module(
        inputs=ids[:, :-1], sequence_length=lengths - 1, decoding_strategy="train_greedy"
    )
    logp = tf.nn.log_softmax(outputs.logits).numpy()
    total, count = 0.0, 0
    for row, n in enumerate(lengths - 1):
        total -= logp[row, np.arange(n), ids[row, 1 : n + 1]].sum()
        count += n
    return math.exp(total / count)


def bbc_articles(count: int) -> list[str]:
    from examples.common.bbc_news import load_bbc_news

    return [article.text for article in load_bbc_news().test[:count]]


def perplexities(args: argparse.Namespace) -> None:
    """Perplexity of the fixture decoders in float32, int8 and int4 (random weights)."""
    folder = os.path.join(ROOT, "tests", "fixtures", "families", "gpt2_bpe")
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder)
    pieces = [
        tokenizer.encode(tf.constant([text]))["input_ids"].numpy()[0][:64]
        for text in bbc_articles(20)
    ]
    texts = (np.stack(pieces).astype(np.int32), np.full([len(pieces)], 64, np.int32))
    rng = np.random.default_rng(0)
    random_ids = (rng.integers(3, 99, (20, 32)).astype(np.int32), np.full([20], 32, np.int32))
    rows = []
    for name, path, (ids, lengths) in (
        ("GPT-2 BPE fixture, BBC text", folder, texts),
        ("GPT-2 fixture, random ids", os.path.join("families", "gpt2"), random_ids),
        ("Llama fixture, random ids", os.path.join("llm", "llama"), random_ids),
        ("Qwen2 fixture, random ids", os.path.join("llm", "qwen2"), random_ids),
    ):
        path = os.path.join(ROOT, "tests", "fixtures", path)
        row = [name]
        for mode, weight_only in ((None, True), ("int8", True), ("int8", False), ("int4", True)):
            module = tx.pretrained.from_pretrained(path)
            module(inputs=ids[:1, :2], decoding_strategy="train_greedy")
            if mode is not None:
                tx.tasks.quantize(module, mode, weight_only=weight_only)
            row.append(perplexity(module, ids, lengths))
        rows.append(row[:2] + [f"{p:.3f} ({100 * (p / row[1] - 1):+.2f}%)" for p in row[2:]])
    rows = [[r[0], f"{r[1]:.3f}", *r[2:]] for r in rows]
    print(table(["model, text", "float32", "int8 weight-only", "int8 inputs too", "int4"], rows))


def t5_cosines() -> None:
    """The smallest cosine of a row of T5 logits, float32 against quantized: the fixture (drawn
    with initializer_factor=4.0) and the same model drawn at the usual scale (1.0)."""
    folder = os.path.join(ROOT, "tests", "fixtures", "families", "t5")
    ids = np.random.default_rng(7).integers(3, 99, size=(4, 9)).astype(np.int32)
    feed = {"input_ids": ids, "decoder_input_ids": ids[:, :5]}
    rows = []
    for name, factor in (("T5 fixture (initializer_factor 4.0)", None), ("the same at 1.0", 1.0)):
        row = [name]
        for mode, weight_only in (("int8", True), ("int8", False), ("int4", True)):
            keras.utils.set_random_seed(0)
            t5 = tx.modules.T5EncoderDecoder.from_pretrained(folder)
            if factor is not None:
                t5 = tx.modules.T5EncoderDecoder(
                    hparams={**t5.hparams.todict(), "initializer_factor": factor, "name": "t5"}
                )
            expected = t5(**feed).logits.numpy().reshape(-1, 99)
            tx.tasks.quantize(t5, mode, weight_only=weight_only)
            got = t5(**feed).logits.numpy().reshape(-1, 99)
            cos = (expected * got).sum(-1) / np.linalg.norm(expected, axis=-1)
            row.append(f"{(cos / np.linalg.norm(got, axis=-1)).min():.4f}")
        rows.append(row)
    print(table(["T5 logits, min row cosine", "int8 weight-only", "int8 inputs too", "int4"], rows))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="speed,accuracy,perplexity")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument(
        "--classifier-dir", default=None, help="run.model_dir of a trained examples/bert_classifier"
    )
    parser.add_argument("--quick", action="store_true", help="small shapes, to try the script")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    print(machine("tensorflow", "keras", "keras-hub"), flush=True)
    print("python benchmarks/quantization.py " + " ".join(argv or sys.argv[1:]), flush=True)
    if "speed" in parts:
        speed(args)
    if "accuracy" in parts:
        if args.classifier_dir is None:
            print("accuracy: give --classifier-dir (train examples/bert_classifier first)")
        else:
            classifier_accuracy(args)
    if "perplexity" in parts:
        perplexities(args)
        t5_cosines()


if __name__ == "__main__":
    main()
