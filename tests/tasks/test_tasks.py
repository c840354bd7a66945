"""The task models: generation's rules, fine-tuning on raw text, saving, bad input.

Equality with transformers' ``generate`` on real checkpoint folders is in
``test_generation_reference.py``; here the properties that need no reference: a batch gives what
each prompt gives alone, streaming joins to the whole text, the loss is the formula, a saved
task reloads to the same outputs, and misuse is refused before anything runs.
"""

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx

GPT2 = "tests/fixtures/families/gpt2_bpe"  # a tiny GPT-2 with a real byte-level BPE
PROMPTS = ["Hello world", "In the beginning God created the heaven", "And", "Ye shall know"]


@pytest.fixture(scope="module")
def lm():
    # Graph mode: tracing is quicker than XLA's compilation, and the rules are the same (the
    # XLA path: test_sampling_is_reproducible..., test_generation_reference.py).
    return tx.tasks.CausalLM.from_pretrained(
        GPT2, hparams={"sequence_length": 24, "jit_compile": False}
    )


def test_from_pretrained_reads_the_folder_generation_config(lm):
    import json

    with open(f"{GPT2}/generation_config.json") as f:
        eos = json.load(f)["eos_token_id"]
    assert list(lm.hparams.generation.end_token_ids) == [eos]
    assert type(lm.decoder).__name__ == "GPT2Decoder"
    assert lm.tokenizer.vocab_size == lm.decoder._logits_size()


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_a_batch_of_prompts_gives_what_each_gives_alone(lm, strategy):
    together = lm.generate(PROMPTS, max_new_tokens=7, strategy=strategy, beam_width=3)
    alone = [lm.generate(p, max_new_tokens=7, strategy=strategy, beam_width=3) for p in PROMPTS]
    assert together == alone
    assert all(isinstance(text, str) and text for text in together)


def test_greedy_text_is_the_argmax_of_teacher_forcing_and_the_prompt_is_not_repeated(lm):
    """An independent computation: the full forward pass, one token at a time."""
    prompt = PROMPTS[1]
    ids = list(lm.tokenizer.tokenize(prompt).numpy())
    for _ in range(6):
        logits = lm(tf.constant([ids]))[0, -1].numpy()
        ids.append(int(np.argmax(logits)))
    expected = lm.tokenizer.detokenize([ids[-6:]]).numpy()[0].decode()
    assert lm.generate(prompt, max_new_tokens=6) == expected


def test_end_tokens_and_stop_strings_end_the_text_and_are_cut(lm):
    text = lm.generate(PROMPTS[0], max_new_tokens=8)
    # Any token of the greedy text as an extra end token ends it just before that token.
    ids = lm.tokenizer.tokenize(text).numpy().tolist()
    ended = lm.generate(PROMPTS[0], max_new_tokens=8, stop_token_ids=[ids[2]])
    assert text.startswith(ended) and len(ended) < len(text)
    stop = text[3:6]
    assert lm.generate(PROMPTS[0], max_new_tokens=8, stop_strings=[stop]) == text[: text.find(stop)]


def test_streaming_joins_to_the_whole_text(lm):
    settings = {"strategy": "sample", "seed": 7, "top_k": 0, "max_new_tokens": 9}
    whole = lm.generate(PROMPTS[:2], **settings)
    steps = list(lm.generate(PROMPTS[:2], stream=True, **settings))
    assert ["".join(step[i] for step in steps) for i in range(2)] == whole
    assert len(steps) > 1
    stop = lm.generate(PROMPTS[0], max_new_tokens=9)[2:5]
    streamed = list(lm.generate(PROMPTS[0], max_new_tokens=9, stream=True, stop_strings=stop))
    assert "".join(streamed) == lm.generate(PROMPTS[0], max_new_tokens=9, stop_strings=stop)
    assert all(isinstance(piece, str) for piece in streamed)


def test_sampling_is_reproducible_with_a_seed_and_compiles_once_per_bucket():
    lm = tx.tasks.CausalLM.from_pretrained(GPT2)  # XLA
    first = lm.generate(PROMPTS[:2], max_new_tokens=6, strategy="sample", seed=3)
    traces = lm._generator.traces
    again = lm.generate(PROMPTS[:2], max_new_tokens=6, strategy="sample", seed=3)
    other = lm.generate(PROMPTS[2:], max_new_tokens=6, strategy="sample", seed=4)
    assert first == again and lm._generator.traces == traces  # same bucket: no new trace
    assert other != first


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda lm: lm.generate([]), "non-empty list"),
        (lambda lm: lm.generate("x", max_new_tokens=0), "max_new_tokens"),
        (lambda lm: lm.generate("x", strategy="nucleus"), "strategy"),
        (lambda lm: lm.generate("x", top_p=0.0), "top_p"),
        (lambda lm: lm.generate("x", early_stopping="sometimes"), "early_stopping"),
        (lambda lm: lm.generate("x", stop_token_ids=[10**6]), "stop_token_ids"),
        (lambda lm: lm.generate("word " * 300, max_new_tokens=5), "positions"),
        (lambda lm: lm.generate("", max_new_tokens=5), "no tokens"),
        (lambda lm: list(lm.generate("x", strategy="beam", stream=True)), "stream"),
    ],
)
def test_bad_generate_arguments_are_refused_naming_them(lm, call, message):
    with pytest.raises(ValueError, match=message):
        call(lm)


def test_fit_on_text_pairs_is_the_masked_cross_entropy_of_the_completion(lm):
    features = lm.preprocess(tf.constant(PROMPTS[:2]), tf.constant([" a b", " c"]))
    ids, mask = features["token_ids"].numpy(), features["target_mask"].numpy()
    lengths = features["sequence_length"].numpy()
    prompt_lengths = [len(lm.tokenizer.tokenize(p).numpy()) for p in PROMPTS[:2]]
    eos = lm.hparams.generation.end_token_ids[0]
    for row, (length, prompt) in enumerate(zip(lengths, prompt_lengths, strict=True)):
        assert ids[row, length - 1] == eos
        assert mask[row].tolist() == [prompt <= t < length for t in range(ids.shape[1])]
    logits = lm(features["token_ids"], features["sequence_length"]).numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs[:, :-1], ids[:, 1:, None], axis=-1)[..., 0]
    expected = -(picked * mask[:, 1:]).sum() / mask[:, 1:].sum()
    loss = tx.tasks.language_modeling.lm_loss(logits, ids, mask).numpy()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_fit_on_raw_text_learns_it(tmp_path):
    lm = tx.tasks.CausalLM.from_pretrained(
        GPT2, hparams={"sequence_length": 32, "jit_compile": False}
    )
    text = "In the beginning God created the heaven and the earth."
    lm.compile(optimizer=tf.keras.optimizers.Adam(1e-2))
    history = lm.fit(tf.data.Dataset.from_tensor_slices([text] * 8).batch(4), epochs=10, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] / 4
    assert lm.generate("In the beginning", max_new_tokens=12) == text[len("In the beginning") :]
    lm.save(tmp_path / "lm")
    back = tx.tasks.Task.load(tmp_path / "lm")
    assert type(back) is tx.tasks.CausalLM
    ids = tf.constant([[5, 6, 7, 8]])
    np.testing.assert_array_equal(back(ids).numpy(), lm(ids).numpy())
    assert back.generate("In the beginning", max_new_tokens=12) == text[len("In the beginning") :]
    with pytest.raises(FileExistsError, match="not empty"):
        lm.save(tmp_path / "lm")


def test_the_readme_s_first_example_runs(capsys):
    """The README's first Python block, as written (its folder is the tiny Llama fixture)."""
    with open("README.md", encoding="utf-8") as f:
        readme = f.read()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "tx.tasks.CausalLM.from_pretrained" in block
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the project's README
    printed = capsys.readouterr().out
    lm = namespace["lm"]
    expected = lm.generate("The capital of France is", max_new_tokens=20)
    expected += "\n" + lm.generate("Once upon a time")
    assert printed == expected
