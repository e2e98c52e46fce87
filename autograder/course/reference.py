"""A chapter's notebooks in the kit's checkout (or in the course folder `root`): the instructor's source (with the
reference solution) and the student's release; the reference code of each answer cell, read from the source; the
release with some of its answers replaced.

The self-test, the benchmarks and the kit's tests (tests/kit.py) read them from here. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autograder import CHECKOUT
from autograder.judging.notebook import read_notebook

# nbgrader's solution markers, dropped from the reference code (autograder/course/build.py drops them, and
# the hidden tests' markers, when it writes the answer key)
_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


def source_path(chapter: str, root: Path = CHECKOUT) -> Path:
    return root / "source" / chapter / f"{chapter}.ipynb"


def release_path(chapter: str, root: Path = CHECKOUT) -> Path:
    return root / "release" / chapter / f"{chapter}.ipynb"


def with_answers(chapter: str, cells: Mapping[str, str], root: Path = CHECKOUT) -> dict[str, Any]:
    """The release notebook's JSON with the answer cells that `cells` names (grade_id -> code) replaced: what a
    student hands in."""
    nb = read_notebook(release_path(chapter, root))
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell["source"] = cells[grade_id]
    return nb


def solution_cells(chapter: str, root: Path = CHECKOUT) -> dict[str, str]:
    """The reference code of each answer cell (grade_id -> code), from the instructor's source notebook."""
    cells = {}
    for cell in read_notebook(source_path(chapter, root))["cells"]:
        nbgrader = cell["metadata"].get("nbgrader", {})
        if nbgrader.get("solution"):
            src = cell["source"]
            cells[nbgrader["grade_id"]] = _MARKER.sub("", "".join(src) if isinstance(src, list) else src)
    return cells
