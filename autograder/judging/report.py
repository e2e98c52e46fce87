"""Reports: Gradescope's results.json, and readable text for terminals."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from autograder.judging.results import Results, SandboxRecord, TestResult
from autograder.judging.untrusted import safe_text

if TYPE_CHECKING:  # the batch coordinator uses `clean` without importing torch
    from autograder.judging.judge import Grade

# Cells a spreadsheet would read as a formula (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def clean(text: str) -> str:
    """Text made safe for a terminal, a CSV or a log, whatever file it was read from: terminal control
    characters (escape sequences, carriage returns...) and lone surrogates become visible escapes such as
    \\x1b (untrusted.safe_text, without a limit). Text from student code is made so where it enters the
    judge; writers clean again what they read from older files."""
    return safe_text(text, limit=None)


def csv_cell(value: object) -> object:
    """A CSV cell no spreadsheet runs: text is cleaned, and given a leading apostrophe where it would start a
    formula; numbers stay numbers."""
    if not isinstance(value, str):
        return value
    text = clean(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


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
            "extra_data": {"outcome": r.outcome.value, "measured": r.measured},
        }
        # The failure's mistake as data, for the class report to group by (no message is read back).
        extra = test["extra_data"]
        if r.problem:
            extra["problem"] = clean(r.problem)
        if r.hint:
            extra["hint"] = clean(r.hint)
        if r.mistake:
            extra["mistake"] = clean(r.mistake)
        if r.alone is not None:  # not scored for a broken rule: what the check gave on its own
            extra["alone"] = r.alone.value
        status = r.outcome.status
        if status != "skipped":
            test["status"] = status
        tests.append(test)
    results: Results = {
        # Stretch tasks' points are extra credit: in the score, on top of the assignment's points.
        "score": grade.score + grade.bonus,
        "max_score": grade.max_score,
        "execution_time": round(grade.execution_time, 3),
        "output": clean("\n".join(grade.notes)),
        "visibility": "visible",
        "tests": tests,
        "extra_data": {
            "assignment": grade.assignment,
            "notebook": grade.name,
            "device": grade.device,
            "sandbox": cast(SandboxRecord, grade.protections),  # {"active": [...], "off": [...]}, or {}
            "integrity": grade.integrity,  # constructs reaching into grader internals (judging/static/review.py)
            "integrity_count": grade.integrity_count,
            "bonus": {"score": grade.bonus, "max_score": grade.bonus_max},
            "out_of_time": grade.out_of_time,
            "missing": grade.missing,  # answer cells deleted from the notebook (grade_ids)
            "output_dropped": grade.output_dropped,  # prints beyond what the box keeps were dropped (no point)
            "undefined": grade.undefined,  # answer cells that do not define their name (renamed?)
        },
    }
    if grade.device_note:  # also in output: advice, which grade-all's summary does not count as an error
        results["extra_data"]["device_note"] = clean(grade.device_note)
    return results


def _label(task: str, bonus: bool) -> str:
    return f"bonus: {task}" if bonus else task


def _bonus(grade: Grade) -> str:
    return f", bonus {grade.bonus:g} / {grade.bonus_max:g}" if grade.bonus_max else ""


def text(grade: Grade) -> str:
    lines = [f"{grade.name} ({grade.assignment or 'unknown assignment'}, {grade.device}): "
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
