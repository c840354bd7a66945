"""A variational autoencoder of Bible verses (Bowman et al., 2016; Texar's ``vae_text``).

The text is the King James side of the Bible corpus of ``examples/common/data`` with its fixed
split by book (``examples/common/bible_corpus.py``): lowercased words and punctuation, one verse a
line, read by ``tx.data.MonoTextData`` as ``<BOS> verse <EOS>``. The model is Texar's:

* ``WordEmbedder`` and ``UnidirectionalRNNEncoder`` (LSTM) over the verse; an
  ``MLPTransformConnector`` maps the encoder's final state to the mean and log variance of the
  posterior, a ``tx.core.DiagonalGaussian``;
* ``ReparameterizedStochasticConnector`` draws the latent code ``z`` and maps it to what the
  decoder takes: with ``decoder_type: lstm`` the initial state of a ``BasicRNNDecoder`` (``z`` is
  also appended to every input embedding, as in Texar), with ``decoder_type: transformer`` the
  one-step memory of a ``TransformerDecoder`` (output tied to its embeddings);
* the loss is the reconstruction NLL plus the KL term ``tx.learning.gaussian_kl`` weighted by
  ``tx.learning.KLAnnealing`` (Texar's ``kl_anneal_hparams``), with
  ``tx.learning.word_dropout`` on the decoder's inputs (``1 - word_keep_prob`` of the tokens
  become ``<UNK>``, never ``<BOS>``); trained through ``tx.run.Trainer``.

After training it reports on the test books, with weight 1 on the KL term as Texar did: the
reconstruction NLL and KL per verse, their sum (the negative ELBO, an upper bound of ``-log
p(x)``) and its perplexity ``exp(sum / tokens)`` (every word and each ``<EOS>`` counted), and the
importance-weighted NLL of ``tx.learning.importance_weighted_nll`` (``K`` posterior samples per
verse, a tighter bound) with its perplexity. It then decodes verses from ``z ~ N(0, I)`` and
greedy decodings along the line between the posterior means of two test verses.

Measured with ``config.yaml`` on 2 shared CPU cores (``README.md`` there has the details): test
perplexity 107.60 (importance-weighted 107.07, KL 0.39 nats per verse: the LSTM decoder all but
ignores the code) with the LSTM decoder, 85.85 (83.69, KL 2.26) with the Transformer.

From the repository root:

    python -m examples.text_vae.train --config examples/text_vae/config.yaml
    python -m examples.text_vae.train --config examples/text_vae/config.yaml \
        model.hparams.decoder_type=transformer model.hparams.dec_emb_hparams.dropout_rate=0
    python -m examples.text_vae.train --config examples/text_vae/config.yaml --quick
"""

from __future__ import annotations

import math
import os
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.bible_corpus import load_bible
from examples.common.bible_translation import tokenize
from examples.common.command_line import example_parser, quick_note, read_config
from texkit.core.rnn_cells import default_rnn_cell_hparams

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.yaml")

# --quick: a few hundred verses, tiny sizes and a few steps, to check the whole path quickly.
QUICK = [
    "data.hparams.max_train_verses=600",
    "data.hparams.max_eval_verses=24",
    "data.hparams.vocab_size=800",
    "data.hparams.batch_size=16",
    "model.hparams.latent_dims=8",
    "model.hparams.enc_emb_hparams.dim=16",
    "model.hparams.dec_emb_hparams.dim=32",
    "model.hparams.enc_cell_hparams.kwargs.units=16",
    "model.hparams.dec_cell_hparams.kwargs.units=32",
    "model.hparams.trans_hparams.dim=32",
    "model.hparams.trans_hparams.num_blocks=1",
    "model.hparams.trans_hparams.multihead_attention.num_heads=2",
    "model.hparams.trans_hparams.poswise_feedforward.dim=64",
    "run.train_steps=20",
    "run.jit_compile=false",  # compiling with XLA takes longer than the tiny run
    "run.checkpoint_every_steps=10",
    "report.iw_samples=3",
    "report.prior_samples=2",
    "report.interpolation_steps=3",
    "report.max_decoding_length=20",
]
# What the full run reaches (the README's figure), said at the end of a quick run.
FULL_RUN = "test NLL per verse 149.62 (LSTM decoder) / 142.40 (Transformer decoder)"

REPORT_DEFAULTS = {
    "iw_samples": 10,
    "prior_samples": 5,
    "interpolate": [0, 1],
    "interpolation_steps": 5,
    "max_decoding_length": 40,
    "seed": 0,
    "name": "report",
}


# -- data ----------------------------------------------------------------------------------------


@tx.run.data_builder(
    {
        "work_dir": "",
        "vocab_size": 5000,
        "max_seq_length": 40,
        "max_train_verses": 0,
        "max_eval_verses": 0,
        "batch_size": 32,
        "seed": 0,
        "name": "bible_verses",
    }
)
def bible_verses(hparams: tx.HParams) -> tx.run.Data:
    """The English verses, one a line, read by ``MonoTextData``.

    Training verses longer than ``max_seq_length`` tokens are left out (counted in the data
    report) and the others padded to it (static shapes, for XLA); dev and test keep every verse.
    ``max_train_verses`` / ``max_eval_verses`` (0: all) take the first verses of the training
    split and of the dev and test splits. ``work_dir: ""`` writes to a temporary folder.
    """
    bible = load_bible()
    limits = {"train": hparams.max_train_verses, "dev": hparams.max_eval_verses}
    limits["test"] = hparams.max_eval_verses
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="bible-en-")
    os.makedirs(folder, exist_ok=True)
    verses, files = {}, {}
    for name, split in bible.items():
        texts = [text for text in (tokenize(v.english) for v in split) if text]
        verses[name] = texts[: limits[name]] if limits[name] else texts
        files[name] = os.path.join(folder, f"{name}.en")
        with open(files[name], "w", encoding="utf-8") as f:
            f.writelines(text + "\n" for text in verses[name])
    vocab_file = os.path.join(folder, "vocab.en")
    with open(vocab_file, "w", encoding="utf-8") as f:
        tokens = tx.data.make_vocab(files["train"], max_size=hparams.vocab_size)
        f.writelines(token + "\n" for token in tokens)

    def reader(name: str, training: bool) -> tx.data.MonoTextData:
        return tx.data.MonoTextData(
            {
                "dataset": {
                    "files": [files[name]],
                    "vocab_file": vocab_file,
                    "max_seq_length": hparams.max_seq_length if training else None,
                    "length_filter_mode": "discard",
                    "pad_to_max_seq_length": training,
                },
                "batch_size": hparams.batch_size,
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "drop_remainder": training,
                "seed": hparams.seed,
                "name": f"bible_verses_{name}",
            }
        )

    readers = {"train": reader("train", True), "dev": reader("dev", False)}
    readers["test"] = reader("test", False)
    kept = len(verses["train"]) - readers["train"].report.skipped
    return tx.run.Data(
        train=lambda context: autoencoding(readers["train"].make_dataset(context)),
        eval=autoencoding(readers["dev"].dataset),
        test=autoencoding(readers["test"].dataset),
        vocab=readers["train"].vocab,
        verses=verses,
        steps_per_epoch=max(kept // hparams.batch_size, 1),
        reports={name: r.report for name, r in readers.items()},
    )


def autoencoding(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """Batches as (features, labels): the encoder reads ``<BOS> verse <EOS>``, the decoder
    ``<BOS> verse`` and predicts ``verse <EOS>``."""

    def split(batch: dict) -> tuple[dict, tf.Tensor]:
        features = {"text_ids": batch["text_ids"], "length": batch["length"]}
        return features, batch["text_ids"][:, 1:]

    return dataset.map(split)


# -- the model -----------------------------------------------------------------------------------


class RNNCellHParams:
    """The hparams of an RNN cell (``rnn_cell`` of texkit's RNN modules), for ``texkit migrate``
    of Texar's ``enc_cell_hparams`` / ``dec_cell_hparams``."""

    @staticmethod
    def default_hparams() -> dict:
        return default_rnn_cell_hparams()


def token_nll(labels: tf.Tensor, logits: tf.Tensor, length: tf.Tensor) -> tf.Tensor:
    """``[batch]``: each verse's NLL summed over its tokens (``<EOS>`` included)."""
    return tx.losses.sequence_sparse_softmax_cross_entropy(
        labels=labels, logits=logits, sequence_length=length, average_across_batch=False
    )


@keras.saving.register_keras_serializable(package="texkit_examples")
class TextVAE(keras.Model):
    """Encoder, Gaussian posterior, reparameterized connector and an LSTM or Transformer
    decoder; ``call`` returns ``{"logits", "kl"}`` and ``compute_loss`` the annealed loss."""

    def __init__(self, vocab_size: int, steps_per_epoch: int, hparams: dict, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.steps_per_epoch = vocab_size, steps_per_epoch
        self.hparams = hp = dict(hparams)
        self.latent_dims = hp["latent_dims"]
        self.encoder_embedder = tx.modules.WordEmbedder(
            vocab_size=vocab_size, hparams={**hp["enc_emb_hparams"], "name": "encoder_embedder"}
        )
        self.encoder = tx.modules.UnidirectionalRNNEncoder({"rnn_cell": hp["enc_cell_hparams"]})
        self.posterior = tx.modules.MLPTransformConnector(2 * self.latent_dims)
        self.decoder_embedder = tx.modules.WordEmbedder(
            vocab_size=vocab_size, hparams={**hp["dec_emb_hparams"], "name": "decoder_embedder"}
        )
        if hp["decoder_type"] == "lstm":
            self.decoder = tx.modules.BasicRNNDecoder(
                vocab_size, hparams={"rnn_cell": hp["dec_cell_hparams"]}
            )
            decoder_input_size = self.decoder.cell.state_size
        else:
            self.decoder = tx.modules.TransformerDecoder(
                vocab_size, output_layer=self.decoder_embedder, hparams=hp["trans_hparams"]
            )
            decoder_input_size = self.decoder.hparams.dim
        self.connector = tx.modules.ReparameterizedStochasticConnector(
            decoder_input_size, mlp_input_size=self.latent_dims
        )
        self.annealing = tx.learning.KLAnnealing.from_texar(
            hp["kl_anneal_hparams"], steps_per_epoch
        )
        self.word_dropout_seed = keras.random.SeedGenerator(hp["seed"])
        self.trackers = {
            name: keras.metrics.Mean(name=name) for name in ("reconstruction", "kl", "kl_weight")
        }

    @property
    def metrics(self) -> list:
        return [*super().metrics, *self.trackers.values()]

    def encode(self, text_ids: tf.Tensor, length: tf.Tensor, training=None):
        """The posterior ``q(z | x)``, a ``DiagonalGaussian`` over ``latent_dims``."""
        _, state = self.encoder(
            self.encoder_embedder(text_ids, training=training),
            sequence_length=length,
            training=training,
        )
        mean, log_variance = tf.split(self.posterior(state), 2, axis=-1)
        return tx.core.DiagonalGaussian.from_log_variance(mean, log_variance)

    def decode(self, inputs, length, latent_output, z, training=None) -> tf.Tensor:
        """Teacher-forced logits of the decoder inputs given the code ``z`` and the
        connector's output for it."""
        if self.hparams["decoder_type"] == "lstm":
            embedded = self.decoder_embedder(inputs, training=training)
            steps = tf.shape(embedded)[1]
            codes = tf.tile(tf.cast(z, embedded.dtype)[:, None, :], [1, steps, 1])
            outputs, _, _ = self.decoder(
                inputs=tf.concat([embedded, codes], axis=-1),
                sequence_length=length,
                initial_state=latent_output,
                training=training,
            )
        else:
            outputs, _, _ = self.decoder(
                inputs=inputs,
                sequence_length=length,
                embedding=self.decoder_embedder,
                memory=latent_output[:, None, :],
                memory_sequence_length=tf.ones_like(length),
                training=training,
            )
        return outputs.logits

    def call(self, features: dict, training=None) -> dict:
        posterior = self.encode(features["text_ids"], features["length"], training)
        latent_output, z = self.connector(posterior)
        inputs, length = features["text_ids"][:, :-1], features["length"] - 1
        if training:
            rate = 1.0 - self.hparams["word_keep_prob"]
            inputs = tx.learning.word_dropout(inputs, rate, length, seed=self.word_dropout_seed)
        logits = self.decode(inputs, length, latent_output, z, training)
        return {"logits": logits, "kl": posterior.kl_to_standard_normal()}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Reconstruction NLL plus the annealed KL term, per verse, averaged over the batch
        (Texar's ``rc_loss + kl_weight * kl_loss``); the KL weight is 1 outside training."""
        reconstruction = tf.reduce_mean(token_nll(y, y_pred["logits"], x["length"] - 1))
        kl = tf.reduce_mean(y_pred["kl"])
        weight = self.annealing(self.optimizer.iterations + 1) if training else tf.constant(1.0)
        for name, value in (("reconstruction", reconstruction), ("kl", kl), ("kl_weight", weight)):
            self.trackers[name].update_state(value)
        return reconstruction + weight * kl

    def generate(self, z, strategy: str, max_decoding_length: int, seed=None):
        """Decodes from codes ``z [batch, latent_dims]``: ``(ids, lengths)``."""
        latent_output = self.connector.mlp(z)
        batch = tf.shape(z)[0]
        common = {
            "decoding_strategy": strategy,
            "start_tokens": tf.fill([batch], tx.data.Vocab.bos_token_id),
            "end_token": tx.data.Vocab.eos_token_id,
            "max_decoding_length": max_decoding_length,
        }
        if strategy == "infer_sample":
            common["seed"] = seed
        if self.hparams["decoder_type"] == "lstm":

            def embed(ids):
                embedded = self.decoder_embedder(ids)
                # The decoder first embeds one start token to learn the input size.
                return tf.concat([embedded, z[: tf.shape(embedded)[0]]], axis=-1)

            outputs, _, lengths = self.decoder(
                embedding=embed, initial_state=latent_output, **common
            )
        else:
            outputs, _, lengths = self.decoder(
                embedding=self.decoder_embedder,
                memory=latent_output[:, None, :],
                memory_sequence_length=tf.ones([batch], tf.int32),
                **common,
            )
        return outputs.sample_id, lengths

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "steps_per_epoch": self.steps_per_epoch,
            "hparams": self.hparams,
        }


@tx.run.model_builder(
    {
        "decoder_type": "lstm",
        "latent_dims": 32,
        "word_keep_prob": 1.0,
        "kl_anneal_hparams": {"warm_up": 10.0, "start": 0.1},
        "enc_emb_hparams": {},
        "dec_emb_hparams": {},
        "enc_cell_hparams": {},
        "dec_cell_hparams": {},
        "trans_hparams": {},
        "seed": 0,
        "name": "text_vae",
    },
    texar_sections={
        "enc_emb_hparams": ("enc_emb_hparams", tx.modules.WordEmbedder),
        "dec_emb_hparams": ("dec_emb_hparams", tx.modules.WordEmbedder),
        "enc_cell_hparams": ("enc_cell_hparams", RNNCellHParams),
        "dec_cell_hparams": ("dec_cell_hparams", RNNCellHParams),
        "trans_hparams": ("trans_hparams", tx.modules.TransformerDecoder),
    },
)
def text_vae(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """The VAE of this example (see :class:`TextVAE`), its sections named as Texar's
    ``vae_text`` config variables: ``decoder_type`` (``lstm`` or ``transformer``),
    ``latent_dims``, ``word_keep_prob``, ``kl_anneal_hparams`` (``warm_up`` epochs, ``start``),
    the embedders' (``enc_emb_hparams``, ``dec_emb_hparams``), the LSTM cells'
    (``enc_cell_hparams``, ``dec_cell_hparams``) and the Transformer decoder's
    (``trans_hparams``, whose ``dim`` must be ``dec_emb_hparams.dim``: the output is tied)."""
    if hparams.decoder_type not in ("lstm", "transformer"):
        raise tx.HParamsError(
            f"expected 'lstm' or 'transformer', got {hparams.decoder_type!r}", "decoder_type"
        )
    if not 0.0 < hparams.word_keep_prob <= 1.0:
        raise tx.HParamsError(
            f"expected a probability in (0, 1], got {hparams.word_keep_prob}", "word_keep_prob"
        )
    hp = hparams.todict()
    if hparams.decoder_type == "transformer":
        dims = (tx.modules.TransformerDecoder.make_hparams(hp["trans_hparams"]).dim,
                tx.modules.WordEmbedder.make_hparams(hp["dec_emb_hparams"]).dim)  # fmt: skip
        if dims[0] != dims[1]:
            raise tx.HParamsError(
                f"the Transformer's dim {dims[0]} must equal the decoder embedder's {dims[1]} "
                "(its output is tied to the embeddings)",
                "trans_hparams.dim",
            )
    return TextVAE(data.vocab.size, data.steps_per_epoch, hp, name=hparams.name)


# -- the report ----------------------------------------------------------------------------------


def scores(model: TextVAE, data: tx.run.Data, split: str, num_samples: int) -> dict:
    """Per verse and per token over a whole split, with weight 1 on the KL term: the
    reconstruction NLL, KL, negative ELBO and its perplexity, and the importance-weighted NLL
    (``num_samples`` posterior samples per verse) and its perplexity."""

    @tf.function(reduce_retracing=True)
    def batch_terms(features: dict, labels: tf.Tensor) -> tuple:
        posterior = model.encode(features["text_ids"], features["length"], training=False)
        inputs, length = features["text_ids"][:, :-1], features["length"] - 1
        latent_output, z = model.connector(posterior, training=False)
        reconstruction = token_nll(labels, model.decode(inputs, length, latent_output, z), length)
        outputs, draws = model.connector(posterior, num_samples=num_samples, training=False)
        log_likelihood = []
        for k in range(num_samples):
            output_k = tf.nest.map_structure(lambda x, k=k: x[k], outputs)
            logits = model.decode(inputs, length, output_k, draws[k], training=False)
            log_likelihood.append(-token_nll(labels, logits, length))
        prior = tx.core.DiagonalGaussian.standard_normal(tf.shape(draws)[1:])
        iw_nll = tx.learning.importance_weighted_nll(
            tf.stack(log_likelihood), prior.log_prob(draws), posterior.log_prob(draws)
        )
        return reconstruction, posterior.kl_to_standard_normal(), iw_nll, length

    totals = {"reconstruction": 0.0, "kl": 0.0, "iw_nll": 0.0, "tokens": 0, "verses": 0}
    for features, labels in data[split]:
        reconstruction, kl, iw_nll, length = batch_terms(features, labels)
        totals["reconstruction"] += float(tf.reduce_sum(reconstruction))
        totals["kl"] += float(tf.reduce_sum(kl))
        totals["iw_nll"] += float(tf.reduce_sum(iw_nll))
        totals["tokens"] += int(tf.reduce_sum(length))
        totals["verses"] += int(length.shape[0])
    verses, tokens = totals["verses"], totals["tokens"]
    elbo_nll = totals["reconstruction"] + totals["kl"]
    return {
        "reconstruction": totals["reconstruction"] / verses,
        "kl": totals["kl"] / verses,
        "nll": elbo_nll / verses,
        "perplexity": math.exp(elbo_nll / tokens),
        "iw_nll": totals["iw_nll"] / verses,
        "iw_perplexity": math.exp(totals["iw_nll"] / tokens),
        "iw_samples": num_samples,
        "tokens": tokens,
        "verses": verses,
    }


def texts_of(ids: np.ndarray, lengths: np.ndarray, vocab: tx.data.Vocab) -> list[str]:
    """Decoded ids as space-separated tokens, up to (without) ``<EOS>``."""
    texts = []
    for row, length in zip(ids, lengths, strict=True):
        tokens = vocab.map_ids_to_tokens_py(row[:length])
        texts.append(" ".join(t for t in tokens if t != vocab.eos_token))
    return texts


def prior_samples(model: TextVAE, data: tx.run.Data, settings: tx.HParams) -> list[str]:
    """Verses decoded by sampling from codes drawn from the prior ``N(0, I)``."""
    z = tf.random.stateless_normal(
        [settings.prior_samples, model.latent_dims], seed=[settings.seed, 0]
    )
    ids, lengths = model.generate(
        z, "infer_sample", settings.max_decoding_length, seed=settings.seed
    )
    return texts_of(ids.numpy(), lengths.numpy(), data.vocab)


def interpolation(model: TextVAE, data: tx.run.Data, settings: tx.HParams) -> dict:
    """Greedy decodings of evenly spaced points between the posterior means of two test verses
    (``settings.interpolate``: their indices)."""
    verses = [data.verses["test"][i] for i in settings.interpolate]
    ids = [data.vocab.map_tokens_to_ids_py(["<BOS>", *v.split(), "<EOS>"]) for v in verses]
    longest = max(map(len, ids))
    padded = np.array([np.pad(row, (0, longest - len(row))) for row in ids], np.int32)
    lengths = np.array([len(row) for row in ids], np.int32)
    means = model.encode(tf.constant(padded), tf.constant(lengths), training=False).loc
    weights = np.linspace(0.0, 1.0, settings.interpolation_steps, dtype=np.float32)[:, None]
    z = (1.0 - weights) * means[0] + weights * means[1]
    out, out_lengths = model.generate(tf.constant(z), "infer_greedy", settings.max_decoding_length)
    return {"verses": verses, "decoded": texts_of(out.numpy(), out_lengths.numpy(), data.vocab)}


def run(hparams: tx.HParams, settings: tx.HParams) -> dict:
    """Trains, then prints and returns the test scores, prior samples and an interpolation."""
    start = time.time()
    trainer = tx.run.Trainer.from_hparams(hparams)
    data, model = trainer.data, trainer.model
    print(
        f"Bible verses (English): {data.reports['train'].examples} training verses "
        f"({data.reports['train'].skipped} longer than {hparams.data.hparams.max_seq_length} "
        f"tokens left out), vocabulary {data.vocab.size}; {model.hparams['decoder_type']} "
        f"decoder, {model.count_params():,} parameters; {data.steps_per_epoch} steps per epoch"
    )
    history = trainer.train()
    train_time = time.time() - start
    test = scores(model, data, "test", settings.iw_samples)
    samples = prior_samples(model, data, settings)
    line = interpolation(model, data, settings)
    print(
        f"\ntest ({test['verses']} verses, {test['tokens']} tokens): reconstruction "
        f"{test['reconstruction']:.2f} + KL {test['kl']:.2f} = NLL {test['nll']:.2f} per verse, "
        f"perplexity {test['perplexity']:.2f}; importance-weighted NLL ({test['iw_samples']} "
        f"samples) {test['iw_nll']:.2f}, perplexity {test['iw_perplexity']:.2f}"
    )
    print("\nsamples from the prior:")
    for text in samples:
        print(f"  {text}")
    print("\ninterpolation:")
    print(f"  from: {line['verses'][0]}")
    for text in line["decoded"]:
        print(f"   ->   {text}")
    print(f"  to:   {line['verses'][1]}")
    total = time.time() - start
    print(f"time: {train_time:.0f} s to train, {total:.0f} s in all")
    return {"test": test, "samples": samples, "interpolation": line, "history": history,
            "trainer": trainer, "time": total}  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    """``[--config FILE] [--quick] [key=value ...]``; returns :func:`run`'s result."""
    args = example_parser(__doc__, CONFIG, quick=True).parse_args(argv)
    user = read_config(args, QUICK)
    settings = tx.HParams(user.pop("report", {}), REPORT_DEFAULTS)
    result = run(tx.run.validate_experiment(user), settings)
    if args.quick:
        quick_note(FULL_RUN, __file__)
    return result


if __name__ == "__main__":
    main()
