"""Names of files and folders in submitted/ are the students' (a zip, a tar or a repository they made): none of
them may stop the batch. A folder name of 240 bytes crashed grade-all (OSError: File name too long) when it wrote
the row's result file, `.<name>.json.<pid>.tmp`, and so on every rerun: nobody else's row was written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autograder.course import batch
from autograder.course.batch import Job, discover, grade_all, result_path
from autograder.judging.results import Results

# No torch at the top: the pool's spawned workers import this module for quick_grade.
CH = "07_numerical_stability"
NAME_MAX = 255  # bytes in one file name on Linux and macOS


def quick_grade(job: Job, out: str, device: str, junit: bool) -> batch.SummaryRow:
    """A row as grade_job writes it, at once: the refusal for a refused job, full marks otherwise."""
    result: Results = {"score": 0.0 if job.refused else 1.0, "max_score": 1.0, "execution_time": 0.0,
                       "output": job.refused, "tests": [], "visibility": "visible",
                       "extra_data": {"assignment": job.assignment_text, "student": job.student_text,
                                      "sha256": job.sha256}}
    batch._write_atomic(result_path(Path(out), job), json.dumps(result))
    return batch.row(result)


@pytest.fixture
def course(tmp_path: Path) -> Path:
    def hand_in(student: str, assignment: str, notebook: str) -> None:
        folder = tmp_path / "course" / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / notebook).write_text("{}")

    hand_in("ada", CH, f"{CH}.ipynb")
    hand_in("eve", "a" * 240, "x.ipynb")
    hand_in("é" * 127, CH, f"{CH}.ipynb")  # 254 bytes of UTF-8
    hand_in("bob", CH, "b" * 249 + ".ipynb")
    return tmp_path / "course"


def test_a_long_folder_name_is_a_refused_row_of_bounded_names(course: Path, tmp_path: Path) -> None:
    jobs = {j.student[:3]: j for j in discover(course)}
    for key in ("eve", "ééé"):
        job = jobs[key]
        assert "bytes long" in job.refused and "Rename the folder" in job.refused, job
        assert len(os.fsencode(f"{job.student}__{job.assignment}.xml")) <= NAME_MAX  # --junit's report
        assert len(os.fsencode(f".{job.assignment}.json.4194304.tmp")) <= NAME_MAX
    assert not jobs["ada"].refused and not jobs["bob"].refused
    assert len({j.key for j in jobs.values()}) == 4
    out = tmp_path / "graded"
    assert grade_all(course, out, workers=1, work=quick_grade) == 0
    rows = json.loads((out / "summary.json").read_text())
    assert len(rows) == 4 and sum(r["score"] for r in rows) == 2


def _result(student: str, assignment: str = CH) -> Results:
    return {"score": 1.0, "max_score": 1.0, "execution_time": 0.0, "output": "", "tests": [], "visibility": "visible",
            "extra_data": {"student": student, "assignment": assignment, "notebook": f"{CH}.ipynb"}}


def test_feedback_pages_stay_in_feedback_and_one_bad_name_costs_its_page_alone(tmp_path: Path) -> None:
    """Results name the folders their pages go in: one edited by hand or in a shard's folder before the merge
    wrote its page anywhere (`../../x`), and a name whose escapes make it too long stopped every page after it."""
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import write_feedback

    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    forged = [_result("../../../escaped"), _result("eve", "../../x"), _result("/tmp/abs"),
              _result("\\x01" * 100), _result("..")]
    done = write_feedback(course, [*forged, _result("ada")])
    assert done.written == 1 and (course / "feedback" / "ada" / CH / f"{CH}.html").is_file()
    assert not (tmp_path / "escaped").exists() and not (course / "x").exists() and not Path("/tmp/abs").exists()
    assert [p.name for p in (course / "feedback").iterdir()] == ["ada"]
    assert len(done.refused) == len(forged)


def test_merge_refuses_a_result_filed_under_another_students_name(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A result moved into another folder would give its student two rows, or the wrong student the score."""
    part = tmp_path / "part1"
    for folder, student in (("ada", "ada"), ("eve", "ada")):
        (part / "results" / folder).mkdir(parents=True)
        (part / "results" / folder / f"{CH}.json").write_text(json.dumps(_result(student)))
    assert batch.merge([part], tmp_path / "merged") == 2
    assert "eve" in capsys.readouterr().err
    assert not (tmp_path / "merged" / "summary.json").exists()


def test_export_writes_no_formula_from_a_student_into_grades_csv(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`nbgrader export` writes the roster's ids and names as they are: a display name or an id of
    "=HYPERLINK(...)" was a live formula in the grades.csv the instructor opens in a spreadsheet, and its comma
    shifted every cell after it. The kit's exporter writes them guarded; `export` and the course's config use it."""
    pytest.importorskip("nbgrader")
    import csv
    import subprocess

    from nbgrader.api import Gradebook

    from autograder.course.nbgrader import gradebook
    from autograder.course.nbgrader.export import SafeCsvExport

    gradebook.interpreter_bin_first()  # nbgrader makes the database with alembic from PATH
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "x") as gb:
        gb.add_assignment(CH)
        gb.add_student('=HYPERLINK("http://x","y")', first_name="@SUM(1)", last_name="+1", email="-2+3")
        SafeCsvExport(to=str(tmp_path / "grades.csv")).export(gb)
    with (tmp_path / "grades.csv").open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    assert len(rows) == 1
    cells = dict(zip(header, rows[0], strict=True))
    assert cells["student_id"] == '\'=HYPERLINK("http://x","y")' and cells["email"] == "'-2+3"
    assert not [c for c in rows[0] if c.startswith(("=", "+", "-", "@"))]
    assert float(cells["score"]) == 0.0  # numbers stay numbers

    ran: list[list[str]] = []

    def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        ran.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    (tmp_path / "nbgrader_config.py").write_text("")
    assert gradebook.export(tmp_path) == 0 and f"--exporter={gradebook.EXPORTER}" in ran[0]
    assert gradebook.EXPORTER in (Path(gradebook.__file__).parents[3] / "nbgrader_config.py").read_text()


@pytest.mark.parametrize("damage", ["locked", "not a database"])
def test_a_locked_or_damaged_gradebook_is_a_message_not_a_traceback(tmp_path: Path, damage: str) -> None:
    """grade-all --gradebook while Formgrader holds gradebook.db, or with a gradebook.db that is not one, stopped
    with sqlite's exception (OperationalError: database is locked; DatabaseError: file is not a database)."""
    pytest.importorskip("nbgrader")
    import sqlite3

    from nbgrader.api import Gradebook

    from autograder.course.nbgrader.gradebook import interpreter_bin_first, record

    interpreter_bin_first()
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "x"\n')
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "x") as gb:
        gb.add_assignment(CH)
    out = course / "graded"
    (out / "results" / "ada").mkdir(parents=True)
    (out / "results" / "ada" / f"{CH}.json").write_text(json.dumps({**_result("ada"), "extra_data": {
        **_result("ada")["extra_data"], "sha256": "ab"}}))
    holder = sqlite3.connect(course / "gradebook.db", isolation_level=None)
    if damage == "locked":
        holder.execute("BEGIN EXCLUSIVE")
    else:
        (course / "gradebook.db").write_bytes(b"not sqlite " * 100)
    with pytest.raises(SystemExit, match=f"gradebook.db.*{damage}.*nothing more recorded"):
        record(course, out)
    holder.close()


def test_a_folder_named_as_a_pattern_is_not_handed_to_nbgrader(tmp_path: Path) -> None:
    """nbgrader finds a submission by globbing submitted/<student>/<assignment>: a student folder named "*" (or
    "ad[a]") had grade-all --gradebook autograde, with force, every classmate it matches (ada's manual grades
    flagged again), under a name that is not theirs."""
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import record

    out = tmp_path / "graded"
    for student in ("*", "ad[a]", "b?b"):
        result = _result(student)
        result["extra_data"]["sha256"] = "ab"
        (out / "results" / student).mkdir(parents=True)
        (out / "results" / student / f"{CH}.json").write_text(json.dumps(result))
    done = record(tmp_path, out)  # no gradebook here: nothing may reach nbgrader
    assert not done.recorded and len(done.failed) == 3
    assert all("pattern" in line for line in done.failed)


def test_a_huge_sparse_notebook_costs_no_time_at_discovery(tmp_path: Path) -> None:
    """A tar keeps sparse files (GNU tar -S): a notebook of 1 TB that takes a few bytes of the upload had
    discovery hash the whole terabyte, for hours, before anyone was graded; grading reads 50 MB of it at most
    and refuses it. Discovery refuses it at once, with the grader's reason, and nbgrader never opens it."""
    import subprocess
    import sys

    from tests.kit import ROOT

    folder = tmp_path / "submitted" / "eve" / CH
    folder.mkdir(parents=True)
    with (folder / f"{CH}.ipynb").open("wb") as f:
        f.truncate(1 << 40)
    code = ("import sys; from pathlib import Path; from autograder.course.batch import discover\n"
            "print(discover(Path(sys.argv[1]))[0].refused)\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "larger than 50 MB" in done.stdout


def test_a_folder_too_deep_to_walk_is_a_row_not_a_crash(tmp_path: Path) -> None:
    """A tar can hold a folder tree deeper than a path can name (4096 bytes): looking for the other names of a
    hard-linked notebook there raised OSError (File name too long) out of discovery, and grade-all stopped."""
    folder = tmp_path / "submitted" / "eve" / CH
    folder.mkdir(parents=True)
    notebook = folder / f"{CH}.ipynb"
    notebook.write_text("{}")
    os.link(notebook, folder / "copy.ipynb")  # two names, both hers: her own file
    fds = [os.open(folder, os.O_RDONLY)]
    try:
        for _ in range(2100):  # 4200 bytes of d/d/d...
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        jobs = discover(tmp_path)
        assert len(jobs) == 1 and "could not be searched" in jobs[0].refused
    finally:  # bottom up: shutil.rmtree (pytest's clean-up of old folders) recurses once per level and would fail
        for parent in reversed(fds[:-1]):
            os.close(fds.pop())
            os.rmdir("d", dir_fd=parent)
        os.close(fds.pop())


def test_a_notebook_the_grader_cannot_read_is_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tar run by the instructor keeps a mode of 000 from the archive: opening the notebook raised PermissionError
    out of discovery, and grade-all (not run as root) stopped before grading anyone."""
    for student in ("ada", "eve"):
        (tmp_path / "submitted" / student / CH).mkdir(parents=True)
        (tmp_path / "submitted" / student / CH / f"{CH}.ipynb").write_text("{}")
    real = batch.file_sha256

    def as_a_user(path: Path, within: Path | None = None) -> str:  # root reads a file of mode 000: not a user
        if "eve" in path.parts:
            raise PermissionError(13, "Permission denied")
        return real(path, within)

    monkeypatch.setattr(batch, "file_sha256", as_a_user)
    jobs = {j.student: j for j in discover(tmp_path)}
    assert not jobs["ada"].refused and "cannot be read: Permission denied" in jobs["eve"].refused
