"""nbgrader's autograde with the kit's preprocessor, and grade-all --gradebook, leave the same gradebook.

One small class of chapter 07 is graded both ways in two copies of one course: `nbgrader autograde`
(what Formgrader's Autograde button runs) in one, `python -m autograder grade-all --gradebook` in the
other, both with a PATH that lacks .venv/bin (nbgrader runs `alembic` from PATH). The class holds
honest submissions (full marks, partial credit, the stub) and students who tamper with the
notebook's graded cells; none of them may gain a point.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from autograder.course.batch import default_workers, error_result
from autograder.course.build import generate_release
from autograder.course.cases import mutant
from autograder.course.nbgrader import migrations
from autograder.course.nbgrader.gradebook import (
    interpreter_bin_first,
    nbgrader_api,
    record,
    repair_half_made,
    write_feedback,
)
from autograder.judging.results import Results
from tests import forked
from tests.kit import ROOT, solution_cells, write_submission

pytestmark = pytest.mark.slow  # minutes in all: tests/conftest.py starts it first

CH = "07_numerical_stability"
NO_MAX = mutant(CH, "no max subtraction").cells["softmax"]
SUBMITTED = datetime(2026, 11, 20, 10, 0)
Notebook = dict[str, Any]


def _cell_index(nb: Notebook, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def _edits_check_cell(nb: Notebook) -> None:
    cell = nb["cells"][_cell_index(nb, "check_softmax")]
    cell["source"] = "print('all checks pass')\n"
    cell["metadata"]["nbgrader"]["points"] = 100
    cell["outputs"] = [{"output_type": "execute_result", "data": {"text/plain": "100"}, "metadata": {},
                        "execution_count": 1}]


def _deletes_check_cell(nb: Notebook) -> None:
    del nb["cells"][_cell_index(nb, "check_softmax")]


def _duplicates_check_cell(nb: Notebook) -> None:
    twin = copy.deepcopy(nb["cells"][_cell_index(nb, "check_softmax_cross_entropy")])
    twin["source"] = "pass\n"
    nb["cells"].insert(_cell_index(nb, "check_softmax") + 1, twin)


def _forges_grade_cell(nb: Notebook) -> None:
    nb["cells"].append({"cell_type": "code", "execution_count": None, "outputs": [], "source": "pass\n",
                        "metadata": {"nbgrader": {"grade": True, "solution": False, "locked": True, "points": 50,
                                                  "grade_id": "check_bonus", "schema_version": 3}}})


def _lacks_log_softmax(nb: Notebook) -> None:
    """A notebook of an earlier release, without log_softmax's answer and check cells (or a student who deleted
    both): nbgrader's OverwriteCells raised KeyError on it (autograder/course/nbgrader/missing_cells.py)."""
    nb["cells"] = [c for c in nb["cells"]
                   if c["metadata"].get("nbgrader", {}).get("grade_id") not in {"log_softmax", "check_log_softmax"}]


def _ungrades_check_cell(nb: Notebook) -> None:
    """A cell of the check cell's id that is no longer graded: nbgrader counts the check cell as missing."""
    nb["cells"][_cell_index(nb, "check_softmax")]["metadata"]["nbgrader"]["grade"] = False


def _retypes_answer_cell(nb: Notebook) -> None:
    nb["cells"][_cell_index(nb, "softmax")]["metadata"]["nbgrader"].update(grade=True, points=10)


# student -> (softmax's code, an edit of the notebook's graded cells, (auto score, extra credit) per check
# cell; None: nbgrader's autograde fails for that submission and records nothing). 07 has no stretch task
# (log_softmax is graded since this round), so nobody earns extra credit here: tests/course/
# test_nbgrader_autograde.py covers it.
Expected = dict[str, tuple[float, float | None]]
HONEST_MISTAKE: Expected = {"check_softmax": (3.0, None), "check_softmax_cross_entropy": (6.0, None),
                            "check_log_softmax": (5.0, None), "check_robust_loss": (5.0, None)}  # no max: 19 / 22
CLASS: dict[str, tuple[str | None, Callable[[Notebook], None] | None, Expected | None]] = {
    "ada": ("solution", None, {"check_softmax": (6.0, None), "check_softmax_cross_entropy": (6.0, None),
                               "check_log_softmax": (5.0, None), "check_robust_loss": (5.0, None)}),
    "bob": (NO_MAX, None, HONEST_MISTAKE),
    "cid": (None, None, {"check_softmax": (0.0, None), "check_softmax_cross_entropy": (0.0, None),
                         "check_log_softmax": (0.0, None), "check_robust_loss": (0.0, None)}),
    "edits": (NO_MAX, _edits_check_cell, HONEST_MISTAKE),  # nbgrader restores the locked source and points
    "deletes": (NO_MAX, _deletes_check_cell, HONEST_MISTAKE),  # nbgrader puts the cell back (add_missing_cells)
    "older": (NO_MAX, _lacks_log_softmax, {**HONEST_MISTAKE, "check_log_softmax": (0.0, None)}),  # put back
    "duplicates": (NO_MAX, _duplicates_check_cell, None),
    "forges": (NO_MAX, _forges_grade_cell, None),
    "retypes": (NO_MAX, _retypes_answer_cell, None),
    "ungrades": (NO_MAX, _ungrades_check_cell, None),
}
FAILING = {s for s, (_, _, points) in CLASS.items() if points is None}


def _env() -> dict[str, str]:
    """The environment of a shell where .venv is not activated."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    return {**os.environ, "PATH": path}


def _run(course: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return forked.run(*args, cwd=course, env=_env(), timeout=600)


def _rows(course: Path) -> dict[str, Any]:
    """The gradebook as Formgrader and `nbgrader export` see it."""
    from nbgrader.api import Gradebook

    api = nbgrader_api(course)
    seen = {s["student"]: s for s in api.get_submissions(CH)}
    rows: dict[str, Any] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in CLASS:
            sub = gb.find_submission(CH, student)
            grades = {g.name: (g.auto_score, g.extra_credit, g.manual_score, g.needs_manual_grade)
                      for g in sub.notebooks[0].grades}
            comments = {c.name: c.auto_comment for c in sub.notebooks[0].comments}
            rows[student] = {"timestamp": sub.timestamp, "score": sub.score, "late": sub.late_submission_penalty,
                             "grades": grades, "comments": comments, "autograded": seen[student]["autograded"],
                             "formgrader_timestamp": seen[student]["timestamp"]}
    return rows


def _check_outputs(course: Path, student: str) -> dict[str, list[dict[str, Any]]]:
    path = course / "autograded" / student / CH / f"{CH}.ipynb"
    nb = json.loads(path.read_text())
    return {c["metadata"]["nbgrader"]["grade_id"]: c["outputs"] for c in nb["cells"]
            if c["metadata"].get("nbgrader", {}).get("grade")}


@pytest.fixture(scope="module")
def courses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two copies of one registered course with the class in submitted/, graded each way."""
    base = tmp_path_factory.mktemp("nbgrader")
    course = base / "nbgrader-autograde"
    generate_release(CH, course)
    code = solution_cells(CH)
    for student, (softmax, edit, _) in CLASS.items():
        if softmax is None:
            cells = {}
        elif softmax == "solution":
            cells = code
        else:
            cells = {**code, "softmax": softmax}
        folder = course / "submitted" / student / CH
        folder.mkdir(parents=True)
        path = write_submission(folder, CH, cells)
        if edit is not None:
            nb = json.loads(path.read_text())
            edit(nb)
            path.write_text(json.dumps(nb))
        (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    other = base / "grade-all"
    shutil.copytree(course, other)

    # judge processes grade the class ahead, as they do a large one's (KitAutograde.ahead_from), in nbgrader's
    # process (no warm judge of the course: test_a_warm_judge_serves_consecutive_nbgrader_processes)
    done = _run(course, "nbgrader", "autograde", CH, "--KitAutograde.ahead_from=2", "--KitAutograde.warm_seconds=0")
    assert done.returncode == 1, done.stdout + done.stderr  # the tampered notebooks fail, loudly
    if default_workers() > 1:
        assert done.stderr.count("graded ahead by a judge process") >= len(CLASS) - len(FAILING), done.stderr
    failed = {s for s in CLASS if f"There was an error processing assignment '{CH}' for student '{s}'" in done.stderr}
    assert failed == FAILING, done.stderr

    done = _run(other, "autograder", "grade-all", ".", "--gradebook", "--workers", "2")
    assert done.returncode == 3, done.stdout + done.stderr  # exit 3: some submissions have no score recorded
    assert f"{len(CLASS) - len(FAILING)} submissions recorded by nbgrader autograde, 0 already recorded, " \
           f"{len(FAILING)} failed" in done.stdout, done.stdout
    not_recorded = done.stderr.split("not recorded")[1]
    assert {s for s in CLASS if f"{s}/{CH}:" in not_recorded} == FAILING, done.stderr
    assert f"gradebook: {len(CLASS)} students have no name there, so Formgrader lists them as 'None, None': add " \
           "them with `nbgrader db student import roster.csv`" in " ".join(done.stdout.split()), done.stdout
    return {"nbgrader": course, "grade-all": other}


def test_both_ways_leave_the_same_gradebook_with_partial_credit(courses: dict[str, Path]) -> None:
    theirs, ours = _rows(courses["nbgrader"]), _rows(courses["grade-all"])
    assert ours == theirs
    for student, (_, _, points) in CLASS.items():
        row = ours[student]
        assert row["timestamp"] == SUBMITTED, student
        if points is None:  # no score at all, not a zero: needs grading, and not shown as autograded
            assert row["grades"] == {g: (None, None, None, True) for g in HONEST_MISTAKE}, student
            assert not row["autograded"], student
        else:
            assert row["grades"] == {g: (auto, extra, None, False) for g, (auto, extra) in points.items()}, student
            assert row["score"] == sum(auto + (extra or 0) for auto, extra in points.values()), student
            assert row["autograded"] and row["formgrader_timestamp"], student
    assert ours["bob"]["score"] == 19.0  # the kit's partial credit; stock nbgrader records 16 (all or nothing)
    assert ours["ada"]["score"] == 22.0


def test_both_ways_write_the_same_autograded_notebook(courses: dict[str, Path]) -> None:
    for student, (_, _, points) in CLASS.items():
        if points is None:
            assert not (courses["grade-all"] / "autograded" / student / CH).exists()
            continue
        outputs = _check_outputs(courses["grade-all"], student)
        assert outputs == _check_outputs(courses["nbgrader"], student), student
        assert all(o.get("name") != "stderr" for cell in outputs.values() for o in cell)
    bob = _check_outputs(courses["grade-all"], "bob")["check_softmax"]
    assert "softmax: 3 / 6 points" in "".join(bob[0]["text"]) and "Subtract the maximum" in "".join(bob[0]["text"])
    assert "".join(bob[1]["data"]["text/plain"]) == "3.0"


def test_grade_all_gradebook_leaves_recorded_submissions_and_manual_grades_alone(courses: dict[str, Path]) -> None:
    from nbgrader.api import Gradebook

    course = courses["grade-all"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.find_grade("check_softmax", CH, CH, "bob").manual_score = 5.0
        gb.db.commit()
    roster = course / "roster.csv"  # docs/instructors.md's step 4: the names, with nbgrader's own import
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},{s.title()},Example,\n" for s in CLASS))
    imported = _run(course, "nbgrader", "db", "student", "import", str(roster))
    assert imported.returncode == 0, imported.stdout + imported.stderr
    done = _run(course, "autograder", "grade-all", ".", "--gradebook", "--workers", "2")
    assert f"0 submissions recorded by nbgrader autograde, {len(CLASS) - len(FAILING)} already recorded" \
           in done.stdout, done.stdout + done.stderr
    assert "None, None" not in done.stdout, done.stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grade = gb.find_grade("check_softmax", CH, CH, "bob")
        assert (grade.auto_score, grade.manual_score, grade.needs_manual_grade) == (3.0, 5.0, False)


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own, on every autograde
@pytest.mark.parametrize("failure", ["grader error", "kit bug"])
def test_a_grader_failure_fails_the_autograde_and_records_no_zero(
        courses: dict[str, Path], monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """What Formgrader's Autograde button runs, in this process, on a machine that cannot grade."""
    import autograder.course.nbgrader.autograde as kit

    course, student = courses["nbgrader"], f"gus-{failure.replace(' ', '-')}"
    folder = course / "submitted" / student / CH
    folder.mkdir(parents=True)
    write_submission(folder, CH, solution_cells(CH))

    def broken(job: Any, out: str, device: str, junit: bool, zygote: Any) -> Results:
        if failure == "kit bug":
            raise RuntimeError("a bug in the kit")
        return error_result(job, device, "the grading machine could not sandbox this submission: no free uid")

    monkeypatch.setattr(kit, "grade_submission", broken)
    outcome = _api(course, warm_seconds=0).autograde(CH, student)  # graded here, where the failure is
    assert not outcome["success"]
    assert ("grader error, no score recorded" if failure == "grader error" else "a bug in the kit") in outcome["log"]
    assert not (course / "autograded" / student / CH).exists()  # Formgrader: not autograded
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grades = gb.find_submission_notebook(CH, CH, student).grades
        assert [(g.auto_score, g.needs_manual_grade) for g in grades] == [(None, True)] * 4  # a cell a task


def _api(course: Path, **kit: Any) -> Any:
    """nbgrader's API on the course (nbgrader_api), with these KitAutograde settings."""
    from traitlets.config import Config

    api = nbgrader_api(course)
    api.update_config(Config({"KitAutograde": kit}))  # the converters it makes take its config
    return api


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own, on every autograde
def test_a_warm_judge_folder_others_can_enter_is_refused_and_nbgrader_grades(
        courses: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import autograder.course.nbgrader.autograde as kit

    course, student = courses["nbgrader"], "hal"
    folder = course / "submitted" / student / CH
    folder.mkdir(parents=True)
    write_submission(folder, CH, solution_cells(CH))
    xdg = Path(tempfile.mkdtemp(prefix="kit-xdg-"))
    (xdg / "kit-warm").mkdir(mode=0o755)
    (xdg / "kit-warm").chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    here: list[str] = []

    def in_nbgrader(job: Any, out: str, device: str, junit: bool, zygote: Any) -> Results:
        here.append(job.student)
        return error_result(job, device, "graded in nbgrader's process")

    monkeypatch.setattr(kit, "grade_submission", in_nbgrader)
    outcome = _api(course, warm_seconds=60, workers=2).autograde(CH, student)
    shutil.rmtree(xdg)
    said = " ".join(outcome["log"].split())
    assert f"no warm judge for this course ({xdg / 'kit-warm'} has mode 0755, not 0700" in said, said
    assert "grading in nbgrader's process" in said and here == [student], said
    assert not outcome["success"] and "graded in nbgrader's process" in said


def test_a_half_made_gradebook_is_stamped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nbgrader creates the tables, then runs `alembic` from PATH (without the course's settings, which read the
    revision in-process); without alembic the database is left unstamped."""
    import sqlite3

    import nbgrader
    import nbgrader.api
    from nbgrader.api import Gradebook

    def no_alembic() -> str:
        raise FileNotFoundError(2, "No such file or directory", "alembic")  # what nbgrader's subprocess raises

    db = tmp_path / "gradebook.db"
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", no_alembic)
    with pytest.raises(FileNotFoundError, match="alembic"):
        Gradebook(f"sqlite:///{db}")
    assert repair_half_made(db)
    with sqlite3.connect(db) as con:
        ((version,),) = con.execute("SELECT version_num FROM alembic_version").fetchall()
    revisions = (Path(nbgrader.__file__).parent / "alembic" / "versions").glob("*.py")
    assert any(path.name.startswith(f"{version}_") for path in revisions), version
    assert not repair_half_made(db)
    Gradebook(f"sqlite:///{db}").close()  # nbgrader opens it as its own


def test_a_new_gradebook_is_stamped_with_alembics_head_without_starting_alembic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The course's settings (nbgrader_config.py) give nbgrader the head of its migrations read in-process: the same
    revision `alembic heads` prints, and no alembic on PATH needed to make a gradebook."""
    import sqlite3

    import nbgrader.api
    from nbgrader.api import Gradebook
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////nonexistent/gradebook.db") as ini:
        heads = subprocess.run([Path(sys.executable).parent / "alembic", "-c", ini, "heads"], capture_output=True,
                               text=True, check=True).stdout
    assert heads.split()[0] == migrations.head_revision(), heads
    monkeypatch.setenv("PATH", _env()["PATH"])  # no alembic here
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgrader.api.get_alembic_version)  # undone after
    nbgrader_api(ROOT)  # reads the course's nbgrader_config.py, as every nbgrader command of the course does
    Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}").close()
    with sqlite3.connect(tmp_path / "gradebook.db") as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(migrations.head_revision(),)]


def test_export_and_feedback(courses: dict[str, Path], tmp_path: Path) -> None:
    course = courses["nbgrader"]
    done = _run(course, "nbgrader", "export", "--to", str(tmp_path / "grades.csv"))
    assert done.returncode == 0, done.stderr
    rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert {s: rows[s] for s in ("ada", "bob", "cid")} == {"ada": 22.0, "bob": 19.0, "cid": 0.0}
    results = [json.loads(p.read_text()) for p in sorted((courses["grade-all"] / "graded" / "results").glob("*/*"))]
    write_feedback(course, results)
    page = (course / "feedback" / "bob" / CH / f"{CH}.html").read_text()
    assert f"{CH}: 19 / 22" in page and "Subtract the maximum" in page
    source = (ROOT / "autograder" / "chapters" / f"ch{CH}" / "checks.py").read_text()
    for line in (ln.strip() for ln in source.splitlines()):
        if line.startswith(("def ", "x = ", "logits = ", "_expect(")):
            assert line not in page


def test_an_unregistered_assignment_names_the_command_that_registers_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbgrader.api import Gradebook

    course, out = tmp_path / "course", tmp_path / "graded"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    result = out / "results" / "ada" / f"{CH}.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"score": 0, "max_score": 20, "output": "", "tests": [],
                                  "extra_data": {"sha256": "0" * 64, "notebook": f"{CH}.ipynb"}}))
    command = f".venv/bin/nbgrader generate_assignment {CH} --force"
    with pytest.raises(SystemExit, match=re.escape(command)):
        record(course, out)
    assert not (course / "gradebook.db").exists()  # nothing half-made left behind
    monkeypatch.setenv("PATH", os.environ["PATH"])  # record puts this interpreter's bin/ first; undone after
    interpreter_bin_first()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "effective-pytorch") as gb:
        gb.add_assignment("08_mixed_precision")
    with pytest.raises(SystemExit, match=f"{CH} not registered .*: run `{re.escape(command)}`"):
        record(course, out)


def _result(out: Path, student: str, assignment: str, notebook: str) -> None:
    result = out / "results" / student / f"{assignment}.json"
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps({"score": 0, "max_score": 20, "output": "", "tests": [],
                                  "extra_data": {"sha256": "0" * 64, "notebook": notebook}}))


def test_a_misspelled_assignment_folder_is_named_and_the_others_are_still_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It aborted the whole gradebook step, advising to register the misspelled name; a notebook saved under
    another name ("(1)") got nbgrader's "see the above traceback" with no traceback."""
    from nbgrader.api import Gradebook

    course, out = tmp_path / "course", tmp_path / "graded"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    _result(out, "eve", "07_numerical_stabilty", f"{CH}.ipynb")
    _result(out, "ada", CH, f"{CH} (1).ipynb")
    _result(out, "cut", CH, f"{CH}.ipynb")  # cut off mid-file: nbgrader's autograde raised NotJSONError at it
    (course / "submitted" / "cut" / CH).mkdir(parents=True)
    (course / "submitted" / "cut" / CH / f"{CH}.ipynb").write_text((ROOT / "release" / CH / f"{CH}.ipynb")
                                                                   .read_text()[:2000])
    _result(out, "odd", CH, f"{CH}.ipynb")  # JSON the kit reads and nbformat refuses: it stopped the whole step
    odd = json.loads((ROOT / "release" / CH / f"{CH}.ipynb").read_text())
    odd["nbformat"] = 4.0
    del odd["cells"][0]["metadata"]
    (course / "submitted" / "odd" / CH).mkdir(parents=True)
    (course / "submitted" / "odd" / CH / f"{CH}.ipynb").write_text(json.dumps(odd))
    monkeypatch.setenv("PATH", os.environ["PATH"])
    interpreter_bin_first()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "effective-pytorch") as gb:
        gb.add_assignment(CH)
    done = record(course, out)
    assert done.recorded == 0 and len(done.failed) == 4, done.failed
    odd, eve, cut, ada = sorted(done.failed, reverse=True)
    assert odd.startswith(f"odd/{CH}: {CH}.ipynb is not a notebook that nbgrader can read (ValidationError)"), odd
    assert "did you mean 07_numerical_stability?" in eve and "rename the folder" in eve, eve
    assert f"{CH}.ipynb" in ada and "(1)" in ada and "rename it" in ada, ada
    assert cut == (f"cut/{CH}: {CH}.ipynb is not a notebook that nbgrader can read (NotJSONError); grade-all's row "
                   "gives it 0 with the reason, and it is recorded once the student hands in a readable one"), cut


def test_a_failed_resubmission_leaves_no_score_of_the_notebook_it_replaced(
        courses: dict[str, Path], tmp_path: Path) -> None:
    """nbgrader keeps the scores of the notebook handed in before when an autograde fails: ada's 24 stood in the
    gradebook (and in `nbgrader export`) for the tampered notebook that replaced her solution."""
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    shutil.copytree(courses["grade-all"], course)
    for student in set(CLASS) - {"ada", "bob"}:  # ada and one other: nbgrader would retry each tamperer
        shutil.rmtree(course / "submitted" / student)
        (course / "graded" / "results" / student / f"{CH}.json").unlink()
    path = course / "submitted" / "ada" / CH / f"{CH}.ipynb"
    nb = json.loads(path.read_text())
    _duplicates_check_cell(nb)
    path.write_text(json.dumps(nb))
    done = _run(course, "autograder", "grade-all", ".", "--gradebook", "--workers", "2")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the scores recorded for the notebook handed in before were cleared, and it needs grading by hand" \
           in " ".join(done.stderr.split()), done.stderr
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grades = {g.name: (g.auto_score, g.extra_credit, g.needs_manual_grade)
                  for g in gb.find_submission_notebook(CH, CH, "ada").grades}
        assert grades == {g: (None, None, True) for g in HONEST_MISTAKE}, grades
    assert "0 submissions recorded by nbgrader autograde, 1 already recorded, 1 failed" in done.stdout, done.stdout


RESUBMITTED = datetime(2026, 11, 21, 9, 30)


def _resubmits(course: Path, student: str) -> None:
    """`student` hands in a changed notebook (the solution) after being graded by hand: +2 extra credit on
    check_softmax and a comment on the softmax answer cell, as in the course week's walk. `nbgrader collect`
    brings the new notebook's timestamp.txt with it: nbgrader then no longer counts the student as autograded
    (the gradebook's timestamp is the old one), and grade-all recorded the new notebook over the manual grades
    without a word, the hold never reached (the browser test found it, tests/e2e/test_regrading.py)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.find_grade("check_softmax", CH, CH, student).manual_score = None  # another test's
        gb.find_grade("check_softmax", CH, CH, student).extra_credit = 2.0
        gb.find_comment("softmax", CH, CH, student).manual_comment = "Use the max along dim."
        gb.db.commit()
    write_submission(course / "submitted" / student / CH, CH, solution_cells(CH))  # every task right
    (course / "submitted" / student / CH / "timestamp.txt").write_text(f"{RESUBMITTED} UTC")


def _bob(course: Path) -> tuple[float, float | None, str | None]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return (gb.find_submission(CH, "bob").score, gb.find_grade("check_softmax", CH, CH, "bob").extra_credit,
                gb.find_comment("softmax", CH, CH, "bob").manual_comment)


def _bob_submitted(course: Path) -> datetime:
    """The time of bob's notebook that the gradebook's record was made from (Formgrader's Timestamp)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return gb.find_submission(CH, "bob").timestamp


@pytest.mark.parametrize("choice", ["keep", "clear"])
def test_a_resubmission_over_manual_grades_waits_for_the_instructors_choice(
        courses: dict[str, Path], tmp_path: Path, choice: str) -> None:
    """bo's +2 and comment, given to his first notebook, stayed on the new one without a word: 22 / 20 in
    Formgrader and grades.csv. Now the new notebook waits, named, until the instructor says keep or clear."""
    course = tmp_path / "course"
    shutil.copytree(courses["grade-all"], course)
    for student in set(CLASS) - {"ada", "bob", "cid"}:
        shutil.rmtree(course / "submitted" / student)
        (course / "graded" / "results" / student / f"{CH}.json").unlink()
    _resubmits(course, "bob")
    cid = course / "submitted" / "cid" / CH / f"{CH}.ipynb"  # saved by an older Jupyter: cells without ids
    nb = json.loads(cid.read_text())
    for cell in nb["cells"]:
        del cell["id"]
    cid.write_text(json.dumps(nb))
    done = _run(course, "autograder", "grade-all", ".", "--gradebook", "--workers", "1")
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 3, said
    assert "MissingIDFieldWarning" not in said and "1 submissions recorded by nbgrader autograde" in said, said
    # the class's folders hold timestamp.txt only, as if copied in by hand: Formgrader's Release Feedback fails
    assert "1 submissions were copied into submitted/ by hand" in said and f"cid/{CH}" in said, said
    assert "1 changed notebooks not recorded" in said and "--manual-grades keep" in said, said
    assert f"bob/{CH}: check_softmax +2 extra credit, a comment on softmax" in said, said
    assert _bob(course) == (21.0, 2.0, "Use the max along dim.")  # the old notebook's record, untouched
    assert _bob_submitted(course) == SUBMITTED

    done = _run(course, "autograder", "grade-all", ".", "--gradebook", "--workers", "1", "--manual-grades", choice)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, said
    assert "1 submissions recorded by nbgrader autograde, 2 already recorded" in said, said
    assert _bob_submitted(course) == RESUBMITTED
    if choice == "clear":
        assert f"cleared for 1 changed notebooks: bob/{CH}: check_softmax +2 extra credit" in said, said
        assert _bob(course) == (22.0, None, None)
        assert "above the maximum" not in said, said
        return
    assert f"kept for 1 changed notebooks (review them in Formgrader): bob/{CH}" in said, said
    assert _bob(course) == (24.0, 2.0, "Use the max along dim.")
    assert f"1 scores in the gradebook are above the maximum, raised by manual grading in Formgrader (check they " \
           f"are meant): bob/{CH}: 24 / 22 (check_softmax: +2 extra credit)" in said, said
    exported = _run(course, "autograder", "export")
    assert exported.returncode == 0, exported.stderr
    assert f"bob/{CH}: 24 / 22" in exported.stderr, exported.stderr
    from autograder.course.report import analyse

    flagged = {f.student: f.reasons for f in analyse(course / "graded", course / "gradebook.db").flagged}
    assert any(r.startswith("above the maximum in the gradebook: 24 / 22") for r in flagged["bob"]), flagged


def test_a_gradebook_registered_with_other_points_than_the_checks_records_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """check_softmax 6 -> 8 in source/ and `generate_assignment --force`, past `build`: the gradebook's maximum
    became 24 while the kit's checks carry 22, and ann's full-marks softmax read 6 / 8."""
    from nbgrader.api import Gradebook

    course, out = tmp_path / "course", tmp_path / "graded"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    _result(out, "ann", CH, f"{CH}.ipynb")
    monkeypatch.setenv("PATH", os.environ["PATH"])
    interpreter_bin_first()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "effective-pytorch") as gb:
        gb.add_assignment(CH)
        gb.add_notebook(CH, CH)
        for cell, points in (("check_softmax", 8), ("check_softmax_cross_entropy", 6), ("check_log_softmax", 5),
                             ("check_robust_loss", 5)):
            gb.add_grade_cell(cell, CH, CH, max_score=points, cell_type="code")
    with pytest.raises(SystemExit, match=f"{CH} is worth 24 points in the gradebook and 22 in the kit's checks: the "
                                         "source notebook's check cells were changed after `build`"):
        record(course, out)


def test_hints_keep_their_disclosure_marker_in_formgrader_and_the_feedback(courses: dict[str, Path]) -> None:
    """Formgrader and the feedback page style the notebook with Bootstrap 3, whose summary {display: block} hid the
    triangle: the lesson's hints read as bare lines "Hint 1", "Hint 2", "Hint 3"."""
    from autograder.course.nbgrader.autograde import SUMMARY_SHOWN

    nb = json.loads((courses["grade-all"] / "autograded" / "bob" / CH / f"{CH}.ipynb").read_text())
    lessons = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    hints = [s for s in lessons if "Hint 1" in s]
    assert hints and all(SUMMARY_SHOWN in s and "<summary>" not in s for s in hints)


# -- the course's warm judge (autograder/course/nbgrader/warm.py) across nbgrader processes ----------------------

WARM = ["--KitAutograde.warm_seconds=120", "--KitAutograde.workers=2"]  # 2 judges on any machine: the warm path
HONEST = ["ada", "bob", "cid"]


@pytest.fixture(scope="module")
def warm_course(courses: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of grade-all's course (graded/results: grade-all's results) with its honest students and nothing
    autograded; its warm judge stopped at the end."""
    from autograder.course.nbgrader import warm

    course = tmp_path_factory.mktemp("warm") / "course"
    shutil.copytree(courses["grade-all"], course)
    shutil.rmtree(course / "autograded")
    for student in set(CLASS) - set(HONEST):
        shutil.rmtree(course / "submitted" / student)
    yield course
    warm.stop(course)


def _as_grade_all_scored(course: Path, grade_all: Path) -> None:
    """The gradebook's auto scores and the check cells' outputs are those of grade-all's results of the same notebooks
    (the gradebook was copied with the manual grades earlier tests gave: not compared)."""
    from nbgrader.api import Gradebook

    def auto(db: Path, student: str) -> dict[str, float]:
        with Gradebook(f"sqlite:///{db}") as gb:
            return {g.name: g.auto_score for g in gb.find_submission_notebook(CH, CH, student).grades}

    for student in HONEST:
        graded = json.loads((grade_all / "graded" / "results" / student / f"{CH}.json").read_text())
        scores = auto(course / "gradebook.db", student)
        assert sum(scores.values()) == graded["score"], student
        assert scores == auto(grade_all / "gradebook.db", student), student
        assert _check_outputs(course, student) == _check_outputs(grade_all, student), student


def test_a_warm_judge_serves_consecutive_nbgrader_processes(warm_course: Path, courses: dict[str, Path]) -> None:
    """`nbgrader autograde <assignment>`, once per assignment: the first process starts the course's warm judge, the
    next finds it warm and pays no judge start, its submissions graded ahead meanwhile when grade_course_ahead is set
    (no autograded copy records them); the scores are grade-all's."""
    first = _run(warm_course, "nbgrader", "autograde", CH, "--student=ada", "--force", *WARM,
                 "--KitAutograde.grade_course_ahead=True")
    assert first.returncode == 0, first.stderr
    started = re.search(r"the warm judge of this course \(pid (\d+), 2 judge processes\) started: 1 submissions",
                        first.stderr)
    assert started and f"ada/{CH} graded by the warm judge of this course" in first.stderr, first.stderr
    second = _run(warm_course, "nbgrader", "autograde", CH, "--force", *WARM)
    assert second.returncode == 0, second.stderr
    assert f"the warm judge of this course (pid {started[1]}, 2 judge processes) found warm: 3 submissions handed " \
           "to it" in second.stderr, second.stderr
    assert all(f"{s}/{CH} graded by the warm judge of this course" in second.stderr for s in HONEST), second.stderr
    early = re.findall(rf"(\w+)/{CH} graded by the warm judge of this course before this run asked", second.stderr)
    assert sorted(early) == ["bob", "cid"], second.stderr  # ada's autograded copy records her notebook: asked again
    assert "graded ahead by a judge process" not in second.stderr
    _as_grade_all_scored(warm_course, courses["grade-all"])

    # by default the warm judge grades only what a run hands it: cid, whom no autograded copy records, waits
    shutil.rmtree(warm_course / "autograded" / "cid")
    assert _run(warm_course, "nbgrader", "autograde", CH, "--student=ada", "--force", *WARM).returncode == 0
    third = _run(warm_course, "nbgrader", "autograde", CH, "--student=cid", *WARM)
    assert f"cid/{CH} graded by the warm judge of this course" in third.stderr, third.stderr
    assert "before this run asked" not in third.stderr, third.stderr


def test_a_warm_judge_killed_mid_run_leaves_the_rest_to_nbgrader(warm_course: Path,
                                                                 courses: dict[str, Path]) -> None:
    from autograder.course.nbgrader import warm

    shutil.rmtree(warm_course / "autograded", ignore_errors=True)
    run = subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", CH, "--force", *WARM], cwd=warm_course,
                           env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    assert run.stderr is not None
    said = []
    for line in run.stderr:
        said.append(line)
        if "graded by the warm judge of this course" in line:
            break
    pid = warm.status(warm_course)
    assert pid is not None, "".join(said)
    os.kill(pid["pid"], signal.SIGKILL)
    said += run.stderr.readlines()
    assert run.wait(timeout=600) == 0, "".join(said)
    log = "".join(said)
    assert "the warm judge of this course failed (it is gone" in log, log
    here = [s for s in HONEST if f"{s}/{CH} graded by the warm judge" not in log]
    assert here and all(f"kit: {s}/{CH}: check_softmax" in log for s in HONEST), log
    left = re.search(rf"/{CH} and the (\d+) submissions left of this run are graded in nbgrader's", log)
    assert left and int(left[1]) == len(here) - 1, log
    _as_grade_all_scored(warm_course, courses["grade-all"])
    deadline = time.monotonic() + 30  # its judge processes (and their zygotes) go with it
    while _group(pid["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group(pid["pid"]), "the warm judge's processes outlived it"


def _group(pgid: int) -> list[int]:
    """The processes of process group `pgid` that run (not zombies: a container's pid 1 may reap none)."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(stat_file.parent.name))
    return found
