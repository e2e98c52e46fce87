"""What the kit writes from a student's submission (the feedback page, the copies of timestamp.txt and
submission_secret.txt beside it, the answers kept for the similarity step) is never more readable than the
submission was, nor than nbgrader's own generate_feedback makes its files (0644, never executable or writable by
others).

A student's private submission (a folder of mode 0700 as `nbgrader collect` from a private exchange keeps it, or
a notebook of mode 0600) was copied world-readable before: feedback/ at 0644, graded/answers at 0644."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from autograder.course.batch import _write_atomic, discover, result_path
from autograder.judging.results import Results
from tests.kit import solved

CH = "07_numerical_stability"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    before = os.umask(0o022)
    yield
    os.umask(before)


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """ada's submission is readable by all; eve's folder is hers alone (0700); mal's notebook and files are hers
    alone (0600); kim's files are executable and writable by all (0777)."""
    course = tmp_path / "course"
    for student in ("ada", "eve", "mal", "kim"):
        folder = course / "submitted" / student / CH
        folder.mkdir(parents=True)
        solved(folder, CH)
        (folder / "timestamp.txt").write_text("2026-01-01 10:00:00 UTC")
        (folder / "submission_secret.txt").write_text("s3cret")
    os.chmod(course / "submitted" / "eve", 0o700)
    for path in (course / "submitted" / "mal" / CH).iterdir():
        os.chmod(path, 0o600)
    for path in (course / "submitted" / "kim" / CH).iterdir():
        os.chmod(path, 0o777)
    return course


def _result(student: str) -> Results:
    return cast(Results, {"score": 1.0, "max_score": 1.0, "execution_time": 0.0, "output": "", "tests": [],
                          "visibility": "visible",
                          "extra_data": {"student": student, "assignment": CH, "notebook": f"{CH}.ipynb"}})


EXPECTED = {"ada": 0o644, "eve": 0o600, "mal": 0o600, "kim": 0o644}


def test_feedback_is_no_more_readable_than_the_submission(course: Path) -> None:
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import write_feedback

    assert write_feedback(course, [_result(s) for s in EXPECTED]).written == len(EXPECTED)
    for student, mode in EXPECTED.items():
        folder = course / "feedback" / student / CH
        for name in (f"{CH}.html", "timestamp.txt", "submission_secret.txt"):
            assert _mode(folder / name) == mode, (student, name, oct(_mode(folder / name)))


def test_a_page_rewritten_for_a_submission_made_private_is_private(course: Path) -> None:
    pytest.importorskip("nbgrader")
    from autograder.course.nbgrader.gradebook import write_feedback

    write_feedback(course, [_result("ada")])
    os.chmod(course / "submitted" / "ada", 0o700)
    write_feedback(course, [_result("ada")])
    assert _mode(course / "feedback" / "ada" / CH / f"{CH}.html") == 0o600


def test_kept_answers_are_no_more_readable_than_the_submission(course: Path, tmp_path: Path) -> None:
    from autograder.course.similarity import save_answers

    graded = tmp_path / "graded"
    for job in discover(course):
        _write_atomic(result_path(graded, job), json.dumps(_result(job.student)))
    assert save_answers(course, graded) == len(EXPECTED)
    for student, mode in EXPECTED.items():
        path = graded / "answers" / student / f"{CH}.json"
        assert _mode(path) == mode, (student, oct(_mode(path)))


def test_the_class_report_holding_a_private_students_code_is_private(course: Path, tmp_path: Path) -> None:
    """The report's similarity section shows the answers of pairs of students side by side."""
    from autograder.course.report import write_report
    from autograder.course.similarity import save_answers

    graded = tmp_path / "graded"
    for job in discover(course):
        _write_atomic(result_path(graded, job), json.dumps(_result(job.student)))
    save_answers(course, graded)
    assert _mode(write_report(graded)) == 0o600
    for student in ("eve", "mal"):
        (graded / "answers" / student / f"{CH}.json").unlink()
    assert _mode(write_report(graded)) == 0o644
