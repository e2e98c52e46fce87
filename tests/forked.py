"""`python -m <module> ...` for the tests, forked from a process that has imported nbgrader and torch once.

A test that runs nbgrader's commands or the kit's as an instructor would paid 1.8 s to import nbgrader and 1.3 s
to import torch in every new interpreter: about a hundred of them in a run. `run` gives the same process as
`subprocess.run([sys.executable, "-m", module, *args], cwd=..., env=..., capture_output=True, text=True)`:
its own pid, working directory, environment, stdin at /dev/null, stdout and stderr, exit code, and the
interpreter's own exit (atexit, multiprocessing's cleanup), only without starting an interpreter. Why not the
stdlib: multiprocessing's forkserver is one per process, and the kit's grade-all already uses it with its own
preload. The kit's package is never imported in the server (a course copy imports its own, from its folder).

What a fork cannot give is what an interpreter reads once at its start: the PYTHON* variables, and what torch's
libraries read when loaded (OMP_*, MKL_*, CUDA_*, TORCH_*). A call whose environment differs there from this
process's runs as a real subprocess. The instructor guide's test (tests/course/test_instructor_guide.py) keeps
real processes throughout, as the guide prints them.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

READ_AT_START = ("PYTHON", "OMP_", "MKL_", "KMP_", "CUDA_", "TORCH_")

SERVER = r"""
import json, os, runpy, sys
import nbgrader.apps, torch  # what every command would import again
del sys.path[0]  # -c's "": each command gets its own working directory first, as -m gives it
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                                (2, request["stderr"], os.O_WRONLY)):
            os.dup2(os.open(path, flags), fd)
        sys.path.insert(0, request["cwd"])
        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        sys.exit(0)  # the interpreter's own exit: atexit handlers, then the buffers flushed
    print(json.dumps({"pid": pid}), flush=True)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}), flush=True)
"""

class _Server:
    """The forking process, and the part of a reply line read so far."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buffer = b""

    def send(self, request: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float | None) -> dict[str, int]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            if timeout is not None and not select.select([fd], [], [], timeout)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise RuntimeError("the tests' command server died")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        reply: dict[str, int] = json.loads(line)
        return reply


_server: _Server | None = None


def _started() -> _Server:
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = _Server()
    return _server


def _read_at_start(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(READ_AT_START)}


def run(module: str, *args: str, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m module *args` in `cwd` with `env` (this process's by default), its output captured as text."""
    env = dict(os.environ if env is None else env)
    cwd = str(Path(cwd or os.getcwd()).resolve())
    command = [sys.executable, "-m", module, *args]
    if _read_at_start(env) != _read_at_start(os.environ):
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    server = _started()
    with tempfile.TemporaryDirectory(prefix="kit-forked-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        out.touch()
        err.touch()
        server.send({"module": module, "args": list(args), "cwd": cwd, "env": env, "stdout": str(out),
                     "stderr": str(err)})
        pid = server.reply(None)["pid"]
        try:
            returncode = server.reply(timeout)["returncode"]
        except TimeoutError:
            os.killpg(pid, signal.SIGKILL)
            server.reply(None)
            raise subprocess.TimeoutExpired(command, timeout or 0.0, out.read_text(), err.read_text()) from None
        return subprocess.CompletedProcess(command, returncode, out.read_text(), err.read_text())
