"""BERTTokenizer against the reference BERT tokenizer on cased and multilingual vocabularies.

No real cased or multilingual BERT checkpoint is at hand, so ``tests/fixtures/bert_vocabs`` holds
two small WordPiece vocabularies trained on the committed Bible verses (cased, English and
Spanish) and on those plus generated text in other scripts (multilingual: CJK, kana, Hangul,
Cyrillic, Greek, Arabic, Devanagari, Thai), and ``reference.npz`` the ids that Hugging Face's
pure-Python BERT tokenizer gives on more than 10,000 texts per vocabulary: real verses,
generated sentences and seeded random strings over many Unicode blocks. The sets are ``cased``
and ``multilingual`` (``do_lower_case=False``, as bert-base-cased and
bert-base-multilingual-cased) and ``multilingual_uncased`` (the multilingual vocabulary with
``do_lower_case=True``, as bert-base-multilingual-uncased). ``make_fixture.py`` there
regenerates them.
"""

from pathlib import Path

import numpy as np
import pytest

from texkit.data import BERTTokenizer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bert_vocabs"
BATCH = 1024


@pytest.fixture(scope="module")
def reference():
    with np.load(FIXTURES / "reference.npz", allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def texts_of(reference, name):
    data = reference[f"{name}_text_bytes"].tobytes()
    offsets = reference[f"{name}_text_offsets"]
    return [data[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


def ids_of(reference, name):
    ids, splits = reference[f"{name}_ids"], reference[f"{name}_row_splits"]
    return [ids[a:b].tolist() for a, b in zip(splits[:-1], splits[1:], strict=True)]


def tokenize_all(tokenizer, texts):
    ids = []
    for start in range(0, len(texts), BATCH):
        ids += tokenizer.tokenize(texts[start : start + BATCH]).to_list()
    return ids


def assert_reference_ids(tokenizer, texts, expected):
    assert len(texts) == len(expected) >= 10_000
    got = tokenize_all(tokenizer, texts)
    wrong = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    examples = [
        (texts[i].decode("utf-8"), [tokenizer.id_to_token(t) for t in got[i]], expected[i])
        for i in wrong[:5]
    ]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ, e.g. {examples}"


@pytest.mark.parametrize(
    "name, folder, lowercase",
    [
        ("cased", "cased", False),
        ("multilingual", "multilingual", False),
        ("multilingual_uncased", "multilingual", True),
    ],
)
def test_matches_reference(reference, name, folder, lowercase):
    texts = texts_of(reference, "cased" if name == "cased" else "multilingual")
    expected = ids_of(reference, name)
    if lowercase:  # the folder says do_lower_case=False: as an uncased model, give it
        tokenizer = BERTTokenizer.from_pretrained(FIXTURES / folder, lowercase=True)
    else:
        tokenizer = BERTTokenizer.from_pretrained(FIXTURES / folder)
    assert tokenizer.lowercase == lowercase
    assert_reference_ids(tokenizer, texts, expected)


def test_constructor_with_lowercase_matches_reference(reference):
    """The constructor, ``lowercase=`` given: a sample of each set (the whole sets above)."""
    for name, folder, lowercase in (
        ("cased", "cased", False),
        ("multilingual", "multilingual", False),
        ("multilingual_uncased", "multilingual", True),
    ):
        tokenizer = BERTTokenizer(str(FIXTURES / folder / "vocab.txt"), lowercase=lowercase)
        texts = texts_of(reference, "cased" if name == "cased" else "multilingual")
        expected = ids_of(reference, name)
        step = 7
        got = tokenize_all(tokenizer, texts[::step])
        assert got == expected[::step], name


def test_fixture_vocabularies():
    for folder, size in (("cased", 3000), ("multilingual", 4000)):
        tokenizer = BERTTokenizer.from_pretrained(FIXTURES / folder)
        assert not tokenizer.lowercase and tokenizer.vocab_size == size
        assert tokenizer.vocab[:5] == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    multilingual = BERTTokenizer.from_pretrained(FIXTURES / "multilingual")
    # Every CJK ideograph is its own token; accents and case are kept.
    assert [multilingual.id_to_token(i) for i in multilingual.tokenize("我爱日本").numpy()] == [
        "我",
        "爱",
        "日",
        "本",
    ]
