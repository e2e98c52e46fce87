"""The class workflow of grade-all, as one call: grade every submission, then the steps that read the results
(similar answers, the class report, nbgrader's gradebook, feedback pages).

`grade_class` prints nothing of its own: it returns a ClassRun, which the command line prints and turns into
an exit code. The steps after grading never undo it: a report that fails is a warning, a submission the
gradebook refuses is listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.course.batch import grade_all
from autograder.judging import results as fmt
from autograder.judging.report import clean

if TYPE_CHECKING:  # the gradebook module needs nbgrader: imported where it runs
    from autograder.course.nbgrader.gradebook import Feedback, Recorded


@dataclass(frozen=True)
class ClassOptions:
    root: Path  # the course folder (with submitted/) or the submitted/ folder
    out: Path  # where results/, the summaries and the report go
    workers: int
    device: str = "cpu"
    shard: str | None = None  # "i/n": grade only that shard
    junit: bool = False
    gradebook: bool = False  # record the scores in root/gradebook.db (nbgrader)
    feedback: bool = False  # write root/feedback/<student>/<assignment>/*.html
    manual_grades: str | None = None  # keep | clear: a changed notebook's manual grades (gradebook.record)
    regrade: bool = False  # grade again the results graded with another release or grader (batch.fingerprint)


@dataclass(frozen=True)
class Reports:
    """What the steps after grading (grade-all's and merge's) wrote about the class."""
    similarity: str  # the similarity step's line for the console (a note when it could not run)
    page: Path | None = None  # the class report's page, None when it could not be written
    failure: str | None = None  # why it could not be


@dataclass(frozen=True)
class ClassRun:
    """What grade_class did, for the command line to print and to map to an exit code."""
    options: ClassOptions
    grading: int  # batch.grade_all's status: 0 all graded, 3 some grader errors, 2 refused, 130 interrupted
    reports: Reports | None = None  # None when grading did not complete
    recorded: Recorded | None = None  # with options.gradebook
    unregistered: str | None = None  # the gradebook cannot take these results: the command that fixes it
    feedback: Feedback | None = None  # with options.feedback


def write_reports(graded: Path, root: Path | None = None) -> Reports:
    """The class report at the end of grade-all and merge (root: the course, whose answers are kept first):
    a failure is a warning, never the run's."""
    from autograder.course.report import write_report  # matplotlib, if installed, is imported in there only
    from autograder.course.similarity import update

    similarity = update(root, graded)  # the report's section on similar answers, so before it
    try:
        return Reports(similarity, write_report(graded))
    except Exception as e:  # the grades are written already: a bug in the report must not fail the run
        return Reports(similarity, failure=clean(f"{type(e).__name__}: {e}"))


def grade_class(options: ClassOptions) -> ClassRun:
    """Grade the class, then write what reads the results; stops after grading unless it completed."""
    o = options
    code = grade_all(o.root, o.out, o.workers, o.device, o.shard, o.junit, regrade=o.regrade)
    if code not in (0, 3):  # 3: some grader errors; the other results stand
        return ClassRun(o, code)
    reports = write_reports(o.out, o.root)
    if not (o.gradebook or o.feedback):
        return ClassRun(o, code, reports)
    from autograder.course.nbgrader.gradebook import record, write_feedback  # needs nbgrader: imported only here

    recorded = None
    if o.gradebook:
        try:
            recorded = record(o.root, o.out, o.manual_grades)
        except SystemExit as e:  # an assignment not registered: nothing recorded, no feedback
            return ClassRun(o, code, reports, unregistered=str(e.code))
    feedback = None
    if o.feedback:
        results = [fmt.load(p) for p in sorted((o.out / "results").glob("*/*.json"))]
        feedback = write_feedback(o.root, results)
    return ClassRun(o, code, reports, recorded, feedback=feedback)
