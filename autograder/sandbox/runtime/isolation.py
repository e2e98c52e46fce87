"""Operating-system isolation for the process that runs student code.

Why not bubblewrap or nsjail: both start the sandboxed program with execve, so
every submission would import torch again (1.7 s and more, most of a
grading), and the zygote (autograder.sandbox.runtime.zygote) exists to pay that once. The
same kernel mechanisms they use are applied here instead, in the forked
process, before it reads any student code:

- namespaces: mount, PID, network, IPC and UTS (with root; without root
  inside an unprivileged user namespace where the kernel allows one);
- a new root filesystem built as an allow-list on an empty tmpfs: the Python
  runtime and its packages read-only (the kit's own installed copy covered),
  the check's data folder read-only, a few device nodes, its own /proc, and
  the only writable places, each a tmpfs of `scratch_bytes` that dies with the
  namespace: the scratch working directory, /tmp, /var/tmp and /dev/shm
  (nothing the submission writes reaches the host's disk, and there is
  nothing to clean up after it);
- Landlock (kernel 5.13+, unprivileged): the same allow-list again, no TCP,
  and (ABI 6+) no signals or abstract sockets to processes outside;
- rlimits on CPU time, address space, file size, core dumps and processes;
- no_new_privs, and with root a dedicated unprivileged uid per sandbox,
  leased with lock files that only root can reach, never while a process
  of that uid lives;
- a parent-death signal on every process between the zygote and the
  submission: when the judge's zygote dies, its boxes die with it;
- last, a seccomp filter (autograder.sandbox.runtime.syscalls): no key rings,
  ptrace, bpf, io_uring, mounts or new namespaces.

The student's process is PID 1 of its namespace: when it is killed, the
kernel kills every process it started, stopped, setsid'd or double-forked,
and nothing inside can signal the processes outside. `Plan` lists what is
active and what is off; if anything listed cannot be applied, the process
exits with SETUP_FAILED before any student code runs (fail closed).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import functools
import glob
import itertools
import os
import platform
import resource
import signal
import site
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from autograder.sandbox.runtime import landlock, syscalls

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine(), -1)
UID_RANGE = range(61000, 61256)
NPROC = 512  # processes and threads of the sandbox uid (DataLoader workers need some)
SETUP_FAILED = 125  # exit status of a process whose sandbox could not be set up
KIT_ROOT = Path(__file__).resolve().parents[3]  # the checkout (or site-packages) holding autograder/
STATE_DIR = Path("/run/effective-pytorch-kit")  # lease locks and new-root mount points: root only

# What the student's process may read besides the interpreter: the system's libraries and a few files.
SYSTEM = ["/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/sys"]
ETC = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf"]
DEVICES = ["null", "zero", "full", "random", "urandom"]
# Read when the zygote starts and a CUDA library is loaded: the GPU driver's libraries sit outside ld.so.cache on
# container images (/usr/local/nvidia/lib64 named by LD_LIBRARY_PATH), and without them torch finds no GPU.
GPU_ENV = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")


def gpu_env() -> dict[str, str]:
    """The judge's variables that decide which GPU driver and devices torch finds, for the zygote and its boxes."""
    return {k: os.environ[k] for k in GPU_ENV if k in os.environ}


def _library_paths() -> list[Path]:
    """LD_LIBRARY_PATH's folders, absolute and existing (an empty entry means the working directory: never)."""
    return [Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p.startswith("/") and os.path.isdir(p)]


class SandboxUnavailable(Exception):
    """A protection the plan needs cannot be had on this machine right now; nothing was run."""


@dataclass
class Plan:
    """What the next child gets; `active` and `off` name each protection for the report."""

    cpu_seconds: int
    file_bytes: int
    memory_bytes: int | None  # None: no address-space limit (CUDA)
    scratch: str = ""  # the working directory, writable
    scratch_bytes: int = 256 << 20  # size of each writable tmpfs (scratch, /tmp, /var/tmp, /dev/shm)
    mode: str = "plain"  # "root": namespaces + own uid; "userns": namespaces unprivileged; "uid"; "plain"
    uid: int | None = None
    box: str | None = None  # the new root's mount point (namespaces only)
    read_only: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)  # read-only, for the checks' input files
    covered: list[str] = field(default_factory=list)  # inside read_only, but hidden (the kit's own files)
    devices: list[str] = field(default_factory=list)
    landlock: bool = False
    seccomp: bool = False
    cuda: bool = False  # start CUDA before Landlock (see _start_cuda)
    active: list[str] = field(default_factory=list)
    off: list[str] = field(default_factory=list)

    @property
    def namespaces(self) -> bool:
        return self.box is not None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        return cls(**d)


# -- the judge's side: what this machine allows, and the plan for one child ------------------------


def _import_paths() -> list[Path]:
    """Package folders on sys.path (some added by .pth files), never the kit's own folder or the cwd."""
    prefix = Path(sys.prefix).resolve()
    out = []
    for entry in sys.path:
        p = Path(entry).resolve() if entry else None
        if p is None or p.name not in ("site-packages", "dist-packages") or not p.is_dir():
            continue
        if not p.is_relative_to(KIT_ROOT) or p.is_relative_to(prefix):
            out.append(p)
    return out


def _runtime_paths(extra: list[Path]) -> list[str]:
    """The interpreter, its packages and the system libraries, minimal: nested paths are dropped."""
    exe = Path(sys.executable)
    candidates = [Path(p) for p in SYSTEM] + [Path("/etc") / name for name in ETC] + [
        Path(sys.base_prefix).resolve(), Path(sys.prefix), Path(sys.prefix).resolve(), exe.parent,
        exe.resolve().parent, *_import_paths(), *_library_paths(), *extra]
    paths = sorted({str(p) for p in candidates if os.path.lexists(p)})
    return [p for p in paths if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in paths
                                        if not os.path.islink(q))]


def _kit_files(read_only: list[str]) -> list[str]:
    """The kit's package and secret wherever they sit inside a visible folder (an installed copy)."""
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    candidates = [KIT_ROOT / "autograder", KIT_ROOT / ".autograder-secret"] + [Path(s) / "autograder" for s in sites]
    visible = [Path(p).resolve() for p in read_only]
    found = {str(c.resolve()) for c in candidates if c.exists() and any(c.resolve().is_relative_to(v) for v in visible)}
    return sorted(found)


def _devices() -> list[str]:
    return [f"/dev/{d}" for d in DEVICES if os.path.exists(f"/dev/{d}")] + sorted(glob.glob("/dev/nvidia*"))


def device_groups(devices: list[str]) -> list[int]:
    """The groups that own device nodes not open to all (a GPU's /dev/nvidia* in group video, mode 0660): the box's
    uid joins them, as a user in the video group would, so that CUDA works under the dedicated uid."""
    groups = set()
    for dev in devices:
        with contextlib.suppress(OSError):
            st = os.stat(dev)
            if st.st_mode & 0o006 != 0o006 and st.st_gid != 0:
                groups.add(st.st_gid)
    return sorted(groups)


def _state_dir() -> Path:
    STATE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = STATE_DIR.stat()
    if st.st_uid != 0 or st.st_mode & 0o077:
        raise SandboxUnavailable(f"{STATE_DIR} must belong to root with mode 0700")
    return STATE_DIR


class UidLease:
    """An unprivileged uid held for one child's lifetime, via a lock file only root can reach.

    A uid whose lock is free but that still has a process (its last box's, which its cleanup missed) is killed
    first, and skipped if anything of it survives: a new box never shares a uid with an old one.
    """

    def __init__(self) -> None:
        self.uid: int | None = None
        self._lock: IO[bytes] | None = None
        folder = _state_dir()
        for uid in UID_RANGE:
            lock = open(folder / f"uid-{uid}.lock", "wb")  # noqa: SIM115 (held until release)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            kill_uid(uid)
            if any(processes_of(uid)):
                lock.close()
                continue
            self.uid, self._lock = uid, lock
            return
        raise SandboxUnavailable(f"every sandbox uid ({UID_RANGE.start}-{UID_RANGE.stop - 1}) is in use")

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _state(proc: str) -> bytes:
    """The state letter in a /proc/PID (or /proc/PID/task/TID) stat file."""
    with open(f"{proc}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rindex(b")") + 2:][:1]


def processes_of(uid: int) -> Iterator[int]:
    """The pids of `uid`'s processes that can still run anything: by the real uid in /proc/PID/status (the owner of
    /proc/PID may be root), and a zombie left out only when all its threads are (a process whose first thread
    exited keeps running in the others)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{entry.path}/status", "rb") as f:
                status = f.read()
            if int(status.split(b"\nUid:", 1)[1].split()[0]) != uid:
                continue
            if _state(entry.path) not in (b"Z", b"X") or any(
                    _state(f"{entry.path}/task/{tid}") not in (b"Z", b"X") for tid in os.listdir(f"{entry.path}/task")):
                yield int(entry.name)
        except (OSError, IndexError, ValueError):
            continue


def kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every process of `uid`, from the judge (root), until none is left (or `rounds` scans later).

    No helper runs as that uid, so nothing of the submission can stop or signal the cleaner.
    """
    for _ in range(rounds):
        found = False
        for pid in processes_of(uid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            found = True
        if not found:
            return


def new_box() -> str:
    """An empty directory to mount the child's new root on (root only: none outside can see or pre-create it)."""
    return tempfile.mkdtemp(prefix="box-", dir=_state_dir() if os.geteuid() == 0 else None)


def _probe(plan: Plan) -> bool:
    """Apply `plan` in a throwaway forked process: does this machine allow all of it?"""
    scratch = tempfile.mkdtemp(prefix="kit-probe-")
    plan.scratch = scratch
    plan.box = new_box() if plan.box is not None else None
    try:
        prepare_scratch(plan)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked probe
            code = SETUP_FAILED
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
                enter(plan, scratch, None)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0
    except OSError:
        return False
    finally:
        release_scratch(plan)
        if plan.box:
            os.rmdir(plan.box)


class Machine(NamedTuple):
    mode: str  # the strongest this machine allows (see Plan.mode)
    landlock: bool  # whether Landlock works
    seccomp: bool  # whether the seccomp filter loads


@functools.cache
def machine() -> Machine:
    """What this machine allows, probed once per process."""
    if sys.platform != "linux":  # namespaces, Landlock, no_new_privs and seccomp are Linux's
        return Machine("plain", False, False)
    base = Plan(60, 1 << 20, None, read_only=_runtime_paths([]), devices=_devices())
    root = os.geteuid() == 0
    modes = ["root", "uid"] if root else ["userns", "plain"]
    for mode in modes:
        for with_landlock, with_seccomp in itertools.product((True, False), repeat=2):
            if (with_landlock and landlock.abi() < 1) or (with_seccomp and syscalls.program() is None):
                continue
            trial = dataclasses.replace(base, mode=mode, landlock=with_landlock, seccomp=with_seccomp,
                                        uid=UID_RANGE.stop - 1 if root else None,
                                        box="" if mode in ("root", "userns") else None)
            if _probe(trial):
                return Machine(mode, with_landlock, with_seccomp)
    return Machine(modes[-1], False, False)


def make_plan(cpu_seconds: int, file_bytes: int, memory_bytes: int | None, scratch: Path, scratch_bytes: int,
              data: list[Path], runtime: list[Path], lease: UidLease | None) -> Plan:
    """The plan for one child. With root, no free uid means no plan (SandboxUnavailable)."""
    mode, use_landlock, use_seccomp = machine()
    if mode in ("root", "uid") and (lease is None or lease.uid is None):
        raise SandboxUnavailable("no sandbox uid was leased")
    read_only = _runtime_paths(runtime)
    plan = Plan(cpu_seconds, file_bytes, memory_bytes, scratch=str(scratch.resolve()), scratch_bytes=scratch_bytes,
                mode=mode, read_only=read_only, data=[str(p.resolve()) for p in data],
                covered=_kit_files(read_only), devices=_devices(), landlock=use_landlock, seccomp=use_seccomp)
    plan.active += ["own process session", "scrubbed environment", "scratch working directory",
                    "rlimits: cpu time, file size, core dumps", "wall-clock deadline on every read and write",
                    "parent-death signal: the box dies with the judge's zygote"]
    size = f"{scratch_bytes >> 20} MiB"
    if mode == "plain":
        plan.off.append("size-bounded scratch (needs root or user namespaces): the scratch folder is on the "
                        "host's disk, each file bounded by the file-size rlimit only")
    else:
        plan.active.append(f"scratch on a tmpfs of {size}, never the host's disk")
    (plan.active if sys.platform == "linux" else plan.off).append("no_new_privs")
    (plan.active if memory_bytes else plan.off).append("rlimit: address space (memory)")
    if mode in ("root", "userns"):
        plan.box = new_box()
        plan.active += ["PID namespace (own /proc; every process dies with the grading)",
                        "network namespace (no network)", "IPC namespace",
                        "mount namespace: a new root with only the runtime, scratch and data folders",
                        f"private /tmp, /var/tmp and /dev/shm (tmpfs of {size} each)"]
    else:
        plan.off += ["PID, network, IPC and mount namespaces (" +
                     ("the kernel refused them" if mode == "uid" else "no root and no user namespaces") + ")",
                     "private /tmp and /dev/shm"]
    if mode in ("root", "uid"):
        plan.uid = lease.uid  # type: ignore[union-attr]
        plan.active += [f"unprivileged uid {plan.uid}", f"rlimit: {NPROC} processes"]
    else:
        plan.off += ["a dedicated uid (needs root)", "process-count limit (needs a dedicated uid)"]
    if use_landlock:
        plan.active.append(f"Landlock filesystem allow-list (ABI {landlock.abi()}), no TCP")
    else:
        plan.off.append("Landlock (not available in this kernel)")
    if use_seccomp:
        plan.active.append("seccomp filter: no key rings, ptrace, bpf, io_uring, mounts or new namespaces")
    else:
        plan.off.append("seccomp filter (" + ("libseccomp's Python binding is not installed"
                                             if syscalls.program() is None else "the kernel refused it") + ")")
    if not plan.namespaces:
        # Landlock cannot hide a path inside an allowed folder: only file permissions keep the kit's copy unread.
        readable = [p for p in plan.covered if os.stat(p).st_mode & 0o004]
        if readable:
            plan.off.append(f"hiding the kit's installed copy (readable by all: {', '.join(readable)})")
    return plan


def _scratch_options(plan: Plan) -> str:
    owner = plan.uid if plan.uid is not None else os.getuid()
    group = plan.uid if plan.uid is not None else os.getgid()
    return f"mode=0700,size={plan.scratch_bytes},uid={owner},gid={group}"


def prepare_scratch(plan: Plan) -> None:
    """The judge's side of the scratch folder (an empty directory): with namespaces the child mounts its tmpfs
    there, inside its own mount namespace; a dedicated uid without namespaces gets one mounted here by the
    judge (root); plain mode leaves it a folder of the host's disk. Raises OSError."""
    if plan.mode == "uid":
        _mount(_libc(), "tmpfs", plan.scratch, "tmpfs", MS_NOSUID | MS_NODEV, _scratch_options(plan))


def release_scratch(plan: Plan) -> None:
    """Remove the scratch folder; never raises, recurses or waits long (see remove_tree)."""
    if plan.mode == "uid":
        _libc().umount2(plan.scratch.encode(), MNT_DETACH)
    remove_tree(plan.scratch)


def remove_tree(path: str, timeout: float = 60.0) -> None:
    """Delete `path` and what is in it, whatever the submission made there, without raising.

    Why coreutils' rm and not shutil.rmtree: rmtree recurses in Python (a tree 1,000 folders deep raises
    RecursionError, which ignore_errors does not catch) and works on paths (a deeper tree passes PATH_MAX);
    rm walks any depth with fts, never follows links, and runs under a deadline here."""
    with contextlib.suppress(OSError):
        os.rmdir(path)  # the usual case: an empty folder, the submission's files having lived on a tmpfs
        return
    if not os.path.lexists(path):
        return
    one_fs = ["--one-file-system"] if sys.platform == "linux" else ["-x"]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["rm", "-rf", *one_fs, "--", path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout, check=False)


# -- the child's side: applied in the forked process, before any student code ---------------------


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        raise OSError(ctypes.get_errno(), f"{what} failed")


def _mount(libc: ctypes.CDLL, src: str | None, dst: str, fstype: str | None, flags: int, data: str | None) -> None:
    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    _check(libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {dst}")


def _bind(libc: ctypes.CDLL, src: str, box: str, read_only: bool) -> None:
    dst = box + src
    if os.path.islink(src) and os.path.dirname(src) == "/":  # /bin -> usr/bin on a merged /usr
        os.symlink(os.readlink(src), dst)
        return
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "a"):
            pass
    _mount(libc, src, dst, None, MS_BIND | (0 if src == "/sys" else MS_REC), None)  # not /sys's cgroup mounts
    if read_only:
        _mount(libc, None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | _locked_flags(src), None)


def _locked_flags(path: str) -> int:
    """The source mount's flags that a user namespace may not clear on a bind (else EPERM)."""
    f = os.statvfs(path).f_flag
    flags = f & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME)
    return flags | (1 << 21 if f & os.ST_RELATIME else 0)  # MS_RELATIME


def _tmpfs(libc: ctypes.CDLL, dst: str, options: str, flags: int = MS_NOSUID | MS_NODEV) -> None:
    os.makedirs(dst, exist_ok=True)
    _mount(libc, "tmpfs", dst, "tmpfs", flags, options)


def _build_root(libc: ctypes.CDLL, plan: Plan) -> None:
    """Mount the allow-list on an empty tmpfs and make it the root."""
    box = plan.box
    assert box
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None)
    _tmpfs(libc, box, "mode=0755,size=16m")
    for private in ("/tmp", "/var/tmp", "/dev/shm"):
        _tmpfs(libc, box + private, f"mode=1777,size={plan.scratch_bytes}")
    for path in plan.read_only:
        _bind(libc, path, box, read_only=True)
    for path in plan.covered:
        if os.path.isdir(path):
            _tmpfs(libc, box + path, "mode=0755,size=4k", MS_RDONLY | MS_NOSUID | MS_NODEV)
        else:
            _mount(libc, "/dev/null", box + path, None, MS_BIND, None)
    for path in plan.data:
        _bind(libc, path, box, read_only=True)
    _tmpfs(libc, box + plan.scratch, _scratch_options(plan))
    for dev in plan.devices:
        _bind(libc, dev, box, read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{box}/dev/{name}")
    os.makedirs(box + "/proc", exist_ok=True)
    _mount(libc, "proc", box + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    os.chdir(box)
    _check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(libc, None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)


def _map_user() -> None:
    """Inside a new user namespace: keep our own uid and gid (no setgroups)."""
    uid, gid = os.getuid(), os.getgid()
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    header = ctypes.create_string_buffer(struct.pack("<Ii", 0x20080522, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)
    _check(libc.capset(header, data), "capset")


def _monitor(box_pid: int) -> None:
    """Outside the new PID namespace: wait for its first process and exit as it did."""
    _, status = os.waitpid(box_pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _start_cuda() -> None:
    """Start CUDA and its context while this process is still the kit's, before Landlock.

    The driver writes beneath /proc/self/task/ for the threads it starts. Landlock can only allow that by allowing
    every file there, clear_refs too, with which a submission could reset the peak memory the judge reads
    (control.MemoryPeak's VmHWM fallback). Measured on an H200: under the kit's rules cuInit fails (error 304);
    allowing /proc/self/task lets it start; allowing the existing threads' comm files does not. A failure here
    is left for the child to report (Child.setup), so the judge can name it."""
    import torch  # the zygote's, already imported

    with contextlib.suppress(Exception):
        torch.cuda.init()
        torch.empty(1, device="cuda")


def enter(plan: Plan, cwd: str, report_fd: int | None) -> None:
    """Isolate this process as `plan` says; returns in the process that will run student code.

    With namespaces the caller forks: it reports the new process's pid on
    `report_fd`, waits for it and exits as it did; it never returns.
    Raises OSError if anything fails.
    """
    libc = _libc()
    parent = os.getppid()
    if plan.namespaces:
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
        _check(libc.unshare(flags | (CLONE_NEWUSER if plan.mode == "userns" else 0)), "unshare")
        if plan.mode == "userns":
            _map_user()
        pid = os.fork()
        if pid:
            if report_fd is not None:
                os.write(report_fd, str(pid).encode())
                os.close(report_fd)
            _monitor(pid)
        _build_root(libc, plan)
        os.chdir(cwd)
    else:
        os.chdir(cwd)
        if report_fd is not None:
            os.write(report_fd, str(os.getpid()).encode())
            os.close(report_fd)
    resource.setrlimit(resource.RLIMIT_CPU, (plan.cpu_seconds, plan.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (plan.file_bytes, plan.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if plan.memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (plan.memory_bytes, plan.memory_bytes))
    if sys.platform == "linux":
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if plan.cuda:
        _start_cuda()
    if plan.landlock:
        private = ["/tmp", "/var/tmp", "/dev/shm"] if plan.namespaces else ["/dev/shm"]  # DataLoader workers
        landlock.restrict(plan.read_only + plan.data + ["/proc"], [plan.scratch, *plan.devices, *private])
    if plan.uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))
        os.setgroups(device_groups(plan.devices))
        os.setgid(plan.uid)
        os.setuid(plan.uid)
    elif plan.mode == "userns":
        _drop_capabilities(libc)
    if sys.platform == "linux":  # after setuid, which clears it
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
        if not plan.namespaces and os.getppid() != parent:  # the parent died before: no signal will come
            raise OSError("the sandbox's parent process ended while it was set up")
    if plan.seccomp:
        syscalls.load(libc)
