"""The examples train on real data and beat the trivial baseline on held-out text.

The examples are the package ``examples`` at the repository root (pytest puts the root on
``sys.path``, as ``python -m`` does when run from there). Tests that need a real-data package
(the BBC news articles, the MiniLM weights) go through ``tests.real_data.require_package``.
"""

import collections
import importlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

import texkit as tx
from examples.bert_classifier import train as bert_classifier  # noqa: F401  (registers builders)
from examples.bert_pretrain import train as bert_pretrain
from examples.common import bbc_news, bible_corpus
from examples.sentence_classifier import train as sentence_classifier  # noqa: F401  (builders)
from examples.seq2seq_attn import train as seq2seq_attn
from examples.testament_classifier import train as testament_classifier
from tests.background import job_result, process_job
from tests.real_data import BBC_NEWS, MINILM, require_package
from texkit.cli import main as texkit_command

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
EXAMPLES = ("bert_classifier", "bert_pretrain", "char_lm", "gpt2_generation", "language_model",
            "lm_rl", "sentence_classifier", "seq2seq_attn", "seq2seq_rl", "seqgan",
            "sequence_tagging", "testament_classifier", "text_vae", "transformer")  # fmt: skip


def config_of(name):
    """The YAML config of ``examples/<name>``."""
    return os.path.join(ROOT, "examples", name, "config.yaml")


def example_run(folder, name, *args):
    """The README's command of ``examples/<name>`` with ``args``, in a fresh process, stdout and
    stderr pipes; TF_CPP_MIN_LOG_LEVEL unset, as in a user's shell. ``folder`` is the job's."""
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run(
        [sys.executable, "-m", f"examples.{name}.train", *args],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


HELP_TEST = "test_each_example_runs_as_a_module_from_the_root_and_keeps_tensorflow_quiet"
for _name in EXAMPLES:
    # Each run is a process that mostly imports TensorFlow: it runs while other tests do.
    process_job(f"{HELP_TEST}[{_name}]", example_run, _name, "--help")
VERBOSE_TEST = "test_verbose_shows_tensorflow_log_lines"
process_job(VERBOSE_TEST, example_run, "testament_classifier", "--help", "--verbose")


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_example_runs_as_a_module_from_the_root_and_keeps_tensorflow_quiet(name):
    result = job_result(f"{HELP_TEST}[{name}]")
    assert result.returncode == 0, result.stderr
    assert "--config" in result.stdout
    # Every example accepts --verbose (texkit reads it before TensorFlow loads).
    assert "--verbose" in result.stdout and "TensorFlow's own log lines" in result.stdout
    assert_no_tensorflow_info_lines(result.stdout + result.stderr)


def test_verbose_shows_tensorflow_log_lines():
    """--verbose (on the command line of a ``python -m`` module) shows what is hidden without it,
    which makes the test above one that can fail."""
    result = job_result(VERBOSE_TEST)
    assert result.returncode == 0, result.stderr
    assert TENSORFLOW_LOG_LINE.search(result.stderr), result.stderr
    assert "--verbose" in result.stdout


# TensorFlow's C++ log lines: absl's "I0000 00:00:1795752795.633004 ..." (a level letter, month
# and day) and TensorFlow's own "2026-11-27 04:30:00.123456: E ...".
TENSORFLOW_LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] )", re.M
)


def assert_no_tensorflow_info_lines(output):
    """No line of TensorFlow's C++ log: oneDNN, CUDA drivers (the INFO lines and the ERROR lines
    "failed call to cuInit" and oneDNN's DT_BOOL), absl's banner."""
    for marker in ("cudart_stub", "oneDNN", "cuInit", "absl::InitializeLog"):
        assert marker not in output, output
    assert not TENSORFLOW_LOG_LINE.findall(output), output


def test_bible_split_is_by_book_and_complete():
    splits = bible_corpus.load_bible()
    sizes = {name: len(verses) for name, verses in splits.items()}
    assert sizes == {"train": 30047, "dev": 338, "test": 699}
    books = {name: {v.book for v in verses} for name, verses in splits.items()}
    assert books["test"] == set(bible_corpus.TEST_BOOKS)
    assert books["dev"] == set(bible_corpus.DEV_BOOKS)
    assert not books["train"] & (books["dev"] | books["test"])
    # Matthew 1:1 opens the New Testament; Malachi closes the Old.
    labels = {v.reference: v.new_testament for v in splits["train"]}
    assert labels["Matt.1.1"] and not labels["Mal.4.6"]


def test_bible_loader_names_the_bad_line(tmp_path):
    import gzip

    path = tmp_path / "broken.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write("Gen.1.1\tIn the beginning\tEn el principio\nGen.1.2\tonly two fields\n")
    with pytest.raises(ValueError, match="broken.tsv.gz:2"):
        bible_corpus.load_bible(str(path))
    with pytest.raises(FileNotFoundError, match="missing"):
        bible_corpus.load_bible(str(tmp_path / "missing.tsv.gz"))


def experiment(name, *overrides):
    """The validated hparams of ``examples/<name>/config.yaml`` with ``key=value`` overrides."""
    user = tx.HParams.from_yaml(config_of(name), None).todict()
    return tx.run.validate_experiment(tx.apply_overrides(user, list(overrides)))


def assert_export_serves_raw_text(trainer, texts, folder, atol):
    """The exported SavedModel takes raw text and agrees with the trained model."""
    trainer.export(str(folder))
    loaded = tf.saved_model.load(str(folder))  # kept referenced: it owns the variables
    served = loaded.serve(tf.constant(texts)).numpy()
    expected = trainer.model.predict(trainer.data.preprocessor(tf.constant(texts)), verbose=0)
    np.testing.assert_allclose(served, expected, atol=atol)
    return served


def test_testament_classifier_learns_from_the_yaml_config(tmp_path):
    hparams = experiment(
        "testament_classifier",
        "run.train_steps=350",
        "run.verbose=0",
        "model.hparams.embedder.dim=32",
    )
    trainer = tx.run.Trainer.from_hparams(hparams)
    trainer.train()
    test = trainer.evaluate("test")
    assert trainer.data.sizes["test"] == 699
    assert test["accuracy"] > trainer.data.majority["test"] + 0.2, test

    # The export takes raw verses and agrees with the trained model.
    verses = [
        "And Jesus answered and said unto them, Verily I say unto you",
        "And the LORD spake unto Moses, saying,",
    ]
    served = assert_export_serves_raw_text(trainer, verses, tmp_path / "serving", atol=1e-5)
    assert served[0].argmax() == 1 and served[1].argmax() == 0  # New, then Old Testament


def test_texkit_train_includes_an_example_by_its_path(tmp_path, capsys):
    # The README's command: the file is imported as examples.testament_classifier.train, the
    # module the test above uses (not a second copy of it).
    path = os.path.join(ROOT, "examples", "testament_classifier", "train.py")
    overrides = ["run.train_steps=4", "run.checkpoint_every_steps=4", "run.verbose=0"]
    overrides += [f"run.model_dir={tmp_path / 'run'}", "model.hparams.embedder.dim=8"]
    assert texkit_command(["train", config_of("testament_classifier"), "--include", path,
                           *overrides]) == 0  # fmt: skip
    assert '"step": 4' in capsys.readouterr().out
    assert sys.modules["examples.testament_classifier.train"] is testament_classifier


def test_sentence_classifier_learns_bbc_topics_with_glove_vectors(tmp_path):
    import gensim

    require_package(BBC_NEWS)

    glove = os.path.join(os.path.dirname(gensim.__file__), "test", "test_data", "test_glove.txt")
    hparams = experiment(
        "sentence_classifier",
        "run.train_steps=250",
        "optimization.learning_rate=0.002",
        "run.checkpoint_every_steps=125",
        "run.verbose=0",
        "model.hparams.embedder.dim=50",
        f"model.hparams.pretrained_vectors.file={glove}",
        "model.hparams.classifier.filters=32",
        f"data.hparams.work_dir={tmp_path / 'bbc'}",
    )
    trainer = tx.run.Trainer.from_hparams(hparams)
    data = trainer.data
    # The files the pipeline read hold every article once, and nothing was skipped.
    assert {name: r.examples for name, r in data.reports.items()} == data.sizes
    assert all(r.skipped == 0 for r in data.reports.values())
    # The embedding table starts from the GloVe rows of the words the file has.
    with open(glove, encoding="utf-8") as f:
        vectors = {w: np.array(v, np.float32) for w, *v in (line.split() for line in f)}
    table = next(w for w in trainer.model.weights if "embedding" in w.path).numpy()
    for word in ("the", "said", "new"):
        np.testing.assert_array_equal(table[data.vocab.token_to_id_map_py[word]], vectors[word])
    trainer.train()
    test = trainer.evaluate("test")
    assert test["accuracy"] > data.majority["test"] + 0.5, test


def test_bbc_news_split_is_fixed_and_leaks_no_article():
    require_package(BBC_NEWS)
    news = bbc_news.load_bbc_news()
    assert (len(news.train), len(news.dev), len(news.test)) == (1485, 214, 426)
    # 2,225 files: 100 exact repeats dropped; one file is Windows-1252 (a pound sign).
    assert len(news.duplicates_dropped) == 100
    assert news.decoded_as_cp1252 == ["sports/199.txt"]
    assert "\u00a315.8m" in next(a.text for a in news.train + news.dev + news.test
                                  if a.file == "sports/199.txt")  # fmt: skip
    texts = [{a.text for a in split} for split in (news.train, news.dev, news.test)]
    assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    for split, name in ((news.train, "train"), (news.dev, "dev"), (news.test, "test")):
        assert {bbc_news.split_of(int(a.file[-7:-4])) for a in split} == {name}
    assert sorted({a.label for a in news.test}) == [0, 1, 2, 3, 4]


def bert_experiment(tmp_path, *overrides):
    require_package(MINILM)
    require_package(BBC_NEWS)
    return experiment(
        "bert_classifier",
        "data.hparams.max_seq_length=48",
        "data.hparams.batch_size=16",
        "run.verbose=0",
        f"run.model_dir={tmp_path / 'run'}",
        *overrides,
    )


def test_bert_classifier_fine_tunes_minilm_and_serves_raw_text(tmp_path):
    hparams = bert_experiment(
        tmp_path,
        "run.train_steps=24",
        "run.checkpoint_every_steps=24",
        "optimization.learning_rate_schedule.kwargs.warmup_steps=3",
        "optimization.learning_rate_schedule.kwargs.decay_steps=24",
    )
    trainer = tx.run.Trainer.from_hparams(hparams)
    trainer.train()
    dev = trainer.evaluate("eval")
    assert trainer.data.sizes["dev"] == 214
    assert dev["accuracy"] > trainer.data.majority["dev"] + 0.3, dev

    # The export takes raw articles and agrees with the trained model on tokenized ones.
    texts = [
        "Shares in the bank fell sharply after profits missed forecasts and the dollar slid.",
        "The striker scored twice as the champions won the cup final at Wembley.",
    ]
    assert_export_serves_raw_text(trainer, texts, tmp_path / "serving", atol=1e-4)


def test_bert_classifier_lora_config_applies_its_adapters():
    """config_lora.yaml validates, and its ``lora`` section leaves only the adapters and the new
    output layer trainable (its training on MiniLM is the README's figure)."""
    path = os.path.join(ROOT, "examples", "bert_classifier", "config_lora.yaml")
    hparams = tx.run.validate_experiment(tx.HParams.from_yaml(path, None).todict())
    folder = os.path.join(ROOT, "tests", "fixtures", "families", "distilbert")
    model = tx.modules.BERTClassifier.from_pretrained(folder, {"num_classes": 5})
    paths = tx.tasks.lora_from_hparams(model, hparams.model.hparams.lora)
    assert len(paths) == 6 * len(model.encoder.blocks)
    adapters = [w for w in model.trainable_weights if "lora_kernel" in w.path]
    assert len(model.trainable_weights) == len(adapters) + len(model.logits_layer.weights)


def family_folder_with_vocabulary(tmp_path, family):
    """A copy of a tiny family fixture with a tokenizer of its kind: a WordPiece vocabulary of
    its 99 ids (the special tokens and the commonest lowercase words of the BBC news articles),
    or the test byte-level BPE (RoBERTa) or SentencePiece model (ALBERT), the word embeddings
    grown to their vocabulary with random rows."""
    folder = tmp_path / family
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "families", family), folder)
    tokenizer_files = {
        "roberta": ("bpe", ["vocab.json", "merges.txt"], 2000),
        "albert": (os.path.join("sentencepiece", "albert"), ["spiece.model"], 1000),
    }
    if family in tokenizer_files:
        source, files, vocab_size = tokenizer_files[family]
        for name in files:
            shutil.copy(os.path.join(ROOT, "tests", "fixtures", source, name), folder / name)
        state = load_file(str(folder / "model.safetensors"))
        (key,) = [k for k in state if k.endswith("word_embeddings.weight")]
        table = state[key]
        more = np.random.default_rng(0).normal(0, 0.2, (vocab_size - len(table), table.shape[1]))
        state[key] = np.concatenate([table, more.astype(table.dtype)])
        save_file(state, str(folder / "model.safetensors"))
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "vocab_size": vocab_size}))
        return str(folder)
    counts = collections.Counter(
        word for article in bbc_news.load_bbc_news().train for word in article.text.lower().split()
        if word.isalpha()
    )  # fmt: skip
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = [w for w, _ in counts.most_common(99 - len(specials))]
    (folder / "vocab.txt").write_text("\n".join(specials + words) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": true}')
    return str(folder)


FAMILY_CLASSES = {
    "distilbert": ("DistilBERTEncoder", tx.data.BERTTokenizer),
    "electra": ("ELECTRAEncoder", tx.data.BERTTokenizer),
    "roberta": ("RoBERTaEncoder", tx.data.GPT2BPETokenizer),
    "albert": ("ALBERTEncoder", tx.data.SentencePieceTokenizer),
}


@pytest.mark.parametrize("family", sorted(FAMILY_CLASSES))
def test_bert_classifier_fine_tunes_another_family_by_naming_its_folder(tmp_path, family):
    """One hparam, data.hparams.pretrained, switches the example to another family: its
    tokenizer in the input pipeline, its encoder class in the model."""
    require_package(BBC_NEWS)
    folder = family_folder_with_vocabulary(tmp_path, family)
    hparams = experiment(
        "bert_classifier",
        f"data.hparams.pretrained={folder}",
        "data.hparams.max_seq_length=32",
        "data.hparams.batch_size=16",
        "run.train_steps=4",
        "run.checkpoint_every_steps=4",
        "run.verbose=0",
        f"run.model_dir={tmp_path / 'run'}",
    )
    trainer = tx.run.Trainer.from_hparams(hparams)
    classifier = next(
        layer for layer in trainer.model.layers if isinstance(layer, tx.modules.BERTClassifier)
    )
    encoder_type, tokenizer_class = FAMILY_CLASSES[family]
    assert classifier.hparams.encoder_type == encoder_type
    assert type(trainer.data.preprocessor.tokenizer) is tokenizer_class
    before = classifier.encoder.word_embedder.embedding.numpy().copy()
    trainer.train()
    assert np.isfinite(trainer.evaluate("eval")["loss"])
    assert not np.array_equal(classifier.encoder.word_embedder.embedding.numpy(), before)


def test_bert_classifier_has_static_shapes_for_tpus(tmp_path):
    hparams = bert_experiment(tmp_path, "data.hparams.pad_to_max_seq_length=true")
    trainer = tx.run.Trainer.from_hparams(hparams)
    trainer.check_static_shapes()
    trimmed = bert_experiment(tmp_path, "data.hparams.pad_to_max_seq_length=false")
    with pytest.raises(ValueError, match="input_ids"):
        tx.run.Trainer.from_hparams(trimmed).check_static_shapes()


def test_bert_pretraining_loss_falls_on_real_text():
    require_package(MINILM)  # its vocabulary
    history = bert_pretrain.main(
        [
            "train_steps=40",
            "warmup_steps=4",
            "learning_rate=0.005",
            "log_every_steps=10",
            "max_chapters=60",
            "batch_size=16",
            "encoder.hidden_size=32",
            "encoder.intermediate_size=64",
            "encoder.num_hidden_layers=1",
        ]
    )
    assert history[-1]["mlm_loss"] < history[0]["mlm_loss"] - 1.0, history


def check_quick_translation(result):
    """A translation example's --quick result: the loss falls over 20 steps on 600 verses, the 24
    test verses are translated, and BLEU is sacrebleu's own."""
    import sacrebleu

    losses = result["history"]["loss"]
    assert losses[-1] < losses[0]
    test_verses = bible_corpus.load_bible()["test"][:24]
    assert result["references"] == [verse.english for verse in test_verses]
    assert len(result["hypotheses"]) == 24
    assert all(isinstance(h, str) and "<EOS>" not in h for h in result["hypotheses"])
    expected = sacrebleu.corpus_bleu(
        result["hypotheses"], [result["references"]], lowercase=True, force=True
    )
    assert result["bleu"] == pytest.approx(expected.score)


def quick_translation_run(folder):
    """seq2seq_attn's README command with --quick, in a fresh process; its result is
    ``run/result.json`` in ``folder``."""
    model_dir = folder / "run"
    args = ("--config", config_of("seq2seq_attn"), "--quick", f"run.model_dir={model_dir}")
    return example_run(folder, "seq2seq_attn", *args), model_dir


QUICK_TEST = "test_seq2seq_attn_quick_mode_trains_translates_scores_and_reads_well_in_a_log"
process_job(QUICK_TEST, quick_translation_run)


def test_seq2seq_attn_quick_mode_trains_translates_scores_and_reads_well_in_a_log():
    """The quick mode as a user runs it, its output going to a pipe (a log): TensorFlow quiet, no
    Keras warning, no progress bar's long lines or control characters, a line per stage, and the
    note that says what a quick run is for."""
    process, model_dir = job_result(QUICK_TEST)
    assert process.returncode == 0, process.stderr
    out, err = process.stdout, process.stderr
    assert_no_tensorflow_info_lines(out + err)
    assert "UserWarning" not in err, err
    for text in (out, err):
        assert max(len(line) for line in text.splitlines()) <= 500, text
        assert "\x08" not in text and "\x1b" not in text, repr(text)
    lines = out.splitlines()
    stages = [
        "reading the Bible verse pairs (es -> en): 600 train, 338 dev, 24 test",
        "training 20 steps",
        "evaluating dev (338 verses)",
        "translating test (24 verses, beam 3)",
    ]
    assert [line for line in lines if line in stages] == stages, out
    note = lines[-1]
    assert note.startswith("quick run: this only checks that the whole pipeline runs"), out
    assert f"{seq2seq_attn.FULL_RUN} (examples/seq2seq_attn/README.md)" in note

    # The result the run wrote: what it printed, and sacrebleu's BLEU of its translations.
    with open(model_dir / "result.json", encoding="utf-8") as f:
        result = json.load(f)
    check_quick_translation(result)
    printed = re.search(r"test BLEU \(24 verses, beam 3\): (\d+\.\d\d)", out)
    assert float(printed.group(1)) == pytest.approx(result["bleu"], abs=0.005)
    # The run kept its checkpoints and its resolved configuration.
    assert (model_dir / "hparams.yaml").exists() and (model_dir / "ckpt-20.index").exists()


def test_each_quick_mode_states_the_figures_of_its_readme():
    """What a quick run's last line says the full run reaches is what the README measured."""
    quick = 0
    for name in EXAMPLES:
        module = importlib.import_module(f"examples.{name}.train")
        if not hasattr(module, "QUICK"):
            continue
        quick += 1
        with open(os.path.join(ROOT, "examples", name, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        figures = re.findall(r"\d+\.\d+", module.FULL_RUN)
        assert figures and all(figure in readme for figure in figures), (name, module.FULL_RUN)
    assert quick == 9


def transformer_quick_runs(folder):
    """transformer's quick run in a fresh process, then a longer one resuming it; the result of
    each (``run/result.json``, which each run writes)."""
    model_dir = folder / "run"
    args = ("--config", config_of("transformer"), "--quick", f"run.model_dir={model_dir}")
    results = []
    for extra in ((), ("run.train_steps=30",)):
        process = example_run(folder, "transformer", *args, *extra)
        if process.returncode != 0:
            return process.stderr, results, model_dir
        with open(model_dir / "result.json", encoding="utf-8") as f:
            results.append(json.load(f))
    return None, results, model_dir


TRANSFORMER_TEST = "test_transformer_quick_mode_trains_translates_resumes_and_scores_with_sacrebleu"
process_job(TRANSFORMER_TEST, transformer_quick_runs)


def test_transformer_quick_mode_trains_translates_resumes_and_scores_with_sacrebleu():
    error, results, model_dir = job_result(TRANSFORMER_TEST)
    assert error is None, error
    result, resumed = results
    losses = result["history"]["loss"]
    check_quick_translation(result)
    # The decoder tied to the target embedder has no config of its own, yet the checkpoints hold
    # every weight: a longer run resumes at step 20 and trains one more interval.
    assert len(resumed["history"]["loss"]) == 1
    assert resumed["history"]["loss"][0] < losses[0]
    assert (model_dir / "ckpt-30.index").exists()


def test_language_model_quick_mode_reports_the_exact_held_out_perplexity(tmp_path):
    from examples.language_model import train as language_model

    require_package(BBC_NEWS)
    config = config_of("language_model")
    # The Transformer trains in mixed precision, the LSTM in float32.
    overrides = [f"run.model_dir={tmp_path / 'run'}", "run.verbose=0"]
    overrides += ["models.transformer.run.precision=mixed_bfloat16"]
    result = language_model.main(["--config", config, "--quick", *overrides])
    # Every token of the 8 test articles, and each article's end, is a target exactly once.
    articles = bbc_news.load_bbc_news().test[:8]
    targets = sum(len(bbc_news.tokenize(a.text).split()) + 1 for a in articles)
    assert result["tokens"]["test"] == targets
    assert all(np.isfinite(result["unigram"][split]) for split in ("dev", "test"))
    for name in ("lstm", "transformer"):
        outcome = result["models"][name]
        losses = outcome["history"]["loss"]
        assert losses[-1] < losses[0]  # 30 steps on 60 articles: the loss falls
        # The evaluated model is the trained one, or after mixed-precision training a float32
        # copy of it.
        trained, evaluated = outcome["trainer"].model, outcome["model"]
        assert trained.dtype_policy.compute_dtype == {"lstm": "float32"}.get(name, "bfloat16")
        assert (evaluated is trained) == (name == "lstm")
        assert evaluated.dtype_policy.compute_dtype == "float32"
        for trained_weight, weight in zip(trained.weights, evaluated.weights, strict=True):
            np.testing.assert_array_equal(trained_weight.numpy(), weight.numpy())
        # exp(total NLL / tokens), recomputed with NumPy from its logits.
        total, tokens = 0.0, 0
        for features, labels in result["data"]["test"]:
            logits = evaluated.predict_on_batch(features).astype(np.float64)
            top = logits.max(axis=-1, keepdims=True)
            log_probs = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))
            picked = np.take_along_axis(log_probs, labels.numpy()[..., None], axis=-1)[..., 0]
            valid = np.arange(labels.shape[1])[None, :] < features["length"].numpy()[:, None]
            total -= picked[valid].sum()
            tokens += int(valid.sum())
        assert tokens == targets == outcome["test"]["tokens"]
        assert outcome["test"]["perplexity"] == pytest.approx(np.exp(total / tokens), rel=1e-4)
        assert np.isfinite(outcome["dev"]["perplexity"])
        prompts = ("the government said | ", "the film | ")
        assert [s[: len(p)] for s, p in zip(outcome["samples"], prompts, strict=True)] == [*prompts]
        assert all(isinstance(s, str) and "<EOS>" not in s for s in outcome["samples"])
        # Each model kept its checkpoints and its resolved configuration in its own folder.
        assert (tmp_path / "run" / name / "hparams.yaml").exists()


def test_gpt2_generation_continues_prompts_as_transformers_generate(capsys):
    from examples.gpt2_generation import train as gpt2_generation

    # The tiny random GPT-2 with a real BPE vocabulary, and what transformers generated from it.
    folder = os.path.join(ROOT, "tests", "fixtures", "families", "gpt2_bpe")
    with open(os.path.join(folder, "reference.json"), encoding="utf-8") as f:
        reference = json.load(f)
    arrays = np.load(os.path.join(folder, "reference.npz"))
    margins = ("greedy_margin", "beam_cut_margin", "beam_final_margin")
    assert min(reference[k] for k in margins) > 1e-2  # transformers and texkit agree: no near-ties
    prompts = reference["prompts"]
    args = ["--pretrained", folder, "--max-new-tokens", "12", "--beam-width", "4", "--seed", "7"]
    result = gpt2_generation.main(args + [arg for p in prompts for arg in ("--prompt", p)])

    rows = zip(arrays["prompt_ids"], arrays["prompt_lengths"], strict=True)
    assert result["prompt_ids"] == [row[:n].tolist() for row, n in rows]  # as transformers'
    for name in ("greedy", "beam"):  # transformers' generate, each prompt on its own
        assert [r["ids"] for r in result[name]] == arrays[name].tolist(), name
        assert [r["text"] for r in result[name]] == reference[f"{name}_text"], name
    printed = capsys.readouterr().out
    assert "RANDOM weights" in printed
    assert all(repr(r["text"]) in printed for name in ("greedy", "beam") for r in result[name])

    # Sampling: valid ids, text, and the same draws again for the same seed.
    generator, end = result["generator"], result["generator"].end
    for row in result["sample"]:
        assert 0 < len(row["ids"]) <= 12 and all(0 <= i < 2000 for i in row["ids"])  # vocabulary
        assert end not in row["ids"][:-1] and isinstance(row["text"], str)
    ids, prompt_lengths = generator.encode(prompts)
    again = generator.texts(*generator.sample(ids, prompt_lengths, tf.constant([7, 0])))
    assert again == result["sample"]
    other = generator.texts(*generator.sample(ids, prompt_lengths, tf.constant([8, 0])))
    assert [r["ids"] for r in other] != [r["ids"] for r in result["sample"]]
