"""Hostile data files: decompression bombs, giant lines and records, NULs, FIFOs, and files that
change after the dataset was made.

Each case that could hang or exhaust memory on a regression runs in the sandbox
(tests/hostile.py: a child process under a 3 GiB address-space cap and a time limit). The bombs
and FIFOs are made at test time in temporary folders, never committed. Expected line numbers and
lengths come from Python's own reading of the bytes written, not from texkit; the scan's reading
in chunks is compared with a plain reading of the whole bytes on random files cut at random.
"""

import os
import struct
import zlib

import numpy as np
import pytest
import tensorflow as tf

from texkit.data import (
    MonoTextData,
    MultiAlignedData,
    PairedTextData,
    ScalarData,
    TFRecordData,
    file_scan,
    sources,
    write_tfrecords,
)

MIB = 1 << 20
DEFAULT_LIMIT = file_scan.MAX_LINE_BYTES  # 1 MiB
VOCAB = ["a", "b", "cat", "dog"]


# -- Cases (run in the sandbox's child process; JSON in, JSON out) ------------------------------


def read_mono(text, vocab, compression="", max_line_bytes=DEFAULT_LIMIT):
    """The bytes of the tokens of each example of a MonoTextData over ``text``."""
    data = MonoTextData(
        {
            "dataset": {
                "files": [text],
                "vocab_file": vocab,
                "compression_type": compression,
                "max_line_bytes": max_line_bytes,
                "bos_token": "",
                "eos_token": "",
            },
            "shuffle": False,
            "batch_size": 4,
        }
    )
    return [
        sum(len(token) for token in row[:length])
        for batch in data
        for row, length in zip(batch["text"].numpy(), batch["length"].numpy(), strict=True)
    ]


def read_paired(source, target, vocab, compression=""):
    data = PairedTextData(
        {
            "source_dataset": {
                "files": [source],
                "vocab_file": vocab,
                "compression_type": compression,
            },
            "target_dataset": {
                "files": [target],
                "vocab_file": vocab,
                "compression_type": compression,
            },
        }
    )
    return data.num_examples


def read_multi_aligned(text, labels, vocab, compression=""):
    data = MultiAlignedData(
        {
            "datasets": [
                {"files": [text], "vocab_file": vocab, "data_name": "x"},
                {
                    "files": [labels],
                    "data_type": "int",
                    "data_name": "y",
                    "compression_type": compression,
                },
            ]
        }
    )
    return data.num_examples


def read_scalar(labels, compression="", max_line_bytes=DEFAULT_LIMIT):
    data = ScalarData(
        {
            "dataset": {
                "files": [labels],
                "compression_type": compression,
                "max_line_bytes": max_line_bytes,
            },
            "shuffle": False,
        }
    )
    return [int(value) for batch in data for value in batch["data"].numpy()]


def read_tfrecords(path, compression="", max_record_bytes=file_scan.MAX_RECORD_BYTES):
    data = TFRecordData(
        {
            "dataset": {
                "files": [path],
                "compression_type": compression,
                "features": {"x": ["int64", "var"]},
                "max_record_bytes": max_record_bytes,
            },
            "shuffle": False,
        }
    )
    return data.num_examples


def nul_flag(size):
    """Whether the policy's graph check finds the NUL in a line of ``size`` NULs (the check
    that tensorflow-datasets text goes through; files' NULs are found by the scan first)."""
    return bool(sources.line_flaws(tf.constant([b"\x00" * size]))["nul"].numpy()[0])


def peak_of_mono(text, vocab, compression=""):
    """The peak resident memory (MiB) that making a MonoTextData over ``text`` and reading
    one epoch adds, and the examples read."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets the peak (VmHWM) to the current resident size
    before = _memory("VmRSS")
    data = MonoTextData(
        {
            "dataset": {"files": [text], "vocab_file": vocab, "compression_type": compression},
            "shuffle": False,
            "batch_size": 4,
        }
    )
    examples = sum(len(batch["length"]) for batch in data)
    return {"peak": _memory("VmHWM") - before, "examples": examples}


def _memory(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    raise AssertionError(f"no {field} in /proc/self/status")


# -- Files made at test time -------------------------------------------------------------------


def write_stream(path, parts, compression):
    """Writes the bytes of ``parts``, ``(block, times)`` pairs (each block repeated ``times``),
    to ``path``, compressed as ``compression`` ('', 'GZIP' or 'ZLIB').

    Each block is compressed once and its compressed form repeated: a full flush after it makes
    the piece independent of what came before, so 1 GiB of repeated blocks is written in a
    fraction of a second, as a valid single-member stream."""
    pieces, crc, adler, size = [], 0, 1, 0
    for block, times in parts:
        if compression:
            packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate
            pieces.append((packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH), times))
            for _ in range(times):
                crc, adler = zlib.crc32(block, crc), zlib.adler32(block, adler)
        else:
            pieces.append((block, times))
        size += len(block) * times
    with open(path, "wb") as file:
        if compression == "GZIP":
            file.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # no name, no time
        elif compression == "ZLIB":
            file.write(b"\x78\xda")
        for piece, times in pieces:
            for _ in range(times):
                file.write(piece)
        if compression:
            file.write(zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush())  # last block
        if compression == "GZIP":
            file.write(struct.pack("<II", crc, size & 0xFFFFFFFF))
        elif compression == "ZLIB":
            file.write(struct.pack(">I", adler))
    return str(path)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile_data")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "two.txt").write_text("a b\ncat dog\n")
    (folder / "two.labels").write_text("1\n0\n")
    return folder


@pytest.fixture(scope="module")
def bombs(folder):
    """1 GiB of 'a' without a newline, GZIP and ZLIB (about 1 MB each); 100 MiB of 'a' as
    plain text; 256 MiB of NULs (GZIP)."""
    a = b"a" * MIB
    return {
        "GZIP": write_stream(folder / "a.gz", [(a, 1024)], "GZIP"),
        "ZLIB": write_stream(folder / "a.zlib", [(a, 1024)], "ZLIB"),
        "": write_stream(folder / "a.txt", [(a, 100)], ""),
        "NUL": write_stream(folder / "nul.gz", [(b"\x00" * MIB, 256)], "GZIP"),
    }


# -- Giant lines and decompression bombs -------------------------------------------------------


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB", ""])
def test_a_bomb_without_a_newline_is_an_error_naming_file_and_line(
    sandbox, folder, bombs, compression
):
    vocab, bomb = str(folder / "vocab.txt"), bombs[compression]
    assert os.path.getsize(bomb) < 110 * MIB  # the compressed ones: about 1 MB
    contains = (f"{bomb}:1: the line is longer than 1,048,576 bytes", "dataset.max_line_bytes")
    outcome = sandbox.expect_error(
        read_mono, bomb, vocab, compression, error="ValueError", contains=contains
    )
    assert outcome.seconds < 10
    sandbox.expect_error(read_scalar, bomb, compression, error="ValueError", contains=contains)


def test_every_text_like_dataset_refuses_a_bomb(sandbox, folder, bombs):
    vocab, two, labels = (str(folder / name) for name in ("vocab.txt", "two.txt", "two.labels"))
    bomb = bombs["GZIP"]
    gzipped = write_stream(folder / "two.txt.gz", [(b"a b\ncat dog\n", 1)], "GZIP")
    sandbox.expect_error(
        read_paired,
        gzipped,
        bomb,
        vocab,
        "GZIP",
        error="ValueError",
        contains=(f"{bomb}:1:", "'target_dataset.max_line_bytes'", "'target_dataset.files'"),
    )
    sandbox.expect_error(
        read_multi_aligned,
        two,
        bomb,
        vocab,
        "GZIP",
        error="ValueError",
        contains=(f"{bomb}:1:", "'datasets.1.max_line_bytes'"),
    )
    # The same files without the bomb are read.
    assert sandbox.run(read_paired, two, two, vocab).value == 2
    assert sandbox.run(read_multi_aligned, two, labels, vocab).value == 2


def test_a_bomb_of_nul_bytes_is_an_error_naming_file_and_line(sandbox, folder, bombs):
    vocab, bomb = str(folder / "vocab.txt"), bombs["NUL"]
    sandbox.expect_error(
        read_mono,
        bomb,
        vocab,
        "GZIP",
        error="ValueError",
        contains=(f"{bomb}:1: the line holds a NUL byte",),
    )
    # Lines of NULs within the limit: the first one is named, the rest never read.
    lines = (b"\x00" * 999 + b"\n") * 1000
    lines = write_stream(folder / "nul_lines.gz", [(lines, 256)], "GZIP")
    sandbox.expect_error(
        read_mono, lines, vocab, "GZIP", error="ValueError", contains=(f"{lines}:1: the line",)
    )


def test_a_bomb_of_bad_labels_fails_at_its_first_line_without_reading_the_rest(sandbox, folder):
    # 128 Mi lines of "x" (a 1 MB .gz): the scan stops at its first chunk with an error instead
    # of checking every line (minutes) before naming line 1.
    labels = write_stream(folder / "x.labels.gz", [(b"x\n" * (MIB // 2), 256)], "GZIP")
    outcome = sandbox.expect_error(
        read_scalar,
        labels,
        "GZIP",
        error="ValueError",
        contains=(f"{labels}:1: 'x' is not an int32 value",),
        timeout=60,
    )
    assert outcome.seconds < 20


def test_the_graph_nul_check_costs_two_copies_of_a_line_not_a_string_per_nul(sandbox):
    # A line of 64 MiB of NULs split at every NUL would be 64 Mi strings (gigabytes).
    outcome = sandbox.run(nul_flag, 64 * MIB)
    assert outcome.value is True, outcome.message
    assert sandbox.run(nul_flag, 0).value is False


def test_lines_just_within_the_limit_are_read_with_bounded_memory(sandbox, folder):
    vocab = str(folder / "vocab.txt")
    lines = 64
    text = write_stream(folder / "long_lines.gz", [(b"a" * DEFAULT_LIMIT + b"\n", lines)], "GZIP")
    outcome = sandbox.run(peak_of_mono, text, vocab, "GZIP", timeout=120)
    assert outcome.error is None, outcome.message
    assert outcome.value["examples"] == lines
    # 64 MiB of lines read 1,024 at a time would be held all at once, a few copies of each
    # (measured: 290 MiB more at the peak); read in chunks of at most 16 MiB, about 125 MiB.
    assert outcome.value["peak"] < 200, outcome.value


@pytest.mark.parametrize(
    "limit, first, ending, compression",
    [
        (100, b"a b", b"\n", ""),
        (100, b"a b", b"\r\n", ""),
        # At the default, the long line straddles the scan's 1 MiB chunks.
        (DEFAULT_LIMIT, b"a" * (700 * 1024), b"\n", "GZIP"),
    ],
    ids=["small", "small_crlf", "default_gzip"],
)
def test_the_line_limit_on_both_sides(tmp_path, limit, first, ending, compression):
    """A line of exactly max_line_bytes (its line ending not counted) is read; one byte more
    is an error naming the file and line."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")

    def write(name, content):
        return write_stream(tmp_path / name, [(content, 1)], compression)

    content = first + ending + b"b" * limit + ending + b"cat" + ending
    got = read_mono(write("exact.txt", content), str(vocab), compression, limit)
    lines = content.split(b"\n")[:-1]
    assert got == [len(line.rstrip(b"\r").replace(b" ", b"")) for line in lines]
    assert max(got) == limit
    over = write("over.txt", first + ending + b"b" * (limit + 1) + ending + b"cat" + ending)
    with pytest.raises(ValueError, match=rf"{over}:2: the line is longer than {limit:,} bytes"):
        read_mono(over, str(vocab), compression, limit)
    # Labels too: a number padded with spaces to the limit is read.
    labels = write("labels.txt", b"1" + ending + b"7".rjust(limit) + ending)
    assert read_scalar(labels, compression, limit) == [1, 7]
    labels = write("labels_over.txt", b"1" + ending + b"7".rjust(limit + 1) + ending)
    with pytest.raises(ValueError, match=rf"{labels}:2: the line is longer than {limit:,}"):
        read_scalar(labels, compression, limit)


def test_the_line_limit_is_checked_as_an_hparam(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("1\n")
    for bad in (0, -1, 1.5, "1", None):
        with pytest.raises(ValueError, match=r"'dataset.max_line_bytes'"):
            read_scalar(str(labels), "", bad)


# -- TFRecord records ---------------------------------------------------------------------------


def masked_crc32c(data):
    """TFRecord's masked CRC-32C (Castagnoli), computed bit by bit (for a few bytes only)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record_header(length):
    header = struct.pack("<Q", length)
    return header + struct.pack("<I", masked_crc32c(header))


def test_a_record_that_claims_gigabytes_is_an_error_not_a_crash(sandbox, tmp_path):
    # 116 bytes whose first record claims 2 GiB with a valid CRC: TensorFlow's reader allocates
    # the length before reading (under the cap, the process dies).
    path = tmp_path / "claims.tfrecord"
    path.write_bytes(record_header(2 << 30) + b"x" * 100)
    sandbox.expect_error(
        read_tfrecords,
        str(path),
        error="ValueError",
        contains=(str(path), "record 1 holds 2,147,483,648 bytes", "'dataset.max_record_bytes'"),
    )
    within = tmp_path / "within.tfrecord"
    within.write_bytes(record_header(1000) + b"x" * 100)  # claims more than the file holds
    sandbox.expect_error(
        read_tfrecords,
        str(within),
        error="ValueError",
        contains=(str(within), "unreadable TFRecord file: record 1 is cut short"),
    )


def test_a_compressed_giant_record_is_an_error(sandbox, tmp_path):
    size = file_scan.MAX_RECORD_BYTES + 1
    parts = [(record_header(size), 1), (b"a" * MIB, size // MIB), (b"a" * (size % MIB), 1)]
    path = write_stream(tmp_path / "giant.tfrecord.gz", parts, "GZIP")
    sandbox.expect_error(
        read_tfrecords,
        path,
        "GZIP",
        error="ValueError",
        contains=(path, f"record 1 holds {size:,} bytes"),
    )


def test_the_record_limit_on_both_sides(tmp_path):
    examples = [{"x": list(range(n))} for n in (1, 50, 3)]
    sizes = [
        len(
            tf.train.Example(
                features=tf.train.Features(
                    feature={"x": tf.train.Feature(int64_list=tf.train.Int64List(value=e["x"]))}
                )
            ).SerializeToString()
        )
        for e in examples
    ]
    path = str(tmp_path / "a.tfrecord")
    write_tfrecords(path, examples)
    assert read_tfrecords(path, "", max(sizes)) == 3
    with pytest.raises(ValueError, match=rf"a.tfrecord: .*record 2 holds {max(sizes)} bytes"):
        read_tfrecords(path, "", max(sizes) - 1)


# -- Paths that are not regular files ------------------------------------------------------------


def test_fifos_and_devices_as_data_files_are_refused_without_blocking(sandbox, folder, tmp_path):
    vocab = str(folder / "vocab.txt")
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)  # a reader would wait for a writer forever
    sandbox.expect_error(
        read_mono,
        str(fifo),
        vocab,
        error="ValueError",
        contains=("hparams 'dataset.files'", f"{fifo}: a FIFO (named pipe)"),
        timeout=20,
    )
    sandbox.expect_error(
        read_scalar,
        "/dev/zero",  # never ends
        error="ValueError",
        contains=("hparams 'dataset.files'", "/dev/zero: a device"),
        timeout=20,
    )


# -- Files changed after the dataset was made --------------------------------------------------


def mono(text, vocab, **hparams):
    return MonoTextData(
        {
            "dataset": {"files": [str(text)], "vocab_file": str(vocab)},
            "shuffle": False,
            "batch_size": 2,
            **hparams,
        }
    )


def texts(data):
    return [row for batch in data for row in batch["text"].numpy().tolist()]


def append(path, data):
    with open(path, "ab") as file:
        file.write(data)


def replace_with_binary(path, data):
    binary = f"{path}.new"
    with open(binary, "wb") as file:
        file.write(np.random.default_rng(0).integers(0, 256, len(data) + 64, np.uint8).tobytes())
    os.replace(binary, path)


@pytest.mark.parametrize(
    "change",
    [
        lambda path, data: append(path, b"a b\x00\n"),  # a NUL: the scan would refuse it
        lambda path, data: append(path, b"\xff\xfe cat\n"),  # invalid UTF-8
        lambda path, data: append(path, b"dog\n"),  # a valid line: the counts would be wrong
        replace_with_binary,
    ],
    ids=["nul", "invalid_utf8", "valid_line", "binary"],
)
def test_a_text_file_changed_after_construction_fails_its_next_epoch(tmp_path, change):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    text = tmp_path / "text.txt"
    content = b"a b\ncat\ndog a\n"
    text.write_bytes(content)
    data = mono(text, vocab)
    first = texts(data)
    assert len(first) == 3
    assert texts(data) == first  # unchanged: the next epoch reads the same
    change(str(text), content)
    message = rf"{text}: changed since the dataset was made .*rebuild the dataset"
    with pytest.raises(ValueError, match=message):
        texts(data)  # the next epoch, through the dataset object
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        list(data.dataset)  # or through tf.data (as Keras' fit reads it)
    with pytest.raises(ValueError, match=message):
        data.check_files_unchanged()


def test_a_file_changed_while_it_is_read_fails_that_epoch(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    text = tmp_path / "text.txt"
    text.write_bytes(b"a\n" * 8192)  # 8 chunks of 1,024 lines: more than is read ahead
    data = mono(text, vocab, prefetch_buffer_size=0, num_parallel_calls=1)
    batches = iter(data)
    next(batches)
    append(text, b"cat\n")
    with pytest.raises(ValueError, match=rf"{text}: changed since the dataset was made"):
        for _ in batches:
            pass


def test_a_tfrecord_file_cut_at_a_record_boundary_fails_its_next_epoch(tmp_path):
    examples = [{"x": [n, n + 1]} for n in range(10)]
    path = tmp_path / "a.tfrecord"
    write_tfrecords(str(path), examples)
    half = tmp_path / "half.tfrecord"
    write_tfrecords(str(half), examples[:5])
    whole = path.read_bytes()
    assert whole.startswith(half.read_bytes())  # the first five records, byte for byte
    data = TFRecordData(
        {"dataset": {"files": [str(path)], "features": {"x": ["int64", "fixed", [2]]}},
         "shuffle": False, "batch_size": 4}
    )  # fmt: skip
    read = [row for batch in data for row in batch["x"].numpy().tolist()]
    assert read == [e["x"] for e in examples]
    path.write_bytes(half.read_bytes())
    # TensorFlow itself reads the cut file without an error: 5 of the 10 records.
    assert sum(1 for _ in tf.data.TFRecordDataset(str(path))) == 5
    with pytest.raises(ValueError, match=rf"{path}: changed since the dataset was made"):
        [batch for batch in data]


def test_the_check_is_one_stat_per_file_before_and_after_each_epoch(tmp_path, monkeypatch):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    paths = []
    for index in range(2):
        text = tmp_path / f"text{index}.txt"
        text.write_text("a b\ncat\n")
        paths.append(str(text))
    data = MonoTextData(
        {"dataset": {"files": paths, "vocab_file": str(vocab)}, "shuffle": False,
         "num_epochs": 3, "batch_size": 3}
    )  # fmt: skip
    stamped = []
    real = file_scan.file_stamp
    monkeypatch.setattr(file_scan, "file_stamp", lambda path: stamped.append(path) or real(path))
    assert len(texts(data)) == 4 * 3
    assert sorted(stamped) == sorted(paths * 2 * 3)  # two files, before and after, three epochs


# -- The scan's line reading, against a plain reading of the whole bytes ------------------------


def reference_scan(data, limit):
    """(line of the first flaw or None, the kinds of flaw on that line, longest line)."""
    lines = data.split(b"\n")
    flaws, longest = {}, 0
    for number, line in enumerate(lines, start=1):
        # A \r ending the line (before \n, or the file's last byte) is not its content; any
        # other \r is a flaw.
        content = line[:-1] if line.endswith(b"\r") else line
        longest = max(longest, len(content))
        kinds = set()
        if b"\x00" in line:
            kinds.add("NUL")
        if b"\r" in content:
            kinds.add("carriage return")
        if len(content) > limit:
            kinds.add("longer than")
        if kinds:
            flaws[number] = kinds
    if not flaws:
        return None, set(), longest
    first = min(flaws)
    return first, flaws[first], longest


def test_the_scan_reads_lines_across_chunks_as_a_whole_reading_does():
    rng = np.random.default_rng(0)
    alphabet = np.frombuffer(b"aaaaaab \n\n\r\x00", np.uint8)
    for _ in range(3000):
        data = alphabet[rng.integers(0, len(alphabet), rng.integers(0, 60))].tobytes()
        if rng.random() < 0.5:  # most files have no NUL or stray \r: their lengths are compared
            data = data.replace(b"\x00", b"a").replace(b"\r", b"\r\n").replace(b"\r\n\n", b"\r\n")
        limit = int(rng.integers(1, 12))
        cuts = sorted(rng.integers(0, len(data) + 1, rng.integers(0, 6)).tolist())
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        problem, longest = file_scan._scan_lines(iter(chunks), limit)
        line, kinds, expected_longest = reference_scan(data, limit)
        case = (data, limit, chunks)
        if line is None:
            assert problem is None and longest == expected_longest, case
        else:
            assert problem is not None and problem[0] == f":{line}", (case, problem, line)
            if len(kinds) == 1:
                assert next(iter(kinds)) in problem[1], (case, problem, kinds)


def reference_records(data, limit):
    """(the record number and kind of the first flaw, or None; the longest record)."""
    position, number, longest = 0, 0, 0
    while position < len(data):
        number += 1
        if len(data) - position < 12:
            return (number, "is cut short"), longest
        (length,) = struct.unpack_from("<Q", data, position)
        if length > limit:
            return (number, "holds"), longest
        if len(data) - position < 12 + length + 4:
            return (number, "is cut short"), longest
        longest = max(longest, length)
        position += 12 + length + 4
    return None, longest


def test_the_scan_reads_tfrecord_framing_across_chunks_as_a_whole_reading_does():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        lengths = rng.integers(0, 20, rng.integers(0, 5)).tolist()
        records = [struct.pack("<Q", n) + b"\xaa" * 4 + b"r" * n + b"\xbb" * 4 for n in lengths]
        data = b"".join(records)
        if rng.random() < 0.3:
            data = data[: rng.integers(0, len(data) + 1)]
        limit = int(rng.integers(0, 25))
        cuts = sorted(rng.integers(0, len(data) + 1, rng.integers(0, 6)).tolist())
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        problem, longest = file_scan._scan_records(iter(chunks), limit)
        expected, expected_longest = reference_records(data, limit)
        case = (data, limit, chunks)
        if expected is None:
            assert problem is None and longest == expected_longest, case
        else:
            number, kind = expected
            assert problem is not None and f"record {number} {kind}" in problem[1], (case, problem)
