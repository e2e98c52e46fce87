"""Chapter 03: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the check written to catch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    assert_caught,
    grade_fast,
    solved,
)

CH = "03_broadcasting"


MERGE_HEAD = '''
class Merge(nn.Module):
    def __init__(self, in_features1, in_features2, out_features, activation=None):
        super().__init__()
        self.linear1 = nn.Linear(in_features1, out_features)
        self.linear2 = nn.Linear(in_features2, out_features)
        self.activation = activation
'''
TILE_AND_CONCAT = MERGE_HEAD + '''
    def forward(self, a, b):
        tiled_b = b.repeat(*[n // m for n, m in zip(a.shape[:-1], b.shape[:-1])], 1)
        weight = torch.cat([self.linear1.weight, self.linear2.weight], dim=1)
        c = F.linear(torch.cat([a, tiled_b], dim=-1), weight, self.linear1.bias + self.linear2.bias)
        return c if self.activation is None else self.activation(c)
'''
EXPAND_CONTIGUOUS = MERGE_HEAD + '''
    def forward(self, a, b):
        b = b.expand(*a.shape[:-1], b.shape[-1]).contiguous()
        c = self.linear1(a) + self.linear2(b)
        return c if self.activation is None else self.activation(c)
'''
NO_ACTIVATION = MERGE_HEAD + '''
    def forward(self, a, b):
        return self.linear1(a) + self.linear2(b)
'''
BIAS_TWICE = MERGE_HEAD + '''
    def forward(self, a, b):
        c = self.linear1(a) + self.linear2(b) + self.linear1.bias
        return c if self.activation is None else self.activation(c)
'''
ONE_JOINT_LAYER = '''
class Merge(nn.Module):
    def __init__(self, in_features1, in_features2, out_features, activation=None):
        super().__init__()
        self.linear = nn.Linear(in_features1 + in_features2, out_features)
        self.activation = activation

    def forward(self, a, b):
        c = self.linear(torch.cat([a, b.expand(*a.shape[:-1], b.shape[-1])], dim=-1))
        return c if self.activation is None else self.activation(c)
'''
ALL_PAIRS = '''
def paired_sums(a, b):
    return a + b
'''
SQUEEZE_ALL = '''
def paired_sums(a, b):
    return (a + b.unsqueeze(1)).squeeze()
'''

MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
    "tile and concatenate": ("Merge", TILE_AND_CONCAT, "check_merge_never_tiles", "repeat, cat"),
    "expand then contiguous": ("Merge", EXPAND_CONTIGUOUS, "check_merge_never_tiles", "expand then clone"),
    "activation ignored": ("Merge", NO_ACTIVATION, "check_merge_activation", "self.activation once"),
    "bias added twice": ("Merge", BIAS_TWICE, "check_merge_random_shapes", "its own bias"),
    "one joint layer": ("Merge", ONE_JOINT_LAYER, "check_merge_structure", "linear1"),
    "all pairs": ("paired_sums", ALL_PAIRS, "check_paired_sums_random", "[N, N] table"),
    "squeeze without dim": ("paired_sums", SQUEEZE_ALL, "check_paired_sums_single_pair", "squeeze(1)"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    g = grade_fast(solved(tmp_path, CH, **{cell: code}))
    assert_caught(g, name, check, phrase)
