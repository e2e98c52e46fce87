"""Operating-system isolation for the child that runs student code.

Where the grader runs as root on Linux (CI containers, grading servers) the
child gets, before it executes anything:

- its own network namespace: no network at all;
- its own mount namespace in which the kit's checks, solutions, sources,
  tests and other submissions are covered by empty read-only tmpfs mounts;
- rlimits on CPU time, address space (CPU device only), file size, core
  dumps and processes;
- no_new_privs, then a dedicated unprivileged uid of its own (leased with a
  lock file, so concurrent gradings never share one): it cannot read the
  judge's memory or environment, write outside its scratch directory, or
  undo the mounts. On cleanup every process of that uid is killed, so even
  escaped descendants (a fork bomb that called setsid) die.

Without root (a laptop) these mechanisms are unavailable: the rlimits and the
process session still apply, and `Plan.off` lists what is missing so that the
result and the logs say so.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_BIND, MS_REC, MS_PRIVATE = 1, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
UID_RANGE = range(61000, 61256)
NPROC = 512  # processes and threads of the sandbox uid (DataLoader workers need some)
KIT_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Plan:
    """What the next child gets; `active` and `off` name each protection for the report."""

    cpu_seconds: int
    file_bytes: int
    memory_bytes: int | None  # None: no address-space limit (CUDA)
    uid: int | None = None
    network: bool = False
    hide: list[Path] = field(default_factory=list)
    expose: Path | None = None  # a non-traversable ancestor of the interpreter (e.g. /root)
    private_tmp: list[Path] = field(default_factory=list)  # what stays visible under a fresh temp dir
    tmp_root: Path = field(default_factory=lambda: Path(tempfile.gettempdir()).resolve())  # covered by that tmpfs
    active: list[str] = field(default_factory=list)
    off: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"cpu_seconds": self.cpu_seconds, "file_bytes": self.file_bytes, "memory_bytes": self.memory_bytes,
                "uid": self.uid, "network": self.network, "hide": [str(p) for p in self.hide],
                "expose": str(self.expose) if self.expose else None, "private_tmp": [str(p) for p in self.private_tmp],
                "tmp_root": str(self.tmp_root)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        return cls(d["cpu_seconds"], d["file_bytes"], d["memory_bytes"], d["uid"], d["network"],
                   [Path(p) for p in d["hide"]], Path(d["expose"]) if d["expose"] else None,
                   [Path(p) for p in d["private_tmp"]], Path(d["tmp_root"]))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        raise OSError(ctypes.get_errno(), f"{what} failed")


def _hidden(notebook_dir: Path | None) -> list[Path]:
    """The kit's own files and the submission's folder, but never a folder the child needs
    (the interpreter's environment, or the temp dir holding its scratch and data)."""
    needed = [Path(sys.prefix).resolve(), Path(tempfile.gettempdir()).resolve()]
    candidates = [*sorted(KIT_ROOT.iterdir())] + ([notebook_dir] if notebook_dir is not None else [])
    return [p.resolve() for p in candidates if not any(n.is_relative_to(p.resolve()) for n in needed)]


def _closed_ancestor() -> Path | None:
    """The highest ancestor of the interpreter that others may not traverse (/root with pyenv)."""
    closed = [p for p in Path(sys.base_prefix).resolve().parents if p != Path("/") and not os.stat(p).st_mode & 0o001]
    return closed[-1] if closed else None


class UidLease:
    """An unprivileged uid held for one child's lifetime via an exclusive lock file."""

    def __init__(self) -> None:
        self.uid: int | None = None
        self._lock: IO[bytes] | None = None
        for uid in UID_RANGE:
            lock = open(f"/tmp/.kit-uid-{uid}.lock", "wb")  # noqa: SIM115 (held until release)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            self.uid, self._lock = uid, lock
            return

    def kill_all(self) -> None:
        """Kill every process running as this uid: a forked helper takes the uid and signals -1."""
        if self.uid is None:
            return
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked helper
            try:
                os.setgid(self.uid)
                os.setuid(self.uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    def release(self) -> None:
        self.kill_all()
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def make_plan(cpu_seconds: int, file_bytes: int, memory_bytes: int | None, notebook_dir: Path | None,
              lease: UidLease | None, keep_in_tmp: list[Path]) -> Plan:
    plan = Plan(cpu_seconds, file_bytes, memory_bytes)
    plan.active += ["own process session", "scrubbed environment", "scratch working directory",
                    "rlimits: cpu time, file size, core dumps", "wall-clock deadline per call"]
    (plan.active if memory_bytes else plan.off).append("rlimit: address space (memory)")
    root = sys.platform == "linux" and os.geteuid() == 0
    if root and lease is not None and lease.uid is not None:
        plan.uid = lease.uid
        plan.network = True
        plan.hide = _hidden(notebook_dir)
        plan.expose = _closed_ancestor()
        # The interpreter's environment stays visible even when it lives in the temp dir (a clone in /tmp).
        env = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix}]
        plan.private_tmp = keep_in_tmp + [p for p in env if p.is_relative_to(plan.tmp_root)]
        plan.active += ["network namespace (no network)", "mount namespace hiding checks, solutions and sources",
                        "private /tmp",
                        f"unprivileged uid {lease.uid} with no_new_privs", f"rlimit: {NPROC} processes"]
    else:
        plan.off += ["network namespace (needs root)", "mount namespace (needs root)",
                     "unprivileged uid (needs root)", "process-count limit (needs a dedicated uid)"]
    return plan


def _cover(libc: ctypes.CDLL, folder: Path, keep: list[Path], options: bytes) -> None:
    """Cover `folder` with a fresh tmpfs in which only the `keep` paths (inside it) are bound back.

    The original is bind-mounted aside first (at a path under /dev/shm, which
    stays shared), the tmpfs goes on top, the kept paths are bound back at
    their own names, and the aside mount is detached.
    """
    aside = Path("/dev/shm") / f".kit-aside-{os.getpid()}"
    aside.mkdir(exist_ok=True)
    _check(libc.mount(str(folder).encode(), str(aside).encode(), None, MS_BIND | MS_REC, None), "bind aside")
    _check(libc.mount(b"tmpfs", str(folder).encode(), b"tmpfs", 0, options), f"tmpfs over {folder}")
    for path in keep:
        rel = path.relative_to(folder)
        (folder / rel).mkdir(parents=True, exist_ok=True)
        _check(libc.mount(str(aside / rel).encode(), str(folder / rel).encode(), None, MS_BIND | MS_REC, None),
               f"bind {path} back")
    _check(libc.umount2(str(aside).encode(), 2), "detach aside")  # MNT_DETACH
    aside.rmdir()


def preexec(plan: Plan) -> None:
    """Runs in the freshly forked child, before it reads any student code."""
    libc = _libc()
    if plan.uid is not None:
        _check(libc.unshare(CLONE_NEWNS | (CLONE_NEWNET if plan.network else 0)), "unshare")
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
        if plan.expose is not None:
            base = Path(sys.base_prefix).resolve()
            _cover(libc, plan.expose, [plan.expose / base.relative_to(plan.expose).parts[0]], b"mode=0755,size=64k")
        if plan.private_tmp:
            _cover(libc, plan.tmp_root, plan.private_tmp, b"mode=1777,size=512m")
        for path in plan.hide:
            if path.is_dir():
                _check(libc.mount(b"tmpfs", str(path).encode(), b"tmpfs", MS_RDONLY, b"size=4k"), f"hide {path}")
            elif path.exists():
                _check(libc.mount(b"/dev/null", str(path).encode(), None, MS_BIND, None), f"hide {path}")
    resource.setrlimit(resource.RLIMIT_CPU, (plan.cpu_seconds, plan.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (plan.file_bytes, plan.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if plan.memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (plan.memory_bytes, plan.memory_bytes))
    if plan.uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        os.setgroups([])
        os.setgid(plan.uid)
        os.setuid(plan.uid)


def give_to(path: Path, plan: Plan) -> None:
    """Hand the scratch directory to the sandbox uid (only it and root can read it)."""
    if plan.uid is not None:
        for p in [path, *path.rglob("*")]:
            with contextlib.suppress(OSError):
                os.chown(p, plan.uid, plan.uid)
