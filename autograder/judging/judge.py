"""Grade one notebook: load it, run it in a sandbox, judge it with pytest."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import secrets
import time
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from autograder import CHECKOUT
from autograder.judging.notebook import NotebookError, load_submission
from autograder.judging.plugin import CheckResult, KitPlugin
from autograder.judging.registry import CHAPTERS_DIR
from autograder.judging.remote import Student
from autograder.judging.scan import note as integrity_note
from autograder.judging.scan import scan_submission
from autograder.sandbox.limits import Limits


@dataclass
class Grade:
    notebook: Path
    assignment: str | None
    device: str
    results: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # shown above the checks
    protections: dict[str, list[str]] = field(default_factory=dict)
    execution_time: float = 0.0
    integrity: list[str] = field(default_factory=list)  # constructs that reach into grader internals
    out_of_time: bool = False  # the grading's time ran out before some check called the code

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results if not r.bonus)

    @property
    def max_score(self) -> float:
        return sum(r.points for r in self.results if r.status != "skipped" and not r.bonus)

    @property
    def bonus(self) -> float:
        """Points earned on stretch tasks, on top of `score`."""
        return sum(r.score for r in self.results if r.bonus)

    @property
    def bonus_max(self) -> float:
        return sum(r.points for r in self.results if r.status != "skipped" and r.bonus)

    def by_task(self) -> dict[str, tuple[float, float]]:
        """(points earned, points possible) per task, in check order; skipped checks count for neither."""
        tasks: dict[str, tuple[float, float]] = {}
        for r in self.results:
            got, top = tasks.get(r.task, (0.0, 0.0))
            tasks[r.task] = (got + r.score, top + (r.points if r.status != "skipped" else 0.0))
        return tasks


SECRET_FILE = CHECKOUT / ".autograder-secret"


def course_secret() -> bytes:
    """The course's grading secret: $AUTOGRADER_SECRET, else a random one kept in .autograder-secret (0600)."""
    if os.environ.get("AUTOGRADER_SECRET"):
        return os.environ["AUTOGRADER_SECRET"].encode()
    if not SECRET_FILE.exists():
        fd = os.open(SECRET_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return SECRET_FILE.read_bytes().strip()


def normalized_code(source: str) -> str:
    """Python code without its comments, blank lines and spacing (its tokens), so that editing those changes
    nothing; the source with comment lines and trailing spaces dropped when it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        lines = (line.rstrip() for line in source.splitlines())
        return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#"))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    blank = {tokenize.NEWLINE, tokenize.INDENT}  # their text is spacing only
    return "\x1f".join(f"{t.type}:{'' if t.type in blank else t.string}" for t in tokens if t.type not in skip)


def secret_seed(notebook: Path, assignment: str | None = None, student: str | None = None) -> int:
    """HMAC(course secret, what is graded): unknowable to students, and regrading gives the same inputs.

    With the student known (grade-all's folder name, Gradescope's metadata, --student) it is the student
    and the assignment: no edit of the notebook rerolls the inputs. Otherwise it is the assignment and the
    answer cells' code without comments, blank lines or spacing, so editing a comment rerolls nothing;
    the notebook's bytes when its cells cannot be read.
    """
    try:
        sub = load_submission(notebook, assignment)
    except NotebookError:
        sub = None
    if sub is not None and student:
        material = f"student\0{sub.chapter.id}\0{student}".encode()
    elif sub is not None and sub.error is None:
        cells = sorted((c["id"], normalized_code(c["source"])) for c in sub.cells)
        material = "\0".join(["code", sub.chapter.id, *(f"{cid}\0{code}" for cid, code in cells)]).encode()
    else:
        try:
            material = b"bytes\0" + notebook.read_bytes()
        except OSError:
            material = b"bytes\0"
    return int.from_bytes(hmac.new(course_secret(), material, hashlib.sha256).digest()[:8], "little") >> 2


def student_from_gradescope(metadata: Path) -> str | None:
    """The submitter in Gradescope's submission_metadata.json: the first user's sid, else their email."""
    try:
        users = json.loads(metadata.read_text()).get("users") or []
    except (OSError, ValueError, AttributeError):
        return None
    first = users[0] if users and isinstance(users[0], dict) else {}
    return str(first.get("sid") or first.get("email") or "") or None


class GraderError(Exception):
    """The kit itself is broken (a check module fails to import): not the student's fault."""


def _load_notes(student: Student) -> list[str]:
    sub = student.submission
    notes = []
    if student.fatal:
        notes.append(student.fatal)
    notes += [f"Answer cell '{cid}' is missing from the notebook." for cid in sub.missing]
    for cid, err in student.load_report.get("errors", {}).items():
        notes.append(f"Answer cell '{cid}' raised {err.get('type', 'an error')}: {err.get('message', '')}")
    return notes


@contextlib.contextmanager
def _without_installed_plugins() -> Iterator[None]:
    """The checks run with pytest's own plugins and the kit's only: an installed plugin (randomly,
    xdist, hypothesis...) must not reorder, repeat or break them."""
    before = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = before


def grade(
    notebook: Path,
    assignment: str | None = None,
    device: str = "cpu",
    seed: int | None = None,
    limits: Limits | None = None,
    junit: Path | None = None,
    total_seconds: float = 900.0,
    only: str | None = None,
    student: str | None = None,
) -> Grade:
    """Grade one notebook. Never raises for anything the student did.

    `only` is a pytest -k expression selecting checks (e.g. "speed"). `student` (a name, id or email)
    fixes the input seed for this student and assignment, whatever the notebook holds (see secret_seed).
    """
    started = time.perf_counter()
    torch.set_num_threads(1)  # the judge's oracles are small; threads only add contention
    limits = limits or Limits()
    try:
        sub = load_submission(notebook, assignment)
    except NotebookError as e:
        return Grade(notebook, assignment, device, notes=[str(e)],
                     execution_time=time.perf_counter() - started)
    runner = Student(sub, device, limits, deadline=time.monotonic() + total_seconds)
    plugin = KitPlugin(runner, seed if seed is not None else secret_seed(notebook, sub.chapter.id, student), device)
    try:
        runner.start()
        if runner.environment_error:
            raise GraderError(f"cannot grade {notebook.name} on this machine: {runner.environment_error}")
        args = [str(sub.chapter.checks), "-c", str(CHAPTERS_DIR / "pytest.ini"),
                "--rootdir", str(sub.chapter.folder.parent),
                "-p", "no:cacheprovider", "--noconftest", "-q", "--tb=short", "-W", "ignore",
                # its unconfigure runs gc.collect() five times (0.2 s a grading with torch loaded)
                "-p", "no:unraisableexception"]
        if only:
            args += ["-k", only]
        if junit is not None:
            args += [f"--junitxml={junit}", "-o", f"junit_suite_name={sub.chapter.id}"]
        log = io.StringIO()
        with contextlib.redirect_stdout(log), _without_installed_plugins():
            code = pytest.main(args, plugins=[plugin])
        if plugin.declaration_problems:
            raise GraderError(f"{sub.chapter.checks.name} declares its checks wrongly, so nothing was graded:\n"
                              + "\n".join(plugin.declaration_problems))
        completed = {pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED}
        if only:
            completed.add(pytest.ExitCode.NO_TESTS_COLLECTED)
        if code not in completed or not (plugin.results or only):
            raise GraderError(f"pytest could not run {sub.chapter.checks.name} (exit {code}):\n{log.getvalue()}")
    finally:
        runner.close()
    grade = Grade(notebook, sub.chapter.id, device, plugin.results, _load_notes(runner),
                  runner.protections)
    grade.out_of_time = runner.out_of_time
    flags = scan_submission(sub)
    if flags:  # the judge's own read of the cells: forgeable checks were failed (plugin), the instructor reviews
        grade.integrity = [str(f) for f in flags]
        grade.notes.append(integrity_note(flags))
    if device == "cuda" and not runner.cuda_available and not runner.fatal:
        grade.notes.append("CUDA was asked for but no CUDA GPU is available: the checks were skipped.")
    grade.execution_time = time.perf_counter() - started
    return grade
