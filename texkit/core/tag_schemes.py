"""Tag schemes of sequence tagging: tags, their chunks (entities) and the transitions they allow.

A tagging scheme marks each token of a sentence as outside any chunk (``"O"``) or as part of a
chunk of some type, the tag being a prefix letter, a hyphen and the type (``"B-PER"``). texkit
knows four schemes:

* ``"IOB2"`` (also called BIO; ``"BIO"`` is accepted): ``B-X`` begins every chunk, ``I-X``
  continues it.
* ``"IOB1"``: ``I-X`` begins and continues chunks; ``B-X`` begins a chunk only right after a chunk
  of the same type (the CoNLL-2003 files' scheme).
* ``"IOBES"``: ``B-X`` begins, ``I-X`` continues and ``E-X`` ends a chunk of two tokens or more;
  ``S-X`` is a chunk of one token.
* ``"BILOU"``: the same with ``L-X`` (last) for ``E-X`` and ``U-X`` (unit) for ``S-X``.

Chunks are read in one of two ways (:func:`entity_spans`):

* lenient (``strict=False``), as the CoNLL shared tasks' ``conlleval`` script and ``seqeval``'s
  default mode read them: every tag that is not ``O`` belongs to a chunk, so a malformed tag
  still counts (``O I-X`` is a chunk ``X``, and ``B-X I-Y`` two chunks). A chunk ends at ``O``,
  at ``B``, at ``S``, after ``E`` or ``S``, and where the type changes. IOB1 and IOB2 are read
  alike, which is what ``conlleval`` does. ``seqeval``'s default mode knows the letters B, I, E
  and S only; texkit reads BILOU's ``L`` and ``U`` as ``E`` and ``S`` (``seqeval``'s default mode
  treats them like ``I``, so that ``U-X U-X`` is one chunk there and two here).
* strict (``strict=True``), as ``seqeval``'s strict mode reads them: only well-formed chunks count,
  ``B-X I-X*`` in IOB2, ``B-X I-X* E-X`` or ``S-X`` in IOBES, ``B-X I-X* L-X`` or ``U-X`` in
  BILOU; the tags of a malformed chunk belong to no chunk. IOB1 has no strict reading here.

A tag that is not a tag of the scheme (``E-PER`` in IOB2, ``PER``, ``B-``) is an error in both
readings; ``seqeval``'s default mode reads the letters B, I, E and S whatever the scheme and
only warns about others, and ``conlleval`` reads any letter.

:func:`allowed_transitions` gives which tag may start a sequence, follow another and end a
sequence, as boolean masks for a linear-chain CRF's constraints.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["SCHEMES", "allowed_transitions", "entity_spans", "normalize_scheme", "parse_tag"]

SCHEMES = ("IOB1", "IOB2", "IOBES", "BILOU")

_PREFIXES = {"IOB1": "BI", "IOB2": "BI", "IOBES": "BIES", "BILOU": "BILU"}
# BILOU's letters read as IOBES's, so that one grammar serves both.
_AS_IOBES = {"B": "B", "I": "I", "E": "E", "S": "S", "L": "E", "U": "S", "O": "O"}


def normalize_scheme(scheme: str, what: str = "scheme") -> str:
    """The canonical name of a tag scheme: one of :data:`SCHEMES`.

    Args:
        scheme: a scheme's name, in any case; ``"BIO"`` is ``"IOB2"``.
        what: how to name the argument in an error.

    Returns:
        ``"IOB1"``, ``"IOB2"``, ``"IOBES"`` or ``"BILOU"``.

    Raises:
        ValueError: ``scheme`` names no known scheme.
    """
    name = scheme.upper() if isinstance(scheme, str) else None
    if name == "BIO":
        name = "IOB2"
    if name not in SCHEMES:
        raise ValueError(f"{what} must be one of {', '.join(SCHEMES)} or BIO, got {scheme!r}")
    return name


def parse_tag(tag: str, scheme: str, what: str = "tag") -> tuple[str, str]:
    """Splits a tag of ``scheme`` into its prefix letter and its entity type.

    Args:
        tag: ``"O"`` or a prefix letter of the scheme, a hyphen and a non-empty type
            (``"B-PER"``; the type may hold hyphens: ``"I-ORG-X"`` has type ``"ORG-X"``).
        scheme: the scheme (see :func:`normalize_scheme`).
        what: how to name the tag in an error (e.g. ``"predictions[3][7]"``).

    Returns:
        ``(prefix, type)``; ``("O", "")`` for ``"O"``.

    Raises:
        ValueError: ``tag`` is not a tag of ``scheme`` (e.g. ``"E-PER"`` in IOB2, ``"B-"``).

    Example:
        >>> parse_tag("B-MISC", "BIO")
        ('B', 'MISC')
        >>> parse_tag("O", "IOBES")
        ('O', '')
    """
    scheme = normalize_scheme(scheme)
    if tag == "O":
        return "O", ""
    if isinstance(tag, str) and len(tag) > 2 and tag[1] == "-" and tag[0] in _PREFIXES[scheme]:
        return tag[0], tag[2:]
    letters = ", ".join(f"{letter}-TYPE" for letter in _PREFIXES[scheme])
    raise ValueError(f"{what} is {tag!r}, not a tag of scheme {scheme} (O, {letters})")


def _parse_all(tags: Sequence[str], scheme: str, what: str) -> list[tuple[str, str]]:
    if isinstance(tags, str):
        raise TypeError(f"{what} must be a sequence of tags, got the string {tags!r}")
    return [parse_tag(tag, scheme, f"{what}[{i}]") for i, tag in enumerate(tags)]


def allowed_transitions(
    tags: Sequence[str], scheme: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which tags may start a sequence, follow one another and end a sequence in ``scheme``.

    The masks are what a linear-chain CRF needs to never decode a malformed sequence: IOB2's
    ``I-X`` only after ``B-X`` or ``I-X`` and never first; IOB1's ``B-X`` only after ``I-X`` or
    ``B-X`` and never first (``I-X`` may start and follow anything); IOBES's and BILOU's chunk
    grammar (``B-X`` and ``I-X`` are followed by ``I-X`` or ``E-X`` / ``L-X`` and nothing else;
    a sequence starts with ``O``, ``B`` or ``S`` / ``U`` and ends with ``O``, ``E`` or ``S`` /
    ``L`` or ``U``). A sequence is allowed when its first tag may start, each tag may follow the
    previous one and its last tag may end; the allowed sequences are exactly those that
    :func:`entity_spans` reads without dropping or merging a tag.

    Every tag must be a tag of the scheme. A tag set with extra labels (padding, ``[CLS]``) is
    the caller's to handle: compute the masks of the scheme's tags and set the extra rows and
    columns as the model needs.

    Args:
        tags: the tags in id order (tag ``i`` has id ``i``); they need not cover every type's
            every prefix.
        scheme: the scheme (see :func:`normalize_scheme`).

    Returns:
        ``(start, transitions, end)``: boolean arrays of shapes ``[n]``, ``[n, n]`` indexed
        ``[from, to]`` and ``[n]`` for the ``n`` tags.

    Raises:
        ValueError: a tag is not a tag of ``scheme``, or appears twice.

    Example:
        >>> start, transitions, end = allowed_transitions(["O", "B-PER", "I-PER"], "BIO")
        >>> start.tolist(), transitions[0].tolist()  # never O -> I-PER
        ([True, True, False], [True, True, False])
    """
    scheme = normalize_scheme(scheme)
    parsed = _parse_all(tags, scheme, "tags")
    seen = {}
    for i, tag in enumerate(tags):
        if tag in seen:
            raise ValueError(f"tags[{i}] is {tag!r}, which is also tags[{seen[tag]}]")
        seen[tag] = i
    n = len(parsed)
    start = np.array([_may_follow(None, p, scheme) for p in parsed], dtype=bool)
    end = np.array([_may_follow(p, None, scheme) for p in parsed], dtype=bool)
    transitions = np.array(
        [[_may_follow(a, b, scheme) for b in parsed] for a in parsed], dtype=bool
    ).reshape(n, n)
    return start, transitions, end


def _may_follow(prev: tuple[str, str] | None, tag: tuple[str, str] | None, scheme: str) -> bool:
    """Whether ``tag`` may come right after ``prev`` (``None``: the sequence's edge)."""
    prev_prefix, prev_type = prev if prev is not None else ("O", "")
    prefix, type_ = tag if tag is not None else ("O", "")
    same = prev is not None and tag is not None and prev_type == type_
    if scheme == "IOB2":
        return prefix != "I" or (prev_prefix in "BI" and same)
    if scheme == "IOB1":
        return prefix != "B" or (prev_prefix in "BI" and same)
    prev_prefix, prefix = _AS_IOBES[prev_prefix], _AS_IOBES[prefix]
    if prev_prefix in "BI":  # inside a chunk: only its continuation or its end
        return prefix in "IE" and same
    return prefix in "OBS"


def _chunk_ends(prev_prefix: str, prev_type: str, prefix: str, type_: str) -> bool:
    """Lenient reading: whether a chunk ends between the previous tag and this one."""
    if prev_prefix == "O":
        return False
    if prev_prefix in "ES" or prefix in "BSO":
        return True
    return prev_type != type_


def _chunk_starts(prev_prefix: str, prev_type: str, prefix: str, type_: str) -> bool:
    """Lenient reading: whether a chunk starts at this tag."""
    if prefix == "O":
        return False
    if prefix in "BS" or prev_prefix in "OES":
        return True
    return prev_type != type_


def _lenient_spans(parsed: list[tuple[str, str]]) -> list[tuple[str, int, int]]:
    spans = []
    prev_prefix, prev_type, begin = "O", "", 0
    for i, (prefix, type_) in enumerate([*parsed, ("O", "")]):
        prefix = _AS_IOBES[prefix]
        if _chunk_ends(prev_prefix, prev_type, prefix, type_):
            spans.append((prev_type, begin, i))
        if _chunk_starts(prev_prefix, prev_type, prefix, type_):
            begin = i
        prev_prefix, prev_type = prefix, type_
    return spans


def _strict_spans(parsed: list[tuple[str, str]], scheme: str) -> list[tuple[str, int, int]]:
    spans = []
    i, n = 0, len(parsed)
    while i < n:
        prefix, type_ = parsed[i]
        prefix = _AS_IOBES[prefix]
        if prefix == "S":
            spans.append((type_, i, i + 1))
        if prefix != "B":
            i += 1
            continue
        # A chunk opened by B: consume its I tags, then (IOBES, BILOU) its closing E tag.
        j = i + 1
        while j < n and parsed[j] == ("I", type_):
            j += 1
        if scheme == "IOB2":
            spans.append((type_, i, j))
        elif j < n and _AS_IOBES[parsed[j][0]] == "E" and parsed[j][1] == type_:
            j += 1
            spans.append((type_, i, j))
        i = j
    return spans


def entity_spans(
    tags: Sequence[str], scheme: str, strict: bool = False
) -> list[tuple[str, int, int]]:
    """The chunks (entities) of one tag sequence, in order.

    Args:
        tags: one sentence's tags, each a tag of ``scheme`` (see :func:`parse_tag`).
        scheme: the scheme (see :func:`normalize_scheme`).
        strict: ``False`` for the lenient reading of ``conlleval`` and ``seqeval``'s default
            mode, ``True`` for ``seqeval``'s strict mode (IOB2, IOBES, BILOU); see the module
            docstring.

    Returns:
        ``(type, start, end)`` per chunk, ``end`` exclusive.

    Raises:
        ValueError: a tag is not a tag of ``scheme``, or ``strict`` with IOB1.

    Example:
        >>> tags = ["B-PER", "I-PER", "O", "I-LOC", "B-ORG", "I-LOC"]
        >>> entity_spans(tags, "IOB2")
        [('PER', 0, 2), ('LOC', 3, 4), ('ORG', 4, 5), ('LOC', 5, 6)]
        >>> entity_spans(tags, "IOB2", strict=True)
        [('PER', 0, 2), ('ORG', 4, 5)]
    """
    scheme = normalize_scheme(scheme)
    if strict and scheme == "IOB1":
        raise ValueError("strict=True needs scheme IOB2, IOBES or BILOU; IOB1 is read leniently")
    parsed = _parse_all(tags, scheme, "tags")
    return _strict_spans(parsed, scheme) if strict else _lenient_spans(parsed)
