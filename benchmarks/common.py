"""What the benchmarks share: interleaved timing, the machine's description, tables.

Every figure is the fastest of ``repeats`` runs after a warm-up run (tracing, compiling), taken
in interleaved rounds (every figure once per round), so that load from other processes on the
machine hits all figures alike and ratios taken in the same run stay fair; the fastest run is the
one the load disturbed least. A figure whose runs have taken ``budget`` seconds is not run again.

A contender that must not share a process with TensorFlow (torch: once TensorFlow has run in a
process, torch in that process ran 3 to 6 times slower and its OpenMP threads stalled) runs in a
``Worker``: a child process running the same script, which never imports TensorFlow (nor
texkit, which imports it). Its figures are round trips to the worker (see ``Worker``).
This module imports only the standard library (and numpy when arrays travel to or from a
worker), so that the worker may import it.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from importlib import metadata
from typing import Any


@dataclasses.dataclass
class Case:
    """One figure: ``run()`` timed; ``work`` is what one call does (tokens, examples...), so the
    rate is ``work / seconds``."""

    name: str
    run: Callable[[], object]
    work: float = 1.0
    samples: list[float] = dataclasses.field(default_factory=list)

    @property
    def seconds(self) -> float:
        """The fastest run."""
        return min(self.samples)

    @property
    def rate(self) -> float:
        """``work`` per second of the fastest run."""
        return self.work / self.seconds


def measure(cases: list[Case], repeats: int, budget: float = float("inf")) -> list[Case]:
    """Warms every case up, then times them in ``repeats`` interleaved rounds."""
    for case in cases:
        print(f"  warming up: {case.name}", flush=True)
        case.run()
    for _ in range(repeats):
        for case in cases:
            if case.samples and sum(case.samples) > budget:
                continue
            start = time.perf_counter()
            case.run()
            case.samples.append(time.perf_counter() - start)
    return cases


WORKER = "--worker"


def _to_json(value: object) -> object:
    """``json.dumps``' fallback: numpy arrays as ``{"__npy__": base64 of their .npy bytes}``,
    numpy scalars as Python numbers."""
    import numpy as np

    if isinstance(value, np.ndarray):
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        return {"__npy__": base64.b64encode(buffer.getvalue()).decode("ascii")}
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot send a {type(value).__name__} to or from a worker")


def _from_json(document: dict) -> object:
    if set(document) == {"__npy__"}:
        import numpy as np

        raw = base64.b64decode(document["__npy__"])
        return np.load(io.BytesIO(raw), allow_pickle=False)
    return document


def _write(stream: Any, message: object) -> None:
    stream.write(json.dumps(message, default=_to_json).encode("utf-8") + b"\n")
    stream.flush()


def _read(stream: Any) -> object:
    line = stream.readline()
    if not line:
        raise EOFError
    return json.loads(line, object_hook=_from_json)


class Worker:
    """The parent's end of a worker process: ``python script --worker``, started here.

    The protocol: one JSON document per line over the child's stdin and stdout pipes; numpy
    arrays travel inside them as ``.npy`` bytes (``allow_pickle=False``), and tuples arrive as
    lists (nothing is ever unpickled). The first message is
    ``spec``; the worker passes it to the script's ``setup``, which returns the request handler,
    and answers when that is done. Then each ``call(request)`` sends one request and waits for
    the handler's response; an exception in the worker is raised here as ``RuntimeError`` with
    the worker's traceback. The worker's stderr is the parent's, and anything written to its
    stdout goes to stderr too, so stray prints cannot break the protocol.

    Timing: the worker does no timing of its own. A ``Case`` whose ``run`` is ``call`` times
    the round trip, as measured in the parent: encoding the request, the pipe each way, the
    handler's work and encoding its response; the parent waits, idle, while the worker works.
    ``round_trip()`` measures that overhead on an empty request, for the report.

    ``python``: the worker's interpreter (default: this one), e.g. an environment with torch
    that has no TensorFlow; the script must then import only what that one has before it
    serves.

    The process starts in ``__init__``; ``__init__`` does not wait for ``setup``, the first
    ``call`` does. Close it (``close`` or ``with``) to end it: it exits when its stdin closes.
    """

    def __init__(self, script: str, spec: object, python: str | None = None) -> None:
        self.name = os.path.basename(script)
        self.process = subprocess.Popen(
            [python or sys.executable, os.path.abspath(script), WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.ready = False
        self._send(spec)

    def _send(self, message: object) -> None:
        _write(self.process.stdin, message)

    def _receive(self) -> object:
        try:
            ok, value = _read(self.process.stdout)
        except EOFError:
            raise RuntimeError(
                f"the {self.name} worker process ended (exit status {self.process.poll()}; "
                "see its error above)"
            ) from None
        if not ok:
            raise RuntimeError(f"in the {self.name} worker process:\n{value}")
        return value

    def wait_ready(self) -> None:
        """Waits until the worker's ``setup`` has returned."""
        if not self.ready:
            self._receive()
            self.ready = True

    def call(self, request: object) -> object:
        """The handler's response to ``request``, computed in the worker."""
        self.wait_ready()
        self._send(request)
        return self._receive()

    def round_trip(self, repeats: int = 200) -> float:
        """Seconds of the fastest round trip of an empty request (the handler is not called)."""
        self.wait_ready()
        fastest = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            self._send(None)
            self._receive()
            fastest = min(fastest, time.perf_counter() - start)
        return fastest

    def close(self) -> None:
        """Ends the worker: its request loop ends when its stdin closes."""
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        self.process.wait()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_if_worker(setup: Callable[[object], Callable[[object], object]]) -> None:
    """In a process started by ``Worker`` (``argv[1]`` is ``--worker``): serves and exits.

    Call it before importing TensorFlow. ``setup(spec)`` returns the handler of requests; an
    empty request (``None``, from ``Worker.round_trip``) is answered without it.
    """
    if sys.argv[1:2] != [WORKER]:
        return
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray output, Python's or C's, to stderr

    def answer(ok: bool, value: object) -> None:
        _write(answers, [ok, value])

    try:
        handle = setup(_read(requests))
    except Exception:
        answer(False, traceback.format_exc())
        sys.exit(1)
    answer(True, None)
    while True:
        try:
            request = _read(requests)
        except EOFError:
            break
        try:
            answer(True, None if request is None else handle(request))
        except Exception:
            answer(False, traceback.format_exc())
    sys.exit()


def cpu_name() -> str:
    """The CPU's model name and its matrix extensions (AVX-512, AMX), as /proc/cpuinfo says."""
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    name = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    extensions = [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{name} ({', '.join(extensions) or 'no AVX-512'})"


def versions(*packages: str) -> str:
    """``name version`` of Python and each installed package."""
    found = [f"Python {platform.python_version()}"]
    for package in packages:
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} (not installed)")
    return ", ".join(found)


def machine(*packages: str) -> str:
    """One line: date, CPU, core count and versions."""
    return f"{time.strftime('%Y-%m-%d')}; {cpu_name()}, {os.cpu_count()} CPUs; " + versions(
        *packages
    )


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table; floats with one decimal unless already strings."""

    def cell(value: object) -> str:
        return f"{value:,.1f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
