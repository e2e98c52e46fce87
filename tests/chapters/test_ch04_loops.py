"""04_overloaded_ops' no-loop rule as the judge reads it (checks.loops_read): a loop of any length in the code
row_sum or pairwise_sq_distances runs is found, whatever form it takes, while every vectorized form (the
reference, cases.py's correct forms, and the others below) and test loops at a cell's top level are not. The
timing cannot tell: a loop over the shorter axis runs one step on the timed inputs (cases.py's attacks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.chapters.ch04_overloaded_ops.checks import loops_read
from autograder.course.cases import cases
from autograder.judging.notebook import Submission
from autograder.judging.registry import CHAPTERS
from tests.kit import solution_cells

CH = "04_overloaded_ops"
TASKS = ("row_sum", "pairwise_sq_distances")


def read(task: str, **cells: str) -> list[str]:
    merged = {**solution_cells(CH), **cells}
    submission = Submission(Path("x.ipynb"), CHAPTERS[CH], [{"id": k, "source": v} for k, v in merged.items()])
    return [str(u) for u in loops_read(submission, task)]


ROW_SUM = "def row_sum(x):\n    return {}\n"
PAIRWISE = "def pairwise_sq_distances(x, y):\n    return {}\n"
VECTORIZED = {
    "sum(0)": ROW_SUM.format("x.sum(0)"),
    "torch.sum": ROW_SUM.format("torch.sum(x, dim=0)"),
    "transposed": ROW_SUM.format("x.T.sum(1)"),
    "ones @ x": ROW_SUM.format("torch.ones(x.shape[0], dtype=x.dtype) @ x"),
    "new_ones, star of a shape": ROW_SUM.format("x.new_ones(*x.shape[:1]) @ x"),
    "einsum": ROW_SUM.format("torch.einsum('nd->d', x)"),
    "keepdim": ROW_SUM.format("x.sum(dim=0, keepdim=True)[0]"),
    "numpy's reduction": "import numpy as np\n" + ROW_SUM.format("torch.from_numpy(np.add.reduce(x.numpy(), 0))"),
    "unpacked shape": "def row_sum(x):\n    *_, d = x.shape\n"
                      "    return x.sum(0).reshape(max(d, 1), min(*x.shape[:1]) // x.shape[0])\n",
    "test loop at the top level": ROW_SUM.format("x.sum(0)") + "for s in [(2, 3), (4, 1)]:\n"
                                  "    print(row_sum(torch.rand(*s)), list(range(2)))\n",
}
LOOPS = {
    "for over range": "def row_sum(x):\n    z = 0\n    for i in range(x.shape[0]):\n        z = z + x[i]\n"
                      "    return z\n",
    "while": "def row_sum(x):\n    i, z = 0, 0\n    while i < len(x):\n        z, i = z + x[i], i + 1\n"
             "    return z\n",
    "comprehension": ROW_SUM.format("torch.stack([c.sum() for c in x.T])"),
    "builtin sum": ROW_SUM.format("sum(x)"),
    "builtin sum bound at load": "add_up = sum\n" + ROW_SUM.format("add_up(x.T.clone())"),
    "map": ROW_SUM.format("torch.stack(list(map(torch.sum, x.T)))"),
    "star unpacking": ROW_SUM.format("torch.stack([*x.T]).sum(1)"),
    "starred target": "def row_sum(x):\n    first, *rest = x\n    return first\n",
    "unbind": ROW_SUM.format("torch.stack(x.unbind(1)).sum(1)"),
    "split": ROW_SUM.format("torch.cat([x.split(1)[0]])[0]"),
    "tolist": ROW_SUM.format("torch.tensor(x.tolist()[0])"),
    "functools.reduce": "import functools\n" + ROW_SUM.format("functools.reduce(torch.add, x)"),
    "reduce imported": "from functools import reduce as r\n" + ROW_SUM.format("r(torch.add, x)"),
    "itertools": "import itertools\n" + ROW_SUM.format("list(itertools.accumulate(x))[-1]"),
    "apply_along_axis": "import numpy as np\n"
                        + ROW_SUM.format("torch.from_numpy(np.apply_along_axis(np.sum, 0, x.numpy()))"),
    "vectorize": "import numpy as np\nf = np.vectorize(float)\n" + ROW_SUM.format("torch.tensor(f(x.numpy()))"),
    "recursion": ROW_SUM.format("x[0] if len(x) == 1 else x[0] + row_sum(x[1:])"),
    "a helper in another cell": ROW_SUM.format("helper(x)").replace("def row_sum", "def helper(x):\n"
                                "    return torch.stack([c.sum() for c in x.T])\n\n\ndef row_sum"),
    "a name computed at run time": ROW_SUM.format("getattr(x, 'sum' if x.dim() else 'mean')(0)"),
    "pairwise: over the smaller cloud": PAIRWISE.format("torch.stack([((y - xi) ** 2).sum(1) for xi in x])"),
}


def test_the_reference_and_every_correct_form_keep_the_rule() -> None:
    for task in TASKS:
        assert read(task) == [], task
        for case in cases(CH).right:
            assert read(task, **case.cells) == [], case.name


@pytest.mark.parametrize("form", VECTORIZED)
def test_vectorized_forms_keep_the_rule(form: str) -> None:
    assert read("row_sum", row_sum=VECTORIZED[form]) == []


@pytest.mark.parametrize("form", LOOPS)
def test_every_form_of_loop_is_found_with_its_line(form: str) -> None:
    task = "pairwise_sq_distances" if form.startswith("pairwise") else "row_sum"
    found = read(task, **{task: LOOPS[form]})
    assert found and all(f"cell '{task}', line " in f for f in found), (form, found)


def test_a_loop_in_a_function_the_task_does_not_use_is_not_its() -> None:
    other = solution_cells(CH)["repeat_each"] + "\n\ndef unused(x):\n    return [r for r in x]\n"
    assert read("row_sum", repeat_each=other) == []
