"""Grade one notebook: load it, run it in a sandbox, judge it with pytest.

`grade` loads the notebook (once) and hands the Submission to `grade_loaded`, the pipeline. Both are handed
the Zygote their sandboxes fork from, and leave the process as they found it: settings of the whole
process (torch's threads) are the entry points' (autograder.cli, autograder.course.batch's workers,
autograder.course.nbgrader.autograde.KitAutograde, the self-test).
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder.judging.notebook import NotebookError, Submission, load_submission
from autograder.judging.plugin import CheckResult, KitPlugin
from autograder.judging.registry import CHAPTERS_DIR, Chapter
from autograder.judging.seeds import secret_seed
from autograder.judging.static import devices
from autograder.judging.static.review import MAX_FLAGS, scan_submission
from autograder.judging.static.review import note as integrity_note
from autograder.judging.student import Student
from autograder.judging.untrusted import safe_name, safe_text
from autograder.sandbox.launcher import Zygote
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
    integrity: list[str] = field(default_factory=list)  # constructs that reach into grader internals (the first 20)
    integrity_count: int = 0  # and how many there are in all
    out_of_time: bool = False  # the grading's time ran out before some check called the code
    missing: list[str] = field(default_factory=list)  # answer cells deleted from the notebook
    output_dropped: bool = False  # the student's prints passed what the box keeps: a note, never a point
    undefined: list[str] = field(default_factory=list)  # answer cells that ran but do not define their name
    device_note: str = ""  # lines that would mix devices on a GPU (CPU gradings; also in notes): advice only

    @property
    def name(self) -> str:
        """The notebook's file name as text on one line: a student's, so made safe (untrusted.safe_name)."""
        return safe_name(self.notebook.name)

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


# The note of a submission whose prints passed what the box keeps (sandbox/runtime/child.py, KeptOutput).
OUTPUT_DROPPED = ("Your code printed more than 1 MiB while it was graded: your prints beyond 1 MiB were dropped. "
                  "This costs no point; remove the debug prints to keep the output readable.")


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
    if student.output_dropped:
        notes.append(OUTPUT_DROPPED)
    return notes


def _undefined(student: Student) -> list[str]:
    """The answer cells that are in the notebook and ran without an error but do not define the name the checks
    call (renamed?), as the child's load report lists the names; [] when the cells did not load."""
    names = student.load_report.get("names")
    if not isinstance(names, dict):
        return []
    failed = student.load_report.get("errors", {})
    sub = student.submission
    return [cid for cid in sub.chapter.answers if cid not in names and cid not in sub.missing and cid not in failed]


@contextlib.contextmanager
def _without_installed_plugins() -> Iterator[None]:
    """The checks run with pytest's own plugins and the kit's only: an installed plugin (randomly,
    xdist, hypothesis...) must not reorder, repeat or break them. The environment is left as it was,
    PYTEST_CURRENT_TEST too (pytest removes it after its last check: an outer pytest's, in the kit's tests)."""
    before = {name: os.environ.get(name) for name in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_CURRENT_TEST")}
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class GradeOptions:
    """How to grade one notebook, whoever asks (the CLI, grade-all's workers, nbgrader's preprocessor, the
    self-test)."""
    device: str = "cpu"
    seed: int | None = None  # the inputs' seed; default: seeds.secret_seed of the student, else of the answers
    limits: Limits = field(default_factory=Limits)
    junit: Path | None = None  # write a JUnit XML report here
    total_seconds: float = 900.0  # for the whole grading
    only: str | None = None  # a pytest -k expression selecting checks (e.g. "speed")
    student: str | None = None  # a name, id or email: fixes the seed for this student and assignment


def grade(
    notebook: Path,
    assignment: str | None = None,
    options: GradeOptions | None = None,
    *,
    zygote: Zygote,
    registry: Mapping[str, Chapter] | None = None,
) -> Grade:
    """Load one notebook, its assignment one of `registry`'s chapters (default: the installed ones), and grade
    it (grade_loaded). Never raises for anything the student did: a notebook no chapter is found for is a
    Grade with that note.
    """
    options = options or GradeOptions()
    started = time.perf_counter()
    try:
        sub = load_submission(notebook, assignment, registry)
    except NotebookError as e:
        return Grade(notebook, assignment, options.device, notes=[str(e)],
                     execution_time=time.perf_counter() - started)
    g = grade_loaded(sub, options, zygote=zygote)
    g.execution_time = time.perf_counter() - started
    return g


def grade_loaded(sub: Submission, options: GradeOptions | None = None, *, zygote: Zygote) -> Grade:
    """Grade a loaded submission, its children forked by `zygote`. Never raises for anything the student did.

    `options.student` fixes the input seed for this student and assignment, whatever the notebook holds (see
    seeds.secret_seed).
    """
    started = time.perf_counter()
    o = options or GradeOptions()
    device, only, junit = o.device, o.only, o.junit
    notebook = sub.path
    flags = scan_submission(sub)  # the judge's own read of the cells, for review: no point depends on it
    # Lines that would mix devices on a GPU: said on a CPU-only grading, where no device check could run them.
    device_notes = devices.read_submission(sub) if device == "cpu" else []
    runner = Student(sub, device, o.limits, time.monotonic() + o.total_seconds, zygote)
    plugin = KitPlugin(runner, o.seed if o.seed is not None else secret_seed(sub, o.student), device)
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
            raise GraderError(f"{sub.chapter.checks_name} declares its checks wrongly, so nothing was graded:\n"
                              + "\n".join(plugin.declaration_problems))
        completed = {pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED}
        if only:
            completed.add(pytest.ExitCode.NO_TESTS_COLLECTED)
        if code not in completed or not (plugin.results or only):
            raise GraderError(f"pytest could not run {sub.chapter.checks_name} (exit {code}):\n{log.getvalue()}")
    finally:
        runner.close()
    grade = Grade(notebook, sub.chapter.id, device, plugin.results, _load_notes(runner),
                  runner.protections)
    grade.out_of_time = runner.out_of_time
    grade.missing = list(sub.missing)
    grade.output_dropped = runner.output_dropped
    grade.undefined = _undefined(runner)
    if flags:  # a flag for the instructor's review, never a deduction
        grade.integrity, grade.integrity_count = [safe_text(str(f)) for f in flags[:MAX_FLAGS]], len(flags)
        grade.notes.append(integrity_note(flags))
    if device_notes:
        grade.device_note = devices.note(device_notes)
        grade.notes.append(grade.device_note)
    if device == "cuda" and not runner.cuda and not runner.fatal:
        grade.notes.append("CUDA was asked for but no CUDA GPU is available: the checks were skipped.")
    grade.execution_time = time.perf_counter() - started
    return grade
