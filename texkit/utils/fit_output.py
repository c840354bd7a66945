"""What Keras' ``fit``, ``evaluate`` and ``predict`` print: progress that suits where stdout
goes, and Keras' input warnings only where they say something.

* **Progress.** Keras' progress bar (``verbose=1``) redraws its line with backspaces, carriage
  returns and ANSI codes whenever it decides the display is dynamic, which on Linux is always: with
  stdout a file or a pipe (a CI log, ``nohup``, ``tee``) each epoch becomes one line of thousands
  of control characters. :func:`keras_verbose` keeps the bar for a terminal and gives Keras'
  ``verbose=2`` (one line per epoch) otherwise.
* **The end of the data.** Keras warns "Your input ran out of data; interrupting training"
  whenever it reads a dataset of unknown length (e.g. one with a ``filter``) to its end, also
  when that is what was asked: an ``evaluate`` or ``predict`` without ``steps``, a ``fit``
  epoch without ``steps_per_epoch``, a validation without ``validation_steps``. Where the steps
  were given and the data has fewer batches, the warning says something, and it is kept.
  :func:`end_of_data_expected` and :class:`EndOfDataExpected` silence it where the whole data
  was asked for, and nowhere else.
* :class:`KerasFitDefaults` puts both into a Keras model's ``fit``, ``evaluate`` and
  ``predict`` (texkit's task and learning models), and gives ``fit`` on a ``tf.data.Dataset``
  ``shuffle=False`` when the caller did not choose: Keras' default ``shuffle=True`` does nothing
  to a dataset but warn that it is ignored. Every other argument keeps Keras' meaning.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import keras
import tensorflow as tf
from keras.callbacks import CallbackList

__all__ = [
    "RAN_OUT_OF_DATA",
    "EndOfDataExpected",
    "KerasFitDefaults",
    "end_of_data_expected",
    "is_terminal",
    "keras_verbose",
]

# The start of Keras' warning (keras/src/trainers/epoch_iterator.py), as a warnings filter
# matches it: a regular expression matched at the start of the message.
RAN_OUT_OF_DATA = "Your input ran out of data"


def is_terminal(stream: Any = None) -> bool:
    """Whether ``stream`` (default: ``sys.stdout``) is a terminal; an object without a working
    ``isatty`` (a stand-in stream, a closed file) is not."""
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def keras_verbose(verbose: int | str, stream: Any = None) -> int | str:
    """The ``verbose`` to give Keras for a progress setting, given where output goes.

    ``1`` and Keras' ``"auto"`` mean a progress bar on a terminal and one line per epoch
    (Keras' ``2``) when ``stream`` (default: ``sys.stdout``) is not a terminal; ``0`` and ``2``
    are kept, as is any other value (for Keras to judge).
    """
    if verbose in (1, "auto") and not isinstance(verbose, bool):
        return 1 if is_terminal(stream) else 2
    return verbose


def _ignore_ran_out() -> None:
    warnings.filterwarnings(
        "ignore", message=RAN_OUT_OF_DATA, category=UserWarning, module=r"keras\."
    )


@contextlib.contextmanager
def end_of_data_expected(expected: bool = True) -> Iterator[None]:
    """A context in which Keras' "ran out of data" warning is silenced when ``expected`` (the
    whole data was asked for: no ``steps``); other warnings and filters are kept."""
    if not expected:  # no scope of its own: fit's callbacks may open and close theirs inside
        yield
        return
    with warnings.catch_warnings():
        _ignore_ran_out()
        yield


class EndOfDataExpected(keras.callbacks.Callback):
    """A ``fit`` callback that silences Keras' "ran out of data" warning in the phases that
    read their data to the end by design: the training epochs when ``train``, the validation
    when ``validation``.

    Each phase's filter is scoped between its ``on_*_begin`` and ``on_*_end`` (an epoch's
    training ends where its validation begins); give ``fit`` inside ``warnings.catch_warnings()``
    so that a ``fit`` stopped by an error leaves no filter behind.
    """

    def __init__(self, train: bool, validation: bool):
        super().__init__()
        self.train, self.validation = train, validation
        self._scope: Any = None

    def _enter(self, expected: bool) -> None:
        self._exit()
        if expected:
            self._scope = warnings.catch_warnings()
            self._scope.__enter__()
            _ignore_ran_out()

    def _exit(self) -> None:
        if self._scope is not None:
            scope, self._scope = self._scope, None
            scope.__exit__(None, None, None)

    def on_train_begin(self, logs: Any = None) -> None:
        # A scope left by a fit that raised was already undone by the caller's catch_warnings.
        self._scope = None

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._enter(self.train)

    def on_test_begin(self, logs: Any = None) -> None:
        self._enter(self.validation)

    def on_test_end(self, logs: Any = None) -> None:
        self._exit()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._exit()

    def on_train_end(self, logs: Any = None) -> None:
        self._exit()


def _is_dataset(x: Any) -> bool:
    return isinstance(x, (tf.data.Dataset, tf.distribute.DistributedDataset))


class KerasFitDefaults:
    """A mixin for a ``keras.Model`` (listed before it): ``fit``, ``evaluate`` and ``predict``
    with progress that suits stdout, no "ran out of data" warning where the whole data was
    asked for, and ``shuffle=False`` for a dataset (see the module). Arguments are Keras'."""

    def fit(self, *args: Any, **kwargs: Any) -> Any:
        """Keras' ``fit`` (see :class:`KerasFitDefaults`)."""
        arguments = _bound(keras.Model.fit, self, args, kwargs)
        arguments["verbose"] = keras_verbose(arguments.get("verbose", "auto"))
        if "shuffle" not in arguments and _is_dataset(arguments.get("x")):
            arguments["shuffle"] = False
        callbacks = arguments.get("callbacks") or []
        # A CallbackList (which Keras takes too) is the caller's, configured: it is given as it
        # is, and Keras' warning then stays.
        if not isinstance(callbacks, CallbackList) and not any(
            isinstance(c, EndOfDataExpected)
            for c in callbacks  # the Trainer's
        ):
            quiet = EndOfDataExpected(
                train=arguments.get("steps_per_epoch") is None,
                validation=arguments.get("validation_steps") is None,
            )
            arguments["callbacks"] = [*callbacks, quiet]
        with warnings.catch_warnings():
            return super().fit(**arguments)  # type: ignore[misc]

    def evaluate(self, *args: Any, **kwargs: Any) -> Any:
        """Keras' ``evaluate`` (see :class:`KerasFitDefaults`)."""
        arguments = _bound(keras.Model.evaluate, self, args, kwargs)
        arguments["verbose"] = keras_verbose(arguments.get("verbose", "auto"))
        # fit's validation: fit's EndOfDataExpected callback scopes the filter.
        expected = arguments.get("steps") is None and not arguments.get("_use_cached_eval_dataset")
        with end_of_data_expected(expected):
            return super().evaluate(**arguments)  # type: ignore[misc]

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Keras' ``predict`` (see :class:`KerasFitDefaults`)."""
        arguments = _bound(keras.Model.predict, self, args, kwargs)
        arguments["verbose"] = keras_verbose(arguments.get("verbose", "auto"))
        with end_of_data_expected(arguments.get("steps") is None):
            return super().predict(**arguments)  # type: ignore[misc]


def _bound(method: Any, model: Any, args: tuple, kwargs: dict) -> dict:
    """The arguments of a call of Keras' ``method``, by name (only those given)."""
    bound = inspect.signature(method).bind(model, *args, **kwargs).arguments
    bound.pop("self", None)
    extra = bound.pop("kwargs", None)  # evaluate's **kwargs (fit's validation passes some)
    return {**bound, **(extra or {})}
