"""Tag schemes: tags, allowed transitions checked against a grammar written another way.

:func:`allowed_transitions` is checked on every tag sequence of length 1 to 3 over two types: a
sequence is allowed exactly when writing its chunks back in the scheme gives the same sequence
(the chunks read strictly, or leniently for IOB1, which has no malformed sequences to drop but
B tags that only one position allows). The chunk readings themselves are checked against
seqeval and conlleval through entity F1 in tests/evals/test_entities.py.
"""

import itertools
import random

import pytest

from texkit.core import tag_schemes
from texkit.core.tag_schemes import (
    SCHEMES,
    allowed_transitions,
    entity_spans,
    normalize_scheme,
    parse_tag,
)

# The prefix letters of each scheme, from the schemes' definitions.
LETTERS = {"IOB1": "BI", "IOB2": "BI", "IOBES": "BIES", "BILOU": "BILU"}


def write_chunks(spans, length, scheme):
    """Tags that carry ``spans`` in ``scheme``, written from the schemes' definitions."""
    tags = ["O"] * length
    previous = None
    for type_, start, end in spans:
        size = end - start
        if scheme == "IOB1":
            tags[start:end] = [f"I-{type_}"] * size
            if previous == (type_, start):  # B only splits two chunks of one type
                tags[start] = f"B-{type_}"
        elif scheme == "IOB2":
            tags[start:end] = [f"B-{type_}"] + [f"I-{type_}"] * (size - 1)
        else:
            begin, inside, last, unit = "BIES" if scheme == "IOBES" else "BILU"
            if size == 1:
                tags[start] = f"{unit}-{type_}"
            else:
                tags[start:end] = (
                    [f"{begin}-{type_}"] + [f"{inside}-{type_}"] * (size - 2) + [f"{last}-{type_}"]
                )
        previous = (type_, end)
    return tags


def scheme_tags(scheme):
    tags = ["O"] + [f"{letter}-{t}" for t in ("X", "Y") for letter in LETTERS[scheme]]
    random.Random(scheme).shuffle(tags)  # ids in no particular order
    return tags


@pytest.mark.parametrize("scheme", SCHEMES)
def test_allowed_transitions_match_the_chunk_grammar(scheme):
    tags = scheme_tags(scheme)
    start, transitions, end = allowed_transitions(tags, scheme)
    n = len(tags)
    assert start.shape == end.shape == (n,) and transitions.shape == (n, n)
    assert start.dtype == transitions.dtype == end.dtype == bool
    strict = scheme != "IOB1"
    allowed_count = 0
    for length in (1, 2, 3):
        for ids in itertools.product(range(n), repeat=length):
            sequence = [tags[i] for i in ids]
            allowed = bool(
                start[ids[0]]
                and end[ids[-1]]
                and all(transitions[a, b] for a, b in zip(ids, ids[1:], strict=False))
            )
            spans = entity_spans(sequence, scheme, strict=strict)
            assert allowed == (write_chunks(spans, length, scheme) == sequence), sequence
            if allowed:
                allowed_count += 1
                # A well-formed sequence reads the same leniently and strictly.
                assert entity_spans(sequence, scheme) == spans
    assert 0 < allowed_count < n + n**2 + n**3


def test_allowed_transitions_by_hand():
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    start, transitions, end = allowed_transitions(tags, "BIO")
    assert start.tolist() == [True, True, False, True, False]
    assert transitions[0, 2] == transitions[3, 2] == transitions[4, 2] == False  # noqa: E712
    assert transitions[1, 2] and transitions[2, 2] and transitions[2, 3] and end.all()
    start, transitions, end = allowed_transitions(["B-PER", "I-PER", "O"], "IOB1")
    assert start.tolist() == [False, True, True] and end.all()
    assert transitions[:, 0].tolist() == [True, True, False]  # B-PER only after PER
    start, transitions, end = allowed_transitions(["U-A", "B-A", "L-A", "I-A", "O"], "BILOU")
    assert start.tolist() == [True, True, False, False, True]
    assert end.tolist() == [True, False, True, False, True]
    assert transitions[1].tolist() == [False, False, True, True, False]


def test_names_and_tags():
    assert normalize_scheme("bio") == "IOB2" and normalize_scheme("Bilou") == "BILOU"
    assert [normalize_scheme(s.lower()) for s in SCHEMES] == list(SCHEMES)
    with pytest.raises(ValueError, match=r"my_scheme must be one of .*'IOE2'"):
        normalize_scheme("IOE2", what="my_scheme")
    assert parse_tag("O", "IOB1") == ("O", "")
    assert parse_tag("I-ORG-X", "IOB2") == ("I", "ORG-X")
    for scheme in SCHEMES:
        for letter in "BIESLUO":
            if letter in LETTERS[scheme]:
                assert parse_tag(f"{letter}-T", scheme) == (letter, "T")
            else:
                with pytest.raises(ValueError, match=rf"labels\[2\] is '{letter}-T', not a tag"):
                    parse_tag(f"{letter}-T", scheme, what="labels[2]")
        for bad in ("X", "B-", "B", "", "b-PER", "BPER", "-PER", None):
            with pytest.raises(ValueError, match=r"tag is .*not a tag of scheme"):
                parse_tag(bad, scheme)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"tags\[1\] is 'E-PER', not a tag of scheme IOB2"):
        allowed_transitions(["O", "E-PER"], "IOB2")
    with pytest.raises(ValueError, match=r"tags\[2\] is 'O', which is also tags\[0\]"):
        allowed_transitions(["O", "B-PER", "O"], "IOB2")
    with pytest.raises(ValueError, match=r"tags\[2\] is 'S-PER'"):
        entity_spans(["O", "B-PER", "S-PER"], "BILOU")
    with pytest.raises(ValueError, match="strict=True needs scheme IOB2, IOBES or BILOU"):
        entity_spans(["I-PER"], "IOB1", strict=True)
    with pytest.raises(TypeError, match="got the string"):
        entity_spans("B-PER", "IOB2")
    with pytest.raises(ValueError, match="scheme must be one of"):
        entity_spans(["O"], "IOE1")
    assert tag_schemes.allowed_transitions([], "IOBES")[1].shape == (0, 0)
