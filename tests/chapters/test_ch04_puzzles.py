"""04_overloaded_ops' operator puzzles, beyond what every chapter's tests grade: each correct form (the reference
and cases.py's) matches the oracle under many seeds of the random checks' draws, run in this process; every
named mistake is told apart from the right answer on the example; and the notebook states the rules the
checks apply (the allowed operations, the points, the 8x bar, the no-cdist rule)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch

from autograder.chapters.ch04_overloaded_ops.puzzles import OPERATIONS, PUZZLES, Puzzle
from autograder.course.cases import cases
from autograder.judging.expect import expect_tensor
from autograder.judging.registry import CHAPTERS
from tests.kit import ROOT, solution_cells

CH = "04_overloaded_ops"
SEEDS = range(200)


def _function(code: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"torch": torch}
    exec(code, namespace)  # the kit's own cells and cases
    return namespace[name]


def _forms(name: str) -> list[tuple[str, str]]:
    """(label, code) of the reference and of every correct form of the puzzle."""
    rights = [(c.name, c.cells[name]) for c in cases(CH).right if name in c.cells]
    return [("reference", solution_cells(CH)[name]), *rights]


def _matches(p: Puzzle, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    expect_tensor(fn(*args), p.oracle(*args), call=p.call, inputs=dict(zip(p.params, args, strict=True)),
                  rtol=p.rtol, atol=p.atol)


@pytest.mark.parametrize("name", sorted(PUZZLES))
def test_every_correct_form_is_right_under_any_seed(name: str) -> None:
    p = PUZZLES[name]
    forms = _forms(name)
    assert len(forms) >= 3, f"{name}: the reference and at least 2 other correct forms"
    for label, code in forms:
        fn = _function(code, name)
        _matches(p, fn, p.example)
        for seed in SEEDS:
            for args in p.draw(torch.Generator().manual_seed(seed)):
                try:
                    _matches(p, fn, args)
                except AssertionError as e:
                    raise AssertionError(f"{name} / {label}, seed {seed}:\n{e}") from None


@pytest.mark.parametrize("name", sorted(PUZZLES))
def test_each_named_mistake_differs_from_the_answer_on_the_example(name: str) -> None:
    p = PUZZLES[name]
    want = p.oracle(*p.example)
    for what, wrong in p.mistakes(*p.example):
        same = wrong.shape == want.shape and wrong.dtype == want.dtype and torch.allclose(wrong.double(),
                                                                                         want.double())
        assert not same, f"{name}: the mistake '{what}' gives the right answer on the example"
    assert len([c for c in cases(CH).wrong if name in c.cells]) >= 2, f"{name}: at least 2 named wrong forms"


def _cells() -> dict[str, str]:
    notebook = ROOT / "source" / CH / f"{CH}.ipynb"
    return {c["id"]: "".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]}


def test_the_notebook_states_the_rules_its_checks_apply() -> None:
    cells = _cells()
    intro = cells["puzzles-intro"]
    for op in OPERATIONS:
        assert f"`{op}`" in intro, f"the puzzles' introduction does not name {op}"
    for name in PUZZLES:
        text = cells[f"md-{name}"]
        assert "2 points" in text and "one `return <expression>`" in text and "Breaking the rule" in text, name
        assert text.count("<details><summary>Hint") >= 2, f"{name}: collapsed hints"
    assert "**8 times**" in cells["cell-08"] and "4 points" in cells["cell-08"]
    assert "`torch.cdist`" in cells["cell-15"] and "**8 times**" in cells["cell-15"]
    assert "momentum-exercise" not in cells and "md-causal_mask" not in cells  # 02's update, 03's lower_mask
    points = CHAPTERS[CH].points
    assert all(points[name] == 2 for name in PUZZLES), points
    assert sum(points.values()) == 30 and points["row_sum"] == 4, points  # the core: about 20 to 30 points
