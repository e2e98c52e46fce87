"""The class report: what a class got right and wrong, from a graded/ folder, as HTML and CSV.

    python -m autograder class-report graded/ [--out graded/report]

It reads the result files grade-all writes (results/<student>/<assignment>.json,
Gradescope's schema) and writes into the output folder:

- report.html: one self-contained page (plots inlined as PNG data, no script);
- lessons.csv, tasks.csv, checks.csv: scores per assignment, points per task
  (earned, lost to wrong answers, lost to a deleted answer cell, not run), pass rate of every check;
  stretch (bonus) tasks are labelled and never ranked among the required ones;
- students.csv: every student's score on every assignment (nbgrader's, with Formgrader's manual
  adjustments, where a gradebook.db is found);
- scores.csv: the score distribution of each assignment;
- failures.csv: failure messages grouped across students, most common first;
- flagged.csv: the submissions an instructor should look at, and the notebooks not submitted;
- adjustments.csv: Formgrader's manual grades that changed a kit score (with a gradebook.db).

The page is built of sections, one function each (SECTIONS); a new section is one more function there.

Student names and messages are hostile input: every text is stripped of control
characters and HTML-escaped, and CSV cells cannot start a spreadsheet formula.
matplotlib is imported only here, lazily: without it the page says so and has
no plots, and the CSV files are the same.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import functools
import html
import io
import os
import re
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.batch import row
from autograder.course.similarity import review as similar_answers
from autograder.course.similarity import section as similarity_section
from autograder.judging import results as fmt
from autograder.judging.report import clean, csv_cell
from autograder.judging.results import Outcome, SubmissionStatus, TestResult

PASSED, WRONG, NOT_RUN, MISSING = "passed", "wrong", "not run", "answer cell missing"
# How the report counts each outcome: not run is a stub, or code that could not run at all; None: not scored here.
KIND: dict[Outcome, str | None] = {
    Outcome.PASSED: PASSED, Outcome.SKIPPED: None,
    Outcome.NOT_IMPLEMENTED: NOT_RUN, Outcome.NOT_RUN: NOT_RUN,
    Outcome.WRONG: WRONG, Outcome.STUDENT_ERROR: WRONG, Outcome.TIMEOUT: WRONG, Outcome.NOT_SCORED: WRONG,
    Outcome.GRADER_ERROR: WRONG,
}
TOP_FAILURES = 30  # groups shown on the page; failures.csv has them all
BIG_DROP = 0.4  # a score this fraction of full marks below the student's own mean elsewhere is flagged
FAR_BELOW = 0.5  # ... or this far below the class median of the assignment (3 scores or more)


@dataclass
class Submission:
    student: str
    assignment: str
    score: float
    max_score: float
    status: SubmissionStatus  # GRADED, ERROR, GRADER_ERROR or UNREADABLE
    notes: str
    tests: list[TestResult] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)  # the first 20
    integrity_count: int = 0  # in all
    sandbox_off: list[str] = field(default_factory=list)
    out_of_time: bool | None = None  # the grading's time ran out; None: a file of an older version, which does not say
    missing: list[str] = field(default_factory=list)  # answer cells deleted from the notebook

    @property
    def scored(self) -> bool:
        return self.status.scored

    @property
    def fraction(self) -> float | None:
        return min(1.0, self.score / self.max_score) if self.scored and self.max_score > 0 else None


@dataclass
class Check:
    assignment: str
    task: str
    name: str
    points: float
    visible: bool
    bonus: bool = False  # a stretch task's check: extra credit
    passed: int = 0
    wrong: int = 0
    not_run: int = 0
    skipped: int = 0
    missing: int = 0  # its answer cell was deleted

    @property
    def ran(self) -> int:
        return self.passed + self.wrong + self.not_run + self.missing

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ran if self.ran else None


@dataclass
class Task:
    """Points of one task (an answer cell) summed over the submissions whose checks ran."""

    assignment: str
    task: str
    bonus: bool = False  # a stretch task: optional, extra credit
    points: float = 0.0  # of one submission
    submissions: int = 0
    earned: float = 0.0
    wrong: float = 0.0
    not_run: float = 0.0
    missing: float = 0.0  # lost because the answer cell was deleted
    full: int = 0
    zero: int = 0

    @property
    def label(self) -> str:
        return f"{self.task} (bonus)" if self.bonus else self.task

    def share(self, part: float) -> float | None:
        total = self.earned + self.wrong + self.not_run + self.missing
        return part / total if total else None


@dataclass
class Lesson:
    assignment: str
    submissions: int = 0
    grader_errors: int = 0
    full_marks: float = 0.0
    scores: list[float] = field(default_factory=list)
    flagged: int = 0

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.scores) if self.scores else None

    @property
    def percent(self) -> float | None:
        mean = self.mean
        return mean / self.full_marks if mean is not None and self.full_marks else None


@dataclass
class Failure:
    """One failure message, normalised, and everyone who got it."""

    assignment: str
    kind: str  # wrong | not run | answer cell missing
    message: str
    example: str
    students: set[str] = field(default_factory=set)
    tasks: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)


@dataclass
class Flagged:
    student: str
    assignment: str
    score: float
    max_score: float
    status: SubmissionStatus  # a submission's, or MISSING: no notebook
    reasons: list[str]
    detail: str
    rank: int  # lower is more urgent


@dataclass
class Adjusted:
    """One submission as nbgrader's gradebook holds it, after Formgrader's manual grading."""

    student: str
    assignment: str
    score: float  # nbgrader's: manual scores where given, else the auto scores, plus extra credit
    max_score: float
    auto_score: float  # the auto scores the kit recorded, plus the extra credit it recorded for stretch tasks
    changes: list[str]  # "check_softmax: 5 -> 6", "check_softmax: +1 extra credit", "answer_x: 2 / 3 (manual)"
    needs_manual: int  # cells still waiting for a manual grade


@dataclass
class Report:
    source: Path
    submissions: list[Submission]
    lessons: dict[str, Lesson]
    tasks: list[Task]
    checks: list[Check]
    failures: list[Failure]
    flagged: list[Flagged]
    sandbox_off: list[str]
    students: list[str] = field(default_factory=list)  # everyone with a result or in the gradebook
    adjusted: dict[tuple[str, str], Adjusted] = field(default_factory=dict)  # (student, assignment)
    gradebook: str | None = None  # what the page says of the gradebook (read from where, or why not)

    @functools.cached_property
    def by_student(self) -> dict[tuple[str, str], Submission]:
        return {(s.student, s.assignment): s for s in self.submissions}

    @property
    def required(self) -> list[Task]:
        """The tasks every student must do, those that ran; stretch tasks are not among them."""
        return [t for t in self.tasks if not t.bonus and t.share(t.earned) is not None]


# -- reading ------------------------------------------------------------------


def results_dir(graded: Path) -> Path:
    """graded/results (grade-all, merge), or the folder itself when it holds <student>/<assignment>.json."""
    return graded / "results" if (graded / "results").is_dir() else graded


def _text(value: Any) -> str:
    return clean(value if isinstance(value, str) else "" if value is None else str(value))


def read_submission(path: Path) -> Submission:
    """One result file; a damaged one is an `unreadable` submission, never an exception."""
    student, assignment = _text(path.parent.name), _text(path.stem)
    try:
        result = fmt.load(path)
        extra = result["extra_data"]
        extra.setdefault("student", path.parent.name)
        extra["assignment"] = extra.get("assignment") or path.stem
        summary = row(result)
        return Submission(
            summary["student"], summary["assignment"], float(summary["score"]), float(summary["max_score"]),
            summary["status"], _text(result["output"]) or _text(fmt.grader_error(result)), result["tests"],
            [_text(f) for f in extra.get("integrity", [])],
            extra.get("integrity_count", len(extra.get("integrity", []))),
            [_text(p) for p in fmt.sandbox_off(result)], extra.get("out_of_time"),
            [_text(c) for c in extra.get("missing", [])])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return Submission(student, assignment, 0.0, 0.0, SubmissionStatus.UNREADABLE,
                          f"the result file {path.name} cannot be read ({type(e).__name__}: {_text(str(e))[:200]}); "
                          "grade this submission again")


def read_class(graded: Path) -> list[Submission]:
    folder = results_dir(graded)
    return [read_submission(p) for p in sorted(folder.glob("*/*.json")) if p.is_file()]


GRADEBOOK = "gradebook.db"


def find_gradebook(graded: Path) -> Path | None:
    """nbgrader's gradebook.db beside the results (graded/) or in the course folder above it (grade-all's
    --out inside the course), else None."""
    for folder in (graded, graded.parent):
        if (folder / GRADEBOOK).is_file():
            return folder / GRADEBOOK
    return None


def read_gradebook(db: Path) -> tuple[dict[tuple[str, str], Adjusted], list[str], str]:
    """Every submission in nbgrader's gradebook, its students, and a line for the page saying where they were
    read from or why not. The file is opened read-only: the report never writes the instructor's grades."""
    try:
        from nbgrader.api import Gradebook
    except ImportError:
        return {}, [], (f"{db} was found, but nbgrader is not installed here (a dev extra), so Formgrader's "
                        "manual grades are not shown.")
    url = f"file:{db.resolve()}?mode=ro&uri=true"
    try:
        with contextlib.closing(sqlite3.connect(url, uri=True)) as con:
            course = con.execute("SELECT id FROM course").fetchone()
        # nbgrader adds a course it does not find: name the one there, so that nothing is written
        with Gradebook(f"sqlite:///{url}", course[0] if course else "default_course") as gb:
            roster = [_text(s.id) for s in gb.students]
            adjusted: dict[tuple[str, str], Adjusted] = {}
            for assignment in gb.assignments:
                for sub in gb.assignment_submissions(assignment.name):
                    adjusted[(_text(sub.student_id), _text(assignment.name))] = _adjusted(sub)
    except Exception as e:  # a damaged or foreign file: the report is still written, and says why
        return {}, [], f"{db} could not be read as nbgrader's gradebook ({type(e).__name__}: {_text(str(e))[:200]})."
    return adjusted, roster, f"Formgrader's grades read from {db}."


def _adjusted(sub: Any) -> Adjusted:
    """One nbgrader SubmittedAssignment: its score and what manual grading changed. The kit records auto
    scores, and a stretch task's points as the extra credit of its 0-point check cell; any other extra
    credit, and any manual score, is the instructor's."""
    changes, needs, auto = [], 0, 0.0
    for nb in sub.notebooks:
        for g in nb.grades:
            kit_credit = (g.extra_credit or 0.0) if not g.max_score else 0.0
            auto += (g.auto_score or 0.0) + kit_credit
            if g.manual_score is not None and g.auto_score is None:
                changes.append(f"{g.name}: {g.manual_score:g} / {g.max_score:g} (graded by hand)")
            elif g.manual_score is not None and g.manual_score != g.auto_score:
                changes.append(f"{g.name}: {g.auto_score:g} -> {g.manual_score:g}")
            if g.extra_credit and g.max_score:
                changes.append(f"{g.name}: {g.extra_credit:+g} extra credit")
            needs += bool(g.needs_manual_grade)
    return Adjusted(_text(sub.student_id), _text(sub.assignment.name), float(sub.score), float(sub.max_score),
                    auto, [_text(c) for c in changes], needs)


# -- normalising failure messages ----------------------------------------------

# Lines of a judge's message that show this student's inputs and outputs (autograder/judging/expect.py).
_DETAIL_LINES = ("Call:", "Expected:", "Got:", "Timing:")
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
# A number, with or without a unit (4x, 3.1ms), that is not part of a name: float32, 02_modules keep their digits.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
                     r"(?=(?:x|s|ms|us|µs|ns|[KMG]i?B|B|%)?(?!\w))")
_LONG_LIST = re.compile(r"#(?:,\s*#){4,}(?:,\s*(?:\.\.\.|…))?")
_SPACE = re.compile(r"\s+")
_ERROR_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b")
# File names (random in chapter 06's checks), then a list of them of any length.
_FILE = re.compile(r"[\w./-]*\w\.(?:png|jpe?g|bmp|tar|gz|zip|txt|npy|npz|pt|pth|ipynb|csv|json)\b")
# An argument in a call's description (autograder/judging/remote.py): its shape is the input's, not the mistake.
_TENSOR_ARG = re.compile(r"tensor\(shape=\[[\d, ]*\]")
_FILES = re.compile(r"<file>(?: x\d+)?(?:, <file>(?: x\d+)?)+")  # "a.png x2, b.png x2": duplicates
MAX_KEY = 240


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def _mistake(problem: str, hint: str) -> str:
    """The first sentence of a failure's problem and of its hint (each the first line, as the message shows it)."""
    text = first_sentence(problem.strip().splitlines()[0] if problem.strip() else "")
    hint = hint.strip().splitlines()[0].strip() if hint.strip() else ""
    return text + (" Hint: " + first_sentence(hint) if hint else "")


def failure_key(test: TestResult) -> str:
    """The mistake a failed check names, without this student's inputs and values: from the problem and hint
    the check recorded as fields (a test's extra_data), or, for a failure that has none (an error of the
    student's code, an assert, a result file written before checks recorded them), from its message."""
    extra = test.get("extra_data", {})
    problem = _text(extra.get("problem"))
    if problem.strip():
        return _general(_mistake(problem, _text(extra.get("hint"))))
    return normalize(_text(test["output"]))


def normalize(message: str) -> str:
    """The mistake a failure message names, without this student's inputs and values: the fallback of
    failure_key for failures that recorded no problem as a field.

    A judge's message in a result file written before failures kept their problem and hint as fields
    (autograder/judging/expect.py's layout: Call/Expected/Got, then Problem and Hint) is read back from its
    labelled lines: the key is the first sentence of Problem and of Hint. Other messages keep the first
    sentence of their prose up to the exception they report ("ValueError: ..."). Then, as for every key
    (_general), this student's file names and numbers are generalised.
    """
    lines = [line.rstrip() for line in message.splitlines()]
    tagged = {tag: line.removeprefix(tag).strip() for line in lines for tag in ("Problem:", "Hint:")
              if line.startswith(tag)}
    if "Problem:" in tagged:
        text = _mistake(tagged["Problem:"], tagged.get("Hint:", ""))
    else:
        prose = [line.strip() for line in lines
                 if line.strip() and not line.startswith(_DETAIL_LINES) and not line[:1].isspace()][:3]
        ends = [i for i, line in enumerate(prose) if _ERROR_LINE.match(line)]  # "ValueError: ..." ends the story
        text = first_sentence(" ".join(prose[:ends[0] + 1] if ends else prose[:2]))
    return _general(text)


def _general(text: str) -> str:
    """`text` without what differs between students' random inputs: file names become <file>, numbers #, and
    lists of either "<file>, …" or "#, …", so the same mistake on different inputs reads the same."""
    text = _SPACE.sub(" ", text[:2000])
    text = _FILES.sub("<file>, …", _FILE.sub("<file>", _TENSOR_ARG.sub("tensor(shape=[…]", text)))
    text = _LONG_LIST.sub("#, …", _HEX.sub("0x#", _NUMBER.sub("#", text)))
    return text[:MAX_KEY] + ("…" if len(text) > MAX_KEY else "")


# -- the analysis ----------------------------------------------------------------


def _task_and_name(test: TestResult) -> tuple[str, str]:
    tags = test["tags"]
    task = _text(tags[0]) if tags else ""
    name = _text(test["name"])
    return task, name.removeprefix(f"[{task}] ") if task else name


def outcome(sub: Submission, test: TestResult) -> str | None:
    """passed, wrong, not run (a stub, or a notebook whose code could not run at all), answer cell missing
    (the cell was deleted: its checks fail, but no answer was wrong), or None: skipped."""
    found = fmt.outcome(test)
    kind = KIND[found] if found is not None else _legacy_outcome(sub, test)
    if kind in (WRONG, NOT_RUN) and _task_and_name(test)[0] in sub.missing:
        return MISSING
    return kind


def _kit_failed(test: TestResult) -> bool:
    found = fmt.outcome(test)
    return found is Outcome.GRADER_ERROR if found is not None else LEGACY_KIT_FAILED in _text(test["output"])


def _out_of_time(sub: Submission) -> bool:
    if sub.out_of_time is not None:
        return sub.out_of_time
    return any(LEGACY_OUT_OF_TIME in _text(t["output"]) for t in sub.tests)


# Result files written before outcomes were recorded (no extra_data in their tests, no out_of_time) say what
# happened in the messages only: for those files alone, and nowhere else, the report falls back to matching
# the text the judge wrote then. A student's own exception text can match these (a ValueError("The grader
# itself failed in this check") reads as the kit's failure): grade such a class again to have outcomes.
LEGACY_NOT_IMPLEMENTED = "not implemented:"  # how the judge started the message of a stub
LEGACY_KIT_FAILED = "The grader itself failed in this check"  # the plugin's message for the kit's own failure
LEGACY_OUT_OF_TIME = "The time limit for grading this notebook ran out"  # the judge's, when the time ran out


def _legacy_outcome(sub: Submission, test: TestResult) -> str | None:
    """outcome() for a test of a file written before outcomes were recorded: from its status and message."""
    status = test.get("status")
    if status == "passed":
        return PASSED
    if status != "failed":
        return None
    output = _text(test["output"])
    if output.startswith(LEGACY_NOT_IMPLEMENTED) or (output and sub.notes and output in sub.notes):
        return NOT_RUN
    return WRONG


def _reasons(sub: Submission) -> list[tuple[int, str]]:
    """Why an instructor should look at this submission, from its result alone, with a rank (lower: more urgent)."""
    reasons: list[tuple[int, str]] = []
    if sub.status is SubmissionStatus.GRADER_ERROR:
        reasons.append((0, "grader error: no score; run grade-all again"))
    if sub.status is SubmissionStatus.UNREADABLE:
        reasons.append((1, "result file unreadable"))
    if sub.integrity_count:
        reasons.append((2, f"review flags: {sub.integrity_count} construct(s) reaching into other code (no points "
                           "depend on them: read the lines)"))
    if any(_kit_failed(t) for t in sub.tests):
        reasons.append((3, "the grader failed inside a check"))
    if sub.status is SubmissionStatus.ERROR:
        reasons.append((4, "could not be graded: " + first_sentence(sub.notes.splitlines()[0] if sub.notes else "")))
    if sub.missing:
        reasons.append((4, "answer cell(s) deleted: " + ", ".join(sub.missing) + " (their checks scored 0; "
                           "the student can copy them back from the release)"))
    outcomes = [outcome(sub, t) for t in sub.tests]
    voided = sorted({_task_and_name(t)[0] for t in sub.tests if fmt.outcome(t) is Outcome.NOT_SCORED})
    if voided:
        reasons.append((5, "broke the stated rule of " + ", ".join(voided) + ": those tasks scored 0"))
    if sub.status is SubmissionStatus.GRADED and sub.max_score > 0 and sub.score == 0:
        failed = [o for o in outcomes if o is not None]
        nothing = failed and all(o == NOT_RUN for o in failed)
        reasons.append((5, "nothing implemented (the release unchanged?)" if nothing else "zero score"))
    if _out_of_time(sub):
        reasons.append((6, "ran out of grading time"))
    return reasons


def _score_reasons(subs: list[Submission]) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """Scores above zero that stand out: far below the student's own mean on their other assignments (a
    drop), or far below the class median of the assignment."""
    mine: dict[str, dict[str, float]] = {}
    theirs: dict[str, list[float]] = {}
    for sub in subs:
        if sub.fraction is not None:
            mine.setdefault(sub.student, {})[sub.assignment] = sub.fraction
            theirs.setdefault(sub.assignment, []).append(sub.fraction)
    found: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for student, fractions in mine.items():
        for a, f in fractions.items():
            if f == 0:
                continue  # "zero score" says it already
            others = [g for b, g in fractions.items() if b != a]
            if others and statistics.fmean(others) - f >= BIG_DROP:
                found.setdefault((student, a), []).append(
                    (6, f"a drop: {_pct(f)} here, {_pct(statistics.fmean(others))} on average on their "
                        f"{len(others)} other assignment(s)"))
            median = statistics.median(theirs[a]) if len(theirs[a]) >= 3 else None
            if median is not None and median - f >= FAR_BELOW:
                found.setdefault((student, a), []).append((6, f"far below the class: {_pct(f)}, the median "
                                                              f"is {_pct(median)}"))
    return found


def _not_submitted(subs: list[Submission], students: list[str], assignments: list[str]) -> list[Flagged]:
    """A notebook of an assignment the class handed in that a student (with other results, or in the
    gradebook) did not."""
    handed = {(s.student, s.assignment) for s in subs}
    flagged = []
    for student in students:
        done = sum((student, a) in handed for a in assignments)
        for a in assignments:
            if (student, a) not in handed:
                flagged.append(Flagged(student, a, 0.0, 0.0, SubmissionStatus.MISSING, [
                    f"no notebook: nothing was graded for {a} ({done} other assignment(s) graded)"],
                    "", 5))
    return flagged


def analyse(graded: Path, gradebook: Path | None = None) -> Report:
    """The class in `graded`; with `gradebook` (nbgrader's gradebook.db), Formgrader's manual grades too."""
    subs = read_class(graded)
    adjusted, roster, book_note = read_gradebook(gradebook) if gradebook is not None else ({}, [], None)
    lessons: dict[str, Lesson] = {}
    tasks: dict[tuple[str, str], Task] = {}
    checks: dict[tuple[str, str, str], Check] = {}
    failures: dict[tuple[str, str], Failure] = {}  # (assignment, mistake id or key)
    flagged: list[Flagged] = []
    similar = similar_answers(graded)  # (student, assignment) -> why: a lead for review, never a score
    by_score = _score_reasons(subs)
    for sub in subs:
        lesson = lessons.setdefault(sub.assignment, Lesson(sub.assignment))
        lesson.submissions += 1
        reasons = _reasons(sub) + by_score.get((sub.student, sub.assignment), [])
        if (sub.student, sub.assignment) in similar:
            reasons.append((7, similar[(sub.student, sub.assignment)]))
        reasons.sort(key=lambda r: r[0])
        if reasons:
            flagged.append(Flagged(sub.student, sub.assignment, sub.score, sub.max_score, sub.status,
                                   [text for _, text in reasons],
                                   (sub.notes.replace("\n", " ") or "\n".join(sub.integrity))[:400], reasons[0][0]))
        if not sub.scored:
            lesson.grader_errors += 1
            continue
        lesson.scores.append(sub.score)
        lesson.full_marks = max(lesson.full_marks, sub.max_score)
        per_task: dict[str, dict[str, float]] = {}  # task -> {"points": ..., PASSED: ..., WRONG: ..., ...}
        for test in sub.tests:
            task, name = _task_and_name(test)
            points = float(test["max_score"])
            bonus = "bonus" in test["tags"]
            check = checks.setdefault((sub.assignment, task, name),
                                      Check(sub.assignment, task, name, points, test["visibility"] == "visible",
                                            bonus))
            check.points = max(check.points, points)
            result = outcome(sub, test)
            if result is None:
                check.skipped += 1
                continue
            acc = per_task.setdefault(task, {"points": 0.0, "bonus": float(bonus)})
            acc["points"] += points
            acc[result] = acc.get(result, 0.0) + points
            if result == PASSED:
                check.passed += 1
                continue
            if result == WRONG:
                check.wrong += 1
            elif result == MISSING:
                check.missing += 1
            else:
                check.not_run += 1
            output = _text(test["output"])
            key = failure_key(test) or "(no message)"
            # A named mistake groups by its id, whatever its wording on this student's inputs.
            group = _text(test.get("extra_data", {}).get("mistake")) or key
            failure = failures.setdefault((sub.assignment, group),
                                          Failure(sub.assignment, result, key, output[:1500]))
            failure.students.add(sub.student)
            if task not in failure.tasks:
                failure.tasks.append(task)
            if name not in failure.checks:
                failure.checks.append(name)
        for task, acc in per_task.items():
            t = tasks.setdefault((sub.assignment, task), Task(sub.assignment, task, bool(acc["bonus"])))
            t.points = max(t.points, acc["points"])
            t.submissions += 1
            t.earned += acc.get(PASSED, 0.0)
            t.wrong += acc.get(WRONG, 0.0)
            t.not_run += acc.get(NOT_RUN, 0.0)
            t.missing += acc.get(MISSING, 0.0)
            t.full += acc.get(PASSED, 0.0) == acc["points"]
            t.zero += acc.get(PASSED, 0.0) == 0
    students = sorted({s.student for s in subs} | set(roster))
    absent = _not_submitted(subs, students, sorted(lessons))
    for f in flagged + absent:
        lessons[f.assignment].flagged += 1
    for f in absent:
        f.max_score = lessons[f.assignment].full_marks
    order = {a: i for i, a in enumerate(sorted(lessons))}
    task_order = {key: i for i, key in enumerate(dict.fromkeys((c.assignment, c.task) for c in checks.values()))}
    return Report(
        source=graded,
        submissions=subs,
        lessons={a: lessons[a] for a in sorted(lessons)},
        tasks=sorted(tasks.values(), key=lambda t: order[t.assignment]),  # stable: checks' order within one
        checks=sorted(checks.values(), key=lambda c: (order[c.assignment], task_order[(c.assignment, c.task)])),
        failures=sorted(failures.values(), key=lambda f: (-len(f.students), f.assignment, f.message)),
        flagged=sorted(flagged + absent, key=lambda f: (f.rank, f.assignment, f.student)),
        sandbox_off=sorted({p for s in subs for p in s.sandbox_off}),
        students=students,
        adjusted=adjusted,
        gradebook=book_note,
    )


# -- CSV ---------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    """A CSV cell: text without control characters that no spreadsheet reads as a formula."""
    if value is None:
        return ""
    return round(value, 4) if isinstance(value, float) else csv_cell(value)


def _write_csv(path: Path, header: list[str], rows: Iterable[list[Any]]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows([_cell(v) for v in r] for r in rows)
    os.replace(tmp, path)


def write_csvs(report: Report, out: Path) -> list[str]:
    _write_csv(out / "lessons.csv",
               ["assignment", "submissions", "scored", "grader_errors", "full_marks", "mean", "median", "min", "max",
                "mean_fraction", "full_marks_count", "zero_count", "flagged"],
               ([a, le.submissions, len(le.scores), le.grader_errors, le.full_marks, le.mean,
                 statistics.median(le.scores) if le.scores else None, min(le.scores, default=None),
                 max(le.scores, default=None), le.percent, sum(s >= le.full_marks > 0 for s in le.scores),
                 sum(s == 0 for s in le.scores), le.flagged] for a, le in report.lessons.items()))
    _write_csv(out / "tasks.csv",
               ["assignment", "task", "bonus", "points", "submissions", "mean_points", "earned_fraction",
                "lost_wrong_fraction", "not_run_fraction", "answer_cell_missing_fraction", "full_marks_count",
                "zero_count"],
               ([t.assignment, t.task, t.bonus, t.points, t.submissions,
                 t.earned / t.submissions if t.submissions else None, t.share(t.earned), t.share(t.wrong),
                 t.share(t.not_run), t.share(t.missing), t.full, t.zero] for t in report.tasks))
    _write_csv(out / "checks.csv",
               ["assignment", "task", "check", "bonus", "points", "visible", "ran", "passed", "wrong", "not_run",
                "answer_cell_missing", "skipped", "pass_rate"],
               ([c.assignment, c.task, c.name, c.bonus, c.points, c.visible, c.ran, c.passed, c.wrong, c.not_run,
                 c.missing, c.skipped, c.pass_rate] for c in report.checks))
    assignments = list(report.lessons)
    _write_csv(out / "students.csv", ["student", *assignments, "total", "total_max"],
               ([student, *(_score_cell(report, student, a) for a in assignments), *_total(report, student)]
                for student in report.students))
    _write_csv(out / "scores.csv", ["assignment", "score", "students"],
               ([a, score, le.scores.count(score)] for a, le in report.lessons.items()
                for score in sorted(set(le.scores))))
    _write_csv(out / "failures.csv",
               ["assignment", "kind", "students_count", "message", "tasks", "checks", "students", "example"],
               ([f.assignment, f.kind, len(f.students), f.message, "; ".join(f.tasks), "; ".join(f.checks),
                 " ".join(sorted(f.students)), f.example] for f in report.failures))
    _write_csv(out / "flagged.csv",
               ["student", "assignment", "score", "max_score", "status", "reasons", "detail"],
               ([f.student, f.assignment, f.score, f.max_score, f.status, "; ".join(f.reasons), f.detail]
                for f in report.flagged))
    files = ["lessons.csv", "tasks.csv", "checks.csv", "students.csv", "scores.csv", "failures.csv", "flagged.csv"]
    if report.adjusted:
        _write_csv(out / "adjustments.csv",
                   ["student", "assignment", "kit_score", "nbgrader_score", "max_score", "difference",
                    "needs_manual_grade", "changes"],
                   ([a.student, a.assignment, a.auto_score, a.score, a.max_score, a.score - a.auto_score,
                     a.needs_manual, "; ".join(a.changes)] for a in _adjustments(report)))
        files.append("adjustments.csv")
    return files


def _final(report: Report, student: str, assignment: str
           ) -> tuple[float, float, float | None] | SubmissionStatus | None:
    """(score, full marks, the kit's score where Formgrader's differs) of one student's assignment, the
    status of a submission with no score, or None: nothing submitted."""
    adjusted = report.adjusted.get((student, assignment))
    sub = report.by_student.get((student, assignment))
    if sub is not None and not sub.scored:
        return sub.status
    if adjusted is not None:
        return adjusted.score, adjusted.max_score, adjusted.auto_score if adjusted.changes else None
    return None if sub is None else (sub.score, sub.max_score, None)


def _score_cell(report: Report, student: str, assignment: str) -> float | SubmissionStatus | None:
    final = _final(report, student, assignment)
    return final[0] if isinstance(final, tuple) else final


def _total(report: Report, student: str) -> tuple[float, float]:
    scores = [f for a in report.lessons if isinstance(f := _final(report, student, a), tuple)]
    return sum(f[0] for f in scores), sum(report.lessons[a].full_marks for a in report.lessons)


def _adjustments(report: Report) -> list[Adjusted]:
    return [a for _, a in sorted(report.adjusted.items()) if a.changes or a.needs_manual]


# -- plots (matplotlib, imported here only) ----------------------------------------

PARTS = [("earned", "#3a8f3a", lambda t: t.earned), ("lost to wrong answers", "#d0453a", lambda t: t.wrong),
         ("answer cell missing", "#e39b2d", lambda t: t.missing),
         ("not implemented / not run", "#b9b9b9", lambda t: t.not_run)]


def _png(fig: Any) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _plot_tasks(report: Report) -> str:
    from matplotlib.figure import Figure

    tasks = [t for t in report.tasks if t.share(t.earned) is not None]
    fig = Figure(figsize=(9, 0.9 + 0.32 * len(tasks)), layout="constrained")
    ax = fig.add_subplot()
    y = list(range(len(tasks)))
    left = [0.0] * len(tasks)
    for label, colour, part in PARTS:
        widths = [100 * (t.share(part(t)) or 0) for t in tasks]
        ax.barh(y, widths, left=left, color=colour, label=label, height=0.7)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for i, t in enumerate(tasks):
        earned = t.share(t.earned) or 0
        ax.text(1, i, f"{100 * earned:.0f}%", va="center", ha="left", color="white" if earned > 0.08 else "#222",
                fontsize=8, fontweight="bold")
        if i and t.assignment != tasks[i - 1].assignment:
            ax.axhline(i - 0.5, color="#444", linewidth=0.8)
    ax.set_yticks(y, [f"{t.assignment}  ·  {t.label}" for t in tasks], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the task's points, summed over the class")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=4, fontsize=8, frameon=False)
    return _png(fig)


def _plot_scores(report: Report) -> str:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    lessons = [le for le in report.lessons.values() if le.scores]
    cols = min(4, len(lessons))
    rows = -(-len(lessons) // cols)
    fig = Figure(figsize=(2.6 * cols, 2.2 * rows), layout="constrained")
    for i, le in enumerate(lessons):
        ax = fig.add_subplot(rows, cols, i + 1)
        top = max(le.full_marks, max(le.scores), 1.0)
        bins = [x - 0.5 for x in range(int(top) + 2)] if top <= 40 else 20  # one bar per point, up to 40 points
        ax.hist(le.scores, bins=bins, color="#4a78b5")
        ax.axvline(le.mean or 0, color="#d0453a", linewidth=1)
        ax.set_title(f"{le.assignment}\nn={len(le.scores)}, mean {le.mean:.1f} / {le.full_marks:g}", fontsize=8)
        ax.set_xlim(-0.8, top + 0.8)
        ax.tick_params(labelsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.supxlabel("score (points); red line: mean", fontsize=8)
    fig.supylabel("students", fontsize=8)
    return _png(fig)


def plots(report: Report) -> tuple[dict[str, str], str | None]:
    """{"tasks": data URI, "scores": data URI}, or {} and why there are none."""
    if not report.lessons or not any(le.scores for le in report.lessons.values()):
        return {}, None
    try:
        import matplotlib
    except ImportError:
        return {}, ("matplotlib is not installed here (it is a dev extra: pip install -e '.[dev]'), so this page has "
                    "no plots; the tables and CSV files are complete. Run `python -m autograder class-report` again "
                    "where it is installed to draw them.")
    with matplotlib.rc_context({"text.parse_math": False}):  # a "$" in a name is text, not TeX
        return {"tasks": _plot_tasks(report), "scores": _plot_scores(report)}, None


# -- HTML --------------------------------------------------------------------------


def esc(value: Any) -> str:
    return html.escape(clean(str(value)), quote=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _shade(value: float | None) -> str:
    """A background from red (0) through amber to green (1)."""
    if value is None:
        return ""
    return f' style="background:hsl({int(120 * value)},60%,85%)"'


def _bar(value: float | None) -> str:
    width = 0 if value is None else round(100 * value)
    return f'<div class="bar"><span style="width:{width}%"></span></div>'


def _names(names: Iterable[str], shown: int = 8) -> str:
    names = sorted(names)
    more = f" … and {len(names) - shown} more" if len(names) > shown else ""
    return esc(", ".join(names[:shown])) + esc(more)


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;color:#222;max-width:1150px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}
h2{font-size:18px;margin-top:32px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:20px 0 6px}
.muted{color:#666}
.note{background:#fff4d6;border:1px solid #e8c55a;padding:8px 12px;border-radius:4px;margin:10px 0}
.key{background:#eef4fb;border:1px solid #b8cde6;padding:8px 12px;border-radius:4px}
table{border-collapse:collapse;width:100%;margin:6px 0 12px;font-size:13px}
table.checks{table-layout:fixed}
th,td{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.n,td.k{white-space:nowrap}
td.n{text-align:right}
tr.task td{background:#f7f7f7;font-weight:600}
.bar{background:#eee;width:110px;height:10px;display:inline-block}
.bar span{display:block;height:10px;background:#3a8f3a}
img{max-width:100%}
code,.msg{font-family:ui-monospace,monospace;font-size:12px}
.msg{white-space:pre-wrap;overflow-wrap:anywhere}
td,p,h1,h3{overflow-wrap:anywhere}
details summary{cursor:pointer;color:#2a5d9f}
"""


def _overview(report: Report) -> str:
    rows = []
    for a, le in report.lessons.items():
        w = min((t for t in report.required if t.assignment == a), key=lambda t: t.share(t.earned) or 0,
                default=None)
        median = statistics.median(le.scores) if le.scores else None
        rows.append(
            f"<tr><td>{esc(a)}</td><td class=n>{le.submissions}</td>"
            f"<td class=n>{'–' if le.mean is None else f'{le.mean:.1f} / {le.full_marks:g}'}</td>"
            f"<td class=n{_shade(le.percent)}>{_pct(le.percent)}</td>"
            f"<td class=n>{'–' if median is None else f'{median:g}'}</td>"
            f"<td class=n>{sum(s >= le.full_marks > 0 for s in le.scores)}</td>"
            f"<td class=n>{sum(s == 0 for s in le.scores)}</td><td class=n>{le.flagged}</td>"
            f"<td class=n>{le.grader_errors}</td>"
            f"<td>{esc(w.task) + ' (' + _pct(w.share(w.earned)) + ')' if w else '–'}</td></tr>")
    return ("<table><tr><th>assignment</th><th>submissions</th><th>mean score</th><th>mean %</th><th>median</th>"
            "<th>full marks</th><th>zero</th><th>flagged</th><th>grader errors</th><th>weakest required task "
            "(points earned)</th></tr>" + "".join(rows) + "</table>")


def _headline(report: Report) -> str:
    scored = [(le.percent, a) for a, le in report.lessons.items() if le.percent is not None]
    tasks = report.required  # an untouched stretch task is optional, never "the weakest"
    if not scored or not tasks:
        return ""
    low = min(scored)
    weak = min(tasks, key=lambda t: t.share(t.earned) or 0)
    wrong = max(tasks, key=lambda t: t.share(t.wrong) or 0)
    parts = [f"Lowest mean score: <b>{esc(low[1])}</b> ({_pct(low[0])} of full marks).",
             f"Weakest task: <b>{esc(weak.assignment)} · {esc(weak.task)}</b> "
             f"({_pct(weak.share(weak.earned))} of its points earned)."]
    if (wrong.share(wrong.wrong) or 0) > 0:
        parts.append(f"Most points lost to wrong answers: <b>{esc(wrong.assignment)} · {esc(wrong.task)}</b> "
                     f"({_pct(wrong.share(wrong.wrong))} of its points).")
    return f'<p class="key">{" ".join(parts)}</p>'


def _task_rows(tasks: list[Task]) -> str:
    return "".join(
        f"<tr><td>{esc(t.assignment)}</td><td>{esc(t.label)}</td><td class=n>{t.points:g}</td>"
        f"<td class=n>{t.submissions}</td><td class=n{_shade(t.share(t.earned))}>{_pct(t.share(t.earned))}</td>"
        f"<td class=n>{_pct(t.share(t.wrong))}</td><td class=n>{_pct(t.share(t.missing))}</td>"
        f"<td class=n>{_pct(t.share(t.not_run))}</td><td class=n>{t.full}</td><td class=n>{t.zero}</td></tr>"
        for t in sorted(tasks, key=lambda t: t.share(t.earned) or 0))


def _tasks_table(report: Report) -> str:
    """Required tasks, weakest first; then the stretch tasks, labelled, ranked among themselves only."""
    stretch = [t for t in report.tasks if t.bonus and t.share(t.earned) is not None]
    bonus = ('<tr class="task"><td colspan="10">Stretch (bonus) tasks: optional extra credit, not ranked with the '
             "required ones; an untouched one is not a weakness</td></tr>" + _task_rows(stretch)) if stretch else ""
    return ("<table><tr><th>assignment</th><th>task</th><th>points</th><th>submissions</th><th>earned</th>"
            "<th>lost to wrong answers</th><th>answer cell missing</th><th>not implemented / not run</th>"
            "<th>full marks</th><th>zero</th></tr>" + _task_rows(report.required) + bonus + "</table>")


CHECK_COLUMNS = "<colgroup><col>" + "".join(f'<col style="width:{w}px">' for w in (60, 75, 125, 65, 65, 65, 72, 72)) + (
    "</colgroup>")


def _checks_tables(report: Report) -> str:
    parts = []
    for a in report.lessons:
        checks = [c for c in report.checks if c.assignment == a]
        if not checks:
            continue
        rows, task = [], None
        for c in checks:
            if c.task != task:
                task = c.task
                label = (task or "(no task)") + (" (bonus: optional extra credit)" if c.bonus else "")
                rows.append(f'<tr class="task"><td colspan="9">{esc(label)}</td></tr>')
            rows.append(
                f"<tr><td>{esc(c.name)}{' <span class=muted>(visible)</span>' if c.visible else ''}</td>"
                f"<td class=n>{c.points:g}</td><td class=n{_shade(c.pass_rate)}>{_pct(c.pass_rate)}</td>"
                f"<td>{_bar(c.pass_rate)}</td><td class=n>{c.passed}</td><td class=n>{c.wrong}</td>"
                f"<td class=n>{c.not_run}</td><td class=n>{c.missing}</td><td class=n>{c.skipped}</td></tr>")
        parts.append(f"<h3>{esc(a)}</h3><table class=checks>{CHECK_COLUMNS}<tr><th>check</th><th>points</th>"
                     "<th>pass rate</th><th></th><th>passed</th><th>wrong</th><th>not run</th><th>cell missing</th>"
                     "<th>skipped</th></tr>" + "".join(rows) + "</table>")
    return "".join(parts)


def _failures_table(report: Report) -> str:
    if not report.failures:
        return "<p>No check failed.</p>"
    rows = []
    for f in report.failures[:TOP_FAILURES]:
        total = report.lessons[f.assignment].submissions
        checks = "".join(f"<li>{esc(c)}</li>" for c in f.checks)
        message = esc(f.message.replace(" Hint: ", "\nHint: "))  # the page keeps the newline (pre-wrap)
        rows.append(
            f"<tr><td class=n>{len(f.students)} <span class=muted>of {total}</span></td><td>{esc(f.assignment)}<br>"
            f"<span class=muted>{esc(', '.join(f.tasks))}</span></td><td class=k>{esc(f.kind)}</td>"
            f'<td><div class="msg">{message}</div><details><summary>{len(f.checks)} check(s), students, '
            f"an example</summary><ul>{checks}</ul><p>{_names(f.students)}</p>"
            f'<div class="msg">{esc(f.example)}</div></details></td></tr>')
    more = len(report.failures) - TOP_FAILURES
    return ("<table><tr><th>students</th><th>assignment / task</th><th>kind</th><th>message (numbers shown as #)"
            "</th></tr>" + "".join(rows) + "</table>"
            + (f'<p class="muted">{more} less common messages are in failures.csv.</p>' if more > 0 else ""))


def _flagged_table(report: Report) -> str:
    if not report.flagged:
        return "<p>Nothing to review.</p>"
    rows = "".join(
        f"<tr><td>{esc(f.student)}</td><td>{esc(f.assignment)}</td>"
        f"<td class=n>{f'{f.score:g} / {f.max_score:g}' if f.status.scored else '–'}</td>"
        f"<td>{'<br>'.join(esc(r) for r in f.reasons)}</td><td><div class=msg>{esc(f.detail[:300])}</div></td></tr>"
        for f in report.flagged)
    return ("<table><tr><th>student</th><th>assignment</th><th>score</th><th>why</th><th>detail</th></tr>"
            + rows + "</table>")


def _students_table(report: Report) -> str:
    """Student x assignment: the score (Formgrader's where a gradebook was read, the kit's beside it where they
    differ); the same in students.csv, for sorting in a spreadsheet (this page runs no script)."""
    head = "".join(f"<th>{esc(a)}</th>" for a in report.lessons)
    rows = []
    for student in report.students:
        cells = []
        for a in report.lessons:
            final = _final(report, student, a)
            if final is None:
                cells.append("<td class=n>not submitted</td>")
            elif isinstance(final, SubmissionStatus):
                cells.append(f"<td class=n>{esc(final)}</td>")
            else:
                score, top, kit = final
                note = f" <span class=muted>(kit {kit:g})</span>" if kit is not None and kit != score else ""
                cells.append(f"<td class=n{_shade(score / top if top else None)}>{score:g} / {top:g}{note}</td>")
        total, top = _total(report, student)
        rows.append(f"<tr><td>{esc(student)}</td>{''.join(cells)}<td class=n>{total:g} / {top:g}</td></tr>")
    return ("<table><tr><th>student</th>" + head + "<th>total</th></tr>" + "".join(rows) + "</table>")


def _adjustments_table(report: Report) -> str:
    if report.gradebook is None:
        return ("<p class=muted>No gradebook.db was found beside the results or in the folder above them: pass "
                "<code>--gradebook</code> to show Formgrader's manual grades.</p>")
    shown = _adjustments(report)
    if not shown:
        return f"<p>{esc(report.gradebook)} No manual grade changed a kit score.</p>"
    rows = "".join(
        f"<tr><td>{esc(a.student)}</td><td>{esc(a.assignment)}</td><td class=n>{a.auto_score:g}</td>"
        f"<td class=n>{a.score:g} / {a.max_score:g}</td><td class=n>{a.score - a.auto_score:+g}</td>"
        f"<td>{'<br>'.join(esc(c) for c in a.changes) or '–'}</td><td class=n>{a.needs_manual}</td></tr>"
        for a in shown)
    return (f"<p class=muted>{esc(report.gradebook)}</p><table><tr><th>student</th><th>assignment</th><th>kit</th>"
            "<th>after manual grading</th><th>difference</th><th>cells changed</th><th>cells still to grade</th></tr>"
            + rows + "</table>")


def _task_section(report: Report, images: dict[str, str]) -> str:
    plot = f'<img alt="points per task" src="{images["tasks"]}">' if "tasks" in images else ""
    return ("<h2>Which task lost points</h2><p class=muted>Each task's points over the class: earned, lost to wrong "
            "answers, lost because the answer cell was deleted, and not earned because the code was a stub or could "
            "not run at all (a corrupt notebook, a cell that exits). The plot follows the lessons; the table lists "
            "the weakest required task first, then the stretch (bonus) tasks.</p>" + plot + _tasks_table(report))


def _scores_section(report: Report, images: dict[str, str]) -> str:
    plot = f'<img alt="score histograms" src="{images["scores"]}">' if "scores" in images else ""
    return "<h2>Score distribution</h2>" + plot


def _assignments_section(report: Report, images: dict[str, str]) -> str:
    return _headline(report) + "<h2>Assignments</h2>" + _overview(report)


def _students_section(report: Report, images: dict[str, str]) -> str:
    return "<h2>Students</h2>" + _students_table(report)


def _failures_section(report: Report, images: dict[str, str]) -> str:
    return ("<h2>Most common failures</h2><p class=muted>Messages are grouped by assignment and the mistake they "
            "name (the first sentence of the problem and of the hint); numbers, which differ with each student's "
            "inputs, are shown as #.</p>" + _failures_table(report))


def _flagged_section(report: Report, images: dict[str, str]) -> str:
    return ("<h2>Flagged for review</h2><p class=muted>Grader errors, review flags, broken stated rules, deleted "
            "answer cells, zero scores, drops and scores far below the class, notebooks not submitted.</p>"
            + _flagged_table(report))


def _similarity_section(report: Report, images: dict[str, str]) -> str:
    return similarity_section(report.source)


def _adjustments_section(report: Report, images: dict[str, str]) -> str:
    return "<h2>Manual grading in Formgrader</h2>" + _adjustments_table(report)


def _checks_section(report: Report, images: dict[str, str]) -> str:
    return ("<h2>Checks</h2><p class=muted>Pass rate: passed / (passed + wrong + not run + cell missing). Not run: "
            "a stub (not implemented) or a notebook whose code could not run at all. Skipped checks (CUDA-only on "
            "CPU) are not scored.</p>" + _checks_tables(report))


# The page's sections in order: each a function of the report and its plots (data URIs) that returns HTML.
SECTIONS: list[Callable[[Report, dict[str, str]], str]] = [
    _assignments_section, _students_section, _task_section, _scores_section, _failures_section,
    _flagged_section, _similarity_section, _adjustments_section, _checks_section]


def render(report: Report, images: dict[str, str], no_plots: str | None, files: list[str]) -> str:
    n = len(report.submissions)
    students = len({s.student for s in report.submissions})
    notes = []
    if no_plots:
        notes.append(no_plots)
    if report.sandbox_off:
        notes.append("Sandbox protections were off on the grading machine: " + "; ".join(report.sandbox_off))
    errors = sum(le.grader_errors for le in report.lessons.values())
    if errors:
        notes.append(f"{errors} submission(s) have no score (grader errors or unreadable results, listed under "
                     "Flagged): run grade-all again to grade them; they are left out of every figure below.")
    body = [f"<h1>Class report</h1><p class=muted>{n} submissions from {students} students in "
            f"{len(report.lessons)} assignment(s), read from <code>{esc(report.source)}</code> on "
            f"{esc(time.strftime('%Y-%m-%d %H:%M'))}. CSV: "
            + ", ".join(f'<a href="{esc(f)}">{esc(f)}</a>' for f in files) + ".</p>"]
    body += [f'<p class="note">{esc(note)}</p>' for note in notes]
    if not n:
        body.append("<p>No graded submissions yet: run <code>python -m autograder grade-all</code> first.</p>")
    else:
        body += [section(report, images) for section in SECTIONS]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\"><meta name=\"viewport\" content=\"width=device-width\">"
            f"<title>Class report</title><style>{STYLE}</style></head><body>" + "\n".join(body) + "</body></html>\n")


def write_report(graded: Path, out: Path | None = None, gradebook: Path | None = None) -> Path:
    """Analyse `graded` and write report.html and the CSV files into `out` (default graded/report); Formgrader's
    grades from `gradebook` (default: find_gradebook)."""
    report = analyse(graded, gradebook or find_gradebook(graded))
    out = out or graded / "report"
    out.mkdir(parents=True, exist_ok=True)
    files = write_csvs(report, out)
    images, no_plots = plots(report)
    page = out / "report.html"
    tmp = page.with_name(f".{page.name}.{os.getpid()}.tmp")
    tmp.write_text(render(report, images, no_plots, files), encoding="utf-8")
    os.replace(tmp, page)
    return page
