"""The box's life, held by the judge: bounded scratch, cleanup that cannot fail, writes with a deadline, and
no process that outlives its judge.

Each test is an attack a submission can make; those that need the full sandbox skip where the grader is not
root with namespaces (the result then lists the parts as off).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from autograder.sandbox.launcher import Zygote
from autograder.sandbox.limits import Limits
from autograder.sandbox.process import ChildDied, ChildTimeout, Program, Sandbox
from autograder.sandbox.runtime import isolation, wire
from tests.kit import FAST, ROOT, grade_fast, solution_cells, solved, task_scores, zygote
from tests.sandbox.processes import kill_named, named, until

CH = "07_numerical_stability"
full_sandbox = pytest.mark.skipif(os.geteuid() != 0 or isolation.machine()[0] != "root",
                                  reason="the full sandbox needs root and namespaces")


def _sandbox(cells: str, limits: Limits = FAST, owner: Zygote | None = None) -> Sandbox:
    """A sandbox running `cells` as its one answer cell, no chapter around it."""
    return Sandbox(owner or zygote(), Program("import torch", "", [{"id": "cell", "source": cells}]), "cpu", limits)


def _call(box: Sandbox, name: str, *args: object, timeout: float = 3.0) -> Any:
    """What `name(*args)` returned in the box (an error it raised fails the test)."""
    header, buffers = wire.encode([list(args), {}, None])
    header.update(op="call", name=name, wrt=[])
    reply, out = box.request(header, buffers, timeout, f"{name}()")
    assert reply.get("ok") is True, reply
    return wire.decode(reply, out)["value"]


# -- scratch: bounded, never the host's disk, and nothing left to clean ------------------------------

FILL = """
import os
def fill():
    written = 0
    try:
        for i in range(10**6):
            with open(f"junk-{i}", "wb") as f:
                f.write(bytes(1 << 20))
            written += 1 << 20
    except OSError as e:
        return (written, e.errno, sorted(os.listdir("."))[:1])
    return (written, 0, [])
"""


@full_sandbox
def test_a_submission_cannot_fill_the_disk_its_scratch_is_a_bounded_tmpfs() -> None:
    box = _sandbox(FILL, Limits(call_seconds=30, load_seconds=20, scratch_bytes=32 << 20))
    try:
        box.start()
        value = _call(box, "fill", timeout=30)
        written, errno = value[0], value[1]
        assert errno == 28 and written <= 32 << 20, value  # ENOSPC at the tmpfs's size
        assert os.listdir(box.scratch) == []  # the host's folder never held the files
    finally:
        box.close()
    assert not box.scratch.exists()


DEEP = """
import os
def deep():
    for _ in range(3000):
        os.mkdir("d")
        os.chdir("d")
    return 1
deep()
"""


@full_sandbox
def test_a_deep_folder_tree_cannot_make_cleanup_fail(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, softmax=DEEP + solution_cells(CH)["softmax"]))  # no GraderError from cleanup
    assert task_scores(g)["softmax"] > 0


def test_the_tree_remover_takes_any_depth_without_raising(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    for _ in range(3000):  # deeper than PATH_MAX and than Python's recursion limit
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    (root / "link").symlink_to(tmp_path / "kept")
    (tmp_path / "kept").write_text("the link is removed, never followed")
    isolation.remove_tree(str(root))
    isolation.remove_tree(str(root))  # gone already: still no error
    assert not root.exists() and (tmp_path / "kept").exists()


# -- the judge's writes have a deadline ------------------------------------------------------------

STALL = """
import gc, io, time
from autograder.sandbox.runtime import wire
def stall():
    channel = [f for f in gc.get_objects() if isinstance(f, io.BufferedWriter) and not f.closed
               and f.mode == "wb" and isinstance(f.name, int) and f.name > 2]
    for f in channel:  # forge the answer to this call, then never read again
        header, buffers = wire.encode({"value": None, "grads": None, "ops": None})
        wire.write_frame(f, {**header, "ok": True}, buffers)
    time.sleep(3600)
"""


def test_a_child_that_stops_reading_cannot_hang_the_judge() -> None:
    box = _sandbox(STALL)
    outcome: list[BaseException | None] = []

    def attack() -> None:
        try:
            _call(box, "stall")  # answered by the forgery
            _call(box, "stall", torch.zeros(1 << 20))  # more than a pipe holds, to a child that reads no more
            outcome.append(None)
        except (ChildTimeout, ChildDied) as e:
            outcome.append(e)

    try:
        box.start()
        judge = threading.Thread(target=attack, daemon=True)
        judge.start()
        judge.join(30)
        assert not judge.is_alive(), "the judge's write blocked forever"
        assert isinstance(outcome[0], ChildTimeout), outcome
        assert not box.alive  # killed at the deadline
    finally:
        box.close()


# -- no box outlives its judge ------------------------------------------------------------------------

STRAY = """
import ctypes, os, time
def _stray():
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    ctypes.CDLL(None).prctl(15, TAG.encode(), 0, 0, 0)  # PR_SET_NAME: the test finds it by it
    while True:
        time.sleep(0.05)
_stray()
"""
# The box itself takes the name too, and stays busy in its cell: it never reads the judge's channel again.
BUSY = "ctypes.CDLL(None).prctl(15, TAG.encode(), 0, 0, 0)\ntime.sleep(3600)\n"


def test_a_box_dies_with_its_judge(tmp_path: Path) -> None:
    tag = f"orphan{os.getpid() % 10**6}"
    notebook = solved(tmp_path, CH, softmax=f"TAG = {tag!r}\n" + STRAY + BUSY)
    script = ("from pathlib import Path\nfrom tests.kit import grade_fast\n"
              f"grade_fast(Path({str(notebook)!r}))\n")
    judge = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        assert until(lambda: bool(named(tag)), 60), f"no process named {tag} appeared"
        time.sleep(0.5)  # the box names itself after its stray
        judge.kill()  # no cleanup of its own: the kernel closes its channel to the zygote
        judge.wait()
        assert until(lambda: not named(tag), 10), "the submission's process outlived its judge"
    finally:
        judge.kill()
        kill_named(tag)


@full_sandbox
def test_a_box_dies_with_a_zygote_killed_outright() -> None:
    tag = f"orphanz{os.getpid() % 10**6}"
    with Zygote() as own:
        box = _sandbox(f"TAG = {tag!r}\n" + STRAY, owner=own)
        try:
            box.start()
            assert until(lambda: bool(named(tag)), 30), f"no process named {tag} appeared"
            own.proc.kill()  # SIGKILL: the zygote cleans nothing; the parent-death signals do
            assert until(lambda: not named(tag), 10), "the submission's process outlived the zygote"
        finally:
            box.close()
            kill_named(tag)


@full_sandbox
def test_a_box_killed_by_sigkill_is_reported_as_killed_not_as_a_sandbox_failure() -> None:
    # PID 1 of its namespace cannot kill itself: the kernel does, at the hard CPU-time limit.
    box = _sandbox("import resource, signal\ndef die():\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
                   "    resource.setrlimit(resource.RLIMIT_CPU, (1, 1))\n    while True:\n        pass\n")
    try:
        box.start()
        with pytest.raises(ChildDied) as died:
            _call(box, "die", timeout=30)
        assert died.value.returncode == -signal.SIGKILL, died.value.returncode
    finally:
        box.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the dedicated uid needs root")
@pytest.mark.parametrize("mode", ["uid", "plain"])
def test_the_weaker_modes_grade_and_say_what_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    mode: str) -> None:
    """Where the kernel refuses namespaces: a uid of its own still gets a bounded tmpfs scratch, mounted by the
    judge; plain mode says its scratch is the host's disk."""
    real = isolation.machine()
    monkeypatch.setattr(isolation, "machine", lambda: isolation.Machine(mode, False, real.seccomp))
    box = _sandbox(FILL, Limits(call_seconds=30, load_seconds=20, scratch_bytes=16 << 20))
    try:
        box.start()
        assert box.plan is not None
        bounded = any("tmpfs" in p for p in box.plan.active)
        assert bounded == (mode == "uid"), box.plan.active
        assert any("host's disk" in p for p in box.plan.off) == (mode == "plain"), box.plan.off
        if mode == "uid":
            written, errno = _call(box, "fill", timeout=30)[:2]
            assert errno == 28 and written <= 16 << 20
    finally:
        box.close()
    assert not box.scratch.exists()
    g = grade_fast(solved(tmp_path, CH))
    assert g.score == g.max_score
