"""Which texts ``FastBertTokenizer`` tokenizes as :class:`~texkit.data.BERTTokenizer`'s table
path does: the per-code-point probe and the regular expressions that route a batch.

``BERTTokenizer`` hands a text to ``tf_text.FastBertTokenizer`` (one C++ op) only when every
character of it was measured, once per process and mode, to come out as the reference tokenizer
makes it, and its words are short enough for the two word-length limits to agree; other texts
take the exact per-character table (``texkit/data/tokenizers.py`` explains why the two differ).
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from texkit.data._text_normalization import (
    _FAST_CANDIDATES,
    _char_class,
    _fast_path_candidates,
    _probe_words,
    _ranges,
)

# The probe vocabulary's unknown token: any string that is not one of its characters.
_PROBE_UNKNOWN = "[UNK]"


def _without_whitespace(vocab: tuple[str, ...]) -> list[str]:
    """``vocab`` with each token that holds whitespace replaced by one of non-ASCII characters.

    The replacements (``"\\x80"`` repeated, then the token's index) are new tokens, told apart
    from each other and from the vocabulary's.
    """
    taken = set(vocab)
    tokens = list(vocab)
    for i, token in enumerate(vocab):
        if any(c.isspace() for c in token):
            stand_in = f"\x80{i}"
            while stand_in in taken:
                stand_in = "\x80" + stand_in
            taken.add(stand_in)
            tokens[i] = stand_in
    return tokens


@functools.lru_cache(maxsize=2)
def _fast_safe_ranges(lowercase: bool) -> tuple[tuple[int, int], ...]:
    """The code points on which ``FastBertTokenizer`` gives the table path's words, as ranges.

    Each candidate (:func:`_fast_path_candidates`: the code points below U+3000 whose treatment
    does not depend on their neighbours) is probed between two letters, ``"a" + c + "b"``: its
    ids from ``FastBertTokenizer`` must equal those of the words the table makes of the probe
    (:func:`_probe_words`), with a vocabulary that holds every character either side outputs,
    alone and as a ``##`` continuation, so that the ids spell the words and where they split.
    That rules out whatever the two treat differently (see the module docstring): control and
    private-use characters, compatibility characters, ``ß``... The result depends only on the
    mode; it is computed once per process.
    """
    candidates = _fast_path_candidates(lowercase)
    probes = ["a" + chr(cp) + "b" for cp in candidates]
    want = [_probe_words(cp, lowercase) for cp in candidates]
    normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=lowercase)
    normalized = normalizer.normalize(tf.constant(probes)).numpy().tolist()
    chars = {c for words in want for word in words for c in word}
    chars |= {c for text in normalized for c in text.decode("utf-8", "replace")}
    chars = sorted(c for c in chars if not c.isspace())
    vocab = [_PROBE_UNKNOWN, *chars, *("##" + c for c in chars)]
    index = {token: i for i, token in enumerate(vocab)}
    fast = tf_text.FastBertTokenizer(
        vocab=vocab,
        token_out_type=tf.int32,
        unknown_token=_PROBE_UNKNOWN,
        lower_case_nfd_strip_accents=lowercase,
    )
    got = fast.tokenize(tf.constant(probes)).to_list()
    safe = np.zeros(_FAST_CANDIDATES, bool)
    for cp, words, ids in zip(candidates, want, got, strict=True):
        spelled = [
            index.get(piece) for word in words for piece in [word[0], *("##" + c for c in word[1:])]
        ]
        safe[cp] = None not in spelled and spelled == ids
    return tuple(_ranges(safe))


def _fast_path_patterns(lowercase: bool, max_chars_per_word: int) -> tuple[str, str, str | None]:
    """RE2 patterns for the texts ``FastBertTokenizer`` tokenizes as the table does.

    ``(ascii, characters, runs)``: a text of safe ASCII characters only (the first pattern) is
    one; another needs safe characters only (:func:`_fast_safe_ranges`, the second) and words
    short enough (the third) for the word limits to agree: ``FastBertTokenizer`` counts bytes,
    the reference characters. In ASCII the two are the same; below U+3000 a character is at most
    3 bytes, so a text whose runs without whitespace have at most ``max_chars_per_word // 3``
    characters never reaches either limit (``runs`` is ``None`` when that is under 1). One
    pattern for all three is too large for RE2's fast matcher; most texts need only the first.
    """
    safe = np.zeros(_FAST_CANDIDATES, bool)
    for first, last in _fast_safe_ranges(lowercase):
        safe[first : last + 1] = True
    if not safe[[ord(c) for c in " \t\n\ra"]].all():
        raise RuntimeError("BERTTokenizer: FastBertTokenizer does not treat ASCII as expected")
    ascii_only = f"{_char_class(_ranges(safe[:128]))}*"
    characters = f"{_char_class(_ranges(safe))}*"
    run = min(max_chars_per_word // 3, 100)
    if run < 1:
        return ascii_only, characters, None
    space, word = "[ \\t\\n\\r]", "[^ \\t\\n\\r]"
    return ascii_only, characters, f"{space}*(?:{word}{{1,{run}}}{space}+)*(?:{word}{{1,{run}}})?"
