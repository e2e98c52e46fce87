"""Every chapter, through the self-test's own gradings (autograder/course/selftest.py): the reference
solution earns full marks (on CPU without its CUDA-only checks), the untouched release earns 0 with
"not implemented" everywhere, and the points agree with the notebook's nbgrader check cells, which the
registry (autograder/chapters/chapters.json) is derived from.

`grader` grades each notebook once per test session, so tests/course/test_selftest.py, which runs the whole
CPU self-test, reuses these gradings and those of the wrong implementations in tests/chapters/test_every_chapter.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from autograder.course import selftest
from autograder.judging.judge import Grade, GradeOptions, grade
from autograder.judging.registry import REGISTRY, derive
from tests.kit import limits_for, release_path, zygote

_GRADES: dict[tuple[str, str, str | None], Grade] = {}


def grader(notebook: Path, device: str, only: str | None) -> Grade:
    """The tests' grading (fixed seed, short limits; 01 and 02 train models), once per notebook, device and -k."""
    key = (hashlib.sha256(notebook.read_bytes()).hexdigest(), device, only)
    if key not in _GRADES:
        options = GradeOptions(device, selftest.SEED, limits_for(notebook.stem), only=only)
        _GRADES[key] = grade(notebook, options=options, zygote=zygote())
    return _GRADES[key]


@pytest.mark.parametrize("chapter", selftest.POINTS)
def test_solution_gets_full_marks(chapter: str) -> None:
    """Also the self-test's speed rows, one per check its checks module declares with speed=True: each ratio its
    check read on the reference, above what the check needs (a CUDA-only one, such as 08's: skipped here)."""
    solution, *speed = selftest.solution_rows(chapter, "cpu", grader)
    assert solution.ok, solution.detail
    declared = selftest.declared(chapter)
    assert [row.case for row in speed] == [name for name, spec in declared.items() if spec.speed]
    for row in speed:
        if declared[row.case].cuda_only:
            assert row.ok is None and row.result == "skipped", row
        else:
            assert row.ok and row.values["ratio"] >= row.values["needs"] > 0, row


@pytest.mark.parametrize("chapter", selftest.POINTS)
def test_release_scores_zero_and_says_not_implemented(chapter: str) -> None:
    row = selftest.release_row(chapter, "cpu", grader)
    assert row.ok, row.detail


@pytest.mark.parametrize("chapter", selftest.POINTS)
def test_notebook_check_cells_carry_the_same_points(chapter: str) -> None:
    nb = json.loads(release_path(chapter).read_text())
    cells = [c["metadata"]["nbgrader"] for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    assert sum(c["points"] for c in cells) == selftest.POINTS[chapter]



def test_the_registry_is_what_the_source_notebooks_say() -> None:
    assert json.loads(REGISTRY.read_text()) == derive(), \
        "Run `.venv/bin/python -m autograder.judging.registry` and commit autograder/chapters/chapters.json."
