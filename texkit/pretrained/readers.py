"""Readers of checkpoint files: entry names and shapes at once, values a part at a time.

A reader learns its file's entries and their shapes when it is made (the safetensors header,
the TF checkpoint's index, the HDF5 metadata; no values). Values are read while the file is
open (:meth:`CheckpointReader.opened`), an entry or a part of one
(:meth:`CheckpointReader.chunks`) at a time into a new array: the loader
(:mod:`~texkit.pretrained.streamed_loading`) opens one shard at a time and closes it after use.
A safetensors file is not read through a memory map: every page of a map that was read stays in
the process's resident memory until the map is closed (a whole shard), where a plain read holds
one entry. Opening a safetensors file again checks it again (``safe_open`` refuses a file shorter
than its header says) and refuses a file whose entries or shapes changed since the reader was
made.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import tensorflow as tf

from texkit.files import check_regular_file, open_regular
from texkit.pretrained.checkpoints import HUGGINGFACE, KERAS_HUB, CheckpointError

__all__ = ["CheckpointReader", "WeightsReader"]


class CheckpointReader:
    """Names, shapes and values of one checkpoint file's entries.

    Args:
        file: a TF checkpoint prefix (``GOOGLE``: ``bert_model.ckpt``), a ``.safetensors``
            file (``HUGGINGFACE``) or a Keras 3 ``.weights.h5`` file (``KERAS_HUB``), local or a
            ``tf.io.gfile`` URL.
        fmt: ``GOOGLE``, ``OPENAI``, ``HUGGINGFACE`` or ``KERAS_HUB``.
        skipped: entries that are not weights (optimizer slots, counters, tied copies) and are
            left out of ``shapes``.

    A ``.weights.h5`` file's entries are its datasets, named by their HDF5 paths as Keras 3
    writes them (``layers/transformer_encoder_1/_self_attention_layer/query_dense/vars/0``).
    A TF checkpoint or HDF5 file stays open for the reader's life (their readers read one
    entry at a time); a safetensors file only inside :meth:`opened`.

    Attributes:
        shapes: ``{entry: shape}`` (from the safetensors header, the TF checkpoint's index or
            the HDF5 metadata; no values are read).
        keys: (safetensors) every entry of the file, skipped ones too.
        file_bytes: the total size of the weights' files, in bytes.

    Raises:
        CheckpointError: a file is missing or not a regular file (a FIFO, a device, a folder),
            or cannot be read as the format.
    """

    def __init__(self, file: str, fmt: str, skipped: Callable[[str], bool]):
        self.format = fmt
        self.file = file
        self.file_bytes = self._check_files()
        self._open: Any = None  # the open safetensors file, or a remote one's arrays
        if self.format == KERAS_HUB:
            self._open_h5(skipped)
            return
        if self.format != HUGGINGFACE:  # a TF checkpoint
            try:
                self._reader = tf.train.load_checkpoint(self.file)
                shapes = self._reader.get_variable_to_shape_map()
            except (tf.errors.OpError, ValueError) as error:
                raise CheckpointError(
                    f"{self.file}: cannot read the checkpoint ({error})"
                ) from None
            self.shapes = {k: tuple(v) for k, v in shapes.items() if not skipped(k)}
            return
        self._header: dict[str, tuple] = {}
        with self.opened():
            self.keys = list(self._header)  # every entry, skipped ones too
        self.shapes = {k: v for k, v in self._header.items() if not skipped(k)}

    def _check_files(self) -> int:
        """Checks that the weights' files are regular files and returns their total size.

        The readers open files by name and would wait forever on a FIFO (safetensors even
        holding the GIL) or read a device without end, so each file is checked first
        (:func:`texkit.files.check_regular_file`, which never blocks). A TF checkpoint is its
        ``.index`` file and its ``.data-*`` shards.
        """
        if self.format in (HUGGINGFACE, KERAS_HUB):
            return check_regular_file(self.file, error=CheckpointError)
        total = check_regular_file(self.file + ".index", error=CheckpointError)
        folder, prefix = os.path.split(self.file)
        try:
            names = tf.io.gfile.listdir(folder or ".")
        except tf.errors.OpError as error:
            raise CheckpointError(f"{folder}: cannot list the folder ({error})") from None
        for name in sorted(names):
            if name.startswith(prefix + ".data-"):
                total += check_regular_file(os.path.join(folder, name), error=CheckpointError)
        return total

    def _open_h5(self, skipped: Callable[[str], bool]) -> None:
        import h5py

        datasets = {}

        def visit(name: str, node: Any) -> None:
            if isinstance(node, h5py.Dataset):
                datasets[name] = node

        try:
            if "://" in self.file:  # gs:// and other tf.io.gfile file systems: read it whole
                with tf.io.gfile.GFile(self.file, "rb") as f:
                    self._reader = h5py.File(io.BytesIO(f.read()), "r")
            else:
                self._reader = h5py.File(self.file, "r")
            self._reader.visititems(visit)
            shapes = {name: tuple(d.shape) for name, d in datasets.items()}
            elsewhere = [n for n, d in datasets.items() if d.is_virtual or d.external]
        except Exception as error:  # noqa: BLE001 - h5py raises OSError, KeyError, RuntimeError
            raise CheckpointError(
                f"{self.file}: not a readable Keras .weights.h5 file ({type(error).__name__}: "
                f"{error}); it may be truncated or corrupt"
            ) from None
        if elsewhere:
            # Keras writes every value into the file; a dataset whose values live in other
            # files (external storage, a virtual dataset) could make the reader open any path.
            raise CheckpointError(
                f"{self.file}: the values of {elsewhere[0]!r} are stored outside the file "
                "(an external or virtual HDF5 dataset), which Keras never writes"
            )
        self._datasets = datasets
        self.shapes = {k: v for k, v in shapes.items() if not skipped(k)}

    @contextlib.contextmanager
    def opened(self) -> Iterator[CheckpointReader]:
        """The file open for :meth:`read`, closed on exit; nested calls share the open file.

        A local safetensors file is checked by ``safetensors.safe_open`` (which refuses a file
        shorter than its header says) and its header compared with the one the reader was made
        from; values are then read with plain reads at the header's offsets (:meth:`read`).
        A ``tf.io.gfile`` URL is read whole.

        Raises:
            CheckpointError: the file cannot be read as safetensors (truncated, corrupt), or
                its entries or their shapes differ from those it had when the reader was made.
        """
        if self.format != HUGGINGFACE or self._open is not None:
            yield self
            return
        try:
            self._open, header = _open_safetensors(self.file)
            if not self._header:
                self._header = header
            elif header != self._header:
                changed = sorted(set(header.items()) ^ set(self._header.items()))
                raise CheckpointError(
                    f"{self.file}: the file changed while it was being loaded (its header "
                    f"differs at {changed[0][0]!r})"
                )
            yield self
        finally:
            if isinstance(self._open, _SafetensorsFile):
                self._open.close()
            self._open = None

    def read(self, name: str) -> np.ndarray:
        """The values of the entry ``name`` (a safetensors file is opened for the call if it
        is not open)."""
        if self.format == HUGGINGFACE and self._open is None:
            with self.opened():
                return self.read(name)
        try:
            if self.format == HUGGINGFACE:
                return self._open[name]
            if self.format == KERAS_HUB:
                return np.asarray(self._datasets[name][()])
            return np.asarray(self._reader.get_tensor(name))
        except CheckpointError:
            raise
        except Exception as error:  # noqa: BLE001 - each reader has its own error types
            raise CheckpointError(f"{self.file}: cannot read {name!r} ({error})") from None

    def chunks(self, name: str, chunk_bytes: int) -> Iterator[tuple[int, int, np.ndarray]]:
        """The entry ``name`` in ``(start, stop, values[start:stop])`` parts along its first
        axis of at most ``chunk_bytes`` each (at least one row), read part by part from an open
        local safetensors file; from other files, the whole entry as one part."""
        if not (isinstance(self._open, _SafetensorsFile) and self._open.reads_rows(name)):
            value = self.read(name)
            yield 0, (value.shape[0] if value.ndim else 0), value
            return
        kind, shape, _, _ = self._open.entries[name]
        row_bytes = max(1, int(np.prod(shape[1:])) * _DTYPES[kind].itemsize)
        step = max(1, chunk_bytes // row_bytes)
        for start in range(0, shape[0], step):
            stop = min(start + step, shape[0])
            yield start, stop, self._open.rows(name, start, stop)


# safetensors' dtype names, as numpy types (little-endian, as the format stores them).
_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}  # fmt: skip


def _open_safetensors(file: str) -> tuple[Any, dict[str, tuple]]:
    """An open safetensors file (a :class:`_SafetensorsFile`, or a remote file's arrays) and its
    header's ``{entry: shape}``."""
    from safetensors import SafetensorError, safe_open
    from safetensors.numpy import load as load_bytes

    try:
        if "://" in file:  # gs:// and other tf.io.gfile file systems: read it whole
            with tf.io.gfile.GFile(file, "rb") as f:
                arrays = load_bytes(f.read())
            return arrays, {k: tuple(v.shape) for k, v in arrays.items()}
        with safe_open(file, framework="np") as checked:  # refuses a truncated or corrupt file
            header = {k: tuple(checked.get_slice(k).get_shape()) for k in checked.keys()}
        opened = _SafetensorsFile(file)
    except (SafetensorError, OSError, ValueError, tf.errors.OpError) as error:
        raise CheckpointError(
            f"{file}: not a readable safetensors file ({error}); it may be truncated or corrupt"
        ) from None
    if {k: v[1] for k, v in opened.entries.items()} != header:
        opened.close()
        raise CheckpointError(f"{file}: the file changed while it was being loaded")
    return opened, header


class _SafetensorsFile:
    """A safetensors file whose entries are read with plain reads into new arrays.

    Reading through a memory map (as ``safe_open`` does) leaves every page read resident until
    the map is closed, and a file cut short while mapped kills the process (``SIGBUS``); plain
    reads hold one entry's values, and a short read is an error. The header was checked by
    ``safe_open`` first (offsets inside the file, known dtypes); an entry whose dtype numpy
    has no type for here is read by ``safe_open``.
    """

    def __init__(self, file: str) -> None:
        self.file = file
        # A regular file (never a FIFO or a device swapped in between the passes); the header's
        # size is bounded by the file's, whose header safe_open checked in the first pass.
        self._stream = open_regular(file, error=CheckpointError, what="safetensors shard")
        try:
            size = int.from_bytes(self._stream.read(8), "little")
            if size > tf.io.gfile.stat(file).length:
                raise CheckpointError(f"{file}: a header of {size:,} bytes, longer than the file")
            header = json.loads(self._stream.read(size))
        except Exception:
            self._stream.close()
            raise
        self._start = 8 + size
        self.entries: dict[str, tuple[str, tuple, int, int]] = {
            name: (spec["dtype"], tuple(spec["shape"]), *spec["data_offsets"])
            for name, spec in header.items()
            if name != "__metadata__"
        }

    def __getitem__(self, name: str) -> np.ndarray:
        kind, shape, begin, end = self.entries[name]
        if kind not in _DTYPES:
            from safetensors import safe_open

            with safe_open(self.file, framework="np") as f:
                return f.get_tensor(name)
        if int(np.prod(shape)) * _DTYPES[kind].itemsize != end - begin:
            raise CheckpointError(f"{self.file}: {name!r} does not fill its bytes")
        return self.rows(name, 0, shape[0]) if shape else self._read(name, (), begin)

    def reads_rows(self, name: str) -> bool:
        """Whether :meth:`rows` reads the entry part by part (it has rows, and a dtype numpy
        has a type for)."""
        kind, shape, _, _ = self.entries[name]
        return kind in _DTYPES and len(shape) > 0 and shape[0] > 0

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """The values ``[start:stop]`` (along the first axis) of the entry ``name``."""
        kind, shape, begin, _ = self.entries[name]
        row_bytes = int(np.prod(shape[1:])) * _DTYPES[kind].itemsize
        return self._read(name, (stop - start, *shape[1:]), begin + start * row_bytes)

    def _read(self, name: str, shape: tuple, offset: int) -> np.ndarray:
        value = np.empty(shape, _DTYPES[self.entries[name][0]])
        buffer = value.reshape(-1).view(np.uint8)
        self._stream.seek(self._start + offset)
        if self._stream.readinto(buffer) != buffer.size:
            raise CheckpointError(
                f"{self.file}: cannot read {name!r}: the file ends before its values do (it "
                "changed while it was being loaded)"
            )
        return value

    def close(self) -> None:
        self._stream.close()


class WeightsReader:
    """Names, shapes and values of a checkpoint's entries, in one weights file or several.

    Args:
        files: the weights' files (see :class:`CheckpointReader`); an entry's values are read
            from its own file when asked for, so loading holds the model and one file's mapped
            pages (with one entry's values) at a time.
        fmt, skipped: as for :class:`CheckpointReader`.

    Attributes:
        shapes: ``{entry: shape}`` of every file.
        readers: each file's :class:`CheckpointReader`.
        file_bytes: the total size of the files, in bytes.
        file: the file, for messages (several: their folder and names).

    Raises:
        CheckpointError: as :class:`CheckpointReader`; or an entry in two files.
    """

    def __init__(self, files: Sequence[str], fmt: str, skipped: Callable[[str], bool]):
        self.files = list(files)
        self.format = fmt
        folder = os.path.dirname(self.files[0])
        names = ", ".join(os.path.basename(f) for f in self.files)
        self.file = self.files[0] if len(self.files) == 1 else f"{folder} ({names})"
        self.shapes: dict[str, tuple] = {}
        self.file_bytes = 0
        self._owner: dict[str, CheckpointReader] = {}
        self.readers = [CheckpointReader(file, fmt, skipped) for file in self.files]
        for file, reader in zip(self.files, self.readers, strict=True):
            for name, shape in reader.shapes.items():
                if name in self._owner:
                    raise CheckpointError(
                        f"{file}: {name!r} is in {self._owner[name].file} too (an entry "
                        "belongs to one file)"
                    )
                self._owner[name] = reader
                self.shapes[name] = shape
            self.file_bytes += reader.file_bytes

    def reader_of(self, name: str) -> CheckpointReader:
        """The reader of the file that holds the entry ``name``."""
        return self._owner[name]

    def read(self, name: str) -> np.ndarray:
        """The values of the entry ``name``, from its own file."""
        return self._owner[name].read(name)
