"""Chapter 05: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the checks written to catch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    by_name,
    grade_fast,
    solved,
)

CH = "05_batch_gather"


LOOP = '''
def batch_gather(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
'''
SCRIPTED_LOOP = '''
@torch.jit.script
def batch_gather(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
'''
# The guide's batch_gather_vec as printed.
HARD_CODED_CUDA = '''
def batch_gather(tensor, indices):
    shape = list(tensor.shape)
    flat_first = torch.reshape(tensor, [shape[0] * shape[1]] + shape[2:])
    offset = torch.reshape(torch.arange(shape[0]).cuda() * shape[1], [shape[0]] + [1] * (len(indices.shape) - 1))
    return flat_first[indices + offset]
'''
OFFSETS_1D_ONLY = '''
def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    flat = tensor.reshape(b * n, *tensor.shape[2:])
    return flat[indices + torch.arange(b, device=indices.device) * n]
'''
OFFSETS_BY_LAST_AXIS = '''
def batch_gather(tensor, indices):
    b = tensor.shape[0]
    flat = tensor.reshape(b * tensor.shape[1], *tensor.shape[2:])
    offsets = torch.arange(b, device=indices.device) * tensor.shape[-1]
    return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]
'''
DATA = '''
def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    flat = tensor.data.reshape(b * n, *tensor.shape[2:])
    offsets = torch.arange(b, device=indices.device) * n
    return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]
'''
GRADIENT_OVERWRITES = '''
class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, flat, flat_indices):
        ctx.save_for_backward(flat_indices)
        ctx.rows = flat.shape[0]
        return flat[flat_indices]

    @staticmethod
    def backward(ctx, grad):
        (flat_indices,) = ctx.saved_tensors
        out = grad.new_zeros((ctx.rows, *grad.shape[flat_indices.dim():]))
        out[flat_indices] = grad  # a repeated index keeps one gradient instead of their sum
        return out, None


def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    offsets = torch.arange(b, device=indices.device) * n
    flat_indices = indices + offsets.reshape([b] + [1] * (indices.dim() - 1))
    return _Gather.apply(tensor.reshape(b * n, *tensor.shape[2:]), flat_indices)
'''
NO_RANGE_CHECK = '''
def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    flat = tensor.reshape(b * n, *tensor.shape[2:])
    offsets = torch.arange(b, device=indices.device) * n
    return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]
'''

MUTANTS = {
    # name: (code, {the check meant to catch it: a phrase its message must contain})
    "loop": (LOOP, {"check_batch_gather_vectorized": "grows with the batch",
                    "check_batch_gather_speed": "faster than the guide's loop"}),
    "scripted loop": (SCRIPTED_LOOP, {"check_batch_gather_speed": "torch.jit.script"}),
    "hard-coded .cuda()": (HARD_CODED_CUDA, {"check_batch_gather_device": "device=indices.device"}),
    "offsets right only for [B] indices": (OFFSETS_1D_ONLY, {"check_batch_gather_index_tensors": "broadcast"}),
    "offsets stepped by the last axis": (OFFSETS_BY_LAST_AXIS, {"check_batch_gather_row_indices": "tensor.shape[1]"}),
    ".data": (DATA, {"check_batch_gather_gradient": "autograd graph"}),
    "gradient overwritten": (GRADIENT_OVERWRITES, {"check_batch_gather_gradient": "adds up"}),
    "no range check": (NO_RANGE_CHECK, {"check_batch_gather_out_of_range": "silent garbage"}),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    code, expected = MUTANTS[name]
    # Only the checks meant to catch it run: that keeps the suite fast.
    g = grade_fast(solved(tmp_path, CH, batch_gather=code), only=" or ".join(expected))
    results = by_name(g)
    for check, phrase in expected.items():
        result = results[check]
        assert result.status == "failed", f"{name}: {check} passed"
        assert phrase in result.output, result.output
    assert g.score < g.max_score
