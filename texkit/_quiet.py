"""Quiet TensorFlow: its C++ log lines hidden unless the user asks for them.

TensorFlow logs from C++ at four levels (INFO, WARNING, ERROR, FATAL), and ``TF_CPP_MIN_LOG_LEVEL``
hides the levels below it. Its own default (0) shows everything; level 2 still shows ERROR lines,
which on an ordinary CPU machine are noise that TensorFlow prints itself after ``import
tensorflow`` returns: "failed call to cuInit" when the first op looks for a GPU, "oneDNN supports
DT_BOOL only on platforms with AVX-512" when a graph first transposes a boolean mask, and under
``tf.distribute`` the collective executor's lines when a worker is lost (texkit then raises its own
error, which says what happened). Real failures reach Python as exceptions, and FATAL lines are
never hidden. So ``import texkit`` sets the level to 3 unless the user set it (as it sets
``KERAS_BACKEND``), and ``--verbose`` on the command line of the ``texkit`` command or of a module
run with ``python -m`` (the examples) sets it to 0. TensorFlow reads the variable once, when it
loads: set it before texkit or TensorFlow is imported.

A few lines that TensorFlow's libraries log while they load (oneDNN, "Could not find cuda
drivers") go through absl before TensorFlow configures it and ignore the variable; so TensorFlow
is imported here with file descriptor 2 held back, and exactly those lines are dropped at the
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


# The level texkit picks when the user did not: INFO, WARNING and ERROR lines hidden.
QUIET_LEVEL = "3"


def asks_verbose(argv: list[str]) -> bool:
    """Whether the command line is the ``texkit`` command's or a ``python -m`` module's (while
    Python imports a ``-m`` module's packages, ``argv[0]`` is ``"-m"``) and has ``--verbose``."""
    if not argv:
        return False
    program = argv[0] if argv[0] == "-m" else os.path.basename(argv[0])
    return program in ("-m", "texkit") and "--verbose" in argv[1:]


def quiet_tensorflow() -> None:
    """Sets ``TF_CPP_MIN_LOG_LEVEL`` to 3 unless the user chose a level (0 with ``--verbose``,
    see :func:`asks_verbose`), and imports TensorFlow with the lines it logs while loading
    filtered at that level. Call it before TensorFlow is imported."""
    if asks_verbose(sys.argv):
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", QUIET_LEVEL)
    if "tensorflow" in sys.modules:
        return
    try:
        min_level = int(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    except ValueError:
        min_level = 0
    with _c_stderr_filtered(min_level):
        import tensorflow  # noqa: F401
