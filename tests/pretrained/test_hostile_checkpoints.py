"""Hostile checkpoint folders end in a clear error within seconds and under a memory cap.

A folder's config and files are the input: a config that asks for 10^12 layers or a 2e8-row
vocabulary over a tiny weights file, an index that claims shapes its data does not hold, a FIFO
where a file should be, values of the wrong type. Each must end in a ``CheckpointError`` naming
the file and the key (or an ``HParamsError`` naming the key), before anything large is
allocated. The folders are made here, in ``tmp_path``, from the real all-MiniLM-L6-v2 folder and
the tiny family fixtures (``tests/fixtures/families``, ``tests/fixtures/keras_hub``); every load
runs in the sandbox (``tests/hostile.py``: a child process under a 3 GiB address-space cap and a
time limit), so a regression fails its test instead of taking the machine.

The checkpoints of TF's format are written with ``SaveV2``; a "claiming" one saves a 1-element
slice of each variable, whose index then lists the whole shape (as a partitioned variable's
does) while its data file holds a few bytes. Each kind of folder is also loaded whole, so a
refusal comes from what was changed, not from a broken fixture.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from tests.real_data import minilm_folder  # skipped without the package, failed under CI

FAMILY_FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")
KERAS_HUB_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_hub")
SECONDS = 15  # what "at once" means here: a refusal reads headers, never builds
HUGE = 10**12

# Each family's config keys (as config.json names them): layers, width, inner size.
LAYERS = {"bert": "num_hidden_layers", "roberta": "num_hidden_layers", "distilbert": "n_layers",
          "electra": "num_hidden_layers", "albert": "num_hidden_layers", "gpt2": "n_layer",
          "t5": "num_layers"}  # fmt: skip
WIDTH = {"bert": "hidden_size", "roberta": "hidden_size", "distilbert": "dim",
         "electra": "hidden_size", "albert": "hidden_size", "gpt2": "n_embd",
         "t5": "d_model"}  # fmt: skip
INNER = {"bert": "intermediate_size", "roberta": "intermediate_size", "distilbert": "hidden_dim",
         "electra": "intermediate_size", "albert": "intermediate_size", "gpt2": "n_inner",
         "t5": "d_ff"}  # fmt: skip
HEADS = {"bert": "num_attention_heads", "roberta": "num_attention_heads", "distilbert": "n_heads",
         "electra": "num_attention_heads", "albert": "num_attention_heads", "gpt2": "n_head",
         "t5": "num_heads"}  # fmt: skip
# What texkit's messages call the number of layers (GPT-2's hparams are texkit's names).
LAYERS_NAMED = {**LAYERS, "gpt2": "decoder.num_blocks"}
ALL_FAMILIES = sorted(LAYERS)


# -- the cases: run in the sandbox's child process -----------------------------------------


def load(path: str, cls: str | None = None) -> str:
    """``from_pretrained`` of the folder (by ``texkit.modules.<cls>`` if given)."""
    import texkit as tx

    owner = getattr(tx.modules, cls) if cls else tx.pretrained
    return type(owner.from_pretrained(path)).__name__


def load_into_built(path: str, config_folder: str) -> str:
    """``load_checkpoint`` of ``path`` into a module built from ``config_folder``'s config."""
    import texkit as tx

    family, hparams = tx.pretrained.read_config(config_folder)
    module = family.module(hparams)
    return tx.pretrained.load_checkpoint(module, path).format


def tokenizer(path: str) -> str:
    import texkit as tx

    return type(tx.pretrained.tokenizer_from_pretrained(path)).__name__


def construct(cls: str, hparams: dict | None = None) -> str:
    import texkit as tx

    return type(getattr(tx.modules, cls)(hparams)).__name__


# -- folders, made in the parent ----------------------------------------------------------


def minilm_copy(tmp_path, name: str = "minilm") -> str:
    """The real MiniLM folder in ``tmp_path``: its config copied (to be edited), its weights and
    vocabulary linked (read only)."""
    source, folder = minilm_folder(), tmp_path / name
    folder.mkdir()
    shutil.copy(os.path.join(source, "config.json"), folder / "config.json")
    for file in ("model.safetensors", "vocab.txt"):
        (folder / file).symlink_to(os.path.join(source, file))
    return str(folder)


def family_copy(tmp_path, family: str) -> str:
    """A copy of a tiny family fixture; ``bert`` is the real MiniLM."""
    if family == "bert":
        return minilm_copy(tmp_path)
    folder = str(tmp_path / family)
    shutil.copytree(os.path.join(FAMILY_FIXTURES, family), folder)
    return folder


def config_of(folder: str, file: str = "config.json") -> dict:
    with open(os.path.join(folder, file)) as f:
        return json.load(f)


def write_config(folder: str, config: dict, file: str = "config.json") -> str:
    path = os.path.join(folder, file)
    if os.path.islink(path):
        os.remove(path)
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def edit_config(folder: str, **changes) -> str:
    return write_config(folder, {**config_of(folder), **changes})


def replace_weights(folder: str, state: dict) -> None:
    path = os.path.join(folder, "model.safetensors")
    if os.path.islink(path):
        os.remove(path)
    save_file(state, path)


def fifo_in_place(folder: str, file: str) -> str:
    path = os.path.join(folder, file)
    if os.path.lexists(path):
        os.remove(path)
    os.mkfifo(path)
    return path


def save_tf_checkpoint(prefix: str, shapes: dict, whole: bool) -> None:
    """A TF checkpoint whose index lists ``shapes``: with ``whole``, every value is written
    (small random numbers); else only a 1-element slice of each, while the index claims the
    whole shape."""
    rng = np.random.default_rng(0)
    specs, tensors = [], []
    for shape in shapes.values():
        if whole:
            specs.append("")
            tensors.append((rng.normal(size=shape) * 0.02).astype(np.float32))
        else:
            specs.append(" ".join(map(str, shape)) + " " + ":".join("0,1" for _ in shape))
            tensors.append(np.zeros([1] * len(shape), np.float32))
    tf.raw_ops.SaveV2(
        prefix=prefix, tensor_names=list(shapes), shape_and_slices=specs,
        tensors=[tf.constant(t) for t in tensors],
    )  # fmt: skip


def google_bert_shapes(root: str, sizes: dict, pooler: bool = True) -> dict:
    """The entries of a BERT-like TF checkpoint under ``root`` (``bert``, ``electra``), named as
    Google's releases name them; dense kernels ``[in, out]``."""
    vocab, hidden, inner = sizes["vocab_size"], sizes["hidden_size"], sizes["intermediate_size"]
    shapes = {
        f"{root}/embeddings/word_embeddings": (vocab, hidden),
        f"{root}/embeddings/token_type_embeddings": (2, hidden),
        f"{root}/embeddings/position_embeddings": (sizes["max_position_embeddings"], hidden),
        f"{root}/embeddings/LayerNorm/gamma": (hidden,),
        f"{root}/embeddings/LayerNorm/beta": (hidden,),
    }
    for i in range(sizes["num_hidden_layers"]):
        block = f"{root}/encoder/layer_{i}"
        for part in ("attention/self/query", "attention/self/key", "attention/self/value",
                     "attention/output/dense"):  # fmt: skip
            shapes[f"{block}/{part}/kernel"] = (hidden, hidden)
            shapes[f"{block}/{part}/bias"] = (hidden,)
        shapes[f"{block}/intermediate/dense/kernel"] = (hidden, inner)
        shapes[f"{block}/intermediate/dense/bias"] = (inner,)
        shapes[f"{block}/output/dense/kernel"] = (inner, hidden)
        shapes[f"{block}/output/dense/bias"] = (hidden,)
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[f"{block}/{norm}/gamma"] = (hidden,)
            shapes[f"{block}/{norm}/beta"] = (hidden,)
    if pooler:
        shapes[f"{root}/pooler/dense/kernel"] = (hidden, hidden)
        shapes[f"{root}/pooler/dense/bias"] = (hidden,)
    return shapes


def openai_gpt2_shapes(sizes: dict) -> dict:
    """The entries of OpenAI's GPT-2 release: 1x1 convolutions ``[1, in, out]``."""
    dim, inner = sizes["n_embd"], sizes["n_inner"]
    shapes = {"model/wte": (sizes["n_vocab"], dim), "model/wpe": (sizes["n_ctx"], dim)}
    for i in range(sizes["n_layer"]):
        block = f"model/h{i}"
        for conv, (fan_in, fan_out) in {"attn/c_attn": (dim, 3 * dim), "attn/c_proj": (dim, dim),
                                        "mlp/c_fc": (dim, inner),
                                        "mlp/c_proj": (inner, dim)}.items():  # fmt: skip
            shapes[f"{block}/{conv}/w"] = (1, fan_in, fan_out)
            shapes[f"{block}/{conv}/b"] = (fan_out,)
        for norm in ("ln_1", "ln_2"):
            shapes[f"{block}/{norm}/g"] = (dim,)
            shapes[f"{block}/{norm}/b"] = (dim,)
    shapes["model/ln_f/g"] = (dim,)
    shapes["model/ln_f/b"] = (dim,)
    return shapes


SMALL_BERT = {"vocab_size": 40, "hidden_size": 8, "intermediate_size": 16,
              "max_position_embeddings": 16, "num_hidden_layers": 2}  # fmt: skip
# Hidden 16384 x 64 layers: some 2e11 weights, 800 GB in float32.
HUGE_BERT = {"vocab_size": 30522, "hidden_size": 16384, "intermediate_size": 65536,
             "max_position_embeddings": 512, "num_hidden_layers": 64}  # fmt: skip


def google_bert_folder(folder: str, sizes: dict, whole: bool) -> str:
    os.makedirs(folder)
    save_tf_checkpoint(os.path.join(folder, "bert_model.ckpt"), google_bert_shapes("bert", sizes),
                       whole)  # fmt: skip
    config = {**sizes, "num_attention_heads": 1, "hidden_act": "gelu", "type_vocab_size": 2,
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "initializer_range": 0.02}  # fmt: skip
    write_config(folder, config, "bert_config.json")
    return folder


def electra_release_folder(folder: str, sizes: dict, whole: bool) -> str:
    """Google's ELECTRA release: a TF checkpoint and no config (its sizes are its shapes)."""
    os.makedirs(folder)
    shapes = google_bert_shapes("electra", sizes, pooler=False)
    save_tf_checkpoint(os.path.join(folder, "electra_small"), shapes, whole)
    return folder


def openai_folder(folder: str, sizes: dict, whole: bool) -> str:
    os.makedirs(folder)
    save_tf_checkpoint(os.path.join(folder, "model.ckpt"), openai_gpt2_shapes(sizes), whole)
    write_config(folder, {**sizes, "n_head": 1}, "hparams.json")
    return folder


SMALL_GPT2 = {"n_vocab": 40, "n_ctx": 16, "n_embd": 8, "n_inner": 16, "n_layer": 2}
HUGE_GPT2 = {"n_vocab": 50257, "n_ctx": 1024, "n_embd": 16384, "n_inner": 65536, "n_layer": 64}


def keras_hub_entries(sizes: dict) -> dict:
    """The datasets of a KerasHub ``BertBackbone``'s ``model.weights.h5``, as Keras 3 names
    them; attention weights per head (2 heads)."""
    vocab, hidden, inner = sizes["vocabulary_size"], sizes["hidden_dim"], sizes["intermediate_dim"]
    heads = sizes["num_heads"]
    shapes = {
        "layers/reversible_embedding/vars/0": (vocab, hidden),
        "layers/position_embedding/vars/0": (sizes["max_sequence_length"], hidden),
        "layers/embedding/vars/0": (2, hidden),
        "layers/layer_normalization/vars/0": (hidden,),
        "layers/layer_normalization/vars/1": (hidden,),
        "layers/dense/vars/0": (hidden, hidden),
        "layers/dense/vars/1": (hidden,),
    }
    for i in range(sizes["num_layers"]):
        block = "layers/transformer_encoder" + (f"_{i}" if i else "")
        attention = f"{block}/_self_attention_layer"
        for part in ("query", "key", "value"):
            shapes[f"{attention}/{part}_dense/vars/0"] = (hidden, heads, hidden // heads)
            shapes[f"{attention}/{part}_dense/vars/1"] = (heads, hidden // heads)
        shapes[f"{attention}/output_dense/vars/0"] = (heads, hidden // heads, hidden)
        shapes[f"{attention}/output_dense/vars/1"] = (hidden,)
        shapes[f"{block}/_feedforward_intermediate_dense/vars/0"] = (hidden, inner)
        shapes[f"{block}/_feedforward_intermediate_dense/vars/1"] = (inner,)
        shapes[f"{block}/_feedforward_output_dense/vars/0"] = (inner, hidden)
        shapes[f"{block}/_feedforward_output_dense/vars/1"] = (hidden,)
        for norm in ("_self_attention_layer_norm", "_feedforward_layer_norm"):
            shapes[f"{block}/{norm}/vars/0"] = (hidden,)
            shapes[f"{block}/{norm}/vars/1"] = (hidden,)
    return shapes


def keras_hub_folder(folder: str, sizes: dict, whole: bool) -> str:
    """A KerasHub preset of the fixture's files, with ``sizes`` in its config and a
    ``model.weights.h5`` of those sizes: with ``whole``, every value written; else chunked
    datasets of which no chunk is ever written (HDF5 allocates nothing for them)."""
    shutil.copytree(os.path.join(KERAS_HUB_FIXTURE, "bert_tiny"), folder)
    config = config_of(folder)
    config["config"].update(sizes)
    write_config(folder, config)
    rng = np.random.default_rng(0)
    with h5py.File(os.path.join(folder, "model.weights.h5"), "w") as f:
        for name, shape in keras_hub_entries(sizes).items():
            if whole:
                f.create_dataset(name, data=(rng.normal(size=shape) * 0.02).astype(np.float32))
            else:
                f.create_dataset(name, shape=shape, dtype="f4", chunks=True)
    return folder


SMALL_KERAS_HUB = {"vocabulary_size": 50, "hidden_dim": 8, "intermediate_dim": 16,
                   "max_sequence_length": 16, "num_layers": 2, "num_heads": 2}  # fmt: skip
# A 2e8-row vocabulary: 2e11 weights.
HUGE_KERAS_HUB = {**SMALL_KERAS_HUB, "vocabulary_size": 200_000_000, "hidden_dim": 1024,
                  "intermediate_dim": 4096, "num_layers": 24}  # fmt: skip


def expect_refusal(sandbox, case, *args, contains=(), error="CheckpointError"):
    outcome = sandbox.expect_error(case, *args, error=error, contains=contains)
    assert outcome.seconds < SECONDS, f"refused after {outcome.seconds:.1f} s"
    return outcome


# -- 1. a huge layer count -------------------------------------------------------------------


@pytest.mark.parametrize(
    "family, key",
    [(family, LAYERS[family]) for family in ALL_FAMILIES] + [("t5", "num_decoder_layers")],
)
def test_a_huge_layer_count_fails_at_once(sandbox, tmp_path, family, key):
    folder = family_copy(tmp_path, family)
    config = edit_config(folder, **{key: HUGE})
    named = LAYERS_NAMED.get(family, key) if key == LAYERS[family] else key
    expect_refusal(sandbox, load, folder, contains=(config, f"{named}={HUGE}"))


def test_every_family_fixture_loads_in_the_sandbox(sandbox, tmp_path):
    """The folders the other tests break load whole under the same cap and time limit."""
    for family in ALL_FAMILIES:
        outcome = sandbox.run(load, family_copy(tmp_path, family))
        assert outcome.error is None, f"{family}: {outcome.message}"


# -- 2. weights that lack what the config names, or contradict it ---------------------------


def wide(family: str) -> dict:
    """Hidden 16384 x 64 layers."""
    changes = {WIDTH[family]: 16384, INNER[family]: 65536, HEADS[family]: 128, LAYERS[family]: 64}
    if family in ("albert", "electra"):
        changes["embedding_size"] = 16384
    return changes


VARIANTS = {
    "wide": wide,
    "deep": lambda family: {LAYERS[family]: 1024},
    "vocab": lambda family: {"vocab_size": 200_000_000},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_one_unrelated_tensor_under_a_huge_config_fails_before_building(
    sandbox, tmp_path, family, variant
):
    folder = family_copy(tmp_path, family)
    config = edit_config(folder, **VARIANTS[variant](family))
    replace_weights(folder, {"unrelated.weight": np.zeros((4,), np.float32)})
    # The file holds no layer: the layer count is what contradicts it first (ALBERT's weights
    # have one shared block whatever the count: its word table is missing).
    named = "vocab_size=" if family == "albert" else f"{LAYERS_NAMED[family]}="
    expect_refusal(sandbox, load, folder, contains=(config, named, "nothing was built"))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_real_weights_under_a_huge_config_fail_before_building(sandbox, tmp_path, family, variant):
    folder = family_copy(tmp_path, family)
    changes = VARIANTS[variant](family)
    if variant == "wide":  # the real layer count: the width is what contradicts the weights
        changes.pop(LAYERS[family])
    config = edit_config(folder, **changes)
    named = {
        # The first weight compared is the word table: its width is the embedding size.
        "wide": {
            "gpt2": "dim=16384",
            "albert": "embedding_size=16384",
            "electra": "embedding_size=16384",
        }.get(family, f"{WIDTH[family]}=16384"),  # fmt: skip
        "deep": f"{LAYERS_NAMED[family]}=1024",
        "vocab": "vocab_size=200000000",
    }[variant]
    if family == "albert" and variant == "deep":
        # One shared block: 1024 applications of it are a valid model, built from 1 block.
        assert sandbox.run(load, folder).error is None
        return
    expect_refusal(sandbox, load, folder, contains=(config, named, "nothing was built"))


def test_layer_indices_must_run_from_0_to_n_minus_1(sandbox, tmp_path):
    folder = family_copy(tmp_path, "roberta")
    state = load_file(os.path.join(folder, "model.safetensors"))
    # Layer 1 renamed layer 5: two layers, as the config says, but not layers 0 and 1.
    state = {name.replace("encoder.layer.1.", "encoder.layer.5."): v for name, v in state.items()}
    replace_weights(folder, state)
    expect_refusal(sandbox, load, folder, contains=(
        os.path.join(folder, "config.json"), "num_hidden_layers=2", "layers 0..5 (2 of them",
    ))  # fmt: skip


def test_a_layer_index_of_many_digits_is_refused(sandbox, tmp_path):
    folder = family_copy(tmp_path, "gpt2")
    state = load_file(os.path.join(folder, "model.safetensors"))
    state["h." + "9" * 40 + ".ln_1.weight"] = np.ones((32,), np.float32)
    replace_weights(folder, state)
    expect_refusal(sandbox, load, folder, contains=("model.safetensors", "9" * 12 + "..."))


def test_t5_decoder_layers_default_to_the_encoders_and_are_checked(sandbox, tmp_path):
    """``num_decoder_layers: null`` means as many as ``num_layers``; the file must hold them."""
    folder = family_copy(tmp_path, "t5")
    config = edit_config(folder, num_decoder_layers=None)
    assert sandbox.run(load, folder).error is None  # the fixture has 2 and 2
    state = load_file(os.path.join(folder, "model.safetensors"))
    replace_weights(folder, {k: v for k, v in state.items() if not k.startswith("decoder.block.1")})
    expect_refusal(sandbox, load, folder, contains=(config, "num_decoder_layers=2", "layers 0..0"))


# -- 2b. indexes that claim more than their files hold, in every format --------------------


FORMATS = {
    # format: (make a folder, small sizes, huge sizes, the file the message names)
    "google_bert": (google_bert_folder, SMALL_BERT, HUGE_BERT, "bert_config.json"),
    "google_electra": (electra_release_folder, SMALL_BERT, HUGE_BERT, "electra_small.index"),
    "openai_gpt2": (openai_folder, SMALL_GPT2, HUGE_GPT2, "hparams.json"),
    "keras_hub": (keras_hub_folder, SMALL_KERAS_HUB, HUGE_KERAS_HUB, "config.json"),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_an_index_that_claims_more_than_its_files_hold_fails_before_building(
    sandbox, tmp_path, fmt
):
    make, small, huge, config_file = FORMATS[fmt]
    whole = make(str(tmp_path / "whole"), small, whole=True)
    outcome = sandbox.run(load, whole)
    assert outcome.error is None, outcome.message  # the same kind of folder, whole, loads
    claiming = make(str(tmp_path / "claiming"), huge, whole=False)
    total = sum(os.path.getsize(os.path.join(claiming, f)) for f in os.listdir(claiming)
                if os.path.isfile(os.path.join(claiming, f)))  # fmt: skip
    assert total < 1_000_000, "the folder is small: its index claims the sizes"
    expect_refusal(sandbox, load, claiming, contains=(
        os.path.join(claiming, config_file), "bytes", "nothing was built",
    ))  # fmt: skip


def test_a_tf_checkpoint_whose_data_file_was_cut_fails_before_building(sandbox, tmp_path):
    sizes = {**SMALL_BERT, "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128}
    folder = google_bert_folder(str(tmp_path / "bert"), sizes, whole=True)
    (data,) = [f for f in os.listdir(folder) if ".data-" in f]
    with open(os.path.join(folder, data), "r+b") as f:
        f.truncate(100)
    expect_refusal(sandbox, load, folder, contains=("bert_config.json", "bytes"))


def test_hdf5_values_stored_outside_the_file_are_refused(sandbox, tmp_path):
    folder = keras_hub_folder(str(tmp_path / "preset"), SMALL_KERAS_HUB, whole=True)
    name = "layers/dense/vars/1"
    with h5py.File(os.path.join(folder, "model.weights.h5"), "r+") as f:
        del f[name]
        f.create_dataset(name, shape=(8,), dtype="f4", external=[("/dev/zero", 0, 32)])
    expect_refusal(sandbox, load, folder, contains=("model.weights.h5", name, "outside the file"))


# -- 3. FIFOs and other files that are not regular files ------------------------------------


def test_fifos_in_a_hugging_face_folder_are_refused_without_blocking(sandbox, tmp_path):
    for file in ("config.json", "model.safetensors"):
        folder = minilm_copy(tmp_path, file)
        path = fifo_in_place(folder, file)
        expect_refusal(sandbox, load, folder, contains=(path, "FIFO"))
    # Into a model already built: the weights are checked by the same reader.
    folder = minilm_copy(tmp_path, "into_built")
    path = fifo_in_place(folder, "model.safetensors")
    expect_refusal(sandbox, load_into_built, folder, minilm_folder(), contains=(path, "FIFO"))
    # The BERT tokenizer's config.
    folder = minilm_copy(tmp_path, "tokenizer")
    path = fifo_in_place(folder, "tokenizer_config.json")
    expect_refusal(sandbox, tokenizer, folder, contains=(path, "FIFO"))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_fifos_in_other_formats_are_refused_without_blocking(sandbox, tmp_path, fmt):
    make, small, _, config_file = FORMATS[fmt]
    files = sorted(os.listdir(make(str(tmp_path / "listing"), small, whole=True)))
    weights = [f for f in files if f.endswith((".index", ".h5")) or ".data-" in f]
    configs = [config_file] if not config_file.endswith(".index") else []
    for file in weights + configs:
        folder = make(str(tmp_path / file), small, whole=True)
        path = fifo_in_place(folder, file)
        expect_refusal(sandbox, load, folder, contains=(path, "FIFO"))


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda path: os.symlink("/dev/zero", path), "a device"),
        (os.mkdir, "a folder"),
        (lambda path: os.symlink(path + ".gone", path), "which does not exist"),
        (lambda path: (os.symlink(path + ".b", path), os.symlink(path, path + ".b")),
         "cannot be opened"),
    ],
    ids=["dev_zero", "folder", "dangling_link", "link_loop"],
)  # fmt: skip
def test_a_config_that_is_not_a_regular_file_is_named(sandbox, tmp_path, make, said):
    folder = minilm_copy(tmp_path)
    path = os.path.join(folder, "config.json")
    os.remove(path)
    make(path)
    expect_refusal(sandbox, load, folder, contains=(path, said))


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda path: os.symlink("/dev/zero", path), "a device"),
        (lambda path: Path(path).write_text("[1]"), "expected a JSON object"),
        (lambda path: Path(path).write_text('{"do_lower_case": true, "do_lower_case": false}'),
         "'do_lower_case' is given twice"),
    ],
    ids=["dev_zero", "a_list", "a_key_twice"],
)  # fmt: skip
def test_a_bert_tokenizer_config_that_is_not_one_is_named(sandbox, tmp_path, make, said):
    folder = minilm_copy(tmp_path)
    path = os.path.join(folder, "tokenizer_config.json")
    make(path)
    expect_refusal(sandbox, tokenizer, folder, contains=(path, said))


# -- 4. values of the wrong type or size -----------------------------------------------------


@pytest.mark.parametrize("value", ["7", 1.5, float("nan"), [6], {"n": 6}, True, -1, 0])
def test_t5_decoder_layers_of_any_other_type_are_named(sandbox, tmp_path, value):
    folder = family_copy(tmp_path, "t5")
    config = edit_config(folder, num_decoder_layers=value)
    expect_refusal(sandbox, load, folder, contains=(config, "num_decoder_layers"))


@pytest.mark.parametrize("value", [["gelu"], {"gelu": 1}, 1, "swiglu"])
def test_gpt2_activation_of_any_other_kind_is_named(sandbox, tmp_path, value):
    folder = family_copy(tmp_path, "gpt2")
    config = edit_config(folder, activation_function=value)
    expect_refusal(sandbox, load, folder, contains=(config, "activation_function"))


def test_gpt2_initializer_range_that_is_not_a_number_is_named(sandbox, tmp_path):
    folder = family_copy(tmp_path, "gpt2")
    for value in ("0.02", [0.02], -1.0, float("inf")):
        config = edit_config(folder, initializer_range=value)
        expect_refusal(sandbox, load, folder, contains=(config, "initializer_range"))


def test_a_number_of_100001_digits_is_named(sandbox, tmp_path):
    folder = minilm_copy(tmp_path)
    path = os.path.join(folder, "config.json")
    text = Path(path).read_text().replace('"vocab_size": 30522', '"vocab_size": 1' + "0" * 100_000)
    with open(path, "w") as f:
        f.write(text)
    expect_refusal(sandbox, load, folder, contains=(path, "digits"))


def test_a_deeply_nested_config_is_named(sandbox, tmp_path):
    folder = minilm_copy(tmp_path)
    path = os.path.join(folder, "config.json")
    text = Path(path).read_text().rstrip().rstrip("}")
    with open(path, "w") as f:
        f.write(text + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    expect_refusal(sandbox, load, folder, contains=(path, "nested deeper"))


def test_a_key_given_twice_is_named(sandbox, tmp_path):
    folder = minilm_copy(tmp_path)
    path = os.path.join(folder, "config.json")
    text = Path(path).read_text().rstrip().rstrip("}")
    with open(path, "w") as f:
        f.write(text + ', "hidden_size": 768}')
    expect_refusal(sandbox, load, folder, contains=(path, "'hidden_size' is given twice"))


# -- 5. ranges: epsilons and token ids; the abstract encoder ---------------------------------


@pytest.mark.parametrize(
    "family, key, value",
    [("bert", "layer_norm_eps", 1e12), ("bert", "layer_norm_eps", 0.0),
     ("roberta", "layer_norm_eps", float("nan")), ("electra", "layer_norm_eps", 1.0),
     ("albert", "layer_norm_eps", -1e-12), ("gpt2", "layer_norm_epsilon", 2.0),
     ("t5", "layer_norm_epsilon", float("inf")),
     ("bert", "pad_token_id", -1), ("bert", "pad_token_id", 30522),
     ("roberta", "pad_token_id", 10**12), ("distilbert", "pad_token_id", 99),
     ("gpt2", "eos_token_id", 99), ("albert", "bos_token_id", "2"),
     ("t5", "eos_token_id", -1), ("t5", "pad_token_id", HUGE),
     ("t5", "decoder_start_token_id", 99), ("t5", "decoder_start_token_id", -5)],
)  # fmt: skip
def test_epsilons_and_token_ids_out_of_range_are_named(sandbox, tmp_path, family, key, value):
    folder = family_copy(tmp_path, family)
    config = edit_config(folder, **{key: value})
    expect_refusal(sandbox, load, folder, contains=(config, f"{key}="))


def test_token_ids_inside_the_vocabulary_still_load(sandbox, tmp_path):
    folder = family_copy(tmp_path, "t5")
    edit_config(folder, eos_token_id=98, pad_token_id=0, decoder_start_token_id=97)
    assert sandbox.run(load, folder).error is None


@pytest.mark.parametrize(
    "cls, hparams, key",
    [("BERTEncoder", {"layer_norm_eps": 1e12}, "layer_norm_eps"),
     ("RoBERTaEncoder", {"pad_token_id": 10**6}, "pad_token_id"),
     ("RoBERTaEncoder", {"pad_token_id": 600}, "pad_token_id"),
     ("T5EncoderDecoder", {"eos_token_id": -1}, "eos_token_id"),
     ("T5EncoderDecoder", {"layer_norm_epsilon": 5.0}, "layer_norm_epsilon"),
     ("GPT2Decoder", {"decoder": {"layer_norm_epsilon": 1e12}}, "decoder.layer_norm_epsilon")],
)  # fmt: skip
def test_modules_refuse_the_same_values_from_hparams(sandbox, cls, hparams, key):
    expect_refusal(sandbox, construct, cls, hparams, error="HParamsError", contains=(f"'{key}'",))


def test_the_abstract_family_encoder_says_which_classes_to_use(sandbox):
    outcome = sandbox.run(construct, "BERTFamilyEncoder")
    assert outcome.raised == "TypeError", outcome.message
    said = outcome.message.splitlines()[0]  # the sandbox appends a TypeError's traceback
    for name in ("BERTFamilyEncoder", "ALBERTEncoder", "BERTEncoder", "DistilBERTEncoder",
                 "ELECTRAEncoder", "RoBERTaEncoder"):  # fmt: skip
        assert name in said, said
