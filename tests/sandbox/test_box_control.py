"""The judge's hold on the whole box: frozen while anything else is timed, confined to the judge's cores.

A box here is the sandboxed process running student code and every process it starts. These attacks need
root and a PID namespace, as tests/sandbox/test_sandbox.py's do.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from autograder.judging.notebook import load_submission
from autograder.judging.student import Student
from autograder.judging.timing import Run, interleave, reference_process
from autograder.sandbox import control, launcher
from autograder.sandbox.control import BoxControl, Hierarchy
from autograder.sandbox.process import Sandbox
from autograder.sandbox.runtime import isolation
from tests.kit import FAST, grade_fast, solved, zygote
from tests.sandbox.processes import named, until

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or isolation.machine()[0] != "root",
                                reason="the box's hold needs root and namespaces")

CH = "07_numerical_stability"


def _hierarchy(role: str, version: int) -> Hierarchy:
    found = [h for h in control.candidates()[role] if h.version == version]
    if not found:
        pytest.skip(f"no {role} group of cgroup v{version} can be made here")
    return found[0]


def _force(monkeypatch: pytest.MonkeyPatch, freezer: Hierarchy | None, others: bool = True) -> None:
    """Boxes started from here on get this freezer (None: the stop-signal sweep), and the machine's other groups
    unless `others` is False."""
    roles = control.machine() if others else dict.fromkeys(control.ROLES)
    monkeypatch.setattr(control, "machine", lambda: {**roles, "freezer": freezer})


def _started(tmp_path: Path, code: str, z: launcher.Zygote | None = None) -> tuple[Student, Sandbox]:
    student = Student(load_submission(solved(tmp_path, CH, softmax=code)), "cpu", FAST, time.monotonic() + 120,
                      z or zygote())
    student.start()
    assert student.sandbox is not None and student.sandbox.alive, student.fatal
    return student, student.sandbox


def _removed(paths: list[Path]) -> bool:
    """Whether the groups are gone, after a try at removing those closed while their processes were exiting."""
    control.remove_leftovers()
    return not any(p.exists() for p in paths)


@contextlib.contextmanager
def one_core() -> Iterator[tuple[int, launcher.Zygote]]:
    """The judge pinned to one core, as grade-all pins a worker, with a zygote started there (its boxes inherit it)."""
    saved = os.sched_getaffinity(0)
    core = max(saved)
    os.sched_setaffinity(0, {core})
    try:
        with launcher.Zygote() as zygote:
            yield core, zygote
    finally:
        os.sched_setaffinity(0, saved)


# row_sum as the guide's slicing loop (about 1x the reference loop, below the 4x bar), with eight processes
# started at load time that spin on the core whenever row_sum has not run for 5 ms: while the judge times the
# reference loop, and the input making in the reference's process.
HOGGED_LOOP = """
import mmap, os, struct, time
_shared = mmap.mmap(-1, 16)  # [busy][last exit, monotonic seconds], shared with the hogs across fork

def _hog():
    os.setsid()  # an autogroup of its own: each hog gets a fair share of the core
    while True:
        busy, last = struct.unpack_from("<B7xd", _shared)
        if busy or time.monotonic() - last < 0.005:
            time.sleep(0.002)
        else:
            for _ in range(20000):
                pass

for _ in range(8):
    if os.fork() == 0:
        try:
            _hog()
        finally:
            os._exit(0)

def row_sum(x):
    _shared[0] = 1
    try:
        z = torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
        for i in range(x.shape[0]):
            z += x[i]
        return z
    finally:
        struct.pack_into("<d", _shared, 8, time.monotonic())
        _shared[0] = 0
"""
VECTORIZED = "def row_sum(x):\n    return x.sum(dim=0)\n"


def _speed_check(tmp_path: Path, code: str, zygote: launcher.Zygote) -> tuple[str, str]:
    g = grade_fast(solved(tmp_path, "04_overloaded_ops", row_sum=code), only="row_sum_speed", zygote=zygote)
    assert len(g.results) == 1
    return g.results[0].status, g.results[0].output


def test_a_hog_that_spins_between_its_own_calls_cannot_slow_the_reference(tmp_path: Path) -> None:
    # Before the box was frozen while the reference is timed, this loop passed at 10.8x.
    with one_core() as (_, zygote):
        status, output = _speed_check(tmp_path, HOGGED_LOOP, zygote)
        assert status == "failed", output
        status, output = _speed_check(tmp_path, VECTORIZED, zygote)
        assert status == "passed", output


AFFINITY = """
import os
def softmax(logits, dim=-1):
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, set(range(os.cpu_count())))
        os._exit(0)
    os.waitpid(pid, 0)
    raise RuntimeError(f"AFFINITY {sorted(os.sched_getaffinity(0))}")
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to widen to")
def test_a_box_cannot_widen_its_cpu_set_beyond_the_judges(tmp_path: Path) -> None:
    if control.machine()["cpuset"] is None:
        pytest.skip("no cpuset group can be made here")
    # Before the cpuset group, the box reported every core.
    with one_core() as (core, zygote):
        g = grade_fast(solved(tmp_path, "07_numerical_stability", softmax=AFFINITY),
                       only="check_softmax_guide_example", zygote=zygote)
    output = g.results[0].output
    assert f"AFFINITY [{core}]" in output, output


# A child of the box and a grandchild in a session of its own, each counting in a file of the scratch folder.
COUNTERS = """
import os
def _count(path):
    fd, n = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), 0
    while True:
        n += 1
        if n % 2000 == 0:
            os.pwrite(fd, str(n).encode().ljust(20), 0)
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        _count("count-grandchild")
    _count("count-child")
def softmax(logits, dim=-1):
    return torch.softmax(logits, dim)
"""


def _counts(sandbox: Sandbox) -> list[int]:
    # The scratch folder is a tmpfs in the box's own mount namespace: seen from outside through its /proc root.
    folder = Path(f"/proc/{sandbox.box_pid}/root{sandbox.scratch}")
    paths = [folder / f"count-{who}" for who in ("child", "grandchild")]
    return [int(p.read_bytes() or b"0") if p.exists() else 0 for p in paths]


@pytest.mark.parametrize("way", ["cgroup v2", "cgroup v1", "stop-signal sweep by PID namespace",
                                 "stop-signal sweep by uid"])
def test_a_frozen_box_runs_nothing_until_thawed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str) -> None:
    if way.startswith("cgroup"):
        _force(monkeypatch, _hierarchy("freezer", int(way[-1])))
    else:
        _force(monkeypatch, None, others=False)  # no group at all: the box's processes are found in /proc
    student, sandbox = _started(tmp_path, COUNTERS)
    try:
        assert sandbox.control is not None and sandbox.plan is not None and sandbox.box_pid is not None
        hold = sandbox.control
        if way.endswith("uid"):  # as the judge finds a box without a PID namespace
            hold = BoxControl(sandbox.plan.uid, namespace=False)
            hold.attach(sandbox.box_pid)
        expected = f"cgroup freezer v{way[-1]}" if way.startswith("cgroup") else "stop-signal sweep"
        assert any(line.startswith(expected) for line in sandbox.plan.active), sandbox.plan.active
        assert until(lambda: all(n > 0 for n in _counts(sandbox)))
        assert len(hold.members()) >= 3  # the box, its child and its grandchild (by uid: any stray of it too)
        with hold.frozen() as done:
            assert done
            before = _counts(sandbox)
            time.sleep(0.3)
            assert _counts(sandbox) == before
        assert until(lambda: all(n > b for n, b in zip(_counts(sandbox), before, strict=True)), 5.0)
    finally:
        student.close()


STRAYS = """
import ctypes, os, signal, time
def _stray(kind):
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    ctypes.CDLL(None).prctl(15, TAG.encode(), 0, 0, 0)  # PR_SET_NAME: the test finds them by it
    if kind == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    while True:
        if kind == "spawn" and os.fork() == 0:
            time.sleep(0.05)
            os._exit(0)
        time.sleep(0.005)
        if kind == "spawn":
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
for kind in ("sleep", "stop", "spawn"):
    _stray(kind)
def softmax(logits, dim=-1):
    return torch.softmax(logits, dim)
"""


@pytest.mark.parametrize("version", [2, 1])
def test_killing_through_the_group_leaves_no_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     version: int) -> None:
    freezer = _hierarchy("freezer", version)
    if version == 1:  # every group in v1: the freeze, SIGKILL and thaw loop
        monkeypatch.setattr(control, "machine", lambda: {role: _hierarchy(role, 1) for role in control.ROLES})
    else:
        _force(monkeypatch, freezer)
    tag = f"kstray{os.getpid() % 10**6}"
    student, sandbox = _started(tmp_path, f"TAG = {tag!r}\n" + STRAYS)
    hold = sandbox.control
    try:
        assert hold is not None and sandbox.box_pid is not None
        paths = [g.path for g in hold.groups]
        assert paths
        assert until(lambda: len(named(tag)) >= 3)
        hold.kill()  # the groups' kill alone, not the sandbox's
        assert until(lambda: not hold.members() and not named(tag), 5.0), named(tag)
        # A group stops listing a process as it starts to exit; tearing down the box's threads and memory can
        # take a while on a loaded machine (state S seen here), so the end of the exit is awaited, not assumed.
        box = Path(f"/proc/{sandbox.box_pid}/stat")
        assert until(lambda: not box.exists() or "Z" in box.read_text().split(")")[1][:3], 10.0), box.read_text()
    finally:
        student.close()
    assert until(lambda: _removed(paths), 2.0)


@pytest.mark.parametrize("case", ["groups already removed", "processes still in them", "frozen"])
def test_close_never_raises_and_leaves_no_group(case: str) -> None:
    if not any(control.machine().values()):
        pytest.skip("no group can be made here")
    proc = subprocess.Popen(["sleep", "30"])
    hold = BoxControl(None, namespace=False)
    hold.attach(proc.pid)
    groups = [g.path for g in hold.groups]
    assert groups, "no group could be made"
    if case == "groups already removed":
        proc.kill()
        proc.wait()
        for path in groups:
            os.rmdir(path)
    elif case == "frozen":
        assert hold.freeze()
    started = time.monotonic()
    hold.close()
    hold.close()
    assert time.monotonic() - started < 0.1  # it never waits for a process to exit
    assert until(lambda: proc.poll() is not None, 2.0)  # killed with its groups
    assert until(lambda: _removed(groups), 2.0)


WIDENS = """
import os, time
os.sched_setaffinity(0, set(range(os.cpu_count())))
if os.fork() == 0:
    os.setsid()
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    time.sleep(60)
def softmax(logits, dim=-1):
    return torch.softmax(logits, dim)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to widen to")
def test_without_a_cpuset_group_each_freeze_sets_the_judges_cpus_again(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _force(monkeypatch, None, others=False)
    with one_core() as (core, z):
        student, sandbox = _started(tmp_path, WIDENS, z)
        try:
            assert sandbox.control is not None and sandbox.plan is not None
            assert any("CPU set enforced by the kernel" in line for line in sandbox.plan.off), sandbox.plan.off
            hold = sandbox.control

            def settled() -> bool:  # both processes asleep: the child has widened its own set too
                states = [Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                          for pid in hold.members()]
                return states == ["S", "S"]

            assert until(settled)
            members = hold.members()
            assert all(len(os.sched_getaffinity(pid)) > 1 for pid in members)  # widened
            with student.control.frozen():
                pass
            assert all(os.sched_getaffinity(pid) == {core} for pid in members)
        finally:
            student.close()


def test_the_timing_engine_freezes_the_box_while_the_reference_runs_and_thaws_it_when_that_fails(
        tmp_path: Path) -> None:
    student, sandbox = _started(tmp_path, COUNTERS)
    seen: list[list[int]] = []

    def reference_run(seed: int) -> None:
        seen.append(_counts(sandbox))
        time.sleep(0.3)
        seen.append(_counts(sandbox))
        raise RuntimeError("the reference failed")

    try:
        assert until(lambda: all(n > 0 for n in _counts(sandbox)))
        with reference_process(student, "") as ref, pytest.raises(RuntimeError, match="reference failed"):
            interleave([Run(student, lambda seed: None), Run(ref, reference_run)], torch.Generator(), 1, 0,
                       lambda seed, replies: None)
        assert len(seen) == 2 and seen[0] == seen[1]
        assert until(lambda: all(n > b for n, b in zip(_counts(sandbox), seen[1], strict=True)), 5.0)
    finally:
        student.close()


def test_a_dead_judges_groups_are_cleared_and_what_it_left_frozen_is_killed() -> None:
    where = control.machine()["freezer"]
    if where is None:
        pytest.skip("no freezer group can be made here")
    dead = subprocess.Popen(["true"])
    dead.wait()
    path = where.kit / f"box-{control._judge().split('-')[0]}-{dead.pid}-0"
    path.mkdir()
    proc = subprocess.Popen(["sleep", "30"])
    group = control.Group(path, where.version, {"freezer"})
    (path / "cgroup.procs").write_text(str(proc.pid))
    group.set_frozen(True)
    assert until(group.is_frozen, 2.0)
    control._clear_stale(where.kit, where.version)
    assert until(lambda: proc.poll() is not None, 2.0)
    assert until(lambda: _removed([path]), 2.0)


def test_a_box_that_cannot_be_frozen_is_killed_and_started_again_when_next_called(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    student, sandbox = _started(tmp_path, "def softmax(logits, dim=-1):\n    return torch.softmax(logits, dim)\n")
    try:
        monkeypatch.setattr(BoxControl, "freeze", lambda self: False)
        with student.control.frozen():
            assert not sandbox.alive
        x = torch.randn(3, 4)
        assert torch.allclose(student.call("softmax", x), torch.softmax(x, -1))
        assert student.restarts == 1
    finally:
        student.close()


LAG = 24  # MiB: how far the VmHWM reading may fall short of the true rise (see control.BoxControl._start_peak)


# softmax that holds `logits.numel()` MiB for a moment (a float32 tensor touched whole), then frees it.
HOLDS_MEMORY = """
def softmax(logits, dim=-1):
    held = torch.ones(logits.numel() << 18)
    del held
    return torch.softmax(logits, dim)
"""


@pytest.mark.parametrize("accounting", ["memory group", "VmHWM"])
def test_the_judge_reads_how_far_the_boxs_memory_rose_during_a_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    accounting: str) -> None:
    """From the kernel, outside the box: the peak of a call that allocated and freed 300 MiB, and of one that did
    not; reset before each, so an earlier peak does not count."""
    if accounting == "VmHWM":
        roles = control.machine()
        monkeypatch.setattr(control, "machine", lambda: {**roles, "memory": None})
    elif control.machine()["memory"] is None:
        pytest.skip("no memory group can be made here")
    student, _ = _started(tmp_path, HOLDS_MEMORY)
    try:
        grown: dict[int, list[int]] = {}
        for mib in (300, 1, 300, 1):
            with student.control.peak_memory() as peak:
                student.call("softmax", torch.zeros(mib))
            assert peak.how is not None and peak.grown is not None
            assert (accounting == "VmHWM") == ("VmHWM" in peak.how), peak.how
            grown.setdefault(mib, []).append(peak.grown >> 20)
        # VmHWM less the file pages mapped meanwhile falls short of the true rise by the code first run before the
        # peak (torch.ones' own, on the first call): a few MiB, LAG at most.
        assert all(300 - LAG <= g < 320 for g in grown[300]) and all(g < 8 for g in grown[1]), grown
    finally:
        student.close()
    with student.control.peak_memory() as peak:  # no box alive: nothing measured
        pass
    assert (peak.how, peak.grown) == (None, None)


# softmax that spins for `logits.numel()` / 100 s of CPU in a thread that has ended by the time it returns.
BURNS_CPU = """
import threading, time
def softmax(logits, dim=-1):
    def spin():
        end = time.thread_time() + logits.numel() / 100
        while time.thread_time() < end:
            pass
    worker = threading.Thread(target=spin)
    worker.start()
    worker.join()
    return torch.softmax(logits, dim)
"""


@pytest.mark.parametrize("accounting", ["cgroup v2", "proc"])
def test_the_judge_reads_the_cpu_time_a_call_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   accounting: str) -> None:
    """From the kernel, outside the box: a thread that spun 0.3 s and ended counts; an idle box hardly any."""
    if accounting == "cgroup v2":
        _force(monkeypatch, _hierarchy("freezer", 2))
    else:
        _force(monkeypatch, None, others=False)
    student, _ = _started(tmp_path, BURNS_CPU)
    try:
        spent_on = {}
        for n in (30, 1):
            with student.control.cpu_time() as spent:
                student.call("softmax", torch.zeros(n))
            assert spent.how is not None and spent.seconds is not None
            assert ("cgroup v2" in spent.how) == (accounting == "cgroup v2"), spent.how
            spent_on[n] = spent.seconds
        assert 0.28 <= spent_on[30] < 0.6 and spent_on[1] < 0.05, spent_on
    finally:
        student.close()


def test_a_v2_memory_mark_that_cannot_be_reset_falls_back_to_vmhwm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    """As on kernels before 6.12, where memory.peak refuses to be opened for writing."""
    roles = control.machine()
    monkeypatch.setattr(control, "machine", lambda: {**roles, "memory": None})
    student, sandbox = _started(tmp_path, HOLDS_MEMORY)
    hold = sandbox.control
    assert hold is not None
    try:
        fake = tmp_path / "v2-group"
        (fake / "memory.peak").mkdir(parents=True)  # opening it for writing fails
        hold.groups.append(control.Group(fake, 2, {"memory"}))
        with student.control.peak_memory() as peak:
            student.call("softmax", torch.zeros(100))
        assert peak.how is not None and "VmHWM" in peak.how and peak.grown is not None
        assert 100 - LAG <= peak.grown >> 20 < 120, peak.grown
    finally:
        hold.groups = [g for g in hold.groups if g.path.parent != tmp_path]
        student.close()
