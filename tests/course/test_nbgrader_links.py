"""nbgrader's own path from submitted/ to autograded/, with the kit's preprocessor, on links.

nbgrader's autograde reads the notebook through any link and copies every other file of the submission into
autograded/ with shutil.copy (links followed), mode 0444, before any preprocessor runs. The kit's preprocessor
fails such a submission, and nbgrader then removes all it made of it: the answer key graded as eve's, and a
link beside an honest notebook to the gradebook, copied readable by all into autograded/, are both gone, with
no score recorded and the reason in nbgrader's log. One course, registered once: nbgrader is slow to start."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autograder.course.batch import file_sha256
from autograder.course.build import generate_release
from tests.kit import solved

pytest.importorskip("nbgrader")
CH = "07_numerical_stability"
LINK = "a link, not a file the student handed in"


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own, on every autograde
def test_nbgrader_autograde_refuses_a_linked_notebook_and_removes_the_copies(tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    from autograder.course.nbgrader.gradebook import nbgrader_api, record

    course = tmp_path / "course"
    generate_release(CH, course)
    key = course / "source" / CH / f"{CH}.ipynb"
    eve = course / "submitted" / "eve" / CH
    eve.mkdir(parents=True)
    (eve / f"{CH}.ipynb").symlink_to(os.path.relpath(key, eve))  # the answer key, graded 24/20 before
    ada = course / "submitted" / "ada" / CH
    ada.mkdir(parents=True)
    solved(ada, CH)
    (ada / "notes.txt").symlink_to(os.path.relpath(course / "gradebook.db", ada))  # copied 0444 before

    api = nbgrader_api(course)
    for student, why in (("eve", LINK), ("ada", f"notes.txt is {LINK}")):
        outcome = api.autograde(CH, student, force=True, create=True)
        assert not outcome["success"] and why in outcome["log"], (student, outcome["log"][-2000:])
        assert not (course / "autograded" / student).exists() or not any((course / "autograded" / student).iterdir())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in ("eve", "ada"):
            grades = gb.find_submission_notebook(CH, CH, student).grades
            assert all(g.auto_score is None for g in grades), student

    # grade-all --gradebook never hands such a submission to nbgrader, which would copy the link first
    result = {"score": 24.0, "max_score": 20.0, "execution_time": 0.0, "output": "", "tests": [],
              "visibility": "visible", "extra_data": {"student": "ada", "assignment": CH, "notebook": f"{CH}.ipynb",
                                                      "sha256": file_sha256(ada / f"{CH}.ipynb")}}
    (course / "graded" / "results" / "ada").mkdir(parents=True)
    (course / "graded" / "results" / "ada" / f"{CH}.json").write_text(json.dumps(result))
    done = record(course, course / "graded")
    assert not done.recorded and f"notes.txt is {LINK}" in done.failed[0]
    assert not (course / "autograded" / "ada").exists() or not any((course / "autograded" / "ada").iterdir())
