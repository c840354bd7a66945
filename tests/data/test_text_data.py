"""Text datasets on real files in a temporary folder, checked against Python's own reading."""

import gzip
import re
import zlib

import numpy as np
import pytest
import tensorflow as tf

from texkit.data import MonoTextData, MultiAlignedData, PairedTextData, ScalarData, Vocab
from texkit.hparams import HParamsError

ASCII_WHITESPACE = re.compile(r"[ \t\n\r\v\f]+")
WORDS = "the a cat dog sat ran on under mat log and then".split()
# Empty and blank lines, an invalid byte, CRLF endings, a line of 9 tokens.
BAD_FILE = (
    b"the cat sat\r\n"
    b"\r\n"
    b"a dog \xff ran\r\n"
    b"   \t \r\n"
    b"the cat sat on the mat and then ran\r\n"
    b"on a log\n"
)


def python_lines(data: bytes):
    """The file's lines as Python reads them: split at \\n, \\r stripped, bad bytes replaced."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line.rstrip(b"\r").decode("utf-8", "replace") for line in lines]


def python_tokens(line: str):
    return [t for t in ASCII_WHITESPACE.split(line) if t]


@pytest.fixture
def files(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    text = tmp_path / "text.txt"
    text.write_bytes(BAD_FILE)
    return {"vocab": str(vocab), "text": str(text), "dir": tmp_path}


def write_lines(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


def mono(paths, tokenizer=None, **dataset):
    hparams = dataset.pop("hparams", {})
    spec = {"files": [paths["text"]], "vocab_file": paths["vocab"], **dataset}
    hparams = {"dataset": spec, "shuffle": False, "batch_size": 2, **hparams}
    return MonoTextData(hparams, tokenizer=tokenizer)


def unpad(batch, prefix=""):
    """The token lists of a batch, without padding."""
    texts, lengths = np.asarray(batch[f"{prefix}text"]), np.asarray(batch[f"{prefix}length"])
    return [[t.decode() for t in row[:n]] for row, n in zip(texts, lengths, strict=True)]


def examples(data):
    """All examples of all batches, unpadded, as Python lists."""
    out = []
    for batch in data.dataset.as_numpy_iterator():
        for row in range(len(batch["length"])):
            length = batch["length"][row]
            out.append(
                {
                    "text": [t.decode() for t in batch["text"][row][:length]],
                    "text_ids": batch["text_ids"][row][:length].tolist(),
                }
            )
    return out


# -- The bad-input policy ---------------------------------------------------------------------


def test_default_policy_on_a_bad_file(files):
    data = mono(files, max_seq_length=6)
    vocab = Vocab(files["vocab"])
    expected = []
    for line in python_lines(BAD_FILE):
        tokens = python_tokens(line)
        if tokens:  # empty and blank lines are skipped
            expected.append(["<BOS>", *tokens[:6], "<EOS>"])
    got = examples(data)
    assert [e["text"] for e in got] == expected
    assert [e["text_ids"] for e in got] == [
        vocab.map_tokens_to_ids_py(t).tolist() for t in expected
    ]
    report = data.report
    assert (report.examples, report.skipped) == (4, 2)
    assert data.num_examples == 4
    field = report.fields[0]
    assert field.records == 6
    assert dict(field.counts) == {
        "invalid_utf8": 1,
        "empty": 2,
        "too_long": 1,
        "byte_order_mark": 0,
    }
    assert field.actions["invalid_utf8"] == "replaced with U+FFFD"
    assert "2 empty (skipped)" in str(report) and "1 too long (truncated)" in str(report)


def test_keep_skip_discard_and_error_modes(files):
    kept = mono(files, empty_line_mode="keep", invalid_utf8_mode="skip")
    texts = [e["text"] for e in examples(kept)]
    assert texts[1] == ["<BOS>", "<EOS>"] and len(texts) == 5  # the invalid line is skipped
    assert kept.report.skipped == 1
    discarded = mono(files, max_seq_length=6, length_filter_mode="discard")
    assert [len(e["text"]) for e in examples(discarded)] == [5, 6, 5]
    assert dict(discarded.report.fields[0].counts)["too_long"] == 1
    with pytest.raises(ValueError, match=r"text.txt:3: the line is not valid UTF-8"):
        mono(files, invalid_utf8_mode="error")


def test_missing_files_and_bad_modes_are_named(files):
    with pytest.raises(FileNotFoundError, match=r"dataset.files.*nowhere.txt"):
        mono(files, files=[str(files["dir"] / "nowhere.txt")])
    with pytest.raises(FileNotFoundError, match=r"no file matches .*\*.missing"):
        mono(files, files=[str(files["dir"] / "*.missing")])
    with pytest.raises(HParamsError, match="dataset.length_filter_mode"):
        mono(files, length_filter_mode="cut")
    with pytest.raises(HParamsError, match="dataset.pad_to_max_seq_length"):
        mono(files, pad_to_max_seq_length=True)
    with pytest.raises(HParamsError, match="dataset.vocab_file"):
        mono(files, vocab_file="")


def test_text_equals_the_tokens_of_the_ids_and_options(files):
    data = mono(files, bos_token="", eos_token="", delimiter="a", hparams={"batch_size": 3})
    for batch in data:
        ids = data.vocab.map_tokens_to_ids(batch["text"])
        np.testing.assert_array_equal(ids.numpy(), batch["text_ids"].numpy())
    expected = [
        [t for t in line.split("a") if t] for line in python_lines(BAD_FILE) if line.strip()
    ]
    assert [e["text"] for e in examples(data)] == expected


def test_a_tokenizer_function_replaces_the_delimiter(files):
    import tensorflow_text as tf_text

    tokenizer = tf_text.UnicodeScriptTokenizer()
    data = mono(files, bos_token="", eos_token="", tokenizer=tokenizer.tokenize)
    lines = [line for line in python_lines(BAD_FILE) if line.strip()]
    expected = [[t.decode() for t in tokenizer.tokenize(line).numpy()] for line in lines]
    assert [e["text"] for e in examples(data)] == expected
    with pytest.raises(HParamsError, match="dataset.delimiter"):
        mono(files, delimiter=",", tokenizer=tokenizer.tokenize)
    with pytest.raises(TypeError, match="the tokenizer must map"):
        mono(files, tokenizer=tf.strings.lower)


# -- Batching -----------------------------------------------------------------------------------


def corpus(tmp_path, count=60, seed=0):
    rng = np.random.default_rng(seed)
    # Each line starts with its own number, so lines are unique.
    lines = [
        " ".join([f"n{i}", *rng.choice(WORDS, size=rng.integers(0, 24))]) for i in range(count)
    ]
    path = write_lines(tmp_path / "corpus.txt", lines)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return lines, path, str(vocab)


def test_static_shapes_with_padding_to_max_length_and_drop_remainder(tmp_path):
    _, path, vocab = corpus(tmp_path)
    data = MonoTextData(
        {
            "dataset": {
                "files": [path],
                "vocab_file": vocab,
                "max_seq_length": 10,
                "pad_to_max_seq_length": True,
            },
            "batch_size": 8,
            "drop_remainder": True,
        }
    )
    for spec in data.dataset.element_spec.values():
        assert spec.shape.is_fully_defined()
    assert data.dataset.element_spec["text_ids"].shape == (8, 12)
    batches = list(data.dataset.as_numpy_iterator())
    assert len(batches) == 60 // 8
    assert all(b["text_ids"].shape == (8, 12) for b in batches)


def test_bucketing_puts_each_batch_in_its_bucket(tmp_path):
    lines, path, vocab = corpus(tmp_path, count=200)
    boundaries = [6, 12, 20]
    data = MonoTextData(
        {
            "dataset": {"files": [path], "vocab_file": vocab},
            "bucket_boundaries": boundaries,
            "bucket_batch_sizes": [16, 8, 4, 2],
            "seed": 3,
        }
    )
    edges = [0, *boundaries, 10**9]
    seen = []
    for batch in data.dataset.as_numpy_iterator():
        lengths = batch["length"]
        bucket = np.searchsorted(boundaries, lengths, side="right")
        assert len(set(bucket)) == 1, lengths
        low, high = edges[bucket[0]], edges[bucket[0] + 1]
        assert all(low <= n < high for n in lengths)
        assert len(lengths) <= [16, 8, 4, 2][bucket[0]]
        assert batch["text_ids"].shape[1] == lengths.max()
        seen += [
            " ".join(t.decode() for t in row[1 : n - 1])
            for row, n in zip(batch["text"], lengths, strict=True)
        ]
    assert sorted(seen) == sorted(lines)


def test_token_budget_batching(tmp_path):
    lines, path, vocab = corpus(tmp_path, count=200)
    data = MonoTextData(
        {
            "dataset": {"files": [path], "vocab_file": vocab, "max_seq_length": 24},
            "batch_tokens": 64,
            "shuffle": False,
        }
    )
    count = 0
    for batch in data.dataset.as_numpy_iterator():
        assert batch["text_ids"].size <= 64
        count += len(batch["length"])
    assert count == 200


def test_shuffle_seed_and_epochs(tmp_path):
    lines, path, vocab = corpus(tmp_path, count=40)

    def order(seed, epochs=1):
        data = MonoTextData(
            {
                "dataset": {"files": [path], "vocab_file": vocab, "bos_token": "", "eos_token": ""},
                "batch_size": 40,
                "seed": seed,
                "num_epochs": epochs,
                "shuffle_buffer_size": 64,
            }
        )
        return [
            " ".join(t.decode() for t in row[:n])
            for batch in data.dataset.as_numpy_iterator()
            for row, n in zip(batch["text"], batch["length"], strict=True)
        ]

    assert order(1) == order(1)
    assert order(1) != order(2)
    assert sorted(order(1)) == sorted(lines)
    two = order(1, epochs=2)
    assert sorted(two) == sorted(lines * 2)


def test_two_input_pipelines_share_the_data_without_overlap_or_loss(tmp_path):
    lines, path, vocab = corpus(tmp_path, count=37)
    data = MonoTextData(
        {"dataset": {"files": [path], "vocab_file": vocab}, "batch_size": 4, "seed": 0}
    )
    shards = []
    for index in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=index, num_replicas_in_sync=2
        )
        dataset = data.make_dataset(context)
        assert dataset.element_spec["text_ids"].shape[0] in (None, 2)
        shards.append(
            [
                " ".join(t.decode() for t in row[1 : n - 1])
                for batch in dataset.as_numpy_iterator()
                for row, n in zip(batch["text"], batch["length"], strict=True)
            ]
        )
    assert not set(shards[0]) & set(shards[1])
    assert sorted(shards[0] + shards[1]) == sorted(lines)
    assert abs(len(shards[0]) - len(shards[1])) <= 1


def test_distribute_datasets_from_function_with_mirrored_strategy(tmp_path):
    _, path, vocab = corpus(tmp_path, count=24)
    data = MonoTextData(
        {
            "dataset": {
                "files": [path],
                "vocab_file": vocab,
                "max_seq_length": 30,
                "pad_to_max_seq_length": True,
            },
            "batch_size": 8,
            "drop_remainder": True,
        }
    )
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    distributed = strategy.distribute_datasets_from_function(data.make_dataset)
    total = 0
    for batch in distributed:
        per_replica = strategy.experimental_local_results(batch["length"])
        assert [t.shape[0] for t in per_replica] == [4, 4]
        total += sum(int(t.shape[0]) for t in per_replica)
    assert total == 24
    with pytest.raises(HParamsError, match="batch_size"):
        context = tf.distribute.InputContext(1, 0, num_replicas_in_sync=3)
        data.make_dataset(context)


def test_common_hparams_are_checked(files):
    for key, value in [
        ("bucket_boundaries", [5, 3]),
        ("bucket_batch_sizes", [2]),
        ("num_epochs", 0),
        ("source", "web"),
        ("batch_size", 0),
    ]:
        with pytest.raises(HParamsError, match=key):
            extra = {"bucket_boundaries": [4]} if key == "bucket_batch_sizes" else {}
            mono(files, hparams={key: value, **extra})
    data = mono(files, hparams={"batch_tokens": 100})
    with pytest.raises(HParamsError, match="batch_tokens.*needs max_seq_length"):
        data.make_dataset()


# -- Paired, scalar and multi-aligned data ---------------------------------------------------


def paired_files(tmp_path, source_lines, target_lines):
    source = write_lines(tmp_path / "src.txt", source_lines)
    target = write_lines(tmp_path / "tgt.txt", target_lines)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return source, target, str(vocab)


def test_paired_files_of_different_lengths_name_both(tmp_path):
    source, target, vocab = paired_files(tmp_path, ["a cat"] * 5, ["the dog"] * 4)
    with pytest.raises(ValueError, match=r"src.txt\): 5 lines; target \(.*tgt.txt\): 4 lines"):
        PairedTextData(
            {
                "source_dataset": {"files": [source], "vocab_file": vocab},
                "target_dataset": {"files": [target], "vocab_file": vocab},
            }
        )


def test_paired_data_skips_both_sides_and_shares_the_vocabulary(tmp_path):
    source_lines = ["a cat", "", "the dog sat", "on a mat", "then"]
    target_lines = ["cat a", "dog the", "", "mat a on", "then"]
    source, target, vocab = paired_files(tmp_path, source_lines, target_lines)
    data = PairedTextData(
        {
            "source_dataset": {"files": [source], "vocab_file": vocab},
            "target_dataset": {"files": [target]},
            "vocab_share": True,
            "shuffle": False,
        }
    )
    assert data.target_vocab is data.source_vocab
    assert (data.report.examples, data.report.skipped) == (3, 2)
    batch = next(iter(data))
    sources, targets = unpad(batch, "source_"), unpad(batch, "target_")
    assert sources == [["a", "cat", "<EOS>"], ["on", "a", "mat", "<EOS>"], ["then", "<EOS>"]]
    assert targets[0] == ["<BOS>", "cat", "a", "<EOS>"] and len(targets) == 3


def test_scalar_data_parses_and_names_bad_lines(tmp_path):
    ints = write_lines(tmp_path / "y.txt", ["3", " -1 ", "+7\r", "0"])
    data = ScalarData({"dataset": {"files": [ints]}, "shuffle": False, "batch_size": 4})
    batch = next(iter(data))
    assert batch["data"].dtype == tf.int32 and batch["data"].numpy().tolist() == [3, -1, 7, 0]
    floats = write_lines(tmp_path / "f.txt", ["0.5", "1e-3", "-2", ".25", "nan"])
    data = ScalarData(
        {
            "dataset": {"files": [floats], "data_type": "float", "data_name": "score"},
            "shuffle": False,
        }
    )
    values = next(iter(data))["score"].numpy()
    np.testing.assert_array_equal(values[:4], np.float32([0.5, 1e-3, -2, 0.25]))
    assert np.isnan(values[4])
    for lines, line, what in [
        (["1", "2", "x"], 3, "'x'"),
        (["1", "", "2"], 2, "''"),
        (["1.5"], 1, "'1.5'"),
        (["9999999999"], 1, "'9999999999'"),
    ]:
        path = write_lines(tmp_path / "bad.txt", lines)
        with pytest.raises(ValueError, match=rf"bad.txt:{line}: {what} is not an int32 value"):
            ScalarData({"dataset": {"files": [path]}})


def test_multi_aligned_text_and_labels(tmp_path):
    text = tmp_path / "x.txt"
    text.write_bytes(b"the cat\n\na dog ran\non the mat\n\xff\n")
    labels = write_lines(tmp_path / "y.txt", ["1", "0", "2", "1", "0"])
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    hparams = {
        "datasets": [
            {
                "files": [str(text)],
                "vocab_file": str(vocab),
                "data_name": "x",
                "invalid_utf8_mode": "skip",
            },
            {"files": [labels], "data_type": "int", "data_name": "y"},
        ],
        "shuffle": False,
    }
    data = MultiAlignedData(hparams)
    batch = next(iter(data))
    assert set(batch) == {"x_text", "x_text_ids", "x_length", "y"}
    assert batch["y"].numpy().tolist() == [1, 2, 1]  # labels of the lines kept
    assert batch["x_length"].numpy().tolist() == [4, 5, 5]
    assert data.vocab("x").size == len(WORDS) + 4
    with pytest.raises(ValueError, match=r"y \(.*short.txt\): 2 lines"):
        hparams["datasets"][1]["files"] = [write_lines(tmp_path / "short.txt", ["1", "0"])]
        MultiAlignedData(hparams)
    with pytest.raises(HParamsError, match="datasets.1.data_name"):
        hparams["datasets"][1]["data_name"] = "x"
        MultiAlignedData(hparams)


# -- tensorflow-datasets sources ---------------------------------------------------------------


def test_tfds_translation_dataset(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=12):
        raw = list(
            tfds.load(
                "ted_hrlr_translate/pt_to_en", split="train", shuffle_files=False
            ).as_numpy_iterator()
        )
        words = sorted(
            {t for ex in raw for k in ("pt", "en") for t in python_tokens(ex[k].decode())}
        )
        vocab = tmp_path / "vocab.txt"
        vocab.write_text("\n".join(words) + "\n", encoding="utf-8")
        data = PairedTextData(
            {
                "source": "tfds",
                "tfds": {"name": "ted_hrlr_translate/pt_to_en", "split": "train"},
                "source_dataset": {"vocab_file": str(vocab), "tfds_feature": "pt"},
                "target_dataset": {"vocab_file": str(vocab), "tfds_feature": "en"},
                "shuffle": False,
                "batch_size": 5,
            }
        )
        got = [
            ([t.decode() for t in s[:ns]], [t.decode() for t in t_[:nt]])
            for batch in data.dataset.as_numpy_iterator()
            for s, ns, t_, nt in zip(
                batch["source_text"],
                batch["source_length"],
                batch["target_text"],
                batch["target_length"],
                strict=True,
            )
        ]
    expected = [
        (
            python_tokens(ex["pt"].decode()) + ["<EOS>"],
            ["<BOS>", *python_tokens(ex["en"].decode()), "<EOS>"],
        )
        for ex in raw
        if python_tokens(ex["pt"].decode()) and python_tokens(ex["en"].decode())
    ]
    assert got == expected and len(got) > 0
    assert data.report.fields[0].sources == ("tfds:ted_hrlr_translate/pt_to_en[train]",)
    assert data.report.examples + data.report.skipped == 12
    assert "<UNK>" not in {t for pair in got for side in pair for t in side}


def test_tfds_classification_dataset(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=10):
        raw = list(
            tfds.load("ag_news_subset", split="test", shuffle_files=False).as_numpy_iterator()
        )
        vocab = tmp_path / "vocab.txt"
        vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
        data = MultiAlignedData(
            {
                "source": "tfds",
                "tfds": {"name": "ag_news_subset", "split": "test"},
                "datasets": [
                    {
                        "vocab_file": str(vocab),
                        "data_name": "title",
                        "tfds_feature": "title",
                        "empty_line_mode": "keep",
                    },
                    {"data_type": "int", "data_name": "label", "tfds_feature": "label"},
                ],
                "shuffle": False,
                "batch_size": 10,
            }
        )
        batch = next(iter(data))
    assert batch["label"].dtype == tf.int32
    assert batch["label"].numpy().tolist() == [int(ex["label"]) for ex in raw]
    lengths = [len(python_tokens(ex["title"].decode())) + 2 for ex in raw]
    assert batch["title_length"].numpy().tolist() == lengths
    with tfds.testing.mock_data(num_examples=2), pytest.raises(ValueError, match="tfds_feature"):
        MultiAlignedData(
            {
                "source": "tfds",
                "tfds": {"name": "ag_news_subset", "split": "test"},
                "datasets": [{"data_type": "int", "data_name": "y", "tfds_feature": "labels"}],
            }
        )


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_truncated_or_corrupt_compressed_file_is_an_error_naming_it(files, compression):
    lines = [f"{WORDS[i % len(WORDS)]} {i}" for i in range(5000)]
    data = "".join(f"{line}\n" for line in lines).encode()
    packed = gzip.compress(data) if compression == "GZIP" else zlib.compress(data)
    folder = files["dir"]
    whole, cut, corrupt = (folder / name for name in ("whole", "cut", "corrupt"))
    whole.write_bytes(packed)
    cut.write_bytes(packed[: len(packed) // 2])
    middle = len(packed) // 2
    corrupt.write_bytes(packed[:middle] + bytes(b ^ 0xFF for b in packed[middle:]))
    read = mono({**files, "text": str(whole)}, compression_type=compression)
    assert read.report.examples == 5000  # the check reads the whole file, and rejects nothing
    # TensorFlow itself reads the cut file up to the cut without an error:
    partial = tf.data.TextLineDataset(str(cut), compression_type=compression)
    assert 0 < int(partial.reduce(0, lambda n, _: n + 1)) < 5000
    with pytest.raises(ValueError, match=rf"'dataset\.files': {cut} ends before .*truncated"):
        mono({**files, "text": str(cut)}, compression_type=compression)
    with pytest.raises(ValueError, match=rf"{corrupt} is not readable {compression} data"):
        mono({**files, "text": str(corrupt)}, compression_type=compression)


def test_a_byte_order_mark_is_removed_and_counted(files):
    text = files["dir"] / "bom.txt"
    text.write_bytes(b"\xef\xbb\xbfa cat\r\nthe cat\r\n")
    data = mono({**files, "text": str(text)})
    assert [e["text"] for e in examples(data)] == [
        ["<BOS>", "a", "cat", "<EOS>"],
        ["<BOS>", "the", "cat", "<EOS>"],
    ]
    assert data.report.fields[0].counts["byte_order_mark"] == 1
    assert "1 byte order mark (removed)" in str(data.report)


@pytest.mark.parametrize(
    "content, line, reason",
    [
        (b"a cat\nthe\rcat\n", 2, "carriage return"),  # a stray \r would glue two words
        (b"a cat\rthe cat\r", 1, "carriage return"),  # old Mac endings: one line
        (b"a cat\nthe cat\x00\n", 2, "NUL byte"),
        ("a cat\nthe cat\n".encode("utf-16"), 1, "NUL byte"),  # UTF-16 text
    ],
)
def test_carriage_returns_nul_bytes_and_utf16_are_errors_naming_file_and_line(
    files, content, line, reason
):
    text = files["dir"] / "broken.txt"
    text.write_bytes(content)
    with pytest.raises(ValueError, match=rf"{text}:{line}: the line holds a {reason}"):
        mono({**files, "text": str(text)})


def test_files_may_be_one_string_as_in_texar(files, tmp_path):
    """Texar took "a string or a list" for ``files``: one string is the list of one."""
    as_list = examples(mono(files))
    as_string = examples(mono(files, files=files["text"]))
    assert as_string == as_list and as_list
    lines = write_lines(tmp_path / "labels.txt", ["1", "0"])
    data = MultiAlignedData(
        {"datasets": [{"files": lines, "data_type": "int", "data_name": "y"}], "shuffle": False}
    )
    assert data.hparams.datasets[0].files == (lines,)
    with pytest.raises(HParamsError, match="'dataset.files'"):
        mono(files, files=7)


def scalar_values(path, data_type):
    data = ScalarData(
        {"dataset": {"files": [str(path)], "data_type": data_type}, "shuffle": False,
         "batch_size": 8}
    )  # fmt: skip
    return np.concatenate([b["data"] for b in data.dataset.as_numpy_iterator()])


def test_numbers_at_the_edges_of_their_type(tmp_path):
    ints = write_lines(tmp_path / "ints.txt", [str(-(2**31)), str(2**31 - 1), "0"])
    np.testing.assert_array_equal(scalar_values(ints, "int"), [-(2**31), 2**31 - 1, 0])
    too_big = write_lines(tmp_path / "big.txt", ["1", str(2**31)])
    with pytest.raises(ValueError, match=r"big.txt:2: '2147483648' is not an int32 value"):
        scalar_values(too_big, "int")
    floats = write_lines(tmp_path / "floats.txt", ["3.4e38", "-1e-45", "2.5"])
    assert np.isfinite(scalar_values(floats, "float")).all()
    for big in ("1e39", "-1e39", "1e400"):  # inf in float32 (1e400: in float64 too)
        overflow = write_lines(tmp_path / "overflow.txt", ["1.0", big])
        with pytest.raises(ValueError, match=rf"overflow.txt:2: '{big}' is not a float32 value"):
            scalar_values(overflow, "float")
    spelled = write_lines(tmp_path / "spelled.txt", ["inf", "-Infinity", "nan"])  # on purpose
    values = scalar_values(spelled, "float")
    assert values[0] == np.inf and values[1] == -np.inf and np.isnan(values[2])


def test_paths_that_are_not_regular_files_are_named(files, tmp_path):
    with pytest.raises(ValueError, match=r"is a folder; give a file"):
        mono(files, files=[str(tmp_path)])
    with pytest.raises(ValueError, match=r"is a folder; give the file.*'dataset.vocab_file'"):
        mono(files, vocab_file=str(tmp_path))
    # FIFOs and devices, which could hang a regression, are in test_hostile_data.py.


def test_reader_options_are_checked_naming_the_key(files):
    with pytest.raises(HParamsError, match=r"'dataset.delimiter': expected None or a non-empty"):
        mono(files, delimiter=0)
    with pytest.raises(HParamsError, match=r"'dataset.compression_type': expected '', 'GZIP'"):
        mono(files, compression_type="BOGUS")
