"""Tests of texkit.registry: what a ``type`` in hparams may name, and what it may not."""

import texkit as tx  # noqa: I001  (first: texkit picks the Keras backend)

import importlib
import os
import sys
import types
import uuid

import keras
import pytest
import tensorflow as tf

from texkit import HParams, HParamsError, registry


@pytest.fixture
def isolated_registry(monkeypatch):
    """Registrations made by a test are undone after it."""
    registry.registered_names()  # loads the built-in names into the table copied below
    monkeypatch.setattr(registry, "_NAMES", dict(registry._NAMES))
    monkeypatch.setattr(registry, "_NAMESPACES", set(registry._NAMESPACES))
    monkeypatch.setattr(registry, "_FUNCTION_NAMESPACES", set(registry._FUNCTION_NAMESPACES))


def _user_module(monkeypatch, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# -- built-in names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("LSTMCell", keras.layers.LSTMCell),
        ("GRUCell", keras.layers.GRUCell),
        ("Dense", keras.layers.Dense),
        ("TruncatedNormal", keras.initializers.TruncatedNormal),
        ("gelu", keras.activations.gelu),
        ("Adam", keras.optimizers.Adam),
        ("PolynomialDecay", keras.optimizers.schedules.PolynomialDecay),
    ],
)
def test_builtin_names_resolve_to_keras_objects(name, expected):
    assert registry.resolve(name) is expected
    assert name in registry.registered_names()


@pytest.mark.parametrize("name", ["WordEmbedder", "PositionEmbedder", "SinusoidsPositionEmbedder"])
def test_texkit_classes_resolve_by_name(name):
    assert registry.resolve(name) is getattr(tx.modules, name)


@pytest.mark.parametrize(
    "path, expected",
    [
        ("keras.layers.Dense", keras.layers.Dense),
        ("keras.initializers.GlorotUniform", keras.initializers.GlorotUniform),
        ("keras.layers.Attention", keras.layers.Attention),
        ("keras.optimizers.schedules.CosineDecay", keras.optimizers.schedules.CosineDecay),
        ("tensorflow.nn.relu", tf.nn.relu),
        ("tensorflow.math.tanh", tf.math.tanh),
        ("texkit.modules.WordEmbedder", tx.modules.WordEmbedder),
        ("texkit.modules.embedders.PositionEmbedder", tx.modules.PositionEmbedder),
    ],
)
def test_dotted_paths_under_allowed_prefixes_resolve(path, expected):
    assert registry.resolve(path) is expected


# -- refused names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "os.system",
        "subprocess.Popen",
        "builtins.eval",
        "keras.__builtins__",
        "keras.src.backend.config.os.system",
        "keras.layers._private",
        "keras.src.layers.core.dense.Dense.__init__",
        "keras_lookalike.layers.Dense",
        "keras.layers",
        "texkit.hparams.yaml.unsafe_load",
        "keras.layers.Dense..x",
    ],
)
def test_refused_paths_raise_hparams_error(path):
    with pytest.raises(HParamsError):
        registry.resolve(path)


def test_module_reached_inside_keras_is_refused():
    config = importlib.import_module("keras.src.backend.config")
    assert config.os is os  # the path below would reach os.system if it were followed
    with pytest.raises(HParamsError, match="os"):
        registry.resolve("keras.src.backend.config.os.system")


def test_object_imported_into_keras_from_elsewhere_is_refused():
    file_utils = importlib.import_module("keras.src.utils.file_utils")
    assert file_utils.urlretrieve.__module__ == "urllib.request"
    with pytest.raises(HParamsError, match="refusing"):
        registry.resolve("keras.src.utils.file_utils.urlretrieve")


@pytest.mark.parametrize(
    "path",
    [
        "tensorflow.io.gfile.rmtree",  # deletes a folder
        "tensorflow.io.write_file",
        "tensorflow.io.TFRecordWriter",  # a class that truncates a file when built
        "tensorflow.keras.utils.get_file",  # downloads
        "keras.config.enable_unsafe_deserialization",
        "keras.saving.deserialize_keras_object",
        "keras.saving.load_model",
        "keras.layers.deserialize",  # builds any object from a config
        "keras.optimizers.get",
        "keras.layers.Lambda",  # wraps code
        "keras.layers.TFSMLayer",  # wraps a saved graph
        "keras.layers",  # a namespace, not a class
        "keras.src.layers.core.dense.Dense",  # internal paths are not public namespaces
        "texkit.registry.register",
        "texkit.hparams.apply_overrides",
    ],
)
def test_functions_with_side_effects_are_refused(path, tmp_path):
    with pytest.raises(HParamsError, match="refusing"):
        registry.resolve(path)


def test_a_config_cannot_delete_a_folder(tmp_path):
    victim = tmp_path / "keep"
    victim.mkdir()
    hparams = {
        "initializer": {"type": "tensorflow.io.gfile.rmtree", "kwargs": {"path": str(victim)}}
    }
    with pytest.raises(HParamsError, match="refusing"):
        tx.modules.WordEmbedder(vocab_size=3, hparams=hparams)
    assert victim.is_dir()


def test_refused_path_imports_nothing():
    assert "this" not in sys.modules  # importing it prints the Zen of Python
    with pytest.raises(HParamsError):
        registry.resolve("this.s")
    assert "this" not in sys.modules


@pytest.mark.parametrize("name", [None, "", 3, keras.layers.Dense])
def test_non_string_or_empty_name_is_refused(name):
    with pytest.raises(HParamsError):
        registry.resolve(name)


@pytest.mark.parametrize(
    "typo, suggestion",
    [("LSTMcell", "LSTMCell"), ("Adamm", "Adam"), ("TruncatedNormall", "TruncatedNormal")],
)
def test_unknown_name_suggests_close_matches(typo, suggestion):
    with pytest.raises(HParamsError, match=f"'{suggestion}'"):
        registry.resolve(typo)


def test_unknown_attribute_of_allowed_module_is_an_error():
    with pytest.raises(HParamsError, match="Dence"):
        registry.resolve("keras.layers.Dence")


# -- registering ------------------------------------------------------------------------------


def test_register_user_class(isolated_registry):
    name = _unique("UserCell")
    cell = type(name, (keras.layers.Layer,), {})
    with pytest.raises(HParamsError):
        registry.resolve(name)
    assert registry.register(cell) is cell
    assert registry.resolve(name) is cell
    assert registry.name_of(cell) == name
    defaults = {"cell": {"type": "LSTMCell", "kwargs": {"units": 8}}}
    assert HParams({"cell": {"type": cell}}, defaults).cell.type == name


def test_register_under_a_chosen_name_and_as_a_decorator(isolated_registry):
    name = _unique("custom_activation")

    @registry.register
    def doubled(x):
        return 2 * x

    registry.register(doubled, name)
    assert registry.resolve("doubled") is doubled
    assert registry.resolve(name) is doubled


def test_register_a_different_object_under_a_taken_name_raises(isolated_registry):
    class NotAnLSTMCell(keras.layers.Layer):
        pass

    with pytest.raises(HParamsError, match="LSTMCell"):
        registry.register(NotAnLSTMCell, "LSTMCell")
    assert registry.resolve("LSTMCell") is keras.layers.LSTMCell

    name = _unique("Taken")
    first = type("First", (), {})
    second = type("Second", (), {})
    registry.register(first, name)
    registry.register(first, name)  # the same object again is fine
    with pytest.raises(HParamsError, match=name):
        registry.register(second, name)
    assert registry.resolve(name) is first


def test_register_refuses_what_is_not_a_class_function_or_module(isolated_registry):
    with pytest.raises(HParamsError):
        registry.register(3, "three")


def test_register_user_module(isolated_registry, monkeypatch):
    module_name = _unique("texkit_test_user_module")
    module = _user_module(monkeypatch, module_name)
    cell = type("UserCell", (keras.layers.Layer,), {"__module__": module_name})
    module.UserCell = cell
    module.system = os.system  # importing os.system into the module must not make it reachable
    with pytest.raises(HParamsError):
        registry.resolve(f"{module_name}.UserCell")

    assert registry.register(module) is module
    assert registry.resolve(f"{module_name}.UserCell") is cell
    with pytest.raises(HParamsError):
        registry.resolve(f"{module_name}.system")
    with pytest.raises(HParamsError):
        registry.resolve(f"{module_name}_suffix.UserCell")


def test_register_user_submodule(isolated_registry, monkeypatch):
    package_name = _unique("texkit_test_user_package")
    package = _user_module(monkeypatch, package_name)
    submodule = _user_module(monkeypatch, f"{package_name}.cells")
    package.cells = submodule
    cell = type("UserCell", (keras.layers.Layer,), {"__module__": submodule.__name__})
    submodule.UserCell = cell
    outside = type("Outside", (), {"__module__": package_name})
    package.Outside = outside

    registry.register(submodule)
    assert registry.resolve(f"{package_name}.cells.UserCell") is cell
    with pytest.raises(HParamsError):
        registry.resolve(f"{package_name}.Outside")  # only the registered submodule is allowed


# -- name_of ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj, name",
    [
        (keras.layers.LSTMCell, "LSTMCell"),
        (keras.initializers.TruncatedNormal, "TruncatedNormal"),
        (keras.activations.gelu, "gelu"),
        (keras.optimizers.Adam, "Adam"),
        (tx.modules.WordEmbedder, "WordEmbedder"),
    ],
)
def test_name_of_registered_object_is_its_registered_name(obj, name):
    assert registry.name_of(obj) == name
    assert registry.resolve(registry.name_of(obj)) is obj


@pytest.mark.parametrize("obj", [keras.layers.Attention, keras.layers.MultiHeadAttention])
def test_name_of_unregistered_keras_class_round_trips(obj):
    name = registry.name_of(obj)
    assert isinstance(name, str) and name.startswith("keras.")
    assert registry.resolve(name) is obj


def test_name_of_what_cannot_be_named_is_none():
    class Local:
        pass

    assert registry.name_of(Local) is None
    assert registry.name_of(os.system) is None
    assert registry.name_of(eval) is None


@pytest.mark.parametrize(
    "path",
    [
        "texkit.core.layers.keras.src.backend.tensorflow.core.tf.io.TFRecordWriter",
        "texkit.modules.embedders.keras.callbacks.CSVLogger",
        "texkit.core.layers.keras.src.layers.core.dense.Dense",
        "texkit.core.layers.registry.register",
        "keras.layers.keras.src.saving.saving_lib.DiskIOStore",
    ],
)
def test_paths_through_imported_modules_are_refused(path):
    with pytest.raises(HParamsError):
        registry.resolve(path)


def test_a_config_cannot_truncate_a_file_through_an_imported_module(tmp_path):
    victim = tmp_path / "data.txt"
    victim.write_text("keep me")
    path = "texkit.core.layers.keras.src.backend.tensorflow.core.tf.io.TFRecordWriter"
    defaults = {"writer": {"type": "Adam", "kwargs": {}}, "name": "x"}
    with pytest.raises(HParamsError, match="refusing"):
        hp = HParams({"writer": {"type": path, "kwargs": {"path": str(victim)}}}, defaults)
        tx.core.get_instance(hp.writer)
    assert victim.read_text() == "keep me"


def test_a_registered_package_opens_only_its_own_code(monkeypatch, isolated_registry, tmp_path):
    package = _user_module(monkeypatch, _unique("mylib"))
    package.tf = tf  # the package imports TensorFlow, as packages do
    package.rmtree = tf.io.gfile.rmtree  # and re-exports a function of it

    def scale(x, factor=2.0):
        return x * factor

    scale.__module__ = package.__name__
    package.scale = scale
    registry.register(package)
    assert registry.resolve(f"{package.__name__}.scale") is scale
    victim = tmp_path / "keep"
    victim.mkdir()
    for path in (f"{package.__name__}.tf.io.gfile.rmtree", f"{package.__name__}.rmtree"):
        with pytest.raises(HParamsError, match="refusing"):
            registry.resolve(path)
    assert victim.is_dir()
