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

Its modules, one job each: read (the result files), mistakes (failures grouped by the mistake they name),
analyse, tables (the CSV files), plots (matplotlib, imported there only, lazily: without it the page says
so and has no plots) and page (the HTML, built of sections: SECTIONS, one function each; a new section is
one more function there). Formgrader's grades come from autograder/course/nbgrader/formgrader.py.

Student names and messages are hostile input: every text is stripped of control
characters and HTML-escaped, and CSV cells cannot start a spreadsheet formula.
"""

from __future__ import annotations

from pathlib import Path

from autograder.course.nbgrader.formgrader import find_gradebook, read_gradebook
from autograder.course.report.analyse import Report, analyse
from autograder.course.report.mistakes import failure_key, normalize
from autograder.course.report.page import SECTIONS, render
from autograder.course.report.plots import plots
from autograder.course.report.read import read_class, read_submission, results_dir
from autograder.course.report.tables import write_csvs
from autograder.course.similarity import answers_mode
from autograder.judging.handin import write_private

__all__ = ["SECTIONS", "Report", "analyse", "failure_key", "find_gradebook", "normalize", "plots", "read_class",
           "read_gradebook", "read_submission", "render", "results_dir", "write_csvs", "write_report"]


def write_report(graded: Path, out: Path | None = None, gradebook: Path | None = None) -> Path:
    """Analyse `graded` and write report.html and the CSV files into `out` (default graded/report); Formgrader's
    grades from `gradebook` (default: find_gradebook)."""
    report = analyse(graded, gradebook or find_gradebook(graded))
    out = out or graded / "report"
    out.mkdir(parents=True, exist_ok=True)
    files = write_csvs(report, out)
    images, no_plots = plots(report)
    page = out / "report.html"
    # its similarity section shows students' answers side by side: as private as the most private of them
    write_private(page, render(report, images, no_plots, files).encode("utf-8"), answers_mode(graded))
    return page

