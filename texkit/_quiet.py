"""Quiet TensorFlow start-up: its C++ info and warning lines hidden unless the user asks for them.

``import texkit`` sets ``TF_CPP_MIN_LOG_LEVEL`` to 2 (warnings and errors hidden from TensorFlow's
C++ logging, errors shown) unless the user set it, as it sets ``KERAS_BACKEND``. TensorFlow 2.21
reads the variable for most of its logging, but a few lines its libraries log while they load
(oneDNN, "Could not find cuda drivers") go through absl before TensorFlow configures it and
ignore the variable; so TensorFlow is imported here, and exactly those lines are dropped at the
same level. Standard library only: this runs before anything else of texkit.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

# absl's C++ log format ("I0101 12:00:00.123456  42 port.cc:153] ...", before absl is set up
# "I0000 00:00:1795469269.516676 ...") and TensorFlow's own ("2025-01-01 12:00:00.000000:
# I tensorflow/..."), with the severity letter captured.
_LOG_LINE = re.compile(
    r"^(?:([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\]"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) )"
)
_ABSL_BANNER = "WARNING: All log messages before absl::InitializeLog() is called"
_SEVERITIES = "IWEF"


def _hidden(line: str, min_level: int) -> bool:
    """Whether TF_CPP_MIN_LOG_LEVEL=``min_level`` hides this line of C++ log output."""
    if line.startswith(_ABSL_BANNER):
        return min_level > 0
    match = _LOG_LINE.match(line)
    return bool(match) and _SEVERITIES.index(match.group(1) or match.group(2)) < min_level


@contextlib.contextmanager
def _c_stderr_filtered(min_level: int) -> Iterator[None]:
    """Holds back what is written to file descriptor 2 (C++ included), then passes on the lines
    that ``min_level`` does not hide; after an error, passes on everything."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable stderr (e.g. a GUI process): nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            lines = held.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(ln for ln in lines if failed or not _hidden(ln, min_level)))
            sys.stderr.flush()


def quiet_tensorflow() -> None:
    """Shows TensorFlow's C++ errors but not its info and warning lines, unless the user chose a
    level with ``TF_CPP_MIN_LOG_LEVEL``; call it before TensorFlow is imported.

    TensorFlow 2.21 reads ``TF_CPP_MIN_LOG_LEVEL`` for most of its C++ logging, but a few lines
    that its libraries log while they load (oneDNN, "Could not find cuda drivers") go through
    absl before TensorFlow configures it and ignore the variable. So TensorFlow is imported here,
    and those lines are dropped at the same level.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules:
        return
    try:
        min_level = int(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    except ValueError:
        min_level = 0
    with _c_stderr_filtered(min_level):
        import tensorflow  # noqa: F401
