"""The class report's CSV files: every cell without control characters, none read as a formula.
"""

from __future__ import annotations

import csv
import os
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autograder.course.nbgrader.formgrader import Adjusted
from autograder.course.report.analyse import Report
from autograder.judging.report import csv_cell
from autograder.judging.results import SubmissionStatus


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
               ([student, *(_score_cell(report, student, a) for a in assignments), *total_score(report, student)]
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
                     a.needs_manual, "; ".join(a.changes)] for a in manual_changes(report)))
        files.append("adjustments.csv")
    return files


def final_score(report: Report, student: str, assignment: str
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
    final = final_score(report, student, assignment)
    return final[0] if isinstance(final, tuple) else final


def total_score(report: Report, student: str) -> tuple[float, float]:
    scores = [f for a in report.lessons if isinstance(f := final_score(report, student, a), tuple)]
    return sum(f[0] for f in scores), sum(report.lessons[a].full_marks for a in report.lessons)


def manual_changes(report: Report) -> list[Adjusted]:
    return [a for _, a in sorted(report.adjusted.items()) if a.changes or a.needs_manual]

