"""The character-level text pipeline (``unit: character``) on real files, against Python's own
reading of the lines (a Python ``str`` is a sequence of code points, as the pipeline's
characters are)."""

import numpy as np
import pytest

from texkit.data import CharVocab, MonoTextData, MultiAlignedData, PairedTextData
from texkit.hparams import HParamsError

# Non-ASCII letters, an emoji outside the BMP, a combining accent, tabs, runs of spaces, a blank
# line (skipped by the default policy), CRLF endings and an invalid byte (replaced with U+FFFD).
LINES = ["héllo  wörld\r", "\tnaïve café 😀", "   ", "e\u0301 x", "in the beginning god created"]
TEXT = "".join(f"{line}\n" for line in LINES).encode() + b"a\xffb\n"


def python_lines(data: bytes):
    lines = data.split(b"\n")[:-1]
    return [line.rstrip(b"\r").decode("utf-8", "replace") for line in lines]


@pytest.fixture
def paths(tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(TEXT)
    vocab = CharVocab.from_texts(["héllo wörld\tnaïve café 😀 the beginning"], min_count=1)
    vocab.save(str(tmp_path / "chars.txt"))
    return {"text": str(text), "vocab": str(tmp_path / "chars.txt"), "dir": tmp_path}


def mono(paths, **dataset):
    hparams = dataset.pop("hparams", {})
    spec = {"files": [paths["text"]], "vocab_file": paths["vocab"], "unit": "character"}
    return MonoTextData(
        {"dataset": {**spec, **dataset}, "shuffle": False, "batch_size": 2, **hparams}
    )


def rows(data, prefix=""):
    """(characters, ids) of every example, unpadded."""
    out = []
    for batch in data.dataset.as_numpy_iterator():
        for text, ids, length in zip(
            batch[f"{prefix}text"], batch[f"{prefix}text_ids"], batch[f"{prefix}length"],
            strict=True,
        ):  # fmt: skip
            assert (ids[length:] == 0).all()
            out.append(([t.decode() for t in text[:length]], ids[:length].tolist()))
    return out


def test_every_character_is_a_token_and_ids_round_trip_to_the_text(paths):
    data = mono(paths)
    vocab = CharVocab(paths["vocab"])
    expected = [line for line in python_lines(TEXT) if line.strip()]
    got = rows(data)
    assert [chars for chars, _ in got] == [["<BOS>", *line, "<EOS>"] for line in expected]
    ids_of = vocab.token_to_id_map_py
    for (chars, ids), line in zip(got, expected, strict=True):
        assert ids == [ids_of.get(c, vocab.unk_token_id) for c in chars]
        known = "".join(c if c in ids_of else vocab.unk_token for c in line)
        assert vocab.map_ids_to_text_py(ids) == known
    assert data.report.fields[0].counts["empty"] == 1
    assert data.report.fields[0].counts["invalid_utf8"] == 1


def test_max_seq_length_counts_characters_and_pads_to_a_static_shape(paths):
    data = mono(paths, max_seq_length=5, pad_to_max_seq_length=True, bos_token="")
    expected = [list(line)[:5] for line in python_lines(TEXT) if line.strip()]
    assert [chars for chars, _ in rows(data)] == [[*c, "<EOS>"] for c in expected]
    for batch in data.dataset:
        assert batch["text_ids"].shape[1] == 6
    kept = mono(paths, max_seq_length=5, length_filter_mode="discard")
    assert [chars[1:-1] for chars, _ in rows(kept)] == [
        list(line) for line in python_lines(TEXT) if line.strip() and len(line) <= 5
    ]


def test_bucketing_groups_lines_by_their_number_of_characters(paths):
    data = mono(paths, hparams={"bucket_boundaries": [8], "batch_size": 4})
    lengths = [batch["length"].tolist() for batch in data.dataset.as_numpy_iterator()]
    assert sorted(n for batch in lengths for n in batch) == sorted(
        len(line) + 2 for line in python_lines(TEXT) if line.strip()
    )
    for batch in lengths:
        assert len({n < 8 for n in batch}) == 1, lengths


def test_paired_data_with_characters_on_one_side(paths, tmp_path):
    target = tmp_path / "target.txt"
    lines = ["a b", "c d", "skipped with the blank source line", "e", "f g", "h"]
    target.write_text("".join(f"{line}\n" for line in lines))
    (tmp_path / "words.txt").write_text("a\nb\nc\n")
    data = PairedTextData(
        {
            "source_dataset": {"files": [paths["text"]], "vocab_file": paths["vocab"],
                               "unit": "character"},
            "target_dataset": {"files": [str(target)], "vocab_file": str(tmp_path / "words.txt")},
            "shuffle": False, "batch_size": 5,
        }
    )  # fmt: skip
    batch = next(iter(data))
    source = [line for line in python_lines(TEXT) if line.strip()]
    lengths = batch["source_length"].numpy().tolist()
    assert lengths == [len(line) + 1 for line in source]  # the source has no BOS by default
    kept = lines[:2] + lines[3:]
    assert batch["target_length"].numpy().tolist() == [len(t.split()) + 2 for t in kept]
    assert isinstance(data.source_vocab, CharVocab)
    assert not isinstance(data.target_vocab, CharVocab)


def test_units_must_agree_to_share_a_vocabulary(paths):
    with pytest.raises(HParamsError, match="'target_dataset.unit'"):
        PairedTextData(
            {
                "source_dataset": {"files": [paths["text"]], "vocab_file": paths["vocab"],
                                   "unit": "character"},
                "target_dataset": {"files": [paths["text"]]},
                "vocab_share": True,
            }
        )  # fmt: skip
    with pytest.raises(HParamsError, match="'datasets.1.unit'"):
        MultiAlignedData(
            {
                "datasets": [
                    {"files": [paths["text"]], "vocab_file": paths["vocab"],
                     "unit": "character", "data_name": "x"},
                    {"files": [paths["text"]], "vocab_share_with": 0, "data_name": "y"},
                ]
            }
        )  # fmt: skip


def test_bad_hparams_name_the_key(paths):
    with pytest.raises(HParamsError, match="'dataset.unit': expected 'token' or 'character'"):
        mono(paths, unit="char")
    with pytest.raises(HParamsError, match="'dataset.delimiter': must be None with unit"):
        mono(paths, delimiter=" ")
    with pytest.raises(HParamsError, match="'dataset.unit': a tokenizer"):
        MonoTextData(
            {"dataset": {"files": [paths["text"]], "vocab_file": paths["vocab"],
                         "unit": "character"}},
            tokenizer=lambda lines: lines,
        )  # fmt: skip


def test_a_word_vocabulary_is_not_a_character_vocabulary(paths):
    words = paths["dir"] / "words.txt"
    words.write_text("a\nthe\n")
    with pytest.raises(ValueError, match=r"words.txt:2: 'the' is not one character.*dataset.voc"):
        mono(paths, vocab_file=str(words))


def test_ids_of_the_whole_pipeline_decode_in_the_graph_too(paths):
    data = mono(paths, bos_token="", eos_token="")
    vocab = data.vocab
    batch = next(iter(data))
    texts = vocab.map_ids_to_tokens(batch["text_ids"])
    joined = np.char.replace(
        np.asarray([b"".join(row).decode() for row in texts.numpy()]), vocab.pad_token, ""
    )
    assert joined.tolist() == [
        "".join(c if c in vocab.token_to_id_map_py else vocab.unk_token for c in line)
        for line in python_lines(TEXT)[:2]
    ]
