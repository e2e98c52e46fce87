"""Attacks on the kernel from inside a student's function: syscalls the seccomp filter answers with an error,
kernel state a uid keeps from one grading to the next, and a uid leased again while a process of it lives.

Probes run as in tests/sandbox/test_sandbox.py: a student's softmax reports what it found in the error it
raises. They need root (the full sandbox) and libseccomp's Python binding; the syscall numbers are x86_64's.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from autograder.sandbox.runtime import isolation
from tests.kit import grade_fast, limits_for, solved

CH = "07_numerical_stability"
ONE_CHECK = "check_softmax_guide_example"
SYS_KEYCTL, KEYCTL_CLEAR, KEY_SPEC_USER_KEYRING = 250, 7, -4

full = os.geteuid() == 0 and isolation.machine().mode == "root"
needs_root = pytest.mark.skipif(not full, reason="uid leases need root")
needs_filter = pytest.mark.skipif(not full or not isolation.machine().seccomp or platform.machine() != "x86_64",
                                  reason="the probes need root, libseccomp's Python binding and x86_64")

SYSCALL = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
found = []
def call(name, nr, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(L(nr), *args)
    found.append(f"{name}={ret} {errno.errorcode.get(ctypes.get_errno(), '-') if ret < 0 else 'ok'}")
    return ret
"""


def _probe(tmp_path: Path, body: str) -> str:
    code = f"{SYSCALL}\ndef softmax(logits, dim=-1):\n    found.clear()\n{body}\n" \
           "    raise RuntimeError('FOUND ' + ' | '.join(map(str, found)))\n"
    g = grade_fast(solved(tmp_path, CH, softmax=code), only=ONE_CHECK)
    assert any("seccomp" in p for p in g.protections["active"]), g.protections
    return g.results[0].output


def _found(out: str) -> dict[str, str]:
    """{"keyctl": "-1 EPERM", ...} from the probe's FOUND line."""
    assert "FOUND " in out, out
    line = out.split("FOUND ")[1].splitlines()[0]
    return dict(item.split("=", 1) for item in line.split(" | ") if "=" in item)


# -- blocked syscalls: -1 with EPERM (clone3: ENOSYS), whatever the arguments ------------------------

BLOCKED = """
    call("add_key", 248, b"user", b"kit-probe", b"x", L(1), L(-4))
    call("keyctl", 250, L(0), L(-4), L(0))  # KEYCTL_GET_KEYRING_ID of the user keyring
    call("ptrace", 101, L(16), L(999999), L(0), L(0))  # PTRACE_ATTACH to no process: ESRCH if it got through
    call("process_vm_readv", 310, L(os.getpid()), None, L(0), None, L(0), L(0))
    call("kcmp", 312, L(os.getpid()), L(os.getpid()), L(0), L(0), L(0))  # KCMP_FILE
    call("bpf", 321, L(999), None, L(0))
    call("perf_event_open", 298, None, L(0), L(-1), L(-1), L(0))
    call("userfaultfd", 323, L(1))  # UFFD_USER_MODE_ONLY: allowed to anyone by the kernel
    pid = call("clone", 56, L(0x10000000 | 17), L(0), L(0), L(0), L(0))  # CLONE_NEWUSER | SIGCHLD: a fork
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
    call("unshare", 272, L(0x10000000))  # CLONE_NEWUSER
    call("setns", 308, L(-1), L(0))
    call("mount", 165, b"none", b"/nonexistent-kit", b"tmpfs", L(0), None)  # ENOENT if it got through
    call("open_tree", 428, L(-100), b"/", L(0))
    call("fsopen", 430, b"tmpfs", L(0))
    if call("personality", 135, L(0x0400000)) >= 0:  # READ_IMPLIES_EXEC
        libc.syscall(L(135), L(0))
    params = ctypes.create_string_buffer(120)
    call("io_uring_setup", 425, L(1), params)
    call("clone3", 435, None, L(0))
    call("personality_query", 135, L(0xffffffff))  # allowed: what Docker allows
    call("getpid", 39)"""


@needs_filter
def test_blocked_syscalls_fail_with_eperm_in_student_code(tmp_path: Path) -> None:
    found = _found(_probe(tmp_path, BLOCKED))
    blocked = ["add_key", "keyctl", "ptrace", "process_vm_readv", "kcmp", "bpf", "perf_event_open", "userfaultfd",
               "unshare", "setns", "mount", "open_tree", "fsopen", "personality", "io_uring_setup", "clone"]
    assert {name: found.get(name) for name in blocked} == dict.fromkeys(blocked, "-1 EPERM"), found
    assert found["clone3"] == "-1 ENOSYS", found  # glibc falls back to clone, whose flags the filter reads
    assert found["personality_query"].endswith(" ok") and found["getpid"].endswith(" ok"), found


# -- kernel state tied to the uid: a key ring a grading fills is not there for the next -----------------

def _as_uid(uid: int, action: Callable[[], object]) -> int:
    """A process forked from root's that becomes `uid` and runs `action`, then exits; its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process
        try:
            os.setgid(uid)
            os.setuid(uid)
            action()
        finally:
            os._exit(0)
    return pid


def _clear_keyrings(uid: int) -> None:
    """What a grading left in `uid`'s user keyring, cleared as that uid."""
    libc = ctypes.CDLL(None, use_errno=True)
    os.waitpid(_as_uid(uid, lambda: libc.syscall(ctypes.c_long(SYS_KEYCTL), ctypes.c_long(KEYCTL_CLEAR),
                                                  ctypes.c_long(KEY_SPEC_USER_KEYRING))), 0)


@needs_filter
def test_a_key_stored_by_one_grading_is_not_read_by_the_next_with_the_same_uid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uid = isolation.UID_RANGE.stop - 7  # one uid: both gradings lease it
    monkeypatch.setattr(isolation, "UID_RANGE", range(uid, uid + 1))
    name = f"kit-secret-{os.getpid()}"  # in the user keyring and the session one (here the uid's user-session)
    store = f"""
    for ring, spec in (("user", -4), ("session", -3)):
        key = call("add_" + ring, 248, b"user", {name!r}.encode(), b"the answers", L(11), L(spec))
        if key > 0:
            libc.syscall(L(250), L(5), L(key), L(0x3f3f3f3f))  # KEYCTL_SETPERM: everything to everyone
    found.append(f"uid={{os.getuid()}}")"""
    read = f"""
    for ring, spec in (("user", -4), ("session", -3)):
        key = call("search_" + ring, 250, L(10), L(spec), b"user", {name!r}.encode(), L(0))  # KEYCTL_SEARCH
        buf = ctypes.create_string_buffer(64)
        if key > 0 and libc.syscall(L(250), L(11), L(key), buf, L(64)) > 0:  # KEYCTL_READ
            found.append(f"read_{{ring}}={{buf.value.decode()}}")
    found.append(f"uid={{os.getuid()}}")"""
    try:
        (tmp_path / "first").mkdir()
        (tmp_path / "second").mkdir()
        first = _found(_probe(tmp_path / "first", store))
        second = _found(_probe(tmp_path / "second", read))
    finally:
        _clear_keyrings(uid)
    assert first["uid"] == second["uid"] == str(uid), (first, second)
    assert first["add_user"] == first["add_session"] == "-1 EPERM", first
    assert "read_user" not in second and "read_session" not in second, second
    assert second["search_user"] == second["search_session"] == "-1 EPERM", second


# -- a uid is not leased while a process of it lives ---------------------------------------------------

def _first_thread_exits() -> None:
    """Run on in a second thread while the first exits: the process shows as a zombie, and is not one."""
    threading.Thread(target=time.sleep, args=(60,)).start()
    ctypes.CDLL(None).pthread_exit(None)


def _process_as(uid: int, first_thread_exits: bool = False) -> int:
    """A process of `uid` that sleeps (forked as root): what a box can leave behind when its cleanup fails."""
    pid = _as_uid(uid, _first_thread_exits if first_thread_exits else lambda: time.sleep(60))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until it has its uid (and, if asked, its first thread is gone)
        status = Path(f"/proc/{pid}/status").read_text()
        if f"\nUid:\t{uid}\t" in status and (not first_thread_exits or "\nState:\tZ" in status):
            break
        time.sleep(0.01)
    return pid


@needs_root
@pytest.mark.parametrize("first_thread_exits", [False, True])
def test_a_uid_with_a_live_process_is_not_leased(monkeypatch: pytest.MonkeyPatch, first_thread_exits: bool) -> None:
    uid = isolation.UID_RANGE.stop - 5
    monkeypatch.setattr(isolation, "UID_RANGE", range(uid, uid + 2))
    monkeypatch.setattr(isolation, "kill_uid", lambda uid: None)  # a process SIGKILL does not end at once
    pid = _process_as(uid, first_thread_exits)
    try:
        lease = isolation.UidLease()
        try:
            assert lease.uid == uid + 1
        finally:
            lease.release()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    lease = isolation.UidLease()
    try:
        assert lease.uid == uid  # once that process is gone
    finally:
        lease.release()


@needs_root
@pytest.mark.parametrize("first_thread_exits", [False, True])
def test_a_lease_ends_what_the_last_box_of_its_uid_left_running(monkeypatch: pytest.MonkeyPatch,
                                                                first_thread_exits: bool) -> None:
    uid = isolation.UID_RANGE.stop - 3
    monkeypatch.setattr(isolation, "UID_RANGE", range(uid, uid + 1))
    pid = _process_as(uid, first_thread_exits)
    lease = isolation.UidLease()
    try:
        assert lease.uid == uid
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL
    finally:
        lease.release()


# -- what the child and the chapters need still works under the filter --------------------------------

MACHINERY = """
    import subprocess, sys, threading
    out = []
    worker = threading.Thread(target=lambda: out.append(float((torch.ones(64, 64) @ torch.ones(64, 64))[0, 0])))
    worker.start()
    worker.join()
    found.append(f"thread={out}")
    found.append(f"torch_threads={torch.get_num_threads()}")
    code = "import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(250, 0, -4, 0), ctypes.get_errno())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    found.append(f"subprocess={done.returncode} {done.stdout.strip()}")"""


@needs_filter
def test_threads_subprocesses_and_torch_work_under_the_filter(tmp_path: Path) -> None:
    found = _found(_probe(tmp_path, MACHINERY))
    assert found["thread"] == "[64.0]" and found["torch_threads"] == "1", found
    assert found["subprocess"] == "0 -1 1", found  # it ran; the filter came with it through execve (keyctl: EPERM)


@needs_filter
def test_dataloader_workers_run_under_the_filter(tmp_path: Path) -> None:
    ch = "06_data_loaders"
    g = grade_fast(solved(tmp_path, ch), only="check_directory_dataloader_workers", limits=limits_for(ch))
    assert any("seccomp" in p for p in g.protections["active"]), g.protections
    assert g.score == g.max_score == 2, [r.output for r in g.results]  # 0, 1, 2 and 3 workers

