"""The example class in examples/submitted/<student>/<assignment>/ (nbgrader's layout), made from each
chapter's release, its reference solution and its named cases, so that it follows every release.

`build` writes a chapter's examples after its release; the demo and docs/instructors.md's walk-through grade them, and
tests/course/test_release.py checks that the committed ones are what this module makes of today's release
(an example from an earlier release lacks cells that nbgrader then has to put back).

- ada solves every task of every chapter, the stretch task too, with the reference solution;
- ben makes one common mistake per chapter (a case named in the chapter's cases.py) and leaves the
  stretch task as released;
- cleo hands in 07 as released, nothing done;
- dev takes the maximum over the whole tensor in 07's softmax and ends the process in softmax_cross_entropy;
- eve's 07 is cut off mid-file, not a notebook at all.

ada's and ben's other answers are the same reference code, so the similarity report pairs them where a task has
no mistake of ben's and is long enough to tell (01's fit_polynomial): rightly, and a demonstration of it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder import CHECKOUT
from autograder.course.cases import mutant
from autograder.course.reference import release_path, solution_cells, with_answers
from autograder.judging.registry import CHAPTERS

EXAMPLES = CHECKOUT / "examples" / "submitted"
ONLY_07 = "07_numerical_stability"

# ben's mistakes: chapter -> names of its cases (each replaces other answer cells)
BEN = {
    "01_basics": ["finite differences"],
    "02_modules": ["no zero_grad"],
    "03_broadcasting": ["tile and concatenate"],
    "04_overloaded_ops": ["row loop"],
    "05_batch_gather": ["loop"],
    "06_data_loaders": ["no sharding"],
    "07_numerical_stability": ["no max subtraction", "log of softmax"],
    "08_mixed_precision": ["no scaler.update"],
}
STRAY_EXIT = '''import os


def softmax_cross_entropy(labels, logits, dim=-1):
    os._exit(1)  # a stray exit: the grader must survive it
'''
CUT_AT = 2000  # eve's notebook: its first characters only


def _required(chapter: str) -> dict[str, str]:
    """The reference code of every answer cell but the stretch task's."""
    return {k: v for k, v in solution_cells(chapter).items() if k not in CHAPTERS[chapter].bonus}


def _mistakes(chapter: str, names: list[str]) -> dict[str, str]:
    cells: dict[str, str] = {}
    for name in names:
        case = mutant(chapter, name).cells
        if set(case) & set(cells):
            raise ValueError(f"{chapter}: the cases {names} replace the same answer cell")
        cells.update(case)
    return cells


def submissions(chapter: str) -> dict[str, dict[str, str] | str]:
    """student -> the answer cells replaced in the release (grade_id -> code), or the file's whole text."""
    subs: dict[str, dict[str, str] | str] = {
        "ada": solution_cells(chapter),
        "ben": {**_required(chapter), **_mistakes(chapter, BEN[chapter])},
    }
    if chapter == ONLY_07:
        subs["cleo"] = {}
        subs["dev"] = {**_required(chapter), **_mistakes(chapter, ["global max"]),
                       "softmax_cross_entropy": STRAY_EXIT}
        subs["eve"] = release_path(chapter).read_text()[:CUT_AT]
    return subs


def write(chapter: str, root: Path = EXAMPLES) -> list[Path]:
    """Write the chapter's examples under `root`; returns their paths."""
    written = []
    for student, answers in submissions(chapter).items():
        path = root / student / chapter / f"{chapter}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(answers, str):
            path.write_text(answers)
        else:
            nbformat.write(nbformat.from_dict(with_answers(chapter, answers)), path)
        written.append(path)
    return written
