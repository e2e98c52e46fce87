"""The judge's handle on the zygote (autograder.sandbox.runtime.zygote), torch-free on purpose.

The zygote imports torch (about 1.7 s) and warms up its dispatcher (1.5 s and
more). The command line starts it before the judge imports torch itself, so
the two imports run at once on two cores instead of one after the other.

A Zygote is handed to what forks from it (Sandbox, judging.student.Student, judging.judge.grade): the
entry points own it (the command line, grade-all's workers, nbgrader's KitAutograde, the self-test,
the tests' helpers). `zygote()` is their convenience only, never reached from the layers below them.
"""

from __future__ import annotations

import atexit
import json
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from autograder.sandbox.runtime import isolation

# All the child process gets of the kit: this folder, whole (its modules import nothing else of the kit).
RUNTIME = Path(__file__).resolve().parent / "runtime"
# The most a spawn may take: importing torch._dynamo first (up to 3.5 s) and the child's report (30 s at most).
SPAWN_SECONDS = 60.0


class Zygote:
    """The process that forks children; one per judge process. A handle that outlives its process: when the
    zygote has died (killed from outside, out of memory), the next spawn starts a new one."""

    def __init__(self, warm: bool = False) -> None:
        self.warm = warm
        self.runtime = Path(tempfile.mkdtemp(prefix="kit-runtime-"))
        pkg = self.runtime / "autograder" / "sandbox" / "runtime"
        shutil.copytree(RUNTIME, pkg, ignore=shutil.ignore_patterns("__pycache__"))
        for parent in pkg.parents[:2]:  # autograder/ and autograder/sandbox/, empty: nothing of the judge
            (parent / "__init__.py").write_text("")
        for p in (self.runtime, *self.runtime.rglob("*")):
            p.chmod(0o755)
        self._start()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        bootstrap = (f"import sys; sys.path.insert(0, {str(self.runtime)!r}); "
                     "from autograder.sandbox.runtime.zygote import main; main()")
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", bootstrap, str(theirs.fileno()), *(["warm"] if self.warm else [])],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8", **isolation.gpu_env()},
        )
        theirs.close()
        self.sock = ours

    def _ask(self, req: dict[str, Any], seconds: float, fds: list[int] | None = None) -> dict[str, Any]:
        """The zygote's answer within `seconds`; past it (or if it died) the zygote is killed, to be started
        again by the next spawn, and SandboxUnavailable is raised."""
        data = json.dumps(req).encode()
        self.sock.settimeout(seconds)
        try:
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.send(data)
            reply = self.sock.recv(1 << 16)
            if not reply:
                raise OSError("the zygote closed its channel")
            return json.loads(reply)
        except (OSError, ValueError) as e:  # socket.timeout is an OSError
            self.proc.kill()
            raise isolation.SandboxUnavailable(f"the zygote did not answer ({e})") from None

    def spawn(self, plan: isolation.Plan, cwd: Path, env: dict[str, str], stdin: int, stdout: int, warm: bool
              ) -> tuple[int, int | None]:
        """(the child's pid, the pid running student code, or None if its sandbox failed).

        `warm`: the child's grading imports torch._dynamo, so the zygote imports it first (see Chapter).
        """
        if not self.alive():
            self.sock.close()
            self.proc.wait()
            self._start()
        reply = self._ask({"op": "spawn", "plan": plan.to_dict(), "cwd": str(cwd), "env": env, "warm": warm},
                          SPAWN_SECONDS, [stdin, stdout])
        return int(reply["pid"]), reply["box"]

    def wait(self, pid: int, timeout: float) -> int | None:
        """The exit code of child `pid` once it ends, None if it runs past `timeout` or the zygote is gone."""
        if not self.alive():
            return None
        try:
            return self._ask({"op": "wait", "pid": pid, "timeout": timeout}, timeout + 10.0)["code"]
        except isolation.SandboxUnavailable:
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Close the channel: the zygote kills the boxes it still has and exits (see runtime/zygote.py)."""
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.runtime, ignore_errors=True)

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_zygote: Zygote | None = None


def zygote(warm: bool = False) -> Zygote:
    """The shared zygote of an entry point that grades many notebooks in one process (grade-all's workers,
    KitAutograde, the self-test, the tests): started on first use (its handle restarts a dead process), closed
    at exit.
    Only entry points call this; they hand the zygote to what they grade with.

    `warm`: a new zygote imports torch._dynamo right after torch, while the judge starts up (see Chapter).
    """
    global _zygote
    if _zygote is None:
        _zygote = Zygote(warm)
        atexit.register(_zygote.close)
    return _zygote
