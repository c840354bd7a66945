"""Runs hostile inputs where a regression fails a test instead of the machine.

A hostile case (a decompression bomb, a FIFO, a config that asks for 10^12 layers) that texkit
stops handling would hang the test run or exhaust the machine's memory. So each case runs in a
child process under an address-space cap (``RLIMIT_AS``) and a time limit: a case that goes
over either fails, the child is replaced, and the suite goes on.

One child serves many cases (TensorFlow is imported once per child, not once per case): the
parent sends ``{"call": "module:function", "args": [...]}`` as a JSON line, the child runs the
function and answers with a JSON line: what it returned, or the exception's class names and
message. Cases are plain functions at the top level of a test module; their arguments and
results are JSON values (paths, numbers, strings).

The cap counts address space, not resident memory: TensorFlow reserves about 2.3 GiB of it when
it starts, so a 3 GiB cap leaves a case some 700 MiB; a real model (MiniLM) loads within it.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import resource
import select
import subprocess
import sys
import time
import traceback
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADDRESS_SPACE_CAP = 3 << 30  # bytes
DEFAULT_TIMEOUT = 30.0  # seconds for one case
# A child whose address space has grown by this much since it started is replaced before the
# next case, so that every case has about the same room under the cap.
REFRESH_AFTER = 256 << 20


@dataclasses.dataclass
class Outcome:
    """What a case did: returned ``value``, or raised ``error`` (its class and bases' names,
    most derived first) with ``message``; ``seconds`` it took."""

    value: Any = None
    error: list[str] | None = None
    message: str = ""
    seconds: float = 0.0

    @property
    def raised(self) -> str | None:
        return self.error[0] if self.error else None


class Sandbox:
    """A child process that runs cases under the caps; replaced when a case breaks it."""

    def __init__(self, cap: int = ADDRESS_SPACE_CAP):
        self.cap = cap
        self.process: subprocess.Popen | None = None

    def _start(self) -> None:
        # Two malloc arenas: by default each new thread of TensorFlow's pools reserves one of
        # 64 MiB, so the first case that runs an op grows the address space past REFRESH_AFTER
        # (and the child would be replaced after nearly every such case) without using memory.
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT, MALLOC_ARENA_MAX="2")
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from tests.hostile import serve; serve({self.cap})"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
        ready = self._answer(120.0)
        assert ready is not None and ready.get("ready"), f"the sandbox did not start: {ready}"
        self.started_with = ready["address_space"]

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def _answer(self, timeout: float) -> dict | None:
        """The child's next JSON line, or ``None`` after ``timeout`` seconds or if it died."""
        stdout = self.process.stdout
        ready, _, _ = select.select([stdout], [], [], timeout)
        if not ready:
            return None
        line = stdout.readline()
        return json.loads(line) if line else None

    def run(self, function: Any, *args: Any, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
        """Runs ``function(*args)`` in the child; fails the test when it takes longer than
        ``timeout`` seconds or the child dies (its memory cap, a crash)."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        call = f"{function.__module__}:{function.__qualname__}"
        self.process.stdin.write((json.dumps({"call": call, "args": list(args)}) + "\n").encode())
        self.process.stdin.flush()
        started = time.monotonic()
        answer = self._answer(timeout)
        seconds = time.monotonic() - started
        if answer is None:
            died = self.process.poll() is not None
            self.stop()
            what = "the sandbox died" if died else f"it took longer than {timeout:.0f} s"
            pytest.fail(f"{call}{tuple(args)}: {what}", pytrace=False)
        grown = answer.pop("address_space") - self.started_with
        outcome = Outcome(seconds=seconds, **answer)
        if outcome.raised in ("MemoryError", "ResourceExhaustedError", "RecursionError"):
            self.stop()  # the child may be left in a bad state
        elif grown > REFRESH_AFTER:
            self.stop()  # what earlier cases keep (models, caches) would eat a later one's room
        return outcome

    def expect_error(
        self,
        function: Any,
        *args: Any,
        error: str,
        contains: tuple[str, ...] = (),
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Outcome:
        """Runs a case that must raise ``error`` (a class name, matched against the raised
        class and its bases) with every string of ``contains`` in the message."""
        outcome = self.run(function, *args, timeout=timeout)
        call = f"{function.__name__}{tuple(args)}"
        assert outcome.error is not None, f"{call} returned {outcome.value!r} instead of raising"
        assert error in outcome.error, (
            f"{call} raised {outcome.raised}: {outcome.message}\n(expected {error})"
        )
        for part in contains:
            assert part in outcome.message, f"{part!r} is not in the message: {outcome.message}"
        assert len(outcome.message) < 2000, f"a message of {len(outcome.message)} characters"
        return outcome


def _call(name: str) -> Any:
    module, _, qualname = name.partition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _address_space() -> int:
    """This process's address space in bytes (``VmSize``), which ``RLIMIT_AS`` caps."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def serve(cap: int) -> None:
    """The child's loop (runs in the child process)."""
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what cases print goes to stderr, never into the answers
    import texkit  # noqa: F401 - imported once, before the first case is timed

    answers.write(json.dumps({"ready": True, "address_space": _address_space()}) + "\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            value = _call(request["call"])(*request["args"])
            json.dumps(value)  # a case returns JSON values only
            answer = {"value": value}
        except BaseException as error:  # noqa: BLE001 - every outcome is reported to the parent
            names = [klass.__name__ for klass in type(error).__mro__]
            message = str(error)[:20_000]
            if names[0] in ("AssertionError", "TypeError", "AttributeError", "KeyError"):
                message += "\n" + traceback.format_exc()[-4000:]
            answer = {"error": names, "message": message}
        answer["address_space"] = _address_space()
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


@pytest.fixture(scope="session")
def sandbox():
    """One sandbox for the whole run (see :class:`Sandbox`)."""
    box = Sandbox()
    yield box
    box.stop()
