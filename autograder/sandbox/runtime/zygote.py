"""The zygote: imports torch once, then forks one child per submission.

Importing torch costs about 1.7 s, so starting a fresh interpreter per
submission (and after every crash) dominates grading time. The zygote is a
trusted process that holds only torch and the child runtime (never the
checks, the solutions or a seed); the judge asks it to fork, and the forked
process isolates itself (autograder.sandbox.runtime.isolation) before it reads
any student code. It runs from the judge's copy of autograder/sandbox/runtime/
(the children get the same copy and nothing else of the kit), and it is the
only way a child starts.

It is also the keeper of last resort: when the judge is gone (its channel
closes, or the zygote is handed to another parent), it kills every box it
forked before it exits; and each child gets a parent-death signal, so boxes
die with a zygote that is killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 1.0  # how often an idle zygote checks that its judge still lives


def _spawn(req: dict, fds: list[int], sock: socket.socket) -> tuple[int, int | None]:
    """Fork a child that isolates itself, says it is ready, then serves; returns (pid, box pid).

    The box pid is the process running student code (PID 1 of its namespace,
    or the child itself without namespaces): killing it ends everything the
    submission started. None if the sandbox could not be set up.
    """
    from autograder.sandbox.runtime import child, isolation, wire

    report_r, report_w = os.pipe()
    zygote = os.getpid()
    pid = os.fork()
    if pid:
        os.close(report_w)
        ready, _, _ = select.select([report_r], [], [], 30.0)
        text = os.read(report_r, 32) if ready else b""
        os.close(report_r)
        return pid, int(text) if text.isdigit() else None
    status = isolation.SETUP_FAILED
    try:  # pragma: no cover - runs in the forked child
        if ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != zygote:
            os._exit(status)  # no signal would reach it, or the zygote is already gone
        sock.close()
        os.close(report_r)
        os.setsid()
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        for fd in fds:
            os.close(fd)
        os.environ.clear()
        os.environ.update(req["env"])
        isolation.enter(isolation.Plan.from_dict(req["plan"]), req["cwd"], report_w)
        # Before any student code: from here on, an exit is the submission's doing, not the sandbox's.
        with os.fdopen(os.dup(1), "wb") as channel:
            wire.write_frame(channel, {"ready": True}, [])
        status = 1  # an error escaping the child's own handling
        child.main()
        status = 0
    finally:
        os._exit(status)


def _wait(pid: int, timeout: float) -> int | None:
    """Exit code (negative: killed by that signal), or None if still running after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)


def _import_dynamo() -> None:
    """An optimizer's first step and torch.func import torch._dynamo (1-3.5 s here): once, only for chapters that
    need it (Chapter.loads_dynamo), and before any fork so that every child shares it."""
    import torch._dynamo  # noqa: F401


def warm_up(torch: Any, child: Any) -> None:
    """What every child would otherwise import on its own, done once before any fork: what autograd.grad imports
    when given an output gradient (sympy's symbolic shapes, 0.3 s; imported, not run: a backward pass here would
    start autograd's device threads on a GPU machine, and no child could run one after the fork), and the kit's
    first operator trace (where a torch wraps dispatch modes in torch._dynamo.disable, see child.Trace, this imports
    torch._dynamo; with torch 2.13 nothing)."""
    import torch.fx.experimental.symbolic_shapes

    with child.OpTrace():
        torch.zeros(1).add_(1)


def _kill_boxes(boxes: dict[int, tuple[int | None, int | None, bool]]) -> None:
    """Kill every child still listed, its box and, without a PID namespace, every process of its uid."""
    from autograder.sandbox.runtime import isolation

    for pid, (box, uid, namespaces) in boxes.items():
        for target in {pid, box} - {None}:
            with contextlib.suppress(OSError):
                os.kill(target, signal.SIGKILL)  # type: ignore[arg-type]
        if uid is not None and not namespaces:
            isolation.kill_uid(uid)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)


def _serve(sock: socket.socket, warmed: bool,
           boxes: dict[int, tuple[int | None, int | None, bool]]) -> None:
    """Answer the judge's requests until its channel closes or it dies."""
    judge = os.getppid()
    while True:
        ready, _, _ = select.select([sock], [], [], POLL_SECONDS)
        if not ready:
            if os.getppid() != judge:  # the judge died (its channel may live on in a process it forked)
                return
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
        except OSError:
            return
        if not msg:
            return
        req = json.loads(msg)
        if req["op"] == "spawn":
            if req.get("warm") and not warmed:
                _import_dynamo()
                warmed = True
            pid, box = _spawn(req, fds, sock)
            for fd in fds:
                os.close(fd)
            plan = req["plan"]
            boxes[pid] = (box, plan.get("uid"), plan.get("box") is not None)
            sock.send(json.dumps({"pid": pid, "box": box}).encode())
        elif req["op"] == "wait":
            pid = int(req["pid"])
            code = _wait(pid, float(req["timeout"]))
            if code is not None:
                boxes.pop(pid, None)
            sock.send(json.dumps({"code": code}).encode())


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    import torch  # the point of the zygote: imported once

    from autograder.sandbox.runtime import (  # noqa: F401  (loaded before any fork)
        child,
        isolation,
        landlock,
        syscalls,
        wire,
    )

    syscalls.program()  # the seccomp filter, built once for every child
    warm_up(torch, child)
    warmed = sys.argv[2:] == ["warm"]
    if warmed:  # asked for at start: the judge imports its own torch meanwhile
        _import_dynamo()
    boxes: dict[int, tuple[int | None, int | None, bool]] = {}  # child pid -> (box pid, uid, PID namespace)
    try:
        _serve(sock, warmed, boxes)
    finally:
        _kill_boxes(boxes)
        os._exit(0)  # nothing to flush or save: skip the interpreter's teardown of torch (about 0.8 s)


if __name__ == "__main__":
    main()
