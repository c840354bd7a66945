"""The corpus of broken inputs (``tests/fixtures/broken``): every item read with texkit's own API
gives the outcome its row of ``expected.yaml`` says, and the committed files are exactly what
``make_corpus.py`` writes. Items that would hang or exhaust memory were texkit to regress
(``hostile: true``) are read in the sandbox (tests/hostile.py).

Successful reads are checked against what the rows spell out (tokens, label values) and, for
checkpoints, against the tensors in the file, not against texkit's own tables. A failed
checkpoint load must leave a model made from the valid folder as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
from safetensors.numpy import load_file

from texkit.data import MonoTextData, MultiAlignedData, PairedTextData, ScalarData, Vocab
from texkit.hparams import HParamsError
from texkit.modules import BERTEncoder
from texkit.pretrained import CheckpointError, load_checkpoint

CORPUS = os.path.join(os.path.dirname(__file__), "fixtures", "broken")
SCRIPT = os.path.join(CORPUS, "make_corpus.py")

with open(os.path.join(CORPUS, "expected.yaml"), encoding="utf-8") as _file:
    ITEMS = yaml.safe_load(_file)["items"]

DATASETS = {
    "MonoTextData": MonoTextData,
    "PairedTextData": PairedTextData,
    "ScalarData": ScalarData,
    "MultiAlignedData": MultiAlignedData,
}
ERRORS = {
    "ValueError": ValueError,
    "FileNotFoundError": FileNotFoundError,
    "CheckpointError": CheckpointError,
    "HParamsError": HParamsError,
}
SPECIAL_TOKENS = 4  # <PAD>, <BOS>, <EOS>, <UNK>

# Hugging Face names of a BERT checkpoint's tensors and the BERTEncoder weights they hold,
# written out here rather than taken from texkit's name table. "T": stored [out, in].
HF_TO_TEXKIT = {
    "embeddings.word_embeddings.weight": ("word_embedder.embedding", ""),
    "embeddings.position_embeddings.weight": ("position_embedder.embedding", ""),
    "embeddings.token_type_embeddings.weight": ("segment_embedder.embedding", ""),
    "embeddings.LayerNorm.weight": ("embedding_norm.gamma", ""),
    "embeddings.LayerNorm.bias": ("embedding_norm.beta", ""),
    "encoder.layer.0.attention.self.query.weight": ("blocks.0.self_attention.query.kernel", "T"),
    "encoder.layer.0.attention.self.value.bias": ("blocks.0.self_attention.value.bias", ""),
    "encoder.layer.0.attention.output.LayerNorm.weight": ("blocks.0.attention_norm.gamma", ""),
    "encoder.layer.0.intermediate.dense.weight": ("blocks.0.ffn_inner.kernel", "T"),
    "encoder.layer.0.output.dense.weight": ("blocks.0.ffn_output.kernel", "T"),
    "encoder.layer.0.output.LayerNorm.bias": ("blocks.0.ffn_norm.beta", ""),
    "pooler.dense.weight": ("pooler.kernel", "T"),
    "pooler.dense.bias": ("pooler.bias", ""),
}


def corpus_path(relative: str) -> str:
    return os.path.join(CORPUS, relative)


def with_corpus_paths(hparams: object) -> object:
    """``hparams`` with every ``files`` entry and ``vocab_file`` made a path in the corpus."""
    if isinstance(hparams, list):
        return [with_corpus_paths(item) for item in hparams]
    if not isinstance(hparams, dict):
        return hparams
    resolved = {}
    for key, value in hparams.items():
        if key == "files":
            resolved[key] = [corpus_path(path) for path in value]
        elif key == "vocab_file" and value:
            resolved[key] = corpus_path(value)
        else:
            resolved[key] = with_corpus_paths(value)
    return resolved


def assert_error(expect: dict, call) -> None:
    with pytest.raises(ERRORS[expect["error"]]) as info:
        call()
    message = str(info.value)
    for part in expect["message"]:
        assert part in message, f"{part!r} is not in the message: {message}"


def only_batch(data) -> dict:
    batches = list(data)
    assert len(batches) == 1, "the corpus' files fit in one batch"
    return {key: value.numpy() for key, value in batches[0].items()}


def tokens_of(batch: dict, text_key: str) -> list[list[str]]:
    """The tokens of each example as read: without padding, BOS and EOS."""
    lengths = batch[text_key[: -len("text")] + "length"]
    examples = []
    for row, length in zip(batch[text_key], lengths, strict=True):
        tokens = [token.decode("utf-8") for token in row[:length]]
        if tokens[:1] == ["<BOS>"]:
            tokens = tokens[1:]
        if tokens[-1:] == ["<EOS>"]:
            tokens = tokens[:-1]
        examples.append(tokens)
    return examples


def check_dataset(item: dict) -> None:
    expect = item["expect"]
    hparams = {"shuffle": False, "batch_size": 64, **with_corpus_paths(item["hparams"])}

    def read():
        return DATASETS[item["read"]](hparams)

    if "error" in expect:
        assert_error(expect, read)
        return
    data = read()
    report = data.report
    assert (report.examples, report.skipped) == (expect["examples"], expect["skipped"])
    assert {field.field: field.records for field in report.fields} == expect["records"]
    assert {field.field: dict(field.counts) for field in report.fields} == expect["counts"]
    batch = only_batch(data)
    for key, tokens in expect.get("tokens", {}).items():
        assert tokens_of(batch, key) == tokens
    for key, values in expect.get("values", {}).items():
        np.testing.assert_array_equal(batch[key], np.asarray(values, batch[key].dtype))
    assert len(next(iter(batch.values()))) == expect["examples"]


def check_vocab(item: dict) -> None:
    expect = item["expect"]

    def read():
        return Vocab(corpus_path(item["path"]))

    if "error" in expect:
        assert_error(expect, read)
        return
    vocab = read()
    assert vocab.size == expect["size"]
    assert vocab.tokens[SPECIAL_TOKENS:] == expect["tokens"]


def snapshot(model) -> dict[str, np.ndarray]:
    return {weight.path: weight.numpy().copy() for weight in model.weights}


def assert_holds_file_values(encoder, folder: str) -> None:
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    for name, (attribute, layout) in HF_TO_TEXKIT.items():
        variable = encoder
        for part in attribute.split("."):
            variable = variable[int(part)] if part.isdigit() else getattr(variable, part)
        expected = tensors[name].T if layout == "T" else tensors[name]
        np.testing.assert_array_equal(variable.numpy(), expected, err_msg=name)


def assert_loaded(expect: dict, report, encoder, folder: str) -> None:
    assert len(report.loaded) == expect["loaded"]
    assert report.unused == expect["unused"]
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    assert sorted(report.loaded) == sorted(tensors), "every tensor of the file, once"
    assert_holds_file_values(encoder, folder)


@pytest.fixture
def built_encoder():
    """A BERTEncoder made from the valid folder (a fresh one for each item)."""
    return BERTEncoder.from_pretrained(corpus_path("checkpoints/valid"))


def check_checkpoint(item: dict, built_encoder, monkeypatch) -> None:
    folder = corpus_path(item["path"])
    expect = item["expect"]
    made = []
    original_init = BERTEncoder.__init__

    def counting_init(self, *args, **kwargs):
        made.append(self)
        original_init(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(BERTEncoder, "__init__", counting_init)
        if "error" in expect:
            assert_error(expect, lambda: BERTEncoder.from_pretrained(folder))
            assert bool(made) == expect["builds"], f"BERTEncoders made before the error: {made}"
        else:
            encoder = BERTEncoder.from_pretrained(folder)
            assert_loaded(expect, encoder.load_report, encoder, folder)

    into_built = item["load_into_built"]
    before = snapshot(built_encoder)
    if "error" in into_built:
        assert_error(into_built, lambda: load_checkpoint(built_encoder, folder))
        after = snapshot(built_encoder)
        assert after.keys() == before.keys()
        for path, value in before.items():
            np.testing.assert_array_equal(after[path], value, err_msg=path)
    else:
        report = load_checkpoint(built_encoder, folder)
        assert_loaded(into_built, report, built_encoder, folder)


def checkpoint_outcomes(folder: str, valid: str) -> dict:
    """A sandbox case (tests/hostile.py): what ``BERTEncoder.from_pretrained(folder)`` and
    ``load_checkpoint`` of ``folder`` into a BERTEncoder made from ``valid`` do, as JSON
    values: the error's class names and message, whether a BERTEncoder was made before the
    first error, whether the built encoder's weights are unchanged after the second."""
    outcomes: dict = {}
    made = []
    original_init = BERTEncoder.__init__

    def counting_init(self, *args, **kwargs):
        made.append(1)
        original_init(self, *args, **kwargs)

    BERTEncoder.__init__ = counting_init
    try:
        BERTEncoder.from_pretrained(folder)
        outcomes["expect"] = {"returned": True}
    except Exception as error:  # noqa: BLE001 - every outcome is reported
        outcomes["expect"] = {"error": [k.__name__ for k in type(error).__mro__],
                              "message": str(error), "builds": bool(made)}  # fmt: skip
    finally:
        BERTEncoder.__init__ = original_init
    encoder = BERTEncoder.from_pretrained(valid)
    before = snapshot(encoder)
    try:
        load_checkpoint(encoder, folder)
        outcomes["load_into_built"] = {"returned": True}
    except Exception as error:  # noqa: BLE001 - every outcome is reported
        after = snapshot(encoder)
        unchanged = after.keys() == before.keys() and all(
            np.array_equal(after[path], value) for path, value in before.items()
        )
        outcomes["load_into_built"] = {"error": [k.__name__ for k in type(error).__mro__],
                                       "message": str(error), "unchanged": unchanged}  # fmt: skip
    return outcomes


def check_hostile_checkpoint(item: dict, sandbox) -> None:
    """A hostile item's two reads, in the sandbox; both must fail as the table says."""
    got = sandbox.run(checkpoint_outcomes, corpus_path(item["path"]),
                      corpus_path("checkpoints/valid")).value  # fmt: skip
    assert got is not None, "the case itself failed"
    for part in ("expect", "load_into_built"):
        want, outcome = item[part], got[part]
        assert "error" in want, f"{part}: a hostile item's reads must fail"
        assert "error" in outcome, f"{part}: no error"
        assert want["error"] in outcome["error"], f"{part}: {outcome}"
        for text in want["message"]:
            assert text in outcome["message"], f"{text!r} is not in: {outcome['message']}"
    assert got["expect"]["builds"] == item["expect"]["builds"]
    assert got["load_into_built"]["unchanged"], "a failed load changed the model"


def table_rows() -> list:
    """The items, those with a ``known_issue`` as strict xfails."""
    rows = []
    for item in ITEMS:
        issue = item.get("known_issue")
        marks = [pytest.mark.xfail(strict=True, reason=issue)] if issue else []
        rows.append(pytest.param(item, id=item["id"], marks=marks))
    return rows


@pytest.mark.parametrize("item", table_rows())
def test_broken_input_gives_its_expected_outcome(item, request, monkeypatch):
    if item["read"] in DATASETS:
        check_dataset(item)
    elif item["read"] == "Vocab":
        check_vocab(item)
    elif item["read"] == "from_pretrained" and item.get("hostile"):
        check_hostile_checkpoint(item, request.getfixturevalue("sandbox"))
    elif item["read"] == "from_pretrained":
        check_checkpoint(item, request.getfixturevalue("built_encoder"), monkeypatch)
    else:
        pytest.fail(f"{item['id']}: unknown read {item['read']!r}")


def test_the_table_covers_the_corpus_and_nothing_else():
    ids = [item["id"] for item in ITEMS]
    assert len(ids) == len(set(ids)), "ids must be unique"
    named = {item["path"] for item in ITEMS}
    in_corpus = set()
    for top in ("data", "checkpoints"):
        for root, _, files in os.walk(corpus_path(top)):
            for name in files:
                relative = os.path.relpath(os.path.join(root, name), CORPUS)
                in_corpus.add(relative.replace(os.sep, "/"))
    folders = {path for path in named if path.startswith("checkpoints/")}
    files_of_folders = {path for path in in_corpus if os.path.dirname(path) in folders}
    unnamed = in_corpus - named - files_of_folders
    # The one file read only beside another: the clean source of the paired items.
    assert unnamed == {"data/paired_source.txt"}, "every corpus file is an item of expected.yaml"
    absent = {p for p in named if not os.path.exists(corpus_path(p))}
    assert absent == {"data/missing.txt"}


def test_the_script_reproduces_the_committed_corpus(tmp_path):
    # Run as a maintainer runs it: a script in its own process.
    subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True)
    written = sorted(
        os.path.relpath(os.path.join(root, name), tmp_path).replace(os.sep, "/")
        for root, _, files in os.walk(tmp_path)
        for name in files
    )
    committed = sorted(
        os.path.relpath(os.path.join(root, name), CORPUS).replace(os.sep, "/")
        for top in ("data", "checkpoints")
        for root, _, files in os.walk(corpus_path(top))
        for name in files
    )
    assert written == committed
    for relative in written:
        with open(tmp_path / relative, "rb") as new, open(corpus_path(relative), "rb") as old:
            assert new.read() == old.read(), f"{relative} differs from what the script writes"
    total = sum(os.path.getsize(corpus_path(relative)) for relative in committed)
    assert total < 200_000, f"the corpus takes {total} bytes"
