"""Attacks on the sandbox itself: what a submission can see, keep, start and break.

Each probe runs inside a student's softmax and reports what it found in the
error it raises, which the grader shows in the check's output. The full
protections need root (CI, Gradescope, a grading server); these tests skip
where the grader is not root, since the result then lists the parts as off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest

from autograder.course.bundle import build_bundle
from autograder.judging.judge import GraderError
from autograder.sandbox.runtime import isolation
from tests.kit import ROOT, grade_fast, scores_on_their_own, solution_cells, solved
from tests.sandbox.processes import named, until

CH = "07_numerical_stability"
ONE_CHECK = "check_softmax_guide_example"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or isolation.machine()[0] != "root",
                                reason="the full sandbox needs root and namespaces")


def _probe(tmp_path: Path, body: str) -> str:
    code = f"import os, glob, signal, time\ndef softmax(logits, dim=-1):\n    found = []\n{body}\n" \
           "    raise RuntimeError('FOUND ' + ' | '.join(map(str, found)))\n"
    g = grade_fast(solved(tmp_path, CH, softmax=code), only=ONE_CHECK)
    return g.results[0].output


def _readable(paths: list[Path]) -> str:
    return f"""
    for p in {[str(p) for p in paths]!r}:
        try:
            found.append(f"READ {{p}} {{len(open(p, 'rb').read())}}")
        except OSError as e:
            found.append(f"no {{p}} {{type(e).__name__}}")"""


# -- 1. fail closed ---------------------------------------------------------------------------------

def test_no_free_uid_means_no_student_code_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "UID_RANGE", range(61250, 61256))  # leave the rest to other gradings
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\ndef softmax(logits, dim=-1):\n    return logits.softmax(dim)\n"
    held = []
    with pytest.raises(isolation.SandboxUnavailable):  # take whatever others do not hold
        while True:
            held.append(isolation.UidLease())
    try:
        with pytest.raises(GraderError, match="every sandbox uid"):
            grade_fast(solved(tmp_path, CH, softmax=code))
    finally:
        for lease in held:
            lease.release()
    assert not marker.exists()


def test_a_protection_that_cannot_be_applied_stops_the_grading(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "_kit_files", lambda read_only: ["/nonexistent/kit"])  # its mount fails
    with pytest.raises(GraderError, match="could not sandbox"):
        grade_fast(solved(tmp_path, CH))


def test_a_submission_cannot_pass_its_exit_off_as_a_sandbox_failure(tmp_path: Path) -> None:
    code = "import os\nos._exit(125)\n"
    g = grade_fast(solved(tmp_path, CH, softmax=code))  # no GraderError: the student's own doing
    assert g.score == 0 and g.max_score == 22


def test_lease_state_is_out_of_reach(tmp_path: Path) -> None:
    out = _probe(tmp_path, _readable([isolation.STATE_DIR]) + """
    found.append("LOCKS " + str(glob.glob('/tmp/.kit-uid-*') + glob.glob('/run/effective-pytorch-kit/*')))""")
    assert "LOCKS []" in out, out
    lease = isolation.UidLease()
    try:
        assert (isolation.STATE_DIR / f"uid-{lease.uid}.lock").exists()
    finally:
        lease.release()
    assert oct(isolation.STATE_DIR.stat().st_mode & 0o777) == "0o700"


# -- 2. an allow-list -------------------------------------------------------------------------------

def test_the_child_sees_only_the_runtime_its_scratch_and_data(tmp_path: Path) -> None:
    course = ROOT.parent / f".kit-test-course-{os.getpid()}"  # a course outside the temp dir
    try:
        classmate = course / "submitted" / "bob" / CH / f"{CH}.ipynb"
        classmate.parent.mkdir(parents=True)
        classmate.write_text("{}")
        mine = course / "submitted" / "eve" / CH
        mine.mkdir(parents=True)
        secrets = [ROOT / "autograder" / "checks" / f"ch{CH}.py", ROOT / "solutions" / CH / f"{CH}.ipynb",
                   ROOT / ".autograder-secret", classmate, Path("/etc/shadow"), Path("/root/.bash_history")]
        body = _readable(secrets) + """
    try:
        found.append("TOP " + ",".join(sorted(os.listdir("/"))))
    except OSError:
        found.append("TOP denied")
    found.append("PIDS " + ",".join(p for p in os.listdir("/proc") if p.isdigit()))
    found.append("PPID-CMD " + open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode(errors="replace")
                 if os.getppid() else "PPID 0")"""
        code = f"import os, glob\ndef softmax(logits, dim=-1):\n    found = []\n{body}\n" \
               "    raise RuntimeError('FOUND ' + ' | '.join(map(str, found)))\n"
        out = grade_fast(solved(mine, CH, softmax=code), only=ONE_CHECK).results[0].output
    finally:
        shutil.rmtree(course, ignore_errors=True)
    assert "READ" not in out, out
    assert "PPID 0" in out, out  # the parent (and its command line naming the course) is out of sight
    top = out.split("TOP ")[1].split(" |")[0].split(",")  # Landlock may deny listing / at all
    assert top == ["denied"] or set(top) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "proc", "root", "sbin",
                                             "sys", "tmp", "usr", "var", "work"}, top
    pids = out.split("PIDS ")[1].split(" |")[0].split(",")
    assert len(pids) <= 3 and "1" in pids, pids  # its own PID namespace


def test_nothing_written_to_shared_places_outlives_the_grading(tmp_path: Path) -> None:
    tag = f"kit-leak-{os.getpid()}-{time.time_ns()}"
    body = f"""
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.environ["HOME"]):
        try:
            open(os.path.join(d, {tag!r}), "w").write("x")
            found.append("WROTE " + d)
        except OSError as e:
            found.append("no " + d + " " + type(e).__name__)"""
    out = _probe(tmp_path, body)
    assert "WROTE /tmp" in out and "WROTE /dev/shm" in out, out  # each is private and writable
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not (Path(d) / tag).exists(), d


def test_files_precreated_in_shared_folders_do_not_break_later_gradings(tmp_path: Path) -> None:
    planted = [Path("/dev/shm") / f".kit-aside-{pid}" for pid in range(os.getpid(), os.getpid() + 400)]
    planted += [Path("/tmp") / f".kit-uid-{uid}.lock" for uid in isolation.UID_RANGE]
    try:
        for p in planted:
            p.write_text("")
            p.chmod(0o444)
        g = grade_fast(solved(tmp_path, CH))
    finally:
        for p in planted:
            p.unlink(missing_ok=True)
    assert g.score == g.max_score == 22


# -- 3. cleanup nobody can block --------------------------------------------------------------------

ESCAPES = """
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
        if kind == "signals":
            for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(-1, sig)
                except OSError:
                    pass
        time.sleep(0.01)
for kind in ("sleep", "stop", "signals"):
    _stray(kind)
"""


def test_every_process_dies_with_the_grading_even_stopped_and_signalling_ones(tmp_path: Path) -> None:
    tag = f"stray{os.getpid() % 10**6}"
    started = time.monotonic()
    g = grade_fast(solved(tmp_path, CH, softmax=f"TAG = {tag!r}\n" + ESCAPES + solution_cells(CH)["softmax"]))
    assert time.monotonic() - started < 90
    # the signals did not stop the grading either (ctypes at load breaks 07's rule read from the code: no score)
    assert scores_on_their_own(g)["softmax"] > 0
    assert until(lambda: not named(tag), 5), named(tag)


# -- 7. the Gradescope bundle -----------------------------------------------------------------------

def test_hidden_checks_cannot_be_read_from_the_sandbox_in_the_gradescope_layout(tmp_path: Path) -> None:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(build_bundle(CH, tmp_path / "bundle.zip")) as z:
        z.extractall(root / "source")
    # What setup.sh builds, without the network: a venv with the kit installed as a copy (pip install kit/),
    # seeing torch through a .pth file.
    venv.create(root / "venv", with_pip=False, symlinks=True)
    site = next((root / "venv" / "lib").glob("python3*/site-packages"))
    shutil.copytree(root / "source" / "kit" / "autograder", site / "autograder")
    real_site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "torch").is_dir())
    (site / "torch-from-host.pth").write_text(real_site + "\n")
    installed = site / "autograder" / "checks" / f"ch{CH}.py"
    targets = [installed, root / "source" / "kit" / "autograder" / "checks" / f"ch{CH}.py",
               root / "source" / "run_autograder"]
    (root / "submission").mkdir()
    code = f"import os\ndef softmax(logits, dim=-1):\n    found = []\n{_readable(targets)}\n" \
           "    raise RuntimeError('FOUND ' + ' | '.join(found))\n"
    solved(root / "submission", CH, name="my_work.ipynb", softmax=code)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "PYTHON": str(root / "venv" / "bin" / "python")}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((root / "results" / "results.json").read_text())
    outputs = " ".join(t["output"] for t in result["tests"])
    assert "FOUND" in outputs and "READ" not in outputs, outputs
    assert result["score"] == 16  # all but softmax (6 of 22)
