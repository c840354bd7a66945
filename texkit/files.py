"""Opening the files texkit reads: regular files only, of bounded size, never blocking.

Every file texkit opens by name (configs, checkpoints, vocabularies, tokenizer files, data files,
YAML experiments) is checked here first, at the bottom of the import graph so that every layer
can use it:

* **Regular files only.** A FIFO (named pipe) would block its reader forever, a device such as
  ``/dev/zero`` never ends, a socket cannot be read and a folder is not a file: each is refused
  naming the path. The check opens the path with ``O_NONBLOCK`` and asks what was opened
  (``fstat``), so the check itself never blocks, even on a FIFO that no one writes to. A reader
  that needs the path rather than an open file (safetensors, TensorFlow's readers) is handed a
  path that was just found to be a regular file.
* **Bounded reads.** A file read whole (JSON, YAML, vocabularies) larger than its limit is
  refused before it is read, naming the file, its size and the limit. The limits are this
  module's constants, read when a file is opened: a program that must read a larger file sets
  ``texkit.files.MAX_JSON_BYTES`` (or ``MAX_CONFIG_BYTES``) first.
* **JSON** (:func:`read_json`): a key given twice in one object is an error (Python's ``json``
  keeps the last one silently), nesting deeper than :data:`~texkit.errors.MAX_DEPTH` levels is
  an error (not a ``RecursionError``), and so is an integer of more than
  :data:`~texkit.errors.MAX_DIGITS` digits (no config, vocabulary or tokenizer file holds one;
  Python's own limit, 4,300 digits, fails without naming the file).

Paths with a scheme (``gs://``; read through ``tf.io.gfile``) hold regular files only; their
size comes from ``tf.io.gfile.stat``.

Each function takes ``error``, the exception class to raise (``CheckpointError`` for a
checkpoint folder, ``ValueError`` for data files), and ``context``, appended to the message in
parentheses (e.g. ``"hparams 'vocab_file'"``).
"""

from __future__ import annotations

import json
import os
import stat
from typing import IO, Any

from texkit.errors import MAX_DEPTH, MAX_DIGITS, check_depth

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_JSON_BYTES",
    "check_regular_file",
    "file_size",
    "open_regular",
    "read_bytes",
    "read_json",
]

# A config file (config.json, tokenizer_config.json, an experiment's YAML) is a few kilobytes;
# one with a large label map or chat template still fits many times over.
MAX_CONFIG_BYTES = 16 << 20
# A vocabulary or tokenizer file read whole: the largest released tokenizer.json files (Gemma's
# 262k entries) are about 35 MB.
MAX_JSON_BYTES = 256 << 20


def _message(path: str, what: str, context: str) -> str:
    return f"{path}: {what}" + (f" ({context})" if context else "")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file: reading it would wait forever"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    return "not a regular file"


def _open_fd(path: str, error: type[Exception], context: str) -> tuple[int, int]:
    """An open descriptor of the regular file ``path`` (in blocking mode) and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            target = os.readlink(path)
            raise error(
                _message(path, f"a symbolic link to {target!r}, which does not exist", context)
            ) from None
        raise error(_message(path, "no such file", context)) from None
    except OSError as failure:  # a loop of symbolic links, no permission, a socket (ENXIO)
        raise error(_message(path, f"cannot be opened ({failure.strerror})", context)) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise error(_message(path, _kind(status.st_mode), context))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, status.st_size


def _remote(path: str) -> bool:
    return "://" in path


def _remote_size(path: str, error: type[Exception], context: str) -> int:
    import tensorflow as tf  # only for tf.io.gfile file systems (gs://, ...)

    try:
        if tf.io.gfile.isdir(path):
            raise error(_message(path, "a folder, not a file", context))
        return int(tf.io.gfile.stat(path).length)
    except tf.errors.NotFoundError:
        raise error(_message(path, "no such file", context)) from None
    except tf.errors.OpError as failure:
        raise error(_message(path, f"cannot be read ({failure.message})", context)) from None


def check_regular_file(
    path: str | os.PathLike, *, error: type[Exception] = ValueError, context: str = ""
) -> int:
    """Raises ``error`` naming ``path`` unless it is a regular file that can be opened; returns
    its size in bytes. Never blocks (a FIFO is opened with ``O_NONBLOCK``)."""
    path = os.fspath(path)
    if _remote(path):
        return _remote_size(path, error, context)
    fd, size = _open_fd(path, error, context)
    os.close(fd)
    return size


def file_size(path: str | os.PathLike) -> int | None:
    """The size of a regular file, or ``None`` if ``path`` is not one (never raises)."""
    path = os.fspath(path)
    try:
        if _remote(path):
            import tensorflow as tf

            return int(tf.io.gfile.stat(path).length)
        status = os.stat(path)
    except Exception:  # noqa: BLE001 - whatever the file system says, the answer is "not one"
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def open_regular(
    path: str | os.PathLike,
    *,
    limit: int | None = None,
    error: type[Exception] = ValueError,
    context: str = "",
    what: str = "file",
) -> IO[bytes]:
    """The regular file ``path`` opened for reading bytes.

    Args:
        path: a local path or a ``tf.io.gfile`` URL.
        limit: the largest size accepted, in bytes (``None``: any); a larger file is refused
            naming its size, the limit and ``what``.
        error: the exception class raised.
        context: appended to messages in parentheses (the hparams key that named the file).
        what: what the file is, for the size message (``"config file"``).
    """
    path = os.fspath(path)
    if _remote(path):
        size = _remote_size(path, error, context)
        _check_size(path, size, limit, error, context, what)
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "rb")
    fd, size = _open_fd(path, error, context)
    try:
        _check_size(path, size, limit, error, context, what)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _check_size(
    path: str, size: int, limit: int | None, error: type[Exception], context: str, what: str
) -> None:
    if limit is not None and size > limit:
        raise error(
            _message(
                path,
                f"{size:,} bytes, more than a {what} may have ({limit:,}); if the file is right, "
                "raise the limit",
                context,
            )
        )


def read_bytes(
    path: str | os.PathLike,
    limit: int,
    *,
    error: type[Exception] = ValueError,
    context: str = "",
    what: str = "file",
) -> bytes:
    """The whole regular file ``path``, refused when larger than ``limit`` bytes (also when it
    grows past the limit while it is read)."""
    with open_regular(path, limit=limit, error=error, context=context, what=what) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        _check_size(os.fspath(path), len(data), limit, error, context, what)
    return data


def _no_repeated_keys(path: str, error: type[Exception], context: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict:
        result: dict = {}
        for key, value in pairs:
            if key in result:
                raise error(
                    _message(path, f"the key {key!r} is given twice in one object", context)
                )
            result[key] = value
        return result

    return hook


def _bounded_int(path: str, error: type[Exception], context: str) -> Any:
    def parse(text: str) -> int:
        digits = len(text.lstrip("-"))
        if digits > MAX_DIGITS:
            raise error(
                _message(
                    path,
                    f"an integer of {digits:,} digits (at most {MAX_DIGITS} are read)",
                    context,
                )
            )
        return int(text)

    return parse


def read_json(
    path: str | os.PathLike,
    *,
    limit: int | None = None,
    error: type[Exception] = ValueError,
    context: str = "",
    what: str = "config file",
) -> Any:
    """The JSON value in the regular file ``path``, read strictly (see the module docstring):
    at most ``limit`` bytes (default :data:`MAX_CONFIG_BYTES`, read when called), UTF-8, no
    repeated keys, no integer longer than :data:`~texkit.errors.MAX_DIGITS` digits, no nesting
    deeper than :data:`~texkit.errors.MAX_DEPTH` levels. Every failure is ``error`` naming the
    file."""
    path = os.fspath(path)
    limit = MAX_CONFIG_BYTES if limit is None else limit
    data = read_bytes(path, limit, error=error, context=context, what=what)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as failure:
        raise error(
            _message(path, f"not UTF-8 text ({failure.reason} at byte {failure.start})", context)
        ) from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_repeated_keys(path, error, context),
            parse_int=_bounded_int(path, error, context),
        )
    except RecursionError:
        raise error(_message(path, f"nested deeper than {MAX_DEPTH} levels", context)) from None
    except json.JSONDecodeError as failure:
        raise error(_message(path, f"not valid JSON ({failure})", context)) from None
    try:
        check_depth(value, "its values")
    except ValueError:
        raise error(_message(path, f"nested deeper than {MAX_DEPTH} levels", context)) from None
    return value
