"""Run student code in an isolated child process and talk to it in plain data.

The judge never imports or executes student code. This module starts
`autograder.child` in a fresh scratch directory with a scrubbed environment,
resource limits, its own session (so a whole process tree can be killed) and,
where the machine allows it, no network. It then sends frames and waits for
answers with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder import isolation, wire

_RUNTIME = ("__init__.py", "wire.py", "child.py")  # all the child gets of the kit


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 20.0  # one call into student code, wall clock
    load_seconds: float = 60.0  # running the answer cells
    cpu_seconds: int = 900  # RLIMIT_CPU for the whole child
    memory_bytes: int = 8 << 30  # RLIMIT_AS (CPU only: CUDA maps far more address space)
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE


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

    def __init__(self, preamble: str, harness: str, cells: list[dict[str, str]], device: str, limits: Limits,
                 notebook_dir: Path | None = None, data_dir: Path | None = None) -> None:
        self.preamble = preamble
        self.harness = harness
        self.cells = cells
        self.device = device
        self.limits = limits
        self.notebook_dir = notebook_dir
        self.data_dir = data_dir
        self.plan: isolation.Plan | None = None
        self.lease: isolation.UidLease | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-"))
        self._buffer = b""

    def _env(self) -> dict[str, str]:
        # One CPU thread: with intra-op threads, a busy core makes vectorized code
        # spin-wait (measured: 0.07 ms -> 24 ms for a softmax) and timing checks flip.
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.scratch), "TMPDIR": str(self.scratch),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        for key in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
            if key in os.environ:
                env[key] = os.environ[key]
        return env

    def start(self) -> dict[str, Any]:
        """Start the child and run the answer cells; returns the child's load report."""
        runtime = _runtime_copy(self.scratch)
        self.lease = isolation.UidLease() if os.geteuid() == 0 else None
        memory = self.limits.memory_bytes if self.device == "cpu" else None
        keep = [self.scratch.resolve()] + ([self.data_dir.resolve()] if self.data_dir else [])
        plan = isolation.make_plan(self.limits.cpu_seconds, self.limits.file_bytes, memory, self.notebook_dir,
                                   self.lease, keep)
        isolation.give_to(self.scratch, plan)
        self.plan = plan
        bootstrap = f"import sys; sys.path.insert(0, {str(runtime)!r}); from autograder.child import main; main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.scratch,
            env=self._env(),
            start_new_session=True,
            preexec_fn=lambda: isolation.preexec(plan),
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
        if self.lease is not None:
            self.lease.kill_all()
        self._buffer = b""

    def student_output(self, limit: int = 4000) -> str:
        log = self.scratch / "student-output.log"
        try:
            return log.read_bytes()[-limit:].decode(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        self.kill()
        if self.lease is not None:
            self.lease.release()
        shutil.rmtree(self.scratch, ignore_errors=True)
