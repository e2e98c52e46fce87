"""Grade one notebook: load it, run it in a sandbox, judge it with pytest."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from autograder.chapters import CHECKS_DIR
from autograder.limits import Limits
from autograder.notebook import NotebookError, load_submission
from autograder.plugin import CheckResult, KitPlugin
from autograder.remote import Student
from autograder.scan import note as integrity_note
from autograder.scan import scan_submission


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

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.points for r in self.results if r.status != "skipped")

    def by_task(self) -> dict[str, tuple[float, float]]:
        """(points earned, points possible) per task, in check order; skipped checks count for neither."""
        tasks: dict[str, tuple[float, float]] = {}
        for r in self.results:
            got, top = tasks.get(r.task, (0.0, 0.0))
            tasks[r.task] = (got + r.score, top + (r.points if r.status != "skipped" else 0.0))
        return tasks


SECRET_FILE = Path(__file__).resolve().parent.parent / ".autograder-secret"


def course_secret() -> bytes:
    """The course's grading secret: $AUTOGRADER_SECRET, else a random one kept in .autograder-secret (0600)."""
    if os.environ.get("AUTOGRADER_SECRET"):
        return os.environ["AUTOGRADER_SECRET"].encode()
    if not SECRET_FILE.exists():
        fd = os.open(SECRET_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return SECRET_FILE.read_bytes().strip()


def secret_seed(notebook: Path) -> int:
    """HMAC(course secret, notebook bytes): unknowable to students, yet the same notebook
    always gets the same inputs, so regrading gives the same score."""
    try:
        content = notebook.read_bytes()
    except OSError:
        content = b""
    return int.from_bytes(hmac.new(course_secret(), content, hashlib.sha256).digest()[:8], "little") >> 2


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


def grade(
    notebook: Path,
    assignment: str | None = None,
    device: str = "cpu",
    seed: int | None = None,
    limits: Limits | None = None,
    junit: Path | None = None,
    total_seconds: float = 900.0,
    only: str | None = None,
) -> Grade:
    """Grade one notebook. Never raises for anything the student did.

    `only` is a pytest -k expression selecting checks (e.g. "speed").
    """
    started = time.perf_counter()
    torch.set_num_threads(1)  # the judge's oracles are small; threads only add contention
    limits = limits or Limits()
    try:
        sub = load_submission(notebook, assignment)
    except NotebookError as e:
        return Grade(notebook, assignment, device, notes=[str(e)],
                     execution_time=time.perf_counter() - started)
    student = Student(sub, device, limits, deadline=time.monotonic() + total_seconds)
    plugin = KitPlugin(student, seed if seed is not None else secret_seed(notebook), device)
    try:
        student.start()
        if student.environment_error:
            raise GraderError(f"cannot grade {notebook.name} on this machine: {student.environment_error}")
        args = [str(sub.chapter.checks), "-c", str(CHECKS_DIR / "pytest.ini"), "--rootdir", str(CHECKS_DIR),
                "-p", "no:cacheprovider", "--noconftest", "-q", "--tb=short", "-W", "ignore"]
        if only:
            args += ["-k", only]
        if junit is not None:
            args += [f"--junitxml={junit}", "-o", f"junit_suite_name={sub.chapter.id}"]
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            code = pytest.main(args, plugins=[plugin])
        completed = {pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED}
        if only:
            completed.add(pytest.ExitCode.NO_TESTS_COLLECTED)
        if code not in completed or not (plugin.results or only):
            raise GraderError(f"pytest could not run {sub.chapter.checks.name} (exit {code}):\n{log.getvalue()}")
    finally:
        student.close()
    grade = Grade(notebook, sub.chapter.id, device, plugin.results, _load_notes(student),
                  student.protections)
    flags = scan_submission(sub)
    if flags:  # the judge's own read of the cells: forgeable checks were failed (plugin), the instructor reviews
        grade.integrity = [str(f) for f in flags]
        grade.notes.append(integrity_note(flags))
    if device == "cuda" and not student.cuda_available and not student.fatal:
        grade.notes.append("CUDA was asked for but no CUDA GPU is available: the checks were skipped.")
    grade.execution_time = time.perf_counter() - started
    return grade
