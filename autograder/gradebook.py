"""Hand results to nbgrader: scores into its gradebook, feedback into feedback/.

Scores go in through nbgrader's own API (nbgrader.api.Gradebook), as the
auto_score of each visible check cell `check_<task>`, whose points equal the
task's total in the hidden checks. So formgrader, manual adjustments,
`nbgrader export` and late penalties (from submitted/.../timestamp.txt) work
as with `nbgrader autograde`. Needs the dev extras; grading does not.
Grader errors (no score yet, graded again on the next run) are left out of both.
All text from a result is HTML-escaped in the feedback pages.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any


def _task_scores(result: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in result["tests"]:
        task = test["tags"][0]
        scores[task] = scores.get(task, 0.0) + float(test["score"])
    return scores


def record(course: Path, results: list[dict[str, Any]]) -> int:
    """Write each result into <course>/gradebook.db; returns how many submissions were recorded."""
    from nbgrader.api import Gradebook, MissingEntry

    recorded = 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for result in results:
            extra = result["extra_data"]
            student, assignment = extra["student"], extra["assignment"]
            if not assignment or extra.get("grader_error"):
                continue
            try:
                gb.find_assignment(assignment)
            except MissingEntry:
                raise SystemExit(f"{assignment} is not in {course / 'gradebook.db'}: run "
                                 f"`nbgrader generate_assignment {assignment}` in {course} first") from None
            gb.update_or_create_student(student)
            stamp = course / "submitted" / student / assignment / "timestamp.txt"
            kwargs = {"timestamp": stamp.read_text().strip()} if stamp.exists() else {}
            gb.update_or_create_submission(assignment, student, **kwargs)
            for task, score in _task_scores(result).items():
                grade = gb.find_grade(f"check_{task}", assignment, assignment, student)
                grade.auto_score = score
            gb.db.commit()
            recorded += 1
    return recorded


def feedback_html(result: dict[str, Any]) -> str:
    """One page per submission: each check's name, points and message; no check code."""
    extra = result["extra_data"]
    rows = []
    for test in result["tests"]:
        status = html.escape(test.get("status", "skipped"))
        rows.append(
            f'<tr class="{status}"><td>{html.escape(test["name"])}</td>'
            f'<td>{test["score"]:g} / {test["max_score"]:g}</td><td>{status}</td>'
            f'<td><pre>{html.escape(test["output"])}</pre></td></tr>')
    notes = f'<p class="notes">{html.escape(result["output"])}</p>' if result["output"] else ""
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Feedback: {html.escape(extra["assignment"] or "")}</title>
<style>body{{font-family:sans-serif;margin:2em}}td{{vertical-align:top;padding:4px 8px}}
tr.failed td:first-child{{color:#b00}}tr.passed td:first-child{{color:#070}}pre{{white-space:pre-wrap;margin:0}}</style>
</head><body>
<h1>{html.escape(extra["assignment"] or "")}: {result["score"]:g} / {result["max_score"]:g}</h1>
<p>Student: {html.escape(extra.get("student", ""))}. Hidden checks ran on fresh random inputs;
a failing check shows the input it failed on.</p>{notes}
<table><tr><th>check</th><th>points</th><th>status</th><th>message</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""


def write_feedback(course: Path, results: list[dict[str, Any]]) -> int:
    """feedback/<student>/<assignment>/<assignment>.html, where `nbgrader release_feedback` looks;
    returns how many pages were written."""
    written = 0
    for result in results:
        extra = result["extra_data"]
        if extra.get("grader_error"):
            continue
        folder = course / "feedback" / extra["student"] / (extra["assignment"] or "unknown")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{extra['assignment'] or 'unknown'}.html").write_text(feedback_html(result))
        written += 1
    return written
