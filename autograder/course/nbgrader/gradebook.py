"""Hand results to nbgrader: scores into its gradebook, feedback into feedback/.

`record` has nbgrader's own autograde record grade-all's results: for each submission it runs
nbgrader's Autograde converter (what `nbgrader autograde` and Formgrader's button run), whose kit
preprocessor (autograder.course.nbgrader.autograde, configured in nbgrader_config.py) takes the result
grade-all made of the same notebook instead of grading it again. So the gradebook ends as
`nbgrader autograde` leaves it: the same score per check cell, the submission's timestamp, late
penalties, and an autograded notebook under autograded/<student>/<assignment>/ that Formgrader
shows. Grader errors are not recorded (graded again on the next run).
Needs the dev extras (nbgrader); grading does not.
All text from a result is cleaned of control characters and HTML-escaped in the feedback pages.
"""

from __future__ import annotations

import contextlib
import difflib
import html
import os
import re
import sqlite3
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.batch import file_sha256
from autograder.judging import results as fmt
from autograder.judging.handin import NotOwnFile, copy_own, own_folder, readers, write_private
from autograder.judging.registry import CHAPTERS
from autograder.judging.report import clean
from autograder.judging.results import Results

EXPORTER = "autograder.course.nbgrader.export.SafeCsvExport"  # grades.csv with no formula from a student
REGISTER = ".venv/bin/nbgrader generate_assignment {assignment} --force"
# What nbgrader's Gradebook.add_submission makes SQLAlchemy say for every submission (nbgrader_config.py says why).
SESSION_WARNING = r"Object of type <\w+> not in session, add operation along '[\w.]+' will not proceed"


def interpreter_bin_first() -> None:
    """nbgrader makes gradebook.db by running `alembic` from PATH: the one beside this interpreter first."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = os.pathsep.join([bin_dir, path]) if path else bin_dir


def repair_half_made(db: Path) -> bool:
    """Stamp a gradebook.db that nbgrader began without finding alembic (its tables made, no
    alembic_version), as nbgrader would have; True if it was repaired."""
    if not db.is_file():
        return False
    from autograder.course.nbgrader.migrations import head_revision

    with contextlib.closing(sqlite3.connect(db)) as con:
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables or "alembic_version" in tables:
            return False
        con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        con.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (head_revision(),))
        con.commit()
    return True


def course_root(start: Path) -> Path | None:
    """The course directory: `start` or the nearest folder above it that holds nbgrader_config.py."""
    start = start.resolve()
    return next((d for d in (start, *start.parents) if (d / "nbgrader_config.py").is_file()), None)


def export(start: Path) -> int:
    """`nbgrader export` in the course directory found from `start`: grades.csv there.

    nbgrader itself, run from a subfolder, reads no nbgrader_config.py, makes an empty gradebook.db in that
    subfolder and, without alembic on PATH, stops with a traceback. This wrapper runs it where the course is,
    and only when its gradebook.db exists (0: written; 1: nbgrader failed, its output shown; 2: no course or
    no gradebook, nothing written)."""
    root = course_root(start)
    if root is None:
        print(clean(f"error: no nbgrader_config.py in {start.resolve()} or above: give the course directory"),
              file=sys.stderr)
        return 2
    if not (root / "gradebook.db").is_file():
        register = REGISTER.format(assignment="<id>")
        print(clean(f"error: {root / 'gradebook.db'} does not exist: register the assignments (`{register}`) and "
                    "grade them (`grade-all . --gradebook` or `nbgrader autograde`) first; nothing was written"),
              file=sys.stderr)
        return 2
    interpreter_bin_first()
    done = subprocess.run([sys.executable, "-m", "nbgrader", "export", f"--exporter={EXPORTER}"], cwd=root,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(clean(f"error: nbgrader export failed in {root}:\n{done.stdout}{done.stderr}"), file=sys.stderr)
        return 1
    print(f"grades: {root / 'grades.csv'} (nbgrader export, late penalties applied)")
    over = above_max_rows(root / "grades.csv")
    if over:
        print("warning: scores above the maximum in grades.csv (extra credit: a stretch task's, or given by hand in "
              "Formgrader; check those given by hand are meant):\n  " + "\n  ".join(over), file=sys.stderr)
    return 0


def above_max_rows(grades: Path) -> list[str]:
    """The rows of nbgrader's grades.csv whose raw score passes the maximum: "<student>/<assignment>: 22 / 20"."""
    import csv

    over = []
    with grades.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            try:
                raw, top = float(row["raw_score"]), float(row["max_score"])
            except (KeyError, TypeError, ValueError):
                continue
            if raw > top:
                over.append(clean(f"{row.get('student_id')}/{row.get('assignment')}: {raw:g} / {top:g}"))
    return over


@dataclass
class Recorded:
    recorded: int = 0  # autograded by nbgrader from grade-all's result
    unchanged: int = 0  # already recorded from the same notebook
    failed: list[str] = field(default_factory=list)  # "<student>/<assignment>: why"
    unnamed: list[str] = field(default_factory=list)  # students with neither name (Formgrader: "None, None")
    # A changed notebook over one graded by hand: "<student>/<assignment>: <the manual grades and comments>"
    held: list[str] = field(default_factory=list)  # not recorded: the instructor has not said keep or clear
    kept: list[str] = field(default_factory=list)  # recorded, the manual grades kept (--manual-grades keep)
    cleared: list[str] = field(default_factory=list)  # recorded, the manual grades removed (--manual-grades clear)
    above_max: list[str] = field(default_factory=list)  # "<student>/<assignment>: 22 / 20 (what raised it)"
    # copied into submitted/ by hand, without the files `nbgrader submit` writes: Release Feedback fails on them
    by_hand: list[str] = field(default_factory=list)  # "<student>/<assignment>"


MANUAL_CHOICES = ("keep", "clear")  # grade-all --manual-grades: for a changed notebook graded by hand before


def manual_marks(gb: Any, assignment: str, student: str) -> list[str]:
    """What the instructor gave a submission by hand in Formgrader: manual scores, extra credit (other than the
    kit's on stretch tasks' 0-point cells) and comments, one phrase each; [] when none or no submission."""
    from nbgrader.api import MissingEntry

    try:
        notebooks = gb.find_submission(assignment, student).notebooks
    except MissingEntry:
        return []
    marks = []
    for nb in notebooks:
        for g in nb.grades:
            if g.manual_score is not None:
                marks.append(f"{g.name} {g.manual_score:g} / {g.max_score:g} by hand")
            if g.extra_credit and g.max_score:
                marks.append(f"{g.name} {g.extra_credit:+g} extra credit")
        marks += [f"a comment on {c.name}" for c in nb.comments if c.manual_comment]
    return [clean(m) for m in marks]


def clear_manual(gb: Any, assignment: str, student: str) -> None:
    """Remove what manual_marks lists (the kit's stretch credit stays)."""
    for nb in gb.find_submission(assignment, student).notebooks:
        for g in nb.grades:
            g.manual_score = None
            if g.max_score:
                g.extra_credit = None
        for c in nb.comments:
            c.manual_comment = None
    gb.db.commit()


def above_max(gb: Any, assignments: list[str]) -> list[str]:
    """Submissions that manual grading put above the assignment's maximum, with what did it."""
    from autograder.course.nbgrader.formgrader import adjusted_submission

    found = []
    for assignment in assignments:
        for sub in gb.assignment_submissions(assignment):
            a = adjusted_submission(sub)
            if a.score > a.max_score and a.score > a.auto_score:
                found.append(f"{a.student}/{a.assignment}: {a.score:g} / {a.max_score:g} ({'; '.join(a.changes)})")
    return found


def nbgrader_api(course: Path, results: Path | None = None) -> Any:
    """nbgrader's API (what Formgrader calls) on the course, configured as `nbgrader autograde` run in it;
    with `results`, the kit preprocessor records grade-all's results there and fails any submission it
    has none for."""
    from nbgrader.apps import NbGraderAPI, NbGraderApp
    from traitlets.config import Config

    cwd = os.getcwd()
    os.chdir(course)
    try:
        app = NbGraderApp()
        app.initialize([])
    finally:
        os.chdir(cwd)
    if results is not None:
        override = Config()
        override.KitAutograde.results_dir = str(results.resolve())
        override.KitAutograde.grade_missing = False
        app.update_config(override)
    return NbGraderAPI(app.coursedir, parent=app)


def _recorded(api: Any, student: str, assignment: str, notebook: str) -> tuple[str | None, str]:
    """The sha256 of the notebook the gradebook's record was made from, and the release and grader its result was
    graded with ("" when the record does not say); (None, "") without a record."""
    from autograder.course.nbgrader.warm import graded_from

    return graded_from(Path(api.coursedir.format_path(api.coursedir.autograded_directory, student, assignment),
                            notebook))


def _why(outcome: dict[str, Any]) -> str:
    """The exception nbgrader logged for a failed autograde (its last one), else its first error line."""
    log = outcome.get("log", "") + "\n" + outcome.get("error", "")
    raised = [line.strip() for line in log.splitlines() if re.match(r"\s*[\w.]+(Error|Exception): ", line)
              and "see the the above traceback" not in line]  # nbgrader's closing line names no cause
    errors = [line for line in log.splitlines() if line.startswith("[ERROR]")]
    return raised[-1] if raised else errors[0] if errors else "nbgrader autograde failed"


def _clear_stale(url: str, course_id: str, student: str, assignment: str) -> str:
    """After a submission failed to record: the auto scores still in the gradebook are those of a notebook the
    student has replaced (nbgrader keeps them when an autograde fails), so they are cleared and every cell needs
    grading by hand; so is the kit's extra credit on stretch tasks' check cells. Manual scores and comments stay.
    Returns what to add to the failure's message ("" when nothing was recorded)."""
    from nbgrader.api import Gradebook, MissingEntry

    stretch = {f"check_{task}" for task in CHAPTERS[assignment].bonus} if assignment in CHAPTERS else set()
    cleared = False
    with Gradebook(url, course_id) as gb:
        try:
            notebook = gb.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            return ""
        for grade in notebook.grades:
            if grade.auto_score is not None or (grade.name in stretch and grade.extra_credit):
                grade.auto_score, grade.needs_manual_grade, cleared = None, True, True
                if grade.name in stretch:
                    grade.extra_credit = None
        gb.db.commit()
    return ("; the scores recorded for the notebook handed in before were cleared, and it needs grading by hand"
            if cleared else "")


def record(course: Path, out: Path, manual: str | None = None) -> Recorded:
    """Record every graded result of <out>/results in the course's gradebook with nbgrader's autograde.

    A submission already recorded from the same notebook, with the submitted timestamp, is left alone
    (manual grades stay unflagged). A changed notebook replacing one graded by hand (manual scores, extra
    credit, comments: nbgrader would keep them for the new notebook, silently) is recorded only when `manual`
    says what to do with them: "keep" or "clear"; otherwise it is held and listed. Raises SystemExit naming
    the command to run when an assignment is not registered in gradebook.db, and saying what to do when
    gradebook.db is locked or damaged."""
    from sqlalchemy.exc import DatabaseError

    try:
        return _record(course, out, manual)
    except (DatabaseError, sqlite3.DatabaseError) as e:  # sqlite's, alone or through nbgrader's Gradebook
        why = e.orig if isinstance(e, DatabaseError) else e
        raise SystemExit(f"{course / 'gradebook.db'}: {why}: nothing more recorded (what was recorded before "
                         "stays). Locked: Formgrader or another nbgrader command is writing it; rerun when it is "
                         "done. Not a database: restore it from a backup.") from None


def _record(course: Path, out: Path, manual: str | None) -> Recorded:
    import nbformat
    from nbformat.warnings import MissingIDFieldWarning
    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    interpreter_bin_first()
    todo: dict[str, list[tuple[str, Results]]] = {}
    done = Recorded()
    for path in sorted((out / "results").glob("*/*.json")):
        result = fmt.load(path)
        if not result["extra_data"].get("sha256") or fmt.grader_error(result):  # no notebook graded
            continue
        if set("*?[") & set(path.parent.name + path.stem):  # nbgrader globs for submitted/<student>/<assignment>
            done.failed.append(clean(f"{path.parent.name}/{path.stem}: nbgrader reads this folder name as a "
                                     "pattern, which matches other students' folders: not recorded. Rename the "
                                     "folder without * ? or [ and rerun"))
            continue
        todo.setdefault(path.stem, []).append((path.parent.name, result))
    for assignment in [a for a in todo if a not in CHAPTERS]:  # a misspelled folder: no command registers it
        near = difflib.get_close_matches(assignment, list(CHAPTERS), n=1)
        advice = f"did you mean {near[0]}? " if near else ""
        done.failed += [f"{student}/{assignment}: no assignment of this course has that name; {advice}rename the "
                        f"folder submitted/{student}/{assignment} and rerun" for student, _ in todo.pop(assignment)]
    if not todo:
        return done
    api = nbgrader_api(course, out)
    url = api.coursedir.db_url
    db = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
    register = " && ".join(REGISTER.format(assignment=a) for a in todo)
    if db is not None and not db.exists():
        raise SystemExit(f"{db} does not exist: register the assignments first, in {course}: {register}")
    if db is not None and repair_half_made(db):
        print(f"gradebook: {db} had no alembic_version (made without alembic on PATH); stamped", file=sys.stderr)
    with Gradebook(url, api.coursedir.course_id) as gb:
        missing, worth = [], []
        for assignment in todo:
            try:
                found = gb.find_assignment(assignment).max_score
            except MissingEntry:
                missing.append(assignment)
                continue
            points = sum(CHAPTERS[assignment].points.values())
            if found and found != points:  # registered from a source notebook whose points `build` would refuse
                worth.append(f"{assignment} is worth {found:g} points in the gradebook and {points:g} in the kit's "
                             "checks")
    if missing:
        command = " && ".join(REGISTER.format(assignment=a) for a in missing)
        raise SystemExit(f"{', '.join(missing)} not registered in {url}: run `{command}` in {course} first")
    if worth:
        raise SystemExit(f"{'; '.join(worth)}: the source notebook's check cells were changed after `build` (run "
                         "`.venv/bin/python -m autograder build <id>`, which names the cell, then register it again "
                         f"in {course}); nothing was recorded")
    def stale(student: str, assignment: str) -> str:
        return _clear_stale(url, api.coursedir.course_id, student, assignment)

    for assignment, submissions in todo.items():
        autograded = api.get_autograded_students(assignment)
        for student, result in submissions:
            extra = result["extra_data"]
            if extra["notebook"] != f"{assignment}.ipynb":  # nbgrader autograde looks for the released name only
                done.failed.append(f"{student}/{assignment}: nbgrader records only the released notebook name, "
                                   f"{assignment}.ipynb, and this folder's notebook is {extra['notebook']!r}: "
                                   "rename it and rerun")
                continue
            submitted = Path(api.coursedir.format_path(api.coursedir.submitted_directory, student, assignment),
                             extra["notebook"])
            try:  # nbgrader's autograde copies a submission's files following links: it never sees a refused one
                within = Path(api.coursedir.root, api.coursedir.submitted_directory)
                file_sha256(submitted, within)  # nor one larger than the grader reads, for nbformat to load whole
                own_folder(submitted.parent, within)
            except (NotOwnFile, OSError) as e:
                done.failed.append(f"{student}/{assignment}: {e}{stale(student, assignment)}")
                continue
            try:  # what nbgrader's autograde reads first; it fails on a broken file with a bare traceback
                with warnings.catch_warnings():  # cells without ids (an older Jupyter's): read all the same
                    warnings.filterwarnings("ignore", category=MissingIDFieldWarning)
                    nbformat.read(submitted, as_version=4)
            # Any exception: besides its ValueErrors, nbformat raises AttributeError, TypeError, AssertionError,
            # RecursionError or jsonschema's ValidationError on a file the kit reads, and one must not stop the rest.
            except Exception as e:
                why = (f"{extra['notebook']} is not a notebook that nbgrader can read ({type(e).__name__}); "
                       "grade-all's row gives it 0 with the reason, and it is recorded once the student hands in a "
                       "readable one")
                done.failed.append(f"{student}/{assignment}: {why}{stale(student, assignment)}")
                continue
            sha, graded_with = _recorded(api, student, assignment, extra["notebook"])
            if student in autograded and sha == extra["sha256"] and graded_with == extra.get("graded_with",
                                                                                             graded_with):
                done.unchanged += 1  # the same notebook, handed in at the same time, graded with the same grader
                continue
            # Graded by hand, then handed in again. Not only for the students nbgrader counts as autograded: a
            # resubmission collected by `nbgrader collect` comes with a newer timestamp.txt than the gradebook's,
            # and nbgrader counts that student out. A record whose notebook is unknown (no autograded copy, or one
            # without the kit's stamp) is held too, when it has manual grades: nothing says they fit this one.
            with Gradebook(url, api.coursedir.course_id) as gb:
                marks = manual_marks(gb, assignment, student) if sha != extra["sha256"] else []
            graded_by_hand = f"{student}/{assignment}: {', '.join(marks)}"
            if marks and manual not in MANUAL_CHOICES:
                done.held.append(graded_by_hand)
                continue
            with warnings.catch_warnings():  # nbgrader's own autoflush warning (see nbgrader_config.py), only it
                warnings.filterwarnings("ignore", message=SESSION_WARNING, category=SAWarning)
                warnings.filterwarnings("ignore", category=MissingIDFieldWarning)  # nbgrader reads the notebook too
                outcome = api.autograde(assignment, student, force=True, create=True)
            if outcome["success"]:
                done.recorded += 1
                if not all((submitted.parent / name).is_file() for name in RELEASE_FEEDBACK_READS):
                    done.by_hand.append(f"{student}/{assignment}")
                if marks and manual == "clear":
                    with Gradebook(url, api.coursedir.course_id) as gb:
                        clear_manual(gb, assignment, student)
                    done.cleared.append(graded_by_hand)
                elif marks:
                    done.kept.append(graded_by_hand)
            else:
                done.failed.append(f"{student}/{assignment}: {_why(outcome)}{stale(student, assignment)}")
    with Gradebook(url, api.coursedir.course_id) as gb:  # autograde adds students by id alone
        done.unnamed = sorted(s.id for s in gb.students if s.first_name is None and s.last_name is None)
        done.above_max = above_max(gb, list(todo))
    return done


def _esc(text: str) -> str:
    return html.escape(clean(text))


# A message repeated under several checks (a hostile exception text) longer than this is shown once.
REPEAT_SHOWN_ONCE = 160
KIT_PAGE = "effective-pytorch-kit feedback"  # marks the pages write_feedback may replace
# What `nbgrader release_feedback` opens beside each page: a submission made through the exchange has both.
RELEASE_FEEDBACK_READS = ("timestamp.txt", "submission_secret.txt")


def feedback_html(result: Results) -> str:
    """One page per submission: each check's name, points and message; no check code."""
    extra = result["extra_data"]
    rows = []
    shown: dict[str, str] = {}  # a long message repeated under several checks: in full once, then named
    for test in result["tests"]:
        status = _esc(test.get("status", "skipped"))
        output = test["output"].strip()
        message = (f"(the same message as under '{shown[output]}' above)" if output in shown else test["output"])
        if len(output) > REPEAT_SHOWN_ONCE:
            shown.setdefault(output, test["name"])
        rows.append(
            f'<tr class="{status}"><td>{_esc(test["name"])}</td>'
            f'<td>{test["score"]:g} / {test["max_score"]:g}</td><td>{status}</td>'
            f'<td><pre>{_esc(message)}</pre></td></tr>')
    notes = f'<p class="notes">{_esc(result["output"])}</p>' if result["output"] else ""
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="generator" content="{KIT_PAGE}">
<title>Feedback: {_esc(extra["assignment"] or "")}</title>
<style>body{{font-family:sans-serif;margin:2em}}td{{vertical-align:top;padding:4px 8px}}
tr.failed td:first-child{{color:#b00}}tr.passed td:first-child{{color:#070}}
td,p,h1{{overflow-wrap:anywhere}}pre{{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}}</style>
</head><body>
<h1>{_esc(extra["assignment"] or "")}: {result["score"]:g} / {result["max_score"]:g}</h1>
<p>Student: {_esc(extra.get("student", ""))}. Hidden checks ran on fresh random inputs;
a failing check shows the input it failed on.</p>{notes}
<table><tr><th>check</th><th>points</th><th>status</th><th>message</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""


@dataclass
class Feedback:
    written: int = 0
    kept: list[str] = field(default_factory=list)  # pages another tool wrote (nbgrader generate_feedback)
    by_hand: list[str] = field(default_factory=list)  # pages release_feedback cannot release: no timestamp.txt
    refused: list[str] = field(default_factory=list)  # a submission's file not copied beside its page, and why


def _one_folder(name: str) -> bool:
    """`name` names one entry of a folder: no separator, not . or .., short enough to be written beside."""
    return name not in (".", "..") and "/" not in name and "\0" not in name and len(os.fsencode(name)) <= 200


def write_feedback(course: Path, results: list[Results]) -> Feedback:
    """feedback/<student>/<assignment>/<assignment>.html, where `nbgrader release_feedback` looks. A page there
    that the kit did not write (nbgrader generate_feedback's, with the instructor's manual grades and comments)
    is kept as it is and listed."""
    done = Feedback()
    for result in results:
        extra = result["extra_data"]
        if fmt.grader_error(result):
            continue
        student, assignment = extra["student"], extra["assignment"] or "unknown"
        notebook = str(extra.get("notebook") or "")
        # A result names the folders its page goes in: a result edited by hand, or in a shard's folder before the
        # merge, could name any folder. Each name is one folder's, or the page is not written.
        bad = [name for name in (student, assignment, notebook) if name and not _one_folder(name)]
        if bad or not student:
            done.refused.append(clean(f"{student}/{assignment}: {bad[0] if bad else student!r} is not the name of "
                                      "a folder in submitted/: no feedback page written"))
            continue
        folder = course / "feedback" / student / assignment
        page = folder / f"{assignment}.html"
        try:
            if page.exists() and KIT_PAGE not in page.read_text(encoding="utf-8", errors="replace")[:2000]:
                done.kept.append(str(page.relative_to(course)))
                continue
            folder.mkdir(parents=True, exist_ok=True)
            submitted = course / "submitted" / student / assignment
            # the page shows the student's score and code: readable by whom could read what the student handed in
            mode = readers(submitted / notebook if notebook else submitted, course / "submitted")
            write_private(page, feedback_html(result).encode(), mode)
        except OSError as e:  # a name too long once escaped, a full disk: this page alone
            done.refused.append(clean(f"{student}/{assignment}: no feedback page written: {e.strerror}"))
            continue
        done.written += 1
        for name in RELEASE_FEEDBACK_READS:  # as nbgrader generate_feedback copies them, never over its own
            if not os.path.lexists(submitted / name) or os.path.lexists(folder / name):
                continue
            try:  # the student's own small file only: a link to a secret or a huge file is refused, never copied
                copy_own(submitted / name, folder / name, course / "submitted")
            except (NotOwnFile, OSError) as e:
                done.refused.append(clean(f"{page.parent.relative_to(course)}: {e}"))
        if not (folder / "timestamp.txt").is_file():  # copied into submitted/ by hand: no exchange to release to
            done.by_hand.append(str(page.relative_to(course)))
    return done
