"""TaggingData: its batches against the sentences the CoNLL reader gives (the real Turkish Web
Treebank and small CoNLL-2003 files), vocabularies and tag lists built or given, length limits,
and errors naming the file, line and tag."""

import collections

import numpy as np
import pytest

from tests.real_data import turkish_treebank_files
from texkit.data import TaggingData, Vocab, read_conll
from texkit.hparams import HParamsError

NER = (
    "-DOCSTART- -X- -X- O\n\n"
    "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\ncall NN I-NP O\n\n"
    "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n"
    "-DOCSTART- -X- -X- O\n\n"
    "-DOCSTART- -X- -X- O\n\n"
    "BRUSSELS NNP B-NP B-LOC\n1996-08-22 CD I-NP O\n\n"
    "The DT B-NP O\nEU NNP I-NP B-ORG\nsaid VBD B-VP O\n"
)
TAGS = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER", "O"]


@pytest.fixture(scope="module")
def ner(tmp_path_factory):
    path = tmp_path_factory.mktemp("ner") / "train.txt"
    path.write_text(NER, encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def plain(ner):
    """The examples of the file with the tags and vocabulary built from it."""
    data = tagging([ner])
    return data, unbatched(data)


def tagging(files, vocab=None, **dataset):
    top = dataset.pop("top", {})
    hparams = {"dataset": {"files": files, **dataset}, "shuffle": False, "batch_size": 3, **top}
    return TaggingData(hparams, vocab=vocab)


def unbatched(data):
    """Every example of an epoch as Python lists: (words, word ids, tag ids); the padding past
    each length checked to be "" or 0."""
    examples = []
    for batch in data:
        words, word_ids, tag_ids, lengths = (
            batch[key].numpy() for key in ("words", "word_ids", "tag_ids", "length")
        )
        for row, length in enumerate(lengths):
            examples.append(
                (
                    [w.decode("utf-8") for w in words[row, :length]],
                    word_ids[row, :length].tolist(),
                    tag_ids[row, :length].tolist(),
                )
            )
        padding = np.arange(words.shape[1])[None, :] >= lengths[:, None]
        assert (words[padding] == b"").all()
        assert not word_ids[padding].any() and not tag_ids[padding].any()
    return examples


def test_batches_equal_the_readers_sentences_on_the_turkish_treebank():
    web = turkish_treebank_files()[0]
    data = tagging([web], format="conllu", top={"batch_size": 1024})
    sentences = read_conll(web, "conllu")
    tags = sorted({tag for s in sentences for tag in s.column("UPOS")})
    assert data.tags == tags and data.num_tags == len(tags) == 14
    examples = unbatched(data)
    assert len(examples) == len(sentences) == data.num_examples == 2541
    words_seen = collections.Counter(w for s in sentences for w in s.column("FORM"))
    # The built vocabulary: the four special tokens, then every word, most frequent first.
    assert data.vocab.size == 4 + len(words_seen)
    assert data.vocab.tokens[4] == words_seen.most_common(1)[0][0]
    vocabulary = data.vocab.tokens
    for (words, word_ids, tag_ids), sentence in zip(examples, sentences, strict=True):
        assert words == sentence.column("FORM")
        assert [vocabulary[i] for i in word_ids] == words
        assert [tags[i] for i in tag_ids] == sentence.column("UPOS")


def test_conll2003_documents_are_not_sentences_and_empty_ones_are_counted(ner, plain):
    data, examples = plain
    assert data.tags == TAGS  # every tag of the file, sorted
    sentences = [s for s in read_conll(ner) if s.tokens]
    assert [words for words, _, _ in examples] == [s.column(0) for s in sentences]
    assert [[TAGS[i] for i in ids] for _, _, ids in examples] == [s.column(-1) for s in sentences]
    field = data.report.fields[0]
    assert (field.records, field.counts["empty"], data.num_examples) == (5, 1, 4)
    # Another column as tags, the chunk column, with tags collected from the file.
    chunks = tagging([ner], tag_column=2)
    assert chunks.tags == ["B-NP", "B-VP", "I-NP"]
    got = [[chunks.tags[i] for i in ids] for _, _, ids in unbatched(chunks)]
    assert got == [s.column(2) for s in sentences]


def test_an_unknown_tag_is_an_error_naming_file_line_and_tag(ner):
    with pytest.raises(ValueError, match=r"train\.txt:15: the tag 'B-LOC' is not in the tag list"):
        tagging([ner], tags=[t for t in TAGS if t != "B-LOC"])


def test_vocabularies_given_or_built_by_the_class_methods(ner, tmp_path):
    words = TaggingData.word_list(ner, lowercase=True)
    counts = collections.Counter(w.lower() for s in read_conll(ner) for w in s.column(0))
    assert words == [w for w, _ in sorted(counts.items(), key=lambda item: -item[1])]
    assert words[0] == "eu"
    assert TaggingData.tag_list([ner]) == TAGS
    vocab_file, tag_file = tmp_path / "vocab.txt", tmp_path / "tags.txt"
    vocab_file.write_text("\n".join(words[:5]) + "\n", encoding="utf-8")
    tag_file.write_text("\n".join(reversed(TAGS)) + "\n", encoding="utf-8")
    data = tagging([ner], vocab_file=str(vocab_file), tag_file=str(tag_file), lowercase=True)
    assert data.tags == TAGS[::-1]
    vocab = Vocab(str(vocab_file))
    examples = unbatched(data)
    for words_read, word_ids, _ in examples:
        lowered = [w.lower() for w in words_read]  # ASCII words: Python's lowercasing agrees
        assert word_ids == vocab.map_tokens_to_ids_py(lowered).tolist()
    assert vocab.unk_token_id in [i for _, ids, _ in examples for i in ids]
    shared = tagging([ner], vocab=data.vocab, tags=data.tags, lowercase=True)
    assert unbatched(shared) == examples


def test_max_seq_length_truncates_or_discards_and_pads(ner, plain):
    full = plain[1]
    cut = tagging([ner], max_seq_length=2, pad_to_max_seq_length=True)
    spec = cut.dataset.element_spec
    assert spec["words"].shape[1] == 2 and spec["tag_ids"].shape[1] == 2
    assert unbatched(cut) == [tuple(part[:2] for part in example) for example in full]
    assert cut.report.fields[0].counts["too_long"] == 2
    kept = tagging([ner], max_seq_length=2, length_filter_mode="discard")
    assert unbatched(kept) == [e for e in full if len(e[0]) <= 2]
    assert kept.report.skipped == 3  # two over-long sentences and one empty document


def test_buckets_and_shuffling_keep_every_sentence(ner, plain):
    data = tagging([ner], top={"bucket_boundaries": [3], "shuffle": True, "seed": 1})
    examples = unbatched(data)
    sizes = [len(words) for words, _, _ in examples]
    # Batches of 3 within each bucket: the two of length 2, then the two of 3 and 4.
    assert sorted(sizes[:2]) == [2, 2] and sorted(sizes[2:]) == [3, 4]
    assert sorted(examples) == sorted(plain[1])


@pytest.mark.parametrize(
    "dataset, key",
    [
        ({"format": "conll2000"}, "dataset.format"),
        ({"tag_column": "POS"}, "dataset.tag_column"),
        ({"word_column": "FORM"}, "dataset.word_column"),  # a CoNLL-U name, a conll2003 file
        ({"format": "conllu", "num_columns": 10}, "dataset.num_columns"),
        ({"tags": ["O"], "tag_file": "tags.txt"}, "dataset.tag_file"),
        ({"tags": ["O", "O"]}, "dataset.tags"),
        ({"length_filter_mode": "drop"}, "dataset.length_filter_mode"),
        ({"num_columns": "some"}, "dataset.num_columns"),
        ({"pad_to_max_seq_length": True}, "dataset.pad_to_max_seq_length"),
        ({"top": {"source": "tfds"}}, "source"),
    ],
)
def test_bad_hparams_name_their_key(ner, dataset, key):
    with pytest.raises(HParamsError, match=key.replace(".", r"\.")):
        tagging([ner], **dataset)


def test_bad_files_name_the_file(ner, tmp_path):
    copy = tmp_path / "copy.txt"
    copy.write_text(NER, encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a O\nb\xff O\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: the line is not valid UTF-8"):
        tagging([ner, str(bad)])
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        tagging([str(tmp_path / "missing.txt")])
    with pytest.raises(ValueError, match=r"hparams 'dataset\.tag_column'"):
        tagging([ner], tag_column=9)
    # Words of the file must stay as the scan found them (as in every texkit dataset).
    data = tagging([str(copy)])
    with open(copy, "a", encoding="utf-8") as file:
        file.write("\nmore O O O\n")
    with pytest.raises(ValueError, match="changed since the dataset was made"):
        unbatched(data)


def test_tag_ids_run_from_zero_without_special_tags(plain):
    data, examples = plain
    ids = np.concatenate([np.asarray(t) for _, _, t in examples])
    assert ids.min() == 0 and ids.max() == data.num_tags - 1 == len(TAGS) - 1
