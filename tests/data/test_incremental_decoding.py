"""IncrementalDecoder: the texts of the pushes and the flush, joined, equal detokenize.

For every tokenizer of ``tests/fixtures/detokenize`` (SentencePiece in its three styles and the
byte-fallback models, GPT-2's and RoBERTa's BPE, byte-level ``tokenizer.json``, WordPiece with
and without transformers' cleanup): the fixture's id sequences (ids of texts, random ids,
special ids, byte tokens that spell whole, cut and invalid characters) and more random ones,
pushed one id at a time and in random chunks, against ``detokenize`` of the whole sequence
(which ``test_detokenize_parity`` checks against the references).
"""

import zlib

import numpy as np
import pytest
import tensorflow as tf

from tests.data.test_detokenize_parity import CASES, META, case_ids, detokenized, tokenizer_of
from texkit.data.tokenizers import BatchIncrementalDecoder, BERTTokenizer, IncrementalDecoder
from texkit.data.tokenizers.incremental import Utf8Stream

KEPT = ("gpt2", "json_llama3", "json_tekken", "llama", "t5", "bert_cased")


def streamed(decoder, ids, chunks):
    """The decoder's texts for ``ids`` pushed in pieces of the given sizes, then the flush."""
    pieces, start = [], 0
    for size in chunks:
        pieces.append(decoder.push(ids[start : start + size]))
        start += size
    assert start == len(ids)
    pieces.append(decoder.flush())
    return pieces


def random_chunks(rng, length):
    chunks = []
    while sum(chunks) < length:
        chunks.append(int(min(rng.integers(0, 5), length - sum(chunks))))
    return chunks


def sequences_of(name, tokenizer, rng):
    """The fixture's sequences and 60 more: random ids, and for WordPiece punctuation and
    contraction tokens that transformers' cleanup joins."""
    size = IncrementalDecoder(tokenizer).vocab_size
    rows = [row.astype(np.int64) for row in case_ids(name)]
    rows += [rng.integers(0, size, rng.integers(1, 40)) for _ in range(40)]
    if META["cases"][name]["kind"] == "wordpiece":
        words = [".", ",", "'", "?", "n", "t", "s", "m", "re", "ve", "do", "not", "the", "a"]
        pool = np.array([tokenizer.token_to_id(w) for w in words if w in tokenizer.vocab])
        rows += [rng.choice(pool, rng.integers(1, 30)) for _ in range(20)]
    else:
        rows += [rng.integers(0, size, rng.integers(30, 60)) for _ in range(20)]
    return rows


def check_streaming(tokenizer, rows, rng, skip_special_tokens=True):
    whole = detokenized(tokenizer, rows, skip_special_tokens)
    decoder = IncrementalDecoder(tokenizer, skip_special_tokens=skip_special_tokens)
    for row, expected in zip(rows, whole, strict=True):
        one_by_one = streamed(decoder, row, [1] * len(row))
        assert "".join(one_by_one) == expected, (row.tolist(), one_by_one, expected)
        chunked = streamed(decoder, row, random_chunks(rng, len(row)))
        assert "".join(chunked) == expected, (row.tolist(), chunked, expected)
        # What is given is never taken back: each piece's U+FFFD are the whole text's.
        assert sum(piece.count("\ufffd") for piece in one_by_one) == expected.count("\ufffd")


@pytest.mark.parametrize("name", CASES)
def test_streamed_text_equals_detokenize(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    tokenizer = tokenizer_of(name)
    rows = sequences_of(name, tokenizer, rng)
    check_streaming(tokenizer, rows, rng)
    if name in KEPT:
        check_streaming(tokenizer, rows[::3], rng, skip_special_tokens=False)
    if META["cases"][name]["kind"] == "wordpiece":
        check_streaming(tokenizer_of(name, clean_up=True), rows, rng)


@pytest.mark.parametrize("name", ["llama", "gpt2", "json_qwen2", "unigram"])
def test_a_character_split_over_byte_tokens_waits_for_its_last_byte(name):
    tokenizer = tokenizer_of(name)
    if META["cases"][name]["kind"] == "sentencepiece":
        ids = [tokenizer.token_to_id(f"<0x{b:02X}>") for b in "神".encode()]
    else:
        ids = tokenizer.tokenize("神").numpy().tolist()
        ids = ids if len(ids) == 3 else [tokenizer.tokenize(" 神").numpy().tolist()[-1]]
    decoder = IncrementalDecoder(tokenizer)
    word = tokenizer.tokenize("God").numpy().tolist()
    assert decoder.push(word) == "God"
    pieces = [decoder.push(np.array([i], np.int32)) for i in ids]
    assert pieces[:-1] == [""] * (len(ids) - 1) and pieces[-1].endswith("神")
    # Cut short at the end: the reference's replacement characters, at the flush only.
    assert decoder.push(ids[:2]) == ""
    expected = detokenized(tokenizer, [np.array(word + ids + ids[:2])])[0]
    assert "God" + pieces[-1] + decoder.flush() == expected and expected.endswith("\ufffd")


@pytest.mark.parametrize("name", ["t5", "json_llama3", "bert_multilingual"])
def test_batch_decoder_gives_each_rows_text(name):
    tokenizer, rng = tokenizer_of(name), np.random.default_rng(7)
    decoder = BatchIncrementalDecoder(tokenizer, batch_size=4)
    ids = rng.integers(0, IncrementalDecoder(tokenizer).vocab_size, (4, 24))
    pieces = [decoder.push(ids[:, 0])]  # one id per row (a generation step)
    pieces += [decoder.push(tf.constant(ids[:, k : k + 5])) for k in range(1, 24, 5)]
    pieces.append(decoder.flush())
    got = ["".join(row) for row in zip(*pieces, strict=True)]
    assert got == detokenized(tokenizer, list(ids))


def test_bad_ids_are_refused_and_change_nothing():
    tokenizer = tokenizer_of("gpt2")
    decoder = IncrementalDecoder(tokenizer)
    size = decoder.vocab_size
    # é as its two bytes' tokens (GPT-2's byte symbols of 0xC3 and 0xA9).
    first_byte, second_byte = tokenizer.token_to_id("\u00c3"), tokenizer.token_to_id("\u00a9")
    first = tokenizer.tokenize("caf").numpy().tolist() + [first_byte]
    assert decoder.push(first) == "caf"  # the first byte of é waits
    for bad, match in (
        ([size], rf"ids must be in \[0, {size}\), got {size}"),
        ([-1], "got -1"),
        ([[1, 2]], r"shape \[n\]"),
        ([0.5], "integer ids"),
    ):
        with pytest.raises(ValueError, match=match):
            decoder.push(bad)
    assert decoder.push([second_byte]) + decoder.flush() == "é"
    assert decoder.push([]) == "" and decoder.push(np.int32(tokenizer.token_to_id("a"))) == "a"
    with pytest.raises(TypeError, match="tokenizer must be"):
        IncrementalDecoder(object())
    with pytest.raises(TypeError, match="skip_special_tokens must be a bool"):
        IncrementalDecoder(tokenizer, skip_special_tokens="yes")
    batch = BatchIncrementalDecoder(tokenizer, batch_size=2)
    with pytest.raises(ValueError, match="must have 2 rows, got 3"):
        batch.push([1, 2, 3])
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        BatchIncrementalDecoder(tokenizer, batch_size=0)


def test_push_costs_what_it_brings():
    """A long generation: the state kept between pushes stays a few bytes (no text so far is
    decoded again), for a byte-level and a SentencePiece tokenizer and WordPiece's cleanup."""
    rng = np.random.default_rng(3)
    for name, clean_up in (("json_qwen2", False), ("llama", False), ("bert_cased", True)):
        tokenizer = tokenizer_of(name, clean_up=clean_up)
        decoder = IncrementalDecoder(tokenizer)
        ids = rng.integers(0, decoder.vocab_size, 3000)
        pieces = [decoder.push(i) for i in ids]
        state = decoder._stream
        kept = len(getattr(state, "_pending", "")) + len(getattr(state, "_utf8", state)._pending)
        assert kept < 64, (name, kept)
        assert "".join(pieces) + decoder.flush() == detokenized(tokenizer, [ids])[0]


def test_cleanup_never_cuts_inside_a_pattern(tmp_path):
    """WordPiece tokens that hold the cleanup's patterns themselves (``n't``, ``'s``), so that a
    cut between two characters that a pattern holds side by side would change the text."""
    words = ["n't", "'s", "'re", "n", "'", "t", "s", "do", "not", ".", "a", "##'", "##t", "##n"]
    (tmp_path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)
    )
    tokenizer = BERTTokenizer(str(tmp_path / "vocab.txt"), clean_up_tokenization_spaces=True)
    rng = np.random.default_rng(5)
    rows = [rng.integers(0, 5 + len(words), rng.integers(1, 25)) for _ in range(300)]
    check_streaming(tokenizer, rows, rng)
    assert sum("n't" in text for text in detokenized(tokenizer, rows)) > 30


def test_utf8_stream_replaces_as_python_however_the_bytes_are_split():
    rng = np.random.default_rng(11)
    pool = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEE]
    pool += [0xF0, 0xF1, 0xF4, 0xF5, 0xFF, 0x00]
    stream = Utf8Stream()
    for _ in range(3000):
        data = bytes(rng.choice(pool, rng.integers(1, 10)).tolist())
        cuts = sorted(rng.integers(0, len(data) + 1, rng.integers(0, 4)).tolist())
        parts = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        text = "".join(stream.push(part) for part in parts) + stream.flush()
        assert text == data.decode("utf-8", "replace"), data
