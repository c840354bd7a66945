"""Experiments as data: the builders a YAML file can name, and the data they hand to the Trainer.

An experiment file has five sections::

    model:        {type: <a registered model builder>, hparams: {...}}
    data:         {type: <a registered data builder>, hparams: {...}}
    optimization: {...}   # texkit.run.optimizer_from_hparams
    distribution: {...}   # texkit.run.strategy_from_hparams
    run:          {...}   # texkit.run.Trainer: steps, checkpoints, evaluation, precision

A YAML file can only *name* code, never import it: ``type`` resolves through
:mod:`texkit.registry`, and only to functions declared with :func:`model_builder` or
:func:`data_builder`. Code of one's own is registered by importing it, e.g. with
``texkit train experiment.yaml --include my_models.py``, where ``my_models.py`` holds::

    @tx.run.data_builder({"batch_size": 32, "name": "toy_data"})
    def toy_data(hparams):
        return tx.run.Data(train=..., eval=...)

    @tx.run.model_builder({"units": 16, "name": "toy_model"})
    def toy_model(hparams, data):
        return keras.Sequential([...])
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from texkit import registry
from texkit.errors import Problems, check_depth, hparams_scope
from texkit.hparams import HParams, HParamsError
from texkit.hparams.rules import to_plain
from texkit.run.distribution import (
    DISTRIBUTION_HPARAMS_DOC,
    check_distribution_hparams,
    default_distribution_hparams,
)
from texkit.run.optimization import (
    OPTIMIZATION_HPARAMS_DOC,
    check_optimization_hparams,
    default_optimization_hparams,
)
from texkit.run.run_config import RUN_HPARAMS_DOC, check_run_hparams, default_run_hparams

__all__ = [
    "Data",
    "EXPERIMENT_HPARAMS_DOC",
    "build_experiment",
    "data_builder",
    "default_experiment_hparams",
    "model_builder",
    "resolve_builder",
    "validate_experiment",
]

_KIND = "_texkit_builder_kind"


class Data(Mapping):
    """The splits of an experiment's data, plus what the model needs to know about them.

    Each split is a ``tf.data.Dataset`` of global batches, a function
    ``input_context -> tf.data.Dataset`` of per-replica batches (for
    ``strategy.distribute_datasets_from_function``: each worker reads its own shard), or texkit
    data (its ``make_dataset(input_context)`` is used that way; an object with only a
    ``.dataset`` gives that dataset). Training data yields ``(features, labels)`` (or
    ``(features, labels, sample_weights)``), unless the model's ``compute_loss`` reads the
    features alone.

    Args:
        preprocessor: an optional Keras layer that turns raw inputs (such as strings) into the
            model's inputs, in-graph. :meth:`texkit.run.Trainer.export` puts it in front of the
            model, so the SavedModel takes raw inputs. It must have a ``serving_input_signature``
            attribute (a ``tf.TensorSpec`` or a dict of them).
        **info: facts the model builder needs, e.g. ``vocab_size=...``, ``num_classes=...``;
            read them as attributes (``data.vocab_size``).

    Example:
        >>> features = tf.constant([[5, 9, 2], [7, 2, 0], [4, 4, 2], [8, 2, 0]])
        >>> labels = tf.constant([1, 0, 1, 0])
        >>> train_ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(2)
        >>> dev_ds = train_ds.take(1)
        >>> data = tx.run.Data(train=train_ds, eval=dev_ds, vocab_size=10)
        >>> data
        Data(splits=['eval', 'train'], info=['vocab_size'])
        >>> data["train"] is train_ds, data.vocab_size
        (True, 10)
    """

    def __init__(
        self,
        train: Any = None,
        eval: Any = None,  # noqa: A002 - the split's name
        test: Any = None,
        preprocessor: Any = None,
        **info: Any,
    ):
        splits = {"train": train, "eval": eval, "test": test}
        self._splits = {name: split for name, split in splits.items() if split is not None}
        self.preprocessor = preprocessor
        self._info = dict(info)

    def __getitem__(self, split: str) -> Any:
        if split not in self._splits:
            raise KeyError(
                f"the data has no {split!r} split; it has {sorted(self._splits) or 'none'}"
            )
        return self._splits[split]

    def __iter__(self) -> Iterator[str]:
        return iter(self._splits)

    def __len__(self) -> int:
        return len(self._splits)

    def __getattr__(self, name: str) -> Any:
        info = self.__dict__.get("_info", {})
        if name in info:
            return info[name]
        raise AttributeError(
            f"the data has no attribute {name!r}; its info: {sorted(info) or 'none'}"
        )

    def __repr__(self) -> str:
        return f"Data(splits={sorted(self._splits)}, info={sorted(self._info)})"


def _builder(
    kind: str, defaults: Mapping, name: str | None, texar_sections: Mapping | None = None
) -> Callable:
    if "name" not in defaults:
        raise HParamsError("the default hparams of a builder must have a 'name'", "name")
    frozen = copy.deepcopy(dict(defaults))
    for section in texar_sections or {}:
        if section not in frozen:
            raise HParamsError("a Texar section that the defaults do not have", section)

    def decorate(function: Callable) -> Callable:
        function.default_hparams = lambda: copy.deepcopy(frozen)
        function.texar_sections = dict(texar_sections or {})
        setattr(function, _KIND, kind)
        registry.register(function, name)
        return function

    return decorate


def model_builder(
    defaults: Mapping, name: str | None = None, texar_sections: Mapping | None = None
) -> Callable:
    """Declares and registers ``function(hparams, data) -> keras.Model`` as a model builder.

    Args:
        defaults: the builder's default hparams (validated strictly, like any texkit hparams).
        name: the registry name (default: the function's name).
        texar_sections: for ``texkit migrate``: ``{section: (texar_variable, TexkitClass)}``,
            the sections of ``defaults`` that take a module's hparams, with the variable of a
            Texar config that holds them (``{"embedder": ("emb", WordEmbedder)}``).

    The function runs inside the distribution strategy's scope and the precision policy of the
    run; it gets its validated ``HParams`` and the experiment's :class:`Data`.
    """
    return _builder("model", defaults, name, texar_sections)


def data_builder(defaults: Mapping, name: str | None = None) -> Callable:
    """Declares and registers ``function(hparams) -> texkit.run.Data`` as a data builder."""
    return _builder("data", defaults, name)


def resolve_builder(name: Any, kind: str, path: str) -> Callable:
    """The builder registered as ``name``; ``kind`` is ``'model'`` or ``'data'``.

    Raises:
        HParamsError: naming ``path``, when ``name`` is not registered or is not a builder of
            that kind.
    """
    if not isinstance(name, str) or not name:
        raise HParamsError(
            f"name a registered {kind} builder (see texkit.run.{kind}_builder), got {name!r}",
            path,
        )
    try:
        target = registry.resolve(name)
    except HParamsError as error:
        raise HParamsError(
            f"{error.message} (a {kind} builder defined in a file of your own is registered by "
            "importing it, e.g. texkit train ... --include that_file.py)",
            path,
        ) from None
    if getattr(target, _KIND, None) != kind:
        raise HParamsError(
            f"{name!r} is not a {kind} builder; declare it with texkit.run.{kind}_builder", path
        )
    return target


# The sections of an experiment that configure the run: each one's defaults and documentation.
_RUN_SECTIONS = {
    "optimization": (default_optimization_hparams, OPTIMIZATION_HPARAMS_DOC),
    "distribution": (default_distribution_hparams, DISTRIBUTION_HPARAMS_DOC),
    "run": (default_run_hparams, RUN_HPARAMS_DOC),
}

EXPERIMENT_HPARAMS_DOC = {
    "model.type": "The registered model builder (texkit.run.model_builder).",
    "model.hparams": "The model builder's hparams (validated against its defaults).",
    "data.type": "The registered data builder (texkit.run.data_builder).",
    "data.hparams": "The data builder's hparams (validated against its defaults).",
    **{
        f"{section}.{key}": doc
        for section, (_, docs) in _RUN_SECTIONS.items()
        for key, doc in docs.items()
    },
    "name": "Name of the experiment.",
}


def default_experiment_hparams() -> dict:
    """Defaults of an experiment file (see the module docstring); ``run`` is the Trainer's."""
    builders = {kind: {"type": None, "hparams": {}} for kind in ("model", "data")}
    sections = {section: defaults() for section, (defaults, _) in _RUN_SECTIONS.items()}
    return {**builders, **sections, "name": "experiment"}


def validate_experiment(hparams: Mapping | HParams) -> HParams:
    """The experiment's hparams, validated in full before anything is built.

    Every section is checked, and ``model.hparams`` and ``data.hparams`` against their builders'
    defaults; every problem found is in the one :class:`~texkit.hparams.HParamsError` raised,
    each naming its key.
    """
    check_depth(hparams)  # before anything walks it recursively
    problems = Problems()
    hp = None
    with problems.check():
        hp = HParams(hparams, default_experiment_hparams())
    raw = to_plain(hparams)
    builders = {}
    for kind in ("model", "data"):
        section = raw.get(kind) if isinstance(raw, Mapping) else None
        if not isinstance(section, Mapping):
            continue  # reported above
        with problems.check():
            builder = resolve_builder(section.get("type"), kind, f"{kind}.type")
            user = section.get("hparams") or {}
            try:
                builders[kind] = HParams(user, builder.default_hparams()).todict()
            except HParamsError as error:
                raise error.relocated(lambda path, kind=kind: _nested(kind, path)) from None
    if hp is not None:
        with problems.check():
            check_run_hparams(hp.run)
        for section, check in (("optimization", check_optimization_hparams),
                               ("distribution", check_distribution_hparams)):  # fmt: skip
            with problems.check(), hparams_scope(section):
                check(hp[section])
    problems.raise_if_any()
    resolved = hp.todict()
    for kind, builder_hparams in builders.items():
        resolved[kind]["hparams"] = builder_hparams
    return HParams(resolved, default_experiment_hparams())


def _nested(kind: str, path: str) -> str:
    return f"{kind}.hparams.{path}" if path else f"{kind}.hparams"


@contextlib.contextmanager
def _naming_the_builder(name: str, section: str) -> Iterator[None]:
    """A builder's own ValueError or TypeError (not an HParamsError, which names its key) says
    which builder and section it came from."""
    try:
        yield
    except HParamsError:
        raise
    except (ValueError, TypeError) as error:
        message = f"the {section} builder {name!r} failed with its {section}.hparams: {error}"
        try:
            named = type(error)(message)
        except Exception:  # noqa: BLE001 - a type that takes other arguments
            named = ValueError(message)
        raise named from error


def build_experiment(hp: HParams) -> tuple[Any, Callable[[], Any]]:
    """The data of a validated experiment (its data builder called now) and a ``model_fn`` that
    calls its model builder on them; a builder's own error names the builder."""
    data_fn = resolve_builder(hp.data.type, "data", "data.type")
    build_model = resolve_builder(hp.model.type, "model", "model.type")
    with _naming_the_builder(hp.data.type, "data"):
        data = data_fn(hp.data.hparams)

    def model_fn() -> Any:
        with _naming_the_builder(hp.model.type, "model"):
            return build_model(hp.model.hparams, data)

    return data, model_fn
