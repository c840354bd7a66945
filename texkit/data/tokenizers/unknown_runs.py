"""SentencePiece on long runs of unknown characters, in time linear in the text.

The SentencePiece library (which ``tensorflow_text`` runs) gives a run of characters that no
piece of the model holds a single ``<unk>`` id, however long the run. But it builds that
piece's text by copying the run so far once per character (``PopulateSentencePieceText``
merges the unknown pieces one at a time), so a run of ``n`` unknown characters takes time in
``n²``: a million take a minute. (Hugging Face's ``tokenizers`` joins them in linear time;
neither bounds the length of a word.)

So before SentencePiece, every run of more than ``K`` unknown characters in a text of more than
4,096 bytes keeps its first ``K`` (:func:`unknown_run_pattern`; in a shorter text a run costs a
millisecond at most, less than the search for it), ``K`` the model's longest normalization rule
in characters (4 for the NFKC of ALBERT and T5). A character is unknown here when it

1. is in no piece that SentencePiece matches in a text (its normal, user-defined and unused
   pieces; ``<pad>``, ``</s>`` or ``[CLS]`` are control symbols, never matched),
2. is neither whitespace nor NUL, and
3. is not a normalization rule of its own whose result holds whitespace or a character of
   such a piece, or is empty (NFKC turns ``Ａ`` into ``A``, ``¨`` into a space and a
   combining mark, and deletes a soft hyphen).

The ids are the same: the run gives one ``<unk>`` either way, the text around it is segmented
the same (no piece reaches into the run), and a rule that begins before the run takes fewer
than ``K`` of its characters, so at least one unknown character is left after it in both texts.
They could differ only where characters of the cut part would have combined into a character
of the model (a rule of several characters whose result the model holds), or the run's last
character with the text after it: an input made for that, not a text (the tests check the
ids on runs of every kind of character).

Not bounded yet: a run of characters that the model knows one by one but that normalization
combines into characters it lacks (``"u" + U+0308 + U+0301`` repeated becomes ``ǘ`` repeated) is not
cut, so it still takes time in the square of its length (900,000 characters: about 7 s). Cutting
it needs the run's positions after normalization mapped back to the text.

A model with ``byte_fallback`` (unknown characters as byte pieces, never merged) is left as it
is. The rules are read from the model's charsmap, a double-array trie (darts-clone's format:
each 32-bit unit holds a label byte, a leaf flag and the offset of its children; a leaf's
value is where the rule's result starts in the NUL-separated results after the trie), without
the ``sentencepiece`` package.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import tensorflow as tf

__all__ = ["MAX_RULE_CHARS", "cut_unknown_runs", "unknown_run_pattern"]

# The longest normalization rule, in characters, that texkit reads (NFKC's are 4).
MAX_RULE_CHARS = 32
# Texts longer than this have their runs of unknown characters cut.
CUT_ABOVE_BYTES = 4096
# The largest charsmap read (NFKC's is 240 KB).
MAX_CHARSMAP_BYTES = 16 << 20
# Python's str.isspace, and NUL: never part of a run.
_WHITESPACE = frozenset(
    [0, *range(0x09, 0x0E), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)]
    + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
)
# SentencePiece's piece types that it matches in a text.
_MATCHED_TYPES = (1, 4, 5)  # NORMAL, USER_DEFINED, UNUSED


class _Trie:
    """The double-array trie of a precompiled charsmap: its nodes' children, found as the
    library's ``traverse`` finds them (the child of node ``p`` by byte ``c`` is the unit at
    ``p ^ offset(p) ^ c`` when that unit's label is ``c``)."""

    def __init__(self, charsmap: bytes):
        if len(charsmap) < 4:
            raise ValueError("its normalization rules (precompiled_charsmap) are cut short")
        size = int.from_bytes(charsmap[:4], "little")
        if size < 4 or size > len(charsmap) - 4:
            raise ValueError(
                f"its normalization rules say they hold {size:,} bytes of trie in "
                f"{len(charsmap) - 4:,}"
            )
        units = np.frombuffer(charsmap, "<u4", count=size // 4, offset=4).astype(np.int64)
        self.results = charsmap[4 + size :]
        self.units = units
        self.size = units.size
        self.label = units & ((1 << 31) | 0xFF)
        self.base = np.arange(self.size, dtype=np.int64) ^ (
            (units >> 10) << ((units & (1 << 9)) >> 6)
        )
        # Every unit that is some node's child (label 1 to 255), by the base of its parent.
        child = np.nonzero((self.label >= 1) & (self.label <= 0xFF))[0]
        parent_base = child ^ self.label[child]
        order = np.argsort(parent_base, kind="stable")
        self._keys = parent_base[order]
        self._children = child[order]

    def children(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each child of ``nodes``: (the index of its parent in ``nodes``, the child)."""
        bases = self.base[nodes]
        first = np.searchsorted(self._keys, bases, "left")
        counts = np.searchsorted(self._keys, bases, "right") - first
        which = np.repeat(np.arange(nodes.size), counts)
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return which, self._children[np.repeat(first, counts) + within]

    def result(self, node: int) -> str | None:
        """The result of the rule that ends at ``node`` (``None`` if none does)."""
        unit = int(self.units[node])
        if not (unit >> 8) & 1:
            return None
        leaf = node ^ ((unit >> 10) << ((unit & (1 << 9)) >> 6))
        if not 0 <= leaf < self.size:
            raise ValueError("a normalization rule points outside the trie")
        start = int(self.units[leaf]) & ((1 << 31) - 1)
        end = self.results.find(b"\0", start)
        if start >= len(self.results) or end < 0:
            raise ValueError("a normalization rule's result lies outside the charsmap")
        return self.results[start:end].decode("utf-8", "replace")


def _rules(charsmap: bytes) -> tuple[dict[int, str | None], int]:
    """The characters that begin a rule of a precompiled charsmap, each with the result of the
    rule that is that character alone (``None`` when there is none), and the length of its
    longest rule in characters (an upper bound)."""
    if not charsmap:
        return {}, 0
    trie = _Trie(charsmap)
    # The first characters: the paths from the root that spell one UTF-8 character.
    firsts: dict[int, str | None] = {}
    nodes, values, missing = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    for depth in range(4):
        which, child = trie.children(nodes)
        byte = trie.label[child]
        value = (values[which] << 8) | byte
        if depth == 0:  # the bytes still to come after a lead byte (-1: not one)
            leads = [byte < 0x80, byte >= 0xF5, byte >= 0xF0, byte >= 0xE0, byte >= 0xC2]
            needs = np.select(leads, [0, -1, 3, 2, 1], -1)
        else:
            needs = np.where((byte & 0xC0) == 0x80, missing[which] - 1, -1)
        for code, node in zip(value[needs == 0].tolist(), child[needs == 0].tolist(), strict=True):
            try:
                character = code.to_bytes(depth + 1, "big").decode("utf-8")
            except UnicodeDecodeError:  # an overlong form or a surrogate: no text holds it
                continue
            firsts[ord(character)] = trie.result(node)
        keep = needs > 0
        nodes, values, missing = child[keep], value[keep], needs[keep]
    # The longest path from the root, in characters (bytes that are not continuation bytes).
    parents, children = [], []
    seen = np.zeros(trie.size, bool)
    seen[0] = True
    frontier = np.zeros(1, np.int64)
    while frontier.size:
        which, child = trie.children(frontier)
        parents.append(frontier[which])
        children.append(child)
        frontier = np.unique(child[~seen[child]])
        seen[frontier] = True
    parent, child = np.concatenate(parents), np.concatenate(children)
    weight = ((trie.label[child] & 0xC0) != 0x80).astype(np.int64)
    length = np.full(trie.size, -1, np.int64)
    length[0] = 0
    for _ in range(4 * MAX_RULE_CHARS + 2):  # a step per byte
        reached = length[parent] >= 0
        longer = length.copy()
        np.maximum.at(longer, child[reached], length[parent[reached]] + weight[reached])
        if np.array_equal(longer, length):
            return firsts, int(length.max())
        length = longer
        if length.max() > MAX_RULE_CHARS:
            break
    raise ValueError(
        f"it has a normalization rule of more than {MAX_RULE_CHARS} characters (or a loop of "
        f"rules); texkit reads rules of up to {MAX_RULE_CHARS} (NFKC's have 4)"
    )


def _character_class(code_points: Iterable[int], negated: bool) -> str:
    """An RE2 character class of ``code_points``, as ranges."""
    ranges: list[list[int]] = []
    for point in sorted(set(code_points)):
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    items = "".join(
        rf"\x{{{first:X}}}" if first == last else rf"\x{{{first:X}}}-\x{{{last:X}}}"
        for first, last in ranges
    )
    return f"[{'^' if negated else ''}{items}]"


def unknown_run_pattern(
    pieces: Iterable[tuple[str, float, int]], charsmap: bytes, byte_fallback: bool
) -> str | None:
    """The RE2 pattern of a run of more than ``K`` unknown characters, its first ``K`` the
    group 1 (``None`` for a model with ``byte_fallback``); see the module.

    Args:
        pieces: the model's (text, score, type) pieces.
        charsmap: its ``normalizer_spec.precompiled_charsmap`` (empty: no normalization).
        byte_fallback: its ``trainer_spec.byte_fallback``.

    Raises:
        ValueError: saying what is wrong with the charsmap (a caller names the file).
    """
    if byte_fallback:
        return None
    if len(charsmap) > MAX_CHARSMAP_BYTES:
        raise ValueError(
            f"its normalization rules take {len(charsmap):,} bytes; texkit reads up to "
            f"{MAX_CHARSMAP_BYTES:,} (NFKC's take 240,000)"
        )
    firsts, longest = _rules(charsmap)
    matched = set(_WHITESPACE)
    for text, _, kind in pieces:
        if kind in _MATCHED_TYPES:
            matched.update(map(ord, text))
    known = matched | {
        point
        for point, result in firsts.items()
        if result is not None and (not result or any(ord(c) in matched for c in result))
    }
    unknown = _character_class(known, negated=True)
    return f"({unknown}{{{max(longest, 1)}}}){unknown}+"


def cut_unknown_runs(texts: tf.Tensor, pattern: str) -> tf.Tensor:
    """``texts`` with the runs of unknown characters that ``pattern`` (of
    :func:`unknown_run_pattern`) matches cut to its group 1, in the texts of more than
    :data:`CUT_ABOVE_BYTES` bytes: in a shorter one a run costs SentencePiece a millisecond at
    most, less than the pattern would."""
    long = tf.cast(tf.strings.length(texts) > CUT_ABOVE_BYTES, tf.int32)
    parts = tf.dynamic_partition(texts, long, 2)
    positions = tf.dynamic_partition(tf.range(tf.size(texts)), long, 2)
    cut = tf.strings.regex_replace(parts[1], pattern, r"\1")
    return tf.reshape(tf.dynamic_stitch(positions, [parts[0], cut]), tf.shape(texts))
