"""The reward contract: :class:`Samples` in, one float score per sampled sequence out.

A policy-gradient trainer samples ``k`` sequences for each of its ``b`` inputs, packs the
``n = b * k`` samples into a :class:`Samples` and calls a :class:`Reward` on them inside its
compiled training step::

    samples = tx.rewards.Samples(ids=ids, lengths=lengths, texts=texts, features=features)
    values = reward(samples)  # float32 [n]

Two kinds of reward run there:

* in-graph rewards (``reward.in_graph`` is ``True``: :class:`~texkit.rewards.ExactMatch`,
  :class:`~texkit.rewards.ClassifierProbability`, a :class:`~texkit.rewards.FunctionReward` with
  ``python=False``) are TensorFlow ops: they run in ``tf.function``, under every
  ``tf.distribute`` strategy and, over ids, with ``jit_compile=True`` and on TPUs (string ops,
  which rewards over texts use, do not compile with XLA);
* host rewards (``in_graph`` is ``False``: :class:`~texkit.rewards.SentenceBLEU`, a
  :class:`~texkit.rewards.FunctionReward` in Python) run Python on the host through
  ``tf.numpy_function``: the compiled step stops at that op, hands the tensors to Python as NumPy
  arrays and takes the scores back. That works eagerly, in ``tf.function`` and under
  ``MirroredStrategy`` on CPUs and GPUs (each replica calls Python on its own samples), but not
  under ``jit_compile=True`` nor on TPUs, whose programs cannot call the host:
  :func:`check_reward_runs_on` says so before training starts.

Every reward's values are checked, whichever kind it is: a ``[n]`` floating tensor (cast to
float32), finite. A wrong shape or dtype fails when the step is traced; a NaN or infinite value
fails when it happens, with an error naming the reward (``tf.debugging`` in the graph; under
``jit_compile=True`` XLA drops assertions, so only the static checks remain there). Rewards are
not differentiated: the values come out under ``tf.stop_gradient``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from texkit import registry

__all__ = ["MissingFeatureError", "Reward", "Samples", "check_reward_runs_on", "feature"]


class Samples(NamedTuple):
    """``n`` sampled sequences and what a reward may need to score them.

    Attributes:
        ids: int32 ``[n, T]``, the sampled tokens after the prompt or start token; positions at
            or past ``lengths`` are padding.
        lengths: int32 ``[n]``, each sample's length (a sampled end token counts).
        texts: tf.string ``[n]``, the detokenized samples without end token and padding, or
            ``None`` when the policy cannot detokenize.
        features: a dict of tensors whose first dimension is ``n``: the batch's features repeated
            per sample (row ``i * k + j`` is input ``i``'s ``j``-th sample), e.g. reference texts
            or ids. Ragged and sparse tensors may be among them; a reward that reads one of its
            features needs that one dense.
    """

    ids: Any
    lengths: Any
    texts: Any = None
    features: Mapping[str, Any] | None = None


def register(cls: type) -> type:
    """Makes a reward class a ``type`` that hparams can name (see :func:`as_reward`)."""
    return registry.register(cls)


class Reward:
    """Base class of rewards: ``reward(samples)`` gives float32 ``[n]``, one score per sample.

    Subclasses implement :meth:`compute` (and set ``in_graph = False`` when it calls Python on
    the host); ``__call__`` checks the samples and the values, so a subclass need not.

    Args:
        name: the name errors and logs use (default: the class name).
    """

    in_graph: bool = True
    """``True``: TensorFlow ops only. ``False``: Python on the host through
    ``tf.numpy_function`` (not under ``jit_compile`` nor on TPUs; see the module docstring)."""

    def __init__(self, name: str | None = None):
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"name must be a non-empty string or None, got {name!r}")
        self.name = name or type(self).__name__

    def __repr__(self) -> str:
        if self.name == type(self).__name__:
            return f"<{self.name}>"
        return f"<{type(self).__name__} {self.name!r}>"

    @property
    def display_name(self) -> str:
        """How errors name this reward: its class, and its name if that differs."""
        kind = type(self).__name__
        return kind if self.name == kind else f"{kind} {self.name!r}"

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {"name": self.name}

    def compute(self, samples: Samples) -> Any:
        """The scores of ``samples``, ``[n]`` (checked by ``__call__``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute(samples)")

    def __call__(self, samples: Samples) -> tf.Tensor:
        """Scores ``samples``: float32 ``[n]``, checked, under ``tf.stop_gradient``.

        Raises:
            TypeError: ``samples`` is not a :class:`Samples` of tensors of the documented kinds,
                or the reward gives values that are not floats.
            ValueError: the reward gives values that are not of shape ``[n]``.
            MissingFeatureError: the reward reads a feature the samples do not have.
            tf.errors.InvalidArgumentError: the reward gives a NaN or an infinite value (also a
                shape mismatch only known when the step runs).

        A host reward checks its values in Python: its errors are raised as they are eagerly,
        and as ``tf.errors.InvalidArgumentError`` holding their message in a ``tf.function``.
        """
        samples = check_samples(samples, self.display_name)
        values = self.compute(samples)
        return tf.stop_gradient(check_values(values, samples.ids, self.display_name))


def check_samples(samples: Any, label: str) -> Samples:
    """``samples`` with tensors for its fields, or an error naming the field that is wrong."""
    if not isinstance(samples, Samples):
        raise TypeError(f"{label}: expected a texkit.rewards.Samples, got {type(samples).__name__}")
    ids = _tensor(samples.ids, "samples.ids", label)
    lengths = _tensor(samples.lengths, "samples.lengths", label)
    if not ids.dtype.is_integer or ids.shape.rank not in (None, 2):
        raise TypeError(f"{label}: samples.ids must be integer [n, T], got {describe(ids)}")
    if not lengths.dtype.is_integer or lengths.shape.rank not in (None, 1):
        raise TypeError(f"{label}: samples.lengths must be integer [n], got {describe(lengths)}")
    texts = samples.texts
    if texts is not None:
        texts = _tensor(texts, "samples.texts", label)
        if texts.dtype != tf.string or texts.shape.rank not in (None, 1):
            raise TypeError(f"{label}: samples.texts must be tf.string [n], got {describe(texts)}")
    features = samples.features if samples.features is not None else {}
    if not isinstance(features, Mapping):
        raise TypeError(
            f"{label}: samples.features must be a dict of tensors, got {type(features).__name__}"
        )
    features = {
        key: _tensor(value, f"samples.features[{key!r}]", label, composite=True)
        for key, value in features.items()
    }
    n = ids.shape[0]
    for what, tensor in [("samples.lengths", lengths), ("samples.texts", texts)] + [
        (f"samples.features[{key!r}]", value) for key, value in features.items()
    ]:
        if tensor is None or n is None or tensor.shape.rank is None:
            continue
        if tensor.shape.rank == 0 or tensor.shape[0] not in (None, n):
            raise ValueError(
                f"{label}: {what} has shape {tensor.shape.as_list()}, but samples.ids has "
                f"{n} samples (shape {ids.shape.as_list()}); every field's first dimension is n"
            )
    return Samples(ids, lengths, texts, features)


def _tensor(value: Any, what: str, label: str, composite: bool = False) -> Any:
    if isinstance(value, tf.Tensor) or composite and isinstance(value, _COMPOSITE):
        return value
    try:
        return tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{label}: {what} must be a tensor, got {type(value).__name__}") from error


def describe(tensor: tf.Tensor) -> str:
    """``float32 of shape [2, 3]``: a tensor's dtype and shape, for error messages."""
    shape = "unknown rank" if tensor.shape.rank is None else f"shape {tensor.shape.as_list()}"
    return f"{tensor.dtype.name} of {shape}"


# Features may be ragged or sparse; the rewards that read one need it dense (see feature()).
_COMPOSITE = (tf.RaggedTensor, tf.SparseTensor)


class MissingFeatureError(KeyError):
    """A reward needs a feature the samples do not have (a ``KeyError`` whose message reads
    as written, without ``KeyError``'s quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def feature(samples: Samples, key: str, label: str, argument: str = "reference_key") -> tf.Tensor:
    """``samples.features[key]``, or an error naming ``argument`` and the features there are."""
    features = samples.features or {}
    if key not in features:
        there = ", ".join(map(repr, sorted(features))) or "none"
        raise MissingFeatureError(
            f"{label}: {argument}={key!r} is not among the samples' features (there are: "
            f"{there}); the trainer repeats the batch's features per sample"
        )
    value = features[key]
    if not isinstance(value, tf.Tensor):
        raise TypeError(
            f"{label}: {argument}={key!r} names a {type(value).__name__}; this reward needs a "
            "dense tensor there"
        )
    return value


def check_values(values: Any, ids: tf.Tensor, label: str) -> tf.Tensor:
    """``values`` as float32 ``[n]`` (``n`` from ``ids``), checked in the graph.

    Static problems (dtype, rank, a known size) raise at once; a NaN or infinite value, and a
    size only known when the step runs, fail through ``tf.debugging`` assertions.
    """
    if not isinstance(values, (tf.Tensor, tf.Variable)):
        try:
            values = tf.convert_to_tensor(values)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{label} gave {type(values).__name__} values, not a float tensor [n]"
            ) from error
    if not values.dtype.is_floating:
        raise TypeError(
            f"{label} gave {values.dtype.name} values ({describe(values)}); rewards are floats "
            "[n], one per sample (cast them to float32)"
        )
    n = ids.shape[0]
    rank = values.shape.rank
    if rank is not None and (rank != 1 or values.shape[0] not in (None, n) and n is not None):
        raise ValueError(
            f"{label} gave values of shape {values.shape.as_list()}, but there are "
            f"{n if n is not None else 'n'} samples: a reward gives shape [n], one value each"
        )
    values = tf.cast(values, tf.float32)
    checks = [
        tf.debugging.assert_equal(
            tf.shape(values),
            tf.shape(ids)[:1],
            message=f"{label} gave values of another shape than [n] (n samples)",
        )
    ]
    with tf.control_dependencies(checks):
        return tf.debugging.assert_all_finite(values, f"{label} gave a NaN or infinite value")


def check_host_values(values: Any, n: int, label: str) -> np.ndarray:
    """A host reward's ``values`` as float32 ``[n]`` in NumPy, or an error naming ``label``."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{label} gave a string, not a sequence of {n} floats")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{label} gave {type(values).__name__}, not {n} floats") from error
    if not np.issubdtype(array.dtype, np.floating):
        kind = {"b": "bool", "i": "int", "u": "int", "U": "string", "S": "string"}.get(
            array.dtype.kind, array.dtype.name
        )
        raise TypeError(
            f"{label} gave {kind} values (dtype {array.dtype}); rewards are floats, one per "
            "sample (return floats, e.g. float(x))"
        )
    if array.shape != (n,):
        raise ValueError(
            f"{label} gave values of shape {list(array.shape)} for {n} samples: a reward "
            "gives one value per sample, shape [n]"
        )
    with np.errstate(over="ignore"):  # too large for float32: inf, refused below
        array = array.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(
            f"{label} gave a NaN or infinite value as float32 ({array[bad[0]]} for sample "
            f"{bad[0]}, {bad.size} in all)"
        )
    return array


def check_reward_runs_on(
    reward: Reward, strategy: tf.distribute.Strategy | None = None, jit_compile: bool = False
) -> None:
    """Raises if ``reward`` cannot run in a training step under ``strategy`` / ``jit_compile``.

    A host reward (``in_graph`` is ``False``) calls Python through ``tf.numpy_function``, which
    neither XLA (``jit_compile=True``) nor a TPU program can do. Trainers call this before
    training so that the problem shows at once, not at the first step.

    Args:
        reward: the reward.
        strategy: the training strategy (default: none, i.e. the default strategy).
        jit_compile: whether the training step is compiled with XLA.

    Raises:
        TypeError: ``reward`` is not a :class:`Reward`.
        ValueError: ``reward`` runs Python and the step cannot call it.
    """
    if not isinstance(reward, Reward):
        raise TypeError(
            f"reward must be a texkit.rewards.Reward (see texkit.rewards.as_reward), got "
            f"{type(reward).__name__}"
        )
    if reward.in_graph:
        return
    where = None
    if jit_compile:
        where = "a step compiled with jit_compile=True (XLA)"
    elif strategy is not None and isinstance(strategy, _tpu_strategies()):
        where = "a TPU"
    if where is not None:
        raise ValueError(
            f"reward {reward.display_name} runs Python on the host (tf.numpy_function), which "
            f"{where} cannot call; use an in-graph reward (e.g. FunctionReward(fn, "
            "python=False) with TensorFlow ops), or train without jit_compile on CPUs or GPUs"
        )


def _tpu_strategies() -> tuple[type, ...]:
    candidates = [
        getattr(tf.distribute, "TPUStrategy", None),
        getattr(tf.distribute.experimental, "TPUStrategy", None),
    ]
    return tuple(c for c in candidates if isinstance(c, type))
