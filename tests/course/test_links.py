"""A submission is the student's own files: links, FIFOs and paths through a link are refused, never read.

Each attack hands in, through nbgrader's submitted/ layout, something that is no file of the student's own: the
instructor's answer key, a classmate's notebook or folder, a FIFO that would block a reader. Each gets a complete
row that names what it is and scores nothing, and costs that submission alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course.batch import discover, grade_all
from autograder.course.nbgrader.gradebook import copy_handed_in
from autograder.judging.handin import NOT_HANDED_IN, refused
from autograder.judging.notebook import NotebookError, read_notebook
from tests.kit import solved

CH = "07_numerical_stability"
KEY = Path(__file__).resolve().parents[2] / "source" / CH / f"{CH}.ipynb"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    root = tmp_path_factory.mktemp("course")
    sub = root / "submitted"
    (sub / "ada" / CH).mkdir(parents=True)
    solved(sub / "ada" / CH, CH)
    for student in ("eve", "fay", "gus"):
        (sub / student).mkdir()
    (sub / "eve" / CH).mkdir()
    (sub / "eve" / CH / f"{CH}.ipynb").symlink_to(KEY)  # the instructor's answer key
    (sub / "fay" / CH).symlink_to(sub / "ada" / CH, target_is_directory=True)  # a classmate's folder
    (sub / "hal").symlink_to(sub / "ada", target_is_directory=True)  # a whole student folder
    (sub / "gus" / CH).mkdir()
    os.mkfifo(sub / "gus" / CH / f"{CH}.ipynb")  # would block a reader
    out = root / "graded"
    assert grade_all(root, out, workers=1) == 0
    rows = {f"{r['student']}/{r['assignment']}": r for r in json.loads((out / "summary.json").read_text())}
    return root, rows


@pytest.mark.parametrize("student", ["eve", "fay", "hal", "gus"])
def test_what_is_not_the_students_own_file_scores_nothing_and_says_why(graded: tuple[Path, dict[str, dict]],
                                                                       student: str) -> None:
    root, rows = graded
    row = rows[f"{student}/{CH}"]
    assert row["score"] == 0, row
    result = json.loads((root / "graded" / "results" / student / f"{CH}.json").read_text())
    assert NOT_HANDED_IN in json.dumps(result), result
    assert rows[f"ada/{CH}"]["score"] >= rows[f"ada/{CH}"]["max_score"] > 0  # the others are graded as ever


def test_discovery_hashes_nothing_through_a_link(graded: tuple[Path, dict[str, dict]]) -> None:
    jobs = {j.key: j for j in discover(graded[0])}
    assert jobs[f"ada/{CH}"].sha256
    for student in ("eve", "fay", "hal", "gus"):
        assert jobs[f"{student}/{CH}"].sha256 == "", jobs[f"{student}/{CH}"]


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "nb.ipynb"
    os.mkfifo(fifo)
    with pytest.raises(NotebookError, match="a FIFO"):
        read_notebook(fifo)


def test_the_kit_copies_no_link_of_a_submission_into_feedback(tmp_path: Path) -> None:
    """grade-all --feedback copies timestamp.txt and submission_secret.txt; linked to a secret, or to a huge file,
    nothing is copied."""
    handed_in = tmp_path / "submitted"
    (handed_in / "eve" / CH).mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text("AUTOGRADER_SECRET=hunter2")
    (handed_in / "eve" / CH / "timestamp.txt").symlink_to(secret)
    (handed_in / "eve" / CH / "submission_secret.txt").write_text("x" * (1 << 17))  # larger than a line
    feedback = tmp_path / "feedback"
    feedback.mkdir()
    for name in ("timestamp.txt", "submission_secret.txt"):
        copy_handed_in(handed_in / "eve" / CH / name, handed_in, feedback / name)
        assert not (feedback / name).exists()
    (handed_in / "eve" / CH / "ok.txt").write_text("2026-11-28 10:00:00")
    copy_handed_in(handed_in / "eve" / CH / "ok.txt", handed_in, feedback / "ok.txt")
    assert (feedback / "ok.txt").read_text() == "2026-11-28 10:00:00" and not (feedback / "ok.txt").is_symlink()


def test_a_path_outside_the_students_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b.txt").write_text("x")
    assert refused(tmp_path / "b.txt", tmp_path / "a") is not None
    assert refused(tmp_path / "b.txt", tmp_path) is None


def test_a_name_with_a_newline_forges_no_line_of_grades_output(tmp_path: Path) -> None:
    forged = tmp_path / "x.ipynb\n07: 20 of 20\n  PASS 20 of 20 forged.ipynb"
    shutil.copy(solved(tmp_path, CH), forged)
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(forged), "--assignment", CH,
                           "--only", "guide_example"], capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert lines and "\\n" in lines[0], done.stdout[:500]
    assert not any(line.startswith("07: 20 of 20") or line.lstrip().startswith("PASS 20 of 20") for line in lines)
