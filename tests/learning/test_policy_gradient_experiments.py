"""``texkit train`` runs policy-gradient fine-tuning of a CausalLM from an experiment file."""

import json

import numpy as np
import yaml

import texkit as tx
from texkit.cli import main

GPT2 = "tests/fixtures/families/gpt2_bpe"


def test_texkit_train_fine_tunes_a_causal_lm_on_its_samples_and_resumes(tmp_path, capsys):
    records = [{"prompt": "In the beginning", "completion": "God"},
               {"prompt": "And the earth", "completion": "was"}] * 2  # fmt: skip
    train = tmp_path / "prompts.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in records))
    config = {
        "model": {"type": "causal_lm_policy_gradient", "hparams": {
            "pretrained": GPT2, "max_new_tokens": 4, "max_prompt_tokens": 8,
            "hparams": {"jit_compile": False},
            "reward": {"type": "ExactMatch",
                       "kwargs": {"reference_key": "completion", "over": "texts"}},
            "policy_gradient": {"num_samples": 2, "kl": {"coefficient": 0.1}}}},
        "data": {"type": "prompt_data", "hparams": {"train": str(train), "eval": str(train),
                                                     "format": "jsonl", "batch_size": 2}},
        "optimization": {"optimizer": {"type": "Adam"}, "learning_rate": 0.01},
        "run": {"model_dir": str(tmp_path / "run"), "train_steps": 2,
                "checkpoint_every_steps": 2, "eval_steps": 1},
    }  # fmt: skip
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path)]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["step"] == 2 and 0.0 <= result["eval"]["reward"] <= 1.0
    # The checkpoint holds the trained policy: a resumed run starts from step 2's weights.
    config["run"]["train_steps"] = 4
    path.write_text(yaml.safe_dump(config))
    trainer = tx.run.Trainer.from_hparams(config)
    assert trainer.restore() == 2
    fresh = tx.tasks.CausalLM.from_pretrained(GPT2)
    fresh._build_for_weights()
    trained = trainer.model.policy_model.decoder.get_weights()
    moved = max(float(np.abs(a - b).max())
                for a, b in zip(trained, fresh.decoder.get_weights(), strict=True))  # fmt: skip
    assert moved > 1e-4
