"""Tests of texkit.hparams: strict merging and validation of hyperparameters (DESIGN section 3)."""

import texkit as tx  # noqa: I001  (first: texkit picks the Keras backend)

import contextlib
import copy
import math

import keras
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from texkit import HParams, HParamsError, apply_overrides
from texkit.modules import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder


# A hand-written nested config with every kind of default the rules distinguish.
MODEL_DEFAULTS_LITERAL = {
    "num_layers": 1,
    "dropout_rate": 0.1,
    "use_bias": True,
    "activation": "relu",
    "cell": {"type": "LSTMCell", "kwargs": {"units": 8}},
    "layers": [{"units": 4, "activation": "relu"}],
    "sizes": [1, 2],
    "extra": {},
    "anything": None,
    "encoder": {"num_blocks": 2, "attention": {"num_heads": 4, "dropout": 0.0}},
    "optimizer": {"type": "Adam", "kwargs": {"learning_rate": 0.001}},
    "name": "model",
}


def model_defaults() -> dict:
    """A fresh copy of ``MODEL_DEFAULTS_LITERAL`` (tests may mutate theirs)."""
    return copy.deepcopy(MODEL_DEFAULTS_LITERAL)


@contextlib.contextmanager
def raises_at(path: str, *match: str):
    """An ``HParamsError`` at ``path`` whose message contains every ``match``."""
    with pytest.raises(HParamsError) as info:
        yield info
    assert info.value.path == path, str(info.value)
    for text in match:
        assert text in str(info.value), str(info.value)


# -- defaults, unknown keys -------------------------------------------------------------------


def test_defaults_are_filled_in():
    assert HParams(None, model_defaults()).todict() == MODEL_DEFAULTS_LITERAL
    hp = HParams({"num_layers": 3}, model_defaults())
    assert hp.num_layers == 3
    assert hp.todict() == {**MODEL_DEFAULTS_LITERAL, "num_layers": 3}


def test_word_embedder_defaults_merge_a_partial_config():
    hp = HParams({"dim": 64, "dropout_rate": 0.25}, WordEmbedder.default_hparams())
    assert hp.todict() == {
        "dim": 64,
        "initializer": {
            "type": "RandomUniform",
            "kwargs": {"minval": -0.1, "maxval": 0.1, "seed": None},
        },
        "dropout_rate": 0.25,
        "dropout_strategy": "element",
        "trainable": True,
        "name": "word_embedder",
    }


def test_unknown_top_level_key_names_its_path_and_the_closest_key():
    with raises_at("num_layer", "'num_layers'"):
        HParams({"num_layer": 2}, model_defaults())


def test_unknown_nested_key_names_its_full_path_and_the_closest_key():
    with raises_at("encoder.attention.num_head", "'num_heads'"):
        HParams({"encoder": {"attention": {"num_head": 2}}}, model_defaults())


def test_unknown_key_next_to_type_and_kwargs_suggests_type():
    with raises_at("cell.tpye", "'type'"):
        HParams({"cell": {"tpye": "GRUCell"}}, model_defaults())
    with raises_at("initializer.kwarg", "'kwargs'"):
        HParams({"initializer": {"kwarg": {}}}, WordEmbedder.default_hparams())


def test_non_string_key_is_refused():
    with raises_at("encoder.3"):
        HParams({"encoder": {3: 1}}, model_defaults())


def test_allow_new_hparam_accepts_new_keys():
    hp = HParams({"brand_new": [1, 2], "encoder": {"new_too": "x"}}, model_defaults(), True)
    assert hp.brand_new == (1, 2) and hp.todict()["brand_new"] == [1, 2]
    assert hp.encoder.new_too == "x"
    assert hp.encoder.num_blocks == 2


def test_config_that_is_not_a_dict_is_refused():
    with pytest.raises(HParamsError):
        HParams([("num_layers", 2)], model_defaults())


# -- types --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["2", 2.0, 2.7, True, False, None, [2]])
def test_int_default_rejects_other_types(value):
    with raises_at("num_layers", "int"):
        HParams({"num_layers": value}, model_defaults())


def test_float_default_accepts_an_int_and_stores_a_float():
    hp = HParams({"dropout_rate": 0}, model_defaults())
    assert hp.dropout_rate == 0.0 and type(hp.dropout_rate) is float
    hp = HParams({"encoder": {"attention": {"dropout": 1}}}, model_defaults())
    assert hp.encoder.attention.dropout == 1.0 and type(hp.encoder.attention.dropout) is float


@pytest.mark.parametrize("value", ["0.5", True, None, [0.5]])
def test_float_default_rejects_other_types(value):
    with raises_at("dropout_rate", "float"):
        HParams({"dropout_rate": value}, model_defaults())


@pytest.mark.parametrize("value", [0, 1, "False", "true", 0.0, None])
def test_bool_default_rejects_everything_but_a_bool(value):
    with raises_at("use_bias", "bool"):
        HParams({"use_bias": value}, model_defaults())
    assert HParams({"use_bias": False}, model_defaults()).use_bias is False


@pytest.mark.parametrize("value", [1, 1.5, True, None, ["relu"]])
def test_str_default_rejects_other_types(value):
    with raises_at("activation", "str"):
        HParams({"activation": value}, model_defaults())


@pytest.mark.parametrize("value", [3, "text", 2.5, True, [1, "a"], {"free": {"form": 1}}])
def test_none_default_accepts_anything(value):
    hp = HParams({"anything": value}, model_defaults())
    assert hp.todict()["anything"] == value


def test_empty_dict_default_is_free_form():
    extra = {"whatever": 1, "nested": {"deep": [1, 2]}}
    assert HParams({"extra": extra}, model_defaults()).todict()["extra"] == extra
    with raises_at("extra", "dict"):
        HParams({"extra": 3}, model_defaults())


def test_dict_default_rejects_a_non_dict():
    with raises_at("encoder", "dict"):
        HParams({"encoder": [1, 2]}, model_defaults())


# -- merging --------------------------------------------------------------------------------------


def test_nested_dicts_merge_key_by_key():
    hp = HParams({"encoder": {"attention": {"num_heads": 8}}}, model_defaults())
    assert hp.todict()["encoder"] == {
        "num_blocks": 2,
        "attention": {"num_heads": 8, "dropout": 0.0},
    }


def test_lists_are_replaced_whole():
    assert HParams({"sizes": [7]}, model_defaults()).todict()["sizes"] == [7]
    assert HParams({"sizes": [5, 6, 7, 8]}, model_defaults()).todict()["sizes"] == [5, 6, 7, 8]
    assert HParams({"sizes": []}, model_defaults()).todict()["sizes"] == []


def test_list_elements_keep_the_default_element_type():
    with raises_at("sizes.1", "int"):
        HParams({"sizes": [1, "2"]}, model_defaults())
    with raises_at("sizes", "list"):
        HParams({"sizes": 3}, model_defaults())


def test_template_list_merges_each_element():
    hp = HParams({"layers": [{}, {"units": 16}, {"activation": "tanh"}]}, model_defaults())
    assert hp.todict()["layers"] == [
        {"units": 4, "activation": "relu"},
        {"units": 16, "activation": "relu"},
        {"units": 4, "activation": "tanh"},
    ]
    assert hp.layers[1].units == 16


def test_template_list_unknown_key_names_the_index():
    with raises_at("layers.1.unitz", "'units'"):
        HParams({"layers": [{"units": 1}, {"unitz": 2}]}, model_defaults())
    with raises_at("layers.0.units", "int"):
        HParams({"layers": [{"units": "8"}]}, model_defaults())
    with raises_at("layers.0", "dict"):
        HParams({"layers": [5]}, model_defaults())


# -- type / kwargs pairs ------------------------------------------------------------------------


def test_registry_type_resolves_and_keeps_the_kwargs_it_accepts():
    hp = HParams({"cell": {"type": "GRUCell"}}, model_defaults())
    assert hp.todict()["cell"] == {"type": "GRUCell", "kwargs": {"units": 8}}
    hp = HParams({"cell": {"kwargs": {"units": 32, "dropout": 0.5}}}, model_defaults())
    assert hp.todict()["cell"] == {"type": "LSTMCell", "kwargs": {"units": 32, "dropout": 0.5}}


def test_a_name_alone_is_short_for_a_type_with_default_kwargs():
    hp = HParams({"cell": "GRUCell"}, model_defaults())
    assert hp.todict()["cell"] == HParams({"cell": {"type": "GRUCell"}}, model_defaults())["cell"]
    with raises_at("cell.type"):
        HParams({"cell": "NoSuchCell"}, model_defaults())
    with raises_at("cell", "dict"):
        HParams({"cell": 3}, model_defaults())


def test_kwarg_the_class_does_not_accept_is_an_error():
    with raises_at("cell.kwargs.badname", "LSTMCell"):
        HParams({"cell": {"kwargs": {"badname": 1}}}, model_defaults())
    with raises_at("optimizer.kwargs.learning_rat", "'learning_rate'"):
        HParams({"optimizer": {"kwargs": {"learning_rat": 0.1}}}, model_defaults())


def test_kwargs_must_be_a_dict():
    with raises_at("cell.kwargs", "dict"):
        HParams({"cell": {"kwargs": [8]}}, model_defaults())


def test_changing_type_drops_only_the_default_kwargs_the_new_class_rejects():
    hp = HParams({"initializer": {"type": "GlorotUniform"}}, WordEmbedder.default_hparams())
    assert hp.todict()["initializer"] == {"type": "GlorotUniform", "kwargs": {"seed": None}}
    hp = HParams({"optimizer": {"type": "SGD", "kwargs": {"momentum": 0.9}}}, model_defaults())
    assert hp.todict()["optimizer"] == {
        "type": "SGD",
        "kwargs": {"learning_rate": 0.001, "momentum": 0.9},
    }


def test_changing_type_never_drops_a_user_kwarg():
    with raises_at("initializer.kwargs.minval", "GlorotUniform"):
        HParams(
            {"initializer": {"type": "GlorotUniform", "kwargs": {"minval": 0.0}}},
            WordEmbedder.default_hparams(),
        )


@pytest.mark.parametrize(
    "name", ["NoSuchCell", "LSTMcell", "os.system", "keras.layers.NoSuchLayer", ""]
)
def test_bad_type_name_is_an_error(name):
    with raises_at("cell.type"):
        HParams({"cell": {"type": name}}, model_defaults())


def test_type_that_is_not_a_name_is_an_error():
    with raises_at("cell.type", "int"):
        HParams({"cell": {"type": 3}}, model_defaults())


def test_class_object_as_type_is_stored_by_its_canonical_name():
    hp = HParams({"cell": {"type": keras.layers.GRUCell}}, model_defaults())
    assert hp.cell.type == "GRUCell"
    hp = HParams(
        {"initializer": {"type": keras.initializers.GlorotUniform}}, WordEmbedder.default_hparams()
    )
    assert hp.todict()["initializer"] == {"type": "GlorotUniform", "kwargs": {"seed": None}}
    assert (
        HParams({"optimizer": {"type": keras.optimizers.SGD}}, model_defaults()).optimizer.type
        == "SGD"
    )


def test_unregistered_class_object_as_type_is_an_error():
    class LocalCell(keras.layers.Layer):
        pass

    with raises_at("cell.type", "register"):
        HParams({"cell": {"type": LocalCell}}, model_defaults())


def test_word_embedder_initializer_type_and_kwargs():
    hp = HParams(
        {"initializer": {"type": "Constant", "kwargs": {"value": 0.5}}},
        WordEmbedder.default_hparams(),
    )
    assert hp.todict()["initializer"] == {"type": "Constant", "kwargs": {"value": 0.5}}
    with raises_at("initializer.kwargs.stddev", "RandomUniform"):
        HParams({"initializer": {"kwargs": {"stddev": 1.0}}}, WordEmbedder.default_hparams())


# -- reading, read-only, derived copies -------------------------------------------------------


def test_hparams_are_read_only():
    hp = HParams(None, model_defaults())
    with pytest.raises(AttributeError):
        hp.num_layers = 2
    with pytest.raises(AttributeError):
        hp.encoder.num_blocks = 3
    with pytest.raises(AttributeError):
        del hp.num_layers
    with pytest.raises(TypeError):
        hp["num_layers"] = 2
    with pytest.raises((AttributeError, TypeError)):
        hp.sizes.append(3)
    assert hp.num_layers == 1 and hp.encoder.num_blocks == 2 and list(hp.sizes) == [1, 2]


def test_reading_by_attribute_item_in_get_keys_items():
    hp = HParams({"encoder": {"attention": {"num_heads": 8}}}, model_defaults())
    assert hp.encoder.attention.num_heads == 8
    assert hp["encoder"]["num_blocks"] == 2
    assert hp["encoder"].attention["dropout"] == 0.0
    assert "encoder" in hp and "num_heads" in hp.encoder.attention
    assert "missing" not in hp
    assert hp.get("num_layers") == 1
    assert hp.get("missing") is None and hp.get("missing", 5) == 5
    assert list(hp.keys()) == list(MODEL_DEFAULTS_LITERAL)
    assert dict(hp.items())["name"] == "model"
    assert len(hp) == len(MODEL_DEFAULTS_LITERAL)
    with pytest.raises(AttributeError, match="num_layers"):
        _ = hp.num_layer
    with pytest.raises(KeyError, match="num_layers"):
        _ = hp["num_layer"]


def test_todict_returns_a_plain_deep_copy():
    hp = HParams(None, model_defaults())
    plain = hp.todict()

    def check_plain(value):
        assert type(value) in (dict, list, int, float, bool, str, type(None)), type(value)
        if isinstance(value, dict):
            for item in value.values():
                check_plain(item)
        if isinstance(value, list):
            for item in value:
                check_plain(item)

    check_plain(plain)
    assert type(plain["layers"]) is list and type(plain["layers"][0]) is dict
    plain["encoder"]["attention"]["num_heads"] = 99
    plain["sizes"].append(3)
    plain["layers"][0]["units"] = 99
    plain["cell"]["kwargs"]["units"] = 99
    assert hp.todict() == MODEL_DEFAULTS_LITERAL


def test_to_yaml_round_trips_through_from_yaml(tmp_path):
    hp = HParams(
        {"layers": [{"units": 2}, {}], "extra": {"k": [1, 2]}, "anything": "x"}, model_defaults()
    )
    text = hp.to_yaml()
    expected = {
        **MODEL_DEFAULTS_LITERAL,
        "layers": [{"units": 2, "activation": "relu"}, {"units": 4, "activation": "relu"}],
        "extra": {"k": [1, 2]},
        "anything": "x",
    }
    assert yaml.safe_load(text) == expected
    path = tmp_path / "hparams.yaml"
    path.write_text(text)
    assert HParams.from_yaml(path, model_defaults()).todict() == expected
    assert HParams.from_yaml(str(path), model_defaults()) == hp


def test_replace_returns_a_new_validated_copy():
    hp = HParams(None, model_defaults())
    new = hp.replace(num_layers=3, encoder={"attention": {"num_heads": 2}})
    assert new.num_layers == 3
    assert new.todict()["encoder"] == {
        "num_blocks": 2,
        "attention": {"num_heads": 2, "dropout": 0.0},
    }
    assert hp.num_layers == 1 and hp.encoder.attention.num_heads == 4
    assert type(hp.replace(dropout_rate=1).dropout_rate) is float


def test_replace_accepts_dotted_keys_and_list_indices():
    hp = HParams({"layers": [{}, {}]}, model_defaults())
    new = hp.replace(**{"encoder.attention.num_heads": 16, "layers.1.units": 32})
    assert new.encoder.attention.num_heads == 16 and new.encoder.num_blocks == 2
    assert new.todict()["layers"] == [
        {"units": 4, "activation": "relu"},
        {"units": 32, "activation": "relu"},
    ]


def test_replace_validates():
    hp = HParams(None, model_defaults())
    with raises_at("num_layers", "int"):
        hp.replace(num_layers="3")
    with raises_at("encoder.attention.num_head", "'num_heads'"):
        hp.replace(**{"encoder.attention.num_head": 2})
    with raises_at("cell.kwargs.badname"):
        hp.replace(**{"cell.kwargs.badname": 1})


def test_replace_of_type_follows_the_type_change_rule():
    hp = HParams(None, WordEmbedder.default_hparams())
    expected = {"type": "GlorotUniform", "kwargs": {"seed": None}}
    assert hp.replace(**{"initializer.type": "GlorotUniform"}).todict()["initializer"] == expected
    assert hp.replace(initializer={"type": "GlorotUniform"}).todict()["initializer"] == expected
    changed = hp.replace(initializer={"type": "GlorotUniform", "kwargs": {"seed": 3}})
    assert changed.todict()["initializer"] == {"type": "GlorotUniform", "kwargs": {"seed": 3}}
    with raises_at("initializer.kwargs.minval"):
        hp.replace(initializer={"type": "GlorotUniform", "kwargs": {"minval": 0.0}})


def test_repr_is_readable():
    text = repr(HParams({"num_layers": 2}, model_defaults()))
    assert text.startswith("HParams(")
    assert "num_layers=2" in text and "name='model'" in text and "num_heads=4" in text


# -- overrides ----------------------------------------------------------------------------------


def test_apply_overrides_parses_values_as_yaml():
    base = {"encoder": {"num_blocks": 2}}
    result = apply_overrides(
        base,
        [
            "encoder.num_blocks=4",
            "optimizer.type=SGD",
            "dropout_rate=0.5",
            "use_bias=false",
            "sizes=[3, 4]",
            "anything=null",
            "activation=tanh",
        ],
    )
    assert result == {
        "encoder": {"num_blocks": 4},
        "optimizer": {"type": "SGD"},
        "dropout_rate": 0.5,
        "use_bias": False,
        "sizes": [3, 4],
        "anything": None,
        "activation": "tanh",
    }
    assert base == {"encoder": {"num_blocks": 2}}
    hp = HParams(result, model_defaults())
    assert hp.optimizer.type == "SGD" and hp.optimizer.kwargs.learning_rate == 0.001


def test_apply_overrides_reads_scientific_notation_as_a_float():
    result = apply_overrides({}, ["optimizer.kwargs.learning_rate=1e-3", "dropout_rate=2E-1"])
    assert result == {"optimizer": {"kwargs": {"learning_rate": 0.001}}, "dropout_rate": 0.2}
    assert type(result["dropout_rate"]) is float


def test_apply_overrides_addresses_list_elements_by_index():
    result = apply_overrides({"layers": [{"units": 1}, {"units": 2}]}, ["layers.1.units=8"])
    assert result == {"layers": [{"units": 1}, {"units": 8}]}
    with raises_at("layers.5.units", "out of range"):
        apply_overrides({"layers": [{"units": 1}]}, ["layers.5.units=8"])


def test_apply_overrides_without_equals_sign_is_an_error():
    with pytest.raises(HParamsError, match="key=value"):
        apply_overrides({}, ["encoder.num_blocks"])


def test_apply_overrides_validates_against_given_defaults():
    result = apply_overrides({}, ["encoder.num_blocks=4"], default_hparams=model_defaults())
    assert result == {"encoder": {"num_blocks": 4}}
    with raises_at("encoder.num_block", "'num_blocks'"):
        apply_overrides({}, ["encoder.num_block=4"], default_hparams=model_defaults())
    with raises_at("encoder.num_blocks", "int"):
        apply_overrides({}, ["encoder.num_blocks=4.5"], default_hparams=model_defaults())


# -- YAML files ---------------------------------------------------------------------------------


def test_from_yaml_missing_file_names_the_path(tmp_path):
    path = tmp_path / "no_such_hparams.yaml"
    with pytest.raises(FileNotFoundError, match="no_such_hparams.yaml"):
        HParams.from_yaml(path, model_defaults())


def test_from_yaml_validates(tmp_path):
    path = tmp_path / "hparams.yaml"
    path.write_text("encoder:\n  num_blocks: 6\noptimizer:\n  kwargs:\n    learning_rate: 1.0e-4\n")
    hp = HParams.from_yaml(path, model_defaults())
    assert hp.encoder.num_blocks == 6 and hp.optimizer.kwargs.learning_rate == 1e-4
    path.write_text("encoder:\n  num_blockz: 6\n")
    with raises_at("encoder.num_blockz"):
        HParams.from_yaml(path, model_defaults())
    path.write_text("- 1\n- 2\n")
    with pytest.raises(HParamsError, match="mapping"):
        HParams.from_yaml(path, model_defaults())


def test_from_yaml_refuses_python_object_apply(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f'name: !!python/object/apply:os.system ["touch {marker}"]\n')
    with pytest.raises(HParamsError):
        HParams.from_yaml(path, model_defaults())
    assert not marker.exists()
    with pytest.raises(HParamsError):
        HParams.from_yaml(path, None, allow_new_hparam=True)
    assert not marker.exists()


def test_from_yaml_refuses_python_name(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("anything: !!python/name:os.system\n")
    with pytest.raises(HParamsError):
        HParams.from_yaml(path, model_defaults())


def test_apply_overrides_refuses_python_tags(tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(HParamsError):
        apply_overrides({}, [f'anything=!!python/object/apply:os.system ["touch {marker}"]'])
    assert not marker.exists()


# -- modules validate their own ranges --------------------------------------------------------


@pytest.mark.parametrize(
    "make, key, value",
    [
        (lambda hp: WordEmbedder(vocab_size=5, hparams=hp), "dim", 0),
        (lambda hp: WordEmbedder(vocab_size=5, hparams=hp), "dropout_rate", 1.0),
        (lambda hp: WordEmbedder(vocab_size=5, hparams=hp), "dropout_rate", math.nan),
        (lambda hp: PositionEmbedder(position_size=5, hparams=hp), "dim", -1),
        (lambda hp: SinusoidsPositionEmbedder(hparams=hp), "dim", 0),
        (lambda hp: SinusoidsPositionEmbedder(hparams=hp), "max_timescale", 1.0),
        (lambda hp: SinusoidsPositionEmbedder(hparams=hp), "max_timescale", math.nan),
        (lambda hp: SinusoidsPositionEmbedder(hparams=hp), "max_timescale", math.inf),
    ],
)
def test_out_of_range_module_hparams_raise_hparams_error(make, key, value):
    with raises_at(key):
        make({key: value})


def test_module_name_with_a_slash_raises_hparams_error():
    with raises_at("name"):
        WordEmbedder(vocab_size=5, hparams={"name": "a/b"})


# -- property: malformed configs fail only with HParamsError -----------------------------------

DANGEROUS_TYPES = [
    "os.system",
    "subprocess.Popen",
    "builtins.eval",
    "keras.src.backend.config.os.system",
    "keras.__builtins__",
    "texkit.hparams.yaml.unsafe_load",
    "tensorflow.io.gfile.rmtree",
    "keras.config.enable_unsafe_deserialization",
    "keras.layers.Lambda",
    "keras.layers.deserialize",
]

MODULES = {
    "WordEmbedder": (
        WordEmbedder.default_hparams,
        lambda hp: WordEmbedder(vocab_size=7, hparams=hp),
    ),
    "PositionEmbedder": (
        PositionEmbedder.default_hparams,
        lambda hp: PositionEmbedder(position_size=7, hparams=hp),
    ),
    "SinusoidsPositionEmbedder": (
        SinusoidsPositionEmbedder.default_hparams,
        lambda hp: SinusoidsPositionEmbedder(hparams=hp),
    ),
    "model": (model_defaults, None),
}

# Short texts over a few telling characters (often names that exist), or over all of Unicode.
_text = st.text(st.sampled_from("ab_.-/ 0é"), max_size=6) | st.text(
    st.characters(blacklist_categories=("Cs",)), max_size=8
)
# Sizes far beyond memory fail in allocation, not validation; keep them in a sane range.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**15), 2**15)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _text
)
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_text, children, max_size=3),
    max_leaves=6,
)


def _is_pair(node) -> bool:
    return isinstance(node, dict) and "type" in node and "kwargs" in node


def _walk(node, path=()):
    """Yields (path, node) for every dict or list in ``node`` that is validated key by key."""
    if isinstance(node, dict):
        if not node:  # free-form
            return
        yield path, node
        for key, value in node.items():
            if _is_pair(node) and key == "kwargs":
                continue  # free-form values
            yield from _walk(value, path + (key,))
    elif isinstance(node, list) and len(node) == 1 and isinstance(node[0], dict):
        yield from _walk(node[0], path + (0,))


def _get(node, path):
    for key in path:
        node = node[key]
    return node


def _dotted(path) -> str:
    return ".".join(str(key) for key in path)


@st.composite
def malformed_configs(draw, defaults):
    """(config, expected error path or None when the config may be valid)."""
    config = copy.deepcopy(defaults)
    containers = [(path, node) for path, node in _walk(config) if isinstance(node, dict)]
    pairs = [(path, node) for path, node in containers if _is_pair(node)]
    kinds = ["unknown_key", "value"] + (["type", "kwargs_key"] if pairs else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "unknown_key":
        path, node = draw(st.sampled_from(containers))
        key = draw(_text.filter(lambda k: k not in node))
        node[key] = draw(_values)
        return config, _dotted(path + (key,))
    if kind == "value":
        leaves = [
            path + (key,)
            for path, node in containers
            for key in node
            if not (_is_pair(node) and key == "kwargs")
        ]
        path = draw(st.sampled_from(leaves))
        _get(config, path[:-1])[path[-1]] = draw(_values)
        return config, None
    path, pair = draw(st.sampled_from(pairs))
    if kind == "type":
        dangerous = draw(st.booleans())
        pair["type"] = draw(
            st.sampled_from(DANGEROUS_TYPES)
            if dangerous
            else _text | st.sampled_from(tx.registry.registered_names())
        )
        if draw(st.booleans()):
            del pair["kwargs"]
        return config, _dotted(path + ("type",)) if dangerous else None
    key = "zz_" + draw(_text)
    pair["kwargs"][key] = draw(_values)
    return config, _dotted(path + ("kwargs", key))


@pytest.mark.parametrize("module", list(MODULES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_configs_fail_only_with_hparams_error(module, data):
    default_hparams, make = MODULES[module]
    config, error_path = data.draw(malformed_configs(default_hparams()))
    try:
        HParams(config, default_hparams())
    except HParamsError as error:
        if error_path is not None:
            assert error.path == error_path, str(error)
    else:
        assert error_path is None, f"accepted a config with an error at {error_path}"
    if make is not None:
        try:
            make(config)
        except HParamsError:
            pass


# -- found in review --------------------------------------------------------------------------

NESTED = {
    "encoder": {"num_blocks": 2, "name": "e"},
    "dropout_rate": 0.1,
    "sizes": [1, 2],
    "name": "m",
}


def test_an_int_too_large_for_a_float_is_an_hparams_error():
    with raises_at("dropout_rate"):
        HParams({"dropout_rate": 10**400}, NESTED)
    with raises_at("dropout_rate"):
        apply_overrides({}, ["dropout_rate=" + "9" * 400], NESTED)


def test_replace_validates_on_nested_copies_and_pickles():
    import copy
    import pickle

    hp = HParams(None, NESTED)
    with raises_at("num_blockz"):
        hp.encoder.replace(num_blockz=3)
    assert hp.encoder.replace(num_blocks=4).num_blocks == 4
    for clone in (copy.deepcopy(hp), pickle.loads(pickle.dumps(hp))):
        assert clone == hp
        with raises_at("dropout_rate"):
            clone.replace(dropout_rate="x")


def test_an_override_through_a_list_element_that_is_not_a_dict_is_an_hparams_error():
    with raises_at("sizes.0.x"):
        apply_overrides({"sizes": [1, 2]}, ["sizes.0.x=1"])


@pytest.mark.parametrize("text", ["a: &x [*x]", "a: &x 1\nb: *x", "dim: 64\ndim: 32"])
def test_yaml_aliases_and_repeated_keys_are_refused(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(HParamsError, match=str(path)):
        HParams.from_yaml(path, None, allow_new_hparam=True)


def test_to_yaml_quotes_strings_that_would_read_back_as_numbers(tmp_path):
    hp = HParams({"name": "1e5", "dropout_rate": 1e-5}, NESTED)
    path = tmp_path / "hp.yaml"
    path.write_text(hp.to_yaml())
    assert HParams.from_yaml(path, NESTED) == hp


def test_a_file_that_is_not_utf8_is_an_hparams_error(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9".encode("latin-1"))
    with pytest.raises(HParamsError, match="UTF-8"):
        HParams.from_yaml(path, NESTED)


def test_overriding_a_type_in_a_resolved_config_keeps_only_the_kwargs_it_accepts():
    resolved = HParams(None, WordEmbedder.default_hparams()).todict()  # e.g. a saved hparams.yaml
    changed = apply_overrides(
        resolved, ["initializer.type=GlorotUniform"], WordEmbedder.default_hparams()
    )
    assert changed["initializer"] == {"type": "GlorotUniform", "kwargs": {"seed": None}}


def test_equal_hparams_hash_equally():
    assert HParams({"a": 1}, None) == HParams({"a": 1.0}, None)
    assert hash(HParams({"a": 1}, None)) == hash(HParams({"a": 1.0}, None))


# -- integers, depth and size limits of configs ----------------------------------------------------


def test_a_yaml_integer_longer_than_any_size_names_its_key_and_line(tmp_path):
    from texkit.errors import MAX_DIGITS

    path = tmp_path / "config.yaml"
    path.write_text("encoder:\n  num_blocks: " + "9" * 5000 + "\n")
    with pytest.raises(HParamsError) as info:
        HParams.from_yaml(path, model_defaults())
    message = str(info.value)
    assert str(path) in message and "'num_blocks'" in message and "line 2" in message
    assert "5,000 digits" in message and "\n" not in message and len(message) < 400
    # In a list the line alone says where; MAX_DIGITS digits are still read.
    path.write_text("sizes: [1, " + "7" * (MAX_DIGITS + 1) + "]\n")
    with pytest.raises(HParamsError, match="line 1, column 12"):
        HParams.from_yaml(path, None, allow_new_hparam=True)
    path.write_text(f"big: {'9' * MAX_DIGITS}\nhex: 0x{'f' * MAX_DIGITS}\nsep: 1_000\n")
    read = HParams.from_yaml(path, None, allow_new_hparam=True)
    assert read.big == int("9" * MAX_DIGITS) and read.hex == int("f" * MAX_DIGITS, 16)
    assert read.sep == 1000


def test_an_override_integer_longer_than_any_size_names_its_key():
    with raises_at("encoder.num_blocks", "5,000 digits") as info:
        apply_overrides({}, ["encoder.num_blocks=" + "9" * 5000])
    assert "\n" not in str(info.value) and len(str(info.value)) < 400
    from texkit.errors import MAX_DIGITS

    with raises_at("sizes", f"{MAX_DIGITS + 1} digits"):
        apply_overrides({}, ["sizes=[1, " + "7" * (MAX_DIGITS + 1) + "]"])


def test_an_override_key_deeper_than_any_config_is_one_short_error():
    key = ".".join(["a"] * 2000)
    with pytest.raises(HParamsError, match="2,000 parts") as info:
        apply_overrides({}, [key + "=1"])
    assert len(str(info.value)) < 300
    # A value nested deep under a long key: the sum is checked.
    with pytest.raises(HParamsError, match="nested deeper than 64 levels"):
        apply_overrides({}, [".".join(["a"] * 60) + "=[[[[[[1]]]]]]"])


def test_a_yaml_error_is_one_line_with_its_place(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("a: {b: 1\n")
    with pytest.raises(HParamsError) as info:
        HParams.from_yaml(path, None, allow_new_hparam=True)
    message = str(info.value)
    assert str(path) in message and "line 2, column 1" in message and "\n" not in message


def test_a_config_file_larger_than_the_limit_is_refused_and_the_limit_can_be_raised(
    tmp_path, monkeypatch
):
    from texkit import files

    path = tmp_path / "config.yaml"
    path.write_text("encoder:\n  num_blocks: 6\n")
    size = path.stat().st_size
    monkeypatch.setattr(files, "MAX_CONFIG_BYTES", size - 1)
    with pytest.raises(HParamsError, match=f"{size:,} bytes") as info:
        HParams.from_yaml(path, model_defaults())
    assert "MAX_CONFIG_BYTES" in str(info.value)
    monkeypatch.setattr(files, "MAX_CONFIG_BYTES", size)
    assert HParams.from_yaml(path, model_defaults()).encoder.num_blocks == 6


def test_a_huge_python_int_is_reported_without_printing_it():
    # repr() of an int past 4,300 digits raises ValueError; the message says its size instead.
    with raises_at("num_blocks", "5,000 digits"):
        tx.modules.TransformerEncoder({"num_blocks": 10**4999})
