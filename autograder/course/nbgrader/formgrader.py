"""Formgrader's grades, read from nbgrader's gradebook.db for the class report.

The file is opened read-only: the report never writes the instructor's grades. nbgrader is a dev extra,
imported only here, lazily: without it the report says so and shows the kit's scores.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.judging.report import clean


def _text(value: object) -> str:
    return clean(str(value))


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
                    adjusted[(_text(sub.student_id), _text(assignment.name))] = adjusted_submission(sub)
    except Exception as e:  # a damaged or foreign file: the report is still written, and says why
        return {}, [], f"{db} could not be read as nbgrader's gradebook ({type(e).__name__}: {_text(str(e))[:200]})."
    return adjusted, roster, f"Formgrader's grades read from {db}."


def adjusted_submission(sub: Any) -> Adjusted:
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

