"""The judge's hold on a box from outside: the sandboxed process running student code and every process it starts.

Timing compares student code with a reference run in another process (judging/timing.py). A box left running
meanwhile could load the CPU exactly then, or widen its CPU set past the core a grade-all worker was pinned to.
So the judge freezes the box whole while anything else is timed, and confines it to the judge's own CPUs:

- with cgroups the judge can make (root, or a delegated tree): one group per box in each hierarchy, under the
  judge's own cgroup in a kit folder; the freezer (v2 cgroup.freeze, else v1 freezer.state), a cpuset (the
  judge's affinity when the box starts), pids.max, a memory limit for the box as a whole (its processes
  together, the files they keep on its tmpfs mounts, kernel memory such as pipe buffers; RLIMIT_AS bounds
  each process alone), and kill (v2 cgroup.kill, else freeze, SIGKILL and thaw);
- else signals from the judge: SIGSTOP to every process of the box, swept until none runs, SIGCONT to thaw,
  and the judge's affinity set again on every thread of the box when it starts and each time it is frozen.

A process joins its parent's groups when it starts, so the box is attached before it runs any student code.
No judge fails just because cgroups are missing: what is in force goes in the sandbox plan's report.

The judge also reads how much memory the box took during a block (BoxControl.peak_memory), from the kernel's own
accounting, which nothing in the box can rewrite: the box's memory group's high-water mark (v1
memory.max_usage_in_bytes, reset by writing 0; v2 memory.peak, reset through one open file on kernels 6.12 and
later), else each process's own (VmHWM in /proc/PID/status, reset by writing 5 to /proc/PID/clear_refs, less the
file pages the process mapped meanwhile: see _start_peak), else nothing: the answer then says no measurement was
made. Likewise the CPU time the box used during a block (BoxControl.cpu_time): its v2 group's cpu.stat, else each
process's own accounting in /proc.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autograder.sandbox.runtime.isolation import NPROC, processes_of

KIT = "effective-pytorch-kit"  # the folder holding the boxes' groups in each hierarchy
FREEZE_SECONDS = 2.0  # a box not frozen by then is reported as not freezable (its sandbox kills it)
ROLES = ("freezer", "cpuset", "pids", "memory")
LINUX = sys.platform == "linux"  # cgroups, /proc and CPU affinity
_names = itertools.count()


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    kit: Path  # the kit folder under the judge's own cgroup in this hierarchy


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16).decode()
    finally:
        os.close(fd)


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _own_cgroups() -> dict[str, Path]:
    """The judge's own cgroup folder in each mounted hierarchy: {"unified" (v2) or a v1 controller: folder}."""
    own: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for key in controllers.split(",") if controllers else ["unified"]:
            own[key] = path
    found: dict[str, Path] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        fields = line.split()
        tail = fields[fields.index("-") + 1:]
        if tail[0] == "cgroup2":
            keys = ["unified"]
        elif tail[0] == "cgroup":
            keys = [o for o in tail[2].split(",") if o in own]
        else:
            continue
        for key in keys:
            rel = os.path.relpath(own.get(key, ".."), fields[3])  # the mount may show only a subtree
            if key in own and key not in found and not rel.startswith(".."):
                found[key] = Path(fields[4]) / rel
    return found


def _enable(folders: list[Path], controller: str) -> bool:
    """Hand a v2 controller down to the kit folder's groups, through each folder's cgroup.subtree_control."""
    for folder in folders:
        if controller not in _read(folder / "cgroup.controllers").split():
            return False
        if controller not in _read(folder / "cgroup.subtree_control").split():
            _write(folder / "cgroup.subtree_control", f"+{controller}")
    return True


def _judge() -> str:
    """This judge in a group's name: its PID namespace and pid, so that no two judges' names collide."""
    return f"{os.stat('/proc/self/ns/pid').st_ino}-{os.getpid()}"


def _clear_stale(kit: Path, version: int) -> None:
    """The groups of judges (of this PID namespace) that died without closing them: what is left in them is killed
    (a box frozen when its judge died would wait forever), then they are removed."""
    here = _judge().split("-")[0]
    for entry in os.scandir(kit):
        parts = entry.name.split("-")
        if len(parts) != 4 or parts[0] != "box" or parts[1] != here or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:
            stale = BoxControl(None, namespace=False)
            freezer = Path(entry.path, "cgroup.freeze" if version == 2 else "freezer.state").exists()
            stale.groups = [Group(Path(entry.path), version, {"freezer"} if freezer else set())]
            stale.close()
        except OSError:
            continue


def _kit_folder(own: Path, version: int) -> Path:
    kit = own / KIT
    kit.mkdir(exist_ok=True)
    if version == 1 and (kit / "cpuset.cpus").exists() and not _read(kit / "cpuset.cpus").strip():
        for name in ("cpuset.cpus", "cpuset.mems"):  # a v1 cpuset starts empty, and a child needs its parent's
            _write(kit / name, _read(own / name).strip())
    _clear_stale(kit, version)
    return kit


@functools.cache
def candidates() -> dict[str, list[Hierarchy]]:
    """For each role, the hierarchies where the judge can make a box's group, preferred first; probed once per
    process (it makes the kit folders and hands v2 controllers down to them)."""
    out: dict[str, list[Hierarchy]] = {role: [] for role in ROLES}
    if not LINUX:
        return out
    try:
        own = _own_cgroups()
    except (OSError, ValueError, IndexError):
        return out
    if "unified" in own:
        with contextlib.suppress(OSError):
            kit = _kit_folder(own["unified"], 2)
            if (kit / "cgroup.freeze").exists():
                out["freezer"].append(Hierarchy(2, kit))
            for role in ("cpuset", "pids", "memory"):
                with contextlib.suppress(OSError):
                    if _enable([own["unified"], kit], role):
                        out[role].append(Hierarchy(2, kit))
    for role, control in (("freezer", "freezer.state"), ("cpuset", "cpuset.cpus"), ("pids", "pids.max"),
                          ("memory", "memory.limit_in_bytes")):
        if role in own:
            with contextlib.suppress(OSError):
                kit = _kit_folder(own[role], 1)
                if (kit / control).exists():
                    out[role].append(Hierarchy(1, kit))
    return out


def machine() -> dict[str, Hierarchy | None]:
    """The hierarchy each role uses on this machine, or None where no group can be made."""
    return {role: found[0] if found else None for role, found in candidates().items()}


_leftovers: list[Path] = []  # groups closed while their processes were still exiting


def remove_leftovers() -> None:
    """Remove the groups closed earlier that are empty by now: each close tries, and a judge's first probe removes
    those of judges that have exited (_clear_stale)."""
    for path in list(_leftovers):
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue  # still populated
        _leftovers.remove(path)


@dataclass
class Group:
    path: Path
    version: int
    roles: set[str] = field(default_factory=set)

    def set_frozen(self, frozen: bool) -> None:
        if self.version == 2:
            _write(self.path / "cgroup.freeze", "1" if frozen else "0")
        else:
            _write(self.path / "freezer.state", "FROZEN" if frozen else "THAWED")

    def is_frozen(self) -> bool:
        if self.version == 2:
            return "frozen 1" in _read(self.path / "cgroup.events")
        return _read(self.path / "freezer.state").strip() == "FROZEN"

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.path / "cgroup.procs").split()]


@dataclass
class MemoryPeak:
    """How far the box's memory rose, at its peak during a block, above what it held when the block began; filled in
    as the block ends. `how` names the kernel's accounting it was read from; both None where none could be read."""

    how: str | None = None
    grown: int | None = None  # bytes


@dataclass
class CpuTime:
    """CPU time the box's processes used during a block, all their threads together; filled in as the block ends.
    `how` names the kernel's accounting it was read from; both None where none could be read."""

    how: str | None = None
    seconds: float | None = None


TICK = 1.0 / os.sysconf("SC_CLK_TCK") if LINUX else 0.01  # the unit of CPU times in /proc/PID/stat


@dataclass(frozen=True)
class _ProcessCpu:
    """One process's CPU accounting in /proc: each live thread's to the nanosecond (schedstat), the whole process's
    (threads that ended included) and its reaped children's in clock ticks."""

    threads: dict[int, int]  # tid -> ns
    ticks: int  # utime + stime
    children: int  # cutime + cstime


def _process_cpu(pid: int) -> _ProcessCpu:
    fields = _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    threads: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for tid in _tids(pid):
            with contextlib.suppress(OSError, ValueError, IndexError):
                threads[tid] = int(_read(Path(f"/proc/{pid}/task/{tid}/schedstat")).split()[0])
    return _ProcessCpu(threads, utime + stime, cutime + cstime)


def _cpu_between(before: _ProcessCpu | None, after: _ProcessCpu) -> float:
    """Seconds a process used between two readings (None: it started since). Its threads alive at the end count to
    the nanosecond; threads that ended in between only in its tick count, so that part counts where it is over
    two ticks (what the two readings' rounding can make up); its reaped children's ticks count whole."""
    start = before or _ProcessCpu({}, 0, 0)
    live = sum(ns - start.threads.get(tid, 0) for tid, ns in after.threads.items()) * 1e-9
    ended = (after.ticks - start.ticks) * TICK - live
    return live + (ended if ended > 2 * TICK else 0.0) + (after.children - start.children) * TICK


def _status_kib(pid: int, field: str) -> int:
    """A `field: N kB` line of /proc/PID/status, in KiB."""
    for line in _read(Path(f"/proc/{pid}/status")).splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise ValueError(f"no {field} for process {pid}")


def _pids() -> Iterator[int]:
    if not LINUX:  # no /proc: no sweep
        return iter(())
    return (int(e.name) for e in os.scandir("/proc") if e.name.isdigit())


def _stat(pid: int) -> tuple[str, int, int]:
    """(state, parent pid, session id) from /proc/PID/stat."""
    text = _read(Path(f"/proc/{pid}/stat"))
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[3])


def _tids(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def _stopped(pid: int) -> bool:
    """Runs no code: stopped, traced or dead (a zombie leader's threads checked one by one)."""
    try:
        state = _stat(pid)[0]
        if state != "Z":
            return state in "TtXx"
        return all(_read(Path(f"/proc/{pid}/task/{t}/stat")).rsplit(")", 1)[1].split()[0] in "TtZXx"
                   for t in _tids(pid))
    except (OSError, IndexError, ValueError):
        return True  # gone


class NoControl:
    """The control of a box that has none, or none alive: nothing to freeze, nothing measured (the fields of
    MemoryPeak and CpuTime stay None)."""

    @contextlib.contextmanager
    def frozen(self) -> Iterator[bool]:
        yield True  # no process of it runs

    @contextlib.contextmanager
    def peak_memory(self) -> Iterator[MemoryPeak]:
        yield MemoryPeak()

    @contextlib.contextmanager
    def cpu_time(self) -> Iterator[CpuTime]:
        yield CpuTime()


NO_CONTROL = NoControl()


class BoxControl:
    """Freezes, confines and kills one box; made before the box starts, attached before it runs student code.

    `uid`: the box's own uid, if it has one; `namespace`: whether the box is PID 1 of its own PID namespace.
    Where no group holds the box, those name its processes for the signal sweeps.
    """

    def __init__(self, uid: int | None, namespace: bool, memory_bytes: int | None = None,
                 unfreezable: Callable[[], None] | None = None) -> None:
        self.uid = uid
        self.namespace = namespace
        self.memory_bytes = memory_bytes  # for all the box's processes together; None: no memory group
        # What `frozen` does to a box it could not freeze: the sandbox kills it whole (its next request starts
        # it again), so that nothing of it runs while another process is timed.
        self.unfreezable = unfreezable
        self.cpus = os.sched_getaffinity(0) if LINUX else set()  # the judge's, as the box starts
        self.box: int | None = None
        self.groups: list[Group] = []
        self._pid_ns: str | None = None

    # -- start and report -------------------------------------------------------------------------

    def attach(self, box: int) -> None:
        """Put the box's process in a new group of each hierarchy this machine allows; a role whose group cannot be
        made falls back to signals. Never raises."""
        self.box = box
        if self.namespace:
            with contextlib.suppress(OSError):
                self._pid_ns = os.readlink(f"/proc/{box}/ns/pid")
        made: dict[Path, Group] = {}
        for role, where in machine().items():
            if where is None:
                continue
            try:
                group = made.get(where.kit) or self._make(where)
                made[where.kit] = group
                self._configure(group, role)
                group.roles.add(role)
            except OSError:
                continue
        for group in made.values():
            with contextlib.suppress(OSError):
                if group.roles:
                    _write(group.path / "cgroup.procs", str(box))
                    self.groups.append(group)
                    continue
            with contextlib.suppress(OSError):
                os.rmdir(group.path)
        if self._role("cpuset") is None:
            self._confine()

    def _make(self, where: Hierarchy) -> Group:
        while True:
            path = where.kit / f"box-{_judge()}-{next(_names)}"
            try:
                path.mkdir()
                return Group(path, where.version)
            except FileExistsError:
                continue

    def _configure(self, group: Group, role: str) -> None:
        if role == "cpuset":
            if group.version == 1:
                _write(group.path / "cpuset.mems", _read(group.path.parent / "cpuset.mems").strip())
            _write(group.path / "cpuset.cpus", ",".join(map(str, sorted(self.cpus))))
        elif role == "pids":
            _write(group.path / "pids.max", str(NPROC))
        elif role == "memory":
            if self.memory_bytes is None:
                raise OSError("no memory limit asked for")
            limit = str(self.memory_bytes)  # and no swap beyond it
            settings = ([("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)]
                        if group.version == 1 else [("memory.max", limit), ("memory.swap.max", "0")])
            for name, value in settings:
                if (group.path / name).exists():  # memsw and swap.max exist only where swap is accounted
                    _write(group.path / name, value)

    def _role(self, role: str) -> Group | None:
        return next((g for g in self.groups if role in g.roles), None)

    def describe(self) -> tuple[list[str], list[str]]:
        """(active, off): what holds the box, for the sandbox plan's report."""
        active: list[str] = []
        off: list[str] = []
        cpus = ",".join(map(str, sorted(self.cpus)))
        freezer, cpuset, pids, memory = (self._role(role) for role in ROLES)
        if not LINUX:
            return active, ["freezing the box while anything else is timed, and a CPU set (Linux only)"]
        if freezer is not None:
            active.append(f"cgroup freezer v{freezer.version}: the box is frozen whole while anything else is timed")
        else:
            active.append("stop-signal sweep: every process of the box is stopped while anything else is timed")
            off.append("a cgroup freezer (no freezer group could be made)")
            if not self.groups and not self.namespace and self.uid is None:
                off.append("stopping processes that left the box's session and process tree")
        if cpuset is not None:
            active.append(f"cpuset cgroup v{cpuset.version}: the box runs on the judge's CPUs ({cpus}) only")
        else:
            off.append(f"a CPU set enforced by the kernel (no cpuset group): the judge sets its CPUs ({cpus}) on "
                       "every process of the box when it starts and each time it is frozen")
        if pids is not None:
            active.append(f"pids cgroup v{pids.version}: at most {NPROC} processes and threads in the box")
        else:
            off.append("a pids cgroup (no pids group could be made)")
        if memory is not None and self.memory_bytes is not None:
            active.append(f"memory cgroup v{memory.version}: {self.memory_bytes >> 20} MiB for the whole box (all "
                          "its processes, the files they keep in memory, kernel memory)")
        elif self.memory_bytes is not None:
            off.append("a memory bound on the box as a whole (no memory group could be made): only each "
                       "process's address space is bounded")
        if any(g.version == 2 and (g.path / "cgroup.kill").exists() for g in self.groups):
            active.append("cgroup.kill: every process of the box ends at once with it")
        return active, off

    # -- which processes ---------------------------------------------------------------------------

    def members(self) -> list[int]:
        """The pids of the box's processes (in the judge's PID namespace): its group's, else found in /proc by
        the box's PID namespace, else its uid, else its session and process tree."""
        if self.groups:
            with contextlib.suppress(OSError):
                return self.groups[0].pids()
        if self.box is None or (self.namespace and self._pid_ns is None):
            return []
        found: list[int] = []
        if self._pid_ns is not None:
            for pid in _pids():
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/ns/pid") == self._pid_ns:
                        found.append(pid)
        elif self.uid is not None:
            found = list(processes_of(self.uid))
        else:
            tree: dict[int, tuple[int, int]] = {}
            for pid in _pids():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    tree[pid] = _stat(pid)[1:]
            found = [pid for pid, (_, session) in tree.items() if session == self.box or pid == self.box]
            for pid in found:  # grows while it is read: descendants of those found
                found += [child for child, (parent, _) in tree.items() if parent == pid and child not in found]
        return found

    def _confine(self) -> None:
        """Without a cpuset group: the judge's CPUs set on every thread of the box (it may widen them again)."""
        for pid in self.members():
            with contextlib.suppress(OSError):
                for tid in _tids(pid):
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(tid, self.cpus)

    # -- memory used -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def peak_memory(self) -> Iterator[MemoryPeak]:
        """The box's memory during the block, at its peak, above its level when the block began (MemoryPeak).

        From the box's memory group where it has one: all its processes, the files they keep on its tmpfs mounts,
        kernel memory. Else from each process's peak resident size (VmHWM), summed over the processes the box had
        when the block began (a process started and ended within the block is not seen), less the file pages it
        mapped during the block. Never raises."""
        peak = MemoryPeak()
        stop: Callable[[], tuple[str, int]] | None = None
        with contextlib.suppress(OSError, ValueError):
            stop = self._start_peak()
        try:
            yield peak
        finally:
            if stop is not None:
                with contextlib.suppress(OSError, ValueError):
                    peak.how, peak.grown = stop()

    def _start_peak(self) -> Callable[[], tuple[str, int]] | None:
        """Reset a high-water mark of the box's memory; a function that reads how far it rose since, or None."""
        group = self._role("memory")
        if group is not None and group.version == 1:
            mark = group.path / "memory.max_usage_in_bytes"
            _write(mark, "0")  # the mark starts again from the usage now
            start = int(_read(mark))
            return lambda: ("cgroup v1 memory.max_usage_in_bytes", int(_read(mark)) - start)
        fd = -1
        if group is not None:
            try:  # kernels before 6.12 refuse to open it for writing: their mark cannot be reset
                fd = os.open(group.path / "memory.peak", os.O_RDWR)
                os.write(fd, b"reset")
                start = int(os.pread(fd, 64, 0))
            except (OSError, ValueError):
                if fd >= 0:
                    os.close(fd)
            else:
                def stop_v2() -> tuple[str, int]:
                    try:
                        return "cgroup v2 memory.peak", int(os.pread(fd, 64, 0)) - start
                    finally:
                        os.close(fd)
                return stop_v2
        if not LINUX:
            return None
        # VmHWM is the peak of anonymous, shared-memory and file pages together. The first call of a torch operator
        # maps its library code: 46 MiB of file pages on kernel 6.18, which maps a whole large folio per fault,
        # where the groups above are not charged for pages another group read first. So the file pages mapped
        # during the block are taken off: they stay mapped once code has run, so what is left never exceeds the
        # true rise of anonymous and tmpfs memory, and falls short of it by at most the code first run before
        # the peak. (A copy kept in file pages instead needs files larger than the box's file-size limit.)
        starts: dict[int, tuple[int, int]] = {}
        for pid in self.members():
            _write(Path(f"/proc/{pid}/clear_refs"), "5")  # VmHWM starts again from the resident size now
            starts[pid] = _status_kib(pid, "VmHWM"), _status_kib(pid, "RssFile")
        if not starts:
            return None

        def stop_hwm() -> tuple[str, int]:
            grown = 0
            for pid, (hwm, files) in starts.items():
                with contextlib.suppress(OSError, ValueError):  # a process gone since is not counted
                    mapped = max(0, _status_kib(pid, "RssFile") - files)
                    grown += max(0, _status_kib(pid, "VmHWM") - hwm - mapped)
            return "peak resident size (VmHWM, less file pages mapped meanwhile) of the box's processes", grown << 10
        return stop_hwm

    @contextlib.contextmanager
    def cpu_time(self) -> Iterator[CpuTime]:
        """The CPU time the box used during the block (CpuTime), from the kernel's accounting: its v2 group's cpu.stat
        (every process that was in it, to the microsecond), else each process's in /proc (_cpu_between), summed over
        those alive at the end (one that started and ended within the block counts once reaped by one of them).
        Never raises."""
        spent = CpuTime()
        read: Callable[[], tuple[str, float]] | None = None
        group = next((g for g in self.groups if g.version == 2), None)
        if group is not None and (group.path / "cpu.stat").exists():
            def read_v2() -> tuple[str, float]:
                usage = next(line for line in _read(group.path / "cpu.stat").splitlines() if line.startswith("usage_"))
                return "cgroup v2 cpu.stat", int(usage.split()[1]) * 1e-6
            read = read_v2
        elif LINUX and self.box is not None:
            def snapshot() -> dict[int, _ProcessCpu]:
                found: dict[int, _ProcessCpu] = {}
                for pid in self.members():
                    with contextlib.suppress(OSError, ValueError, IndexError):
                        found[pid] = _process_cpu(pid)
                return found

            before = snapshot()

            def read_proc() -> tuple[str, float]:
                after = snapshot()
                used = sum(_cpu_between(before.get(pid), cpu) for pid, cpu in after.items())
                return "the per-thread accounting in /proc", used
            read = read_proc
        start: tuple[str, float] | None = None
        with contextlib.suppress(OSError, ValueError, StopIteration):
            start = read() if read is not None else None
        try:
            yield spent
        finally:
            if read is not None and start is not None:
                with contextlib.suppress(OSError, ValueError, StopIteration):
                    spent.how, end = read()
                    spent.seconds = max(0.0, end - start[1])

    # -- freeze, kill, close -----------------------------------------------------------------------

    def freeze(self) -> bool:
        """Stop every process of the box; False if that could not be confirmed within FREEZE_SECONDS."""
        group = self._role("freezer")
        try:
            if group is None:
                done = self._stop_all()
            else:
                group.set_frozen(True)
                done = self._wait(group)
        except OSError:
            return False
        if done and self._role("cpuset") is None:
            self._confine()  # stopped: the set of threads cannot change under the sweep
        return done

    def _wait(self, group: Group) -> bool:
        deadline = time.monotonic() + FREEZE_SECONDS
        pause = 50e-6
        while True:
            if group.is_frozen():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.001)

    def _stop_all(self) -> bool:
        """SIGSTOP every process of the box, sweep after sweep, until a sweep finds none that runs."""
        deadline = time.monotonic() + FREEZE_SECONDS
        while True:
            running = [pid for pid in self.members() if not _stopped(pid)]
            if not running:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in running:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            time.sleep(200e-6)

    def thaw(self) -> None:
        group = self._role("freezer")
        with contextlib.suppress(OSError):
            if group is not None:
                group.set_frozen(False)
            else:
                for pid in self.members():
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGCONT)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[bool]:
        """The box frozen for the block, and thawed after it however it ends; yields freeze()'s answer. A box
        that could not be frozen is handed to `unfreezable` first."""
        try:
            done = self.freeze()
            if not done and self.unfreezable is not None:
                self.unfreezable()
            yield done
        finally:
            self.thaw()

    def kill(self) -> None:
        """SIGKILL every process in the box's groups: v2's cgroup.kill, else freeze, kill and thaw until a sweep finds
        none not killed yet (once frozen, the list is complete, and a killed process forks no more). Without a
        group, nothing (the sandbox's own kill does what it can). Never raises; never waits for them to exit."""
        if not self.groups:
            return
        group = self._role("freezer") or self.groups[0]
        deadline = time.monotonic() + FREEZE_SECONDS
        with contextlib.suppress(OSError):
            if group.version == 2 and (group.path / "cgroup.kill").exists():
                _write(group.path / "cgroup.kill", "1")
                return
            killed: set[int] = set()
            while set(group.pids()) - killed and time.monotonic() < deadline:
                if "freezer" in group.roles:
                    group.set_frozen(True)
                    self._wait(group)
                pids = set(group.pids()) - killed
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                if "freezer" in group.roles:
                    group.set_frozen(False)
                killed |= pids

    def close(self) -> None:
        """Kill what is left in the box's groups and remove them; a group whose last processes are still exiting
        is removed later (remove_leftovers). Never raises, never waits."""
        self.kill()
        _leftovers.extend(g.path for g in self.groups)
        self.groups = []
        remove_leftovers()
