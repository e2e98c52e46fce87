"""Every chapter's cases (autograder/chapters/ch<id>/cases.py), graded as each declares:

- a named wrong implementation fails every check it names, each message with its phrase (as
  `python -m autograder selftest` grades it: selftest.mutant_row);
- a correct form unlike the reference earns every point and the whole bonus of the checks that grade it.

Test ids read <chapter>/<wrong|right>/<name>. The reference solution and the release are graded in
tests/chapters/test_chapters.py, with the same `grader` (one grading per notebook per session); a chapter's
own test module holds only what that chapter alone needs.
"""

from __future__ import annotations

import builtins
import dataclasses
import symtable
from pathlib import Path

import pytest

from autograder.course import selftest
from autograder.course.cases import CorrectForm, Mutant, cases, defined_names
from autograder.judging.judge import Grade
from autograder.judging.registry import CHAPTERS
from tests.chapters.test_chapters import grader
from tests.kit import grade_fast, limits_for, solution_cells

pytestmark = pytest.mark.slow  # minutes in all: tests/conftest.py starts it first

CASES = [case for chapter in CHAPTERS for case in (*cases(chapter).wrong, *cases(chapter).right)]
# A wrong form that hangs waits out its check's limit on one call: 1 s here, not the tests' usual 5 s (what is
# tested is that the hang is found and named, not how long the limit is).
HANG_SECONDS = 1.0


def hang_grader(notebook: Path, device: str, only: str | None) -> Grade:
    limits = dataclasses.replace(limits_for(notebook.stem), call_seconds=HANG_SECONDS)
    return grade_fast(notebook, device=device, seed=selftest.SEED, limits=limits, only=only)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_every_case_is_graded_as_it_declares(case: Mutant | CorrectForm) -> None:
    if isinstance(case, Mutant):
        hangs = any("timed out" in phrase for phrase in case.fails.values())
        row = selftest.mutant_row(case, "cpu", hang_grader if hangs else grader)
        assert row.ok, row.detail
        return
    g = selftest._graded(grader, case.chapter, {**solution_cells(case.chapter), **case.cells}, "cpu", case.only)
    assert not isinstance(g, str), g
    assert (g.score, g.max_score, g.bonus, g.bonus_max) == (case.points, case.points, case.bonus, case.bonus), [
        (r.name, r.output) for r in g.results if r.status != "passed"]


def free_names(code: str) -> set[str]:
    """The global names that code reads and does not bind at its top level."""
    top = symtable.symtable(code, "<cell>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        read |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and (table is top or s.is_global())}
        tables += table.get_children()
    return read - bound


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_case_reads_only_names_its_notebook_gives_it(chapter: str) -> None:
    """What ruff cannot tell from cases.py: each name a case's code reads is a builtin, one the notebook's imports
    cell binds, or one an answer cell binds (its own, or the reference's for the cells it leaves alone)."""
    given = set(dir(builtins)) | defined_names(CHAPTERS[chapter].preamble)
    reference = solution_cells(chapter)
    every: list[Mutant | CorrectForm] = [*cases(chapter).wrong, *cases(chapter).right]
    for case in every:
        cells = {**reference, **case.cells}
        bound = given.union(*(defined_names(code) for code in cells.values()))
        for cell, code in case.cells.items():
            assert free_names(code) <= bound, f"{case.id}: {cell} reads {sorted(free_names(code) - bound)}"
