"""Hostile tokenizer inputs and files: texts that used to take minutes, FIFOs, devices, deeply
nested JSON, ids out of range and giant lines.

Each case that could hang or exhaust memory on a regression runs in the sandbox
(tests/hostile.py: a child process under a 3 GiB address-space cap and a time limit); the time
limit is what checks that the work stays linear in the text. FIFOs and large files are made at
test time in temporary folders, never committed. The expected ids come from the algorithms
without the limits (on inputs short enough for them) or from the documented rule applied by
hand, never from the code under test alone.
"""

import json
import os
import random
import re
import shutil
import string
from pathlib import Path

import pytest
import tensorflow as tf

from texkit.data import BERTTokenizer, GPT2BPETokenizer, SentencePieceTokenizer
from texkit.data.tokenizers.byte_bpe import MAX_CHARS_PER_WORD, byte_symbols

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BPE = FIXTURES / "bpe"
SENTENCEPIECE = FIXTURES / "sentencepiece"
BERT_VOCAB = FIXTURES / "bert_vocabs" / "cased" / "vocab.txt"
MB = 1 << 20


def random_text(kind: str, n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    if kind == "letters":
        return "".join(rng.choice(string.ascii_letters) for _ in range(n))
    if kind == "lower":
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))
    if kind == "cjk":
        return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(n))
    if kind == "cjk_words":  # runs of 1 to 60 ideographs between spaces
        words, length = [], 0
        while length < n:
            words.append(
                "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(1, 60)))
            )
            length += len(words[-1]) + 1
        return " ".join(words)[:n]
    # The inputs of the issue, and characters that begin or continue normalization rules.
    return {
        "a_acute": "a" + "\u0301" * n,
        "acute": "\u0301" * n,
        "bang": "!" * n,
        "less": "<" * n,
        "fullwidth_bang": "\uff01" * n,
    }[kind]


# -- Cases (run in the sandbox's child process; JSON in, JSON out) ------------------------------


def bpe_long_word(vocab: str, merges: str, kind: str, n: int) -> dict:
    """GPT-2's BPE of one word of ``n`` characters, and the same cut by hand: each piece of
    ``max_chars_per_word`` characters tokenized alone, without the limit."""
    tokenizer = GPT2BPETokenizer(vocab, merges)
    text = random_text(kind, n)
    ids = tokenizer.tokenize(text).numpy().tolist()
    limit = tokenizer.max_chars_per_word
    unbounded = GPT2BPETokenizer(vocab, merges, max_chars_per_word=None)
    parts = unbounded.tokenize([text[i : i + limit] for i in range(0, n, limit)])
    return {
        "same_as_the_rule": ids == parts.flat_values.numpy().tolist(),
        "round_trip": tokenizer.detokenize(ids).numpy() == text.encode(),
        "tokens": len(ids),
    }


def sentencepiece_ids(folder: str, style: str, kind: str, n: int) -> list:
    tokenizer = SentencePieceTokenizer.from_pretrained(folder, style=style)
    return tokenizer.tokenize(random_text(kind, n)).numpy().tolist()


def bert_tokenizer(vocab: str) -> int:
    return BERTTokenizer(vocab).vocab_size


def bpe_tokenizer(vocab: str, merges: str) -> int:
    return GPT2BPETokenizer(vocab, merges).vocab_size


def sentencepiece_tokenizer(model: str) -> int:
    return SentencePieceTokenizer(model, style="t5").vocab_size


def sentencepiece_from_pretrained(folder: str) -> str:
    return SentencePieceTokenizer.from_pretrained(folder).style


def pretrained_tokenizer(folder: str) -> str:
    import texkit as tx

    return type(tx.pretrained.tokenizer_from_pretrained(folder, lowercase=False)).__name__


def vocab_size(path: str) -> int:
    import texkit as tx

    return tx.data.Vocab(path).size


def mono_text_data(text: str, vocab: str) -> int:
    import texkit as tx

    data = tx.data.MonoTextData({"dataset": {"files": [text], "vocab_file": vocab}})
    return data.vocab.size


# -- helpers of the parent ------------------------------------------------------------------


def unbounded(tokenizer: SentencePieceTokenizer) -> SentencePieceTokenizer:
    """``tokenizer`` without the cut of unknown runs (before its first call traces it)."""
    tokenizer._unknown_run = None
    return tokenizer


def fifo(path: Path) -> str:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)  # a reader would wait for a writer forever
    return str(path)


def bpe_files(folder: Path, vocab=None, merges=None) -> tuple[str, str]:
    folder.mkdir(exist_ok=True)
    vocab_file, merges_file = folder / "vocab.json", folder / "merges.txt"
    if vocab is None:
        shutil.copy(BPE / "vocab.json", vocab_file)
    else:
        vocab_file.write_text(vocab if isinstance(vocab, str) else json.dumps(vocab), "utf-8")
    if merges is None:
        shutil.copy(BPE / "merges.txt", merges_file)
    else:
        merges_file.write_text(merges, "utf-8")
    return str(vocab_file), str(merges_file)


def trigram_bpe(folder: Path) -> tuple[str, str]:
    """A byte-level BPE where every pair and triple of lowercase letters is a token: a word of
    random letters takes a round of merges per pair and triple it holds, 18,252 in all."""
    letters = string.ascii_lowercase
    vocab = {symbol: i for i, symbol in enumerate(byte_symbols())}
    merges = []
    for x in letters:
        for y in letters:
            vocab[x + y] = len(vocab)
            merges.append(f"{x} {y}")
    for x in letters:
        for y in letters:
            for z in letters:
                vocab[x + y + z] = len(vocab)
                merges.append(f"{x}{y} {z}")
    vocab["<|endoftext|>"] = len(vocab)
    return bpe_files(folder, vocab, "#version: 0.2\n" + "\n".join(merges) + "\n")


def sentencepiece_folder(tmp_path: Path, style: str, config=None) -> Path:
    folder = tmp_path / f"{style}_folder"
    folder.mkdir(exist_ok=True)
    shutil.copy(SENTENCEPIECE / style / "spiece.model", folder / "spiece.model")
    if config is not None:
        (folder / "tokenizer_config.json").write_text(config, "utf-8")
    return folder


# -- 1. Texts that took minutes: linear now -------------------------------------------------


@pytest.mark.parametrize("kind, n", [("lower", 3 * 10**5), ("letters", 10**6)])
def test_a_long_word_takes_seconds_in_gpt2_bpe(sandbox, tmp_path, kind, n):
    # Without the cut, a million letters take 14 s with the tests' vocabulary; with the one of
    # every pair and triple of letters, 100,000 take 30 s and 300,000 minutes.
    if kind == "lower":
        vocab, merges = trigram_bpe(tmp_path / "trigrams")
    else:
        vocab, merges = bpe_files(tmp_path / "fixture")
    outcome = sandbox.run(bpe_long_word, vocab, merges, kind, n, timeout=30)
    assert outcome.error is None, outcome.message
    assert outcome.value["same_as_the_rule"] and outcome.value["round_trip"]
    assert n / 4 < outcome.value["tokens"] <= n


def test_words_up_to_the_limit_are_tokenized_as_without_it():
    tokenizer = GPT2BPETokenizer(str(BPE / "vocab.json"), str(BPE / "merges.txt"))
    reference = GPT2BPETokenizer(
        str(BPE / "vocab.json"), str(BPE / "merges.txt"), max_chars_per_word=None
    )
    assert tokenizer.max_chars_per_word == MAX_CHARS_PER_WORD == 100
    rng = random.Random(1)
    texts = [
        " ".join(
            random_text("letters", rng.randint(1, MAX_CHARS_PER_WORD), seed=rng.random())
            for _ in range(rng.randint(1, 5))
        )
        for _ in range(200)
    ]
    texts += [
        "a" * MAX_CHARS_PER_WORD,
        " " + "b" * MAX_CHARS_PER_WORD,  # a piece of a space and 100 letters: 101 characters
        "In the beginning God created the heaven and the earth. " * 30,
        "\u00e9" * MAX_CHARS_PER_WORD + "!" * MAX_CHARS_PER_WORD,
        "=" * MAX_CHARS_PER_WORD + "\n" * MAX_CHARS_PER_WORD,
    ]
    ids = tokenizer.tokenize(texts).to_list()
    expected = reference.tokenize(texts).to_list()
    for text, got, want in zip(texts, ids, expected, strict=True):
        if text.startswith(" b"):  # cut once: the space and 99 letters, then the last letter
            want = reference.tokenize([text[:100], text[100:]]).flat_values.numpy().tolist()
        assert got == want, text


def test_a_longer_word_is_cut_every_max_chars_per_word_characters():
    vocab, merges = str(BPE / "vocab.json"), str(BPE / "merges.txt")
    reference = GPT2BPETokenizer(vocab, merges, max_chars_per_word=None)
    for limit in (7, 1000):
        tokenizer = GPT2BPETokenizer(vocab, merges, max_chars_per_word=limit)
        texts = [random_text("letters", 2345), "\u00e9" * 1500, "?" * 1001, "ab " * 8 + "ab"]
        want = []
        for text in texts:  # the pieces of GPT-2's pattern, then the cut by hand
            pieces = [p for p in re.findall(r" ?[a-zA-Z\u00e9]+| ?[?]+", text)]
            parts = [p[i : i + limit] for p in pieces for i in range(0, len(p), limit)]
            want.append(reference.tokenize(parts).flat_values.numpy().tolist())
        assert tokenizer.tokenize(texts).to_list() == want
    for bad in (0, 1001, 2.0, True):
        with pytest.raises(ValueError, match="max_chars_per_word must be None or an int"):
            GPT2BPETokenizer(vocab, merges, max_chars_per_word=bad)


@pytest.mark.parametrize("style", ["t5", "albert"])
@pytest.mark.parametrize(
    "kind", ["a_acute", "acute", "bang", "less", "fullwidth_bang", "cjk", "cjk_words"]
)
def test_a_million_unknown_characters_take_seconds_in_sentencepiece(sandbox, style, kind):
    # SentencePiece alone takes about a minute on each run of a million (its time grows with
    # the square of a run of unknown characters); the reference's ids of a run do not depend
    # on its length, so they are those of shorter runs, which it tokenizes quickly.
    folder = str(SENTENCEPIECE / style)
    outcome = sandbox.run(sentencepiece_ids, folder, style, kind, 10**6, timeout=30)
    assert outcome.error is None, outcome.message
    reference = unbounded(SentencePieceTokenizer.from_pretrained(folder, style=style))
    if kind == "cjk_words":  # runs of at most 60: the ids of the whole text, without the cut
        assert outcome.value == reference.tokenize(random_text(kind, 10**6)).numpy().tolist()
    else:
        texts = [random_text(kind, 2000), random_text(kind, 3001)]
        expected = reference.tokenize(texts).to_list()
        if reference.unk_id in expected[0]:  # a run of unknown characters: one <unk>
            assert outcome.value == expected[0] == expected[1]
        else:  # characters the model has (ALBERT's '!'): quick without the cut
            full = reference.tokenize(random_text(kind, 10**6)).numpy().tolist()
            assert outcome.value == full


@pytest.mark.parametrize("style", ["t5", "albert"])
def test_cutting_unknown_runs_keeps_the_ids_of_every_text(style):
    # Runs of characters that the models lack, that begin or continue NFKC's rules (a and
    # U+0301, < and U+0338, か and U+3099), that NFKC maps to other characters (！, Ａ, ﬁ),
    # deletes (U+00AD) or turns into a space and a mark (¨), mixed with known text.
    alphabet = list("ab xyzAé!?<>=~{}^`|\\\t") + list(
        "\u0301\u0300\u0327\u0338\u0308\u0306\uff01\uff21\u00ad\u00a8\u304b\u3099\uff76"
        "\uff9e\u0438\u0435\u4e00\u4e8c\u2160\ufb01\u1e9b\u0323\u200b\ufeff\u3002\uff0c"
        "\u226e\u2260\U0001f600\u00a0\u3000\u2581\ufffd"
    )
    rng = random.Random(style)
    texts = []
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(1, 8)):
            part = "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 1, 2, 3, 6, 12])))
            parts.append(part * rng.choice([1, 1, 2, 7]))
        texts.append("".join(parts))
    tokenizer = SentencePieceTokenizer.from_pretrained(SENTENCEPIECE / style, style=style)
    # The rule on the text SentencePiece sees: the same ids from the library with and without it.
    seen = tf.constant(texts)
    if style == "albert":
        seen = tokenizer._albert_preprocess(seen)
    cut = tf.strings.regex_replace(seen, tokenizer._unknown_run, r"\1")
    shorter = tf.strings.length(cut) < tf.strings.length(seen)
    assert tf.reduce_sum(tf.cast(shorter, tf.int32)) > 500
    library = tokenizer._sentencepiece
    assert library.tokenize(cut).to_list() == library.tokenize(seen).to_list()
    # End to end, on texts long enough to be cut (over 4,096 bytes).
    long_texts = ["".join(texts[i : i + 100]) for i in range(0, len(texts), 100)]
    assert sum(len(text.encode()) > 4096 for text in long_texts) > 20
    reference = SentencePieceTokenizer.from_pretrained(SENTENCEPIECE / style, style=style)
    reference = unbounded(reference)
    assert tokenizer.tokenize(long_texts).to_list() == reference.tokenize(long_texts).to_list()


# -- 2. Files that are not regular files ----------------------------------------------------


def test_fifos_are_refused_without_blocking(sandbox, tmp_path):
    vocab = fifo(tmp_path / "vocab.txt")
    sandbox.expect_error(
        bert_tokenizer, vocab, error="ValueError", contains=(vocab, "FIFO", "vocab_file")
    )
    sandbox.expect_error(vocab_size, vocab, error="ValueError", contains=(vocab, "FIFO"))
    text = tmp_path / "text.txt"
    text.write_text("a b\n", "utf-8")
    sandbox.expect_error(
        mono_text_data,
        str(text),
        vocab,
        error="ValueError",
        contains=(vocab, "FIFO", "hparams 'dataset.vocab_file'"),
    )
    for name in ("vocab.json", "merges.txt"):
        files = bpe_files(tmp_path / name.replace(".", "_"))
        path = fifo(Path(files[0 if name == "vocab.json" else 1]))
        sandbox.expect_error(
            bpe_tokenizer, *files, error="ValueError", contains=(path, "FIFO", "GPT2BPETokenizer")
        )
    model = fifo(tmp_path / "spiece.model")
    sandbox.expect_error(
        sentencepiece_tokenizer, model, error="ValueError", contains=(model, "FIFO")
    )
    folder = sentencepiece_folder(tmp_path, "t5")
    config = fifo(folder / "tokenizer_config.json")
    sandbox.expect_error(
        sentencepiece_from_pretrained, str(folder), error="ValueError", contains=(config, "FIFO")
    )


def test_a_fifo_vocab_txt_in_a_checkpoint_folder_is_refused(sandbox, tmp_path):
    folder = tmp_path / "electra"
    folder.mkdir()
    source = FIXTURES / "families" / "electra"
    for name in os.listdir(source):
        if name.endswith((".json", ".safetensors")):
            (folder / name).symlink_to(source / name)
    vocab = fifo(folder / "vocab.txt")
    sandbox.expect_error(
        pretrained_tokenizer, str(folder), error="ValueError", contains=(vocab, "FIFO")
    )


def test_dev_zero_as_a_tokenizer_file_is_refused(sandbox, tmp_path):
    folder = sentencepiece_folder(tmp_path, "albert")
    config = folder / "tokenizer_config.json"
    config.symlink_to("/dev/zero")
    sandbox.expect_error(
        sentencepiece_from_pretrained,
        str(folder),
        error="ValueError",
        contains=(str(config), "device"),
    )
    vocab = tmp_path / "vocab.txt"
    vocab.symlink_to("/dev/zero")
    sandbox.expect_error(
        bert_tokenizer, str(vocab), error="ValueError", contains=(str(vocab), "device")
    )


# -- 3. JSON nested deeply, not an object, ids out of range ---------------------------------


def test_deeply_nested_json_is_an_error_naming_the_file(sandbox, tmp_path):
    nested = "[" * 100_000 + "]" * 100_000
    folder = sentencepiece_folder(tmp_path, "t5", config='{"a": ' + nested + "}")
    sandbox.expect_error(
        sentencepiece_from_pretrained,
        str(folder),
        error="ValueError",
        contains=(str(folder / "tokenizer_config.json"), "nested deeper than"),
    )
    files = bpe_files(tmp_path / "nested", vocab='{"a": ' + nested + "}")
    sandbox.expect_error(
        bpe_tokenizer, *files, error="ValueError", contains=(files[0], "nests JSON values")
    )


@pytest.mark.parametrize(
    "config, said",
    [
        ("[1]", "must hold a JSON object, got a list"),
        ('{"a": 1, "a": 2}', "given twice"),
        ('{"tokenizer_class": [1]}', "give style='albert', style='t5' or style='llama'"),
        (
            '{"tokenizer_class": "T5Tokenizer", "sp_model_kwargs": {"a": "' + "z" * 5000 + '"}}',
            "(5,009 characters)",
        ),
    ],
)
def test_a_tokenizer_config_of_the_wrong_shape_is_named(sandbox, tmp_path, config, said):
    folder = sentencepiece_folder(tmp_path, "t5", config=config)
    sandbox.expect_error(
        sentencepiece_from_pretrained,
        str(folder),
        error="ValueError",
        contains=(str(folder), "tokenizer_config.json", said),
    )


@pytest.mark.parametrize(
    "token_id, said",
    [
        (2**40, "the id 1,099,511,627,776; ids must be below 4,194,304"),
        (1 << 22, "ids must be below 4,194,304 (texkit.data.tokenizers.byte_bpe.MAX_VOCAB_SIZE"),
        (int("9" * 100), "an integer of 100 digits"),
    ],
)
def test_an_id_out_of_range_in_vocab_json_is_named(sandbox, tmp_path, token_id, said):
    vocab = json.loads((BPE / "vocab.json").read_text("utf-8"))
    vocab["<far away>"] = token_id
    files = bpe_files(tmp_path / "far", vocab=vocab)
    sandbox.expect_error(bpe_tokenizer, *files, error="ValueError", contains=(files[0], said))


def test_the_largest_id_allowed_works(tmp_path):
    vocab = json.loads((BPE / "vocab.json").read_text("utf-8"))
    vocab["<far away>"] = (1 << 22) - 1
    tokenizer = GPT2BPETokenizer(*bpe_files(tmp_path / "far", vocab=vocab))
    assert tokenizer.vocab_size == 1 << 22
    assert tokenizer.detokenize([(1 << 22) - 1], skip_special_tokens=False).numpy() == b"<far away>"


# -- 4. A 50 MB line: the message quotes a prefix -------------------------------------------


def test_a_50_mb_line_is_quoted_short(sandbox, tmp_path):
    giant = "x" * (50 * MB)
    lines = BERT_VOCAB.read_text("utf-8").split("\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(lines[:10] + [giant] + lines[10:]), "utf-8")
    sandbox.expect_error(
        bert_tokenizer,
        str(vocab),
        error="ValueError",
        contains=(str(vocab), "line 11", "'xxxx", "(52,428,800 characters)", "256 UTF-8 bytes"),
    )
    data_vocab = tmp_path / "data_vocab.txt"
    data_vocab.write_text(f"a\nb\n{giant} \n", "utf-8")
    sandbox.expect_error(
        vocab_size,
        str(data_vocab),
        error="ValueError",
        contains=(f"{data_vocab}:3", "(52,428,801 characters) begins or ends with whitespace"),
    )
    files = bpe_files(tmp_path / "merges", merges=f"#version: 0.2\nĠ t\n{giant}\n")
    sandbox.expect_error(
        bpe_tokenizer,
        *files,
        error="ValueError",
        contains=(files[1], "line 3", "(52,428,800 characters); every line must be two tokens"),
    )


def test_a_long_wordpiece_token_is_refused_before_tf_text(tmp_path):
    lines = BERT_VOCAB.read_text("utf-8").split("\n")
    vocab = tmp_path / "vocab.txt"
    for token, fine in (("##" + "y" * 256, True), ("y" * 257, False), ("é" * 129, False)):
        vocab.write_text("\n".join(lines[:5] + [token] + lines[5:]), "utf-8")
        if fine:
            assert BERTTokenizer(str(vocab)).token_to_id(token) == 5
        else:
            with pytest.raises(ValueError, match="line 6 is the token .* longer than a WordPiece"):
                BERTTokenizer(str(vocab))


def test_large_files_are_refused_by_size(tmp_path, monkeypatch):
    import texkit.files

    monkeypatch.setattr(texkit.files, "MAX_JSON_BYTES", 1000)
    with pytest.raises(ValueError, match="more than a vocabulary file .*MAX_JSON_BYTES"):
        BERTTokenizer(str(BERT_VOCAB))
    with pytest.raises(ValueError, match="more than a tokenizer file .*MAX_JSON_BYTES"):
        GPT2BPETokenizer(str(BPE / "vocab.json"), str(BPE / "merges.txt"))
    with pytest.raises(ValueError, match="more than a tokenizer file .*MAX_JSON_BYTES"):
        SentencePieceTokenizer(SENTENCEPIECE / "t5" / "spiece.model", style="t5")
