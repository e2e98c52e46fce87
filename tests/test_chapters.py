"""Every chapter: the reference solution earns full marks, the untouched release
earns 0 with "not implemented" everywhere, and the points agree with the
notebook's nbgrader check cells (chapter 08, with its CUDA-only check, has its own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kit import TRAINING, assert_full_marks, assert_not_implemented, grade_fast, release_path, solved

MAX_SCORE = {
    "01_basics": 16,
    "02_modules": 17,
    "03_broadcasting": 16,
    "04_overloaded_ops": 20,
    "05_batch_gather": 20,
    "06_data_loaders": 24,
    "07_numerical_stability": 20,
}


def _grade(path: Path, chapter: str):  # type: ignore[no-untyped-def]
    return grade_fast(path, limits=TRAINING) if chapter in ("01_basics", "02_modules") else grade_fast(path)


@pytest.mark.parametrize("chapter", MAX_SCORE)
def test_solution_gets_full_marks(tmp_path: Path, chapter: str) -> None:
    assert_full_marks(_grade(solved(tmp_path, chapter), chapter), MAX_SCORE[chapter])


@pytest.mark.parametrize("chapter", MAX_SCORE)
def test_release_scores_zero_and_says_not_implemented(chapter: str) -> None:
    assert_not_implemented(_grade(release_path(chapter), chapter), MAX_SCORE[chapter])


@pytest.mark.parametrize("chapter", MAX_SCORE)
def test_notebook_check_cells_carry_the_same_points(chapter: str) -> None:
    nb = json.loads(release_path(chapter).read_text())
    cells = [c["metadata"]["nbgrader"] for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert sum(c["points"] for c in cells) == MAX_SCORE[chapter]
