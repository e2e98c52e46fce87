"""grade-all on a class with hostile classmates: names that are spreadsheet formulas or markup, messages with
lone surrogates and terminal escapes, a megabyte of flagged code, files that are not notebooks. Every
submission gets its row, the honest students the scores they get alone, and every file written is safe:
strict UTF-8, no formula in a CSV cell, no markup from a student in the page, results of bounded size."""

from __future__ import annotations

import csv
import html
import json
import shutil
from pathlib import Path

import pytest

from autograder.course.batch import ROW_FIELDS, grade_all
from autograder.course.report import write_report
from tests.kit import UNSAFE, solution_cells, solved, strings, write_submission

CH = "07_numerical_stability"
HONEST = ("ada", "bea")
FORMULA = ("=", "+", "-", "@", "\t", "\r")
WRONG = "def softmax(logits, dim=-1):\n    e = torch.exp(logits)\n    return e / e.sum(dim=dim, keepdim=True)\n"
RAISES = ('def softmax(logits, dim=-1):\n    raise ValueError("bad " + chr(0xD800) + chr(0) + "\\x1b[2J" + '
          'chr(0x202E) + "<script>alert(1)</script>")\n')
ODD_NAMES = 'globals()["evil\\x1b[2J" + chr(0xD800)] = lambda: 0\n'
FLAGGED = "import gc\n" * ((1 << 20) // len("import gc\n")) + solution_cells(CH)["softmax"]


def _folder(root: Path, student: str) -> Path:
    folder = root / "submitted" / student / CH
    folder.mkdir(parents=True)
    return folder


def _class(root: Path, hostile: bool) -> Path:
    solved(_folder(root, "ada"), CH)
    write_submission(_folder(root, "bea"), CH, {**solution_cells(CH), "softmax": WRONG})
    if not hostile:
        return root
    (_folder(root, "=1+1") / '=HYPERLINK("x","y").ipynb').write_text("{ not json")
    solved(_folder(root, "@SUM(A1)"), CH)
    solved(_folder(root, "-2+3"), CH, softmax=RAISES)
    solved(_folder(root, "<script>alert(1)"), CH, softmax=FLAGGED)
    (_folder(root, "cal") / f"{CH}.ipynb").write_bytes(b'{"cells": [], "nbformat": 4, "x": "\xff\xfe"}')
    solved(_folder(root, "\udcff\udcfe\x1b[2J"), CH, softmax=ODD_NAMES)  # a folder name that is not UTF-8
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    course = _class(tmp_path_factory.mktemp("hostile"), hostile=True)
    out = course / "graded"
    assert grade_all(course, out, workers=2) == 0
    return out


def _rows(out: Path) -> dict[str, dict[str, object]]:
    rows = json.loads((out / "summary.json").read_bytes().decode("utf-8"))
    return {str(r["student"]): r for r in rows}


def _csv_cells(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as f:  # strict UTF-8
        return list(csv.reader(f))


def test_every_submission_has_a_complete_row(graded: Path) -> None:
    rows = _rows(graded)
    assert len(rows) == 8 and all(list(r) == ROW_FIELDS for r in rows.values())
    assert rows["=1+1"]["status"] == "error" and "not valid notebook JSON" in str(rows["=1+1"]["notes"])
    assert rows["cal"]["status"] == "error" and "not valid notebook JSON" in str(rows["cal"]["notes"])
    assert rows["@SUM(A1)"]["score"] == rows["ada"]["score"]
    assert "\\udcff\\udcfe\\x1b[2J" in rows


def test_the_honest_students_score_as_they_do_alone(graded: Path, tmp_path: Path) -> None:
    alone = _class(tmp_path / "alone", hostile=False)
    assert grade_all(alone, tmp_path / "out", workers=2) == 0
    scores = {s: _rows(tmp_path / "out")[s]["score"] for s in HONEST}
    assert scores == {s: _rows(graded)[s]["score"] for s in HONEST}
    assert scores["ada"] == 22 and 0 < float(str(scores["bea"])) < 22


def test_no_csv_cell_is_a_formula_and_numbers_stay_numbers(graded: Path) -> None:
    write_report(graded)
    for path in [graded / "summary.csv", *sorted((graded / "report").glob("*.csv"))]:
        cells = _csv_cells(path)
        assert not [c for row in cells for c in row if c.startswith(FORMULA) or UNSAFE.search(c)], path.name
    summary = _csv_cells(graded / "summary.csv")
    assert {row[0] for row in summary[1:]} >= {"'=1+1", "'@SUM(A1)", "'-2+3"}
    assert all(float(row[2]) >= 0 for row in summary[1:])  # a score is a number, never guarded as text


def test_the_class_report_is_complete_and_has_no_markup_from_students(graded: Path) -> None:
    page = write_report(graded).read_bytes().decode("utf-8")
    assert "<script" not in page and "&lt;script&gt;alert(1)" in page
    assert "8 submissions from 8 students" in page
    flagged = page.split("Flagged for review", 1)[1]
    assert all(html.escape(s) in flagged for s in ("=1+1", "cal", "<script>alert(1)"))
    assert "review flags: 104857 construct(s)" in page


def test_result_files_are_strict_utf8_and_small(graded: Path) -> None:
    files = sorted((graded / "results").glob("*/*.json"))
    assert len(files) == 8
    for path in files:
        assert path.stat().st_size < 150_000, path
        data = json.loads(path.read_bytes().decode("utf-8"))
        assert not [s for s in strings(data) if UNSAFE.search(s)], path
    raised = json.loads((graded / "results" / "-2+3" / f"{CH}.json").read_text())
    assert "ValueError: bad \\ud800\\x00\\x1b[2J\\u202e<script>" in raised["tests"][0]["output"]


def test_a_rerun_resumes(graded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    course = graded.parent
    out = tmp_path / "again"
    shutil.copytree(graded, out)
    capsys.readouterr()
    assert grade_all(course, out, workers=1) == 0
    assert "8 already graded, 0 to grade" in capsys.readouterr().err
    assert _rows(out) == _rows(graded)
    write_report(out)
