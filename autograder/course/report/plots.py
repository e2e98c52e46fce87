"""The class report's plots, as PNG data URIs. matplotlib is imported only here, lazily: without it the page
says so and has no plots, and the CSV files are the same.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from autograder.course.report.analyse import Report

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

