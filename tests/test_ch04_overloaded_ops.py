"""Chapter 04: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the check written to catch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    assert_caught,
    grade_fast,
    solved,
)

CH = "04_overloaded_ops"


ROW_LOOP = '''
def row_sum(x):
    z = torch.zeros_like(x[0])
    for i in range(x.shape[0]):
        z = z + x[i]
    return z
'''
WRONG_AXIS = '''
def row_sum(x):
    return x.sum(dim=1)
'''
VIEW_ON_STRIDED = '''
def row_sum(x):
    n, d = x.shape
    return x.view(n * d).view(n, d).sum(dim=0)
'''
DISTANCE_LOOP = '''
def pairwise_sq_distances(x, y):
    return torch.stack([((y - xi) ** 2).sum(dim=1) for xi in x])
'''
NOT_SQUARED = '''
def pairwise_sq_distances(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).sqrt()
'''
CROSS_TERM_SIGN = '''
def pairwise_sq_distances(x, y):
    return (x ** 2).sum(1, keepdim=True) + (y ** 2).sum(1) + 2 * x @ y.T
'''
LIBRARY_CDIST = '''
def pairwise_sq_distances(x, y):
    return torch.cdist(x, y) ** 2
'''

MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
    "row loop": ("row_sum", ROW_LOOP, "check_row_sum_vectorized", "grows with the input"),
    "row loop is slow": ("row_sum", ROW_LOOP, "check_row_sum_speed", "faster than the slicing loop"),
    "wrong axis": ("row_sum", WRONG_AXIS, "check_row_sum_random", "dim=0"),
    "view on strided input": ("row_sum", VIEW_ON_STRIDED, "check_row_sum_non_contiguous", "view size"),
    "distance loop": ("pairwise_sq_distances", DISTANCE_LOOP, "check_pairwise_vectorized", "grows with the input"),
    "distance loop is slow": ("pairwise_sq_distances", DISTANCE_LOOP, "check_pairwise_speed", "faster than a loop"),
    "not squared": ("pairwise_sq_distances", NOT_SQUARED, "check_pairwise_random", "no square root"),
    "cross term sign": ("pairwise_sq_distances", CROSS_TERM_SIGN, "check_pairwise_small_example", "sign"),
    "library cdist": ("pairwise_sq_distances", LIBRARY_CDIST, "check_pairwise_vectorized", "_cdist_forward"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    g = grade_fast(solved(tmp_path, CH, **{cell: code}), only=check)
    assert_caught(g, name, check, phrase)
