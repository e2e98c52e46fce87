"""The class report's page: one self-contained HTML file (plots inlined, no script), built of sections.

SECTIONS lists them in order, one function each; a new section is one more function there. Every text is
stripped of control characters and HTML-escaped.
"""

from __future__ import annotations

import html
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

from autograder.course.report.analyse import Report, Task, pct
from autograder.course.report.tables import final_score, manual_changes, total_score
from autograder.course.similarity import section as similarity_section
from autograder.judging.report import clean
from autograder.judging.results import SubmissionStatus

TOP_FAILURES = 30  # groups shown on the page; failures.csv has them all




def esc(value: Any) -> str:
    return html.escape(clean(str(value)), quote=True)


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
td.id,th.id{overflow-wrap:break-word}
details summary{cursor:pointer;color:#2a5d9f}
"""


def _overview(report: Report) -> str:
    rows = []
    for a, le in report.lessons.items():
        w = min((t for t in report.required if t.assignment == a), key=lambda t: t.share(t.earned) or 0,
                default=None)
        median = statistics.median(le.scores) if le.scores else None
        rows.append(
            f"<tr><td class=id>{esc(a)}</td><td class=n>{le.submissions}</td>"
            f"<td class=n>{'–' if le.mean is None else f'{le.mean:.1f} / {le.full_marks:g}'}</td>"
            f"<td class=n{_shade(le.percent)}>{pct(le.percent)}</td>"
            f"<td class=n>{'–' if median is None else f'{median:g}'}</td>"
            f"<td class=n>{sum(s >= le.full_marks > 0 for s in le.scores)}</td>"
            f"<td class=n>{sum(s == 0 for s in le.scores)}</td><td class=n>{le.flagged}</td>"
            f"<td class=n>{le.grader_errors}</td>"
            f"<td>{esc(w.task) + ' (' + pct(w.share(w.earned)) + ')' if w else '–'}</td></tr>")
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
    parts = [f"Lowest mean score: <b>{esc(low[1])}</b> ({pct(low[0])} of full marks).",
             f"Weakest task: <b>{esc(weak.assignment)} · {esc(weak.task)}</b> "
             f"({pct(weak.share(weak.earned))} of its points earned)."]
    if (wrong.share(wrong.wrong) or 0) > 0:
        parts.append(f"Most points lost to wrong answers: <b>{esc(wrong.assignment)} · {esc(wrong.task)}</b> "
                     f"({pct(wrong.share(wrong.wrong))} of its points).")
    return f'<p class="key">{" ".join(parts)}</p>'


def _task_rows(tasks: list[Task]) -> str:
    return "".join(
        f"<tr><td class=id>{esc(t.assignment)}</td><td class=id>{esc(t.label)}</td><td class=n>{t.points:g}</td>"
        f"<td class=n>{t.submissions}</td><td class=n{_shade(t.share(t.earned))}>{pct(t.share(t.earned))}</td>"
        f"<td class=n>{pct(t.share(t.wrong))}</td><td class=n>{pct(t.share(t.missing))}</td>"
        f"<td class=n>{pct(t.share(t.not_run))}</td><td class=n>{t.full}</td><td class=n>{t.zero}</td></tr>"
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
                f"<td class=n>{c.points:g}</td><td class=n{_shade(c.pass_rate)}>{pct(c.pass_rate)}</td>"
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
        f"<tr><td class=id>{esc(f.student)}</td><td class=id>{esc(f.assignment)}</td>"
        f"<td class=n>{f'{f.score:g} / {f.max_score:g}' if f.status.scored else '–'}</td>"
        f"<td>{'<br>'.join(esc(r) for r in f.reasons)}</td><td><div class=msg>{esc(f.detail[:300])}</div></td></tr>"
        for f in report.flagged)
    return ("<table><tr><th>student</th><th>assignment</th><th>score</th><th>why</th><th>detail</th></tr>"
            + rows + "</table>")


def _students_table(report: Report) -> str:
    """Student x assignment: the score (Formgrader's where a gradebook was read, the kit's beside it where they
    differ); the same in students.csv, for sorting in a spreadsheet (this page runs no script)."""
    head = "".join(f"<th class=id>{esc(a)}</th>" for a in report.lessons)
    rows = []
    for student in report.students:
        cells = []
        for a in report.lessons:
            final = final_score(report, student, a)
            if final is None:
                cells.append("<td class=n>not submitted</td>")
            elif isinstance(final, SubmissionStatus):
                cells.append(f"<td class=n>{esc(final)}</td>")
            else:
                score, top, kit = final
                note = f" <span class=muted>(kit {kit:g})</span>" if kit is not None and kit != score else ""
                cells.append(f"<td class=n{_shade(score / top if top else None)}>{score:g} / {top:g}{note}</td>")
        total, top = total_score(report, student)
        rows.append(f"<tr><td>{esc(student)}</td>{''.join(cells)}<td class=n>{total:g} / {top:g}</td></tr>")
    return ("<table><tr><th>student</th>" + head + "<th>total</th></tr>" + "".join(rows) + "</table>")


def _adjustments_table(report: Report) -> str:
    if report.gradebook is None:
        return ("<p class=muted>No gradebook.db was found beside the results or in the folder above them: pass "
                "<code>--gradebook</code> to show Formgrader's manual grades.</p>")
    shown = manual_changes(report)
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
    return ("<h2>Flagged for review</h2><p class=muted>Grader errors, review flags, scores that manual grading put "
            "above the maximum, deleted answer cells, functions not defined (renamed?), time-outs and limits hit, "
            "broken stated rules, zero scores, drops and scores far below the class, prints cut at 1 MiB, notebooks "
            "not submitted.</p>"
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

