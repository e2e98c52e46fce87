"""The instructor guide (docs/instructors.md) works as printed, in order, on a fresh copy of the course.

Every command in the guide's bash blocks is run in a copy of the repository's files (with the
kit's .venv linked in), from a shell where .venv is not activated, with `<id>` = chapter 07;
the few that cannot run here are named with the reason. Between the steps a student fetches
the release through nbgrader's exchange, validates and submits it (docs/students.md's commands),
and the instructor adjusts a score as Formgrader does. The submission forgets the max
subtraction in softmax: the kit gives it 19 / 22 (three checks of softmax's six fail), stock nbgrader 16 / 22.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course.cases import mutant
from tests.kit import ROOT, solution_cells

pytestmark = pytest.mark.slow  # minutes in all: tests/conftest.py starts it first

CH = "07_numerical_stability"
NO_MAX = mutant(CH, "no max subtraction").cells["softmax"]
INSTRUCTORS = (ROOT / "docs" / "instructors.md").read_text()
STUDENTS = (ROOT / "docs" / "students.md").read_text()
SKIPPED = {  # command prefix -> why this test does not run it
    "make setup": "the copy uses the kit's own .venv, linked in; `make test` has just set it up",
    ".venv/bin/jupyter lab": "interactive: the browser test drives JupyterLab and Formgrader",
    ".venv/bin/nbgrader zip_collect": "needs your LMS's file-name pattern in nbgrader_config.py",
    "sudo mkdir -p /srv/nbgrader/exchange": "needs root: the test makes its exchange in a scratch folder",
    "echo 'c.Exchange.root": "the test names its scratch exchange in the Jupyter config instead",
}


def _section(title: str) -> str:
    start = INSTRUCTORS.index(f"\n## {title}\n")
    end = INSTRUCTORS.find("\n## ", start + 1)
    return INSTRUCTORS[start:end if end > 0 else None]


def _commands(section: str) -> list[str]:
    lines = [ln.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S) for ln in block.splitlines()]
    return [ln.replace("<id>", CH) for ln in lines if ln and not ln.startswith("#")]


def _copy_course(dest: Path) -> None:
    """The repository's files as a clone of this working tree would have them, and the kit's .venv."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    (dest / ".venv").symlink_to(ROOT / ".venv")


def _shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _gradebook_scores(course: Path, student: str) -> dict[str, tuple[float | None, float | None]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {g.name: (g.auto_score, g.manual_score)
                for g in gb.find_submission_notebook(CH, CH, student).grades}


def _answer(notebook: Path, cells: dict[str, str]) -> None:
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell["source"] = cells[grade_id]
    notebook.write_text(json.dumps(nb, indent=1))


def _student_turn(tmp: Path, env: dict[str, str]) -> None:
    """The student guide: fetch, answer, validate, submit, with the student's own `nbgrader`."""
    student = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}
    home = tmp / "student"
    home.mkdir()
    guide = STUDENTS  # the whole page is the student guide
    fetch, validate = _commands(guide)
    submit = f"nbgrader submit {CH} --course effective-pytorch"  # printed in the text
    assert fetch == f"nbgrader fetch_assignment {CH} --course effective-pytorch", fetch
    assert submit.replace(CH, "<id>") in " ".join(guide.split())
    done = _shell(fetch, home, student)  # as printed: the student's own settings name no course
    assert done.returncode == 0, done.stderr
    notebook = home / CH / f"{CH}.ipynb"
    code = solution_cells(CH)
    _answer(notebook, {**code, "softmax": NO_MAX})

    # nbgrader validate says the visible check fails, yet exits 0; the guide's line tests the text instead
    done = _shell(f"nbgrader validate {CH}.ipynb", notebook.parent, student)
    # one cell: the softmax check
    assert done.returncode == 0 and "VALIDATION FAILED ON 1 CELL(S)!" in done.stdout, done.stdout + done.stderr
    validate_cmd, check = validate.split(" | ", 1)
    assert validate_cmd == f"nbgrader validate {CH}.ipynb"
    assert subprocess.run(["bash", "-c", check], input=done.stdout, capture_output=True, text=True).stdout == ""
    solved = tmp / "solved"
    solved.mkdir()
    shutil.copy(notebook, solved / notebook.name)
    _answer(solved / notebook.name, code)
    done = _shell(validate, solved, student)
    assert done.stdout == "passed\n", done.stdout + done.stderr

    done = _shell(submit, home, student)
    assert done.returncode == 0, done.stderr


def test_every_instructor_command_works_as_printed(tmp_path: Path) -> None:
    commands = _commands(_section("The course, step by step"))
    for needed in (f".venv/bin/python -m autograder build {CH}", f".venv/bin/nbgrader generate_assignment {CH} --force",
                   f".venv/bin/nbgrader autograde {CH}", ".venv/bin/python -m autograder grade-all . --gradebook",
                   f".venv/bin/nbgrader generate_feedback {CH}", ".venv/bin/nbgrader export"):
        assert needed in commands, f"the instructor guide no longer shows `{needed}`"
    course, exchange, config = tmp_path / "course", tmp_path / "exchange", tmp_path / "jupyter"
    course.mkdir()
    _copy_course(course)
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)
    config.mkdir()
    (config / "nbgrader_config.py").write_text(  # what a course's JupyterHub sets for everyone
        f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n")
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "AUTOGRADER_SECRET": "instructor-guide-test",
           "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)}
    student = pwd.getpwuid(os.getuid()).pw_name  # who submits through the exchange

    skipped = []
    for command in commands:
        if any(command.startswith(prefix) for prefix in SKIPPED):
            skipped.append(command)
            continue
        if command.startswith(".venv/bin/nbgrader collect"):
            _student_turn(tmp_path, env)
        if command.startswith(".venv/bin/nbgrader generate_feedback"):  # the instructor's review in Formgrader
            from nbgrader.api import Gradebook

            with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
                gb.find_grade("check_softmax", CH, CH, student).manual_score = 4.5
                gb.find_comment("softmax", CH, CH, student).manual_comment = "Half of the overflow case."
                gb.db.commit()
        if command.startswith(".venv/bin/nbgrader db student import"):  # the class list, from the LMS
            (course / "roster.csv").write_text(f"id,first_name,last_name,email\n{student},Ada,Lovelace,\n")
        done = _shell(command, course, env)
        assert done.returncode == 0, f"`{command}` failed:\n{done.stdout}\n{done.stderr}"

        if command.startswith(".venv/bin/nbgrader generate_assignment"):  # made with alembic_version
            import sqlite3

            with sqlite3.connect(course / "gradebook.db") as con:
                assert con.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
        if command.startswith(".venv/bin/nbgrader autograde"):
            assert _gradebook_scores(course, student) == {"check_softmax": (3.0, None),
                                                          "check_softmax_cross_entropy": (6.0, None),
                                                          "check_log_softmax": (5.0, None),
                                                          "check_robust_loss": (5.0, None)}
        if command.startswith(".venv/bin/python -m autograder grade-all"):
            assert "0 submissions recorded by nbgrader autograde, 1 already recorded" in done.stdout, done.stdout
            assert "None, None" not in done.stdout, "the roster imported in step 4 names the student"
            result = json.loads((course / "graded" / "results" / student / f"{CH}.json").read_text())
            assert (result["score"], result["max_score"]) == (19.0, 22.0)
        if command.startswith(".venv/bin/nbgrader generate_feedback"):
            page = (course / "feedback" / student / CH / f"{CH}.html").read_text()
            assert "Subtract the maximum" in page and "Half of the overflow case." in page
        if command.startswith(".venv/bin/nbgrader release_feedback"):
            assert list((exchange / "effective-pytorch" / "feedback").glob("*.html"))
        if command.startswith(".venv/bin/nbgrader export"):
            (row,) = csv.DictReader((course / "grades.csv").open())
            assert (row["student_id"], float(row["raw_score"]), float(row["max_score"])) == (student, 20.5, 22.0)
    assert {p for p in SKIPPED if any(c.startswith(p) for c in skipped)} == set(SKIPPED), "a stale skip rule"
