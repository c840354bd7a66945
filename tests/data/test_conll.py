"""CoNLL files: the reader against plain string splitting, byte-identical round trips (synthetic
CoNLL-2003 and CoNLL-U files, and the real Turkish Web Treebank), and hostile files."""

import os
import tracemalloc

import pytest

from tests.real_data import turkish_treebank_files
from texkit.data import Sentence, conll_file_ending, iter_conll, read_conll, write_conll

CONLL2003 = (
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "EU NNP B-NP B-ORG\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP B-MISC\n"
    "\n"
    "Peter NNP B-NP B-PER\n"
    "Blackburn NNP I-NP I-PER\n"
    "\n"
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "# NN B-NP O\n"
    "Ünïcödé NN I-NP O\n"
)
CONLLU = (
    "# newdoc id = d1\n"
    "# sent_id = 1\n"
    "# text = vámonos al mar\n"
    "1-2\tvámonos\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tvamos\tir\tVERB\t_\tMood=Ind\t0\troot\t_\t_\n"
    "2\tnos\tnosotros\tPRON\t_\tCase=Acc\t1\tobj\t_\t_\n"
    "3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\ta\ta\tADP\t_\t_\t5\tcase\t_\t_\n"
    "4\tel\tel\tDET\t_\tDefinite=Def\t5\tdet\t_\t_\n"
    "5\tmar\tmar\tNOUN\t_\tGender=Masc\t1\tobl\t_\tSpaceAfter=No\n"
    "5.1\tva\tir\tVERB\t_\t_\t_\t_\t0:root\t_\n"
    "\n"
    "# sent_id = 2\n"
    "1\tSí\tsí\tINTJ\t_\t_\t0\troot\t_\t_\n"
    "\n"
)


def blocks(text):
    """The blank-line-separated blocks of a file, each a list of its lines (split by hand)."""
    return [block.split("\n") for block in text.strip("\n").split("\n\n")]


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return str(path)


def round_trip(tmp_path, path, format, **options):
    copy = str(tmp_path / "copy")
    ending = conll_file_ending(path)
    write_conll(copy, read_conll(path, format), format, ending=ending, **options)
    with open(path, "rb") as original, open(copy, "rb") as written:
        return original.read() == written.read()


def test_conll2003_reads_as_plain_splitting_gives_with_documents_kept(tmp_path):
    path = write(tmp_path, "ner.txt", CONLL2003)
    sentences = read_conll(path)
    expected = [b for b in blocks(CONLL2003) if not b[0].startswith("-DOCSTART-")]
    assert [s.tokens for s in sentences if s.tokens] == [[x.split() for x in b] for b in expected]
    # Three documents: the second has no sentence, the third's one starts with a "#" token.
    starts = [s.document_start for s in sentences]
    assert starts == ["-DOCSTART- -X- -X- O", None, "-DOCSTART- -X- -X- O", "-DOCSTART- -X- -X- O"]
    assert [len(s) for s in sentences] == [3, 2, 0, 2]
    assert sentences[0].column(-1) == ["B-ORG", "O", "B-MISC"]
    assert sentences[3].column(0) == ["#", "Ünïcödé"]
    assert [sentences[1].line, sentences[1].token_line(1)] == [7, 8]


@pytest.mark.parametrize("ending", ["\n\n", "\n", ""])
@pytest.mark.parametrize("separator", [" ", "\t"])
def test_conll2003_round_trips_byte_for_byte(tmp_path, ending, separator):
    text = CONLL2003.rstrip("\n").replace(" ", separator) + ending
    path = write(tmp_path, "ner.txt", text)
    assert round_trip(tmp_path, path, "conll2003", separator=separator)


@pytest.mark.parametrize("ending", ["\n\n", "\n", ""])
def test_conllu_round_trips_with_comments_multiword_tokens_and_empty_nodes(tmp_path, ending):
    path = write(tmp_path, "ud.conllu", CONLLU.rstrip("\n") + ending)
    assert round_trip(tmp_path, path, "conllu")
    first, second = read_conll(path, "conllu")
    assert first.comments == ["# newdoc id = d1", "# sent_id = 1", "# text = vámonos al mar"]
    # Word lines only, as a tagger tags them; the multiword and empty-node lines kept aside.
    lines = blocks(CONLLU)[0][3:]
    words = [line.split("\t") for line in lines if line.split("\t")[0].isdigit()]
    assert first.tokens == words
    assert first.column("FORM") == ["vamos", "nos", "a", "el", "mar"]
    assert first.column("UPOS") == first.column(3) == ["VERB", "PRON", "ADP", "DET", "NOUN"]
    assert [place for place, _ in first.extra_lines] == [0, 2, 5]
    assert [first.token_line(i) for i in range(5)] == [5, 6, 8, 9, 10]
    assert second.tokens == [blocks(CONLLU)[1][1].split("\t")]


def test_normalized_files_read_the_same(tmp_path):
    # CRLF ends, a byte-order mark, extra blank lines and runs of spaces or tabs between columns.
    messy = "\ufeff" + CONLL2003.replace("\n\n", "\n \n\n\t\n").replace(" ", "  \t")
    messy = messy.replace("\n", "\r\n")
    clean = read_conll(write(tmp_path, "clean.txt", CONLL2003))
    assert read_conll(write(tmp_path, "messy.txt", messy)) == clean
    out = str(tmp_path / "out.txt")
    write_conll(out, read_conll(str(tmp_path / "messy.txt")), ending="newline")
    with open(out, encoding="utf-8", newline="") as written:
        assert written.read() == CONLL2003


def test_lines_of_different_widths_read_with_any_and_round_trip(tmp_path):
    # As in files whose middle columns are a morphological analyser's features (fewer for
    # unknown words) before the tag.
    text = "2005\tZDIGIT\t名詞\tB-DAT\n年\tOTHER\t名詞\t接尾\t年\tI-DAT\n\n、\tOTHER\tO\n\n"
    path = write(tmp_path, "mecab.txt", text)
    with pytest.raises(ValueError, match=r"mecab\.txt:2: 6 columns, but the file's first token"):
        read_conll(path)
    with pytest.raises(ValueError, match=r"mecab\.txt:1: 4 columns, but num_columns is 6"):
        read_conll(path, num_columns=6)
    sentences = read_conll(path, num_columns="any")
    assert [s.column(-1) for s in sentences] == [["B-DAT", "I-DAT"], ["O"]]
    copy = str(tmp_path / "copy")
    write_conll(copy, sentences, separator="\t")
    with open(copy, encoding="utf-8", newline="") as written:
        assert written.read() == text


def test_the_turkish_web_treebank_reads_and_round_trips(tmp_path):
    total = 0
    for path, sentences_expected in zip(turkish_treebank_files(), [2541, 2310], strict=True):
        with open(path, "rb") as file:
            data = file.read()
        lines = data.decode("utf-8").split("\n")
        # Counted without the reader: one "# sent_id" comment per sentence, and every line that
        # is not a comment, blank, a multiword token (1-2) or an empty node (1.1) is a word.
        ids = [line.split("\t", 1)[0] for line in lines if line and not line.startswith("#")]
        words = sum(1 for id_ in ids if "-" not in id_ and "." not in id_)
        sent_ids = sum(1 for line in lines if line.startswith("# sent_id = "))
        sentences = read_conll(path, "conllu")
        assert len(sentences) == sent_ids == sentences_expected
        total += len(sentences)
        assert sum(len(s) for s in sentences) == words
        assert all(len(s.comments) == 2 for s in sentences)  # sent_id and text
        assert {len(set(map(len, s.tokens))) for s in sentences} == {1}
        assert conll_file_ending(path) == "none"  # no newline after the last line
        copy = str(tmp_path / os.path.basename(path))
        write_conll(copy, sentences, "conllu", ending="none")
        with open(copy, "rb") as file:
            assert file.read() == data
    # The two files together: the 4,851 sentences.
    assert total == 4851


def test_a_huge_file_is_read_streaming(tmp_path):
    word = "w" * 190
    sentence = "".join(f"{word}{i} NN O\n" for i in range(20)) + "\n"
    path = tmp_path / "big.txt"
    with open(path, "w", encoding="utf-8") as file:
        file.write(sentence * 1000)  # about 4 MB
        file.write("bad line with too many columns\n")
    size = os.path.getsize(path)
    tracemalloc.start()
    try:
        reader = iter_conll(str(path))
        assert next(reader).column(0) == [f"{word}{i}" for i in range(20)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size / 8  # the first sentence came before the file was read whole
    count = 1
    with pytest.raises(ValueError, match=r"big\.txt:21001: 6 columns, but the file's first"):
        for _ in reader:
            count += 1
    assert count == 1000


@pytest.mark.parametrize(
    "data, format, message",
    [
        (b"a B O\nb C\n", "conll2003", r"f:2: 2 columns, but the file's first token line \(1\) "),
        (b"1\ta\t_\t_\t_\t_\t0\troot\t_\n", "conllu", r"f:1: 9 columns, but a CoNLL-U token line"),
        (b"1 a _ _ _ _ 0 root _ _\n", "conllu", r"f:1: 1 columns"),
        (b"a O\nb\xff O\n", "conll2003", r"f:2: the line is not valid UTF-8"),
        (b"a O\nb\x00 O\n", "conll2003", r"f:2: the line holds a NUL byte"),
        (b"a O\rb O\n", "conll2003", r"f:1: the line holds a carriage return"),
        (b"a O\n" + b"b" * 300 + b" O\n", "conll2003", r"f:2: the line is longer than 256 bytes"),
        (b"1\ta\t\t_\t_\t_\t0\troot\t_\t_\n", "conllu", r"f:1: column LEMMA is empty"),
        (
            b"1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n# late\n",
            "conllu",
            r"f:2: a comment after the sentence's token lines",
        ),
    ],
)
def test_bad_lines_are_errors_naming_file_and_line(tmp_path, data, format, message):
    path = write(tmp_path, "f", data)
    with pytest.raises(ValueError, match=message):
        read_conll(path, format, max_line_bytes=256)


def test_a_giant_line_is_refused_before_it_is_held_whole(tmp_path):
    path = tmp_path / "giant"
    path.write_bytes(b"a O\n" + b"x" * (5 << 20))  # 5 MiB without a newline
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"giant:2: the line is longer than 1,048,576"):
            read_conll(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_invalid_utf8_can_be_replaced(tmp_path):
    path = write(tmp_path, "f", b"a O\nb\xff O\n")
    assert read_conll(path, invalid_utf8="replace")[0].column(0) == ["a", "b\ufffd"]


def test_what_is_not_a_regular_file_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing: no such file"):
        read_conll(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="a folder, not a file"):
        read_conll(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"FIFO \(named pipe\)"):  # refused, never waited on
        read_conll(str(fifo))


def test_bad_arguments_and_columns():
    with pytest.raises(ValueError, match="format must be one of"):
        next(iter_conll("x", "conll2000"))
    with pytest.raises(ValueError, match="invalid_utf8 must be"):
        next(iter_conll("x", invalid_utf8="skip"))
    for bad in ["all", 0, True]:
        with pytest.raises(ValueError, match="num_columns is a positive int or 'any'"):
            next(iter_conll("x", num_columns=bad))
    sentence = Sentence([["a", "O"]])
    with pytest.raises(ValueError, match="unknown column 'POS'; CoNLL-U columns are ID, FORM"):
        sentence.column("POS")
    with pytest.raises(ValueError, match=r"column 2 is outside tokens of \[2\] columns"):
        sentence.column(2)


@pytest.mark.parametrize(
    "sentence, format, message",
    [
        (Sentence([["a b", "O"]]), "conll2003", r"sentence 1, token 0: column 'a b'"),
        (Sentence([["a", ""]]), "conll2003", r"sentence 1, token 0: column ''"),
        (Sentence([["a", "O\nx"]]), "conll2003", r"sentence 1, token 0: column 'O\\nx'"),
        (Sentence([["1", "a"]]), "conllu", r"sentence 1, token 0: 2 columns"),
        (Sentence([["a", "O"]], comments=["# c"]), "conll2003", "CoNLL-U only"),
        (Sentence([["a", "O"]], document_start="-X-"), "conll2003", "must be a -DOCSTART- line"),
        (Sentence([], extra_lines=[(1, ["1-2"] + ["_"] * 9)]), "conllu", "places within"),
    ],
)
def test_the_writer_refuses_what_would_not_read_back_and_changes_nothing(
    tmp_path, sentence, format, message
):
    path = tmp_path / "out"
    path.write_bytes(b"kept\n")
    good = Sentence([["1", "x", "_", "_", "_", "_", "0", "root", "_", "_"]])
    if format == "conll2003":
        good = Sentence([["x", "O"]])
    with pytest.raises(ValueError, match=message):
        write_conll(str(path), [good, sentence], format)
    assert path.read_bytes() == b"kept\n"
    assert os.listdir(tmp_path) == ["out"]  # no temporary file left behind
