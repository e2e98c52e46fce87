"""Chapter 07: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the check written to catch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    assert_caught,
    grade_fast,
    solved,
)

CH = "07_numerical_stability"


NO_MAX = '''
def softmax(logits, dim=-1):
    e = torch.exp(logits)
    return e / e.sum(dim=dim, keepdim=True)
'''
GLOBAL_MAX = '''
def softmax(logits, dim=-1):
    e = torch.exp(logits - logits.max())
    return e / e.sum(dim=dim, keepdim=True)
'''
WRONG_DIM = '''
def softmax(logits, dim=-1):
    e = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
'''
LOG_OF_SOFTMAX = '''
def softmax_cross_entropy(labels, logits, dim=-1):
    return -(labels * torch.log(softmax(logits, dim))).sum(dim=dim)
'''
FLOAT32_ALWAYS = '''
def softmax(logits, dim=-1):
    x = logits.float()
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
'''
HARD_CODED = '''
def softmax(logits, dim=-1):
    return torch.tensor([1.0, 0.0])
'''
XENT_HARD_CODED = '''
def softmax_cross_entropy(labels, logits, dim=-1):
    return logits[0] * 0.5
'''

MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
    "no max subtraction": ("softmax", NO_MAX, "check_softmax_huge_and_infinite_logits", "nan"),
    "global max": ("softmax", GLOBAL_MAX, "check_softmax_rows_far_apart", "one per row"),
    "wrong dim": ("softmax", WRONG_DIM, "check_softmax_other_dims", "dim"),
    "log of softmax": ("softmax_cross_entropy", LOG_OF_SOFTMAX, "check_xent_extreme_logits", "log-softmax"),
    "dtype change": ("softmax", FLOAT32_ALWAYS, "check_softmax_keeps_dtype", "dtype torch.float32"),
    "hard-coded example": ("softmax", HARD_CODED, "check_softmax_random_batches", "Expected"),
    "hard-coded xent": ("softmax_cross_entropy", XENT_HARD_CODED, "check_xent_random_batches", "Expected"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    g = grade_fast(solved(tmp_path, CH, **{cell: code}))
    assert_caught(g, name, check, phrase)
