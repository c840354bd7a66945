"""``tx.pretrained.save_pretrained``: a loaded module written back as its Hugging Face folder.

The fixture folders were written by transformers (``tests/fixtures/families``,
``tests/fixtures/llm``): texkit loads each and exports it, and the export must hold the
original's tensors exactly (names, shapes, dtypes, bytes; read with the ``safetensors`` library),
its config must read back to the same hparams and keep the original's other keys, and texkit
must reload it to the same outputs. That transformers loads the exports to the original's
outputs is checked by ``tests/fixtures/export/check_with_transformers.py`` (recorded in
``transformers_check.json``; CI has no torch).
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors import safe_open

import texkit as tx
from tests.real_data import MINILM, require_package
from texkit.pretrained import CheckpointError, hf_export
from texkit.pretrained.checks import strip_prefix
from texkit.pretrained.family import FAMILIES
from texkit.pretrained.folders import hparams_from_config, inspect_folder

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FOLDERS = {
    name: os.path.join(FIXTURES, group, name)
    for group in ("families", "llm")
    for name in sorted(os.listdir(os.path.join(FIXTURES, group)))
    if os.path.exists(os.path.join(FIXTURES, group, name, "config.json"))
}
CHECK = os.path.join(FIXTURES, "export", "transformers_check.json")
_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def read_tensors(folder: str) -> dict[str, np.ndarray]:
    """Every tensor of a folder's safetensors files, by the safetensors library (as raw bytes'
    arrays: bfloat16 has no NumPy type of its own)."""
    tensors = {}
    for file in sorted(f for f in os.listdir(folder) if f.endswith(".safetensors")):
        with safe_open(os.path.join(folder, file), "tf") as opened:
            for name in opened.keys():
                assert name not in tensors, f"{name} is in two shards"
                tensors[name] = (
                    opened.get_slice(name).get_dtype(),
                    opened.get_tensor(name).numpy(),
                )
    return tensors


def folder_dtype(folder: str) -> str:
    return _DTYPES[next(iter(read_tensors(folder).values()))[0]]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``exported(name)``: the fixture's module loaded by texkit and its export (made once, in
    the original's dtype)."""
    made = {}

    def get(name: str) -> tuple:
        if name not in made:
            module = tx.pretrained.from_pretrained(FOLDERS[name])
            target = str(tmp_path_factory.mktemp("export") / name)
            tx.pretrained.save_pretrained(module, target, dtype=folder_dtype(FOLDERS[name]))
            made[name] = module, target
        return made[name]

    return get


def expected_tensors(name: str, module) -> dict:
    """The original's tensors as the export names them: without the entries loading skips
    (buffers, tied copies) or leaves unused (a multimodal folder's vision tower), a multimodal
    Gemma 3's language model under ``model.`` as ``Gemma3ForCausalLM`` names it."""
    family, fmt, _ = inspect_folder(FOLDERS[name])
    expected = {}
    for entry, value in read_tensors(FOLDERS[name]).items():
        if fmt.skipped.search(strip_prefix(family, entry)) or entry in module.load_report.unused:
            continue
        if name == "gemma3":
            entry = "model." + strip_prefix(family, entry)
        expected[entry] = value
    return expected


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_export_holds_the_originals_tensors_exactly(exported, name):
    module, target = exported(name)
    written, expected = read_tensors(target), expected_tensors(name, module)
    assert sorted(written) == sorted(expected)
    for entry, (dtype, value) in expected.items():
        assert written[entry][0] == dtype, entry
        assert written[entry][1].shape == value.shape, entry
        assert written[entry][1].tobytes() == value.tobytes(), entry


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_exported_config_reads_back_and_keeps_the_originals_keys(exported, name):
    module, target = exported(name)
    with open(os.path.join(FOLDERS[name], "config.json")) as stream:
        original = json.load(stream)
    with open(os.path.join(target, "config.json")) as stream:
        written = json.load(stream)
    family = FAMILIES[module.load_report.family]
    if name == "gemma3":  # the language model's config, as its own folder has it
        original = {**original["text_config"], "architectures": ["Gemma3ForCausalLM"]}
        family = FAMILIES["gemma3_text"]
    assert written["model_type"] == original["model_type"]
    assert written["architectures"] == original["architectures"]
    # The same hparams, up to spellings that compute the same (a rotary scaling's "type" is
    # written "rope_type").
    same = family.export.reads_back or (lambda hparams: hparams)
    assert hparams_from_config(family, written) == same(hparams_from_config(family, original))
    # Keys texkit does not model carry over; the others are written from the hparams, in
    # transformers 5's spelling (rope_parameters for rope_theta and rope_scaling, layer_types
    # for sliding_window_pattern) and with the weights' dtype.
    respelled = {"rope_theta", "rope_scaling", "rope_local_base_freq", "sliding_window_pattern",
                 "_sliding_window_pattern", "torch_dtype", "dtype", "transformers_version",
                 "rope_parameters", "layer_types"}  # fmt: skip
    for key, value in original.items():
        if key not in respelled:
            assert written.get(key, "absent") == value, key
    assert written["dtype"] == folder_dtype(FOLDERS[name])


def _outputs(module, folder: str) -> list[np.ndarray]:
    ref = np.load(os.path.join(folder, "reference.npz"))
    ids = tf.constant(ref["input_ids" if "input_ids" in ref else "prompt_ids"])
    if isinstance(module, tx.modules.T5EncoderDecoder):
        outputs = module(ids, ref["lengths"], decoder_input_ids=ref["decoder_input_ids"])
    elif isinstance(module, (tx.modules.GPT2Decoder, tx.modules.LlamaDecoder)):
        outputs = module(inputs=ids)[0].logits
    else:
        outputs = module(ids)
    return [np.asarray(t) for t in tf.nest.flatten(outputs)]


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_texkit_reloads_the_export_to_the_same_outputs(exported, name):
    module, target = exported(name)
    reloaded = tx.pretrained.from_pretrained(target)
    assert type(reloaded) is type(module)
    same = FAMILIES[module.load_report.family].export.reads_back or (lambda hparams: hparams)
    hparams = {**same(module.hparams.todict()), "name": ""}
    assert {**reloaded.hparams.todict(), "name": ""} == hparams
    assert reloaded.load_report.unused == []
    for mine, theirs in zip(_outputs(reloaded, FOLDERS[name]), _outputs(module, FOLDERS[name]),
                            strict=True):  # fmt: skip
        np.testing.assert_array_equal(mine, theirs)


def test_generation_config_and_files_of_generating_and_encoding_families(exported):
    _, gpt2 = exported("gpt2")
    with open(os.path.join(FOLDERS["gpt2"], "generation_config.json"), "rb") as stream:
        original = stream.read()
    with open(os.path.join(gpt2, "generation_config.json"), "rb") as stream:
        assert stream.read() == original
    _, gpt2_bpe = exported("gpt2_bpe")  # its tokenizer files are copied
    for file in ("vocab.json", "merges.txt"):
        with open(os.path.join(FOLDERS["gpt2_bpe"], file), "rb") as a:
            with open(os.path.join(gpt2_bpe, file), "rb") as b:
                assert a.read() == b.read()
    _, roberta = exported("roberta")  # an encoder: no generation config
    assert sorted(os.listdir(roberta)) == ["config.json", "model.safetensors"]


def test_the_real_minilm_round_trips_with_its_tokenizer_files(tmp_path):
    folder = os.path.join(require_package(MINILM), "model")
    encoder = tx.modules.BERTEncoder.from_pretrained(folder)
    target = str(tmp_path / "minilm")
    tx.pretrained.save_pretrained(encoder, target)
    family, fmt, _ = inspect_folder(folder)
    original = {
        name: value for name, value in read_tensors(folder).items()
        if not fmt.skipped.search(name)
    }  # fmt: skip
    written = read_tensors(target)
    assert sorted(written) == sorted(original)  # the pooler too; position_ids (a buffer) not
    for name, (dtype, value) in original.items():
        assert written[name][0] == dtype and written[name][1].tobytes() == value.tobytes(), name
    for file in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        with (
            open(os.path.join(folder, file), "rb") as a,
            open(os.path.join(target, file), "rb") as b,
        ):
            assert a.read() == b.read(), file
    # The export, reloaded, gives transformers' recorded outputs of the original.
    with open(os.path.join(FIXTURES, "minilm", "reference.json")) as stream:
        batch = json.load(stream)["single"]
    want = np.load(os.path.join(FIXTURES, "minilm", "reference.npz"))
    mask = np.array(batch["attention_mask"], bool)
    outputs, pooled = tx.modules.BERTEncoder.from_pretrained(target)(
        np.array(batch["input_ids"], np.int32),
        sequence_length=mask.sum(1).astype(np.int32),
        segment_ids=np.array(batch["token_type_ids"], np.int32),
    )
    assert np.abs(outputs.numpy()[mask] - want["single_last_hidden_state"][mask]).max() <= 1e-5
    assert np.abs(pooled.numpy() - want["single_pooler_output"]).max() <= 1e-5


def test_shards_over_a_small_size_have_an_index_that_texkit_loads(tmp_path):
    module = tx.pretrained.from_pretrained(FOLDERS["llama"])
    target = str(tmp_path / "sharded")
    tx.pretrained.save_pretrained(module, target, max_shard_size=6000, dtype="bfloat16")
    with open(os.path.join(target, "model.safetensors.index.json")) as stream:
        index = json.load(stream)
    shards = sorted(f for f in os.listdir(target) if f.endswith(".safetensors"))
    assert len(shards) > 2 and "model.safetensors" not in shards
    assert shards == [
        f"model-{i:05d}-of-{len(shards):05d}.safetensors" for i in range(1, 1 + len(shards))
    ]
    tensors = read_tensors(target)
    sizes = {name: value.size * 2 for name, (_, value) in tensors.items()}
    assert index["metadata"]["total_size"] == sum(sizes.values())
    assert sorted(index["weight_map"]) == sorted(tensors)
    for shard in shards:  # at most 6000 bytes, or one tensor larger than that alone
        held = [name for name, file in index["weight_map"].items() if file == shard]
        total = sum(sizes[name] for name in held)
        assert total <= 6000 or len(held) == 1, (shard, total)
        with safe_open(os.path.join(target, shard), "tf") as opened:
            assert sorted(opened.keys()) == sorted(held)
    reloaded = tx.pretrained.from_pretrained(target)
    for mine, theirs in zip(reloaded.weights, module.weights, strict=True):
        rounded = tf.cast(tf.cast(theirs, tf.bfloat16), tf.float32)  # TensorFlow's rounding
        np.testing.assert_array_equal(mine.numpy(), rounded.numpy())


def test_a_module_built_from_hparams_is_written_as_the_family_its_hparams_say(tmp_path):
    loaded = tx.pretrained.from_pretrained(FOLDERS["qwen2"])
    built = tx.modules.LlamaDecoder(loaded.hparams.todict())
    built(inputs=tf.constant([[1, 2, 3]]))
    built.set_weights(loaded.get_weights())
    target = str(tmp_path / "built")
    tx.pretrained.save_pretrained(built, target)
    with open(os.path.join(target, "config.json")) as stream:
        config = json.load(stream)
    assert config["model_type"] == "qwen2" and config["architectures"] == ["Qwen2ForCausalLM"]
    assert "bos_token_id" not in config  # nothing to carry over
    with open(os.path.join(target, "generation_config.json")) as stream:
        assert json.load(stream) == {"_from_model_config": True}
    assert sorted(read_tensors(target)) == sorted(read_tensors(FOLDERS["qwen2"]))
    with pytest.raises(
        ValueError, match=r"attention.qkv_bias=True cannot be written as a gemma config"
    ):
        tx.pretrained.save_pretrained(built, str(tmp_path / "gemma"), model_type="gemma")
    with pytest.raises(ValueError, match="model_type: expected one of"):
        tx.pretrained.save_pretrained(built, str(tmp_path / "bert"), model_type="bert")
    assert sorted(os.listdir(tmp_path)) == ["built"]


def listing(path) -> dict:
    found = {}
    for root, _, files in os.walk(path):
        for file in files:
            with open(os.path.join(root, file), "rb") as stream:
                found[os.path.relpath(os.path.join(root, file), path)] = stream.read()
    return found


def test_overwriting_replaces_only_an_earlier_export(tmp_path):
    gpt2 = tx.pretrained.from_pretrained(FOLDERS["gpt2"])
    target = tmp_path / "out"
    tx.pretrained.save_pretrained(gpt2, str(target))
    before = listing(target)
    with pytest.raises(FileExistsError, match="already holds a Hugging Face model folder"):
        tx.pretrained.save_pretrained(gpt2, str(target), dtype="float16")
    assert listing(target) == before
    tx.pretrained.save_pretrained(gpt2, str(target), dtype="float16", overwrite=True)
    assert read_tensors(str(target))["transformer.wte.weight"][0] == "F16"
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporary folder left
    # A folder of the user's (here a fixture copy with its reference files) is never replaced.
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "config.json").write_text("{}")
    (foreign / "model.safetensors").write_bytes(b"")
    (foreign / "notes.txt").write_text("mine")
    kept = listing(foreign)
    with pytest.raises(FileExistsError, match="is not a Hugging Face model folder.*'notes.txt'"):
        tx.pretrained.save_pretrained(gpt2, str(foreign), overwrite=True)
    assert listing(foreign) == kept
    (tmp_path / "afile").write_text("x")
    with pytest.raises(FileExistsError, match="is a file"):
        tx.pretrained.save_pretrained(gpt2, str(tmp_path / "afile"), overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["afile", "foreign", "out"]


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    gpt2 = tx.pretrained.from_pretrained(FOLDERS["gpt2"])

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(hf_export, "write_safetensors", fail)
    with pytest.raises(OSError, match="disk full"):
        tx.pretrained.save_pretrained(gpt2, str(tmp_path / "out"))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("change, says", [
    (lambda m: m.decoder.blocks[0].self_attention.query.enable_lora(2),
     r"self_attention/query has LoRA adapters enabled; call merge_lora\(\) first"),
    (lambda m: m.decoder.blocks[1].ffn_inner.quantize("int8"),
     r"ffn_inner is quantized \(int8\); export the float model"),
    (lambda m: tx.tasks.enable_lora(m, 2),
     r"self_attention/value has LoRA adapters enabled; call merge_lora\(\) first"),
    (lambda m: tx.tasks.quantize(m, "int8"),
     r"gpt2_decoder\w* is quantized \(int8\); export the float model"),
], ids=["keras_lora", "keras_int8", "texkit_lora", "texkit_int8"])  # fmt: skip
def test_lora_and_quantized_modules_are_refused(tmp_path, change, says):
    gpt2 = tx.pretrained.from_pretrained(FOLDERS["gpt2"])
    change(gpt2)
    with pytest.raises(ValueError, match=says):
        tx.pretrained.save_pretrained(gpt2, str(tmp_path / "out"))
    assert os.listdir(tmp_path) == []


def test_modules_of_no_family_and_bad_arguments_are_refused(tmp_path):
    with pytest.raises(TypeError, match="expected a module of a pretrained family.*WordEmbedder"):
        tx.pretrained.save_pretrained(tx.modules.WordEmbedder(vocab_size=5), str(tmp_path / "a"))
    holder = keras.layers.Layer()
    holder.encoder = tx.pretrained.from_pretrained(FOLDERS["electra"])
    with pytest.raises(TypeError, match=r"save_pretrained\(model.encoder"):
        tx.pretrained.save_pretrained(holder, str(tmp_path / "b"))
    gpt2 = tx.pretrained.from_pretrained(FOLDERS["gpt2"])
    with pytest.raises(ValueError, match="dtype: expected one of"):
        tx.pretrained.save_pretrained(gpt2, str(tmp_path / "c"), dtype="int8")
    with pytest.raises(ValueError, match="max_shard_size: expected"):
        tx.pretrained.save_pretrained(gpt2, str(tmp_path / "d"), max_shard_size="2 lots")
    post_norm = tx.modules.GPT2Decoder({**gpt2.hparams.todict(), "decoder": {
        **gpt2.hparams.todict()["decoder"], "norm": "post"}})  # fmt: skip
    post_norm(inputs=tf.constant([[1, 2]]))
    with pytest.raises(ValueError, match="decoder.norm='post' cannot be written as a gpt2"):
        tx.pretrained.save_pretrained(post_norm, str(tmp_path / "e"))
    assert os.listdir(tmp_path) == []


def test_transformers_loaded_every_export_to_the_same_outputs():
    """The recorded result of check_with_transformers.py covers every fixture folder."""
    with open(CHECK) as stream:
        results = json.load(stream)["results"]
    assert set(FOLDERS) <= set(results)
    for name, result in results.items():
        assert result["max_abs_diff"] <= 1e-6 * max(1.0, result["output_scale"]), name
        assert result.get("token_ids_equal", True), name


class _Wrapper(keras.Model):
    """A trained model around a GPT-2 decoder, as an experiment's model builder may return."""

    def __init__(self, lm, head: bool = False):
        super().__init__(name="wrapper")
        self.lm = lm
        self.head = keras.layers.Dense(3) if head else None

    def call(self, ids):
        logits = self.lm(inputs=ids)[0].logits
        return logits if self.head is None else self.head(logits)


def test_texkit_export_format_huggingface_writes_the_models_family_module(tmp_path, exported):
    from texkit.run.export import export_huggingface

    lm = tx.pretrained.from_pretrained(FOLDERS["gpt2"])
    model = _Wrapper(lm)
    model(tf.constant([[1, 2, 3]]))
    export_huggingface(model, str(tmp_path / "out"))
    assert listing(tmp_path / "out") == listing(exported("gpt2")[1])
    with_head = _Wrapper(lm, head=True)
    with_head(tf.constant([[1, 2, 3]]))
    with pytest.raises(
        ValueError, match=r"2 weights outside its GPT2Decoder \(wrapper/dense(_\d+)?/kernel"
    ):
        export_huggingface(with_head, str(tmp_path / "head"))
    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)], name="plain")
    with pytest.raises(ValueError, match="'plain' holds no modules of a pretrained family"):
        export_huggingface(plain, str(tmp_path / "plain"))
    assert sorted(os.listdir(tmp_path)) == ["out"]
    from texkit.cli import main

    with pytest.raises(SystemExit):  # argparse's usage error: exit code 2
        main(["export", "experiment.yaml", "--output", str(tmp_path / "x"), "--format", "onnx"])


def _same_bytes(a: str, b: str) -> bool:
    with open(a, "rb") as first, open(b, "rb") as second:
        return first.read() == second.read()


def test_a_given_tokenizers_files_are_copied_and_open_to_the_same_ids(tmp_path):
    folder = os.path.join(FIXTURES, "sentencepiece_byte", "llama")
    tokenizer = tx.data.SentencePieceTokenizer.from_pretrained(folder)
    lm = tx.pretrained.from_pretrained(FOLDERS["llama"])
    target = str(tmp_path / "out")
    tx.pretrained.save_pretrained(lm, target, tokenizer=tokenizer)
    for file in os.listdir(folder):
        assert _same_bytes(os.path.join(folder, file), os.path.join(target, file)), file
    texts = ["Hello world", "  spaces\tand tabs", "naïve café ☃"]
    np.testing.assert_array_equal(
        tx.pretrained.tokenizer_from_pretrained(target).encode(texts)["input_ids"].numpy(),
        tokenizer.encode(texts)["input_ids"].numpy(),
    )
    by_folder = str(tmp_path / "by_folder")  # a folder of tokenizer files, as tasks give it
    tx.pretrained.save_pretrained(lm, by_folder, tokenizer=folder)
    assert listing(by_folder) == listing(target)
    with pytest.raises(TypeError, match="tokenizer: expected a texkit tokenizer made from files"):
        tx.pretrained.save_pretrained(lm, str(tmp_path / "bad"), tokenizer=42)
    with pytest.raises(CheckpointError, match="is not a folder of tokenizer files"):
        tx.pretrained.save_pretrained(lm, str(tmp_path / "bad"), tokenizer=str(tmp_path / "no"))
    assert sorted(os.listdir(tmp_path)) == ["by_folder", "out"]


def test_a_keras_hub_preset_is_written_as_a_hugging_face_bert(tmp_path):
    """A KerasHub preset's own tokenizer.json is not Hugging Face's: without a tokenizer no
    tokenizer file is written; with one, its vocabulary is written as vocab.txt with its casing."""
    preset = os.path.join(FIXTURES, "keras_hub", "bert_tiny")
    encoder = tx.pretrained.from_pretrained(preset)
    plain = str(tmp_path / "plain")
    tx.pretrained.save_pretrained(encoder, plain)
    assert sorted(os.listdir(plain)) == ["config.json", "model.safetensors"]
    with open(os.path.join(plain, "config.json")) as stream:
        config = json.load(stream)
    assert config["model_type"] == "bert" and config["hidden_act"] == "gelu_new"
    reloaded = tx.pretrained.from_pretrained(plain)
    ids = np.array([[2, 5, 7, 9, 3]], np.int32)
    for mine, theirs in zip(reloaded(ids), encoder(ids), strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    tokenizer = tx.data.BERTTokenizer.from_pretrained(preset)
    with_tokenizer = str(tmp_path / "with_tokenizer")
    tx.pretrained.save_pretrained(encoder, with_tokenizer, tokenizer=tokenizer)
    assert _same_bytes(
        os.path.join(preset, "assets", "tokenizer", "vocabulary.txt"),
        os.path.join(with_tokenizer, "vocab.txt"),
    )
    with open(os.path.join(with_tokenizer, "tokenizer_config.json")) as stream:
        assert json.load(stream)["do_lower_case"] is tokenizer.lowercase
    texts = ["The Quick brown fox", "jumped"]
    np.testing.assert_array_equal(
        tx.pretrained.tokenizer_from_pretrained(with_tokenizer).encode(texts)["input_ids"].numpy(),
        tokenizer.encode(texts)["input_ids"].numpy(),
    )


def test_texkit_export_checks_a_hugging_face_output_before_it_reads_a_checkpoint(tmp_path, capsys):
    import yaml

    from tests.run.toy_experiment import toy_experiment
    from texkit.cli import main

    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(yaml.safe_dump(toy_experiment(str(tmp_path / "model"))))
    toy = os.path.join(os.path.dirname(__file__), "..", "run", "toy_experiment.py")
    output = tmp_path / "served"
    output.mkdir()
    (output / "notes.txt").write_text("mine")
    argv = ["export", str(experiment), "--output", str(output), "--include", toy]
    assert main([*argv, "--format", "huggingface", "--overwrite"]) == 2
    assert "is not empty and is not a Hugging Face model folder" in capsys.readouterr().err
    assert main(argv) == 2  # the default format: a SavedModel's check
    assert "is not empty and is not a SavedModel" in capsys.readouterr().err
    assert sorted(os.listdir(output)) == ["notes.txt"]


def test_a_bert_classifier_is_written_as_sequence_classification(tmp_path):
    classifier = tx.modules.BERTClassifier.from_pretrained(FOLDERS["albert"], {"num_classes": 3})
    ids = np.array([[2, 15, 27, 3, 0]], np.int32)
    classifier(ids)
    target = str(tmp_path / "out")
    tx.pretrained.save_pretrained(classifier, target)
    with open(os.path.join(target, "config.json")) as stream:
        config = json.load(stream)
    assert config["architectures"] == ["AlbertForSequenceClassification"]
    assert config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    assert config["classifier_dropout_prob"] == classifier.hparams.dropout
    written = read_tensors(target)
    original = read_tensors(FOLDERS["albert"])
    assert sorted(written) == sorted(["classifier.weight", "classifier.bias"] +
                                     ["albert." + name for name in original])  # fmt: skip
    for name, (dtype, value) in original.items():
        assert written["albert." + name][0] == dtype
        assert written["albert." + name][1].tobytes() == value.tobytes(), name
    kernel = classifier.logits_layer.kernel.numpy()
    np.testing.assert_array_equal(written["classifier.weight"][1], kernel.T)
    np.testing.assert_array_equal(written["classifier.bias"][1], classifier.logits_layer.bias)
    # The encoder reloads from the export (texkit's classifiers start their head afresh).
    reloaded = tx.modules.BERTClassifier.from_pretrained(target, {"num_classes": 3})
    for mine, theirs in zip(reloaded.encoder(ids), classifier.encoder(ids), strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


@pytest.mark.parametrize("folder, hparams, says", [
    ("electra", {"num_classes": 2}, "a BERTClassifier over ELECTRAEncoder has no transformers"),
    ("albert", {"num_classes": 2, "clas_strategy": "mean_time"}, "clas_strategy='mean_time'"),
    ("albert", {"num_classes": 1}, "num_classes=1 .a regression head. is not written"),
], ids=["electra", "mean_time", "regression"])  # fmt: skip
def test_classifiers_transformers_has_no_counterpart_of_are_refused(
    tmp_path, folder, hparams, says
):
    classifier = tx.modules.BERTClassifier.from_pretrained(FOLDERS[folder], hparams)
    with pytest.raises(ValueError, match=says):
        tx.pretrained.save_pretrained(classifier, str(tmp_path / "out"))
    assert os.listdir(tmp_path) == []


def test_a_merged_lora_module_is_written_with_its_merged_weights(tmp_path):
    lm = tx.pretrained.from_pretrained(FOLDERS["llama"])
    ids = tf.constant([[5, 17, 42, 8]])
    base = lm(inputs=ids)[0].logits.numpy()
    tx.tasks.enable_lora(lm, 2)
    for layer in lm._flatten_layers():
        if getattr(layer, "lora_enabled", False):  # adapters that change the outputs
            layer.lora_kernel_b.assign(tf.fill(layer.lora_kernel_b.shape, 0.05))
    adapted = lm(inputs=ids)[0].logits.numpy()
    assert np.abs(adapted - base).max() > 0.1
    tx.tasks.merge_lora(lm)
    target = str(tmp_path / "merged")
    tx.pretrained.save_pretrained(lm, target)
    reloaded = tx.pretrained.from_pretrained(target)
    np.testing.assert_allclose(reloaded(inputs=ids)[0].logits.numpy(), adapted, atol=1e-4)
