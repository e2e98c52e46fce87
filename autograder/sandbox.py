"""Run student code in an isolated child process and talk to it in plain data.

The judge never imports or executes student code. This module starts
`autograder.child` in a fresh scratch directory with a scrubbed environment,
resource limits, its own session (so a whole process tree can be killed) and,
where the machine allows it, no network. It then sends frames and waits for
answers with a deadline.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder import wire

CLONE_NEWNET = 0x40000000
_RUNTIME = ("__init__.py", "wire.py", "child.py")  # all the child gets of the kit


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 20.0  # one call into student code, wall clock
    load_seconds: float = 60.0  # running the answer cells
    cpu_seconds: int = 900  # RLIMIT_CPU for the whole child
    memory_bytes: int = 8 << 30  # RLIMIT_AS (CPU only: CUDA maps far more address space)
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE


@dataclass
class Protections:
    """Which isolation mechanisms were in force, for the result and the logs."""

    active: list[str] = field(default_factory=list)
    off: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"active": self.active, "off": self.off}


class ChildDied(Exception):
    def __init__(self, returncode: int | None, during: str) -> None:
        self.returncode = returncode
        self.during = during
        super().__init__(describe_exit(returncode))


class ChildTimeout(Exception):
    def __init__(self, seconds: float, during: str) -> None:
        self.seconds = seconds
        self.during = during
        super().__init__(f"no answer within {seconds:g} s")


def describe_exit(code: int | None) -> str:
    if code is None:
        return "the process stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {
            "SIGSEGV": "a segmentation fault: the interpreter crashed",
            "SIGKILL": "killed, usually for using too much memory or CPU time",
            "SIGXCPU": "it used up its CPU-time limit",
            "SIGXFSZ": "it wrote a file larger than allowed",
            "SIGABRT": "the interpreter aborted",
        }.get(name, "")
        return f"the process was ended by {name}" + (f" ({hint})" if hint else "")
    return f"the process exited with status {code} (sys.exit or os._exit in your code?)"


def _can_unshare_network() -> bool:
    return sys.platform == "linux" and hasattr(os, "geteuid") and os.geteuid() == 0


def _preexec(limits: Limits, device: str, isolate_network: bool) -> None:
    """Runs in the forked child before exec: only async-signal-safe-ish calls."""
    if isolate_network:
        ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET)
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if device == "cpu":
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))


def _runtime_copy(scratch: Path) -> Path:
    """Copy the child's three modules into scratch: it imports nothing else of the kit."""
    pkg = scratch / ".runtime" / "autograder"
    pkg.mkdir(parents=True)
    here = Path(__file__).parent
    for name in _RUNTIME:
        shutil.copy(here / name, pkg / name)
    (pkg / "__init__.py").write_text("")
    return pkg.parent


class Sandbox:
    """One child process running one submission's answer cells."""

    def __init__(self, preamble: str, harness: str, cells: list[dict[str, str]], device: str, limits: Limits
                 ) -> None:
        self.preamble = preamble
        self.harness = harness
        self.cells = cells
        self.device = device
        self.limits = limits
        self.protections = Protections()
        self.proc: subprocess.Popen[bytes] | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-"))
        self._buffer = b""

    def _env(self) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.scratch), "TMPDIR": str(self.scratch),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        for key in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "LD_LIBRARY_PATH"):
            if key in os.environ:
                env[key] = os.environ[key]
        return env

    def start(self) -> dict[str, Any]:
        """Start the child and run the answer cells; returns the child's load report."""
        runtime = _runtime_copy(self.scratch)
        isolate_network = _can_unshare_network()
        self.protections = Protections()
        p = self.protections
        (p.active if isolate_network else p.off).append("network namespace (no network)")
        p.active += ["own process session", "scrubbed environment", "scratch working directory",
                     "rlimits: cpu time, file size, core dumps", "wall-clock deadline per call"]
        (p.active if self.device == "cpu" else p.off).append("rlimit: address space (memory)")
        bootstrap = f"import sys; sys.path.insert(0, {str(runtime)!r}); from autograder.child import main; main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.scratch,
            env=self._env(),
            start_new_session=True,
            preexec_fn=lambda: _preexec(self.limits, self.device, isolate_network),
        )
        hello = {"preamble": self.preamble, "harness": self.harness, "cells": self.cells, "device": self.device}
        header, _ = self._exchange(hello, [], self.limits.load_seconds, "loading your notebook")
        return header["load"]

    def request(self, header: dict[str, Any], buffers: list[bytes], timeout: float | None, during: str
                ) -> tuple[dict[str, Any], list[bytes]]:
        return self._exchange(header, buffers, timeout or self.limits.call_seconds, during)

    def _exchange(self, header: dict[str, Any], buffers: list[bytes], timeout: float, during: str
                  ) -> tuple[dict[str, Any], list[bytes]]:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            wire.write_frame(self.proc.stdin, header, buffers)  # type: ignore[arg-type]
        except (BrokenPipeError, OSError):
            raise ChildDied(self._reap(), during) from None
        deadline = time.monotonic() + timeout
        try:
            return wire.read_frame(lambda n: self._read(n, deadline, timeout, during))
        except ChildTimeout:
            self.kill()
            raise

    def _read(self, n: int, deadline: float, timeout: float, during: str) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while len(self._buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildTimeout(timeout, during)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, max(1 << 16, n - len(self._buffer)))
            if not chunk:
                raise ChildDied(self._reap(), during)
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _reap(self) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._buffer = b""

    def student_output(self, limit: int = 4000) -> str:
        log = self.scratch / "student-output.log"
        try:
            return log.read_bytes()[-limit:].decode(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)
