"""``texkit train`` fine-tunes a CausalLM from an experiment file: text files in, LoRA from
hparams, the completion-only loss of prompt/completion pairs."""

import json

import numpy as np
import pytest
import tensorflow as tf
import yaml

import texkit as tx
from texkit.cli import main
from texkit.hparams import HParamsError

GPT2 = "tests/fixtures/families/gpt2_bpe"


def _experiment(tmp_path, records, lora=None, steps=40):
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in records))
    config = {
        "model": {"type": "causal_lm", "hparams": {
            "pretrained": GPT2, "lora": lora,
            "hparams": {"sequence_length": 24, "jit_compile": False}}},
        "data": {"type": "text_data", "hparams": {"train": str(train), "eval": str(train),
                                                   "format": "jsonl", "batch_size": 4}},
        "optimization": {"optimizer": {"type": "Adam"}, "learning_rate": 0.05},
        "run": {"model_dir": str(tmp_path / "run"), "train_steps": steps,
                "checkpoint_every_steps": steps, "eval_steps": 1},
    }  # fmt: skip
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_texkit_train_fine_tunes_a_causal_lm_with_lora_on_prompt_completion_pairs(tmp_path, capsys):
    records = [{"prompt": "Q: who made the earth? A:", "completion": " God"}] * 8
    config = _experiment(tmp_path, records, lora={"rank": 4, "targets": ["query", "value"]})
    assert main(["train", config]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # The loss of the untrained model on the same records, computed apart.
    lm = tx.tasks.CausalLM.from_pretrained(GPT2, {"sequence_length": 24})
    features = lm.preprocess(tf.constant([r["prompt"] for r in records]),
                             tf.constant([r["completion"] for r in records]))  # fmt: skip
    before = lm.compute_loss(features, None, lm(features)).numpy()
    assert result["step"] == 40 and result["eval"]["loss"] < before / 2, (result, before)
    # texkit export: the run's SavedModel serves text in, text out.
    written = str(tmp_path / "run" / "hparams.yaml")
    assert main(["export", written, "--output", str(tmp_path / "served")]) == 0
    served = tf.saved_model.load(str(tmp_path / "served"))
    texts = served.serve(tf.constant([records[0]["prompt"]]))["text"].numpy()
    assert texts.shape == (1,) and isinstance(texts[0], bytes)


def test_text_files_with_bad_records_are_refused_naming_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"prompt": "no completion"}\n')
    with pytest.raises(HParamsError, match="bad.jsonl:2"):
        tx.run.task_builders.read_text_records(str(path), "jsonl", "train")
    path.write_text('{"text": "a"}\n{"prompt": "b", "completion": "c"}\n')
    with pytest.raises(HParamsError, match="mixes"):
        tx.run.task_builders.read_text_records(str(path), "jsonl", "train")
    texts, completions = tx.run.task_builders.read_text_records(
        str(tmp_path / "bad.jsonl"), "lines", "train"
    )
    assert texts == ['{"text": "a"}', '{"prompt": "b", "completion": "c"}'] and completions is None
    assert np.all([isinstance(t, str) for t in texts])
