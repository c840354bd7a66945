"""``generate`` equals transformers' ``generate`` on real checkpoint folders.

Each folder of ``tests/fixtures/generation`` is a tiny random checkpoint of one family with a
real tokenizer, written by transformers, and ``reference.json`` holds what transformers'
``generate`` gave on it (made by ``tests/fixtures/generation/make_fixtures.py``): the prompts'
ids, greedy and beam search outputs (ids and decoded texts) for several length penalties and
early-stopping rules, a stop string, sampling's next-token distributions and a UTF-8 character
split across two tokens. The prompts have different lengths and run as one batch here.
"""

import json
import os

import numpy as np
import pytest

import texkit as tx

ROOT = "tests/fixtures/generation"
CASES = sorted(
    name for name in os.listdir(ROOT) if os.path.exists(os.path.join(ROOT, name, "reference.json"))
)
SEQ2SEQ = {"t5"}
# Compiled with XLA for one family (as generate runs by default); the others in graph mode,
# which follows the same loops and traces several times faster.
XLA = {"llama"}
# Sampling's distributions for one folder of each tokenizer kind.
SAMPLED = {"gpt2", "llama_sp", "qwen2"}


def _reference(case):
    with open(os.path.join(ROOT, case, "reference.json"), encoding="utf-8") as f:
        return json.load(f)


_TASKS = {}


def _task(case):
    if case not in _TASKS:
        cls = tx.tasks.Seq2SeqLM if case in SEQ2SEQ else tx.tasks.CausalLM
        hparams = {"jit_compile": case in XLA}
        _TASKS[case] = cls.from_pretrained(os.path.join(ROOT, case), hparams)
    return _TASKS[case]


def _same_text(task, text, reference):
    """Equal texts; but where a SentencePiece byte-fallback model emitted bytes that are no
    UTF-8, texkit decodes as the ``sentencepiece`` library (one U+FFFD per invalid byte, the
    valid characters of the run kept) and transformers turns every byte of the run into U+FFFD:
    the texts then agree but at those characters."""
    if text == reference:
        return True
    byte_fallback = getattr(task.tokenizer, "style", None) == "llama"
    if not (byte_fallback and "\ufffd" in reference and len(text) == len(reference)):
        return False
    return all(a == b or b == "\ufffd" for a, b in zip(text, reference, strict=True))


@pytest.mark.parametrize("case", CASES)
def test_prompts_are_tokenized_as_the_reference_tokenizer_does(case):
    reference, task = _reference(case), _task(case)
    texts = [p["text"] for p in reference["prompts"]]
    assert task._prompt_ids(texts) == [p["ids"] for p in reference["prompts"]]
    assert sorted(task.hparams.generation.end_token_ids) == sorted(reference["eos_token_ids"])


@pytest.mark.parametrize("case", CASES)
def test_greedy_and_beam_search_equal_transformers(case):
    reference, task = _reference(case), _task(case)
    texts = [p["text"] for p in reference["prompts"]]
    runs = [("greedy", reference["greedy"])] + [("beam", run) for run in reference["beam"]]
    for strategy, run in runs:
        kwargs = run["kwargs"]
        settings = {"max_new_tokens": kwargs["max_new_tokens"], "strategy": strategy}
        if strategy == "beam":
            settings.update(
                beam_width=kwargs["num_beams"],
                length_penalty=kwargs["length_penalty"],
                early_stopping=kwargs["early_stopping"],
            )
        expected = run["outputs"]
        assert task.generate_ids(texts, **settings) == [o["new_ids"] for o in expected], settings
        for text, output in zip(task.generate(texts, **settings), expected, strict=True):
            assert _same_text(task, text, output["text"]), (settings, text, output["text"])


@pytest.mark.parametrize("case", sorted(set(CASES) - SEQ2SEQ))
def test_a_stop_string_across_tokens_ends_the_text_where_it_begins(case):
    stop = _reference(case)["stop_strings"]
    task = _task(case)
    prompt = _reference(case)["prompts"][stop["prompt_index"]]["text"]
    text = task.generate(prompt, max_new_tokens=8, stop_strings=[stop["stop_string"]])
    assert text == stop["text_before_stop"]
    streamed = task.generate(
        prompt, max_new_tokens=8, stop_strings=stop["stop_string"], stream=True
    )
    assert "".join(streamed) == stop["text_before_stop"]


@pytest.mark.parametrize("case", sorted(set(CASES) & SAMPLED))
def test_sampling_draws_from_the_reference_distribution(case):
    """Frequencies of 512 first tokens against transformers' processed distribution: every
    drawn token is in its support, and the frequencies are within 5 standard errors."""
    reference, task = _reference(case), _task(case)
    draws = 512
    for run in reference["sampling"]:
        prompt = reference["prompts"][run["prompt_index"]]["text"]
        kwargs = {
            k: run["kwargs"][k] for k in ("temperature", "top_k", "top_p") if k in run["kwargs"]
        }
        kwargs.setdefault("top_k", 50)  # transformers' default, and the processors recorded
        ids = task.generate_ids(
            [prompt] * draws, max_new_tokens=1, strategy="sample", seed=11, **kwargs
        )
        drawn = np.array([row[0] for row in ids])
        probs = {int(k): v for k, v in run["probs"].items()}
        assert set(drawn.tolist()) <= set(probs), (kwargs, set(drawn.tolist()) - set(probs))
        for token, p in probs.items():
            frequency = float(np.mean(drawn == token))
            error = np.sqrt(p * (1 - p) / draws)
            assert abs(frequency - p) <= 5 * error + 1e-3, (kwargs, token, frequency, p)


@pytest.mark.parametrize("case", sorted(set(CASES) - SEQ2SEQ))
def test_streaming_never_splits_a_character_and_joins_to_the_text(case):
    split = _reference(case).get("utf8_split")
    if not split:
        pytest.skip("the reference found no character split across tokens for this tokenizer")
    task = _task(case)
    n = len(split["new_ids"])
    pieces = list(task.generate(split["prompt_text"], max_new_tokens=n, stream=True))
    whole = task.generate(split["prompt_text"], max_new_tokens=n)
    assert "".join(pieces) == whole and _same_text(task, whole, split["text"])
    if "\ufffd" not in whole:
        assert not any("\ufffd" in piece for piece in pieces)
