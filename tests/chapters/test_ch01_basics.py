"""Chapter 01: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, solution_cells
from tests.chapters.test_chapters import grader

CH = "01_basics"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# Correct forms of the stretch exercise, other than the reference: each earns the whole bonus.
HVP_FORMS = {
    "dot product, linear case caught": '''
def hessian_vector_product(fn, x, v):
    x_ = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(x_), x_, create_graph=True)
    try:
        return torch.autograd.grad((g * v).sum(), x_)[0]
    except RuntimeError:
        return torch.zeros_like(x)
''',
    "torch.func forward-over-reverse": '''
def hessian_vector_product(fn, x, v):
    return torch.func.jvp(torch.func.grad(fn), (x.detach(),), (v,))[1]
''',
    "torch.func reverse-over-reverse": '''
def hessian_vector_product(fn, x, v):
    return torch.func.vjp(torch.func.grad(fn), x.detach())[1](v)[0]
''',
    "torch.autograd.functional.hvp": '''
def hessian_vector_product(fn, x, v):
    return torch.autograd.functional.hvp(fn, x.detach(), v)[1]
''',
}


@pytest.mark.parametrize("form", HVP_FORMS)
def test_every_correct_hessian_vector_product_earns_the_bonus(form: str) -> None:
    cells = {**solution_cells(CH), "hessian_vector_product": HVP_FORMS[form]}
    g = selftest._graded(grader, CH, cells, "cpu", "hvp")
    assert not isinstance(g, str), g
    assert (g.bonus, g.bonus_max) == (5.0, 5.0), [r.output for r in g.results if r.status != "passed"]
