"""Reports: Gradescope's results.json, and readable text for terminals."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from autograder.judging.results import Results, Sandbox, TestResult

if TYPE_CHECKING:  # the batch coordinator uses `clean` without importing torch
    from autograder.judging.judge import Grade

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Text from student code made safe for a terminal, a CSV or a log: terminal control
    characters (escape sequences, carriage returns...) become visible escapes such as \\x1b."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def gradescope(grade: Grade) -> Results:
    """Gradescope's results.json schema (autograder/judging/results.py); extra facts go in `extra_data`."""
    tests = []
    for r in grade.results:
        test: TestResult = {
            "name": f"[{_label(r.task, r.bonus)}] {r.name}",
            "score": r.score,
            "max_score": r.points if r.status != "skipped" else 0.0,
            "output": clean(r.output),
            "tags": [r.task, "bonus"] if r.bonus else [r.task],
            # Hidden checks' results are shown once the instructor publishes grades.
            "visibility": "visible" if r.visible else "after_published",
            "extra_data": {"outcome": r.outcome.value, "measured": dict(r.measured)},
        }
        status = r.outcome.status
        if status != "skipped":
            test["status"] = status
        tests.append(test)
    return {
        # Stretch tasks' points are extra credit: in the score, on top of the assignment's points.
        "score": grade.score + grade.bonus,
        "max_score": grade.max_score,
        "execution_time": round(grade.execution_time, 3),
        "output": clean("\n".join(grade.notes)),
        "visibility": "visible",
        "tests": tests,
        "extra_data": {
            "assignment": grade.assignment,
            "notebook": grade.notebook.name,
            "device": grade.device,
            "sandbox": cast(Sandbox, grade.protections),  # {"active": [...], "off": [...]}, or {}
            "integrity": grade.integrity,  # constructs reaching into grader internals (autograder/judging/scan.py)
            "bonus": {"score": grade.bonus, "max_score": grade.bonus_max},
            "out_of_time": grade.out_of_time,
        },
    }


def _label(task: str, bonus: bool) -> str:
    return f"bonus: {task}" if bonus else task


def _bonus(grade: Grade) -> str:
    return f", bonus {grade.bonus:g} / {grade.bonus_max:g}" if grade.bonus_max else ""


def text(grade: Grade) -> str:
    lines = [f"{grade.notebook.name} ({grade.assignment or 'unknown assignment'}, {grade.device}): "
             f"{grade.score:g} / {grade.max_score:g}{_bonus(grade)} in {grade.execution_time:.1f} s"]
    lines += [f"  ! {note}" for note in grade.notes]
    for r in grade.results:
        mark = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}[r.status]
        lines.append(f"  {mark} {r.score:g}/{r.points:g}  [{_label(r.task, r.bonus)}] {r.name}")
        if r.output:
            lines += ["        " + line for line in r.output.splitlines()]
    off = grade.protections.get("off")
    if off:
        lines.append(f"  sandbox protections off here: {', '.join(off)}")
    return clean("\n".join(lines))


def table(rows: list[tuple[str, Grade]]) -> str:
    """One line per graded notebook: total, time, and the points of each task."""
    head = ["student", "assignment", "score", "seconds", "points per task"]
    body = []
    for label, g in rows:
        stretch = {r.task for r in g.results if r.bonus}
        per_task = ", ".join(f"{_label(t, t in stretch)} {got:g}/{top:g}" for t, (got, top) in g.by_task().items())
        body.append([label, g.assignment or "?", f"{g.score:g}/{g.max_score:g}" + (f" +{g.bonus:g}" if g.bonus else ""),
                     f"{g.execution_time:.1f}",
                     per_task or (g.notes[0][:70] if g.notes else "")])
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head) - 1)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    rule = "  ".join("-" * w for w in widths) + "  " + "-" * len(head[-1])
    return clean("\n".join([fmt.format(*head), rule, *(fmt.format(*row) for row in body)]))
