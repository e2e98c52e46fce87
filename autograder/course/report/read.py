"""The class report's input: the result files grade-all writes, one Submission each.

Student names and messages are hostile input: every text read is stripped of control characters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.batch import row
from autograder.judging import results as fmt
from autograder.judging.report import clean
from autograder.judging.results import SubmissionStatus, TestResult
from autograder.judging.untrusted import safe_name


def results_dir(graded: Path) -> Path:
    """graded/results (grade-all, merge), or the folder itself when it holds <student>/<assignment>.json."""
    return graded / "results" if (graded / "results").is_dir() else graded


def text(value: Any) -> str:
    return clean(value if isinstance(value, str) else "" if value is None else str(value))



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
    output_dropped: bool = False  # the student's prints beyond 1 MiB were dropped (no point lost)
    undefined: list[str] = field(default_factory=list)  # answer cells that do not define their name (renamed?)

    @property
    def scored(self) -> bool:
        return self.status.scored

    @property
    def fraction(self) -> float | None:
        return min(1.0, self.score / self.max_score) if self.scored and self.max_score > 0 else None




def read_submission(path: Path) -> Submission:
    """One result file; a damaged one is an `unreadable` submission, never an exception."""
    student, assignment = safe_name(path.parent.name), safe_name(path.stem)  # names, on one line
    try:
        result = fmt.load(path)
        extra = result["extra_data"]
        extra.setdefault("student", path.parent.name)
        extra["assignment"] = extra.get("assignment") or path.stem
        summary = row(result)
        return Submission(
            summary["student"], summary["assignment"], float(summary["score"]), float(summary["max_score"]),
            summary["status"], text(result["output"]) or text(fmt.grader_error(result)), result["tests"],
            [text(f) for f in extra.get("integrity", [])],
            extra.get("integrity_count", len(extra.get("integrity", []))),
            [text(p) for p in fmt.sandbox_off(result)], extra.get("out_of_time"),
            [text(c) for c in extra.get("missing", [])], extra.get("output_dropped") is True,
            [text(c) for c in extra.get("undefined", [])])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return Submission(student, assignment, 0.0, 0.0, SubmissionStatus.UNREADABLE,
                          f"the result file {path.name} cannot be read ({type(e).__name__}: {text(str(e))[:200]}); "
                          "grade this submission again")


def read_class(graded: Path) -> list[Submission]:
    folder = results_dir(graded)
    return [read_submission(p) for p in sorted(folder.glob("*/*.json")) if p.is_file()]

