"""The Llama line (Llama, Mistral, Qwen 2/3, Gemma 1/2/3, Phi-3) against Hugging Face transformers.

Each folder of ``tests/fixtures/llm`` is a tiny random ``*ForCausalLM`` saved by transformers
(``make_fixtures.py`` there; large initializer, every norm weight and bias randomized, seeds
chosen so greedy and beam search have no near-ties) with its teacher-forced logits (a full and a
right-padded batch) and its ``generate`` outputs: greedy, and 4-beam search with
``length_penalty=0``, both for as many new tokens as the fixture says, no end token generated.
texkit loads each folder with ``tx.pretrained.from_pretrained`` and must give the same logits
(to 1e-5 of their scale), the same greedy ids (under XLA) and the same best beam.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from texkit.modules import LlamaDecoder

ROOT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "llm")
CASES = sorted(
    name
    for name in os.listdir(ROOT)
    if os.path.isfile(os.path.join(ROOT, name, "reference.npz"))
    and json.load(open(os.path.join(ROOT, name, "reference.json")))
    .get("model_class", "")
    .endswith("ForCausalLM")
)


class Case:
    """One fixture folder, loaded once."""

    def __init__(self, name):
        self.name = name
        self.folder = os.path.join(ROOT, name)
        arrays = np.load(os.path.join(self.folder, "reference.npz"), allow_pickle=False)
        self.ref = {k: arrays[k] for k in arrays.files}
        with open(os.path.join(self.folder, "reference.json")) as f:
            self.meta = json.load(f)
        self.lm = tx.pretrained.from_pretrained(self.folder)


_CASES = {}


@pytest.fixture(params=CASES)
def case(request):
    if request.param not in _CASES:
        _CASES.clear()  # one model in memory at a time
        _CASES[request.param] = Case(request.param)
    return _CASES[request.param]


def _close(got, want):
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, atol=1e-5 * max(scale, 1.0), rtol=0)


def test_every_family_has_a_fixture():
    families = {json.load(open(os.path.join(ROOT, c, "reference.json")))["config"]["model_type"]
                for c in CASES}  # fmt: skip
    expected = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3"}
    assert expected <= families, sorted(expected - families)


def test_loads_every_weight_into_a_llama_decoder(case):
    assert isinstance(case.lm, LlamaDecoder)
    report = case.lm.load_report
    assert report.family == case.meta["config"]["model_type"]
    assert len(report.loaded) == len(set(report.loaded))
    if case.name == "gemma3":  # multimodal: the language model loads, the vision part is reported
        assert report.unused and all(
            name.startswith(("vision_tower.", "multi_modal_projector.")) for name in report.unused
        )
        assert not any(name.startswith("vision_tower.") for name in report.loaded)
    else:
        assert report.unused == []


def test_logits_equal_transformers(case):
    outputs, _, _ = case.lm(inputs=case.ref["input_ids"])
    _close(outputs.logits.numpy(), case.ref["logits"])
    # Right padding changes nothing before it: each padded row is a prefix of a full row.
    lengths, sources = case.ref["lengths"], case.ref["padded_source_rows"]
    outputs, _, _ = case.lm(inputs=case.ref["padded_input_ids"], sequence_length=lengths)
    for row, (length, source) in enumerate(zip(lengths, sources, strict=True)):
        _close(outputs.logits.numpy()[row, :length], case.ref["logits"][source, :length])
    if "short_logits" in case.ref:  # dynamic scaling: a call within the original length
        outputs, _, _ = case.lm(inputs=case.ref["short_input_ids"])
        _close(outputs.logits.numpy(), case.ref["short_logits"])


def _continuation(prompts, ids):
    return np.concatenate([prompts[:, :1], ids], axis=1)


def _greedy(case, context):
    outputs, _, _ = case.lm(decoding_strategy="infer_greedy", context=context, end_token=None,
                            max_decoding_length=case.ref["greedy"].shape[1] - 1)  # fmt: skip
    return outputs.sample_id


def test_greedy_equals_generate(case):
    prompts, want = case.ref["prompt_ids"], case.ref["greedy"]
    np.testing.assert_array_equal(_continuation(prompts, _greedy(case, prompts).numpy()), want)


# Compiled with XLA: the cases whose decoding differs most (Phi-3 reruns its prompt where
# LongRoPE switches; Gemma 2 alternates sliding and full layers with soft-capping; dynamic NTK
# changes frequencies every step).
@pytest.mark.parametrize("name", ["phi3", "gemma2", "llama_dynamic"])
def test_greedy_under_xla_equals_generate(name):
    case = Case(name)
    prompts, want = case.ref["prompt_ids"], case.ref["greedy"]
    greedy = tf.function(lambda context: _greedy(case, context), jit_compile=True)
    np.testing.assert_array_equal(_continuation(prompts, greedy(prompts).numpy()), want)


def test_beam_search_equals_generate(case):
    prompts, want = case.ref["prompt_ids"], case.ref["beam"]
    search = case.lm.beam_search(4, 0.0, context=prompts, end_token=None,
                                 max_decoding_length=want.shape[1] - 1)  # fmt: skip
    np.testing.assert_array_equal(_continuation(prompts, search.ids.numpy()[:, 0]), want)


# --- bad input: each a clear error naming the key, nothing loaded ---------------------------


def _copy(name, tmp_path, change=None):
    import shutil

    folder = tmp_path / name
    shutil.copytree(os.path.join(ROOT, name), folder)
    if change is not None:
        config = json.loads((folder / "config.json").read_text())
        change(config)
        (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def test_a_config_that_contradicts_the_weights_is_refused(tmp_path):
    folder = _copy("mistral", tmp_path, lambda c: c.update(num_key_value_heads=4))
    with pytest.raises(tx.pretrained.CheckpointError, match="k_proj"):
        tx.pretrained.from_pretrained(folder)


def test_an_unknown_rope_scaling_type_is_refused(tmp_path):
    def change(config):
        config["rope_parameters"]["rope_type"] = "fancy"

    folder = _copy("llama", tmp_path, change)
    with pytest.raises(tx.pretrained.CheckpointError, match="rope_type.*fancy|fancy.*rope"):
        tx.pretrained.from_pretrained(folder)


def test_a_checkpoint_loads_into_a_model_built_by_hand_only_if_the_architecture_agrees():
    gemma = os.path.join(ROOT, "gemma")
    lm = LlamaDecoder.from_pretrained(gemma)
    assert lm.load_report.family == "gemma"
    other = LlamaDecoder(lm.hparams.todict() | {"final_logit_softcap": 30.0})
    before = [v.numpy().copy() for v in other.weights] if other.built else None
    with pytest.raises(tx.pretrained.CheckpointError, match="final_logit_softcap"):
        tx.pretrained.load_checkpoint(other, gemma)
    if before is not None:
        for variable, value in zip(other.weights, before, strict=True):
            np.testing.assert_array_equal(variable.numpy(), value)
    with pytest.raises(tx.pretrained.CheckpointError, match="gemma checkpoint"):
        tx.modules.GPT2Decoder.from_pretrained(gemma)


def test_an_embedding_gemma_is_refused(tmp_path):
    folder = _copy("gemma3_text", tmp_path, lambda c: c.update(use_bidirectional_attention=True))
    with pytest.raises(tx.pretrained.CheckpointError, match="use_bidirectional_attention"):
        tx.pretrained.from_pretrained(folder)


def test_the_tokenizer_of_a_checkpoint_folder_is_the_one_its_files_make(tmp_path):
    import shutil

    fixtures = os.path.join(ROOT, "..")
    for folder in (os.path.join(ROOT, "qwen2"), os.path.join(fixtures, "tokenizer_json", "qwen2")):
        for name in os.listdir(folder):
            shutil.copy(os.path.join(folder, name), tmp_path)
    tokenizer = tx.pretrained.tokenizer_from_pretrained(str(tmp_path))
    assert type(tokenizer).__name__ == "ByteLevelBPETokenizer"
    assert tokenizer.split_pattern == "qwen2"
