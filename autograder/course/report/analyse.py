"""What a class got right and wrong: per assignment, task and check, failures grouped by mistake, and the
submissions an instructor should look at.
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course.nbgrader.formgrader import Adjusted, read_gradebook
from autograder.course.report.mistakes import failure_key, first_sentence
from autograder.course.report.read import Submission, read_class, text
from autograder.course.similarity import review as similar_answers
from autograder.judging import results as fmt
from autograder.judging.results import NOT_DEFINED, OVER_LIMIT, TIMED_OUT, Outcome, SubmissionStatus, TestResult

PASSED, WRONG, NOT_RUN, MISSING = "passed", "wrong", "not run", "answer cell missing"
# How the report counts each outcome: not run is a stub, or code that could not run at all; None: not scored here.
KIND: dict[Outcome, str | None] = {
    Outcome.PASSED: PASSED, Outcome.SKIPPED: None,
    Outcome.NOT_IMPLEMENTED: NOT_RUN, Outcome.NOT_RUN: NOT_RUN,
    Outcome.WRONG: WRONG, Outcome.STUDENT_ERROR: WRONG, Outcome.TIMEOUT: WRONG, Outcome.NOT_SCORED: WRONG,
    Outcome.GRADER_ERROR: WRONG,
}
BIG_DROP = 0.4  # a score this fraction of full marks below the student's own mean elsewhere is flagged
FAR_BELOW = 0.5  # ... or this far below the class median of the assignment (3 scores or more)


def pct(value: float | None) -> str:
    """A fraction as a percent, "–" for none."""
    return "–" if value is None else f"{100 * value:.0f}%"


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




def _task_and_name(test: TestResult) -> tuple[str, str]:
    tags = test["tags"]
    task = text(tags[0]) if tags else ""
    name = text(test["name"])
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
    return found is Outcome.GRADER_ERROR if found is not None else LEGACY_KIT_FAILED in text(test["output"])


def _out_of_time(sub: Submission) -> bool:
    if sub.out_of_time is not None:
        return sub.out_of_time
    return any(LEGACY_OUT_OF_TIME in text(t["output"]) for t in sub.tests)


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
    output = text(test["output"])
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
    undefined = list(dict.fromkeys([*sub.undefined, *_tasks_with(sub, NOT_DEFINED)]))
    if undefined:
        reasons.append((4, "a function the checks call is not defined (renamed?): " + ", ".join(undefined)
                           + " (its checks scored 0; their message names what the cell defines)"))
    timed_out = _tasks_with(sub, TIMED_OUT)
    if timed_out:
        reasons.append((5, "timed out in " + ", ".join(timed_out) + " (an infinite loop, or far too slow?)"))
    over = _tasks_with(sub, OVER_LIMIT)
    if over:
        reasons.append((5, "hit the box's memory, CPU-time or file-size limit in " + ", ".join(over)))
    # A task whose checks, on their own, all timed out is told as a time-out above, not as a broken rule.
    voided = sorted({task for t in sub.tests if fmt.outcome(t) is Outcome.NOT_SCORED
                     and (task := _task_and_name(t)[0]) not in _only_timed_out(sub)})
    if voided:
        reasons.append((5, "broke the stated rule of " + ", ".join(voided) + ": those tasks scored 0"))
    if sub.status is SubmissionStatus.GRADED and sub.max_score > 0 and sub.score == 0:
        failed = [o for o in outcomes if o is not None]
        nothing = failed and all(o == NOT_RUN for o in failed)
        reasons.append((5, "nothing implemented (the release unchanged?)" if nothing else "zero score"))
    if _out_of_time(sub):
        reasons.append((6, "ran out of grading time"))
    if sub.output_dropped:
        reasons.append((7, "printed more than 1 MiB: the prints beyond it were dropped (no point lost)"))
    return reasons


JUDGE_FINDINGS = frozenset({NOT_DEFINED, TIMED_OUT, OVER_LIMIT})


def _mistake(test: TestResult) -> str:
    return text(test.get("extra_data", {}).get("mistake"))


def _tasks_with(sub: Submission, mistake: str) -> list[str]:
    """The tasks of which some check met `mistake` (the judge's own finding: student.NOT_DEFINED...), in order."""
    return list(dict.fromkeys(_task_and_name(t)[0] for t in sub.tests if _mistake(t) == mistake))


def _only_timed_out(sub: Submission) -> set[str]:
    """Tasks not scored for a broken rule whose other checks all timed out on their own."""
    voided: dict[str, list[bool]] = {}
    for t in sub.tests:
        if fmt.outcome(t) is Outcome.NOT_SCORED:
            alone = t.get("extra_data", {}).get("alone")
            voided.setdefault(_task_and_name(t)[0], []).append(alone == Outcome.TIMEOUT.value
                                                              or _mistake(t) == TIMED_OUT)
    return {task for task, timed in voided.items() if all(timed)}


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
                    (6, f"a drop: {pct(f)} here, {pct(statistics.fmean(others))} on average on their "
                        f"{len(others)} other assignment(s)"))
            median = statistics.median(theirs[a]) if len(theirs[a]) >= 3 else None
            if median is not None and median - f >= FAR_BELOW:
                found.setdefault((student, a), []).append((6, f"far below the class: {pct(f)}, the median "
                                                              f"is {pct(median)}"))
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


def _flag(sub: Submission, reasons: list[tuple[int, str]]) -> Flagged | None:
    """`sub` flagged for review with its reasons, most urgent first; None without any."""
    if not reasons:
        return None
    reasons = sorted(reasons, key=lambda r: r[0])
    return Flagged(sub.student, sub.assignment, sub.score, sub.max_score, sub.status, [why for _, why in reasons],
                   (sub.notes.replace("\n", " ") or "\n".join(sub.integrity))[:400], reasons[0][0])


def _add_failure(failures: dict[tuple[str, str], Failure], sub: Submission, test: TestResult, kind: str) -> None:
    """Count `test`'s failure in the group of the mistake it names."""
    task, name = _task_and_name(test)
    key = failure_key(test) or "(no message)"
    # A named mistake groups by its id, whatever its wording on this student's inputs; the judge's own findings
    # (a time-out, a name not defined) by task too, since the same finding on two tasks is two problems.
    mistake = _mistake(test)
    group = f"{task}: {mistake}" if mistake in JUDGE_FINDINGS else mistake or key
    failure = failures.setdefault((sub.assignment, group),
                                  Failure(sub.assignment, kind, key, text(test["output"])[:1500]))
    failure.students.add(sub.student)
    if task not in failure.tasks:
        failure.tasks.append(task)
    if name not in failure.checks:
        failure.checks.append(name)


def _count_checks(sub: Submission, checks: dict[tuple[str, str, str], Check],
                  failures: dict[tuple[str, str], Failure]) -> dict[str, dict[str, float]]:
    """Count a scored submission's tests into their checks and failures; its points per task:
    task -> {"points": ..., "bonus": 0 or 1, PASSED: ..., WRONG: ..., ...}."""
    per_task: dict[str, dict[str, float]] = {}
    for test in sub.tests:
        task, name = _task_and_name(test)
        points = float(test["max_score"])
        bonus = "bonus" in test["tags"]
        check = checks.setdefault((sub.assignment, task, name),
                                  Check(sub.assignment, task, name, points, test["visibility"] == "visible", bonus))
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
        _add_failure(failures, sub, test, result)
    return per_task


def _add_tasks(tasks: dict[tuple[str, str], Task], assignment: str, per_task: dict[str, dict[str, float]]) -> None:
    """Add one submission's points per task (see _count_checks) to the class's."""
    for task, acc in per_task.items():
        t = tasks.setdefault((assignment, task), Task(assignment, task, bool(acc["bonus"])))
        t.points = max(t.points, acc["points"])
        t.submissions += 1
        t.earned += acc.get(PASSED, 0.0)
        t.wrong += acc.get(WRONG, 0.0)
        t.not_run += acc.get(NOT_RUN, 0.0)
        t.missing += acc.get(MISSING, 0.0)
        t.full += acc.get(PASSED, 0.0) == acc["points"]
        t.zero += acc.get(PASSED, 0.0) == 0


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
        book = adjusted.get((sub.student, sub.assignment))
        if book is not None and book.score > book.max_score and book.score > book.auto_score:
            reasons.append((3, f"above the maximum in the gradebook: {book.score:g} / {book.max_score:g}, raised by "
                               f"manual grading ({'; '.join(book.changes)}); given to a notebook since replaced?"))
        if (sub.student, sub.assignment) in similar:
            reasons.append((7, similar[(sub.student, sub.assignment)]))
        if (flag := _flag(sub, reasons)) is not None:
            flagged.append(flag)
        if not sub.scored:
            lesson.grader_errors += 1
            continue
        lesson.scores.append(sub.score)
        lesson.full_marks = max(lesson.full_marks, sub.max_score)
        _add_tasks(tasks, sub.assignment, _count_checks(sub, checks, failures))
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

