"""The nbgrader course workflow with this kit: generate, submit, grade, gradebook, export, feedback.

For honest submissions (each task either solved or left as the stub) this
grader and `nbgrader autograde` give the same scores.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.batch import grade_all
from autograder.build import generate_release
from autograder.gradebook import record, write_feedback
from tests.kit import solution_code, write_submission

CH = "07_numerical_stability"
STUDENTS = {"ada": ["softmax", "softmax_cross_entropy"], "bea": [], "cid": ["softmax"]}


def _nbgrader(course: Path, *args: str) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def _scores(course: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s: gb.find_submission(CH, s).score for s in STUDENTS}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    course = tmp_path_factory.mktemp("course")
    generate_release(CH, course)
    code = solution_code(CH)
    for student, solved_tasks in STUDENTS.items():
        folder = course / "submitted" / student / CH
        folder.mkdir(parents=True)
        write_submission(folder, CH, {t: code[t] for t in solved_tasks})
        (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    return course


@pytest.fixture(scope="module")
def results(course: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("graded")
    grade_all(course, out, workers=2)
    return [json.loads(p.read_text()) for p in sorted((out / "results").glob("*/*.json"))]


def test_kit_and_nbgrader_autograde_agree_and_export_works(course: Path, results: list[dict], tmp_path: Path) -> None:
    _nbgrader(course, "autograde", CH, "--force")
    theirs = _scores(course)
    assert theirs == {"ada": 20, "bea": 0, "cid": 10}
    assert record(course, results) == 3
    assert _scores(course) == theirs
    _nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))
    rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert rows == theirs


def test_feedback_shows_names_points_and_messages_but_no_check_code(course: Path, results: list[dict]) -> None:
    write_feedback(course, results)
    page = (course / "feedback" / "cid" / CH / f"{CH}.html").read_text()
    assert "on very different scales each get their own maximum" in page
    assert "10 / 20" in page and "not implemented" in page
    source = (Path(__file__).parent.parent / "autograder" / "checks" / f"ch{CH}.py").read_text()
    for line in (ln.strip() for ln in source.splitlines()):
        if line.startswith(("def ", "x = ", "logits = ", "_expect(")):
            assert line not in page
