"""A student who solves every required task and leaves the stretch task as released gets "Success" from
nbgrader's Validate: a stretch task's visible check passes while its function is still the stub."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from autograder.course.reference import release_path, solution_cells
from autograder.judging.registry import CHAPTERS
from tests.kit import write_submission


def _bonus_checks() -> list[Any]:
    found: list[Any] = []  # pytest.param values
    for chapter in CHAPTERS:
        nb = json.loads(release_path(chapter).read_text())
        by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in nb["cells"]}
        found += [pytest.param(chapter, task, "".join(by_id[f"check_{task}"]["source"]), id=f"{chapter}-{task}")
                  for task in CHAPTERS[chapter].bonus]
    return found


@pytest.mark.parametrize(("chapter", "task", "source"), _bonus_checks())
def test_every_stretch_check_runs_whole_inside_a_try_for_the_stub(chapter: str, task: str, source: str) -> None:
    (statement,) = ast.parse(source).body  # nothing outside the try can raise on a stub
    assert isinstance(statement, ast.Try), f"{chapter} check_{task}"
    caught = [h.type.id for h in statement.handlers if isinstance(h.type, ast.Name)]
    assert caught == ["NotImplementedError"], caught


def test_validate_passes_with_the_stretch_task_left_as_released(tmp_path: Path) -> None:
    from nbgrader.validator import Validator

    chapter = "03_broadcasting"  # a chapter with a stretch task, and the quickest notebook to run of those
    assert CHAPTERS[chapter].bonus
    required = {k: v for k, v in solution_cells(chapter).items() if k not in CHAPTERS[chapter].bonus}
    assert Validator().validate(str(write_submission(tmp_path, chapter, required))) == {}
    broken = {**required, "times_table": "def times_table(*args, **kwargs):\n    return None\n"}
    assert "failed" in Validator().validate(str(write_submission(tmp_path, chapter, broken, name="b.ipynb")))
