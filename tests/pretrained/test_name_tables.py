"""Name tables: every family's table maps the same checkpoint entries to the same variables as
before the tables were written with :class:`~texkit.pretrained.names.NameTable`, and the
representation's conventions; the old public names warn and still work."""

import importlib.util
import json
import os

import pytest

import texkit as tx
from texkit.pretrained.checkpoints import (
    DENSE,
    GOOGLE,
    HEADS_IN,
    HUGGINGFACE,
    KERAS_HUB,
    OPENAI,
    SAME,
)
from texkit.pretrained.names import NameTable

FOLDER = os.path.join(os.path.dirname(__file__), "..", "fixtures", "name_tables")
FIXTURE = os.path.join(FOLDER, "tables.json")


def tables() -> dict:
    """The current code's tables, made by the script that made the fixture."""
    spec = importlib.util.spec_from_file_location(
        "make_name_tables", os.path.join(FOLDER, "make_fixture.py")
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script.tables()


@pytest.fixture(scope="module")
def before():
    with open(FIXTURE, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def now():
    return json.loads(json.dumps(tables()))  # tuples as lists, as in the file


def test_every_family_and_case_is_compared(before, now):
    # Every family the tables were captured for (families added since, the Llama line, are
    # checked against transformers' outputs instead: tests/pretrained/test_llama_line.py).
    assert sorted(now) == sorted(before) and set(before) <= set(tx.pretrained.FAMILIES)
    for family, cases in before.items():
        assert sorted(now[family]) == sorted(cases), family
        for case, parts in cases.items():
            assert list(now[family][case]) == list(parts), (family, case)


@pytest.mark.parametrize(
    "family, case",
    [("bert", "two_layers"), ("roberta", "two_layers"), ("distilbert", "two_layers"),
     ("albert", "two_layers"), ("electra", "projected"), ("electra", "not_projected"),
     ("gpt2", "two_layers"), ("t5", "t5_1_0"), ("t5", "t5_1_1")],
)  # fmt: skip
def test_tables_are_the_same_row_for_row_in_every_format(before, now, family, case):
    for part, rows in before[family][case].items():
        got = now[family][case][part]
        assert len(got) == len(rows), (family, case, part)
        for old, new in zip(rows, got, strict=True):
            assert new == old, (family, case, part)
        formats = {fmt for row in rows for fmt in row[1]}
        for fmt in formats:  # each format's mapping, entry -> variable
            assert {r[1][fmt]: r[0] for r in got} == {r[1][fmt]: r[0] for r in rows}


def test_a_name_follows_its_format_s_convention():
    paths = {HUGGINGFACE: "h.0.mlp.c_fc", GOOGLE: "bert/x", OPENAI: "model/h0/c", KERAS_HUB: "k"}
    rows = NameTable(paths).dense("ffn", paths).norm("norm", paths).rows
    assert [r.names for r in rows] == [
        {HUGGINGFACE: "h.0.mlp.c_fc.weight", GOOGLE: "bert/x/kernel", OPENAI: "model/h0/c/w",
         KERAS_HUB: "k/vars/0"},
        {HUGGINGFACE: "h.0.mlp.c_fc.bias", GOOGLE: "bert/x/bias", OPENAI: "model/h0/c/b",
         KERAS_HUB: "k/vars/1"},
        {HUGGINGFACE: "h.0.mlp.c_fc.weight", GOOGLE: "bert/x/gamma", OPENAI: "model/h0/c/g",
         KERAS_HUB: "k/vars/0"},
        {HUGGINGFACE: "h.0.mlp.c_fc.bias", GOOGLE: "bert/x/beta", OPENAI: "model/h0/c/b",
         KERAS_HUB: "k/vars/1"},
    ]  # fmt: skip
    assert [r.layout for r in rows] == [DENSE, SAME, SAME, SAME]
    embedding = NameTable((HUGGINGFACE, GOOGLE)).weight(
        "e.embedding", {HUGGINGFACE: "wte", GOOGLE: "bert/wte"}
    )
    assert embedding.rows[0].names == {HUGGINGFACE: "wte.weight", GOOGLE: "bert/wte"}


def test_a_per_head_layout_is_plain_without_a_per_head_format():
    plain = NameTable((HUGGINGFACE,)).dense("q", {HUGGINGFACE: "q"}, HEADS_IN)
    assert plain.rows[0].layout == DENSE
    keras = NameTable((HUGGINGFACE, KERAS_HUB), heads=4)
    row = keras.dense("q", {HUGGINGFACE: "q", KERAS_HUB: "q"}, HEADS_IN).rows[0]
    assert (row.layout, row.heads) == (HEADS_IN, 4)


def test_a_table_names_every_entry_in_every_format():
    with pytest.raises(ValueError, match="x.kernel: no name in openai"):
        NameTable((HUGGINGFACE, OPENAI)).dense("x", {HUGGINGFACE: "x"} | {OPENAI: None})
    with pytest.raises(KeyError, match="entry"):
        NameTable((HUGGINGFACE,)).weight("head.output_bias", {HUGGINGFACE: "cls"})
