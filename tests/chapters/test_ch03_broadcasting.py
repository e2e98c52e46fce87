"""Chapter 03: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, solution_cells
from tests.chapters.test_chapters import grader

CH = "03_broadcasting"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# The stretch's other correct forms: each earns the whole bonus.
ADDITIVE_FORMS = {
    "einsum + where": '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    pq = torch.einsum("bnd,hd->bnh", q, w_q)
    pk = torch.einsum("bmd,hd->bmh", k, w_k)
    s = torch.einsum("bnmh,h->bnm", torch.tanh(pq.unsqueeze(2) + pk.unsqueeze(1)), v)
    pad = torch.arange(k.shape[1], device=k.device).unsqueeze(0) >= lengths.unsqueeze(1)
    return torch.where(pad.unsqueeze(1), torch.tensor(float("-inf"), dtype=s.dtype), s)
''',
    "F.linear + sum": '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    pq = F.linear(q, w_q)[:, :, None]
    pk = F.linear(k, w_k)[:, None]
    s = (torch.tanh(pq + pk) * v).sum(-1)
    mask = lengths.view(-1, 1, 1) <= torch.arange(k.shape[1], device=k.device)
    return s.masked_fill(mask, -float("inf"))
''',
    "transposed weights, in-place fill": '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    h = torch.tanh((q @ w_q.T).unsqueeze(-2) + (k @ w_k.T).unsqueeze(-3))
    s = h @ v
    keys = torch.arange(k.shape[1], device=k.device).expand(len(lengths), -1)
    s.masked_fill_((keys >= lengths[:, None])[:, None, :], float("-inf"))
    return s
''',
}


@pytest.mark.parametrize("form", ADDITIVE_FORMS)
def test_every_correct_form_of_the_stretch_earns_its_bonus(form: str) -> None:
    g = selftest._graded(grader, CH, {**solution_cells(CH), "additive_scores": ADDITIVE_FORMS[form]}, "cpu",
                         "additive_scores")
    assert not isinstance(g, str), g
    assert (g.score, g.bonus, g.bonus_max) == (0.0, 5.0, 5.0), [r.output for r in g.results if r.status != "passed"]
