"""BERT pretraining data, checked against what the BERT paper and create_pretraining_data.py say.

The NSP tests use a synthetic corpus whose token ids encode (document, sentence, position), so
where every token of a pair came from can be read back without trusting the code under test.
"""

import collections
import math

import numpy as np
import pytest
import tensorflow as tf

from texkit.data.bert_pretraining import (
    MaskedLMMasker,
    make_nsp_pairs,
    pack_pair,
    pretraining_dataset,
)

PAD, CLS, SEP, MASK = 0, 101, 102, 103
VOCAB = 30522
NEVER = {PAD, CLS, SEP, MASK}


def within(observed, expected_p, n, sigmas=5.0):
    """Whether a count is within `sigmas` binomial standard deviations of n * expected_p."""
    return abs(observed - n * expected_p) <= sigmas * math.sqrt(n * expected_p * (1 - expected_p))


def as_numpy(features):
    return {key: np.asarray(value) for key, value in features.items()}


# -- Masked LM --------------------------------------------------------------------------------


def packed_sample(num_rows, max_len, rng):
    """[CLS] words [SEP] words [SEP] PAD..., with a stray special id inside some sequences."""
    ids = np.zeros((num_rows, max_len), np.int32)
    lengths = rng.integers(40, max_len + 1, num_rows).astype(np.int32)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(1000, VOCAB, length)
        ids[row, 0] = CLS
        ids[row, rng.integers(2, length - 2)] = SEP
        ids[row, length - 1] = SEP
        if row % 3 == 0:
            ids[row, rng.integers(1, length - 1)] = rng.choice(sorted(NEVER))
    return ids, lengths


@pytest.fixture(scope="module")
def masked_sample():
    rng = np.random.default_rng(2024)
    ids, lengths = packed_sample(2000, 128, rng)
    masker = MaskedLMMasker(VOCAB, MASK, [PAD, CLS, SEP], max_predictions_per_seq=20)
    out = as_numpy(masker(ids, lengths, tf.constant([7, 11], tf.int64)))
    return ids, lengths, out


def test_masked_lm_outputs_are_consistent(masked_sample):
    ids, lengths, out = masked_sample
    num_rows, max_len = ids.shape
    assert out["masked_lm_positions"].shape == (num_rows, 20)
    assert out["masked_lm_weights"].dtype == np.float32
    total_predictions = 0
    for row in range(num_rows):
        eligible = [p for p in range(max_len) if p < lengths[row] and int(ids[row, p]) not in NEVER]
        # The BERT rule over the eligible tokens: round(15%), at least 1, at most 20.
        expected_count = min(20, max(1, round(len(eligible) * 0.15)))
        weights = out["masked_lm_weights"][row]
        np.testing.assert_array_equal(
            weights, [1.0] * expected_count + [0.0] * (20 - expected_count)
        )
        positions = out["masked_lm_positions"][row, :expected_count]
        assert len(set(positions.tolist())) == expected_count
        assert set(positions.tolist()) <= set(eligible)  # never a special token or padding
        assert np.all(np.diff(positions) > 0)
        np.testing.assert_array_equal(
            out["masked_lm_ids"][row, :expected_count], ids[row, positions]
        )
        assert not out["masked_lm_positions"][row, expected_count:].any()
        assert not out["masked_lm_ids"][row, expected_count:].any()
        untouched = np.setdiff1d(np.arange(max_len), positions)
        np.testing.assert_array_equal(out["input_ids"][row, untouched], ids[row, untouched])
        total_predictions += expected_count
    assert total_predictions > 20000


def test_masked_positions_are_uniform_over_eligible_tokens(masked_sample):
    ids, lengths, out = masked_sample
    num_rows, max_len = ids.shape
    eligible = (np.arange(max_len) < lengths[:, None]) & ~np.isin(ids, list(NEVER))
    rate = out["masked_lm_weights"].sum(1) / eligible.sum(1)  # each eligible token's chance
    selected = np.zeros_like(eligible)
    for row in range(num_rows):
        count = int(out["masked_lm_weights"][row].sum())
        selected[row, out["masked_lm_positions"][row, :count]] = True
    assert selected.sum() / eligible.sum() == pytest.approx(0.15, abs=0.005)
    for start in range(0, max_len, 16):  # no part of the sequence is favoured
        chances = (eligible[:, start : start + 16] * rate[:, None]).ravel()
        chances = chances[chances > 0]
        observed = selected[:, start : start + 16].sum()
        sd = math.sqrt(np.sum(chances * (1 - chances)))
        assert abs(observed - chances.sum()) <= 5 * sd + 1, (start, observed, chances.sum())


def test_masked_tokens_are_80_10_10(masked_sample):
    ids, _, out = masked_sample
    weights = out["masked_lm_weights"] > 0
    original = out["masked_lm_ids"][weights]
    rows = np.nonzero(weights)[0]
    now = out["input_ids"][rows, out["masked_lm_positions"][weights]]
    n = original.size
    num_random_ids = VOCAB - len(NEVER)
    # A random draw equals the original with probability 1 / num_random_ids: it then reads "kept".
    p_kept = 0.1 + 0.1 / num_random_ids
    p_random = 0.1 - 0.1 / num_random_ids
    is_mask = now == MASK
    is_kept = now == original
    is_random = ~is_mask & ~is_kept
    assert within(is_mask.sum(), 0.8, n)
    assert within(is_kept.sum(), p_kept, n)
    assert within(is_random.sum(), p_random, n)
    replacements = now[is_random]
    assert not np.isin(replacements, list(NEVER)).any()
    assert replacements.min() >= 0 and replacements.max() < VOCAB
    # Random ids are spread over the vocabulary, not over the sequence's own words.
    assert within(
        (replacements < VOCAB // 2).sum(),
        (VOCAB // 2 - len(NEVER)) / num_random_ids,
        len(replacements),
    )


def test_masking_rates_and_caps_are_honoured():
    rng = np.random.default_rng(5)
    ids, lengths = packed_sample(300, 64, rng)
    masker = MaskedLMMasker(
        VOCAB,
        MASK,
        [PAD, CLS, SEP],
        mask_rate=0.5,
        mask_token_rate=1.0,
        random_token_rate=0.0,
        max_predictions_per_seq=8,
    )
    out = as_numpy(masker(ids, lengths, tf.constant([1, 2])))
    assert (out["masked_lm_weights"].sum(1) == 8).all()  # 50% of >= 35 tokens, capped at 8
    weights = out["masked_lm_weights"] > 0
    rows = np.nonzero(weights)[0]
    assert (out["input_ids"][rows, out["masked_lm_positions"][weights]] == MASK).all()


def test_short_sequences_and_more_predictions_than_positions():
    masker = MaskedLMMasker(VOCAB, MASK, [PAD, CLS, SEP], max_predictions_per_seq=20)
    ids = np.array([[CLS, 5000, SEP, 6000, SEP, PAD, PAD, PAD], [CLS, SEP, SEP, 0, 0, 0, 0, 0]])
    out = as_numpy(masker(ids, [5, 3], tf.constant([3, 3])))
    assert out["masked_lm_positions"].shape == (2, 20)
    np.testing.assert_array_equal(out["masked_lm_weights"].sum(1), [1, 0])  # max(1, ..); none
    assert out["masked_lm_positions"][0, 0] in (1, 3)
    np.testing.assert_array_equal(out["input_ids"][1], ids[1])


def test_masking_is_deterministic_per_seed():
    rng = np.random.default_rng(9)
    ids, lengths = packed_sample(16, 64, rng)
    masker = MaskedLMMasker(VOCAB, MASK, [PAD, CLS, SEP])
    first = as_numpy(masker(ids, lengths, tf.constant([1, 5])))
    again = as_numpy(masker(ids, lengths, tf.constant([1, 5])))
    other = as_numpy(masker(ids, lengths, tf.constant([2, 5])))
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert not np.array_equal(first["masked_lm_positions"], other["masked_lm_positions"])


def test_masking_under_xla_matches_eager_and_traces_once():
    rng = np.random.default_rng(3)
    ids, lengths = packed_sample(2, 48, rng)
    masker = MaskedLMMasker(VOCAB, MASK, [PAD, CLS, SEP], max_predictions_per_seq=10)
    compiled = tf.function(masker, jit_compile=True)
    for row, seed in ((0, [4, 0]), (1, [4, 1])):
        args = (tf.constant(ids[row]), tf.constant(lengths[row]), tf.constant(seed, tf.int64))
        eager = as_numpy(masker(*args))
        xla = as_numpy(compiled(*args))
        for key in eager:
            np.testing.assert_array_equal(eager[key], xla[key])
        assert xla["masked_lm_positions"].shape == (10,)
    assert compiled.experimental_get_tracing_count() == 1


def test_masker_errors_name_the_argument():
    with pytest.raises(ValueError, match="mask_rate"):
        MaskedLMMasker(VOCAB, MASK, [PAD], mask_rate=0.0)
    with pytest.raises(ValueError, match="mask_token_rate \\+ random_token_rate"):
        MaskedLMMasker(VOCAB, MASK, [PAD], mask_token_rate=0.9, random_token_rate=0.2)
    with pytest.raises(ValueError, match="random_token_rate"):
        MaskedLMMasker(VOCAB, MASK, [PAD], random_token_rate=-0.1)
    with pytest.raises(ValueError, match="max_predictions_per_seq"):
        MaskedLMMasker(VOCAB, MASK, [PAD], max_predictions_per_seq=0)
    with pytest.raises(ValueError, match="mask_id"):
        MaskedLMMasker(100, 103, [PAD])
    with pytest.raises(ValueError, match="special_ids"):
        MaskedLMMasker(100, 3, [PAD, 200])
    masker = MaskedLMMasker(VOCAB, MASK, [PAD])
    with pytest.raises(ValueError, match="seed"):
        masker(np.ones([8], np.int32), 8, tf.constant([1, 2, 3]))
    with pytest.raises(ValueError, match="sequence_length"):
        masker(np.ones([2, 8], np.int32), 8, tf.constant([1, 2]))


# -- Next-sentence pairs ----------------------------------------------------------------------


def token(doc, sentence, position):
    return (doc * 100 + sentence) * 100 + position + 1


def decode(token_id):
    doc, rest = divmod(token_id - 1, 10000)
    return doc, rest // 100, rest % 100


def synthetic_corpus(sentence_lengths):
    """sentence_lengths[d][s] tokens; each id encodes (doc, sentence, position)."""
    return [
        [[token(d, s, p) for p in range(n)] for s, n in enumerate(doc)]
        for d, doc in enumerate(sentence_lengths)
    ]


def stream_index(corpus):
    """Token id -> (doc, index of the token in the document's concatenated sentences)."""
    index = {}
    for d, doc in enumerate(corpus):
        for i, tok in enumerate(t for sentence in doc for t in sentence):
            index[tok] = (d, i)
    return index


def contiguous_run(tokens, index):
    """(doc, first, last) of tokens that are consecutive in one document; asserts it."""
    places = [index[t] for t in tokens]
    docs = {d for d, _ in places}
    assert len(docs) == 1, "a side mixes documents"
    offsets = [i for _, i in places]
    assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), "a side has gaps"
    return docs.pop(), offsets[0], offsets[-1]


@pytest.mark.parametrize("random_next_prob", [0.5, 0.2])
def test_nsp_pairs_of_whole_sentences(random_next_prob):
    # 4-token sentences and a 16-token target: chunks fill exactly, nothing is truncated, so A
    # and B are whole sentences and "is next" B starts at the sentence after A.
    lengths = [[4] * 30 for _ in range(40)]
    corpus = synthetic_corpus(lengths)
    result = make_nsp_pairs(
        corpus,
        max_seq_length=19,
        seed=1,
        short_seq_prob=0.0,
        random_next_prob=random_next_prob,
        dupe_factor=4,
    )
    free_choices = random_count = 0
    own_sentences = collections.Counter()
    for instance in result:
        a, b = instance["tokens_a"], instance["tokens_b"]
        assert a and b and len(a) + len(b) <= 16
        assert len(a) % 4 == 0 and len(b) % 4 == 0
        a_doc, a_sentence, a_pos = decode(a[0])
        b_doc, b_sentence, b_pos = decode(b[0])
        assert a_pos == 0 and b_pos == 0 and decode(a[-1])[2] == 3 and decode(b[-1])[2] == 3
        assert a == [t for s in corpus[a_doc][a_sentence : a_sentence + len(a) // 4] for t in s]
        assert b == [t for s in corpus[b_doc][b_sentence : b_sentence + len(b) // 4] for t in s]
        a_last_sentence = decode(a[-1])[1]
        own_sentences.update({decode(t)[:2] for t in a})
        if instance["next_sentence_label"] == 0:
            assert b_doc == a_doc and b_sentence == a_last_sentence + 1
            own_sentences.update({decode(t)[:2] for t in b})
        else:
            assert instance["next_sentence_label"] == 1 and b_doc != a_doc
        # A chunk of one sentence (only the last of a document here) is always random next.
        if a_last_sentence < 29:
            free_choices += 1
            random_count += instance["next_sentence_label"]
    # Sentences a random B displaced are used again: each pass uses every sentence once.
    assert own_sentences == {(d, s): 4 for d in range(40) for s in range(30)}
    assert free_choices > 1000
    assert within(random_count, random_next_prob, free_choices)


def test_nsp_pairs_are_truncated_to_fit():
    rng = np.random.default_rng(0)
    lengths = [rng.integers(1, 30, rng.integers(1, 12)).tolist() for _ in range(60)]
    corpus = synthetic_corpus(lengths)
    index = stream_index(corpus)
    result = make_nsp_pairs(corpus, max_seq_length=32, seed=3, short_seq_prob=0.2)
    front_trimmed = back_trimmed = 0
    labels = []
    for instance in result:
        a, b = instance["tokens_a"], instance["tokens_b"]
        assert a and b and len(a) + len(b) <= 29
        a_doc, a_first, a_last = contiguous_run(a, index)
        b_doc, b_first, _ = contiguous_run(b, index)
        if instance["next_sentence_label"] == 0:
            assert b_doc == a_doc and b_first > a_last
        else:
            assert b_doc != a_doc
        labels.append(instance["next_sentence_label"])
        # Untruncated, A starts and ends at sentence boundaries.
        doc, sentence, position = decode(a[0])
        front_trimmed += position != 0
        _, sentence, position = decode(a[-1])
        back_trimmed += position != lengths[doc][sentence] - 1
    assert front_trimmed > 0 and back_trimmed > 0
    assert 0 < np.mean(labels) < 1


def test_short_seq_prob_shortens_pairs():
    corpus = synthetic_corpus([[5] * 40 for _ in range(10)])
    full = make_nsp_pairs(corpus, max_seq_length=64, seed=0, short_seq_prob=0.0)
    short = make_nsp_pairs(corpus, max_seq_length=64, seed=0, short_seq_prob=1.0)
    mean = lambda r: np.mean([len(i["tokens_a"]) + len(i["tokens_b"]) for i in r])  # noqa: E731
    assert mean(full) > 50 and mean(short) < 0.8 * mean(full)


def test_nsp_pairs_are_deterministic_per_seed():
    corpus = synthetic_corpus([[3, 5, 2, 7, 4] for _ in range(8)])
    first = make_nsp_pairs(corpus, max_seq_length=12, seed=5)
    assert list(first) == list(make_nsp_pairs(corpus, max_seq_length=12, seed=5))
    assert list(first) != list(make_nsp_pairs(corpus, max_seq_length=12, seed=6))


def test_empty_documents_and_sentences_are_skipped_and_counted():
    documents = [[], [[1, 2], [], [3]], [[], []], [[4, 5, 6]], [[7]]]
    result = make_nsp_pairs(documents, max_seq_length=8, seed=0)
    assert (result.num_documents, result.num_empty_documents, result.num_empty_sentences) == (
        3,
        2,
        3,
    )
    assert len(result) > 0
    for instance in result:
        assert instance["tokens_a"] and instance["tokens_b"]


def test_nsp_errors_name_the_problem():
    corpus = synthetic_corpus([[3, 3], [4]])
    with pytest.raises(ValueError, match="at least 2 non-empty documents.*got 1"):
        make_nsp_pairs(corpus[:1], max_seq_length=16, seed=0)
    with pytest.raises(ValueError, match="got 1 \\(1 empty documents skipped\\)"):
        make_nsp_pairs([corpus[0], [[]]], max_seq_length=16, seed=0)
    with pytest.raises(ValueError, match="max_seq_length must be >= 5, got 4"):
        make_nsp_pairs(corpus, max_seq_length=4, seed=0)
    with pytest.raises(ValueError, match="short_seq_prob"):
        make_nsp_pairs(corpus, max_seq_length=16, seed=0, short_seq_prob=1.5)
    with pytest.raises(ValueError, match="random_next_prob"):
        make_nsp_pairs(corpus, max_seq_length=16, seed=0, random_next_prob=-0.1)
    with pytest.raises(ValueError, match=r"documents\[1\]\[0\]"):
        make_nsp_pairs([[[1]], [[2, -3]]], max_seq_length=16, seed=0)
    with pytest.raises(ValueError, match=r"documents\[0\]\[0\]"):
        make_nsp_pairs([[["a"]], [[2]]], max_seq_length=16, seed=0)


# -- Packing and the dataset ------------------------------------------------------------------


def test_pack_pair_layout():
    packed = pack_pair([7, 8], [9], cls_id=CLS, sep_id=SEP, max_seq_length=8)
    np.testing.assert_array_equal(packed["input_ids"], [CLS, 7, 8, SEP, 9, SEP, 0, 0])
    np.testing.assert_array_equal(packed["segment_ids"], [0, 0, 0, 0, 1, 1, 0, 0])
    assert packed["sequence_length"] == 6 and packed["input_ids"].dtype == np.int32
    with pytest.raises(ValueError, match="needs 7 positions.*max_seq_length=6"):
        pack_pair([7, 8], [9, 10], cls_id=CLS, sep_id=SEP, max_seq_length=6)
    with pytest.raises(ValueError, match="must not be empty"):
        pack_pair([], [9], cls_id=CLS, sep_id=SEP, max_seq_length=6)


def nsp_instances():
    lengths = [[4, 6, 3, 5, 7, 2] for _ in range(6)]
    corpus = [
        [[2000 + d * 1000 + s * 100 + p for p in range(n)] for s, n in enumerate(doc)]
        for d, doc in enumerate(lengths)
    ]
    return make_nsp_pairs(corpus, max_seq_length=24, seed=0)


def test_pretraining_dataset_features():
    instances = nsp_instances()
    masker = MaskedLMMasker(VOCAB, MASK, [PAD, CLS, SEP], max_predictions_per_seq=6)
    dataset = pretraining_dataset(
        instances, masker=masker, max_seq_length=24, cls_id=CLS, sep_id=SEP, seed=1
    )
    expected_specs = {
        "input_ids": ([24], tf.int32),
        "segment_ids": ([24], tf.int32),
        "sequence_length": ([], tf.int32),
        "masked_lm_positions": ([6], tf.int32),
        "masked_lm_ids": ([6], tf.int32),
        "masked_lm_weights": ([6], tf.float32),
        "next_sentence_label": ([], tf.int32),
    }
    assert {k: (s.shape.as_list(), s.dtype) for k, s in dataset.element_spec.items()} == (
        expected_specs
    )
    examples = list(dataset.as_numpy_iterator())
    assert len(examples) == len(instances)
    for instance, example in zip(instances, examples, strict=True):
        packed = pack_pair(instance["tokens_a"], instance["tokens_b"], CLS, SEP, 24)
        unmasked = example["input_ids"].copy()
        count = int(example["masked_lm_weights"].sum())
        assert count >= 1
        unmasked[example["masked_lm_positions"][:count]] = example["masked_lm_ids"][:count]
        np.testing.assert_array_equal(unmasked, packed["input_ids"])
        np.testing.assert_array_equal(example["segment_ids"], packed["segment_ids"])
        assert example["sequence_length"] == packed["sequence_length"]
        assert example["next_sentence_label"] == instance["next_sentence_label"]

    batched = pretraining_dataset(
        instances,
        masker=masker,
        max_seq_length=24,
        cls_id=CLS,
        sep_id=SEP,
        seed=1,
        batch_size=4,
        shuffle=True,
    )
    assert batched.element_spec["masked_lm_ids"].shape.as_list() == [4, 6]
    # Masks are keyed by instance, so shuffling moves them along with their instance.
    by_input = {e["input_ids"].tobytes(): e["masked_lm_positions"].tobytes() for e in examples}
    for batch in batched.as_numpy_iterator():
        for row in range(4):
            key = batch["input_ids"][row].tobytes()
            assert by_input[key] == batch["masked_lm_positions"][row].tobytes()


def test_pretraining_dataset_is_deterministic_and_masks_each_example_anew():
    instance = {
        "tokens_a": list(range(2000, 2030)),
        "tokens_b": list(range(3000, 3030)),
        "next_sentence_label": 0,
    }
    masker = MaskedLMMasker(VOCAB, MASK, [PAD, CLS, SEP])

    def positions(seed):
        dataset = pretraining_dataset(
            [instance] * 4, masker=masker, max_seq_length=64, cls_id=CLS, sep_id=SEP, seed=seed
        )
        return [e["masked_lm_positions"].tolist() for e in dataset.as_numpy_iterator()]

    first = positions(0)
    assert first == positions(0)
    assert first != positions(1)
    assert len({tuple(p) for p in first}) == 4  # same instance, different masks


def test_pretraining_dataset_errors_name_the_instance():
    masker = MaskedLMMasker(1000, MASK, [PAD, CLS, SEP])
    good = {"tokens_a": [500], "tokens_b": [600], "next_sentence_label": 1}
    common = {"masker": masker, "max_seq_length": 8, "cls_id": CLS, "sep_id": SEP, "seed": 0}
    with pytest.raises(ValueError, match=r"instances\[1\].*outside the vocabulary"):
        pretraining_dataset([good, {**good, "tokens_b": [1000]}], **common)
    with pytest.raises(ValueError, match=r"instances\[1\].*next_sentence_label"):
        pretraining_dataset([good, {**good, "next_sentence_label": 2}], **common)
    with pytest.raises(ValueError, match=r"instances\[0\].*max_seq_length=8"):
        pretraining_dataset([{**good, "tokens_a": list(range(200, 206))}], **common)
    with pytest.raises(ValueError, match=r"instances\[0\].*tokens_b"):
        pretraining_dataset([{"tokens_a": [5], "next_sentence_label": 0}], **common)
    with pytest.raises(ValueError, match="instances is empty"):
        pretraining_dataset([], **common)
