"""Translates Spanish Bible verses into English with an attention RNN (Luong et al., 2015).

The data are the Reina-Valera 1909 / King James verse pairs of ``examples/data`` with their
fixed split by book (``examples/bible_corpus.py``): the test books are never seen in training.
Verses are lowercased and split into words and punctuation, written as aligned ``.es``/``.en``
files, and read by ``tx.data.PairedTextData`` (vocabularies from the training files, batches
bucketed by length). The model is Texar's ``seq2seq_attn``:

* ``WordEmbedder`` for each language,
* ``BidirectionalRNNEncoder`` (LSTM) over the Spanish verse,
* ``MLPTransformConnector`` from the encoder's final states to the decoder's initial state,
* ``AttentionRNNDecoder`` (LSTM, Luong attention, input feeding, a linear attention layer: with
  Luong's tanh there the loss stayed near a unigram model's for two epochs) trained with teacher
  forcing and ``tx.losses.sequence_sparse_softmax_cross_entropy``,

trained through ``tx.run.Trainer`` (checkpoints, resume, distribution strategies). It then
translates the test books with beam search, reports BLEU with sacrebleu against the original
English verses (lowercased; the hypotheses are the decoded tokens joined by spaces, which
sacrebleu's 13a tokenizer splits like the references), and prints a few translations.

    python examples/seq2seq_attn.py --config hparams/seq2seq_attn.yaml
    python examples/seq2seq_attn.py --config hparams/seq2seq_attn.yaml --quick
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import sacrebleu  # noqa: E402
import tensorflow as tf  # noqa: E402
from bible_corpus import load_bible  # noqa: E402

import texkit as tx  # noqa: E402

TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")

# --quick: a few hundred verses, a tiny model and a few steps, to check the whole path quickly.
QUICK = [
    "data.hparams.max_train_verses=600",
    "data.hparams.max_test_verses=24",
    "data.hparams.source_vocab_size=800",
    "data.hparams.target_vocab_size=800",
    "data.hparams.batch_size=16",
    "model.hparams.embedding_dim=16",
    "model.hparams.encoder_units=16",
    "model.hparams.decoder_units=32",
    "run.train_steps=20",
    "run.checkpoint_every_steps=10",
    "translate.beam_width=3",
    "translate.max_decoding_length=20",
    "translate.show=2",
]


def tokenize(text: str) -> str:
    """Lowercased words and punctuation marks, separated by single spaces."""
    return " ".join(TOKEN.findall(text.lower()))


@tx.run.data_builder(
    {
        "work_dir": "",
        "source_vocab_size": 10000,
        "target_vocab_size": 5000,
        "max_seq_length": 60,
        "max_train_verses": 0,
        "max_test_verses": 0,
        "batch_size": 128,
        "bucket_boundaries": [16, 24, 32, 40, 50],
        "static_shapes": False,
        "seed": 0,
        "name": "bible_translation_data",
    }
)
def bible_translation_data(hparams: tx.HParams) -> tx.run.Data:
    """Spanish -> English verse pairs as aligned token files, read by ``PairedTextData``.

    Training pairs longer than ``max_seq_length`` tokens on either side are left out (counted in
    the data report); dev and test keep every verse. ``max_train_verses`` / ``max_test_verses``
    (0: all) take the first verses of a split. ``static_shapes`` pads every training batch to
    ``max_seq_length`` (what XLA and TPUs want) instead of bucketing by length. ``work_dir: ""``
    writes to a temporary folder.
    """
    bible = load_bible()
    limits = {"train": hparams.max_train_verses, "dev": 0, "test": hparams.max_test_verses}
    folder = hparams.work_dir or tempfile.mkdtemp(prefix="bible-es-en-")
    os.makedirs(folder, exist_ok=True)
    splits, files = {}, {}
    for name, verses in bible.items():
        pairs = [(tokenize(v.spanish), tokenize(v.english), v) for v in verses]
        pairs = [pair for pair in pairs if pair[0] and pair[1]]
        splits[name] = pairs[: limits[name]] if limits[name] else pairs
        files[name] = {}
        for index, language in enumerate(("es", "en")):
            path = os.path.join(folder, f"{name}.{language}")
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(pair[index] + "\n" for pair in splits[name])
            files[name][language] = path
    vocab_files = {}
    for language, size in (("es", hparams.source_vocab_size), ("en", hparams.target_vocab_size)):
        tokens = tx.data.make_vocab(files["train"][language], max_size=size)
        vocab_files[language] = os.path.join(folder, f"vocab.{language}")
        with open(vocab_files[language], "w", encoding="utf-8") as f:
            f.writelines(token + "\n" for token in tokens)

    def reader(name: str, training: bool) -> tx.data.PairedTextData:
        side = {"max_seq_length": hparams.max_seq_length if training else None}
        side["length_filter_mode"] = "discard"
        static = training and hparams.static_shapes
        side["pad_to_max_seq_length"] = static
        return tx.data.PairedTextData(
            {
                "source_dataset": {
                    "files": [files[name]["es"]], "vocab_file": vocab_files["es"], **side
                },
                "target_dataset": {
                    "files": [files[name]["en"]], "vocab_file": vocab_files["en"], **side
                },
                "batch_size": hparams.batch_size,
                "num_epochs": -1 if training else 1,
                "shuffle": training,
                "bucket_boundaries": hparams.bucket_boundaries if training and not static else [],
                "drop_remainder": static,
                "seed": hparams.seed,
                "name": f"bible_{name}",
            }
        )  # fmt: skip

    readers = {"train": reader("train", True), "dev": reader("dev", False)}
    readers["test"] = reader("test", False)
    return tx.run.Data(
        # A function of the input context: each worker reads its own shard of the verses.
        train=lambda context: teacher_forcing(readers["train"].make_dataset(context)),
        eval=teacher_forcing(readers["dev"].dataset),
        test=teacher_forcing(readers["test"].dataset),
        source_vocab=readers["train"].source_vocab,
        target_vocab=readers["train"].target_vocab,
        verses={name: [pair[2] for pair in pairs] for name, pairs in splits.items()},
        reports={name: r.report for name, r in readers.items()},
    )


def teacher_forcing(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """Batches of ``PairedTextData`` as (features, labels): the decoder reads ``<BOS> y`` and
    predicts ``y <EOS>``."""

    def split(batch: dict) -> tuple[dict, tf.Tensor]:
        features = {
            "source": batch["source_text_ids"],
            "source_length": batch["source_length"],
            "decoder_inputs": batch["target_text_ids"][:, :-1],
            "target_length": batch["target_length"] - 1,
        }
        return features, batch["target_text_ids"][:, 1:]

    return dataset.map(split)


@keras.saving.register_keras_serializable(package="texkit_examples")
class Seq2SeqAttn(keras.Model):
    """Embedders, a bidirectional LSTM encoder, a connector and an attention LSTM decoder."""

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        hparams: dict,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hparams = dict(hparams)
        hp = self.hparams
        self.source_embedder = tx.modules.WordEmbedder(
            vocab_size=source_vocab_size, hparams={"dim": hp["embedding_dim"]}
        )
        self.target_embedder = tx.modules.WordEmbedder(
            vocab_size=target_vocab_size, hparams={"dim": hp["embedding_dim"]}
        )
        encoder_cell = {
            "type": "LSTMCell",
            "kwargs": {"units": hp["encoder_units"]},
            "dropout": {"input_keep_prob": 1.0 - hp["dropout_rate"]},
        }
        self.encoder = tx.modules.BidirectionalRNNEncoder({"rnn_cell_fw": encoder_cell})
        units = hp["decoder_units"]
        self.decoder = tx.modules.AttentionRNNDecoder(
            target_vocab_size,
            hparams={
                "rnn_cell": {
                    "type": "LSTMCell",
                    "kwargs": {"units": units},
                    "dropout": {"input_keep_prob": 1.0 - hp["dropout_rate"]},
                },
                "attention": {
                    "type": "LuongAttention",
                    "kwargs": {"units": units},
                    "attention_layer_size": units,
                },
            },
        )
        self.connector = tx.modules.MLPTransformConnector(self.decoder.cell.state_size)

    def encode(self, source: tf.Tensor, source_length: tf.Tensor, training=None) -> tuple:
        """(memory [batch, time, 2 * encoder_units], the decoder's initial cell state)."""
        (forward, backward), final_states = self.encoder(
            self.source_embedder(source, training=training),
            sequence_length=source_length,
            training=training,
        )
        return tf.concat([forward, backward], axis=-1), self.connector(final_states)

    def call(self, features: dict, training=None) -> tf.Tensor:
        memory, state = self.encode(features["source"], features["source_length"], training)
        outputs, _, _ = self.decoder(
            inputs=self.target_embedder(features["decoder_inputs"], training=training),
            sequence_length=features["target_length"],
            memory=memory,
            memory_sequence_length=features["source_length"],
            initial_state=state,
            training=training,
        )
        return outputs.logits

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Cross-entropy summed over each verse's tokens, averaged over the verses (Texar's
        ``seq2seq_attn``); padding never counts."""
        return tx.losses.sequence_sparse_softmax_cross_entropy(
            labels=y, logits=y_pred, sequence_length=x["target_length"]
        )

    def beam_search(
        self,
        source: tf.Tensor,
        source_length: tf.Tensor,
        beam_width: int,
        length_penalty: float,
        max_decoding_length: int,
    ) -> tx.modules.decoders.BeamSearchOutput:
        memory, state = self.encode(source, source_length, training=False)
        return self.decoder.beam_search(
            beam_width=beam_width,
            length_penalty=length_penalty,
            start_tokens=tf.fill([tf.shape(source)[0]], tx.data.Vocab.bos_token_id),
            end_token=tx.data.Vocab.eos_token_id,
            max_decoding_length=max_decoding_length,
            embedding=self.target_embedder,
            memory=memory,
            memory_sequence_length=source_length,
            initial_state=state,
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "source_vocab_size": self.source_embedder.vocab_size,
            "target_vocab_size": self.target_embedder.vocab_size,
            "hparams": self.hparams,
        }


@tx.run.model_builder(
    {
        "embedding_dim": 128,
        "encoder_units": 128,
        "decoder_units": 256,
        "dropout_rate": 0.2,
        "name": "seq2seq_attn",
    }
)
def seq2seq_attn(hparams: tx.HParams, data: tx.run.Data) -> keras.Model:
    """The attention seq2seq model of this example (see :class:`Seq2SeqAttn`)."""
    return Seq2SeqAttn(
        data.source_vocab.size, data.target_vocab.size, hparams.todict(), name=hparams.name
    )


def translate(model: Seq2SeqAttn, data: tx.run.Data, split: str, settings: tx.HParams) -> list[str]:
    """Beam-search translations of a split, in order, as space-separated tokens."""

    @tf.function(reduce_retracing=True)
    def search(source: tf.Tensor, source_length: tf.Tensor) -> tuple:
        output = model.beam_search(
            source,
            source_length,
            settings.beam_width,
            settings.length_penalty,
            settings.max_decoding_length,
        )
        return output.ids[:, 0], output.lengths[:, 0]

    vocab, hypotheses = data.target_vocab, []
    for features, _ in data[split]:
        ids, lengths = search(features["source"], features["source_length"])
        for row, length in zip(ids.numpy(), lengths.numpy(), strict=True):
            tokens = vocab.map_ids_to_tokens_py(row[:length])
            hypotheses.append(" ".join(t for t in tokens if t != vocab.eos_token))
    return hypotheses


def run(hparams: tx.HParams, translate_settings: tx.HParams) -> dict:
    """Trains, translates the test books and returns their BLEU."""
    start = time.time()
    trainer = tx.run.Trainer.from_hparams(hparams)
    data = trainer.data
    print(
        f"Bible es->en: {len(data.verses['train'])} training verses "
        f"({data.reports['train'].skipped} too long), vocabularies "
        f"es {data.source_vocab.size} / en {data.target_vocab.size}"
    )
    history = trainer.train()
    train_time = time.time() - start
    dev_loss = trainer.evaluate("eval")["loss"]
    hypotheses = translate(trainer.model, data, "test", translate_settings)
    verses = data.verses["test"]
    references = [verse.english for verse in verses]
    # force: the hypotheses are tokens on purpose (13a splits the references the same way).
    bleu = sacrebleu.corpus_bleu(hypotheses, [references], lowercase=True, force=True)
    for verse, hypothesis in list(zip(verses, hypotheses, strict=True))[: translate_settings.show]:
        print(f"\n{verse.reference}\n  es:  {verse.spanish}\n  en:  {verse.english}")
        print(f"  out: {hypothesis}")
    total = time.time() - start
    print(
        f"\ndev loss {dev_loss:.3f} per verse; test BLEU ({len(verses)} verses, beam "
        f"{translate_settings.beam_width}): {bleu.score:.2f}  [{bleu}]"
    )
    print(f"time: {train_time:.0f} s to train, {total:.0f} s in all")
    return {
        "bleu": bleu.score,
        "dev_loss": dev_loss,
        "history": history,
        "hypotheses": hypotheses,
        "references": references,
        "time": total,
    }


TRANSLATE_DEFAULTS = {
    "beam_width": 5,
    "length_penalty": 0.6,
    "max_decoding_length": 100,
    "show": 5,
    "name": "translate",
}


def main(argv: list[str] | None = None) -> dict:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="hparams/seq2seq_attn.yaml")
    parser.add_argument("--quick", action="store_true", help="a tiny run of the whole path")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. run.train_steps=50")
    args = parser.parse_args(argv)
    user = tx.HParams.from_yaml(args.config, None).todict()
    user = tx.apply_overrides(user, (QUICK if args.quick else []) + args.overrides)
    settings = tx.HParams(user.pop("translate", {}), TRANSLATE_DEFAULTS)
    return run(tx.run.validate_experiment(user), settings)


if __name__ == "__main__":
    main()
