"""Loading a checked plan in two passes, one file and one part of an entry at a time, all or
nothing.

:class:`LoadPlan` pairs each variable of a family's name tables with the checkpoint entry that
fills it. Loading it holds the model, one open file and one part of an entry's values (at most
16 MiB of a local safetensors file's entry; a whole entry from other formats):

* **Pass 1, checks.** From the files' headers alone (every shard's header was read when the
  reader was made; safetensors refuses a truncated file at open): every variable has exactly
  one entry, shapes agree, no entry under the module's own names is left over. Then each file is
  opened in turn and each entry the plan uses is read part by part, checked (floating-point,
  finite unless ``allow_non_finite``) and dropped; the file is closed before the next one is
  opened. Any problem: a :class:`~texkit.pretrained.CheckpointError` listing them, naming the
  file, and nothing was assigned.
* **Pass 2, assignment.** The files are opened again one at a time; each entry is read again,
  part by part (rows of the stored entry), checked again, laid out as Keras holds it, cast to its
  variable's dtype (float16 and bfloat16 values stay so for a variable of that dtype, as a
  layer's dtype policy makes it, and are cast otherwise) and assigned to the slice of the
  variable those rows fill (a whole entry where a layout does not keep rows together: a
  transposed kernel that is also split); the file is closed before the next one.

Design note: all or nothing across the passes. Pass 2 can still fail after pass 1 passed: a file
that changed in between (its header differs when it is opened again, it was cut short, an entry
is no longer finite) or an I/O error. Holding every value until all are read would undo the
point of streaming (two copies of the model), so instead each variable's previous value is
written to an unnamed temporary file (``tempfile.TemporaryFile``, in ``$TMPDIR``; on a RAM-backed
``/tmp`` that copy is in memory) just before it is first assigned, 16 MiB at a time, and on any
failure the assigned variables get their previous values back from it before the error is
raised: the model is as it was. A model that was built for the load and is thrown away when it
fails (``from_pretrained``) needs no copy and gets none. What this cannot cover: a failure to
read the saved values back (then the error says the model is partly loaded). Files are read with
plain reads, not memory maps (:mod:`~texkit.pretrained.readers`), so a file cut short during
the load is an error, not a ``SIGBUS`` that ends the process.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import keras
import ml_dtypes
import numpy as np
import tensorflow as tf

from texkit.hparams.rules import short
from texkit.pretrained.checkpoints import (
    CONV1D,
    DENSE,
    HUGGINGFACE,
    KERAS_HUB,
    OUT_IN,
    PER_HEAD,
    CheckpointError,
    Row,
    assign_all_or_nothing,
    resolve_attribute,
    stored_shape,
    to_keras_layout,
)
from texkit.pretrained.checks import entry_names, strip_prefix
from texkit.pretrained.family import Family, Format
from texkit.pretrained.readers import CheckpointReader, WeightsReader

__all__ = ["LoadPlan", "between_passes"]

#: Called with the plan between pass 1 and pass 2 when set (``None`` by default): the place
#: where tests change a file after it was checked.
between_passes: Callable[[LoadPlan], None] | None = None


class _Target(NamedTuple):
    variable: Any
    row: Row


class LoadPlan:
    """Which entry of a checkpoint fills which variable, checked, then loaded in two passes.

    Args:
        family, fmt: the checkpoint's family and format.
        reader: the checkpoint's weights (its files' headers already read).
        allow_non_finite: load entries that hold NaN or infinite values.

    Attributes:
        problems: what is wrong, for the error (empty: the plan may load).
        used: every entry some row asked for (found), loaded or not.
        loaded: the entries that load, in table order.
        set_aside: entries of parts the model was built without (:meth:`leave`): known,
            not loaded.
    """

    def __init__(self, family: Family, fmt: Format, reader: WeightsReader,
                 allow_non_finite: bool) -> None:  # fmt: skip
        self.family, self.fmt, self.reader = family, fmt, reader
        self.allow_non_finite = allow_non_finite
        self.problems: list[str] = []
        self.used: set[str] = set()
        self.loaded: list[str] = []  # entry names, in table order
        self.set_aside: set[str] = set()
        self._targets: dict[str, list[_Target]] = {}

    def _candidates(self, row: Row) -> list[str]:
        return entry_names(self.family, row, self.fmt.name)

    def has_any(self, rows: Iterable[Row]) -> bool:
        """Whether the checkpoint holds an entry of any of ``rows``."""
        return any(c in self.reader.shapes for row in rows for c in self._candidates(row))

    def leave(self, rows: Iterable[Row]) -> None:
        """Leaves the checkpoint's entries of ``rows`` unloaded: a part the model was built
        without (a pooler nothing reads). They are not refused as unknown, and stay unused."""
        self.set_aside.update(
            c for row in rows for c in self._candidates(row) if c in self.reader.shapes
        )

    def take(self, root: Any, rows: Iterable[Row]) -> None:
        """Finds the entry of each row for the variable under ``root`` and checks its shape."""
        for row in rows:
            variable = resolve_attribute(root, row.attribute)
            candidates = self._candidates(row)
            found = [c for c in candidates if c in self.reader.shapes]
            self.used.update(found)
            if not found:
                self.problems.append(f"missing {candidates[0]!r} (for {variable.path})")
            elif len(found) > 1:
                self.problems.append(f"{found} all hold {variable.path}; expected exactly one")
            else:
                self._take(found[0], row, variable)

    def _take(self, name: str, row: Row, variable: Any) -> None:
        stored = self.reader.shapes[name]
        expected = stored_shape(variable.shape, row.layout, self.fmt.name, row.split, row.heads)
        if stored != expected:
            self.problems.append(
                f"{name!r} has shape {list(stored)}, but {variable.path} needs "
                f"{list(expected)} in the checkpoint"
            )
            return
        self._targets.setdefault(name, []).append(_Target(variable, row))
        if name not in self.loaded:  # a split entry fills several variables
            self.loaded.append(name)

    def refuse_unknown(self) -> None:
        """An entry under the module's own names that no table row took is a problem."""
        for name in sorted(set(self.reader.shapes) - self.used - self.set_aside):
            if self.fmt.own.search(strip_prefix(self.family, name)):
                self.problems.append(
                    f"unknown encoder variable {short(name, 200)} "
                    f"(shape {short(list(self.reader.shapes[name]))})"
                )

    def load(self, target: str, keep_previous: bool = True) -> None:
        """Runs both passes (see the module docstring) into the variables taken.

        Args:
            target: the model's name, for messages.
            keep_previous: save each variable's value before it is assigned, to restore it if
                pass 2 fails; ``False`` for a model that is thrown away on failure.

        Raises:
            CheckpointError: any problem; the variables hold their previous values.
        """
        self._refuse_problems(target)
        for reader, names in self._by_file():
            with reader.opened():
                for name in names:
                    problem = self._entry_problem(reader, name)
                    if problem is not None:
                        self.problems.append(problem)
        self._refuse_problems(target)
        if between_passes is not None:
            between_passes(self)
        previous = _PreviousValues(keep_previous)
        try:
            self._assign(previous)
        except BaseException as error:
            restored = previous.restore(error, self.reader.file)
            if isinstance(error, CheckpointError):
                raise CheckpointError(f"{error} ({restored})") from None
            if isinstance(error, Exception):
                raise CheckpointError(
                    f"{self.reader.file}: loading failed after the checks passed "
                    f"({type(error).__name__}: {error}); {restored}"
                ) from error
            raise
        finally:
            previous.close()

    def _refuse_problems(self, target: str) -> None:
        assign_all_or_nothing([], self.problems, self.reader.file, target)

    def _by_file(self) -> list[tuple[CheckpointReader, list[str]]]:
        """The entries to load, grouped by the file that holds them, in the files' order."""
        groups: dict[int, list[str]] = {}
        for name in self._targets:
            groups.setdefault(id(self.reader.reader_of(name)), []).append(name)
        return [(r, groups[id(r)]) for r in self.reader.readers if id(r) in groups]

    def _entry_problem(self, reader: CheckpointReader, name: str) -> str | None:
        """What is wrong with the values of ``name``, read part by part (pass 1)."""
        non_finite = 0
        for _, _, part in reader.chunks(name, _CHUNK_BYTES):
            problem = self._value_problem(name, part, count=False)
            if problem is not None:
                return problem
            if not self.allow_non_finite:
                non_finite += part.size - int(np.count_nonzero(np.isfinite(part)))
        if non_finite:
            return (
                f"{name!r} holds {non_finite} NaN or infinite values (allow_non_finite=True "
                "loads them)"
            )
        return None

    def _value_problem(self, name: str, value: np.ndarray, count: bool = True) -> str | None:
        # bfloat16 (an ml_dtypes type, kind "V") and float16 are floats too; cast on assignment.
        if value.dtype.kind != "f" and value.dtype != ml_dtypes.bfloat16:
            return f"{name!r} holds {value.dtype}, not floating-point weights"
        if count and not self.allow_non_finite and not np.isfinite(value).all():
            return (
                f"{name!r} holds {int((~np.isfinite(value)).sum())} NaN or infinite values "
                "(allow_non_finite=True loads them)"
            )
        return None

    def _assign(self, previous: _PreviousValues) -> None:
        """Pass 2: reads, checks again and assigns each entry, one file open at a time."""
        for reader, names in self._by_file():
            with reader.opened():
                for name in names:
                    self._assign_entry(reader, name, previous)

    def _assign_entry(self, reader: CheckpointReader, name: str, previous: _PreviousValues
                      ) -> None:  # fmt: skip
        """Assigns the entry ``name`` to its variables: part by part (rows of the stored
        entry, a slice of each variable) where every variable's layout allows, else whole."""
        targets = self._targets[name]
        stored = self.reader.shapes[name]
        rows = stored[0] if stored else 0
        by_rows = all(
            self._rows_axis(row, len(stored)) is not None and _sliceable(variable)
            for variable, row in targets
        )
        parts = reader.chunks(name, _CHUNK_BYTES) if by_rows else [(0, rows, reader.read(name))]
        for start, stop, part in parts:
            problem = self._value_problem(name, part)
            if problem is not None:
                raise CheckpointError(
                    f"{reader.file}: {problem}, but it passed the checks: the file changed "
                    "while it was being loaded"
                )
            for variable, row in targets:
                laid_out = to_keras_layout(part, row.layout, self.fmt.name, row.split)
                tensor = tf.convert_to_tensor(laid_out.astype(variable.dtype, copy=False))
                laid_out = None
                if start == 0:
                    previous.save(variable)
                if start == 0 and stop == rows:  # the whole entry
                    variable.assign(tensor)
                else:
                    axis = self._rows_axis(row, len(stored))
                    _write_part(variable.value, start, tensor, axis)
                tensor = None
            part = None  # one part's values at a time

    def _rows_axis(self, row: Row, ndim: int) -> int | None:
        """The variable's axis that rows of a stored entry of ``ndim`` axes fill (``0``, or
        ``-1`` for a transposed layout, whose stored first axis is the variable's last), or
        ``None`` if its layout does not keep them together (see ``to_keras_layout``; a split
        cuts the last axis, the rows' own if it is the only one)."""
        if self.fmt.name == KERAS_HUB or (row.split is not None and ndim < 2):
            return None
        layout = PER_HEAD.get(row.layout, row.layout)
        if layout == CONV1D and self.fmt.name != HUGGINGFACE:
            return None
        if layout == OUT_IN or (layout == DENSE and self.fmt.name == HUGGINGFACE):
            return None if row.split is not None else -1
        return 0


def _write_part(variable: tf.Variable, start: int, part: tf.Tensor, axis: int) -> None:
    """Writes ``part`` into ``variable`` from ``start`` on along ``axis`` (0 or -1), in place.

    Compiled with XLA on purpose: TensorFlow's own slice assignment
    (``variable[a:b].assign(...)``) puts the variable in "copy on read" mode for good, after
    which every read of it, in every later call of the model, copies the whole variable (a
    32,000-token table read at each decoding step). XLA's update is a plain assignment, done in
    the variable's buffer.
    """
    index = [0] * len(variable.shape)
    index[axis] = start
    _update_slice(variable, tf.constant(index, tf.int32), part)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _update_slice(variable: tf.Variable, index: tf.Tensor, part: tf.Tensor) -> None:
    variable.assign(keras.ops.slice_update(variable, index, part))


# The most bytes of an entry read, or of a variable copied out to save its value, at once.
_CHUNK_BYTES = 16 * 2**20


def _sliceable(variable: Any) -> bool:
    """Whether a slice of ``variable`` can be assigned in place: its backend variable is a plain
    ``tf.Variable`` (under a distribution strategy Keras may hand out a read value, or a
    distributed variable, which take whole assignments only)."""
    value = getattr(variable, "value", None)
    return (
        isinstance(value, tf.Variable)
        and not isinstance(value, tf.distribute.DistributedValues)
        and not tf.distribute.has_strategy()
    )


class _PreviousValues:
    """Variables' values before assignment, in an unnamed temporary file (see the module
    docstring), to restore them if loading fails midway."""

    def __init__(self, keep: bool) -> None:
        self._file = tempfile.TemporaryFile() if keep else None  # noqa: SIM115 - closed by close
        self._saved: list[tuple[Any, int, np.dtype, tuple]] = []
        self._assigned = 0

    def save(self, variable: Any) -> None:
        self._assigned += 1
        if self._file is None:
            return
        offset = self._file.tell()
        stored = variable.value  # the backend's variable: slicing it copies only the slice
        shape = tuple(stored.shape)
        rows = max(1, _CHUNK_BYTES // max(1, math.prod(shape[1:]) * stored.dtype.size))
        dtype = None
        for start in range(0, shape[0], rows) if shape else [None]:
            chunk = np.ascontiguousarray(
                stored.numpy() if start is None else stored[start : start + rows].numpy()
            )
            dtype = chunk.dtype
            self._file.write(chunk.reshape(-1).view(np.uint8).data)
        if dtype is not None:  # a variable with no rows has nothing to restore
            self._saved.append((variable, offset, dtype, shape))

    def restore(self, error: BaseException, file: str) -> str:
        """Assigns the saved values back; returns what became of the model, for the error."""
        if not self._assigned:
            return "nothing was loaded"
        if self._file is None:
            return "the model being built for it is discarded"
        try:
            self._file.flush()
            for variable, offset, dtype, shape in reversed(self._saved):
                self._file.seek(offset)
                count = int(np.prod(shape)) * dtype.itemsize
                data = np.frombuffer(self._file.read(count), np.uint8)
                variable.assign(data.view(dtype).reshape(shape))
        except Exception as failure:  # noqa: BLE001 - any failure leaves the model partly loaded
            raise CheckpointError(
                f"{file}: loading failed after the checks passed ({error}), and the previous "
                f"values could not be restored ({type(failure).__name__}: {failure}): the model "
                "is partly loaded"
            ) from failure
        return f"nothing was loaded: the {len(self._saved)} variables assigned were restored"

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
