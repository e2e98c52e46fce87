"""Chapter 05: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants
from tests.chapters.test_chapters import grader
from tests.kit import grade_fast, solved

CH = "05_batch_gather"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# The stretch task: other correct forms of batch_scatter_add than the reference's out-of-place index_add.
SCATTER_FORMS = {
    'index_put accumulate': '''
def batch_scatter_add(values, indices, n):
    b = indices.shape[0]
    rows = torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1)).expand(indices.shape)
    out = values.new_zeros((b, n, *values.shape[indices.dim():]))
    return out.index_put((rows, indices.long()), values, accumulate=True)
''',
    'scatter_add expanded': '''
def batch_scatter_add(values, indices, n):
    b, trailing = indices.shape[0], values.shape[indices.dim():]
    idx = indices.long().reshape(b, -1, *[1] * len(trailing)).expand(b, -1, *trailing)
    src = values.reshape(b, -1, *trailing)
    return torch.zeros((b, n, *trailing), dtype=values.dtype, device=values.device).scatter_add(1, idx, src)
''',
    'one-hot einsum': '''
import torch.nn.functional as F

def batch_scatter_add(values, indices, n):
    b, trailing = indices.shape[0], values.shape[indices.dim():]
    hot = F.one_hot(indices.long().reshape(b, -1), n).to(values.dtype)   # [B, K, n]
    flat = values.reshape(b, hot.shape[1], -1)                           # [B, K, prod(E)]
    return torch.einsum("bkn,bke->bne", hot, flat).reshape(b, n, *trailing)
''',
    'in-place index_add_ on flat offsets': '''
def batch_scatter_add(values, indices, n):
    b = indices.shape[0]
    e = values.shape[indices.dim():]
    flat = indices.long() + n * torch.arange(b, device=indices.device).view(-1, *[1] * (indices.dim() - 1))
    out = torch.zeros(b * n, *e, dtype=values.dtype, device=values.device)
    out.index_add_(0, flat.flatten(), values.flatten(0, indices.dim() - 1))
    return out.view(b, n, *e)
''',
}


@pytest.mark.parametrize("form", SCATTER_FORMS, ids=str)
def test_other_correct_scatter_forms_earn_the_whole_bonus(form: str, tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH, batch_scatter_add=SCATTER_FORMS[form]), only="scatter_add")
    assert (g.bonus, g.bonus_max) == (5, 5), [(r.name, r.output) for r in g.results if r.status != "passed"]
