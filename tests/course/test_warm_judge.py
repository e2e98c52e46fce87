"""The course's warm judge (autograder/course/nbgrader/warm.py) on its own: where it may live, a stale one replaced,
and its exit when idle. Its use by `nbgrader autograde` across processes, and the fallback when it is killed mid-run,
are in test_nbgrader_workflow.py (they grade a class)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.course.nbgrader import warm


@pytest.fixture
def xdg(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """$XDG_RUNTIME_DIR of this test alone (short: a socket's path holds 100 bytes); its warm judges stopped after."""
    folder = Path(tempfile.mkdtemp(prefix="kit-xdg-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    warm.stop_all(folder / warm.FOLDER)
    for path in sorted(folder.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
    folder.rmdir()


def test_a_folder_others_can_enter_or_own_is_refused(xdg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = xdg / warm.FOLDER
    folder.mkdir(mode=0o700)
    assert warm.private_folder() == folder
    folder.chmod(0o755)
    with pytest.raises(warm.Unavailable, match="has mode 0755, not 0700: other users could reach its socket"):
        warm.private_folder()
    folder.chmod(0o700)
    monkeypatch.setattr(os, "getuid", lambda: 4242)  # as another user sees this user's folder
    with pytest.raises(warm.Unavailable, match=r"is owned by uid \d+, not by this user \(uid 4242\)"):
        warm.private_folder()
    monkeypatch.undo()
    folder.rmdir()
    folder.symlink_to(xdg)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    with pytest.raises(warm.Unavailable, match="is not a folder"):
        warm.private_folder()
    folder.unlink()
    folder.mkdir(mode=0o700)
    key = folder / "authkey"
    key.write_bytes(b"k" * warm.AUTHKEY_BYTES)
    key.chmod(0o644)
    with pytest.raises(warm.Unavailable, match="not a file of this user's with mode 0600"):
        warm.authkey(folder)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, left to a container's pid 1 that does not reap, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_warm_judge_of_another_kit_is_stopped_and_replaced(xdg: Path, tmp_path: Path) -> None:
    course = tmp_path
    stale = warm.BOOTSTRAP.replace("from autograder.course.nbgrader.warm import main; main(sys.argv[1:])",
                                   "import autograder.course.nbgrader.warm as w; w.code_sha = lambda: 'an older kit'; "
                                   "w.main(sys.argv[1:])")
    assert stale != warm.BOOTSTRAP
    where = warm.paths(course, warm.private_folder())
    subprocess.run(warm.command(course, 1, 60, False, bootstrap=stale), cwd=where.folder, check=True, timeout=60,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while (old := warm.status(course)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert old is not None and old["code"] == "an older kit"

    said: list[str] = []
    judge = warm.connect(course, 1, 60, False, log=said.append)
    judge.close()
    assert judge.how.startswith(f"started in place of a stale one (pid {old['pid']}: code an older kit there"), \
        judge.how
    assert said and "grades with another kit" in said[0], said
    assert judge.pid != old["pid"] and not _alive(old["pid"])
    assert warm.status(course) == {**judge.hello}
    assert judge.hello["code"] == warm.code_sha()
    assert warm.stop(course) and not warm.running(where)


def test_a_warm_judge_exits_when_idle(xdg: Path, tmp_path: Path) -> None:
    judge = warm.connect(tmp_path, 1, 1.0, False)
    where = warm.paths(tmp_path, warm.private_folder())
    assert judge.how == "started" and warm.running(where) and _alive(judge.pid)
    judge.close()
    deadline = time.monotonic() + 60
    while warm.running(where) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not warm.running(where), "still warm a minute after its last use"
    assert not where.socket.exists() and not where.pid.exists()
    assert f"warm judge {judge.pid} of {tmp_path.resolve()}: idle for 1 s; exiting" in where.log.read_text()
    assert not _alive(judge.pid)
