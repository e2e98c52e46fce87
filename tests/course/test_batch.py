"""grade-all: every submission gets a row, runs resume, and shards merge exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autograder.course.batch import discover, grade_all, merge, shard
from tests.kit import check_count, solved, write_submission

CH = "07_numerical_stability"


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("course")
    sub = root / "submitted"
    for student in ("ada", "bea"):
        (sub / student / CH).mkdir(parents=True)
    solved(sub / "ada" / CH, CH)
    write_submission(sub / "bea" / CH, CH, {})
    (sub / "cal" / CH).mkdir(parents=True)
    (sub / "cal" / CH / f"{CH}.ipynb").write_text("{ not json")
    (sub / "dan" / CH).mkdir(parents=True)  # a folder with no notebook
    return root


@pytest.fixture(scope="module")
def graded(course: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("graded")
    assert grade_all(course, out, workers=2) == 0
    return out


def _scores(out: Path) -> dict[str, float]:
    return {f"{r['student']}/{r['assignment']}": r["score"] for r in json.loads((out / "summary.json").read_text())}


def test_every_submission_gets_a_row_and_a_result(graded: Path) -> None:
    out = graded
    rows = {f"{r['student']}/{r['assignment']}": r for r in json.loads((out / "summary.json").read_text())}
    assert set(rows) == {f"{s}/{CH}" for s in ("ada", "bea", "cal", "dan")}
    assert rows[f"ada/{CH}"]["score"] == 22 and rows[f"bea/{CH}"]["score"] == 0  # every task, no stretch task
    assert rows[f"cal/{CH}"]["status"] == "error" and "not valid notebook JSON" in rows[f"cal/{CH}"]["notes"]
    assert rows[f"dan/{CH}"]["status"] == "error" and "No .ipynb" in rows[f"dan/{CH}"]["notes"]
    assert (out / "summary.csv").read_text().count("\n") == 5
    result = json.loads((out / "results" / "ada" / f"{CH}.json").read_text())
    assert result["max_score"] == 22 and len(result["tests"]) == check_count(CH)
    assert result["score"] == 22


def test_a_rerun_grades_only_what_is_missing(course: Path, graded: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "graded"
    shutil.copytree(graded, out)
    kept = out / "results" / "ada" / f"{CH}.json"
    before = kept.stat().st_mtime_ns
    (out / "results" / "bea" / f"{CH}.json").unlink()  # as if interrupted before bea finished
    capsys.readouterr()
    grade_all(course, out, workers=1)
    assert "3 already graded, 1 to grade" in capsys.readouterr().err
    assert kept.stat().st_mtime_ns == before
    assert _scores(out)[f"bea/{CH}"] == 0


def test_shards_partition_the_class_and_merge_to_the_full_result(course: Path, graded: Path, tmp_path: Path) -> None:
    jobs = discover(course)
    parts = [shard(jobs, i, 3) for i in (1, 2, 3)]
    assert sorted(j.key for p in parts for j in p) == sorted(j.key for j in jobs)
    outs = []
    for i in (1, 2):
        outs.append(tmp_path / f"shard{i}")
        grade_all(course, outs[-1], workers=1, shard_spec=f"{i}/2")
    assert merge(outs, tmp_path / "merged") == 0
    assert _scores(tmp_path / "merged") == _scores(graded)
    shutil.copytree(outs[0], tmp_path / "again")
    assert merge([outs[0], tmp_path / "again"], tmp_path / "dup") == 2  # a submission in two shards is an error


def test_a_folder_that_is_not_a_course_is_refused_and_left_alone(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Any folder tree would pass for submitted/<student>/<assignment>/: a home folder gave 22 junk rows."""
    home = tmp_path / "home"
    (home / "Documents" / "taxes").mkdir(parents=True)
    (home / "src" / "kit").mkdir(parents=True)
    assert grade_all(home, home / "graded", workers=1) == 2
    assert "is not a course folder" in capsys.readouterr().err
    assert not (home / "graded").exists()


def test_a_renamed_submission_folder_leaves_no_stale_result_behind(tmp_path: Path) -> None:
    """A misspelled assignment folder, renamed after a first run: its old result counted the student twice."""
    course, out = tmp_path / "course", tmp_path / "graded"
    wrong = course / "submitted" / "eve" / "07_numerical_stabilty"
    wrong.mkdir(parents=True)
    solved(wrong, CH)
    assert grade_all(course, out, workers=1) == 0
    wrong.rename(wrong.with_name(CH))
    assert grade_all(course, out, workers=1) == 0
    assert [p.relative_to(out).as_posix() for p in out.glob("results/*/*.json")] == [f"results/eve/{CH}.json"]
    assert (out / "stale" / "eve" / "07_numerical_stabilty.json").is_file()
    assert [r["assignment"] for r in json.loads((out / "summary.json").read_text())] == [CH]
