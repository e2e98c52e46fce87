"""Run student code in an isolated child process and talk to it in plain data.

The judge never imports or executes student code. A child is forked by the
zygote (autograder.sandbox.runtime.zygote), isolates itself (autograder.sandbox.runtime.isolation), and
serves frames on a pair of pipes; this module sends requests and waits for
answers with a deadline. The judge holds the box from outside (autograder.sandbox.control): it can freeze,
confine and kill it whole.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.sandbox.control import BoxControl
from autograder.sandbox.launcher import Zygote
from autograder.sandbox.limits import Limits
from autograder.sandbox.runtime import isolation, wire
from autograder.sandbox.runtime.isolation import SandboxUnavailable


@functools.cache
def _judge_sees_cuda() -> bool:
    """Whether the judge's own torch finds a GPU (asked only when a box found none: it initialises CUDA here)."""
    import torch

    return torch.cuda.is_available()


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


@dataclass(frozen=True)
class Program:
    """What one box runs: the kit's `preamble` and `harness`, before any untrusted code, then the untrusted
    `cells` ({"id", "source"} each, in order)."""
    preamble: str
    harness: str
    cells: list[dict[str, str]]
    loads_dynamo: bool = False  # the preamble imports torch._dynamo: fork from a zygote that imported it


class Sandbox:
    """One child process running one Program, forked by `zygote`."""

    def __init__(self, zygote: Zygote, program: Program, device: str, limits: Limits,
                 data_dir: Path | None = None) -> None:
        self.zygote = zygote
        self.program = program
        self.device = device
        self.limits = limits
        self.data_dir = data_dir
        self.plan: isolation.Plan | None = None
        self.lease: isolation.UidLease | None = None
        self.pid: int | None = None
        self.box_pid: int | None = None  # the process running student code
        self.control: BoxControl | None = None  # the judge's hold on it and every process it starts
        self.alive = False
        self._to_child: int | None = None
        self._from_child: int | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="grade-"))
        self._buffer = bytearray()  # grown in place: concatenating bytes copied all of it for every chunk
        self.output_dropped = False  # the child said it dropped some of the student's prints (a note, never a point)

    def _env(self) -> dict[str, str]:
        # One CPU thread: with intra-op threads, a busy core makes vectorized code
        # spin-wait (measured: 0.07 ms -> 24 ms for a softmax) and timing checks flip.
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.scratch), "TMPDIR": str(self.scratch),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        return {**env, **isolation.gpu_env()}

    def start(self) -> dict[str, Any]:
        """Start the child and run the program: {"load": the child's report on running the cells (unchecked),
        "cuda": whether the child has CUDA, as it found before any student code ran}.

        Raises SandboxUnavailable, having run no student code, if any protection of the plan
        cannot be applied (fail closed).
        """
        try:
            self.lease = isolation.UidLease() if os.geteuid() == 0 else None
            memory = self.limits.memory_bytes if self.device == "cpu" else None
            data = [self.data_dir] if self.data_dir else []
            self.plan = isolation.make_plan(self.limits.cpu_seconds, self.limits.file_bytes, memory, self.scratch,
                                            self.limits.scratch_bytes, data, [self.zygote.runtime], self.lease)
            self.plan.cuda = self.device == "cuda"
            isolation.prepare_scratch(self.plan)
            self.control = BoxControl(self.plan.uid, self.plan.namespaces, self.limits.box_memory_bytes, self.kill)
        except OSError as e:
            raise SandboxUnavailable(f"preparing the sandbox failed: {e}") from None
        child_in, self._to_child = os.pipe()
        self._from_child, child_out = os.pipe()
        os.set_blocking(self._to_child, False)  # every write has a deadline (_write)
        try:
            self.pid, self.box_pid = self.zygote.spawn(self.plan, self.scratch, self._env(), child_in, child_out,
                                                       self.program.loads_dynamo)
        finally:
            os.close(child_in)
            os.close(child_out)
        self.alive = True
        during = "running the preamble and the harness"
        try:
            if self.box_pid is None:
                raise SandboxUnavailable("the sandboxed process could not be started")
            # Moving a process into a group waits for an RCU grace period (about 10 ms): the child finishes isolating
            # itself and runs the preamble meanwhile. The cells come after, so every process that untrusted code
            # starts joins the box's groups.
            setup_deadline = time.monotonic() + self.limits.load_seconds
            self._send({"preamble": self.program.preamble, "harness": self.program.harness, "device": self.device}, [],
                       setup_deadline, self.limits.load_seconds, during)
            self.control.attach(self.box_pid)
            ready, _ = wire.read_frame(lambda n: self._read(n, time.monotonic() + 30, 30, "setting up the sandbox"))
            if ready != {"ready": True}:
                raise SandboxUnavailable("the sandboxed process did not report ready")
        except (ChildDied, ChildTimeout, wire.WireError) as e:
            self.kill()
            raise SandboxUnavailable(f"setting up the sandbox failed ({e})") from None
        active, off = self.control.describe()
        self.plan.active += active
        self.plan.off += off
        setup, _ = self._receive(setup_deadline, self.limits.load_seconds, during)
        # Sent before any student code ran, so it is the one part of the start that the submission cannot forge.
        facts = setup.get("setup")
        if not isinstance(facts, dict) or facts.get("setup_error") is not None:
            self.kill()
            raise SandboxUnavailable(f"the preamble or the harness failed: "
                                     f"{facts.get('setup_error') if facts else facts}")
        if self.device == "cuda" and facts.get("cuda") is not True and _judge_sees_cuda():
            self.kill()
            raise SandboxUnavailable(f"this machine has a CUDA GPU but the sandboxed process could not use it "
                                     f"({facts.get('cuda_error')})")
        header, _ = self._exchange({"cells": self.program.cells}, [], self.limits.load_seconds, "running the cells")
        return {"load": header.get("load"), "cuda": facts.get("cuda") is True}

    def request(self, header: dict[str, Any], buffers: list[bytes], timeout: float | None, during: str
                ) -> tuple[dict[str, Any], list[bytes]]:
        return self._exchange(header, buffers, timeout or self.limits.call_seconds, during)

    def _exchange(self, header: dict[str, Any], buffers: list[bytes], timeout: float, during: str
                  ) -> tuple[dict[str, Any], list[bytes]]:
        """Send one frame and read the answer, both within `timeout`; past it the box is killed."""
        deadline = time.monotonic() + timeout
        self._send(header, buffers, deadline, timeout, during)
        return self._receive(deadline, timeout, during)

    def _send(self, header: dict[str, Any], buffers: list[bytes], deadline: float, timeout: float, during: str
              ) -> None:
        try:
            self._write(wire.frame(header, buffers), deadline, timeout, during)
        except ChildTimeout:
            self.kill()
            raise

    def _receive(self, deadline: float, timeout: float, during: str) -> tuple[dict[str, Any], list[bytes]]:
        try:
            header, buffers = wire.read_frame(lambda n: self._read(n, deadline, timeout, during))
        except ChildTimeout:
            self.kill()
            raise
        self.output_dropped |= isinstance(header, dict) and header.get("dropped") is True
        return header, buffers

    def _write(self, pieces: list[bytes], deadline: float, timeout: float, during: str) -> None:
        """Write to a child that may have stopped reading: never blocks past `deadline`."""
        assert self._to_child is not None
        for piece in pieces:
            view = memoryview(piece)
            while view:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChildTimeout(timeout, during)
                _, ready, _ = select.select([], [self._to_child], [], left)
                if not ready:
                    continue
                try:
                    view = view[os.write(self._to_child, view[:1 << 20]):]
                except BlockingIOError:
                    continue
                except OSError:  # a broken pipe: the child is gone
                    raise ChildDied(self._reap(), during) from None

    def _read(self, n: int, deadline: float, timeout: float, during: str) -> bytes:
        assert self._from_child is not None
        while len(self._buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildTimeout(timeout, during)
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise ChildDied(self._reap(), during)
            self._buffer += chunk
        with memoryview(self._buffer) as view:
            out = bytes(view[:n])
        del self._buffer[:n]
        return out

    def _reap(self) -> int | None:
        """The exit code of a child that closed its channel (killing it if it lingers)."""
        assert self.pid is not None
        code = self.zygote.wait(self.pid, 5.0)
        if code is None:
            self.kill()
        self.alive = False
        return code

    def kill(self) -> None:
        """End every process of this submission. Its groups' kill where it has them; with a PID namespace,
        killing its first process makes the kernel kill the rest; without, the uid's processes are hunted
        down by the judge."""
        if self.control is not None:
            self.control.kill()
        if self.pid is not None and self.alive:
            for pid in {self.box_pid, self.pid} - {None}:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)  # type: ignore[arg-type]
            if self.plan is not None and not self.plan.namespaces:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
                if self.plan.uid is not None:
                    isolation.kill_uid(self.plan.uid)
            self.zygote.wait(self.pid, 5.0)
        self.alive = False
        self._buffer = bytearray()
        for fd in (self._to_child, self._from_child):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._to_child, self._from_child = None, None

    def close(self) -> None:
        """Kill the box and remove what it had; never raises, recurses or blocks for long."""
        self.kill()
        if self.control is not None:
            self.control.close()
        if self.plan is not None and self.plan.box:
            with contextlib.suppress(OSError):
                os.rmdir(self.plan.box)
        if self.lease is not None:
            self.lease.release()
        if self.plan is not None:
            isolation.release_scratch(self.plan)
        else:
            isolation.remove_tree(str(self.scratch))
