"""A generating task's SavedModel serves text in, text out, as ``generate`` does."""

import pytest
import tensorflow as tf

import texkit as tx

PROMPTS = ["Hi", "The café in Zürich", "And God said"]


@pytest.mark.parametrize(
    "cls, folder, settings",
    [
        (tx.tasks.CausalLM, "tests/fixtures/generation/llama", {}),
        (tx.tasks.CausalLM, "tests/fixtures/generation/gpt2", {"strategy": "beam",
                                                               "beam_width": 3}),
        (tx.tasks.Seq2SeqLM, "tests/fixtures/generation/t5", {}),
    ],
)  # fmt: skip
def test_the_saved_model_generates_what_generate_gives(cls, folder, settings, tmp_path):
    task = cls.from_pretrained(folder, {"jit_compile": False})
    path = task.export_serving(tmp_path / "served", max_prompt_tokens=16, max_new_tokens=8,
                               **settings)  # fmt: skip
    served = tf.saved_model.load(path)
    texts = served.serve(tf.constant(PROMPTS))["text"]
    expected = task.generate(PROMPTS, max_new_tokens=8, **settings)
    assert [t.decode("utf-8", errors="replace") for t in texts.numpy()] == expected
    with pytest.raises(FileExistsError, match="not empty"):
        task.export_serving(path, max_prompt_tokens=16)


def test_a_long_prompt_keeps_its_last_tokens(tmp_path):
    lm = tx.tasks.CausalLM.from_pretrained("tests/fixtures/generation/gpt2", {"jit_compile": False})
    server = tx.tasks.serving.generation_server(lm, max_prompt_tokens=4)
    prompt = "In the beginning God created the heaven and the earth"
    ids = lm._prompt_ids([prompt])[0]
    served = server.serve(tf.constant([prompt]))["text"].numpy()[0].decode()
    settings = tx.tasks.generation_settings.settings_from(lm.hparams.generation.todict(), {}, None)
    assert served == lm._generator.generate([ids[-4:]], settings)[0]
