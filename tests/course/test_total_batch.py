"""A total batch: a malformed notebook is a clear zero, and grade-all never loses a row.

Whatever goes wrong while grading one submission (a malformed notebook, an
exception in the grader, a worker process killed) ends as a row and a result
file; grader errors are counted apart from scores, retried on resume, and make
grade-all exit 3.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autograder import CHECKOUT as ROOT  # not tests.kit, which imports torch
from autograder import cli
from autograder.course import batch
from autograder.course.batch import Job, grade_all, result_path
from autograder.judging.notebook import MAX_NOTEBOOK_BYTES, NotebookError, load_submission
from autograder.judging.results import Results

# No torch at the top: the pool's spawned workers import this module for fake_grade.
CH = "07_numerical_stability"
RELEASE = ROOT / "release" / CH / f"{CH}.ipynb"


def _cell(nb: dict[str, Any], grade_id: str = "softmax") -> dict[str, Any]:
    return next(c for c in nb["cells"] if isinstance(c, dict)
                and c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    """Set nb[path...] = value; a path starting with "softmax" starts at that answer cell."""

    def edit(nb: dict[str, Any]) -> None:
        target: Any = _cell(nb) if path[0] == "softmax" else nb
        for key in path[1:-1] if path[0] == "softmax" else path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a cell that is a string": (lambda nb: nb["cells"].insert(0, "print('hi')"), "cell 1 is not a JSON object"),
    "a cell that is null": (lambda nb: nb["cells"].append(None), "is not a JSON object"),
    "cell metadata a list": (_set(["softmax", "metadata"], []), "metadata"),
    "nbgrader metadata a string": (_set(["softmax", "metadata", "nbgrader"], "softmax"), "nbgrader"),
    "grade_id an int": (_set(["softmax", "metadata", "nbgrader", "grade_id"], 7), "grade_id"),
    "grade_id a list": (_set(["softmax", "metadata", "nbgrader", "grade_id"], ["softmax"]), "grade_id"),
    "source with non-text lines": (_set(["softmax", "source"], ["def softmax(x):\n", 3]), "source"),
    "source a dict": (_set(["softmax", "source"], {"code": "x"}), "source"),
    "cell_type a list": (_set(["softmax", "cell_type"], ["code"]), "cell_type"),
    "notebook metadata a list": (_set(["metadata"], []), "metadata"),
    "kit metadata a string": (_set(["metadata", "kit"], CH), "kit"),
    "kit assignment a list": (_set(["metadata", "kit"], {"assignment": [CH]}), "kit"),
    "nbformat missing": (lambda nb: nb.pop("nbformat"), "nbformat"),
    "huge answer cell": (_set(["softmax", "source"], "x = 1\n" * 600_000), "answer cells"),
}


@pytest.fixture(scope="module")
def release() -> dict[str, Any]:
    return json.loads(RELEASE.read_text())


def _malformed(tmp_path: Path, release: dict[str, Any], case: str) -> Path:
    nb = json.loads(json.dumps(release))
    MALFORMED[case][0](nb)
    path = tmp_path / f"{CH}.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_notebook_is_a_clear_message(tmp_path: Path, release: dict[str, Any], case: str) -> None:
    sub = load_submission(_malformed(tmp_path, release, case))
    assert sub.error is not None and MALFORMED[case][1] in sub.error, sub.error
    assert sub.cells == []


def test_deeply_nested_json_is_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / f"{CH}.ipynb"
    path.write_text('{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert "nested too deeply" in (load_submission(path).error or "")


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / f"{CH}.ipynb"
    with path.open("wb") as f:
        f.truncate(MAX_NOTEBOOK_BYTES + 1)  # sparse: costs no disk
    assert "larger than 50 MB" in (load_submission(path).error or "")


def test_an_unknown_assignment_in_a_malformed_notebook_is_still_a_notebook_error(tmp_path: Path) -> None:
    path = tmp_path / "homework.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "metadata": [], "cells": [1]}))
    with pytest.raises(NotebookError, match="Cannot tell which assignment"):
        load_submission(path)


@pytest.mark.parametrize("case", ["a cell that is a string", "grade_id a list", "kit assignment a list"])
def test_grading_a_malformed_notebook_gives_a_complete_zero(tmp_path: Path, release: dict[str, Any],
                                                            case: str) -> None:
    from tests.kit import check_count, grade_fast

    g = grade_fast(_malformed(tmp_path, release, case))
    assert g.score == 0 and g.max_score == 22 and len(g.results) == check_count(CH)
    assert all(MALFORMED[case][1] in r.output for r in g.results)


def test_the_grade_command_on_a_malformed_notebook_prints_the_message(
        tmp_path: Path, release: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    path = _malformed(tmp_path, release, "source a dict")
    assert cli.main(["grade", str(path), "--out", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "0 / 22" in out and "source" in out
    assert json.loads((tmp_path / "r.json").read_text())["max_score"] == 22


# -- grade-all: grader errors ------------------------------------------------------------


def _rows(out: Path) -> dict[str, dict[str, Any]]:
    return {r["student"]: r for r in json.loads((out / "summary.json").read_text())}


def test_any_exception_while_grading_is_a_grader_error_row_retried_on_resume(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import autograder.judging.judge

    path = tmp_path / f"{CH}.ipynb"
    path.write_text(RELEASE.read_text())
    job = Job("ada", CH, str(path), batch.file_sha256(path))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a bug in the kit")

    monkeypatch.setattr(autograder.judging.judge, "grade", broken)
    row = batch.grade_job(job, str(tmp_path / "out"), "cpu", False)
    assert row["status"] == "grader-error" and "KeyError" in row["notes"]
    result = json.loads(result_path(tmp_path / "out", job).read_text())
    assert "a bug in the kit" in result["extra_data"]["grader_error"]
    assert not batch._done(tmp_path / "out", job)  # retried on the next run


# Stand-ins for grade_job, run in the pool's workers (spawned: they must be importable).

def fake_grade(job: Job, out: str, device: str, junit: bool) -> batch.SummaryRow:
    """A quick full-marks result, noting each attempt; "killer" kills its worker (as the OOM killer
    would) and "raiser" raises."""
    with open(Path(out) / "attempts.log", "a") as log:
        log.write(job.student + "\n")
    if job.student == "killer":
        time.sleep(0.5)  # so that "ada" is in flight in the other worker when the pool breaks
        os.kill(os.getpid(), signal.SIGKILL)
    if job.student == "ada":
        time.sleep(2.0)
    if job.student == "raiser":
        raise RuntimeError("an unexpected \x1b[31mbug\x1b[0m")
    return calm_grade(job, out, device, junit)


def calm_grade(job: Job, out: str, device: str, junit: bool) -> batch.SummaryRow:
    """Full marks for everyone, at once."""
    result: Results = {"score": 1.0, "max_score": 1.0, "execution_time": 0.0, "output": "", "tests": [],
              "extra_data": {"assignment": job.assignment, "student": job.student, "sha256": job.sha256}}
    batch._write_atomic(result_path(Path(out), job), json.dumps(result))
    return batch.row(result)


@pytest.fixture
def course(tmp_path: Path) -> Path:
    for student in ("ada", "bea", "killer", "raiser", "zed"):
        (tmp_path / "course" / "submitted" / student / CH).mkdir(parents=True)
        (tmp_path / "course" / "submitted" / student / CH / f"{CH}.ipynb").write_text(RELEASE.read_text())
    return tmp_path / "course"


def test_a_killed_worker_costs_one_grader_error_row_and_the_rest_is_graded(
        course: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "graded"
    out.mkdir()
    assert grade_all(course, out, workers=2, work=fake_grade) == 3
    # The pool broke twice: first with killer (and, usually, ada) in flight, then with killer retried alone. Which
    # other job was in flight depends on how fast the workers started (on a loaded machine ada may be done).
    attempts = (out / "attempts.log").read_text().split()
    assert attempts.count("killer") == 2
    assert all(1 <= attempts.count(s) <= 2 for s in ("ada", "bea", "raiser", "zed")), attempts
    rows = _rows(out)
    assert set(rows) == {"ada", "bea", "killer", "raiser", "zed"}
    assert {s for s, r in rows.items() if r["status"] == "grader-error"} == {"killer", "raiser"}
    assert all(rows[s]["score"] == 1 for s in ("ada", "bea", "zed"))
    assert "worker" in rows["killer"]["notes"] and "RuntimeError" in rows["raiser"]["notes"]
    assert "\x1b" not in (out / "summary.csv").read_text()
    err = capsys.readouterr().err
    assert "2 grader errors" in err and f"killer/{CH}" in err and f"raiser/{CH}" in err
    killed = json.loads(result_path(out, Job("killer", CH, "", "")).read_text())
    assert killed["extra_data"]["grader_error"] and killed["score"] == 0

    # Resume: the two grader errors, and only they, are graded again.
    assert grade_all(course, out, workers=2, work=calm_grade) == 0
    assert "3 already graded, 2 to grade" in capsys.readouterr().err
    assert {r["status"] for r in _rows(out).values()} == {"graded"}


def stamped_grade(job: Job, out: str, device: str, junit: bool) -> batch.SummaryRow:
    """Full marks, stamped with what the job is graded with, as grade_submission stamps a result."""
    result: Results = {"score": 1.0, "max_score": 1.0, "execution_time": 0.0, "output": "", "tests": [],
                       "extra_data": {"assignment": job.assignment, "student": job.student, "sha256": job.sha256,
                                      "graded_with": job.fingerprint}}
    batch._write_atomic(result_path(Path(out), job), json.dumps(result))
    return batch.row(result)


def test_results_of_another_release_are_named_and_regraded_on_request(
        course: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """check_softmax's points edited and the chapter released again: grade-all said "5 already graded, 0 to grade"
    and kept every result of the old release without a word. Now it names them and regrades with --regrade."""
    out = tmp_path / "graded"
    assert grade_all(course, out, workers=1, work=stamped_grade) == 0
    capsys.readouterr()
    assert grade_all(course, out, workers=1, work=stamped_grade) == 0
    assert "5 already graded, 0 to grade" in capsys.readouterr().err
    released = json.loads(RELEASE.read_text())
    check = next(c for c in released["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "check_softmax")
    check["metadata"]["nbgrader"]["points"] = 12
    (course / "release" / CH).mkdir(parents=True)
    (course / "release" / CH / f"{CH}.ipynb").write_text(json.dumps(released))
    before = (out / "results" / "ada" / f"{CH}.json").read_text()
    assert grade_all(course, out, workers=1, work=stamped_grade) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "5 results were graded with another release or grader than today's" in err, err
    assert "Rerun with --regrade" in err and f"ada/{CH}" in err and "5 already graded, 0 to grade" in err, err
    assert (out / "results" / "ada" / f"{CH}.json").read_text() == before
    assert grade_all(course, out, workers=1, work=stamped_grade, regrade=True) == 0
    assert "0 already graded, 5 to grade" in capsys.readouterr().err
    stamp = json.loads((out / "results" / "ada" / f"{CH}.json").read_text())["extra_data"]["graded_with"]
    assert stamp == batch.fingerprint(course, CH) != json.loads(before)["extra_data"]["graded_with"]
    assert grade_all(course, out, workers=1, work=stamped_grade) == 0
    assert "another release" not in capsys.readouterr().err


def test_the_fingerprint_is_the_same_in_every_copy_of_a_course(tmp_path: Path) -> None:
    """Shards graded on other machines, in other folders, must not read as graded with another release."""
    for name in ("one", "two"):
        (tmp_path / name / "release" / CH).mkdir(parents=True)
        (tmp_path / name / "release" / CH / f"{CH}.ipynb").write_text(RELEASE.read_text())
    assert batch.fingerprint(tmp_path / "one", CH) == batch.fingerprint(tmp_path / "two", CH)
    assert batch.fingerprint(tmp_path / "one", CH) != batch.fingerprint(tmp_path, CH)  # no release there
