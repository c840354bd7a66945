"""detokenize of every tokenizer class against the reference implementations' ``decode``.

``tests/fixtures/detokenize/reference.npz`` (made by ``make_fixture.py`` there with the
``sentencepiece`` package, ``tokenizers`` and transformers, none needed here) holds id sequences
for the small tokenizers of the other fixtures (ids of texts, uniform random ids, and sequences
of special ids, ``▁`` pieces, punctuation and byte tokens that spell invalid UTF-8) and what
the references decode them to. Each case is checked whole, in one batch.
"""

import json
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from texkit.data.tokenizers import (
    BERTTokenizer,
    ByteLevelBPETokenizer,
    GPT2BPETokenizer,
    SentencePieceTokenizer,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "detokenize" / "reference.npz"
DATA = dict(np.load(FIXTURE))
META = json.loads(str(DATA["meta"]))
CASES = tuple(META["cases"])
SENTENCEPIECE_STYLES = {"albert": "albert", "t5": "t5", "t5_spaces": "t5"}


def rows(values, splits):
    return [values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]


def case_ids(name):
    """The case's id sequences, as int32 arrays."""
    return rows(DATA[f"{name}_ids"], DATA[f"{name}_splits"])


def case_texts(name, ref):
    """The reference ``ref``'s decode of every sequence of the case."""
    return [
        row.tobytes().decode("utf-8")
        for row in rows(DATA[f"{name}_{ref}"], DATA[f"{name}_{ref}_splits"])
    ]


@cache
def tokenizer_of(name, clean_up=False):
    """texkit's tokenizer of a case (``clean_up``: WordPiece with transformers' cleanup)."""
    case = META["cases"][name]
    if case["kind"] == "sentencepiece":
        model = ROOT / case["model"]
        if name == "t5_spaces":
            return _t5_spaces(model)
        if name in SENTENCEPIECE_STYLES:
            return SentencePieceTokenizer(model, style=SENTENCEPIECE_STYLES[name])
        return SentencePieceTokenizer.from_pretrained(model.parent)
    folder = ROOT / case["folder"]
    if case["kind"] == "bpe":
        return GPT2BPETokenizer.from_pretrained(folder, style=name)
    if case["kind"] == "tokenizer_json":
        return ByteLevelBPETokenizer.from_pretrained(folder)
    if clean_up:
        return BERTTokenizer.from_pretrained(folder, clean_up_tokenization_spaces=True)
    return BERTTokenizer.from_pretrained(folder)


def _t5_spaces(model):
    """T5's test model with ``remove_extra_whitespaces: false`` (a second ``normalizer_spec``
    appended, which protocol buffers merge into the first), read from a temporary file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spiece.model"
        path.write_bytes(model.read_bytes() + bytes.fromhex(META["t5_spaces_suffix"]))
        return SentencePieceTokenizer(path, style="t5")


def detokenized(tokenizer, ids, skip_special_tokens=True):
    """texkit's decode of every sequence, in one batch."""
    batch = tf.RaggedTensor.from_row_lengths(np.concatenate(ids), [len(row) for row in ids])
    texts = tokenizer.detokenize(batch, skip_special_tokens=skip_special_tokens).numpy()
    return [text.decode("utf-8") for text in texts.tolist()]


def mismatches(got, expected, ids):
    return [(row.tolist(), g, e) for row, g, e in zip(ids, got, expected, strict=True) if g != e]


@pytest.mark.parametrize("name", CASES)
def test_detokenize_equals_the_reference_decode(name):
    ids, refs = case_ids(name), META["cases"][name]["refs"]
    tokenizer = tokenizer_of(name)
    if "library" in refs:  # SentencePiece: the sentencepiece package's decode
        assert mismatches(detokenized(tokenizer, ids), case_texts(name, "library"), ids) == []
    else:
        assert mismatches(detokenized(tokenizer, ids), case_texts(name, "hf"), ids) == []
        kept = detokenized(tokenizer, ids, skip_special_tokens=False)
        assert mismatches(kept, case_texts(name, "hf_kept"), ids) == []
    if "hf_cleanup" in refs:
        cleaned = detokenized(tokenizer_of(name, clean_up=True), ids)
        assert mismatches(cleaned, case_texts(name, "hf_cleanup"), ids) == []
    # The sequences hold what decoding treats apart: replacement characters among them.
    assert sum("\ufffd" in text for text in case_texts(name, refs[0])) > (
        20
        if META["cases"][name]["kind"] in ("bpe", "tokenizer_json") or name in BYTE_MODELS
        else -1
    )


BYTE_MODELS = ("llama", "gemma", "unigram")


@pytest.mark.parametrize("name", BYTE_MODELS)
def test_byte_fallback_detokenize_equals_hugging_face_but_where_the_library_differs(name):
    """Hugging Face's Llama and Gemma tokenizers decode as the library but on three things,
    where texkit keeps the library's text: ``<unk>`` (special there: skipped, not `` ⁇ ``), a
    run of byte pieces that is not UTF-8 (there every byte of the run is U+FFFD, valid
    characters in it too) and, for a model that removes extra whitespace, the leading ``▁``
    pieces (there only one space is dropped)."""
    ids, tokenizer = case_ids(name), tokenizer_of(name)
    got, hf = detokenized(tokenizer, ids), case_texts(name, "hf")
    library = case_texts(name, "library")
    differ = [i for i in range(len(ids)) if got[i] != hf[i]]
    assert len(differ) == META["hf_differs_from_library"][name] < len(ids) // 2
    space = tokenizer.token_to_id("\u2581")
    for i in differ:
        row = [t for t in ids[i].tolist() if t not in tokenizer.special_ids]
        leading_space = name == "unigram" and row[:1] == [space]
        assert tokenizer.unk_id in row or "\ufffd" in library[i] or leading_space, row


def test_tensorflow_texts_detokenize_drops_every_leading_space():
    """Why SentencePiece decodes with texkit's ops: ``tensorflow_text``'s ``detokenize`` drops
    every space at the start of a text; the library does so only for a model that removes extra
    whitespace (ALBERT's and T5's test models: the two agree), otherwise only the dummy
    prefix's."""
    import tensorflow_text as tf_text

    counts = {}
    for name in ("albert", "t5", "t5_spaces"):
        model = (ROOT / META["cases"][name]["model"]).read_bytes()
        if name == "t5_spaces":
            model += bytes.fromhex(META["t5_spaces_suffix"])
        tokenizer = tf_text.SentencepieceTokenizer(model=model)
        ids = case_ids(name)
        skipped = tokenizer_of(name).special_ids
        kept = [row[~np.isin(row, skipped)] for row in ids]
        batch = tf.ragged.constant([row.tolist() for row in kept], tf.int32)
        texts = [text.decode("utf-8") for text in tokenizer.detokenize(batch).numpy().tolist()]
        expected = case_texts(name, "library")
        counts[name] = len(mismatches(texts, expected, ids))
        # It only ever drops the leading spaces the library keeps.
        assert all(t in (e, e.lstrip(" ")) for t, e in zip(texts, expected, strict=True))
    assert counts["albert"] == counts["t5"] == 0 and counts["t5_spaces"] >= 5


def test_bert_from_pretrained_reads_clean_up_tokenization_spaces():
    """The contractions folder says ``clean_up_tokenization_spaces: true`` (its references are
    decoded so); the cased one says nothing (false)."""
    tokenizer = tokenizer_of("bert_contractions")
    assert tokenizer.clean_up_tokenization_spaces
    assert not tokenizer_of("bert_cased").clean_up_tokenization_spaces
    ids, expected = case_ids("bert_contractions"), case_texts("bert_contractions", "hf")
    plain = BERTTokenizer(tokenizer.vocab_file, clean_up_tokenization_spaces=False)
    assert len(mismatches(detokenized(plain, ids), expected, ids)) > 10  # the cleanup acts
    with pytest.raises(TypeError, match="clean_up_tokenization_spaces must be a bool"):
        BERTTokenizer(tokenizer.vocab_file, clean_up_tokenization_spaces=1)
